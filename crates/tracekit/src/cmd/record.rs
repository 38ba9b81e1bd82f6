//! `tracekit record ...`: run a program and record a trace of it. One
//! variant per kind of recording.

use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Run a build and record every process it starts as a kwinject build
    /// trace (then: `tracekit build spec`, `tracekit report`).
    Build(crate::cmd::build::RecordArgs),
    /// Run a program with memory (and file-descriptor) allocations
    /// recorded, with backtraces, into one compact file, OUT.tkmem (then:
    /// `tracekit report OUT.tkmem`, `tracekit rtrace postproc -lcr`).
    Mem(crate::cmd::rtrace::RecordArgs),
    // Recording kinds: add yours above this line (one variant).
}

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Build(args) => crate::cmd::build::record_build(args),
        Command::Mem(args) => crate::cmd::rtrace::record_mem(args),
        // Recording kinds: add yours above this line (one arm).
    }
}
