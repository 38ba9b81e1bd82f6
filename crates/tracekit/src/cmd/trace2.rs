//! Git Trace2: the `tracekit trace2 ...` subcommands (the
//! dialect itself is `tracekit_dialects::trace2`).

use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Receive what git sends to `GIT_TRACE2_EVENT=af_unix:...` (and the
    /// PERF/NORMAL targets) and write one file per session.
    Listen(crate::cmd::trace2_listen::Args),
}

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Listen(args) => crate::cmd::trace2_listen::run(args),
    }
}
