//! `tracekit report`: analyse traces.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use tracekit_dialects::input::Input;
use tracekit_dialects::options::ReportOptions;
use tracekit_dialects::report;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit report trace.event.jsonl\n  tracekit report --json /var/log/git-trace2/ > report.json\n  tracekit report trace.xray -m ./app\n  tracekit report --html -o report.html trace.xray -m ./app   # one self-contained page\n  tracekit report --diff before.rtrace after.rtrace   # what grew (memory traces)\n  tracekit report build/                               # a ninja build directory\n  tracekit report --diff old.ninja_log build/          # the targets that got slower\n\n--json prints the structure of docs/report-json.md (\"schema\": \"tracekit.report/1\"). --html needs -o (a file, or - for standard output): tracekit report --html -o mem.html app.tkmem."
)]
pub struct Args {
    /// Trace files or directories (`-` reads standard input). Files of one
    /// dialect are analysed together (e.g. Trace2 sessions are stitched
    /// across files).
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write one self-contained HTML page (inline SVG charts, sortable
    /// tables; loads nothing from anywhere): needs -o FILE (or -o -).
    #[arg(long)]
    pub html: bool,
    /// Write the report here instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many entries the ranked tables show.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// The instrumented binary, for formats that need it to name things
    /// (XRay function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
    /// Compare two recordings of the same program: FILE A (the base) and
    /// FILE B; shows what grew from A to B (memory traces), or the targets
    /// that got slower (two .ninja_log files or ninja build directories).
    /// `tracekit diff A B` does this for every dialect (with --html).
    #[arg(long)]
    pub diff: bool,
}

impl Args {
    /// The typed options the dialects read.
    pub fn options(&self) -> ReportOptions {
        ReportOptions {
            json: self.json,
            html: self.html,
            output: self.output.clone(),
            top: self.top,
            instr_map: self.instr_map.clone(),
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let options = args.options();
    if args.diff {
        let [base, new] = &args.inputs[..] else {
            anyhow::bail!("--diff compares two traces: A (the base) and B");
        };
        if args.html {
            // The page is `tracekit diff`'s (text and JSON keep the form
            // `report --diff` always printed).
            return report::diff(base, new, &options);
        }
        return report::report_diff(&Input::open(base)?, &Input::open(new)?, &options);
    }
    let inputs = args
        .inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    report::run(inputs, &options)
}
