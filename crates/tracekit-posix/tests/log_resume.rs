//! `LogWriter::resume`: another process (a controller's keeper) takes a
//! log over where its last sync left it, for every log-full-policy.

use tracekit_posix::consts::*;
use tracekit_posix::log::{EventInfo, LogWriter, Status, FLAG_COMPLETE};
use tracekit_posix::{LogReader, TraceAttr};

fn event(i: u32) -> EventInfo {
    EventInfo {
        event_id: USER_EVENT_FIRST,
        pid: 7,
        truncation: POSIX_TRACE_NOT_TRUNCATED,
        thread: 1,
        prog_address: 0,
        timestamp_ns: i as i64,
    }
}

/// Writes `before` events, syncs, writes `ghosts` more (that never get
/// synced: their blocks may reach the file), drops the writer (the
/// controller is gone), resumes, writes `after` more and finishes; returns
/// the payloads read back.
fn write_resume_finish(policy: i32, log_size: u64, before: u32, after: u32) -> (Vec<u32>, Status) {
    write_resume_finish_with_ghosts(policy, log_size, before, 1, after)
}

fn write_resume_finish_with_ghosts(
    policy: i32,
    log_size: u64,
    before: u32,
    ghosts: u32,
    after: u32,
) -> (Vec<u32>, Status) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.trace");
    let types = vec![(USER_EVENT_FIRST, b"resumed".to_vec())];
    let mut a = TraceAttr::default();
    assert!(a.set_log_policy(policy));
    a.log_size = log_size;
    {
        let f = std::fs::File::create(&path).unwrap();
        let mut w = LogWriter::new(f, &a, 64, 7).unwrap();
        for i in 0..before {
            w.append(&event(i), &i.to_le_bytes()).unwrap();
        }
        // The stream position the sync records (what a keeper reads on from).
        w.set_stream_position(&[before as u64, 0], before as i64);
        w.sync(&types, Status::default(), 0).unwrap();
        // Records appended after the last sync are read again from the
        // stream by whoever takes over: they must not stay in the log.
        for g in 0..ghosts {
            let v = u32::MAX - g;
            w.append(&event(v), &v.to_le_bytes()).unwrap();
        }
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut w = LogWriter::resume(f).unwrap();
    assert_eq!(w.meta.flags & FLAG_COMPLETE, 0);
    assert_eq!(w.meta.stream_positions, [before as u64, 0]);
    for i in before..before + after {
        w.append(&event(i), &i.to_le_bytes()).unwrap();
    }
    w.finish(&types, Status::default(), 0).unwrap();
    let mut r = LogReader::open_path(&path).unwrap();
    assert_eq!(r.meta.flags & FLAG_COMPLETE, FLAG_COMPLETE);
    assert_eq!(r.type_name(USER_EVENT_FIRST), Some(&b"resumed"[..]));
    let status = r.meta.status;
    let mut got = Vec::new();
    while let Some(e) = r.next_event() {
        let e = e.unwrap();
        if e.info.event_id == USER_EVENT_FIRST {
            got.push(u32::from_le_bytes(e.data.try_into().unwrap()));
        }
    }
    (got, status)
}

#[test]
fn append_log_keeps_everything_synced_and_everything_after() {
    let (got, _) = write_resume_finish(POSIX_TRACE_APPEND, 0, 1000, 1000);
    assert_eq!(got, (0..2000).collect::<Vec<_>>());
}

#[test]
fn resume_of_an_empty_log() {
    let (got, _) = write_resume_finish(POSIX_TRACE_APPEND, 0, 0, 5);
    assert_eq!(got, (0..5).collect::<Vec<_>>());
}

#[test]
fn loop_log_keeps_the_newest_events_in_order() {
    let (got, status) = write_resume_finish(POSIX_TRACE_LOOP, 16 << 10, 3000, 3000);
    assert!(!got.is_empty());
    assert_eq!(*got.last().unwrap(), 5999);
    assert!(got.windows(2).all(|w| w[1] == w[0] + 1), "gap in {got:?}");
    assert_eq!(status.log_overrun_status, POSIX_TRACE_OVERRUN);
}

#[test]
fn until_full_log_stays_stopped() {
    let (got, status) = write_resume_finish(POSIX_TRACE_UNTIL_FULL, 16 << 10, 5000, 100);
    assert!(got.windows(2).all(|w| w[1] == w[0] + 1));
    assert!(got.len() < 5000, "the log filled up before the resume");
    assert_eq!(status.log_full_status, POSIX_TRACE_FULL);
}

/// Records written after the last sync, even into blocks that reached the
/// file (the controller died mid-flush), are not part of the resumed log:
/// the stream still holds those events and the keeper copies them again.
#[test]
fn records_after_the_last_sync_are_dropped_even_from_written_blocks() {
    for policy in [POSIX_TRACE_APPEND, POSIX_TRACE_LOOP] {
        let (got, _) = write_resume_finish_with_ghosts(policy, 1 << 20, 1000, 3000, 1000);
        assert_eq!(got, (0..2000).collect::<Vec<_>>(), "policy {policy}");
    }
}
