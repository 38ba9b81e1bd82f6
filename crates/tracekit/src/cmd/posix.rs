//! POSIX trace: the flags of `tracekit posix record/dump` (the work and
//! the trace-log dialect are `tracekit_dialects::posix`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use tracekit_dialects::posix;
use tracekit_posix::consts::*;
use tracekit_posix::TraceAttr;
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Run a program that uses <trace.h> as the traced process, with
    /// tracekit as its controller.
    ///
    /// The program's `posix_trace_event` calls land in a stream that
    /// tracekit creates in shared memory (its name is passed in the
    /// environment variable TRACEKIT_POSIX_STREAM). With --log the stream
    /// is written to a trace log; without, events are printed as they
    /// arrive, like `tracekit posix dump`.
    ///
    /// Examples:
    ///   tracekit posix record --log run.trace -- ./myprog arg1
    ///   tracekit posix record --inherit --log run.trace -- make -j4
    ///   tracekit posix record --inherit --stop-at-exit --log run.trace -- ./server
    ///   tracekit posix record --policy until-full --stream-size 64M -- ./myprog
    ///   tracekit posix record --filter noisy_event -- ./myprog
    ///   tracekit posix dump run.trace
    #[command(verbatim_doc_comment)]
    Record(RecordArgs),
    /// Print the events of a trace log in order: time, pid, thread, event
    /// type, truncation, payload (hex and printable text).
    ///
    /// Examples:
    ///   tracekit posix dump run.trace
    ///   tracekit posix dump --json run.trace | jq .event
    #[command(verbatim_doc_comment)]
    Dump(DumpArgs),
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum StreamPolicy {
    /// Overwrite the oldest events when full (default without a log).
    Loop,
    /// Stop when full; restart once the events were read.
    UntilFull,
    /// Flush to the log whenever the stream fills (default with a log).
    Flush,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LogPolicy {
    /// Overwrite the oldest part of the log when it reaches --log-size.
    Loop,
    /// Stop logging when the log reaches --log-size.
    UntilFull,
    /// Grow without limit (default here).
    Append,
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Stream size in bytes (suffixes k, M, G).
    #[arg(long, value_name = "N", value_parser = parse_size, default_value = "16M")]
    pub stream_size: u64,
    /// What happens when the stream is full.
    #[arg(long, value_enum)]
    pub policy: Option<StreamPolicy>,
    /// Write the events to this trace log.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// What happens when the log reaches --log-size.
    #[arg(long, value_enum, default_value = "append")]
    pub log_policy: LogPolicy,
    /// Maximum log size for --log-policy loop and until-full.
    #[arg(long, value_name = "N", value_parser = parse_size, default_value = "1G")]
    pub log_size: u64,
    /// Largest payload kept per event; longer ones are truncated.
    #[arg(long, value_name = "N", value_parser = parse_size, default_value = "256")]
    pub max_data_size: u64,
    /// Do not record these event types (names; system types by their
    /// POSIX names, e.g. posix_trace_flush_start).
    #[arg(long, value_name = "EVENT", num_args = 1..)]
    pub filter: Vec<String>,
    /// Trace the program's children too (forked and exec'd). The
    /// recording then lasts until every process that inherited the stream
    /// has exited: the program and all its descendants, also those that
    /// outlive it (as `strace -f` waits for every traced process).
    #[arg(long)]
    pub inherit: bool,
    /// With --inherit: stop recording when the program itself exits,
    /// without waiting for its descendants. Events they write afterwards
    /// are not recorded; a process left behind counts them in the log's
    /// header ("written after shutdown") until the last one exits.
    #[arg(long, requires_all = ["inherit", "log"])]
    pub stop_at_exit: bool,
    /// Print events as JSON lines (without --log).
    #[arg(long)]
    pub json: bool,
    /// The program to run and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    /// The trace log (`-` for standard input).
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// One JSON object per event.
    #[arg(long)]
    pub json: bool,
    /// Write here instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&s[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("not a size: {s} (use e.g. 4096, 64k, 16M)"))
}

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Record(a) => posix::record(a.options()?),
        Command::Dump(a) => posix::dump(posix::DumpOptions {
            log: a.log,
            json: a.json,
            output: a.output,
        }),
    }
}

impl RecordArgs {
    /// The stream's and log's attributes from the flags, checked.
    fn options(self) -> Result<posix::RecordOptions> {
        let mut attr = TraceAttr::default();
        attr.stream_size = self.stream_size;
        if !attr.set_max_data_size(self.max_data_size) {
            bail!("--max-data-size: at most 16k");
        }
        if let Some(p) = self.policy {
            attr.set_stream_policy(match p {
                StreamPolicy::Loop => POSIX_TRACE_LOOP,
                StreamPolicy::UntilFull => POSIX_TRACE_UNTIL_FULL,
                StreamPolicy::Flush => POSIX_TRACE_FLUSH,
            });
        }
        attr.set_log_policy(match self.log_policy {
            LogPolicy::Loop => POSIX_TRACE_LOOP,
            LogPolicy::UntilFull => POSIX_TRACE_UNTIL_FULL,
            LogPolicy::Append => POSIX_TRACE_APPEND,
        });
        attr.log_size = self.log_size;
        Ok(posix::RecordOptions {
            attr,
            log: self.log,
            filter: self.filter,
            inherit: self.inherit,
            stop_at_exit: self.stop_at_exit,
            json: self.json,
            cmd: self.cmd,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert!(parse_size("12q").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }
}
