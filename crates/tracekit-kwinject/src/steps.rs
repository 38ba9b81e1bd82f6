//! Build steps, the file dependencies between them, the critical path and
//! job-slot waits: the parts of the build report that say which steps
//! decided how long the build took and which only waited for a free job.
//!
//! Everything here is data ([`StepGraph`]); the report's text and JSON are
//! made from it in [`crate::analysis`].
//!
//! * A **step** is what a build tool runs as one job: a child of `make` or
//!   `ninja` (or of the build's root command) that is not itself a build
//!   tool and runs none (`sh -c 'cd sub && make'` is not a step; the jobs
//!   of that inner `make` are). Everything below a step (the compiler
//!   driver under `sh -c`, `cc1`, `as`, `collect2`, `ld`) belongs to it.
//! * What a step **reads and writes** comes from the command lines of the
//!   compilers, archivers and linkers in it, read by the rules of the
//!   Klocwork build specification ([`crate::kwspec`], which uses Bear
//!   3.1.1's compiler recognition and flag tables): a compile reads its
//!   source and writes its `-o` output (the source's name with `.o`
//!   without `-o`); `ar` writes its archive and reads its members; a link
//!   writes its `-o` output and reads the objects and libraries it names,
//!   `-lNAME` resolved along `-L` to a library the build made. Files a
//!   step reads without naming them (headers, generated sources, files a
//!   script opens) are not seen: tracekit's recorders trace processes,
//!   not file accesses.
//! * An **edge** A → B says B read a file A wrote; A is the last step that
//!   wrote it and had ended when B started.
//! * The **critical path** is the longest chain of steps over the edges,
//!   each step weighted by its duration: how long the build would take
//!   with unlimited job slots, if the edges are all the dependencies.
//! * A compile, archive or link step is **ready** when all the steps it
//!   depends on have ended (or, without any, when the `make`/`ninja` that
//!   ran it started). Its **job-slot wait** is the time between ready and
//!   its start during which the build ran as many jobs as its `-j` allows
//!   (the build tool's `-j`; `make` without it runs one; for `ninja`
//!   without it, whose default depends on the machine, the most jobs seen
//!   at once); the rest of that time is an **other delay** (the build
//!   tool's own pace, or a dependency the trace cannot see). Other steps
//!   name no file they read, so when they became ready is unknown: no wait
//!   is counted for them.

use std::collections::{HashMap, HashSet};

use crate::analysis::Build;
use crate::cdb::absolute;
use crate::kwspec::Record;
use crate::trace::Process;

/// What a step (or a tool run in it) makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepKind {
    Compile,
    Archive,
    Link,
    /// Anything else: scripts, code generators, `echo >> x.pc`.
    Other,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Compile => "compile",
            StepKind::Archive => "archive",
            StepKind::Link => "link",
            StepKind::Other => "other",
        }
    }
}

/// What one process compiles, archives or links, read from its command
/// line ([`crate::kwspec`]'s records). Paths are absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRun {
    /// `None` for a process that is no compiler, archiver or linker (or is
    /// one's own tool chain: `cc1`, `as`, `collect2`, `ld` under `gcc`).
    pub kind: Option<StepKind>,
    /// (source, object) of each compiled source.
    pub compiles: Vec<(String, String)>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

impl ToolRun {
    /// From the build-specification records of one process. Objects that
    /// a compile-and-link command makes and links itself are temporary
    /// files: neither read nor written as far as other steps go.
    pub fn from_records(p: &Process, records: &[Record]) -> ToolRun {
        let mut t = ToolRun::default();
        let mut links = false;
        for r in records {
            match r {
                Record::Compile {
                    dir,
                    output,
                    source,
                    ..
                } => {
                    let src = absolute(dir, source);
                    t.inputs.push(src.clone());
                    t.outputs.push(output.clone());
                    t.compiles.push((src, output.clone()));
                }
                Record::Link { output, inputs, .. } => {
                    links = true;
                    t.outputs.push(output.clone());
                    // An unresolved `-lNAME` stays a flag: not a file.
                    t.inputs
                        .extend(inputs.iter().filter(|i| i.starts_with('/')).cloned());
                }
            }
        }
        if records.is_empty() {
            return t;
        }
        if links && !t.compiles.is_empty() {
            let inputs: HashSet<&String> = t.inputs.iter().collect();
            let temporary: HashSet<String> = t
                .compiles
                .iter()
                .map(|(_, o)| o)
                .filter(|o| inputs.contains(o))
                .cloned()
                .collect();
            t.inputs.retain(|i| !temporary.contains(i));
            t.outputs.retain(|o| !temporary.contains(o));
        }
        t.kind = Some(if !links {
            StepKind::Compile
        } else if is_archiver(p.program_name()) {
            StepKind::Archive
        } else {
            StepKind::Link
        });
        t
    }
}

fn is_archiver(name: &str) -> bool {
    matches!(name, "ar" | "llvm-ar" | "gcc-ar") || name.ends_with("-ar")
}

/// Programs that run other commands as jobs, in job slots.
pub fn is_build_tool(name: &str) -> bool {
    matches!(
        name,
        "make" | "gmake" | "bmake" | "remake" | "ninja" | "ninja-build" | "samu"
    )
}

fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "busybox"
    )
}

/// One step: a job of the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The job's process record.
    pub process: usize,
    /// The `make`/`ninja` (or root command) that ran it.
    pub runner: Option<usize>,
    pub kind: StepKind,
    /// What it builds (`src/a.c → a.o`, `libx.a`), or its command, cut.
    pub name: String,
    /// Compiler, archiver and linker runs in it.
    pub tool_runs: usize,
    /// Files it reads that it does not write itself (absolute).
    pub inputs: Vec<String>,
    /// Files it writes (absolute).
    pub outputs: Vec<String>,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    /// A short step that builds nothing ([`StepOptions::fold_under_us`]):
    /// the text report folds it.
    pub folded: bool,
}

impl Step {
    pub fn duration_us(&self) -> Option<u64> {
        Some(self.end_us?.saturating_sub(self.start_us?))
    }
}

/// How the consumer of an edge names the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Named {
    /// On its command line.
    Argument,
    /// In an `@file` response file.
    ResponseFile,
    /// As `-lNAME`, found along its `-L` directories.
    LibraryFlag,
}

impl Named {
    pub fn as_str(self) -> &'static str {
        match self {
            Named::Argument => "named on the command line",
            Named::ResponseFile => "named in a response file",
            Named::LibraryFlag => "found by -l along -L",
        }
    }
}

/// Step `to` read `file`, which step `from` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub file: String,
    /// What kind of tool run in `from` wrote it.
    pub written_by: StepKind,
    /// What kind of tool run in `to` read it.
    pub read_by: StepKind,
    pub named: Named,
}

/// How many jobs the build could run at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Width {
    /// `None`: no limit (`make -j` without a number).
    pub jobs: Option<u64>,
    pub how: WidthHow,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WidthHow {
    /// From the build tool's command line (`-j2`, `--jobs=4`).
    Argument { process: usize, text: String },
    /// `make` without `-j` runs one job at a time.
    MakeDefault { process: usize },
    /// No `-j` the trace shows (ninja's default depends on the machine's
    /// processors, which the trace does not record): the most jobs seen
    /// running at once.
    Observed,
}

/// Why a step started when it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub step: usize,
    /// When it became ready: the last of its dependencies ended, or its
    /// runner started.
    pub ready_us: u64,
    /// The step whose end made it ready (`None`: its runner's start).
    pub ready_after: Option<usize>,
    /// Between ready and start, while the build ran as many jobs as
    /// [`Width`] allows.
    pub slot_us: u64,
    /// The rest of the time between ready and start.
    pub other_us: u64,
}

/// The longest chain of steps over the edges, weighted by duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalPath {
    /// Steps in order.
    pub steps: Vec<usize>,
    /// For each step after the first, the edge from the one before it.
    pub edges: Vec<usize>,
    /// The sum of the steps' durations.
    pub total_us: u64,
}

/// Settings of the step analysis.
#[derive(Debug, Clone, Default)]
pub struct StepOptions {
    /// Fold steps that build nothing and take less than this; `None`: 1 %
    /// of the build's wall time, at least 10 ms.
    pub fold_under_us: Option<u64>,
}

/// The steps of a build and what follows from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepGraph {
    pub steps: Vec<Step>,
    /// Per process record, the step it is or belongs to.
    pub step_of: Vec<Option<usize>>,
    pub edges: Vec<Edge>,
    /// Files a step read that a step wrote, but only after it had started
    /// (an older copy was read, or the trace misses a writer): no edge.
    pub late_writers: u64,
    pub width: Width,
    /// The most steps running at once.
    pub peak_jobs: u64,
    /// One per compile, archive or link step with times, in step order.
    pub waits: Vec<Wait>,
    /// `None` without times.
    pub critical_path: Option<CriticalPath>,
    /// The fold threshold used (`None` without times: nothing folded).
    pub fold_under_us: Option<u64>,
    /// The directory paths in names are shown relative to (the working
    /// directory of the build's first root process).
    pub base: String,
}

impl StepGraph {
    pub fn new(b: &Build, opts: &StepOptions) -> StepGraph {
        let t = b.trace;
        let n = t.processes.len();
        let name = |i: usize| t.processes[i].program_name();
        // Build tools, and the processes that run one below them.
        let mut runs_tool = vec![false; n];
        for i in (0..n).rev() {
            if let Some(p) = b.parent[i] {
                if runs_tool[i] || is_build_tool(name(i)) {
                    runs_tool[p] = true;
                }
            }
        }
        let runner: Vec<bool> = (0..n)
            .map(|i| {
                is_build_tool(name(i))
                    || runs_tool[i]
                    || (b.parent[i].is_none()
                        && !b.children[i].is_empty()
                        && b.tools()[i].kind.is_none())
            })
            .collect();
        // Jobs: the first processes below a runner that are none; every
        // other process belongs to the job above it.
        let mut step_of: Vec<Option<usize>> = vec![None; n];
        let mut jobs: Vec<usize> = Vec::new();
        for i in 0..n {
            if runner[i] {
                continue;
            }
            match b.parent[i] {
                Some(p) if !runner[p] => step_of[i] = step_of[p],
                _ => {
                    step_of[i] = Some(jobs.len());
                    jobs.push(i);
                }
            }
        }
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); jobs.len()];
        for (i, s) in step_of.iter().enumerate() {
            if let Some(s) = s {
                members[*s].push(i);
            }
        }
        let base = b
            .roots()
            .first()
            .map(|&r| t.processes[r].work_dir.clone())
            .unwrap_or_default();
        let span = b.span();
        let fold_under_us = span.map(|(s, e)| {
            opts.fold_under_us
                .unwrap_or_else(|| ((e - s) / 100).max(10_000))
        });
        let mut steps: Vec<Step> = jobs
            .iter()
            .zip(&members)
            .map(|(&j, m)| make_step(b, j, m, &base, &runner, fold_under_us))
            .collect();
        // Steps in start order (trace order without times).
        let mut order: Vec<usize> = (0..steps.len()).collect();
        order.sort_by_key(|&s| (steps[s].start_us, steps[s].end_us, steps[s].process));
        let (edges, late_writers) = find_edges(b, &steps, &members, &order);
        let peak_jobs = peak(&steps);
        let width = width(b, peak_jobs);
        let waits = waits(b, &steps, &edges, &width);
        let critical_path = critical_path(&steps, &edges, &order);
        // Keep the step list in start order too.
        let mut renumber = vec![0; steps.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old] = new;
        }
        let mut sorted: Vec<Option<Step>> = steps.drain(..).map(Some).collect();
        let steps: Vec<Step> = order.iter().filter_map(|&o| sorted[o].take()).collect();
        let step_of = step_of
            .into_iter()
            .map(|s| s.map(|s| renumber[s]))
            .collect();
        let edges = edges
            .into_iter()
            .map(|e| Edge {
                from: renumber[e.from],
                to: renumber[e.to],
                ..e
            })
            .collect();
        let mut waits: Vec<Wait> = waits
            .into_iter()
            .map(|w| Wait {
                step: renumber[w.step],
                ready_after: w.ready_after.map(|s| renumber[s]),
                ..w
            })
            .collect();
        waits.sort_by_key(|w| w.step);
        let critical_path = critical_path.map(|c| CriticalPath {
            steps: c.steps.iter().map(|&s| renumber[s]).collect(),
            ..c
        });
        StepGraph {
            steps,
            step_of,
            edges,
            late_writers,
            width,
            peak_jobs,
            waits,
            critical_path,
            fold_under_us,
            base,
        }
    }

    /// Total job-slot wait and other delay over all steps.
    pub fn wait_totals(&self) -> (u64, u64) {
        self.waits
            .iter()
            .fold((0, 0), |(s, o), w| (s + w.slot_us, o + w.other_us))
    }
}

/// `path` relative to the build's directory `base` (or its parent, with
/// `../`) when it is below it; else as it is.
pub fn short_path(path: &str, base: &str) -> String {
    let below = |dir: &str| {
        path.strip_prefix(dir)
            .and_then(|r| r.strip_prefix('/'))
            .filter(|r| !r.is_empty())
    };
    if base.len() > 1 {
        if let Some(r) = below(base) {
            return r.to_string();
        }
        if let Some((up, _)) = base.rsplit_once('/') {
            if up.len() > 1 {
                if let Some(r) = below(up) {
                    return format!("../{r}");
                }
            }
        }
    }
    path.to_string()
}

/// The name of what a tool run builds: `src → object` for a compile (with
/// how many more sources), the output for an archive or link.
pub fn tool_name(run: &ToolRun, base: &str) -> Option<String> {
    let kind = run.kind?;
    if kind == StepKind::Compile {
        let (src, obj) = run.compiles.first()?;
        let mut s = format!("{} → {}", short_path(src, base), short_path(obj, base));
        if run.compiles.len() > 1 {
            s.push_str(&format!(" (+{} more)", run.compiles.len() - 1));
        }
        Some(s)
    } else {
        let out = run.outputs.first()?;
        let mut s = short_path(out, base);
        if run.compiles.len() > 1 {
            s.push_str(&format!(" ({} sources)", run.compiles.len()));
        } else if let Some((src, _)) = run.compiles.first() {
            s.push_str(&format!(" (from {})", short_path(src, base)));
        }
        Some(s)
    }
}

/// Longest command text in a step name.
const NAME_CHARS: usize = 100;

/// A command as text, cut at [`NAME_CHARS`]: the script of `sh -c`, else
/// the program's file name and its arguments.
pub fn command_text(p: &Process) -> String {
    let name = p.program_name();
    let mut s = match p.args.as_slice() {
        [_, c, script, ..] if is_shell(name) && c == "-c" => {
            script.split_whitespace().collect::<Vec<_>>().join(" ")
        }
        [_, rest @ ..] => {
            let mut s = name.to_string();
            for a in rest {
                s.push(' ');
                s.push_str(a);
            }
            s
        }
        [] => name.to_string(),
    };
    if s.chars().count() > NAME_CHARS {
        s = s.chars().take(NAME_CHARS - 3).collect();
        s.push_str("...");
    }
    s
}

fn make_step(
    b: &Build,
    job: usize,
    members: &[usize],
    base: &str,
    runner: &[bool],
    fold_under_us: Option<u64>,
) -> Step {
    let p = &b.trace.processes[job];
    let runs: Vec<&ToolRun> = members
        .iter()
        .map(|&i| &b.tools()[i])
        .filter(|r| r.kind.is_some())
        .collect();
    let mut outputs: Vec<String> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    let mut seen_out: HashSet<&str> = HashSet::new();
    let mut seen_in: HashSet<&str> = HashSet::new();
    for r in &runs {
        for o in &r.outputs {
            if seen_out.insert(o) {
                outputs.push(o.clone());
            }
        }
        for i in &r.inputs {
            if seen_in.insert(i) {
                inputs.push(i.clone());
            }
        }
    }
    inputs.retain(|i| !seen_out.contains(i.as_str()));
    // Named by what it builds when it is a tool run or a shell running
    // tools (`sh -c 'cc ...'`); a script such as `./configure` that runs
    // compilers by the hundred keeps its own name.
    let by_tools = b.tools()[job].kind.is_some()
        || (is_shell(p.program_name()) && p.args.get(1).is_some_and(|a| a == "-c"));
    let last = runs.last();
    let (kind, name) = match last {
        Some(r) if by_tools => {
            let mut name = tool_name(r, base).unwrap_or_else(|| command_text(p));
            if runs.len() > 1 {
                name.push_str(&format!(" (+{} more tool runs)", runs.len() - 1));
            }
            (r.kind.unwrap_or(StepKind::Other), name)
        }
        _ => (StepKind::Other, command_text(p)),
    };
    let folded = kind == StepKind::Other
        && match (fold_under_us, p.duration_us()) {
            (Some(limit), Some(d)) => d < limit,
            _ => false,
        };
    Step {
        process: job,
        runner: b.parent[job].filter(|&r| runner[r]),
        kind,
        name,
        tool_runs: runs.len(),
        inputs,
        outputs,
        start_us: p.start_us,
        end_us: p.end_us,
        folded,
    }
}

/// What a step's tool runs name on their command lines (absolute), and
/// whether any passes an `@file`.
struct Naming {
    arguments: HashSet<String>,
    response_file: bool,
}

impl Naming {
    fn of(b: &Build, members: &[usize]) -> Naming {
        let mut n = Naming {
            arguments: HashSet::new(),
            response_file: false,
        };
        for &i in members {
            if b.tools()[i].kind.is_none() {
                continue;
            }
            let p = &b.trace.processes[i];
            for a in p.args.get(1..).unwrap_or(&[]) {
                if a.starts_with('@') {
                    n.response_file = true;
                } else if !a.starts_with('-') {
                    n.arguments.insert(absolute(&p.work_dir, a));
                }
            }
        }
        n
    }

    fn how(&self, file: &str) -> Named {
        if self.arguments.contains(file) {
            Named::Argument
        } else if self.response_file {
            Named::ResponseFile
        } else {
            Named::LibraryFlag
        }
    }
}

/// The kind of the tool run in a step that reads (`outputs == false`) or
/// writes `file`.
fn tool_kind(b: &Build, members: &[usize], file: &str, outputs: bool) -> StepKind {
    // Usually one tool run, or runs of one kind: no need to look.
    let mut kinds = members.iter().filter_map(|&i| b.tools()[i].kind);
    if let Some(k) = kinds.next() {
        if kinds.all(|x| x == k) {
            return k;
        }
    }
    members
        .iter()
        .rev()
        .map(|&i| &b.tools()[i])
        .filter(|r| {
            let files = if outputs { &r.outputs } else { &r.inputs };
            files.iter().any(|f| f == file)
        })
        .find_map(|r| r.kind)
        .unwrap_or(StepKind::Other)
}

fn find_edges(
    b: &Build,
    steps: &[Step],
    members: &[Vec<usize>],
    order: &[usize],
) -> (Vec<Edge>, u64) {
    // Writers of each file, in step order.
    let mut writers: HashMap<&str, Vec<usize>> = HashMap::new();
    for &s in order {
        for o in &steps[s].outputs {
            writers.entry(o.as_str()).or_default().push(s);
        }
    }
    let mut rank = vec![0; steps.len()];
    for (k, &s) in order.iter().enumerate() {
        rank[s] = k;
    }
    let mut edges = Vec::new();
    let mut late = 0;
    for &s in order {
        let to = &steps[s];
        let mut naming: Option<Naming> = None;
        for f in &to.inputs {
            let Some(ws) = writers.get(f.as_str()) else {
                continue;
            };
            let done_before = |w: usize| match (steps[w].end_us, to.start_us) {
                (Some(e), Some(st)) => e <= st,
                (None, None) => rank[w] < rank[s],
                _ => false,
            };
            match ws.iter().rev().find(|&&w| w != s && done_before(w)) {
                Some(&w) => {
                    let named = naming
                        .get_or_insert_with(|| Naming::of(b, &members[s]))
                        .how(f);
                    edges.push(Edge {
                        from: w,
                        to: s,
                        file: f.clone(),
                        written_by: tool_kind(b, &members[w], f, true),
                        read_by: tool_kind(b, &members[s], f, false),
                        named,
                    });
                }
                None => {
                    if ws.iter().any(|&w| w != s) {
                        late += 1;
                    }
                }
            }
        }
    }
    (edges, late)
}

/// The spans of steps: (start, end), a step without an end running to
/// `end_all`.
fn spans(steps: &[Step], end_all: u64) -> Vec<(u64, u64)> {
    steps
        .iter()
        .filter_map(|s| {
            let st = s.start_us?;
            Some((st, s.end_us.unwrap_or(end_all).max(st)))
        })
        .collect()
}

/// Spans running at once, as (time, count from then on).
fn occupancy(spans: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut ev: Vec<(u64, i64)> = Vec::new();
    for &(st, end) in spans {
        ev.push((st, 1));
        ev.push((end.max(st), -1));
    }
    ev.sort();
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut running: i64 = 0;
    for (t, d) in ev {
        running += d;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = running.max(0) as u64,
            _ => out.push((t, running.max(0) as u64)),
        }
    }
    out
}

/// The most spans running at once.
pub fn peak_of(spans: &[(u64, u64)]) -> u64 {
    occupancy(spans).iter().map(|&(_, c)| c).max().unwrap_or(0)
}

/// When a build ran at its job-slot width: the time between two instants
/// during which at least `limit` spans (jobs) ran.
pub struct SlotClock {
    occ: Vec<(u64, u64)>,
    full_before: Vec<u64>,
    limit: u64,
}

impl SlotClock {
    /// `limit`: the `-j` width (`None`: no limit, never full).
    pub fn new(spans: &[(u64, u64)], limit: Option<u64>) -> SlotClock {
        let occ = occupancy(spans);
        let limit = limit.unwrap_or(u64::MAX);
        let mut full_before = Vec::with_capacity(occ.len());
        let mut acc = 0u64;
        for (k, &(t, _)) in occ.iter().enumerate() {
            if k > 0 {
                let (pt, pc) = occ[k - 1];
                if pc >= limit {
                    acc += t - pt;
                }
            }
            full_before.push(acc);
        }
        SlotClock {
            occ,
            full_before,
            limit,
        }
    }

    fn full_until(&self, x: u64) -> u64 {
        let k = self.occ.partition_point(|&(t, _)| t <= x);
        if k == 0 {
            return 0;
        }
        let (t, c) = self.occ[k - 1];
        self.full_before[k - 1] + if c >= self.limit { x - t } else { 0 }
    }

    /// The job-slot wait of a step ready at `ready` that started at
    /// `start` (`ready` is capped at `start`): `(slot, other)`.
    pub fn wait(&self, ready: u64, start: u64) -> (u64, u64) {
        let ready = ready.min(start);
        let slot = self.full_until(start) - self.full_until(ready);
        (slot, (start - ready) - slot)
    }
}

fn peak(steps: &[Step]) -> u64 {
    let end = steps.iter().filter_map(|s| s.end_us).max().unwrap_or(0);
    peak_of(&spans(steps, end))
}

/// `-jN`, `-j N`, `--jobs=N`, `--jobs N`, `-j` (no limit), `-kj4`.
fn jobs_argument(args: &[String]) -> Option<(Option<u64>, String)> {
    let mut it = args.iter().skip(1).peekable();
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        let value = if let Some(v) = a.strip_prefix("--jobs=") {
            Some(v.to_string())
        } else if a == "--jobs" || a == "-j" {
            match it.peek() {
                Some(v) if v.parse::<u64>().is_ok() => it.next().cloned(),
                _ => Some(String::new()),
            }
        } else if a.starts_with('-') && !a.starts_with("--") && a.contains('j') {
            // Short options run together (`-kj4`); `j` takes the rest.
            let rest = &a[a.find('j').unwrap_or(0) + 1..];
            if a[1..].chars().all(|c| c.is_ascii_alphanumeric()) {
                Some(rest.to_string())
            } else {
                None
            }
        } else {
            None
        };
        if let Some(v) = value {
            let text = if v.is_empty() || a.ends_with(&v) {
                a.clone()
            } else {
                format!("{a} {v}")
            };
            return Some((v.parse().ok().filter(|&n| n > 0), text));
        }
    }
    None
}

fn width(b: &Build, peak_jobs: u64) -> Width {
    let t = b.trace;
    let first = (0..t.processes.len()).find(|&i| is_build_tool(t.processes[i].program_name()));
    if let Some(i) = first {
        let p = &t.processes[i];
        if let Some((jobs, text)) = jobs_argument(&p.args) {
            return Width {
                jobs,
                how: WidthHow::Argument { process: i, text },
            };
        }
        if matches!(p.program_name(), "make" | "gmake" | "bmake" | "remake") {
            return Width {
                jobs: Some(1),
                how: WidthHow::MakeDefault { process: i },
            };
        }
    }
    Width {
        jobs: Some(peak_jobs.max(1)),
        how: WidthHow::Observed,
    }
}

fn waits(b: &Build, steps: &[Step], edges: &[Edge], width: &Width) -> Vec<Wait> {
    let end_all = b.span().map(|(_, e)| e).unwrap_or(0);
    let clock = SlotClock::new(&spans(steps, end_all), width.jobs);
    let mut into: Vec<Vec<&Edge>> = vec![Vec::new(); steps.len()];
    for e in edges {
        into[e.to].push(e);
    }
    let mut out = Vec::new();
    for (s, step) in steps.iter().enumerate() {
        // A step that names no file it reads (a script, `echo >> x.pc`, the
        // second line of a make recipe) may have waited for anything.
        if step.kind == StepKind::Other {
            continue;
        }
        let Some(start) = step.start_us else { continue };
        let runner_start = step
            .runner
            .and_then(|r| b.trace.processes[r].start_us)
            .unwrap_or(start);
        let mut ready = runner_start.min(start);
        let mut ready_after = None;
        for e in &into[s] {
            if let Some(end) = steps[e.from].end_us {
                if end > ready {
                    ready = end;
                    ready_after = Some(e.from);
                }
            }
        }
        let ready = ready.min(start);
        let (slot, other) = clock.wait(ready, start);
        out.push(Wait {
            step: s,
            ready_us: ready,
            ready_after,
            slot_us: slot,
            other_us: other,
        });
    }
    out
}

fn critical_path(steps: &[Step], edges: &[Edge], order: &[usize]) -> Option<CriticalPath> {
    let weight = |s: usize| match (steps[s].start_us, steps[s].end_us) {
        (Some(_), Some(_)) => steps[s].duration_us(),
        _ => None,
    };
    let pairs: Vec<(usize, usize)> = edges.iter().map(|e| (e.from, e.to)).collect();
    longest_path(steps.len(), &pairs, order, weight)
}

/// The longest chain over `edges` (`(from, to)` between nodes
/// `0..nodes`), each node weighted by `weight` (`None`: not placed, as a
/// step without times). `order` must put every node after the nodes it
/// has edges from (start order for a recorded build, a topological order
/// for a declared graph); an edge from a node not yet placed is ignored.
/// The path's nodes and edge indices in order, and its total weight.
pub fn longest_path(
    nodes: usize,
    edges: &[(usize, usize)],
    order: &[usize],
    weight: impl Fn(usize) -> Option<u64>,
) -> Option<CriticalPath> {
    if !order.iter().any(|&s| weight(s).is_some()) {
        return None;
    }
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for (k, &(_, to)) in edges.iter().enumerate() {
        into[to].push(k);
    }
    let mut cost: Vec<Option<u64>> = vec![None; nodes];
    let mut best: Vec<Option<usize>> = vec![None; nodes];
    let mut top: Option<usize> = None;
    for &s in order {
        let Some(w) = weight(s) else { continue };
        let mut before = 0;
        for &k in &into[s] {
            // Only nodes already placed.
            if let Some(c) = cost[edges[k].0] {
                if c > before || best[s].is_none() {
                    before = c;
                    best[s] = Some(k);
                }
            }
        }
        let c = before.saturating_add(w);
        cost[s] = Some(c);
        if top.is_none_or(|t| c >= cost[t].unwrap_or(0)) {
            top = Some(s);
        }
    }
    let mut s = top?;
    let total_us = cost[s].unwrap_or(0);
    let mut path = vec![s];
    let mut via = Vec::new();
    while let Some(k) = best[s] {
        via.push(k);
        s = edges[k].0;
        path.push(s);
    }
    path.reverse();
    via.reverse();
    Some(CriticalPath {
        steps: path,
        edges: via,
        total_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn job_counts_as_build_tools_spell_them() {
        let j = |v: &[&str]| jobs_argument(&args(v));
        assert_eq!(j(&["make", "-j2"]), Some((Some(2), "-j2".into())));
        assert_eq!(
            j(&["make", "-j", "8", "all"]),
            Some((Some(8), "-j 8".into()))
        );
        assert_eq!(j(&["make", "--jobs=3"]), Some((Some(3), "--jobs=3".into())));
        assert_eq!(
            j(&["make", "--jobs", "4"]),
            Some((Some(4), "--jobs 4".into()))
        );
        assert_eq!(j(&["make", "-kj6"]), Some((Some(6), "-kj6".into())));
        // `-j` alone: no limit; a target after it is not a count.
        assert_eq!(j(&["make", "-j", "all"]), Some((None, "-j".into())));
        assert_eq!(
            j(&["ninja", "-C", "build", "-j2"]),
            Some((Some(2), "-j2".into()))
        );
        assert_eq!(j(&["make", "-C", "sub"]), None);
        assert_eq!(j(&["make", "--", "-j2"]), None);
    }

    #[test]
    fn paths_relative_to_the_build() {
        assert_eq!(short_path("/w/b/x.o", "/w/b"), "x.o");
        assert_eq!(short_path("/w/src/x.c", "/w/b"), "../src/x.c");
        assert_eq!(short_path("/usr/lib/libz.a", "/w/b"), "/usr/lib/libz.a");
        assert_eq!(short_path("/w/bb/x.o", "/w/b"), "../bb/x.o");
        assert_eq!(short_path("/x.o", "/"), "/x.o");
    }

    #[test]
    fn command_text_shows_the_script_of_a_shell() {
        let mut p = Process::new(1, None, "/w".into(), "/bin/sh".into());
        p.args = args(&["/bin/sh", "-c", "echo  a >>\tx.pc"]);
        assert_eq!(command_text(&p), "echo a >> x.pc");
        p.executable = "/usr/bin/cmake".into();
        p.args = args(&["/usr/bin/cmake", "-E", "touch", &"y".repeat(200)]);
        let t = command_text(&p);
        assert!(
            t.starts_with("cmake -E touch yyy") && t.ends_with("..."),
            "{t}"
        );
        assert_eq!(t.chars().count(), NAME_CHARS);
    }
}
