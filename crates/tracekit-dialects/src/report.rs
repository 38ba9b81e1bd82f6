//! `report` and `diff`: the dialects' reports (as data where they have
//! them), rendered once as text, `tracekit.report/1` JSON or one
//! self-contained HTML page (`tracekit_report`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_report::Report;

use crate::input::Input;
use crate::options::{DiffOptions, ReportOptions};
use crate::out::{output, usage};
use crate::registry;

/// `tracekit report`: inputs of one dialect are analysed together, the
/// dialects' reports rendered into one output.
pub fn run(inputs: Vec<Input>, options: &ReportOptions) -> Result<ExitCode> {
    let groups = registry::group(inputs)?;
    if options.html && options.output.is_none() {
        eprintln!(
            "tracekit: report --html writes a page: give -o FILE (or -o - for standard output)"
        );
        return Ok(ExitCode::from(2));
    }
    let mut code = ExitCode::SUCCESS;
    // One output for every dialect's reports: text as each group is
    // analysed, one JSON document or one page for all at the end.
    let mut out: Option<Box<dyn Write>> = None;
    let mut collected = Vec::new();
    let failed = |e: std::io::Error| tracekit_core::Error::io(options.output.as_deref(), e);
    for (dialect, group) in groups {
        let (reports, c) = dialect.reports(&group, options)?;
        if c != ExitCode::SUCCESS {
            code = c;
        }
        if options.html || options.json {
            collected.extend(reports);
            continue;
        }
        let o = match out.as_mut() {
            Some(o) => o,
            None => out.insert(output(options.output.as_deref())?),
        };
        tracekit_report::text::write(o, &reports).map_err(failed)?;
    }
    if options.html || (options.json && !collected.is_empty()) {
        let o = match out.as_mut() {
            Some(o) => o,
            None => out.insert(output(options.output.as_deref())?),
        };
        if options.html {
            tracekit_report::html::write(o, &collected).map_err(failed)?;
        } else {
            tracekit_report::json::write(o, &collected).map_err(failed)?;
        }
    }
    if let Some(mut o) = out {
        o.flush().map_err(failed)?;
    }
    Ok(code)
}

/// `report --diff A B` (memory traces, `.ninja_log`): the dialect's own
/// comparison, in the form it always printed.
pub fn report_diff(base: &Input, new: &Input, options: &ReportOptions) -> Result<ExitCode> {
    let dialect = registry::detect(base)?;
    let other = registry::detect(new)?;
    if dialect.name() != other.name() {
        anyhow::bail!(
            "--diff: {} is {}, {} is {}",
            base.display(),
            dialect.name(),
            new.display(),
            other.name()
        );
    }
    dialect.diff(base, new, options)
}

/// `tracekit diff BEFORE AFTER`: what changed between two traces of one
/// dialect, rendered as `options` say (exit 2 for two dialects).
pub fn diff(before: &Path, after: &Path, options: &ReportOptions) -> Result<ExitCode> {
    if options.html && options.output.is_none() {
        return usage("diff --html writes a page: give -o FILE (or -o - for standard output)");
    }
    if before.as_os_str() == "-" && after.as_os_str() == "-" {
        return usage("diff: only one side can be standard input (-)");
    }
    let before = Input::open(before)?;
    let after = Input::open(after)?;
    let d = registry::detect(&before)?;
    let other = registry::detect(&after)?;
    if d.name() != other.name() {
        return usage(format!(
            "diff compares two traces of one dialect: {} is {}, {} is {}",
            before.display(),
            d.name(),
            after.display(),
            other.name()
        ));
    }
    let compare = DiffOptions {
        top: options.top,
        instr_map: options.instr_map.clone(),
    };
    let (report, code) = d.compare(&before, &after, &compare)?;
    write(&[report], options)?;
    Ok(code)
}

/// Renders `reports` as `options` ask (HTML, JSON or text).
pub fn write(reports: &[Report], options: &ReportOptions) -> Result<()> {
    let failed = |e: std::io::Error| tracekit_core::Error::io(options.output.as_deref(), e);
    let mut out = output(options.output.as_deref())?;
    if options.html {
        tracekit_report::html::write(&mut out, reports).map_err(failed)?;
    } else if options.json {
        tracekit_report::json::write(&mut out, reports).map_err(failed)?;
    } else {
        tracekit_report::text::write(&mut out, reports).map_err(failed)?;
    }
    out.flush().map_err(failed)?;
    Ok(())
}
