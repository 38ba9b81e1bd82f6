//! POSIX trace logs: the dialect behind `info`, `report`, `convert`,
//! `diff` and `sql`, and what `tracekit posix record/dump` do.

use crate::options::DiffOptions;
use crate::options::{ConvertOptions, InfoOptions, ReportOptions};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use tracekit_core::timeline::Sink;
use tracekit_posix::analysis::{event_name, hex, policy_name, printable, summarise};
use tracekit_posix::consts::*;
use tracekit_posix::controller;
use tracekit_posix::log::{EventInfo, LogReader, LOG_MAGIC, VERSION_MAJOR, VERSION_MINOR};
use tracekit_posix::TraceAttr;

use crate::input::Input;
use crate::out::output;
use crate::registry::{Dialect, Target, Writer};

/// `tracekit posix record`: what to record and how.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The stream's and the log's attributes (sizes, policies,
    /// inheritance); the trace's name is the program's.
    pub attr: TraceAttr,
    /// Write the events to this trace log (without: print them).
    pub log: Option<PathBuf>,
    /// Event types not recorded.
    pub filter: Vec<String>,
    /// Trace the program's descendants too, until the last one exits.
    pub inherit: bool,
    /// With `inherit`: stop at the program's own exit.
    pub stop_at_exit: bool,
    /// Print events as JSON lines (without a log).
    pub json: bool,
    /// The program and its arguments.
    pub cmd: Vec<String>,
}

/// Runs the program as the traced process, with tracekit as its
/// controller; its exit status (128 + signal) is the result.
pub fn record(a: RecordOptions) -> Result<ExitCode> {
    let mut attr = a.attr;
    if a.inherit {
        attr.set_inheritance(POSIX_TRACE_INHERITED);
    }
    let Some(program) = a.cmd.first() else {
        bail!("posix record: no program to run");
    };
    {
        let name = program;
        let base = name.rsplit('/').next().unwrap_or(name);
        attr.set_name(base.as_bytes());
    }
    let log_file = match &a.log {
        Some(p) => Some(
            tracekit_core::files::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .with_context(|| format!("{}: cannot create", p.display()))?,
        ),
        None => None,
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(&a.cmd[1..]);
    let mut out = output(None)?;
    let mut printer = Printer::new(a.json);
    let recorded = controller::record(
        &mut cmd,
        controller::Options {
            attr,
            log: log_file,
            filter: a.filter.clone(),
            inherit: a.inherit,
            stop_at_exit: a.stop_at_exit,
        },
        |info, name, data| {
            printer
                .event(&mut out, info, name, data)
                .map_err(std::io::Error::other)
        },
    )?;
    out.flush()?;
    let (status, lost) = (recorded.status, recorded.lost_in_stream);
    if let Some(p) = &a.log {
        let r = LogReader::open_path(p)?;
        eprintln!(
            "tracekit: {} events in {}{}",
            r.meta.events_logged,
            p.display(),
            if lost + r.meta.events_lost_log > 0 {
                format!(
                    ", {lost} lost in the stream, {} lost in the log",
                    r.meta.events_lost_log
                )
            } else {
                String::new()
            }
        );
    } else if lost > 0 {
        eprintln!("tracekit: {lost} events lost (stream full); try --stream-size or --log");
    }
    if a.stop_at_exit {
        eprintln!(
            "tracekit: stopped at the program's exit; events its descendants write from now on \
             are counted in the log's header (written after shutdown)"
        );
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(s)) => ExitCode::from((128 + s).clamp(0, 255) as u8),
        _ => ExitCode::from(1),
    })
}

pub fn open_log(input: &Input) -> Result<LogReader> {
    if input.is_stdin() {
        let mut bytes = Vec::new();
        input.reader()?.read_to_end(&mut bytes)?;
        return Ok(LogReader::from_bytes(bytes)?);
    }
    if input.is_dir {
        bail!("{}: a directory; name the trace log", input.display());
    }
    Ok(LogReader::open_path(&input.path)?)
}

/// `tracekit posix dump`: which log, where, how.
#[derive(Debug, Clone)]
pub struct DumpOptions {
    /// The trace log (`-`: standard input).
    pub log: PathBuf,
    /// One JSON object per event.
    pub json: bool,
    /// Where to write (`None` or `-`: standard output).
    pub output: Option<PathBuf>,
}

/// Prints events as text columns or JSON lines.
struct Printer {
    json: bool,
}

fn truncation_name(t: i32) -> &'static str {
    match t {
        POSIX_TRACE_TRUNCATED_RECORD => "record",
        POSIX_TRACE_TRUNCATED_READ => "read",
        _ => "-",
    }
}

impl Printer {
    fn new(json: bool) -> Printer {
        Printer { json }
    }

    fn event(
        &mut self,
        out: &mut dyn Write,
        e: &EventInfo,
        name: &[u8],
        data: &[u8],
    ) -> Result<()> {
        let secs = e.timestamp_ns.div_euclid(1_000_000_000);
        let nanos = e.timestamp_ns.rem_euclid(1_000_000_000);
        if self.json {
            let v = serde_json::json!({
                "timestamp_ns": e.timestamp_ns,
                "pid": e.pid,
                "thread": e.thread,
                "event": String::from_utf8_lossy(name),
                "event_id": e.event_id,
                "truncation": truncation_name(e.truncation),
                "prog_address": e.prog_address,
                "data_len": data.len(),
                "data_hex": hex(data),
                "data_text": printable(data),
            });
            serde_json::to_writer(&mut *out, &v)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{secs}.{nanos:09} {pid:>7} {thread:#014x} {name:<24} {trunc:<6} {len:>5} {hex} |{text}|",
                pid = e.pid,
                thread = e.thread,
                name = String::from_utf8_lossy(name),
                trunc = truncation_name(e.truncation),
                len = data.len(),
                hex = hex(data),
                text = printable(data),
            )?;
        }
        Ok(())
    }
}

/// `tracekit posix dump`: every event of the log at `a.log`, oldest first.
pub fn dump(a: DumpOptions) -> Result<ExitCode> {
    let input = Input::open(&a.log)?;
    let mut r = open_log(&input)?;
    let mut out = output(a.output.as_deref())?;
    if !a.json {
        writeln!(
            out,
            "# tracekit POSIX trace log v{}.{}, trace {:?}, {} events, {} lost in the stream, {} lost in the log, {} written after shutdown{}",
            VERSION_MAJOR,
            VERSION_MINOR,
            r.attr.name_str(),
            r.meta.events_logged,
            r.meta.events_lost_stream,
            r.meta.events_lost_log,
            r.meta.events_after_shutdown,
            if r.meta.flags & 1 == 0 { ", incomplete" } else { "" }
        )?;
        writeln!(out, "# seconds.nanoseconds       pid         thread event                    trunc    len payload-hex |text|")?;
    }
    let mut printer = Printer::new(a.json);
    let names: BTreeMap<u32, Vec<u8>> = r.types.iter().cloned().collect();
    let mut errors = Vec::new();
    while let Some(e) = r.next_event() {
        match e {
            Ok(e) => {
                let name = names
                    .get(&e.info.event_id)
                    .cloned()
                    .or_else(|| system_event_name(e.info.event_id).map(|s| s.as_bytes().to_vec()))
                    .unwrap_or_else(|| format!("event-{}", e.info.event_id).into_bytes());
                printer.event(&mut out, &e.info, &name, e.data)?;
            }
            Err(err) => errors.push(err.in_file(&a.log).to_string()),
        }
    }
    out.flush()?;
    crate::out::print_warnings(input.display(), &r.warnings);
    for e in &errors {
        eprintln!("tracekit: {e} (rest of that block skipped)");
    }
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The POSIX trace log dialect.
pub struct PosixLog;

impl Dialect for PosixLog {
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        let mut b = open_log(before)?;
        let mut a = open_log(after)?;
        let r = tracekit_posix::diff::diff(
            &mut b,
            &before.display(),
            &mut a,
            &after.display(),
            options.top,
        );
        Ok((r, ExitCode::SUCCESS))
    }
    fn name(&self) -> &'static str {
        "POSIX trace log"
    }

    fn sniff(&self, input: &Input) -> bool {
        input.head.starts_with(&LOG_MAGIC)
    }

    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
        posix_info(inputs, args)
    }

    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        let opts = tracekit_posix::report::Options {
            top: args.top,
            ..Default::default()
        };
        let mut reports = Vec::with_capacity(inputs.len());
        for input in inputs {
            let mut r = open_log(input)?;
            reports.push(tracekit_posix::report::build(
                &mut r,
                &input.display().to_string(),
                &opts,
            ));
        }
        Ok((reports, ExitCode::SUCCESS))
    }

    fn targets(&self) -> &'static [Target] {
        TARGETS
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        let mut r = open_log(input)?;
        let w = tracekit_posix::timeline::map_log(&mut r, &input.display().to_string(), sink)?;
        crate::out::print_warnings(input.display(), &w);
        Ok(if w.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}

fn posix_info(inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
    {
        let mut out = output(None)?;
        for input in inputs {
            let mut r = open_log(input)?;
            let s = summarise(&mut r);
            let span = s.span_s();
            let types: Vec<serde_json::Value> = s
                .by_type
                .iter()
                .map(|(id, (n, bytes))| {
                    serde_json::json!({"event": String::from_utf8_lossy(&event_name(&r, *id)), "id": id, "count": n, "payload_bytes": bytes})
                })
                .collect();
            let v = serde_json::json!({
                "file": input.display(),
                "format": "POSIX trace log",
                "version": format!("{VERSION_MAJOR}.{VERSION_MINOR}"),
                "producer": tracekit_posix::attr::cstr_field(&r.attr.genversion),
                "trace_name": r.attr.name_str(),
                "complete": r.meta.flags & 1 != 0,
                "stream_policy": policy_name(r.attr.stream_policy),
                "log_policy": policy_name(r.attr.log_policy),
                "created_ns": r.attr.create_time_sec * 1_000_000_000 + r.attr.create_time_nsec,
                "events": s.events,
                "lost_in_stream": r.meta.events_lost_stream,
                "lost_in_log": r.meta.events_lost_log,
                "lost_after_shutdown": r.meta.events_after_shutdown,
                "truncated": s.truncated,
                "corrupt_blocks": s.corrupt,
                "first_ns": s.first_ns,
                "last_ns": s.last_ns,
                "span_s": span,
                "processes": s.pids.len(),
                "threads": s.threads.len(),
                "event_types": types,
            });
            if args.json {
                let lost = r.meta.events_lost_stream + r.meta.events_lost_log;
                crate::info::Info {
                    input: input.display(),
                    dialect: "posix",
                    format: "POSIX trace log".into(),
                    version: crate::info::text(v.get("version")),
                    producer: crate::info::text(v.get("producer")),
                    events: Some(s.events),
                    processes: Some(s.pids.len() as u64),
                    threads: Some(s.threads.len() as u64),
                    duration_s: span,
                    warnings: Some(r.warnings.total()),
                    lost: Some(lost),
                    details: v,
                    ..Default::default()
                }
                .write_line(&mut out)?;
                continue;
            }
            writeln!(out, "{}", input.display())?;
            writeln!(
                out,
                "  format:      POSIX trace log {VERSION_MAJOR}.{VERSION_MINOR} ({})",
                tracekit_posix::attr::cstr_field(&r.attr.genversion)
            )?;
            writeln!(
                out,
                "  trace name:  {:?}{}",
                r.attr.name_str(),
                if r.meta.flags & 1 == 0 {
                    " (incomplete: not shut down)"
                } else {
                    ""
                }
            )?;
            writeln!(
                out,
                "  policies:    stream {}, log {}",
                policy_name(r.attr.stream_policy),
                policy_name(r.attr.log_policy)
            )?;
            writeln!(
                out,
                "  events:      {} ({} lost in the stream, {} lost in the log, {} written after shutdown, {} truncated)",
                s.events,
                r.meta.events_lost_stream,
                r.meta.events_lost_log,
                r.meta.events_after_shutdown,
                s.truncated
            )?;
            if let Some(sp) = span {
                writeln!(out, "  time span:   {sp:.6} s")?;
            }
            writeln!(
                out,
                "  processes:   {}   threads: {}",
                s.pids.len(),
                s.threads.len()
            )?;
            writeln!(out, "  event types:")?;
            for (id, (n, _)) in &s.by_type {
                writeln!(
                    out,
                    "    {:<32} {n:>12}",
                    String::from_utf8_lossy(&event_name(&r, *id))
                )?;
            }
            crate::out::print_warnings(input.display(), &r.warnings);
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The formats POSIX trace logs convert to (`convert --to`).
static TARGETS: &[Target] = &[
    Target {
        names: &["text", "dump"],
        about: "one line per event, oldest first (what `posix dump` prints)",
        write: Writer::Own(|input, args| posix_convert(input, args, false)),
    },
    Target {
        names: &["json"],
        about: "one JSON object per event",
        write: Writer::Own(|input, args| posix_convert(input, args, true)),
    },
];

fn posix_convert(input: &Input, args: &ConvertOptions, json: bool) -> Result<ExitCode> {
    let mut r = open_log(input)?;
    let mut out = output(args.output.as_deref())?;
    let mut p = Printer::new(json);
    let names: BTreeMap<u32, Vec<u8>> = r.types.iter().cloned().collect();
    while let Some(e) = r.next_event() {
        let Ok(e) = e else { continue };
        let name = names
            .get(&e.info.event_id)
            .cloned()
            .or_else(|| system_event_name(e.info.event_id).map(|s| s.as_bytes().to_vec()))
            .unwrap_or_else(|| format!("event-{}", e.info.event_id).into_bytes());
        p.event(&mut out, &e.info, &name, e.data)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use tracekit_posix::{api, traced};

    #[test]
    fn record_passes_the_exit_status_through_and_writes_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("r.trace");
        let args = RecordOptions {
            attr: TraceAttr::default(),
            log: Some(log.clone()),
            filter: vec!["some-event".into()],
            inherit: false,
            stop_at_exit: false,
            json: false,
            cmd: vec!["sh".into(), "-c".into(), "exit 3".into()],
        };
        assert_eq!(record(args).unwrap(), ExitCode::from(3));
        let mut r = LogReader::open_path(&log).unwrap();
        assert_eq!(r.attr.name_str(), "sh");
        let s = summarise(&mut r);
        assert_eq!(s.by_type.get(&POSIX_TRACE_START).map(|c| c.0), Some(1));
        assert_eq!(s.by_type.get(&POSIX_TRACE_STOP).map(|c| c.0), Some(1));
        // The filter names the type in the log's table.
        assert!(r.types.iter().any(|(_, n)| n == b"some-event"));
    }

    /// `--inherit` records until every process that inherited the stream
    /// has exited: here the shell's background job, which outlives it.
    #[test]
    fn record_inherit_waits_for_a_descendant_that_outlives_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("i.trace");
        let done = dir.path().join("done");
        let args = RecordOptions {
            attr: TraceAttr::default(),
            log: Some(log.clone()),
            filter: Vec::new(),
            inherit: true,
            stop_at_exit: false,
            json: false,
            cmd: vec![
                "sh".into(),
                "-c".into(),
                "(sleep 0.2; : > \"$1\") & exit 5".into(),
                "sh".into(),
                done.to_str().unwrap().into(),
            ],
        };
        assert_eq!(record(args).unwrap(), ExitCode::from(5));
        assert!(done.exists(), "returned before the program's child ended");
        let r = LogReader::open_path(&log).unwrap();
        assert!(r.meta.flags & 1 != 0, "log complete");
    }

    /// A log recorded through the engine reads back with names, counts and
    /// payloads in the dump, info and Chrome outputs.
    #[test]
    fn log_round_trips_through_dump_info_and_chrome() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        let f = std::fs::File::create(&path).unwrap();
        let trid = api::create(0, None, Some(f.as_raw_fd())).unwrap();
        let id = traced::eventid_open(b"cli-test").unwrap();
        api::start(trid).unwrap();
        for i in 0u32..10 {
            traced::trace_event(id, format!("payload {i}").as_bytes());
        }
        api::shutdown(trid).unwrap();

        let input = Input::open(&path).unwrap();
        assert!(PosixLog.sniff(&input));
        let mut r = open_log(&input).unwrap();
        let s = summarise(&mut r);
        assert_eq!(s.by_type.get(&id).map(|c| c.0), Some(10));
        assert_eq!(s.corrupt, 0);

        let mut text = Vec::new();
        let mut p = Printer::new(false);
        r.rewind();
        let name = event_name(&r, id);
        while let Some(e) = r.next_event() {
            let e = e.unwrap();
            p.event(&mut text, &e.info, &name, e.data).unwrap();
        }
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("cli-test"));
        assert!(text.contains("|payload 9|"));
        assert!(text.contains("7061796c6f61642039")); // hex of "payload 9"

        let out = dir.path().join("t.json");
        let args = ConvertOptions {
            input: path.clone(),
            to: "chrome".into(),
            output: Some(out.clone()),
            ..ConvertOptions::default()
        };
        let mut sink =
            tracekit_export::chrome_sink::ChromeSink::new(std::fs::File::create(&out).unwrap())
                .unwrap();
        PosixLog.timeline(&input, &args, &mut sink).unwrap();
        sink.into_inner().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        assert_eq!(evs.iter().filter(|e| e["name"] == "cli-test").count(), 10);
        assert!(evs
            .iter()
            .filter(|e| e["ph"] != "M")
            .all(|e| e["ts"].as_f64().unwrap() >= 0.0));
    }
}
