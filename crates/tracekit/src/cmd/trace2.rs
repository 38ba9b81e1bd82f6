//! Git Trace2: the dialect behind `info`/`report`/`convert`, and the
//! `tracekit trace2 ...` subcommands.

use std::process::ExitCode;

use anyhow::Result;

use crate::cmd::{convert, info, report};
use crate::formats::Dialect;
use crate::input::Input;

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

pub struct Trace2;

impl Dialect for Trace2 {
    fn name(&self) -> &'static str {
        "Git Trace2 (EVENT, PERF, NORMAL)"
    }
    fn sniff(&self, _input: &Input) -> bool {
        false
    }
    fn info(&self, _inputs: &[Input], _args: &info::Args) -> Result<ExitCode> {
        anyhow::bail!("trace2 info: under construction")
    }
    fn report(&self, _inputs: &[Input], _args: &report::Args) -> Result<ExitCode> {
        anyhow::bail!("trace2 report: under construction")
    }
    fn convert(&self, _input: &Input, _args: &convert::Args) -> Result<ExitCode> {
        anyhow::bail!("trace2 convert: under construction")
    }
}
