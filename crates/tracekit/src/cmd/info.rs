//! `tracekit info`: what is this trace?

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use tracekit_dialects::input::Input;
use tracekit_dialects::options::InfoOptions;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit info trace.event.jsonl\n  tracekit info --json /var/log/git-trace2/"
)]
pub struct Args {
    /// Trace files or directories (`-` reads standard input).
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print JSON instead of text: one object per input and line, the same
    /// fields for every dialect (`tracekit.info/1`, docs/info-json.md).
    #[arg(long)]
    pub json: bool,
    /// The instrumented binary, for formats that need it to name things
    /// (XRay function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let inputs = args
        .inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    let options = InfoOptions {
        json: args.json,
        instr_map: args.instr_map.clone(),
    };
    tracekit_dialects::info::run(inputs, &options)
}
