//! `tracekit report`: analyse traces.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::formats;
use crate::input::Input;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit report trace.event.jsonl\n  tracekit report --json /var/log/git-trace2/ > report.json\n  tracekit report trace.xray -m ./app\n  tracekit report --diff before.rtrace after.rtrace   # what grew (memory traces)\n  tracekit report build/                               # a ninja build directory\n  tracekit report --diff old.ninja_log build/          # the targets that got slower"
)]
pub struct Args {
    /// Trace files or directories (`-` reads standard input). Files of one
    /// dialect are analysed together (e.g. Trace2 sessions are stitched
    /// across files).
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
    #[arg(long)]
    pub diff: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let inputs = args
        .inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    if args.diff {
        let [base, new] = &inputs[..] else {
            anyhow::bail!("--diff compares two traces: A (the base) and B");
        };
        let dialect = formats::detect(base)?;
        let other = formats::detect(new)?;
        if !std::ptr::addr_eq(dialect, other) {
            anyhow::bail!(
                "--diff: {} is {}, {} is {}",
                base.display(),
                dialect.name(),
                new.display(),
                other.name()
            );
        }
        return dialect.diff(base, new, &args);
    }
    let mut code = ExitCode::SUCCESS;
    for (dialect, group) in formats::group(inputs)? {
        let c = dialect.report(&group, &args)?;
        if c != ExitCode::SUCCESS {
            code = c;
        }
    }
    Ok(code)
}
