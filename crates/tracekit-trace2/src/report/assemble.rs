//! Session detail: from a session's builder state to [`SessionReport`].

use super::*;

pub(super) fn session_report(session: &Session, sources: &[String]) -> SessionReport {
    let procs = &session.procs;
    // The processes of each SID: one, or a process and the children forked
    // from it (in order).
    let mut index: HashMap<&[u8], Vec<usize>> = HashMap::default();
    for (i, p) in procs.iter().enumerate() {
        index.entry(&*p.sid).or_default().push(i);
    }
    let mut tree = Tree {
        kids: vec![Vec::new(); procs.len()],
        forks: vec![Vec::new(); procs.len()],
    };
    let mut tops = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        // A forked process goes under the one it was forked from.
        let forked_from = (p.fork > 0)
            .then(|| index.get(&*p.sid))
            .flatten()
            .and_then(|g| g.iter().copied().find(|&j| procs[j].fork + 1 == p.fork));
        if let Some(j) = forked_from {
            tree.forks[j].push(i);
            continue;
        }
        // Parent: the nearest traced ancestor by SID; of the processes
        // sharing that SID, the one that started this one.
        let mut anc = sid_parent(&p.sid);
        let mut parent = None;
        while let Some(a) = anc {
            if let Some(group) = index.get(a) {
                parent = Some(starter(procs, group, p));
                break;
            }
            anc = sid_parent(a);
        }
        match parent {
            Some(j) => tree.kids[j].push(i),
            None => tops.push(i),
        }
    }
    let start = UnixMicros::parse_sid(&session.root).map(|t| {
        let mut out = Vec::new();
        t.write_iso(&mut out);
        text(&out)
    });
    SessionReport {
        session: text(&session.root),
        start,
        elapsed_s: session_elapsed(session).map(secs),
        processes: tops
            .iter()
            .map(|&i| process_report(procs, &tree, i, sources))
            .collect(),
    }
}

/// Who is under whom in a session: SID children, and processes forked
/// under the same SID.
struct Tree {
    kids: Vec<Vec<usize>>,
    forks: Vec<Vec<usize>>,
}

/// Of the processes sharing a SID (`group`), the one that started `kid`:
/// the one whose `child_exit` names its pid, else (no pid: PERF, NORMAL)
/// the one that logged its command line, else the first.
fn starter(procs: &[ProcState], group: &[usize], kid: &ProcState) -> usize {
    if group.len() == 1 {
        return group[0];
    }
    let kpid = sid_pid(sid_own(&kid.sid)).map(i64::from);
    if let Some(j) = group
        .iter()
        .copied()
        .find(|&j| kpid.is_some() && procs[j].children.iter().any(|c| c.pid == kpid))
    {
        return j;
    }
    let argv: Vec<String> = kid.argv.iter().map(|a| text(a)).collect();
    group
        .iter()
        .copied()
        .find(|&j| procs[j].children.iter().any(|c| same_command(c, &argv)))
        .unwrap_or(group[0])
}

fn process_report(procs: &[ProcState], tree: &Tree, i: usize, sources: &[String]) -> ProcessReport {
    let p = &procs[i];
    // A forked process's SID names its parent's pid, not its own.
    let pid = sid_pid(sid_own(&p.sid)).filter(|_| p.fork == 0);
    let mut children: Vec<ChildReport> = p
        .children
        .iter()
        .map(|c| ChildReport {
            child_id: c.child_id,
            class: c.class.as_deref().map(text),
            hook: c.hook.as_deref().map(text),
            argv: c.argv.iter().map(|a| text(a)).collect(),
            pid: c.pid,
            exit_code: c.code,
            elapsed_s: c.elapsed.map(secs),
            process: None,
        })
        .collect();
    let mut exec = Vec::new();
    let mut unmatched = Vec::new();
    for &k in &tree.kids[i] {
        let kp = &procs[k];
        let kpid = sid_pid(sid_own(&kp.sid));
        let report = process_report(procs, tree, k, sources);
        if kpid.is_some() && kpid == pid && p.end == End::Exec {
            exec.push(report);
            continue;
        }
        let slot = children
            .iter_mut()
            .find(|c| c.process.is_none() && kpid.is_some() && c.pid == kpid.map(i64::from));
        match slot {
            Some(c) => c.process = Some(Box::new(report)),
            None => unmatched.push((UnixMicros::parse_sid(sid_own(&kp.sid)), report)),
        }
    }
    // Not the child itself but its descendant (git run by a shell, hook
    // script, alias): match by start time within the child's lifetime,
    // shell children first. Without times (PERF, NORMAL: no SID), match
    // by argv.
    let mut descendants = Vec::new();
    for (start, report) in unmatched {
        let within = |c: &ChildState| match (start, c.start_unix) {
            (Some(s), Some(cs)) => s.0 >= cs && !matches!(c.elapsed, Some(e) if s.0 > cs + e),
            _ => same_command(c, &report.argv),
        };
        let pick = (0..children.len())
            .filter(|&j| children[j].process.is_none() && within(&p.children[j]))
            .max_by_key(|&j| (p.children[j].use_shell, std::cmp::Reverse(j)));
        match pick {
            Some(j) => children[j].process = Some(Box::new(report)),
            None => descendants.push(report),
        }
    }
    ProcessReport {
        sid: text(&p.sid),
        fork: p.fork,
        source: sources.get(p.source as usize).cloned().unwrap_or_default(),
        pid,
        version: p.version.as_deref().map(text),
        argv: p.argv.iter().map(|a| text(a)).collect(),
        cmd_name: p.cmd_name.as_deref().map(text),
        hierarchy: p.hierarchy.as_deref().map(text),
        cmd_mode: p.cmd_mode.as_deref().map(text),
        alias: p.alias.as_ref().map(|(a, argv)| AliasReport {
            alias: text(a),
            argv: argv.iter().map(|x| text(x)).collect(),
        }),
        end: match p.end {
            End::Exit | End::AtExit => "exit",
            End::Signal => "signal",
            End::Exec => "exec",
            End::None => "none",
        },
        exit_code: p.exit_code,
        signal: p.signal,
        elapsed_s: p.elapsed.map(secs),
        children,
        children_omitted: p.children_omitted,
        exec,
        forked: tree.forks[i]
            .iter()
            .map(|&k| process_report(procs, tree, k, sources))
            .collect(),
        descendants,
        threads: p
            .threads
            .iter()
            .filter(|t| !p.regions[t.root as usize].children.is_empty())
            .map(|t| ThreadRegions {
                thread: text(&t.name),
                regions: region_nodes(p, t.root, p.elapsed),
            })
            .collect(),
        data: p.data.clone(),
        data_omitted: p.data_omitted,
        counters: p.counters.clone(),
        timers: p.timers.clone(),
        errors: p.errors.clone(),
        errors_omitted: p.errors_omitted,
    }
}

/// Whether a child's argv (as the parent logged it) runs the command of a
/// process's argv: same arguments after argv[0] (git children show `git`
/// to the parent and the exec path to themselves), or, through a shell,
/// the quoted command line.
fn same_command(c: &ChildState, argv: &[String]) -> bool {
    if c.argv.len() > 1 && c.argv.len() == argv.len() {
        return c.argv[1..]
            .iter()
            .zip(&argv[1..])
            .all(|(a, b)| &a[..] == b.as_bytes());
    }
    if c.argv.len() == 1 && !argv.is_empty() {
        let mut quoted = Vec::new();
        crate::quote::sq_quote_argv(&mut quoted, argv);
        return *c.argv[0] == *quoted || (argv.len() == 1 && *c.argv[0] == *argv[0].as_bytes());
    }
    false
}

fn region_nodes(p: &ProcState, parent: u32, parent_total: Option<i64>) -> Vec<RegionNode> {
    let mut nodes: Vec<RegionNode> = p.regions[parent as usize]
        .children
        .iter()
        .map(|&c| {
            let s = &p.regions[c as usize];
            RegionNode {
                category: text(&s.category),
                label: text(&s.label),
                count: s.count,
                total_s: secs(s.total),
                self_s: secs(s.self_time),
                share: parent_total
                    .filter(|t| *t > 0)
                    .map(|t| s.total as f64 / t as f64),
                children: region_nodes(p, c, Some(s.total)),
            }
        })
        .collect();
    nodes.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
    nodes
}
