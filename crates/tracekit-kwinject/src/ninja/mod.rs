//! ninja's own record of a build: `.ninja_log` (the time of every command)
//! with the graph from `build.ninja` (or `ninja -t graph`) and header
//! dependencies from `ninja -t deps`: per-target times, slowest targets,
//! the critical path over the real dependency graph weighted by the
//! measured durations, a timeline, and the comparison of two runs.
//!
//! A `.ninja_log` is the build dialect's second input, beside the kwinject
//! trace: what ninja knows without a recorder. It has the time of each
//! command and which outputs it made, not the process tree, the exit
//! status or the command line (only a hash of it); `build.ninja` has the
//! commands and the graph.
//!
//! * [`log`]: the `.ninja_log` reader; [`manifest`]: `build.ninja`;
//!   [`tools`]: `ninja -t deps` and `ninja -t graph` text.
//! * [`NinjaBuild`]: targets with their kind and name (`source → object`,
//!   read from the command by the build specification's rules, as the
//!   recorded build's steps are, [`crate::steps`]), the dependencies
//!   between them, the critical path ([`crate::steps::longest_path`]) and
//!   the last run's job-slot waits ([`crate::steps::SlotClock`]).
//! * [`NinjaDiff`]: what got slower between two logs.
//! * [`map_timeline`]: the last run on the timeline model, one lane per
//!   concurrent command as ninjatracing reconstructs them.
//! * [`report`]: the report as data (`tracekit_report`): the text, JSON
//!   and HTML of `tracekit report`.

pub mod log;
pub mod manifest;
pub mod report;
pub mod tools;

use std::collections::{HashMap, HashSet};
use std::io;

use tracekit_core::timeline::{
    Clock, Event, Name, Origin, Sink, TraceInfo, Track, TrackId, TrackKind, Value,
};

use crate::cdb::absolute;
use crate::kwspec::SpecBuilder;
use crate::shell;
use crate::steps::{
    longest_path, short_path, tool_name, CriticalPath, SlotClock, StepKind, ToolRun, Wait,
};
use crate::trace::{Env, Process};

pub use log::{read_log, NinjaLog, Target};
pub use manifest::{Edge, Manifest};

/// Where the dependency graph came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphSource {
    /// `build.ninja` (and the files it includes).
    Manifest(Vec<String>),
    /// `ninja -t graph` output.
    ToolGraph,
    /// None given: no critical path.
    None,
}

/// How one target depends on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DepKind {
    /// An input of its build statement (explicit, implicit or order-only),
    /// possibly through `phony` edges or edges the log has no entry for.
    Declared,
    /// A header ninja's deps log records for it (`ninja -t deps`).
    Header,
}

impl DepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DepKind::Declared => "declared in the build graph",
            DepKind::Header => "a dependency in ninja's deps log",
        }
    }
}

/// Target `to` waits for target `from`, through `file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dep {
    pub from: usize,
    pub to: usize,
    pub file: String,
    pub kind: DepKind,
}

/// What the graph says of one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    pub kind: StepKind,
    /// `src/a.c → a.o` for a compile, the output for a link or archive,
    /// else its outputs.
    pub name: String,
    /// Its build statement in the graph, if any.
    pub edge: Option<usize>,
}

/// A `.ninja_log` with the graph, read.
#[derive(Debug, Clone)]
pub struct NinjaBuild {
    pub log: NinjaLog,
    /// The latest entry of each output, grouped by command ([`Target`]).
    pub targets: Vec<Target>,
    pub info: Vec<TargetInfo>,
    pub runs: usize,
    pub graph: GraphSource,
    pub edges: Vec<Edge>,
    /// Dependencies between graph nodes: a node below `targets.len()` is a
    /// target, one above stands for the build statement `passes[node -
    /// targets.len()]` that ran no logged command (phony, or not run).
    pub deps: Vec<Dep>,
    pub passes: Vec<usize>,
    /// Job-slot waits of the last run's targets (with a graph only).
    pub waits: Option<NinjaWaits>,
    /// Targets the graph has no build statement for (removed since).
    pub not_in_graph: usize,
    pub critical_path: Option<CriticalPath>,
    /// The build directory, which names are relative to.
    pub dir: String,
}

impl NinjaBuild {
    /// `dir` is the build directory (absolute), `edges` the graph
    /// ([`GraphSource::None`] with none), `header_deps` `ninja -t deps`.
    pub fn new(
        log: NinjaLog,
        dir: &str,
        graph: GraphSource,
        edges: Vec<Edge>,
        header_deps: &[(String, Vec<String>)],
    ) -> NinjaBuild {
        let targets = log.targets();
        let runs = log.runs();
        // Output → target, and output → edge.
        let mut target_of: HashMap<&str, usize> = HashMap::new();
        for (i, t) in targets.iter().enumerate() {
            for o in &t.outputs {
                target_of.insert(o.as_str(), i);
            }
        }
        let mut edge_of: HashMap<&str, usize> = HashMap::new();
        for (i, e) in edges.iter().enumerate() {
            for o in e.outputs.iter().chain(&e.implicit_outputs) {
                edge_of.insert(o.as_str(), i);
            }
        }
        let read = |_: &str| None;
        let info: Vec<TargetInfo> = targets
            .iter()
            .map(|t| {
                let edge = t
                    .outputs
                    .iter()
                    .find_map(|o| edge_of.get(o.as_str()).copied());
                let named = edge
                    .and_then(|e| edges[e].command.as_deref())
                    .and_then(|c| name_command(c, dir, &read));
                let (kind, name) = named.unwrap_or_else(|| (StepKind::Other, t.name()));
                TargetInfo { kind, name, edge }
            })
            .collect();
        let not_in_graph = if graph == GraphSource::None {
            0
        } else {
            info.iter().filter(|i| i.edge.is_none()).count()
        };
        // The graph: a node per target, and one per build statement that
        // ran no logged command (phony, or not run) that a target's inputs
        // go through: each statement's inputs are linked once, so a phony
        // that gathers many files costs its inputs, not inputs × users.
        let n_targets = targets.len();
        let mut passes: Vec<usize> = Vec::new();
        let mut pass_node: HashMap<usize, usize> = HashMap::new();
        let mut deps: Vec<Dep> = Vec::new();
        let mut seen: HashSet<(usize, usize)> = HashSet::new();
        let mut work: Vec<(usize, usize)> = info
            .iter()
            .enumerate()
            .filter_map(|(t, inf)| inf.edge.map(|e| (t, e)))
            .collect();
        while let Some((node, e)) = work.pop() {
            for file in edges[e].all_inputs() {
                let from = if let Some(&t) = target_of.get(file.as_str()) {
                    t
                } else if let Some(&pe) = edge_of.get(file.as_str()) {
                    *pass_node.entry(pe).or_insert_with(|| {
                        passes.push(pe);
                        work.push((n_targets + passes.len() - 1, pe));
                        n_targets + passes.len() - 1
                    })
                } else {
                    continue; // a source file
                };
                if from != node && seen.insert((from, node)) {
                    deps.push(Dep {
                        from,
                        to: node,
                        file: file.clone(),
                        kind: DepKind::Declared,
                    });
                }
            }
        }
        for (output, files) in header_deps {
            let Some(&to) = target_of.get(output.as_str()) else {
                continue;
            };
            for f in files {
                let rel = short_path(f, dir);
                let from = target_of
                    .get(f.as_str())
                    .or_else(|| target_of.get(rel.as_str()))
                    .copied();
                if let Some(from) = from {
                    if from != to && seen.insert((from, to)) {
                        deps.push(Dep {
                            from,
                            to,
                            file: f.clone(),
                            kind: DepKind::Header,
                        });
                    }
                }
            }
        }
        let nodes = n_targets + passes.len();
        let pairs: Vec<(usize, usize)> = deps.iter().map(|d| (d.from, d.to)).collect();
        let order = topological(nodes, &pairs);
        let waits = if graph == GraphSource::None {
            None
        } else {
            Some(job_slot_waits(&targets, &info, &deps, &order, runs))
        };
        let critical_path = if deps.is_empty() && graph == GraphSource::None {
            None
        } else {
            longest_path(nodes, &pairs, &order, |i| {
                Some(targets.get(i).map_or(0, |t| t.duration_ms() * 1000))
            })
            .map(|cp| {
                // Only the targets; each one's edge is the one that enters
                // it on the path (through a statement that ran nothing, its
                // input names that statement's output).
                let mut steps = Vec::new();
                let mut via = Vec::new();
                for (k, &s) in cp.steps.iter().enumerate() {
                    if s < n_targets {
                        if !steps.is_empty() {
                            via.push(cp.edges[k - 1]);
                        }
                        steps.push(s);
                    }
                }
                CriticalPath {
                    steps,
                    edges: via,
                    total_us: cp.total_us,
                }
            })
        };
        NinjaBuild {
            log,
            targets,
            info,
            runs,
            graph,
            edges,
            deps,
            passes,
            waits,
            not_in_graph,
            critical_path,
            dir: dir.to_string(),
        }
    }

    /// The targets of the last run (the timeline's), in start order.
    pub fn last_run(&self) -> Vec<usize> {
        let last = self.runs.saturating_sub(1);
        (0..self.targets.len())
            .filter(|&i| self.targets[i].run == last)
            .collect()
    }

    /// Wall time of the last run: first start to last end, µs.
    pub fn wall_us(&self) -> Option<u64> {
        let r = self.last_run();
        let s = r.iter().map(|&i| self.targets[i].start_ms).min()?;
        let e = r.iter().map(|&i| self.targets[i].end_ms).max()?;
        Some(e.saturating_sub(s) * 1000)
    }
}

/// How long the last run's targets waited for a job slot
/// ([`crate::steps::SlotClock`], as a recorded build's steps): a target is
/// ready when the last target it depends on (in this run) ended, or at the
/// run's start; its wait is the part of the time from ready to its start
/// during which the run had as many commands running as its width. The
/// log does not say ninja's `-j`: the most commands seen running at once
/// stands in for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NinjaWaits {
    /// The width: the most commands running at once in the last run.
    pub jobs: u64,
    /// One per last-run target that has a build statement, in target
    /// order; `step` and `ready_after` are target indices, times in µs
    /// from the run's start.
    pub waits: Vec<Wait>,
}

impl NinjaWaits {
    pub fn totals(&self) -> (u64, u64) {
        self.waits
            .iter()
            .fold((0, 0), |(s, o), w| (s + w.slot_us, o + w.other_us))
    }
}

fn job_slot_waits(
    targets: &[Target],
    info: &[TargetInfo],
    deps: &[Dep],
    order: &[usize],
    runs: usize,
) -> NinjaWaits {
    let last = runs.saturating_sub(1);
    let in_run = |t: usize| t < targets.len() && targets[t].run == last;
    let span = |t: usize| {
        (
            targets[t].start_ms * 1000,
            targets[t].end_ms.max(targets[t].start_ms) * 1000,
        )
    };
    let spans: Vec<(u64, u64)> = (0..targets.len())
        .filter(|&t| in_run(t))
        .map(span)
        .collect();
    let jobs = crate::steps::peak_of(&spans).max(1);
    let clock = SlotClock::new(&spans, Some(jobs));
    // Per node, when what it waits for was done (and which target ended
    // last), in dependency order.
    let nodes = order.len();
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for d in deps {
        into[d.to].push(d.from);
    }
    let mut ready: Vec<(u64, Option<usize>)> = vec![(0, None); nodes];
    for &n in order {
        let mut best = (0, None);
        for &f in &into[n] {
            let r = if f < targets.len() {
                if in_run(f) {
                    (span(f).1, Some(f))
                } else {
                    (0, None) // up to date before this run
                }
            } else {
                ready[f]
            };
            if r.0 > best.0 {
                best = r;
            }
        }
        ready[n] = best;
    }
    let waits = (0..targets.len())
        .filter(|&t| in_run(t) && info[t].edge.is_some())
        .map(|t| {
            let start = span(t).0;
            let (r, after) = ready[t];
            let r = r.min(start);
            let (slot, other) = clock.wait(r, start);
            Wait {
                step: t,
                ready_us: r,
                ready_after: after,
                slot_us: slot,
                other_us: other,
            }
        })
        .collect();
    NinjaWaits { jobs, waits }
}

/// Kahn's order; nodes in a cycle (a broken graph) come last in index
/// order, and their edges from later nodes are then ignored.
fn topological(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut indeg = vec![0usize; n];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges {
        indeg[b] += 1;
        out[a].push(b);
    }
    let mut ready: std::collections::VecDeque<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    while let Some(i) = ready.pop_front() {
        order.push(i);
        placed[i] = true;
        for &j in &out[i] {
            indeg[j] -= 1;
            if indeg[j] == 0 {
                ready.push_back(j);
            }
        }
    }
    order.extend((0..n).filter(|&i| !placed[i]));
    order
}

/// What a command builds, by the build specification's rules: its kind
/// and name, when it compiles, archives or links.
pub fn name_command(
    command: &str,
    dir: &str,
    read: crate::kwspec::FileReader<'_>,
) -> Option<(StepKind, String)> {
    let cmds = shell::commands(command, dir, shell::Dir::Start).ok()?;
    let env = Env::new();
    let mut spec = SpecBuilder::new(read);
    let mut best: Option<(StepKind, String)> = None;
    for c in cmds {
        let mut p = Process::new(0, None, c.dir.clone(), c.args[0].clone());
        p.args = c.args;
        let range = spec.add(&p, &env);
        let run = ToolRun::from_records(&p, &spec.records[range]);
        if let (Some(kind), Some(name)) = (run.kind, tool_name(&run, dir)) {
            best = Some((kind, name));
        }
    }
    best
}

/// One target's change between two logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The target's outputs, joined.
    pub name: String,
    pub before_ms: u64,
    pub after_ms: u64,
}

impl Change {
    pub fn delta_ms(&self) -> i64 {
        self.after_ms as i64 - self.before_ms as i64
    }
}

/// Two `.ninja_log`s compared target by target (matched by output): the
/// data `report --diff` prints (and a later `tracekit diff` can reuse).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NinjaDiff {
    /// Targets in both, most slowed first (then most sped up last).
    pub changed: Vec<Change>,
    /// Only in the new log (its outputs and duration).
    pub added: Vec<(String, u64)>,
    /// Only in the base log.
    pub removed: Vec<(String, u64)>,
    pub before_total_ms: u64,
    pub after_total_ms: u64,
}

impl NinjaDiff {
    pub fn new(base: &[Target], new: &[Target]) -> NinjaDiff {
        let mut by_output: HashMap<&str, usize> = HashMap::new();
        for (i, t) in base.iter().enumerate() {
            for o in &t.outputs {
                by_output.insert(o.as_str(), i);
            }
        }
        let mut matched = vec![false; base.len()];
        let mut d = NinjaDiff {
            before_total_ms: base.iter().map(Target::duration_ms).sum(),
            after_total_ms: new.iter().map(Target::duration_ms).sum(),
            ..Default::default()
        };
        for t in new {
            match t
                .outputs
                .iter()
                .find_map(|o| by_output.get(o.as_str()).copied())
            {
                Some(b) if !matched[b] => {
                    matched[b] = true;
                    d.changed.push(Change {
                        name: t.name(),
                        before_ms: base[b].duration_ms(),
                        after_ms: t.duration_ms(),
                    });
                }
                _ => d.added.push((t.name(), t.duration_ms())),
            }
        }
        for (i, t) in base.iter().enumerate() {
            if !matched[i] {
                d.removed.push((t.name(), t.duration_ms()));
            }
        }
        d.changed.sort_by(|a, b| {
            b.delta_ms()
                .cmp(&a.delta_ms())
                .then_with(|| a.name.cmp(&b.name))
        });
        d.added
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        d.removed
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        d
    }
}

const NINJA_TRACK: TrackId = 0;

/// The last run of `b` on the timeline model: one process track `ninja`,
/// a lane per concurrent command ([`log::lanes`]), a complete slice per
/// target named by its outputs (category its kind), with its outputs, name
/// and command hash as arguments. Milliseconds from the run's start; the
/// log has no wall-clock anchor.
pub fn map_timeline<S: Sink + ?Sized>(
    b: &NinjaBuild,
    source: &str,
    sink: &mut S,
) -> io::Result<()> {
    sink.start(&TraceInfo {
        dialect: "ninja_log",
        source,
        host: None,
        clock: Clock {
            ticks_per_second: 1000,
            origin: Origin::Relative,
        },
    })?;
    sink.event(&Event::Track(Track {
        id: NINJA_TRACK,
        parent: None,
        kind: TrackKind::Process { pid: 1 },
        name: Some(b"ninja"),
        sort_index: None,
    }))?;
    let mut idx = b.last_run();
    idx.sort_by_key(|&i| {
        (
            b.targets[i].start_ms,
            std::cmp::Reverse(b.targets[i].end_ms),
        )
    });
    let refs: Vec<&Target> = idx.iter().map(|&i| &b.targets[i]).collect();
    let lanes = log::lanes(&refs);
    let mut declared = 0;
    for (k, &i) in idx.iter().enumerate() {
        let lane = lanes[k];
        while declared <= lane {
            declared += 1;
            sink.event(&Event::Track(Track {
                id: declared as TrackId,
                parent: Some(NINJA_TRACK),
                kind: TrackKind::Lane {
                    pid: 1,
                    lane: declared as i64,
                },
                name: Some(format!("lane {declared}").as_bytes()),
                sort_index: None,
            }))?;
        }
        let t = &b.targets[i];
        let inf = &b.info[i];
        let outputs = t.name();
        let args = [
            ("outputs", Value::Str(outputs.as_bytes())),
            ("step", Value::Str(inf.name.as_bytes())),
            ("hash", Value::Str(t.hash.as_bytes())),
        ];
        sink.event(&Event::Complete {
            track: lane as TrackId + 1,
            ts: t.start_ms as i64,
            dur: t.duration_ms() as i64,
            name: Name::text(outputs.as_bytes()),
            category: inf.kind.as_str().as_bytes(),
            args: &args,
            flows: &[],
        })?;
    }
    sink.finish()
}

/// The build directory's path for names: `dir` made absolute.
pub fn build_dir(cwd: &str, dir: &str) -> String {
    absolute(cwd, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_path_follows_the_graph_through_phony_edges() {
        let log = read_log(
            b"# ninja log v5\n0\t100\t0\ta.o\t1\n0\t10\t0\tb.o\t2\n100\t130\t0\tlib.a\t3\n130\t150\t0\tapp\t4\n0\t5\t0\tgen.h\t5\n",
        )
        .unwrap();
        let m = manifest::read_manifest(
            "rule cc\n  command = cc -c $in -o $out\nrule ar\n  command = ar rcs $out $in\nrule ld\n  command = cc $in -o $out\nrule gen\n  command = ./gen > $out\nbuild gen.h: gen\nbuild a.o: cc ../a.c\nbuild b.o: cc ../b.c\nbuild objs: phony a.o b.o\nbuild lib.a: ar objs\nbuild app: ld lib.a\n",
            "build.ninja",
            &|_| None,
        )
        .unwrap();
        let deps = vec![(
            "b.o".to_string(),
            vec!["../b.c".to_string(), "/w/b/gen.h".to_string()],
        )];
        let b = NinjaBuild::new(
            log,
            "/w/b",
            GraphSource::Manifest(m.files.clone()),
            m.edges,
            &deps,
        );
        let cp = b.critical_path.clone().unwrap();
        let names: Vec<&str> = cp.steps.iter().map(|&s| b.info[s].name.as_str()).collect();
        assert_eq!(names, ["../a.c → a.o", "lib.a", "app"]);
        assert_eq!(cp.total_us, 150_000);
        assert!(b
            .deps
            .iter()
            .any(|d| d.kind == DepKind::Header && d.file == "/w/b/gen.h"));
        assert_eq!(
            b.info[b
                .targets
                .iter()
                .position(|t| t.outputs[0] == "lib.a")
                .unwrap()]
            .kind,
            StepKind::Archive
        );
    }

    /// A phony that gathers many files is one node: its inputs are linked
    /// once, not once per target that waits for it (CMake's order-only
    /// `cmake_object_order_depends_target_*`).
    #[test]
    fn phony_fan_in_is_linked_once() {
        let mut m = String::from(
            "rule cc\n  command = cc -c $in -o $out\nrule gen\n  command = gen $out\n",
        );
        let mut log = String::from("# ninja log v5\n");
        for h in 0..20 {
            m.push_str(&format!("build h{h}.h: gen\n"));
            log.push_str(&format!("0\t{}\t0\th{h}.h\t{h}\n", h + 1));
        }
        m.push_str("build order: phony");
        for h in 0..20 {
            m.push_str(&format!(" h{h}.h"));
        }
        m.push('\n');
        for o in 0..50 {
            m.push_str(&format!("build o{o}.o: cc s{o}.c || order\n"));
            log.push_str(&format!("30\t{}\t0\to{o}.o\t{}\n", 31 + o, 100 + o));
        }
        let man = manifest::read_manifest(&m, "build.ninja", &|_| None).unwrap();
        let log = read_log(log.as_bytes()).unwrap();
        let b = NinjaBuild::new(log, "/w", GraphSource::ToolGraph, man.edges, &[]);
        assert_eq!(b.passes.len(), 1);
        assert_eq!(b.deps.len(), 20 + 50);
        let cp = b.critical_path.unwrap();
        let names: Vec<&str> = cp.steps.iter().map(|&s| b.info[s].name.as_str()).collect();
        assert_eq!(names, ["h19.h", "s49.c → o49.o"]);
        assert_eq!(b.deps[cp.edges[0]].file, "order");
        assert_eq!(cp.total_us, (20 + 50) * 1000);
        // Each object was ready when the last header ended (20 ms) and
        // started at 30 ms; all 70 commands overlap at most 50 at once
        // (objects 30..31+o, headers 0..h+1): the width is 50, never
        // reached before 30 ms, so no job-slot wait, 10 ms other delay.
        let w = b.waits.unwrap();
        assert_eq!(w.jobs, 50);
        let o0 = w
            .waits
            .iter()
            .find(|x| b.targets[x.step].outputs[0] == "o0.o")
            .unwrap();
        assert_eq!((o0.ready_us, o0.slot_us, o0.other_us), (20_000, 0, 10_000));
        assert_eq!(b.targets[o0.ready_after.unwrap()].outputs[0], "h19.h");
    }

    /// A serial run (`-j1`): every command that had nothing to wait for
    /// waited for the one job slot.
    #[test]
    fn serial_run_waits_for_the_slot() {
        let log =
            read_log(b"# ninja log v5\n0\t10\t0\ta.o\t1\n10\t20\t0\tb.o\t2\n20\t30\t0\tapp\t3\n")
                .unwrap();
        let m = manifest::read_manifest(
            "rule cc\n  command = cc -c $in -o $out\nrule ld\n  command = cc $in -o $out\nbuild a.o: cc a.c\nbuild b.o: cc b.c\nbuild app: ld a.o b.o\n",
            "build.ninja",
            &|_| None,
        )
        .unwrap();
        let b = NinjaBuild::new(log, "/w", GraphSource::ToolGraph, m.edges, &[]);
        let w = b.waits.unwrap();
        assert_eq!(w.jobs, 1);
        let got: Vec<(u64, u64, u64)> = w
            .waits
            .iter()
            .map(|x| (x.ready_us, x.slot_us, x.other_us))
            .collect();
        // a.o: ready and started at 0; b.o: ready at 0, slot busy until 10;
        // app: ready at 20 (b.o), started at 20.
        assert_eq!(got, [(0, 0, 0), (0, 10_000, 0), (20_000, 0, 0)]);
        assert_eq!(w.totals(), (10_000, 0));
    }

    #[test]
    fn diff_lists_slower_targets_first() {
        let a =
            read_log(b"# ninja log v5\n0\t10\t0\ta.o\t1\n0\t20\t0\tb.o\t2\n0\t5\t0\told.o\t3\n")
                .unwrap();
        let b =
            read_log(b"# ninja log v6\n0\t30\t0\ta.o\t1\n0\t15\t0\tb.o\t2\n0\t7\t0\tnew.o\t4\n")
                .unwrap();
        let d = NinjaDiff::new(&a.targets(), &b.targets());
        let changed: Vec<(&str, i64)> = d
            .changed
            .iter()
            .map(|c| (c.name.as_str(), c.delta_ms()))
            .collect();
        assert_eq!(changed, [("a.o", 20), ("b.o", -5)]);
        assert_eq!(d.added, [("new.o".to_string(), 7)]);
        assert_eq!(d.removed, [("old.o".to_string(), 5)]);
        assert_eq!((d.before_total_ms, d.after_total_ms), (35, 52));
    }
}
