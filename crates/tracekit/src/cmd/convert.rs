//! `tracekit convert`: one format to another.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::formats;
use crate::input::Input;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Targets:\n  chrome           Chrome Trace Event JSON (Perfetto UI, chrome://tracing)\n  trace2-event     Git Trace2 EVENT (JSON lines)\n  trace2-perf      Git Trace2 PERF, as git writes it\n  trace2-normal    Git Trace2 NORMAL, as git writes it\n  (each dialect lists its own targets in its error message)\n\nExamples:\n  tracekit convert event.jsonl --to trace2-perf\n  tracekit convert event.jsonl --to chrome -o trace.json"
)]
pub struct Args {
    /// The trace to convert (`-` reads standard input).
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// The output format.
    #[arg(long, value_name = "FORMAT")]
    pub to: String,
    /// Write here instead of standard output (`-` is standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the brief variant (Trace2 targets: no time or file:line).
    #[arg(long)]
    pub brief: bool,
    /// The instrumented binary, for formats that need it to name things
    /// (XRay function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let input = Input::open(&args.input)?;
    let dialect = formats::detect(&input)?;
    dialect.convert(&input, &args)
}
