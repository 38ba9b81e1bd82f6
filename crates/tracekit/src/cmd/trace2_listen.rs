//! `tracekit trace2 listen`: a receiver for git's af_unix trace2 targets.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The Unix socket to create and listen on.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// The directory to write one file per session into.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("trace2 listen: under construction")
}
