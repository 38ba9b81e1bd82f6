//! The build report: process tree with durations and exit codes, slowest
//! compile units, critical path, parallelism over time; and the Chrome
//! Trace Event conversion (through the timeline, [`crate::timeline`]).
//!
//! Times come from tracekit's extension keys (`tk_start_us`, `tk_end_us`);
//! traces of other producers have none, and the time-based parts then say
//! so instead of guessing.

use std::io::{self, Write};

use serde_json::{json, Value};
use tracekit_export::chrome_sink::ChromeSink;

use crate::cdb::{entries_for, CdbOptions};
use crate::env::{EnvBase, EnvFolder};
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
}

impl<'a> Build<'a> {
    pub fn new(trace: &'a Trace) -> Self {
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
        }
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
        Some((start, end))
    }

    /// The chain of processes that decided when the build ended, in time
    /// order, with their depth: from the root, the child that ended last,
    /// before it the child that ended last before that one started, and so
    /// on (the sequential steps a process waited for); each step expanded
    /// the same way. Needs times; empty without them.
    pub fn critical_path(&self) -> Vec<(usize, usize)> {
        let Some(root) = self
            .roots()
            .into_iter()
            .filter(|&i| self.p(i).end_us.is_some())
            .max_by_key(|&i| self.p(i).end_us.unwrap_or(0))
        else {
            return Vec::new();
        };
        let mut out = vec![(0, root)];
        self.chain(root, 1, &mut out);
        out
    }

    fn chain(&self, i: usize, depth: usize, out: &mut Vec<(usize, usize)>) {
        let mut steps = Vec::new();
        let mut t = match self.p(i).end_us {
            Some(t) => t,
            None => return,
        };
        loop {
            let next = self.children[i]
                .iter()
                .copied()
                .filter(|&c| {
                    let p = self.p(c);
                    p.end_us.is_some_and(|e| e <= t) && !steps.contains(&c)
                })
                .max_by_key(|&c| self.p(c).end_us.unwrap_or(0));
            let Some(c) = next else { break };
            steps.push(c);
            t = self.p(c).start_us.unwrap_or(0);
        }
        for c in steps.into_iter().rev() {
            out.push((depth, c));
            self.chain(c, depth + 1, out);
        }
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

    fn label(&self, i: usize) -> String {
        let p = self.p(i);
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

/// The human report.
pub fn report_text<W: Write>(b: &Build, top: usize, mut out: W) -> io::Result<()> {
    let t = b.trace;
    let n = t.processes.len();
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
    writeln!(out, "\nProcess tree (duration, exit, command):")?;
    let mut lines = 0;
    let mut stack: Vec<(usize, usize)> = b.roots().into_iter().rev().map(|r| (r, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if lines < TREE_LINES {
            let p = b.p(i);
            writeln!(
                out,
                "{:indent$}{:>10} {:>8}  {}",
                "",
                fmt_dur(p.duration_us()),
                fmt_exit(p.exit),
                b.label(i),
                indent = depth * 2
            )?;
        }
        lines += 1;
        for &c in b.children[i].iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    if lines > TREE_LINES {
        writeln!(
            out,
            "  ... {} more processes (--json has them all)",
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
    writeln!(
        out,
        "\nCritical path (the steps each process waited for, in order):"
    )?;
    let path = b.critical_path();
    for &(depth, i) in path.iter().take(TREE_LINES / 2) {
        writeln!(
            out,
            "{:indent$}{:>10}  {}",
            "",
            fmt_dur(b.p(i).duration_us()),
            b.label(i),
            indent = 2 + depth * 2
        )?;
    }
    if path.len() > TREE_LINES / 2 {
        writeln!(
            out,
            "  ... {} more steps (--json has them all)",
            path.len() - TREE_LINES / 2
        )?;
    }
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
    out.flush()
}

/// The same report as JSON.
pub fn report_json(b: &Build, top: usize) -> Value {
    let t = b.trace;
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
    json!({
        "format": "kwinject",
        "creator": t.creator,
        "processes": procs,
        "slowest_compile_units": slowest,
        "critical_path": b.critical_path().iter().map(|&(d, i)| json!({"depth": d, "index": i})).collect::<Vec<_>>(),
        "parallelism": par,
        "span_us": b.span().map(|(s, e)| e - s),
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
