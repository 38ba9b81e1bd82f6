//! `tracekit trace2 listen`: a receiver for git's af_unix trace2 targets
//! (`tracekit_trace2::receiver`), writing one file per session and/or
//! forwarding sessions over OTLP (`tracekit_otlp::trace2`).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use std::path::PathBuf;
use tracekit_otlp::exporter::{Exporter, ExporterConfig};

use tracekit_otlp::trace2::filter::{Detail, FilterConfig, Pattern, Rules};
use tracekit_otlp::trace2::{host_name, ForwardStats, Forwarder, ForwarderConfig};
use tracekit_trace2::receiver::{Config, Receiver, Summary};

use crate::otlp::export_line;

/// What to listen on, where to write, where to send.
#[derive(Debug)]
pub struct ListenOptions {
    /// The sockets and the output directory.
    pub config: Config,
    /// Sessions sent over OTLP: the exporter and the forwarder (filters,
    /// redaction, resource attributes).
    pub forwarding: Option<(ExporterConfig, ForwarderConfig)>,
    /// At exit, how long to keep sending before the rest is spooled.
    pub shutdown_timeout: Duration,
    /// The final summary as JSON on standard output.
    pub json: bool,
}

/// What decides which sessions are sent and how (the flags; the filter
/// file adds to them).
#[derive(Debug, Clone, Default)]
pub struct ForwardOptions {
    /// Filters and redaction as JSON (`tracekit_otlp::trace2::filter`).
    pub filter: Option<PathBuf>,
    /// Only sessions whose top-level command matches.
    pub keep: Vec<String>,
    /// Not the sessions whose top-level command matches.
    pub drop: Vec<String>,
    /// Detail of every process no rule matches.
    pub detail: Option<String>,
    /// `REGEX=REPLACEMENT` rules, applied before the file's.
    pub redact: Vec<String>,
    /// Keep `user:pass@` in URLs.
    pub keep_url_credentials: bool,
    pub omit_host: bool,
    pub omit_user: bool,
    /// Wait after a session's last process ended before sending it.
    pub settle: Duration,
    /// Silence after which a process counts as ended.
    pub session_timeout: Duration,
}

/// The forwarder's configuration from the flags and the filter file.
pub fn forwarder_config(args: &ForwardOptions) -> Result<ForwarderConfig> {
    let (filter, mut rules) = match &args.filter {
        Some(path) => {
            let filter = FilterConfig::load(path).map_err(anyhow::Error::msg)?;
            let rules = filter
                .compile()
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            (filter, rules)
        }
        None => (FilterConfig::default(), Rules::default()),
    };
    // The flags add to the file's rules.
    rules.keep.extend(args.keep.iter().cloned());
    rules.drop.extend(args.drop.iter().cloned());
    if let Some(d) = &args.detail {
        rules.detail = Detail::parse(d).map_err(|e| anyhow::anyhow!("--detail {e}"))?;
    }
    let patterns: Vec<(String, String)> = filter
        .redact
        .patterns
        .iter()
        .map(|Pattern { pattern, replace }| (pattern.clone(), replace.clone()))
        .collect();
    let redactor = crate::otlp::redactor(
        &args.redact,
        &patterns,
        filter.redact.url_credentials && !args.keep_url_credentials,
    )?;
    Ok(ForwarderConfig {
        rules,
        redactor,
        settle: args.settle,
        session_timeout: args.session_timeout,
        host: if filter.resource.host && !args.omit_host {
            host_name()
        } else {
            None
        },
        user: filter.resource.user && !args.omit_user,
        ..ForwarderConfig::default()
    })
}

/// Listens until SIGINT or SIGTERM, then writes everything and prints a
/// summary; exit status 1 when lines were lost.
pub fn listen(a: ListenOptions) -> Result<ExitCode> {
    raise_open_file_limit();
    let receiver = Receiver::bind(a.config.clone())?;
    receiver.stop_on_signals(&[libc::SIGINT, libc::SIGTERM])?;
    if !crate::progress::quiet() {
        let mut on = Vec::new();
        if let Some(p) = &a.config.stream_socket {
            on.push(format!("{} (stream)", p.display()));
        }
        if let Some(p) = &a.config.dgram_socket {
            on.push(format!("{} (dgram)", p.display()));
        }
        let mut to = Vec::new();
        if let Some(dir) = &a.config.out_dir {
            to.push(format!("writing to {}", dir.display()));
        }
        if let Some((export, _)) = &a.forwarding {
            to.push(format!(
                "sending OTLP to {} (spool: {})",
                export.http.url,
                export
                    .spool_dir
                    .as_ref()
                    .map_or("none".to_string(), |d| d.display().to_string())
            ));
        }
        eprintln!(
            "tracekit trace2 listen: listening on {}, {}; stop with Ctrl-C",
            on.join(" and "),
            to.join(" and ")
        );
    }
    let (summary, otlp) = match a.forwarding {
        None => (receiver.run()?, None),
        Some((export, fconfig)) => {
            let exporter = Exporter::start(export)?;
            let mut forwarder = Forwarder::new(fconfig, &exporter);
            let summary = receiver.run_with(&mut forwarder);
            // Sessions still open are sent (or spooled) even if the
            // receiver failed.
            let (_, fstats) = forwarder.finish();
            let estats = exporter.finish(a.shutdown_timeout);
            (summary?, Some((fstats, estats)))
        }
    };
    if !crate::progress::quiet() {
        eprintln!("tracekit trace2 listen: {}", one_line(&summary));
        if let Some((f, e)) = &otlp {
            eprintln!("tracekit trace2 listen: OTLP: {}", forward_line(f));
            eprintln!("tracekit trace2 listen: OTLP: {}", export_line(e));
            for w in f.warnings.iter().take(5) {
                eprintln!("tracekit trace2 listen: warning: {w}");
            }
            for err in e.errors.iter().rev().take(3) {
                eprintln!("tracekit trace2 listen: OTLP error: {err}");
            }
        }
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
    if a.json {
        let mut json = serde_json::json!({
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
        if let Some((f, e)) = &otlp {
            json["otlp"] = serde_json::json!({ "forward": f, "export": e });
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{json}")?;
    }
    Ok(if summary.lines_lost > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn forward_line(f: &ForwardStats) -> String {
    format!(
        "{} sessions ({} processes, {} spans) forwarded, {} sessions filtered, \
         {} processes at dl:drop, {} without start, {} without time, {} late; {} EVENT lines unparsed, \
         {} PERF/NORMAL lines not forwarded",
        f.sessions,
        f.processes,
        f.spans,
        f.sessions_filtered,
        f.processes_filtered,
        f.processes_without_start,
        f.processes_without_time,
        f.late_processes,
        f.lines_unparsed,
        f.lines_not_event
    )
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
