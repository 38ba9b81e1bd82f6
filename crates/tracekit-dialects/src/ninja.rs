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
use tracekit_kwinject::ninja::report::{fmt_ms, graph_text};
use tracekit_kwinject::ninja::{self, log, manifest, tools, GraphSource, NinjaBuild, NinjaDiff};

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

    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        let g = group(inputs)?;
        let mut code = ExitCode::SUCCESS;
        let opts = ninja::report::Options {
            top: args.top,
            ..Default::default()
        };
        let mut reports = Vec::with_capacity(g.logs.len());
        for input in &g.logs {
            let b = load(input, g.graph.as_ref(), &g.deps)?;
            if warn_exit(&b) != ExitCode::SUCCESS {
                code = ExitCode::from(1);
            }
            reports.push(ninja::report::to_report(&b, &input.display(), &opts));
        }
        Ok((reports, code))
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
