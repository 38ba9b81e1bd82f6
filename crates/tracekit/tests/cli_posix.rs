//! The `tracekit` binary on POSIX trace logs: losses are counted where a
//! user looks (`posix dump`'s header, `info`, `report`), and the events
//! come out oldest first, starting with START.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

use tracekit_posix::api;
use tracekit_posix::consts::*;
use tracekit_posix::{traced, LogReader, TraceAttr};

fn tracekit(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .output()
        .expect("run tracekit");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A log that lost events in the stream (a LOOP stream of 16 Ki slots
/// given 20,000 events before its first flush) and in the log (an
/// UNTIL_FULL log of 64 KiB).
fn lossy_log(path: &Path) {
    let f = std::fs::File::create(path).unwrap();
    let mut a = TraceAttr::default();
    assert!(a.set_stream_policy(POSIX_TRACE_LOOP));
    assert!(a.set_log_policy(POSIX_TRACE_UNTIL_FULL));
    a.stream_size = 4 << 20;
    a.log_size = 64 << 10;
    let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(b"cli-lossy").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..20_000 {
        traced::trace_event(id, &i.to_le_bytes());
    }
    api::shutdown(trid).unwrap();
}

#[test]
fn dump_info_and_report_count_what_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lossy.trace");
    lossy_log(&log);
    // As the process left behind by `posix record --inherit --stop-at-exit`
    // records events written after the shutdown.
    let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    tracekit_posix::log::set_events_after_shutdown(&f, 7).unwrap();
    let r = LogReader::open_path(&log).unwrap();
    let (stream, logged) = (r.meta.events_lost_stream, r.meta.events_lost_log);
    assert!(stream > 0 && logged > 0, "{stream} {logged}");
    assert_eq!(r.meta.events_after_shutdown, 7);
    let p = log.to_str().unwrap();

    let (ok, out, err) = tracekit(&["posix", "dump", p]);
    assert!(ok, "{err}");
    let head = out.lines().next().unwrap();
    assert!(
        head.contains(&format!(
            "{stream} lost in the stream, {logged} lost in the log, 7 written after shutdown"
        )),
        "{head}"
    );
    // Oldest first, starting with START; the log filled up: STOP last.
    let events: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(events[0].contains("posix_trace_start"), "{}", events[0]);
    assert!(events.last().unwrap().contains("posix_trace_stop"));
    let times: Vec<&str> = events
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "out of time order");

    let (ok, out, err) = tracekit(&["info", "--json", p]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["schema"], "tracekit.info/1");
    assert_eq!(v["dialect"], "posix");
    assert_eq!(v["lost"], stream + logged);
    assert_eq!(v["details"]["lost_in_stream"], stream);
    assert_eq!(v["details"]["lost_in_log"], logged);
    assert_eq!(v["details"]["lost_after_shutdown"], 7);

    let (ok, out, err) = tracekit(&["report", p]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "LOST: {stream} in the stream, {logged} in the log, 7 written after shutdown"
        )),
        "{out}"
    );
}

/// `--stop-at-exit` needs `--inherit` and `--log` (usage error otherwise);
/// with them, the program's exit status is passed through.
#[test]
fn record_stop_at_exit_needs_inherit_and_a_log() {
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(["posix", "record", "--stop-at-exit", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.trace");
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(["posix", "record", "--inherit", "--stop-at-exit", "--log"])
        .arg(&log)
        .args(["--", "sh", "-c", "exit 4"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = LogReader::open_path(&log).unwrap();
    assert!(r.meta.flags & 1 != 0, "log complete");
}
