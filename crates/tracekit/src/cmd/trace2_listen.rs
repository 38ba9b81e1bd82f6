//! `tracekit trace2 listen`: a receiver for git's af_unix trace2 targets.
//! The work is done by `tracekit_trace2::receiver`; this is its command
//! line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use tracekit_trace2::receiver::{Config, Receiver, Summary};

/// The teaching part of `--help` (the one-line summary comes from the
/// subcommand list in `trace2.rs`).
const AFTER_HELP: &str = "\
Point git's targets at the socket (EVENT, PERF and NORMAL may all share
it) and run git as usual; stop the listener with Ctrl-C or SIGTERM: it
stops accepting, lets connected git processes finish (--grace), writes
everything, removes the socket file, prints a summary and exits 0.

Output layout (OUT = --dir):
  OUT/event/<SID>       EVENT lines of one git process; <SID> is the
                        last component of its SID, the name git's
                        directory target uses (...-P<pid in hex>).
  OUT/perf/<T>-P<pid>   PERF lines of one process (stream connection);
  OUT/normal/<T>-P<pid> NORMAL lines of one process; T is the UTC
                        accept time (SID style), P<pid> matches the
                        P part of the same process's SID.
  OUT/perf/dgram, OUT/normal/dgram
                        PERF/NORMAL lines received as datagrams: they
                        carry no SID, so they cannot be attributed to a
                        process and are kept in arrival order.
A name that exists already gets .1, .2, ... like git does.

A socket file has one type: --socket is a stream socket, serving
af_unix:PATH and af_unix:stream:PATH; af_unix:dgram: needs a second
path given with --dgram-socket (af_unix:PATH2 reaches it too: git tries
a stream connection first and falls back to datagrams).

Lines cut short by a git process that died mid-write are written with a
newline added and counted as partial lines in the summary; nothing is
dropped silently. Exit status: 0, or 1 if the sockets could not be set
up or lines could not be written to OUT.

Examples:
  tracekit trace2 listen --socket /tmp/t2.sock --dir traces &
  GIT_TRACE2_EVENT=af_unix:stream:/tmp/t2.sock \\
  GIT_TRACE2_PERF=af_unix:/tmp/t2.sock \\
  GIT_TRACE2=af_unix:/tmp/t2.sock git status
  kill -INT %1        # or Ctrl-C in its terminal
  ls traces/event traces/perf traces/normal

  # every git of this user, via global config instead of the environment:
  git config --global trace2.eventTarget af_unix:/tmp/t2.sock

  # datagrams too (one datagram per line):
  tracekit trace2 listen --socket /tmp/t2.sock --dgram-socket /tmp/t2.dgram --dir traces
  GIT_TRACE2_EVENT=af_unix:dgram:/tmp/t2.dgram git fetch

  # machine-readable summary on stdout when stopped:
  tracekit trace2 listen --socket /tmp/t2.sock --dir traces --json
";

/// Options of `tracekit trace2 listen`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Stream socket to create (for af_unix:PATH and af_unix:stream:PATH).
    /// A stale socket file left by a killed listener is replaced.
    #[arg(long, value_name = "PATH", required_unless_present = "dgram_socket")]
    pub socket: Option<PathBuf>,
    /// Datagram socket to create (for af_unix:dgram:PATH); must differ
    /// from --socket.
    #[arg(long, value_name = "PATH")]
    pub dgram_socket: Option<PathBuf>,
    /// Directory to write one file per session into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// After Ctrl-C/SIGTERM, seconds to let connected git processes finish
    /// before their connections are closed (a second signal skips it).
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub grace: f64,
    /// Print the final summary as JSON on standard output.
    #[arg(long)]
    pub json: bool,
    /// Do not print the "listening" line and the summary on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if !(args.grace.is_finite() && args.grace >= 0.0) {
        anyhow::bail!("--grace must be a number of seconds >= 0");
    }
    let config = Config {
        stream_socket: args.socket.clone(),
        dgram_socket: args.dgram_socket.clone(),
        out_dir: Some(args.dir.clone()),
        grace: Duration::from_secs_f64(args.grace.min(86_400.0)),
    };
    raise_open_file_limit();
    let receiver = Receiver::bind(config)?;
    receiver.stop_on_signals(&[libc::SIGINT, libc::SIGTERM])?;
    if !args.quiet {
        let mut on = Vec::new();
        if let Some(p) = &args.socket {
            on.push(format!("{} (stream)", p.display()));
        }
        if let Some(p) = &args.dgram_socket {
            on.push(format!("{} (dgram)", p.display()));
        }
        eprintln!(
            "tracekit trace2 listen: listening on {}, writing to {}; stop with Ctrl-C",
            on.join(" and "),
            args.dir.display()
        );
    }
    let summary = receiver.run()?;
    if !args.quiet {
        eprintln!("tracekit trace2 listen: {}", one_line(&summary));
        for warning in summary.warnings.kept().iter().take(10) {
            eprintln!("tracekit trace2 listen: warning: {}", warning.message);
        }
        if summary.warnings.total() > 10 {
            eprintln!(
                "tracekit trace2 listen: ... and {} more warnings",
                summary.warnings.total() - 10
            );
        }
    }
    if args.json {
        let json = serde_json::json!({
            "sessions": summary.sessions,
            "connections": summary.connections,
            "datagrams": summary.datagrams,
            "lines": summary.lines,
            "bytes": summary.bytes,
            "partial_lines": summary.partial_lines,
            "lines_without_sid": summary.lines_without_sid,
            "truncated_datagrams": summary.truncated_datagrams,
            "lines_lost": summary.lines_lost,
            "warnings": summary.warnings.kept().iter().map(|w| w.message.clone()).collect::<Vec<_>>(),
            "warnings_total": summary.warnings.total(),
        });
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}")?;
    }
    Ok(if summary.lines_lost > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn one_line(s: &Summary) -> String {
    format!(
        "{} sessions, {} lines, {} bytes from {} connections and {} datagrams; \
         {} partial lines, {} lines without sid, {} truncated datagrams, {} lines lost",
        s.sessions,
        s.lines,
        s.bytes,
        s.connections,
        s.datagrams,
        s.partial_lines,
        s.lines_without_sid,
        s.truncated_datagrams,
        s.lines_lost
    )
}

/// Every connected git process holds a socket and an output file open;
/// the usual soft limit of 1024 descriptors is reached at ~500 concurrent
/// processes, so raise it to the hard limit (what a shell's `ulimit -n`
/// could do too).
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
