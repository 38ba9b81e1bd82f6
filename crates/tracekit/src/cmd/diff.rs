//! `tracekit diff BEFORE AFTER`: its flags (the work is
//! `tracekit_dialects::report::diff`: each dialect's `compare`, a report as
//! data, rendered as text, `--json` or `--html`; docs/diff.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use tracekit_dialects::options::ReportOptions;

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
    let options = ReportOptions {
        json: args.json,
        html: args.html,
        output: args.output,
        top: args.top,
        instr_map: args.instr_map,
    };
    tracekit_dialects::report::diff(&args.before, &args.after, &options)
}
