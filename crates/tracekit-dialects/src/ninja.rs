//! ninja's build log (`.ninja_log`, or a build directory holding one) as
//! an input of the generic verbs: `info`, `report` (and `report --diff A
//! B`), `convert` to the timeline outputs. A `build.ninja` beside the log
//! gives the dependency graph; `ninja -t graph` and `ninja -t deps` output
//! given as further inputs of `report` give it where the directory is not
//! at hand.

use crate::options::DiffOptions;
use crate::options::{ConvertOptions, InfoOptions, ReportOptions};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use tracekit_core::timeline::Sink;
use tracekit_kwinject::ninja::{
    self, log, manifest, tools, DepKind, GraphSource, NinjaBuild, NinjaDiff,
};

use crate::input::Input;
use crate::out::output;
use crate::registry::{Dialect, Target};

pub struct NinjaLog;

fn read_all(input: &Input) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if input.is_dir {
        let p = input.path.join(".ninja_log");
        return std::fs::read(&p).map_err(|e| tracekit_core::Error::io(Some(&p), e).into());
    }
    input
        .reader()?
        .read_to_end(&mut bytes)
        .map_err(|e| tracekit_core::Error::io(Some(&input.path), e))?;
    Ok(bytes)
}

/// The build directory of an input: the directory itself, or the log's.
fn build_dir(input: &Input) -> Option<PathBuf> {
    if input.is_stdin() {
        return None;
    }
    if input.is_dir {
        return Some(input.path.clone());
    }
    Some(match input.path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    })
}

fn is_log(input: &Input) -> bool {
    if input.is_dir {
        input.path.join(".ninja_log").is_file()
    } else {
        log::sniff(&input.head)
    }
}

/// A log and the graph found for it.
fn load(
    input: &Input,
    graph_text: Option<&(String, Vec<manifest::Edge>)>,
    deps: &[(String, Vec<String>)],
) -> Result<NinjaBuild> {
    let bytes = read_all(input)?;
    let name = if input.is_dir {
        input.path.join(".ninja_log")
    } else {
        input.path.clone()
    };
    let log = log::read_log(&bytes).map_err(|e| e.in_file(&name))?;
    crate::out::print_warnings(name.display(), &log.warnings);
    let cwd = std::env::current_dir().context("the current directory")?;
    let dir = build_dir(input);
    let abs = ninja::build_dir(
        &cwd.display().to_string(),
        &dir.clone()
            .unwrap_or_else(|| PathBuf::from("."))
            .display()
            .to_string(),
    );
    let (graph, edges) = match (graph_text, &dir) {
        (Some((_, edges)), _) => (GraphSource::ToolGraph, edges.clone()),
        (None, Some(d)) if d.join("build.ninja").is_file() => {
            let m = manifest::read_build_dir(d)?;
            (GraphSource::Manifest(m.files), m.edges)
        }
        _ => (GraphSource::None, Vec::new()),
    };
    // ninja's deps log, read as `ninja -t deps` would print it, is binary:
    // only the text of `ninja -t deps` is read.
    Ok(NinjaBuild::new(log, &abs, graph, edges, deps))
}

/// `tracekit diff` of two `.ninja_log` files (or build directories, whose
/// `build.ninja` gives the critical paths), as data.
pub(crate) fn diff_report(
    before: &Input,
    after: &Input,
    top: usize,
) -> Result<tracekit_report::Report> {
    if !is_log(before) || !is_log(after) {
        return crate::out::usage("diff compares two .ninja_log files (or build directories)");
    }
    let a = load(before, None, &[])?;
    let b = load(after, None, &[])?;
    Ok(tracekit_kwinject::diff::ninja_logs(
        &a,
        &before.display(),
        &b,
        &after.display(),
        top,
    ))
}

/// The inputs of one `report`: logs, and the graph and deps texts.
struct Group<'a> {
    logs: Vec<&'a Input>,
    graph: Option<(String, Vec<manifest::Edge>)>,
    deps: Vec<(String, Vec<String>)>,
}

fn group(inputs: &[Input]) -> Result<Group<'_>> {
    let mut g = Group {
        logs: Vec::new(),
        graph: None,
        deps: Vec::new(),
    };
    for input in inputs {
        if is_log(input) {
            g.logs.push(input);
            continue;
        }
        let bytes = read_all(input)?;
        let text = String::from_utf8_lossy(&bytes);
        if tools::sniff_graph(&input.head) {
            let edges = tools::read_graph(&text).map_err(|e| e.in_file(&input.path))?;
            g.graph = Some((input.display(), edges));
        } else {
            g.deps
                .extend(tools::read_deps(&text).map_err(|e| e.in_file(&input.path))?);
        }
    }
    if g.logs.is_empty() {
        anyhow::bail!(
            "ninja -t graph / -t deps output needs a .ninja_log (or its build directory) beside it"
        );
    }
    Ok(g)
}

fn fmt_ms(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else {
        format!("{:.1} ms", us as f64 / 1e3)
    }
}

fn graph_text(b: &NinjaBuild) -> String {
    match &b.graph {
        GraphSource::Manifest(files) => format!("build.ninja ({} files)", files.len()),
        GraphSource::ToolGraph => "ninja -t graph output".into(),
        GraphSource::None => "none (no build.ninja beside the log)".into(),
    }
}

fn report_text(b: &NinjaBuild, name: &str, top: usize, out: &mut dyn Write) -> Result<()> {
    let last = b.last_run();
    writeln!(
        out,
        "ninja log v{}: {name}: {} targets from {} entries, {} runs in the log",
        b.log.version,
        b.targets.len(),
        b.log.entries.len(),
        b.runs
    )?;
    if let Some(w) = b.wall_us() {
        writeln!(
            out,
            "Last run: {} targets, wall time {} (the timeline's)",
            last.len(),
            fmt_ms(w)
        )?;
    }
    writeln!(out, "Dependency graph: {}", graph_text(b))?;
    if b.not_in_graph > 0 {
        writeln!(
            out,
            "  {} targets of the log have no build statement in the graph (removed since?)",
            b.not_in_graph
        )?;
    }
    let mut order: Vec<usize> = (0..b.targets.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(b.targets[i].duration_ms()));
    writeln!(
        out,
        "\nSlowest targets (the latest entry of each output, over all runs):"
    )?;
    for &i in order.iter().take(top) {
        writeln!(
            out,
            "  {:>10}  {:<7}  {}",
            fmt_ms(b.targets[i].duration_ms() * 1000),
            b.info[i].kind.as_str(),
            b.info[i].name
        )?;
    }
    match &b.critical_path {
        None => writeln!(
            out,
            "\nCritical path: unknown (no build.ninja beside the log, and no ninja -t graph given)"
        )?,
        Some(cp) => {
            writeln!(
                out,
                "\nCritical path (the longest chain of targets over the dependency graph, each \
                 weighted by its measured time; {}{}):",
                fmt_ms(cp.total_us),
                b.wall_us()
                    .map(|w| format!(" against {} wall time of the last run", fmt_ms(w)))
                    .unwrap_or_default()
            )?;
            for (k, &s) in cp.steps.iter().enumerate() {
                let via = match k.checked_sub(1).map(|e| &b.deps[cp.edges[e]]) {
                    Some(d) if d.kind == DepKind::Header => format!("  (header {})", d.file),
                    Some(d) => format!("  (needs {})", d.file),
                    None => String::new(),
                };
                writeln!(
                    out,
                    "  {:>10}  {:<7}  {}{via}",
                    fmt_ms(b.targets[s].duration_ms() * 1000),
                    b.info[s].kind.as_str(),
                    b.info[s].name
                )?;
            }
            let declared = b
                .deps
                .iter()
                .filter(|d| d.kind == DepKind::Declared)
                .count();
            let headers = b.deps.len() - declared;
            writeln!(
                out,
                "  Dependencies: {declared} declared in the graph (through {} build statements \
                 that ran nothing: phony, or not in the log), {headers} from ninja's deps log \
                 (ninja -t deps)",
                b.passes.len()
            )?;
        }
    }
    if let Some(w) = &b.waits {
        let (slot, other) = w.totals();
        let mut waited: Vec<_> = w.waits.iter().filter(|x| x.slot_us > 0).collect();
        waited.sort_by_key(|x| std::cmp::Reverse(x.slot_us));
        writeln!(
            out,
            "\nJob-slot waits of the last run (time a target that was ready waited while {} \
             commands ran: the most seen at once, the log does not say ninja's -j; ready: the \
             targets it depends on had ended): {} in all, {} targets",
            w.jobs,
            fmt_ms(slot),
            waited.len()
        )?;
        for x in waited.iter().take(top) {
            writeln!(
                out,
                "  {:>10}  {:<7}  {}",
                fmt_ms(x.slot_us),
                b.info[x.step].kind.as_str(),
                b.info[x.step].name
            )?;
        }
        writeln!(
            out,
            "  Other delays of ready targets (fewer commands running): {} in all",
            fmt_ms(other)
        )?;
    }
    Ok(())
}

fn report_json(b: &NinjaBuild, name: &str, top: usize) -> serde_json::Value {
    let mut order: Vec<usize> = (0..b.targets.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(b.targets[i].duration_ms()));
    let targets: Vec<serde_json::Value> = b
        .targets
        .iter()
        .zip(&b.info)
        .map(|(t, i)| {
            json!({
                "outputs": t.outputs, "start_ms": t.start_ms, "end_ms": t.end_ms,
                "duration_ms": t.duration_ms(), "run": t.run, "hash": t.hash,
                "line": t.line, "kind": i.kind.as_str(), "name": i.name,
                "in_graph": i.edge.is_some(),
            })
        })
        .collect();
    json!({
        "format": "ninja_log",
        "file": name,
        "version": b.log.version,
        "entries": b.log.entries.len(),
        "runs": b.runs,
        "targets": targets,
        "slowest": order.iter().take(top).collect::<Vec<_>>(),
        "last_run_wall_ms": b.wall_us().map(|w| w / 1000),
        "graph": match &b.graph {
            GraphSource::Manifest(f) => json!({"build_ninja": f}),
            GraphSource::ToolGraph => json!("ninja -t graph"),
            GraphSource::None => serde_json::Value::Null,
        },
        "not_in_graph": b.not_in_graph,
        // Dependency nodes from targets.len() on: statements that ran nothing.
        "passes": b.passes.iter().map(|&e| json!({
            "rule": b.edges[e].rule, "outputs": b.edges[e].outputs,
        })).collect::<Vec<_>>(),
        "dependencies": b.deps.iter().map(|d| json!({
            "from": d.from, "to": d.to, "file": d.file,
            "kind": match d.kind { DepKind::Declared => "declared", DepKind::Header => "header" },
        })).collect::<Vec<_>>(),
        "critical_path": b.critical_path.as_ref().map(|c| json!({
            "targets": c.steps, "dependencies": c.edges, "total_ms": c.total_us / 1000,
        })),
        "job_slots": b.waits.as_ref().map(|w| {
            let (slot, other) = w.totals();
            json!({
                "jobs": w.jobs, "from": "observed",
                "slot_wait_ms": slot / 1000, "other_wait_ms": other / 1000,
                "waits": w.waits.iter().map(|x| json!({
                    "target": x.step, "ready_ms": x.ready_us / 1000,
                    "ready_after": x.ready_after,
                    "slot_wait_ms": x.slot_us / 1000, "other_wait_ms": x.other_us / 1000,
                })).collect::<Vec<_>>(),
            })
        }),
        "warnings": b.log.warnings.total(),
    })
}

fn warn_exit(b: &NinjaBuild) -> ExitCode {
    if b.log.warnings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

impl Dialect for NinjaLog {
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        Ok((diff_report(before, after, options.top)?, ExitCode::SUCCESS))
    }
    fn name(&self) -> &'static str {
        "ninja build log"
    }

    fn sniff(&self, input: &Input) -> bool {
        is_log(input) || tools::sniff_deps(&input.head) || tools::sniff_graph(&input.head)
    }

    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
        let mut out = output(None)?;
        let mut code = ExitCode::SUCCESS;
        for input in inputs.iter().filter(|i| is_log(i)) {
            let b = load(input, None, &[])?;
            if warn_exit(&b) != ExitCode::SUCCESS {
                code = ExitCode::from(1);
            }
            if args.json {
                crate::info::Info {
                    input: input.display(),
                    dialect: "ninja",
                    format: "ninja build log".into(),
                    version: Some(format!("v{}", b.log.version)),
                    events: Some(b.log.entries.len() as u64),
                    warnings: Some(b.log.warnings.total()),
                    details: json!({
                        "entries": b.log.entries.len(), "targets": b.targets.len(),
                        "runs": b.runs, "last_run_wall_ms": b.wall_us().map(|w| w / 1000),
                        "graph": graph_text(&b),
                    }),
                    ..Default::default()
                }
                .write_line(&mut out)?;
            } else {
                writeln!(out, "{}: ninja build log", input.display())?;
                writeln!(out, "  version:       v{}", b.log.version)?;
                writeln!(out, "  entries:       {}", b.log.entries.len())?;
                writeln!(
                    out,
                    "  targets:       {} (the latest entry of each output)",
                    b.targets.len()
                )?;
                writeln!(out, "  runs:          {}", b.runs)?;
                if let Some(w) = b.wall_us() {
                    writeln!(out, "  last run:      {} wall time", fmt_ms(w))?;
                }
                writeln!(out, "  graph:         {}", graph_text(&b))?;
                writeln!(out, "  warnings:      {}", b.log.warnings.total())?;
            }
        }
        out.flush()?;
        Ok(code)
    }

    fn report(&self, inputs: &[Input], args: &ReportOptions) -> Result<ExitCode> {
        let g = group(inputs)?;
        let mut out = output(args.output.as_deref())?;
        let mut code = ExitCode::SUCCESS;
        for input in &g.logs {
            let b = load(input, g.graph.as_ref(), &g.deps)?;
            if warn_exit(&b) != ExitCode::SUCCESS {
                code = ExitCode::from(1);
            }
            if args.json {
                serde_json::to_writer_pretty(
                    &mut out,
                    &report_json(&b, &input.display(), args.top),
                )?;
                writeln!(out)?;
            } else {
                report_text(&b, &input.display(), args.top, &mut out)?;
            }
        }
        out.flush()?;
        Ok(code)
    }

    fn diff(&self, base: &Input, new: &Input, args: &ReportOptions) -> Result<ExitCode> {
        if !is_log(base) || !is_log(new) {
            anyhow::bail!("--diff compares two .ninja_log files (or build directories)");
        }
        let a = load(base, None, &[])?;
        let b = load(new, None, &[])?;
        let d = NinjaDiff::new(&a.targets, &b.targets);
        let mut out = output(args.output.as_deref())?;
        if args.json {
            let v = json!({
                "format": "ninja_log_diff",
                "base": base.display(), "new": new.display(),
                "before_total_ms": d.before_total_ms, "after_total_ms": d.after_total_ms,
                "changed": d.changed.iter().map(|c| json!({
                    "target": c.name, "before_ms": c.before_ms, "after_ms": c.after_ms,
                    "change_ms": c.delta_ms(),
                })).collect::<Vec<_>>(),
                "added": d.added.iter().map(|(n, ms)| json!({"target": n, "ms": ms})).collect::<Vec<_>>(),
                "removed": d.removed.iter().map(|(n, ms)| json!({"target": n, "ms": ms})).collect::<Vec<_>>(),
            });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "ninja logs: {} (base) → {}: targets' time {} → {} ({} in both, {} added, {} removed)",
                base.display(),
                new.display(),
                fmt_ms(d.before_total_ms * 1000),
                fmt_ms(d.after_total_ms * 1000),
                d.changed.len(),
                d.added.len(),
                d.removed.len()
            )?;
            let slower: Vec<_> = d.changed.iter().filter(|c| c.delta_ms() > 0).collect();
            writeln!(out, "\nSlower ({}):", slower.len())?;
            for c in slower.iter().take(args.top) {
                writeln!(
                    out,
                    "  {:>+10.1} ms  {:>10} → {:<10}  {}",
                    c.delta_ms() as f64,
                    fmt_ms(c.before_ms * 1000),
                    fmt_ms(c.after_ms * 1000),
                    c.name
                )?;
            }
            let faster: Vec<_> = d
                .changed
                .iter()
                .rev()
                .filter(|c| c.delta_ms() < 0)
                .collect();
            writeln!(out, "\nFaster ({}):", faster.len())?;
            for c in faster.iter().take(args.top) {
                writeln!(
                    out,
                    "  {:>+10.1} ms  {:>10} → {:<10}  {}",
                    c.delta_ms() as f64,
                    fmt_ms(c.before_ms * 1000),
                    fmt_ms(c.after_ms * 1000),
                    c.name
                )?;
            }
            for (what, list) in [("Added", &d.added), ("Removed", &d.removed)] {
                if !list.is_empty() {
                    writeln!(out, "\n{what} ({}):", list.len())?;
                    for (n, ms) in list.iter().take(args.top) {
                        writeln!(out, "  {:>10}  {n}", fmt_ms(ms * 1000))?;
                    }
                }
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        if !is_log(input) {
            anyhow::bail!(
                "{}: ninja -t graph / -t deps output has no times: convert the .ninja_log",
                input.display()
            );
        }
        let b = load(input, None, &[])?;
        ninja::map_timeline(&b, &input.display(), sink)?;
        if b.runs > 1 {
            eprintln!(
                "tracekit: {}: the log holds {} runs of ninja; the timeline shows the last ({} \
                 targets)",
                input.display(),
                b.runs,
                b.last_run().len()
            );
        }
        Ok(warn_exit(&b))
    }

    /// A ninja log has no format of its own to write: only the targets
    /// of every input (chrome, perfetto, parquet, otlp).
    fn targets(&self) -> &'static [Target] {
        &[]
    }
}
