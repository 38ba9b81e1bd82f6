//! The build report: process tree with durations and exit codes (compile,
//! archive and link runs named by what they build), slowest compile units,
//! critical path and job-slot waits (from [`crate::steps`]), parallelism
//! over time; and the Chrome Trace Event conversion (through the timeline,
//! [`crate::timeline`]).
//!
//! Times come from tracekit's extension keys (`tk_start_us`, `tk_end_us`);
//! traces of other producers have none, and the time-based parts then say
//! so instead of guessing.

use std::io::{self, Write};

use serde_json::{json, Value};
use tracekit_export::chrome_sink::ChromeSink;

use crate::cdb::{entries_for, CdbOptions};
use crate::env::{EnvBase, EnvFolder};
use crate::kwspec::{FileReader, SpecBuilder};
use crate::steps::{
    short_path, tool_name, Named, StepGraph, StepKind, StepOptions, ToolRun, Wait, Width, WidthHow,
};
use crate::trace::{Exit, Process, Trace};

/// A trace with its tree resolved.
pub struct Build<'a> {
    pub trace: &'a Trace,
    /// Index of each record's parent record (latest earlier record with the
    /// parent id).
    pub parent: Vec<Option<usize>>,
    pub children: Vec<Vec<usize>>,
    /// The compiled source of each compile record (first source).
    pub compile_file: Vec<Option<String>>,
    /// Compile entries (sources) over the whole trace.
    pub compile_units: usize,
    /// What each record compiles, archives or links: read on first use
    /// ([`Build::tools`]), as only the report needs it.
    tools: std::cell::OnceCell<Vec<ToolRun>>,
    read_file: FileReader<'a>,
}

fn no_files(_: &str) -> Option<String> {
    None
}

impl<'a> Build<'a> {
    /// Resolves the tree and reads each command line; `@file` response
    /// files are not read (see [`Build::with_files`]).
    pub fn new(trace: &'a Trace) -> Self {
        Self::with_files(trace, &no_files)
    }

    /// [`Build::new`], reading `@file` response files (absolute paths)
    /// through `read_file`, so that the objects a link names in one count
    /// as its inputs.
    pub fn with_files(trace: &'a Trace, read_file: FileReader<'a>) -> Self {
        let n = trace.processes.len();
        let mut latest: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        let mut parent = Vec::with_capacity(n);
        let mut children = vec![Vec::new(); n];
        let mut compile_file = Vec::with_capacity(n);
        let mut compile_units = 0;
        let mut folder = EnvFolder::new(trace.env.clone(), EnvBase::Parent);
        let mut w = tracekit_core::Warnings::default();
        let opts = CdbOptions {
            existing_only: false,
            ..Default::default()
        };
        for (i, p) in trace.processes.iter().enumerate() {
            let par = p.parent().and_then(|pp| latest.get(&pp).copied());
            if let Some(pi) = par {
                children[pi].push(i);
            }
            parent.push(par);
            latest.insert(p.id, i);
            let env = folder.fold(p, &mut w);
            let entries = entries_for(p, &env, &opts).unwrap_or_default();
            compile_units += entries.len();
            compile_file.push(entries.into_iter().next().map(|e| e.file));
        }
        Build {
            trace,
            parent,
            children,
            compile_file,
            compile_units,
            tools: std::cell::OnceCell::new(),
            read_file,
        }
    }

    /// What each record compiles, archives or links, by the build
    /// specification's rules ([`crate::kwspec`]): one more pass over the
    /// trace (environments folded again), the first time it is asked for.
    pub fn tools(&self) -> &[ToolRun] {
        self.tools.get_or_init(|| {
            let mut folder = EnvFolder::new(self.trace.env.clone(), EnvBase::Parent);
            let mut w = tracekit_core::Warnings::default();
            let mut spec = SpecBuilder::new(self.read_file);
            let mut tools = Vec::with_capacity(self.trace.processes.len());
            for p in &self.trace.processes {
                let env = folder.fold(p, &mut w);
                let records = spec.add(p, &env);
                tools.push(ToolRun::from_records(p, &spec.records[records]));
                // Only the produced files are needed from here on.
                spec.records.clear();
            }
            tools
        })
    }

    fn p(&self, i: usize) -> &Process {
        &self.trace.processes[i]
    }

    pub fn roots(&self) -> Vec<usize> {
        (0..self.parent.len())
            .filter(|&i| self.parent[i].is_none())
            .collect()
    }

    /// (first start, last end) over all records with times.
    pub fn span(&self) -> Option<(u64, u64)> {
        let start = self
            .trace
            .processes
            .iter()
            .filter_map(|p| p.start_us)
            .min()?;
        let end = self
            .trace
            .processes
            .iter()
            .filter_map(|p| p.end_us.or(p.start_us))
            .max()?;
        // A record that ends before it starts cannot make the span negative.
        Some((start, end.max(start)))
    }

    /// The steps, their dependencies, the critical path and the job-slot
    /// waits ([`StepGraph`]).
    pub fn steps(&self, opts: &StepOptions) -> StepGraph {
        StepGraph::new(self, opts)
    }

    /// Processes doing work (no child process of their own running) per
    /// time bucket, averaged over the bucket: parents waiting for children
    /// (make, sh, the gcc driver) do not count.
    pub fn parallelism(&self, buckets: usize) -> Option<(u64, Vec<f64>)> {
        let (start, end) = self.span()?;
        let width = ((end - start) / buckets as u64).max(1);
        let mut busy = vec![0f64; buckets];
        for (i, p) in self.trace.processes.iter().enumerate() {
            let (Some(s), Some(e)) = (p.start_us, p.end_us) else {
                continue;
            };
            if !self.children[i].is_empty() {
                continue;
            }
            for (b, slot) in busy.iter_mut().enumerate() {
                let bs = start + b as u64 * width;
                let be = bs + width;
                let overlap = e.min(be).saturating_sub(s.max(bs));
                *slot += overlap as f64 / width as f64;
            }
        }
        Some((width, busy))
    }

    /// A process as the report shows it: a compiler, archiver or linker
    /// run by what it builds (`cc: compile a.c → a.o`), a step that runs
    /// one by the same name (`sh -c: compile a.c → a.o`), anything else by
    /// its command line, cut at 100 characters.
    pub fn label(&self, i: usize, g: &StepGraph) -> String {
        let p = self.p(i);
        let program = p.program_name();
        if let Some(kind) = self.tools()[i].kind {
            if let Some(name) = tool_name(&self.tools()[i], &g.base) {
                return format!("{program}: {} {name}", kind.as_str());
            }
        }
        if let Some(step) = g.step_of[i].map(|s| &g.steps[s]) {
            if step.process == i && step.kind != StepKind::Other {
                let program = match p.args.get(1) {
                    Some(c) if c == "-c" => format!("{program} -c"),
                    _ => program.to_string(),
                };
                return format!("{program}: {} {}", step.kind.as_str(), step.name);
            }
        }
        let mut s = p.args.join(" ");
        if s.len() > 100 {
            let mut cut = 97;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push_str("...");
        }
        s
    }
}

fn fmt_dur(us: Option<u64>) -> String {
    match us {
        Some(us) if us >= 1_000_000 => format!("{:.2} s", us as f64 / 1e6),
        Some(us) => format!("{:.1} ms", us as f64 / 1e3),
        None => "?".into(),
    }
}

fn fmt_exit(e: Option<Exit>) -> String {
    match e {
        Some(Exit::Code(c)) => format!("exit {c}"),
        Some(Exit::Signal(s)) => format!("signal {s}"),
        None => "-".into(),
    }
}

fn exit_json(e: Option<Exit>) -> Value {
    match e {
        Some(Exit::Code(c)) => json!({ "code": c }),
        Some(Exit::Signal(s)) => json!({ "signal": s }),
        None => Value::Null,
    }
}

/// Tree lines printed in the text report before the rest is summarised.
const TREE_LINES: usize = 200;

/// What the process tree prints: a process, or a run of folded sibling
/// steps.
enum TreeItem {
    Process(usize, usize),
    Folded(Vec<usize>, usize),
}

/// Pushes `children` (in reverse, for a stack), runs of folded steps as
/// one item.
fn push_children(g: &StepGraph, children: &[usize], depth: usize, stack: &mut Vec<TreeItem>) {
    let folded = |c: usize| {
        g.step_of[c]
            .map(|s| &g.steps[s])
            .is_some_and(|s| s.process == c && s.folded)
    };
    let mut items = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    for &c in children {
        if folded(c) {
            run.push(c);
            continue;
        }
        if !run.is_empty() {
            items.push(TreeItem::Folded(std::mem::take(&mut run), depth));
        }
        items.push(TreeItem::Process(c, depth));
    }
    if !run.is_empty() {
        items.push(TreeItem::Folded(run, depth));
    }
    stack.extend(items.into_iter().rev());
}

fn counts_by_kind(g: &StepGraph) -> [usize; 4] {
    let mut n = [0; 4];
    for s in &g.steps {
        n[s.kind as usize] += 1;
    }
    n
}

/// How the job-slot width was found, in words.
pub fn width_text(b: &Build, w: &Width) -> String {
    let jobs = match w.jobs {
        Some(n) => n.to_string(),
        None => "no limit".to_string(),
    };
    match &w.how {
        WidthHow::Argument { process, text } => {
            format!("{jobs} (from {}'s {text})", b.p(*process).program_name())
        }
        WidthHow::MakeDefault { process } => format!(
            "{jobs} ({} without -j runs one job at a time)",
            b.p(*process).program_name()
        ),
        WidthHow::Observed => format!(
            "{jobs} (the most steps seen running at once: the trace shows no -j; ninja's \
             default depends on the machine's processors, which the trace does not record)"
        ),
    }
}

/// The human report.
pub fn report_text<W: Write>(b: &Build, top: usize, mut out: W) -> io::Result<()> {
    let t = b.trace;
    let n = t.processes.len();
    let g = b.steps(&StepOptions::default());
    let failed = t
        .processes
        .iter()
        .filter(|p| {
            matches!(p.exit, Some(Exit::Code(c)) if c != 0)
                || matches!(p.exit, Some(Exit::Signal(_)))
        })
        .count();
    let compiles = b.compile_units;
    writeln!(
        out,
        "Build trace: {n} processes, {compiles} compile units, {failed} failed"
    )?;
    if let Some(c) = &t.creator {
        writeln!(out, "Creator: {c}")?;
    }
    match b.span() {
        Some((s, e)) => writeln!(out, "Wall time: {}", fmt_dur(Some(e - s)))?,
        None => writeln!(
            out,
            "Wall time: unknown (no tk_start_us/tk_end_us: not a tracekit recording)"
        )?,
    }
    let [c, a, l, o] = counts_by_kind(&g);
    let folded = g.steps.iter().filter(|s| s.folded).count();
    write!(
        out,
        "Steps: {} ({c} compile, {a} archive, {l} link, {o} other)",
        g.steps.len()
    )?;
    match g.fold_under_us {
        Some(limit) if folded > 0 => writeln!(
            out,
            "; {folded} that build nothing and took under {} are folded",
            fmt_dur(Some(limit))
        )?,
        _ => writeln!(out)?,
    }
    if b.span().is_some() {
        writeln!(out, "Job slots: {}", width_text(b, &g.width))?;
    }
    if let Some(x) = &t.truncated {
        writeln!(
            out,
            "Truncated: the recorder kept {} of {} process records ({})",
            x.records, x.of, x.reason
        )?;
    }
    writeln!(
        out,
        "\nProcess tree (duration, exit, command; compile, archive and link runs named by what \
         they build):"
    )?;
    let mut lines = 0;
    let mut stack: Vec<TreeItem> = Vec::new();
    push_children(&g, &b.roots(), 0, &mut stack);
    while let Some(item) = stack.pop() {
        match item {
            TreeItem::Process(i, depth) => {
                if lines < TREE_LINES {
                    let p = b.p(i);
                    writeln!(
                        out,
                        "{:>10} {:>8}  {:indent$}{}",
                        fmt_dur(p.duration_us()),
                        fmt_exit(p.exit),
                        "",
                        b.label(i, &g),
                        indent = depth * 2
                    )?;
                }
                lines += 1;
                push_children(&g, &b.children[i], depth + 1, &mut stack);
            }
            TreeItem::Folded(run, depth) => {
                if lines < TREE_LINES {
                    let total: u64 = run.iter().filter_map(|&i| b.p(i).duration_us()).sum();
                    let first = g.step_of[run[0]].map(|s| g.steps[s].name.as_str());
                    let mut example: String = first.unwrap_or("").chars().take(60).collect();
                    if first.is_some_and(|f| f.chars().count() > 60) {
                        example.push_str("...");
                    }
                    let what = if run.len() == 1 {
                        format!("1 short step folded: {example}")
                    } else {
                        format!("{} short steps folded, the first: {example}", run.len())
                    };
                    writeln!(
                        out,
                        "{:>10} {:>8}  {:indent$}({what})",
                        fmt_dur(Some(total)),
                        "",
                        "",
                        indent = depth * 2
                    )?;
                }
                lines += 1;
            }
        }
    }
    if lines > TREE_LINES {
        writeln!(
            out,
            "  ... {} more lines (--json has every process)",
            lines - TREE_LINES
        )?;
    }
    let mut units: Vec<usize> = (0..n).filter(|&i| b.compile_file[i].is_some()).collect();
    units.sort_by_key(|&i| std::cmp::Reverse(b.p(i).duration_us().unwrap_or(0)));
    writeln!(out, "\nSlowest compile units:")?;
    for &i in units.iter().take(top) {
        writeln!(
            out,
            "  {:>10}  {}",
            fmt_dur(b.p(i).duration_us()),
            b.compile_file[i].as_deref().unwrap_or("")
        )?;
    }
    write_critical_path(b, &g, &mut out)?;
    write_waits(b, &g, top, &mut out)?;
    if let Some((width, busy)) = b.parallelism(20) {
        let avg = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
        writeln!(
            out,
            "\nParallelism over time (processes working, not waiting for a child; average {avg:.2}):"
        )?;
        for (k, v) in busy.iter().enumerate() {
            let bar = "#".repeat((v * 4.0).round() as usize);
            writeln!(
                out,
                "  {:>9}  {:>5.2} {bar}",
                fmt_dur(Some(k as u64 * width)),
                v
            )?;
        }
    }
    if !t.warnings.is_empty() {
        writeln!(out, "\n{} warnings while reading", t.warnings.total())?;
    }
    if t.lost() > 0 {
        writeln!(
            out,
            "{} process records are missing from this trace: the figures above leave them out",
            t.lost()
        )?;
    }
    out.flush()
}

fn write_critical_path<W: Write>(b: &Build, g: &StepGraph, out: &mut W) -> io::Result<()> {
    let Some(cp) = &g.critical_path else {
        return writeln!(
            out,
            "\nCritical path: unknown (the trace has no times: not a tracekit recording)"
        );
    };
    let wall = b.span().map(|(s, e)| e - s);
    writeln!(
        out,
        "\nCritical path (the longest chain of steps, each reading a file the one before it \
         wrote; {} of {} wall time):",
        fmt_dur(Some(cp.total_us)),
        fmt_dur(wall)
    )?;
    for (k, &s) in cp.steps.iter().enumerate() {
        let step = &g.steps[s];
        let via = match k.checked_sub(1).map(|e| &g.edges[cp.edges[e]]) {
            Some(e) => format!("  (reads {})", short_path(&e.file, &g.base)),
            None => String::new(),
        };
        writeln!(
            out,
            "  {:>10}  {:<7}  {}{via}",
            fmt_dur(step.duration_us()),
            step.kind.as_str(),
            step.name
        )?;
    }
    // How the dependencies were found.
    let mut how: std::collections::BTreeMap<(StepKind, StepKind, Named), usize> =
        std::collections::BTreeMap::new();
    for e in &g.edges {
        *how.entry((e.written_by, e.read_by, e.named)).or_default() += 1;
    }
    writeln!(
        out,
        "  Dependencies: {} files a step read that an earlier step wrote, from their command \
         lines:",
        g.edges.len()
    )?;
    for ((w, r, named), count) in &how {
        writeln!(
            out,
            "    {count:>5}  {} output read by {} ({})",
            w.as_str(),
            r.as_str(),
            named.as_str()
        )?;
    }
    if g.late_writers > 0 {
        writeln!(
            out,
            "    {:>5}  files read before their writer ended (no edge: an older copy was read)",
            g.late_writers
        )?;
    }
    writeln!(
        out,
        "  Not seen: files a step reads without naming them on a command line (headers, \
         generated sources, files a script opens): the recorder traces processes, not file \
         accesses."
    )
}

fn write_waits<W: Write>(b: &Build, g: &StepGraph, top: usize, out: &mut W) -> io::Result<()> {
    if b.span().is_none() {
        return Ok(());
    }
    let (slot, other) = g.wait_totals();
    let mut waited: Vec<&Wait> = g.waits.iter().filter(|w| w.slot_us > 0).collect();
    waited.sort_by_key(|w| std::cmp::Reverse(w.slot_us));
    writeln!(
        out,
        "\nJob-slot waits (time a compile, archive or link step that was ready waited while \
         the build ran {} jobs; ready: the steps whose files it reads had ended): {} in all, {} \
         steps",
        g.width
            .jobs
            .map_or("unlimited".to_string(), |n| n.to_string()),
        fmt_dur(Some(slot)),
        waited.len()
    )?;
    for w in waited.iter().take(top) {
        let step = &g.steps[w.step];
        writeln!(
            out,
            "  {:>10}  {:<7}  {}",
            fmt_dur(Some(w.slot_us)),
            step.kind.as_str(),
            step.name
        )?;
    }
    writeln!(
        out,
        "  Other delays of ready steps (fewer jobs running): {} in all; the build tool's own \
         pace, or dependencies the trace cannot see",
        fmt_dur(Some(other))
    )
}

/// The same report as JSON.
pub fn report_json(b: &Build, top: usize) -> Value {
    let t = b.trace;
    let g = b.steps(&StepOptions::default());
    let procs: Vec<Value> = t
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({
                "index": i,
                "id": p.id,
                "parent_index": b.parent[i],
                "executable": p.executable,
                "args": p.args,
                "work_dir": p.work_dir,
                "start_us": p.start_us,
                "duration_us": p.duration_us(),
                "exit": exit_json(p.exit),
                "compile_file": b.compile_file[i],
                "step": g.step_of[i],
            })
        })
        .collect();
    let mut units: Vec<usize> = (0..t.processes.len())
        .filter(|&i| b.compile_file[i].is_some())
        .collect();
    units.sort_by_key(|&i| std::cmp::Reverse(b.p(i).duration_us().unwrap_or(0)));
    let slowest: Vec<Value> = units
        .iter()
        .take(top)
        .map(|&i| json!({"index": i, "file": b.compile_file[i], "duration_us": b.p(i).duration_us()}))
        .collect();
    let par = b
        .parallelism(20)
        .map(|(w, v)| json!({"bucket_us": w, "running": v}));
    let steps: Vec<Value> = g
        .steps
        .iter()
        .map(|s| {
            json!({
                "process": s.process, "runner": s.runner, "kind": s.kind.as_str(),
                "name": s.name, "tool_runs": s.tool_runs, "inputs": s.inputs,
                "outputs": s.outputs, "start_us": s.start_us,
                "duration_us": s.duration_us(), "folded": s.folded,
            })
        })
        .collect();
    let edges: Vec<Value> = g
        .edges
        .iter()
        .map(|e| {
            json!({
                "from": e.from, "to": e.to, "file": e.file,
                "written_by": e.written_by.as_str(), "read_by": e.read_by.as_str(),
                "named": match e.named {
                    Named::Argument => "argument",
                    Named::ResponseFile => "response_file",
                    Named::LibraryFlag => "library_flag",
                },
            })
        })
        .collect();
    let waits: Vec<Value> = g
        .waits
        .iter()
        .map(|w| {
            json!({
                "step": w.step, "ready_us": w.ready_us, "ready_after": w.ready_after,
                "slot_wait_us": w.slot_us, "other_wait_us": w.other_us,
            })
        })
        .collect();
    let width = json!({
        "jobs": g.width.jobs,
        "from": match &g.width.how {
            WidthHow::Argument { text, .. } => json!({"argument": text}),
            WidthHow::MakeDefault { .. } => json!("make_default"),
            WidthHow::Observed => json!("observed"),
        },
        "peak_jobs": g.peak_jobs,
    });
    let (slot, other) = g.wait_totals();
    json!({
        "format": "kwinject",
        "creator": t.creator,
        "processes": procs,
        "slowest_compile_units": slowest,
        "steps": steps,
        "edges": edges,
        "late_writers": g.late_writers,
        "critical_path": g.critical_path.as_ref().map(|c| json!({
            "steps": c.steps, "edges": c.edges, "total_us": c.total_us,
        })),
        "job_slots": width,
        "waits": waits,
        "slot_wait_us": slot,
        "other_wait_us": other,
        "fold_under_us": g.fold_under_us,
        "parallelism": par,
        "span_us": b.span().map(|(s, e)| e - s),
        "truncated": t.truncated.as_ref().map(|x| json!({
            "records": x.records, "of": x.of, "reason": x.reason,
        })),
        "lost_records": t.lost(),
        "warnings": t.warnings.total(),
    })
}

/// Chrome Trace Event JSON of the build's timeline
/// ([`crate::timeline::map_build`]). Records without times are skipped and
/// counted (returned).
pub fn to_chrome<W: Write>(b: &Build, out: W) -> io::Result<(W, u64)> {
    let mut sink = ChromeSink::new(out)?;
    let skipped = crate::timeline::map_build(b, "-", &mut sink)?;
    Ok((sink.into_inner()?, skipped))
}
