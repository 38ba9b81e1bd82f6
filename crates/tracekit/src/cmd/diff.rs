//! `tracekit diff BEFORE AFTER`: what changed between two traces of one
//! dialect. Each dialect crate computes its comparison as data (a
//! `tracekit_report::Report`: `tracekit_trace2::diff`, `tracekit_xray::diff`,
//! `tracekit_kwinject::diff`, `tracekit_rtrace::report::diff`,
//! `tracekit_posix::diff`); this verb opens both inputs, checks that they
//! are of one dialect, and renders the report as text, `--json` or
//! `--html` (docs/diff.md).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_report::Report;

use crate::cmd::{output, usage};
use crate::formats;
use tracekit_dialects::input::Input;
use tracekit_dialects::options::DiffOptions;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit diff before/ after/                       # two directories of Git Trace2 traces\n  tracekit diff -m ./app old.xray new.xray           # XRay logs of one binary\n  tracekit diff old.trace new.trace --json           # build traces, POSIX trace logs, ...\n  tracekit diff --html -o diff.html a.rtrace b.rtrace # one self-contained page\n\nBoth inputs must be of one dialect (exit 2 otherwise). Where both sides hold several samples (a Git command's runs, an XRay function's calls), the change is tested with the Mann-Whitney U test: `significance` says slower, faster, within spread or too few samples (docs/diff.md). --json prints the structure of docs/report-json.md (\"schema\": \"tracekit.report/1\")."
)]
pub struct Args {
    /// The base: a trace file or directory (`-` reads standard input).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// What it is compared with.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// Print JSON (tracekit.report/1) instead of text.
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write one self-contained HTML page: needs -o FILE (or -o -).
    #[arg(long)]
    pub html: bool,
    /// Write the comparison here instead of standard output (`-`: standard
    /// output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many rows the ranked tables show (the rest are counted, with
    /// their totals).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// The instrumented binary both XRay logs come from (names function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.html && args.output.is_none() {
        return usage("diff --html writes a page: give -o FILE (or -o - for standard output)");
    }
    if args.before.as_os_str() == "-" && args.after.as_os_str() == "-" {
        return usage("diff: only one side can be standard input (-)");
    }
    let before = Input::open(&args.before)?;
    let after = Input::open(&args.after)?;
    let d = formats::detect(&before)?;
    let other = formats::detect(&after)?;
    if d.name() != other.name() {
        return usage(format!(
            "diff compares two traces of one dialect: {} is {}, {} is {}",
            before.display(),
            d.name(),
            after.display(),
            other.name()
        ));
    }
    let options = DiffOptions {
        top: args.top,
        instr_map: args.instr_map.clone(),
    };
    let (report, code) = d.compare(&before, &after, &options)?;
    write(&[report], &args)?;
    Ok(code)
}

/// Renders `reports` as the arguments ask.
pub fn write(reports: &[Report], args: &Args) -> Result<()> {
    let failed = |e: std::io::Error| tracekit_core::Error::io(args.output.as_deref(), e);
    let mut out = output(args.output.as_deref())?;
    if args.html {
        tracekit_report::html::write(&mut out, reports).map_err(failed)?;
    } else if args.json {
        tracekit_report::json::write(&mut out, reports).map_err(failed)?;
    } else {
        tracekit_report::text::write(&mut out, reports).map_err(failed)?;
    }
    out.flush().map_err(failed)?;
    Ok(())
}
