//! `tracekit trace2 listen`: a receiver for git's af_unix trace2 targets.
//! The work is done by `tracekit_trace2::receiver`; this is its command
//! line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use tracekit_dialects::trace2_listen;
use tracekit_trace2::receiver::Config;

use crate::cmd::otlp::{parse_seconds, OtlpArgs};

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

What the lines carry (command lines, URLs, paths) stays private: the
socket, the files in OUT and the OTLP spool are created 0600 and the
directories 0700, unless --file-mode (or TRACEKIT_FILE_MODE) says
otherwise. A 0600 socket accepts only this user's git processes; one
receiver for several users needs e.g. --file-mode 666.

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

OpenTelemetry (what git-ecosystem's trace2receiver does, without a
collector build): with --otlp-endpoint every git session (a top-level
command and its child processes, joined by SID) becomes one trace, sent
over OTLP/HTTP (protobuf, gzip) once all its processes have ended (atexit,
connection closed, the parent's child_exit, or --session-timeout). Spans
and attribute names are trace2receiver's: a process span named
<exe>:<verb>#<mode> (trace2.cmd.*), child, exec, thread and region spans
(trace2.child.*, trace2.region.*), ids derived from the SIDs; plus span
events for error, signal and data. Resource: service.name, service.version
(git's), host.name and user.name (--omit-host/--omit-user). Only EVENT
lines are forwarded (PERF/NORMAL carry no SID). --dir may be given too.

  tracekit trace2 listen --socket /run/t2.sock --otlp-endpoint http://collector:4318
  git config --global trace2.eventTarget af_unix:/run/t2.sock

Nothing is lost while the collector is away: requests are retried with
backoff (--otlp-retry), then spooled to disk (--spool, bounded by
--spool-max; past it the oldest are dropped and counted) and replayed
oldest first when the collector answers, by this run or the next one.
SIGTERM sends or spools everything and exits 0; the summary counts
sessions sent, spooled, dropped and still waiting.

Filters (flags, or a JSON file with --filter; the flags add to it):
  --keep fetch --keep clone --keep push   only these sessions (by their
                                          top-level command)
  --drop git:status                       all but these
  --detail dl:summary|dl:process|dl:verbose|dl:drop   how much per process
  --redact '/home/[^/]+=/home/<user>'     replace a pattern everywhere
A pattern names a command as trace2receiver does: git:checkout#branch,
git:checkout, git, or the bare verb (checkout). URL credentials
(https://user:secret@host) are redacted unless --keep-url-credentials.
The JSON file (see tracekit_otlp::trace2::filter):
  {\"keep\": [\"fetch\", \"clone\", \"push\"], \"detail\": \"dl:process\",
   \"commands\": {\"git:gc\": \"dl:summary\"},
   \"nickname_key\": \"otel.trace2.nickname\", \"nicknames\": {\"mono\": \"dl:verbose\"},
   \"redact\": {\"url_credentials\": true,
              \"patterns\": [{\"match\": \"/home/[^/]+\", \"replace\": \"/home/<user>\"}]},
   \"resource\": {\"host\": true, \"user\": false}}
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
    #[arg(long, value_name = "DIR", required_unless_present = "otlp_endpoint")]
    pub dir: Option<PathBuf>,
    /// After Ctrl-C/SIGTERM, seconds to let connected git processes finish
    /// before their connections are closed (a second signal skips it).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "2")]
    pub grace: Duration,
    /// Print the final summary as JSON on standard output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub otlp: OtlpArgs,
    /// Filters and redaction as JSON (see below); flags add to it.
    #[arg(long, value_name = "FILE")]
    pub filter: Option<PathBuf>,
    /// Only send sessions whose top-level command matches (repeat, or
    /// separate with commas).
    #[arg(long, value_name = "CMD", value_delimiter = ',')]
    pub keep: Vec<String>,
    /// Do not send sessions whose top-level command matches.
    #[arg(long, value_name = "CMD", value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Detail of every process not matched by the filter file's rules
    /// (default dl:verbose).
    #[arg(long, value_name = "LEVEL")]
    pub detail: Option<String>,
    /// No host.name resource attribute.
    #[arg(long)]
    pub omit_host: bool,
    /// No user.name resource attribute.
    #[arg(long)]
    pub omit_user: bool,
    /// Seconds to wait after a session's last process ended before sending
    /// it (its children's connections may still be queued).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "0.3")]
    pub settle: Duration,
    /// Seconds of silence after which a process counts as ended (a crash
    /// whose connection stays open, a datagram client).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "600")]
    pub session_timeout: Duration,
    /// At exit, seconds to keep sending before the rest is spooled.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "5")]
    pub shutdown_timeout: Duration,
}

/// What the forwarder reads from the flags (the filter file is read by
/// `trace2_listen::forwarder_config`).
fn forward_options(args: &Args) -> trace2_listen::ForwardOptions {
    trace2_listen::ForwardOptions {
        filter: args.filter.clone(),
        keep: args.keep.clone(),
        drop: args.drop.clone(),
        detail: args.detail.clone(),
        redact: args.otlp.redact.clone(),
        keep_url_credentials: args.otlp.keep_url_credentials,
        omit_host: args.omit_host,
        omit_user: args.omit_user,
        settle: args.settle,
        session_timeout: args.session_timeout,
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let config = Config {
        stream_socket: args.socket.clone(),
        dgram_socket: args.dgram_socket.clone(),
        out_dir: args.dir.clone(),
        grace: args.grace.min(Duration::from_secs(86_400)),
    };
    let forwarding = match args.otlp.exporter_config()? {
        Some(export) => Some((
            export,
            trace2_listen::forwarder_config(&forward_options(&args))?,
        )),
        None => None,
    };
    trace2_listen::listen(trace2_listen::ListenOptions {
        config,
        forwarding,
        shutdown_timeout: args.shutdown_timeout,
        json: args.json,
    })
}
