//! Policies, status flags and system events of the engine, driven through
//! the public API in one process. Tests share the process-wide stream
//! table and attachments, so they run one at a time.

use std::os::fd::AsRawFd;
use std::sync::Mutex;

use tracekit_posix::api::{self, Wait};
use tracekit_posix::consts::*;
use tracekit_posix::{traced, EventSet, TraceAttr};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Attributes for a stream of exactly `slots` slots.
fn small(slots: u64, policy: i32) -> TraceAttr {
    let mut a = TraceAttr::default();
    let (_, slot) = tracekit_posix::shm::slot_geometry(a.max_data_size);
    a.stream_size = slots * slot as u64;
    assert!(a.set_stream_policy(policy));
    a
}

/// Reads everything available: (event id, payload).
fn drain(trid: u64) -> Vec<(u32, Vec<u8>, i32)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while let Some(e) = api::getnext_event(trid, &mut buf, Wait::Never).unwrap() {
        out.push((
            e.info.event_id,
            buf[..e.data_len].to_vec(),
            e.info.truncation,
        ));
    }
    out
}

fn ids(v: &[(u32, Vec<u8>, i32)]) -> Vec<u32> {
    v.iter().map(|e| e.0).collect()
}

#[test]
fn attributes_have_the_standard_defaults() {
    let a = TraceAttr::default();
    assert_eq!(a.effective_stream_policy(false), POSIX_TRACE_LOOP);
    assert_eq!(a.effective_stream_policy(true), POSIX_TRACE_FLUSH);
    assert_eq!(a.log_policy, POSIX_TRACE_LOOP);
    assert_eq!(a.inheritance, POSIX_TRACE_CLOSE_FOR_CHILD);
    assert_eq!(a.name_str(), "");
    let mut b = a;
    b.set_name(b"a-very-long-trace-name-longer-than-thirty-one");
    assert_eq!(b.name_str().len(), TRACE_NAME_MAX);
    assert!(!b.set_stream_policy(POSIX_TRACE_APPEND));
    assert!(!b.set_log_policy(POSIX_TRACE_FLUSH));
    assert!(!b.set_inheritance(7));
}

#[test]
fn start_event_stop_are_read_in_order_with_metadata() {
    let _s = serial();
    let trid = api::create(0, None, None).unwrap();
    let id = traced::eventid_open(b"basic").unwrap();
    assert_eq!(traced::eventid_open(b"basic").unwrap(), id);
    traced::trace_event(id, b"before start");
    api::start(trid).unwrap();
    traced::trace_event_at(id, b"hello", 0x1234);
    api::stop(trid).unwrap();
    traced::trace_event(id, b"after stop");
    let mut buf = [0u8; 512];
    let e = api::getnext_event(trid, &mut buf, Wait::Never)
        .unwrap()
        .unwrap();
    assert_eq!(e.info.event_id, POSIX_TRACE_START);
    assert_eq!(e.data_len, EventSet::empty().to_bytes().len());
    let e = api::getnext_event(trid, &mut buf, Wait::Never)
        .unwrap()
        .unwrap();
    assert_eq!(e.info.event_id, id);
    assert_eq!(&buf[..e.data_len], b"hello");
    assert_eq!(e.info.pid, std::process::id() as i32);
    assert_eq!(e.info.prog_address, 0x1234);
    assert_eq!(e.info.thread, unsafe { libc::pthread_self() } as u64);
    assert_eq!(e.info.truncation, POSIX_TRACE_NOT_TRUNCATED);
    let now = tracekit_posix::clock::realtime_ns();
    assert!((now - e.info.timestamp_ns).abs() < 5_000_000_000);
    let e = api::getnext_event(trid, &mut buf, Wait::Never)
        .unwrap()
        .unwrap();
    assert_eq!(e.info.event_id, POSIX_TRACE_STOP);
    assert_eq!(&buf[..4], &0i32.to_ne_bytes());
    assert_eq!(api::getnext_event(trid, &mut buf, Wait::Never), Ok(None));
    assert_eq!(api::eventid_get_name(trid, id).unwrap(), b"basic");
    assert_eq!(
        api::eventid_get_name(trid, POSIX_TRACE_START).unwrap(),
        b"posix_trace_start"
    );
    assert_eq!(api::eventid_get_name(trid, 1279), Err(libc::EINVAL));
    api::shutdown(trid).unwrap();
    assert_eq!(api::start(trid), Err(libc::EINVAL));
    assert_eq!(api::get_status(trid), Err(libc::EINVAL));
}

#[test]
fn filter_excludes_types_and_records_filter_events() {
    let _s = serial();
    let trid = api::create(0, None, None).unwrap();
    let keep = traced::eventid_open(b"keep").unwrap();
    let drop_ = traced::eventid_open(b"drop").unwrap();
    let mut set = EventSet::empty();
    set.add(drop_);
    api::set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET).unwrap();
    api::start(trid).unwrap();
    traced::trace_event(keep, b"k");
    traced::trace_event(drop_, b"d");
    assert!(!traced::is_enabled(drop_));
    assert!(traced::is_enabled(keep));
    api::set_filter(trid, &set, POSIX_TRACE_SUB_EVENTSET).unwrap();
    traced::trace_event(drop_, b"d2");
    let mut sys = EventSet::filled(POSIX_TRACE_SYSTEM_EVENTS).unwrap();
    sys.del(POSIX_TRACE_FILTER);
    api::set_filter(trid, &sys, POSIX_TRACE_ADD_EVENTSET).unwrap();
    api::stop(trid).unwrap(); // filtered out: no STOP event
    assert_eq!(api::get_filter(trid).unwrap(), sys);
    assert_eq!(api::set_filter(trid, &sys, 99), Err(libc::EINVAL));
    let got = drain(trid);
    assert_eq!(
        ids(&got),
        vec![
            POSIX_TRACE_START,
            keep,
            POSIX_TRACE_FILTER,
            drop_,
            POSIX_TRACE_FILTER
        ]
    );
    // FILTER carries the old then the new set.
    let half = got[2].1.len() / 2;
    assert_eq!(&got[2].1[..half], &set.to_bytes()[..]);
    assert_eq!(&got[2].1[half..], &EventSet::empty().to_bytes()[..]);
    api::shutdown(trid).unwrap();
}

#[test]
fn loop_policy_keeps_the_latest_events_and_reports_overrun_once() {
    let _s = serial();
    let trid = api::create(0, Some(&small(4, POSIX_TRACE_LOOP)), None).unwrap();
    let id = traced::eventid_open(b"loop").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..10 {
        traced::trace_event(id, &i.to_le_bytes());
    }
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_RUNNING);
    assert_eq!(st.stream_full_status, POSIX_TRACE_FULL);
    assert_eq!(st.stream_overrun_status, POSIX_TRACE_OVERRUN);
    // Reset after read.
    assert_eq!(
        api::get_status(trid).unwrap().stream_overrun_status,
        POSIX_TRACE_NO_OVERRUN
    );
    let got = drain(trid);
    // START stands where it happened, before the loss (the controller's
    // system events have a ring of their own: user events never overwrite
    // them).
    assert_eq!(
        ids(&got)[..3],
        [POSIX_TRACE_START, POSIX_TRACE_OVERFLOW, POSIX_TRACE_RESUME],
        "{got:?}"
    );
    let payloads: Vec<u32> = got[3..]
        .iter()
        .map(|e| u32::from_le_bytes(e.1[..4].try_into().unwrap()))
        .collect();
    assert_eq!(payloads, vec![6, 7, 8, 9]);
    assert_eq!(api::lost_events(trid).unwrap(), 6); // 0..=5
    api::shutdown(trid).unwrap();
}

#[test]
fn until_full_stops_by_itself_and_restarts_when_drained() {
    let _s = serial();
    let trid = api::create(0, Some(&small(4, POSIX_TRACE_UNTIL_FULL)), None).unwrap();
    let id = traced::eventid_open(b"untilfull").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..10 {
        traced::trace_event(id, &i.to_le_bytes());
    }
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_SUSPENDED);
    assert_eq!(st.stream_full_status, POSIX_TRACE_FULL);
    assert_eq!(st.stream_overrun_status, POSIX_TRACE_OVERRUN);
    // start on a full stream: no effect.
    api::start(trid).unwrap();
    assert_eq!(
        api::get_status(trid).unwrap().stream_status,
        POSIX_TRACE_SUSPENDED
    );
    let got = drain(trid);
    // The 4 slots hold user events only (START is in the system lane).
    assert_eq!(
        ids(&got),
        vec![
            POSIX_TRACE_START,
            id,
            id,
            id,
            id,
            POSIX_TRACE_STOP,
            POSIX_TRACE_START
        ]
    );
    assert_eq!(
        got[5].1,
        1i32.to_ne_bytes(),
        "automatic stop carries auto != 0"
    );
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_RUNNING);
    assert_eq!(st.stream_full_status, POSIX_TRACE_NOT_FULL);
    assert_eq!(st.stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    assert_eq!(api::lost_events(trid).unwrap(), 6);
    api::shutdown(trid).unwrap();
}

#[test]
fn until_full_stopped_while_full_reports_the_automatic_stop_and_starts_once_drained() {
    let _s = serial();
    let trid = api::create(0, Some(&small(4, POSIX_TRACE_UNTIL_FULL)), None).unwrap();
    let id = traced::eventid_open(b"stopfull").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..10 {
        traced::trace_event(id, &i.to_le_bytes());
    }
    // Stopped by the controller while suspended because full.
    api::stop(trid).unwrap();
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_SUSPENDED);
    assert_eq!(st.stream_full_status, POSIX_TRACE_FULL);
    // Still full: start records nothing and changes nothing.
    api::start(trid).unwrap();
    assert_eq!(
        api::get_status(trid).unwrap().stream_status,
        POSIX_TRACE_SUSPENDED
    );
    let got = drain(trid);
    // The stream stopped itself (STOP with auto != 0) and, stopped by the
    // controller since, does not restart by itself.
    assert_eq!(
        ids(&got),
        vec![POSIX_TRACE_START, id, id, id, id, POSIX_TRACE_STOP],
        "{got:?}"
    );
    assert_eq!(got[5].1, 1i32.to_ne_bytes());
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_SUSPENDED);
    assert_eq!(st.stream_full_status, POSIX_TRACE_NOT_FULL, "drained");
    // Drained: start works again.
    api::start(trid).unwrap();
    assert_eq!(
        api::get_status(trid).unwrap().stream_status,
        POSIX_TRACE_RUNNING
    );
    traced::trace_event(id, &42u32.to_le_bytes());
    let got = drain(trid);
    assert_eq!(ids(&got), vec![POSIX_TRACE_START, id], "{got:?}");
    api::shutdown(trid).unwrap();
}

#[test]
fn a_loop_stream_that_wrapped_can_be_stopped_and_started_again() {
    let _s = serial();
    let trid = api::create(0, Some(&small(4, POSIX_TRACE_LOOP)), None).unwrap();
    let id = traced::eventid_open(b"loopagain").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..10 {
        traced::trace_event(id, &i.to_le_bytes());
    }
    api::stop(trid).unwrap();
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_SUSPENDED);
    assert_eq!(st.stream_full_status, POSIX_TRACE_FULL);
    // A full LOOP stream records by overwriting: start is not refused.
    api::start(trid).unwrap();
    assert_eq!(
        api::get_status(trid).unwrap().stream_status,
        POSIX_TRACE_RUNNING
    );
    traced::trace_event(id, &42u32.to_le_bytes());
    let got = drain(trid);
    let tail: Vec<u32> = ids(&got).into_iter().rev().take(3).collect();
    assert_eq!(
        tail,
        vec![id, POSIX_TRACE_START, POSIX_TRACE_STOP],
        "{got:?}"
    );
    assert_eq!(got.last().unwrap().1, 42u32.to_le_bytes());
    // Drained: no longer full.
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_RUNNING);
    assert_eq!(st.stream_full_status, POSIX_TRACE_NOT_FULL);
    api::shutdown(trid).unwrap();
}

/// The reader restarts a drained UNTIL_FULL stream while the controller
/// stops and starts it: the restart must never be recorded for a stream
/// the controller stopped meanwhile (START, START in a row: a START for a
/// stopped stream, then the controller's own), and the last state event
/// must match the final state. A race, so this hammers it, in rounds on
/// fresh streams (before the fixes a stream stopped while full stayed
/// stopped for good, so each round gave the race one chance). The stream
/// is small (4 slots a ring): the controller records START/STOP faster
/// than the reader takes them, so the system lane fills; a START or STOP
/// lost there would break the sequence. The controller waits for room
/// (bounded); a loss past that bound must show as OVERFLOW at its place.
#[test]
fn automatic_restart_racing_the_controller_keeps_start_and_stop_in_order() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::time::{Duration, Instant};
    let _s = serial();
    for round in 0..30 {
        let trid = api::create(0, Some(&small(4, POSIX_TRACE_UNTIL_FULL)), None).unwrap();
        let id = traced::eventid_open(b"restartrace").unwrap();
        api::start(trid).unwrap();
        let done = AtomicBool::new(false);
        let states = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                while !done.load(Relaxed) {
                    traced::trace_event(id, &[]);
                }
            });
            let reader = s.spawn(|| {
                let mut states = Vec::new();
                let mut buf = [0u8; 1024];
                while !done.load(Relaxed) {
                    while let Some(e) = api::getnext_event(trid, &mut buf, Wait::Never).unwrap() {
                        if matches!(
                            e.info.event_id,
                            POSIX_TRACE_START | POSIX_TRACE_STOP | POSIX_TRACE_OVERFLOW
                        ) {
                            states.push(e.info.event_id);
                        }
                    }
                }
                states
            });
            let until = Instant::now() + Duration::from_millis(10);
            while Instant::now() < until {
                api::stop(trid).unwrap();
                std::thread::yield_now();
                api::start(trid).unwrap();
                std::thread::yield_now();
            }
            api::stop(trid).unwrap();
            done.store(true, Relaxed);
            // No event half-written any more: the drain below sees all.
            writer.join().unwrap();
            let mut states = reader.join().unwrap();
            states.extend(drain(trid).iter().map(|e| e.0).filter(|&i| {
                matches!(
                    i,
                    POSIX_TRACE_START | POSIX_TRACE_STOP | POSIX_TRACE_OVERFLOW
                )
            }));
            states
        });
        let twice = states.windows(2).position(|w| {
            w == [POSIX_TRACE_START, POSIX_TRACE_START] || w == [POSIX_TRACE_STOP, POSIX_TRACE_STOP]
        });
        assert_eq!(twice, None, "round {round}: twice in a row: {states:?}");
        let tail = &states[states.len().saturating_sub(8)..];
        // The final STOP, or its loss shown as OVERFLOW.
        assert!(
            matches!(
                states.last(),
                Some(&POSIX_TRACE_STOP | &POSIX_TRACE_OVERFLOW)
            ),
            "round {round}: {tail:?}"
        );
        let lost = states
            .iter()
            .filter(|&&i| i == POSIX_TRACE_OVERFLOW)
            .count();
        if lost > 0 {
            eprintln!("round {round}: {lost} system-event losses shown as OVERFLOW");
        }
        assert_eq!(
            api::get_status(trid).unwrap().stream_status,
            POSIX_TRACE_SUSPENDED
        );
        api::shutdown(trid).unwrap();
    }
}

/// System events the controller records while nobody reads fill the
/// system lane (4 slots here); those that do not fit are lost, counted,
/// and shown where they were lost: OVERFLOW/RESUME right before the next
/// system event recorded (which carries the count), or after the last
/// event read if none follows. The controller does not wait for a reader
/// that never comes more than once.
#[test]
fn system_events_lost_to_a_full_system_lane_show_as_overflow_in_place() {
    let _s = serial();
    let trid = api::create(0, Some(&small(4, POSIX_TRACE_LOOP)), None).unwrap();
    let begin = std::time::Instant::now();
    api::start(trid).unwrap();
    for _ in 0..5 {
        api::stop(trid).unwrap();
        api::start(trid).unwrap();
    }
    // One bounded wait (no reader progress), not one per call.
    assert!(begin.elapsed() < std::time::Duration::from_secs(2));
    let mut buf = [0u8; 64];
    let first = api::getnext_event(trid, &mut buf, Wait::Never)
        .unwrap()
        .unwrap();
    assert_eq!(first.info.event_id, POSIX_TRACE_START);
    // Room for one again: this STOP carries the 7 losses before it.
    api::stop(trid).unwrap();
    assert_eq!(
        ids(&drain(trid)),
        [
            POSIX_TRACE_STOP,
            POSIX_TRACE_START,
            POSIX_TRACE_STOP,
            POSIX_TRACE_OVERFLOW,
            POSIX_TRACE_RESUME,
            POSIX_TRACE_STOP
        ]
    );
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_overrun_status, POSIX_TRACE_OVERRUN);
    // Lost with nothing after it: shown after the last event read.
    for _ in 0..3 {
        api::start(trid).unwrap();
        api::stop(trid).unwrap();
    }
    assert_eq!(
        ids(&drain(trid)),
        [
            POSIX_TRACE_START,
            POSIX_TRACE_STOP,
            POSIX_TRACE_START,
            POSIX_TRACE_STOP,
            POSIX_TRACE_OVERFLOW,
            POSIX_TRACE_RESUME
        ]
    );
    api::shutdown(trid).unwrap();
}

#[test]
fn a_stream_size_too_large_to_lay_out_is_enomem() {
    let _s = serial();
    for size in [u64::MAX, 1 << 63, 1 << 60, 1 << 56] {
        let mut a = TraceAttr::default();
        a.stream_size = size;
        assert_eq!(
            api::create(0, Some(&a), None),
            Err(libc::ENOMEM),
            "stream_size {size}"
        );
    }
}

#[test]
fn flush_policy_needs_a_log() {
    let _s = serial();
    let a = small(8, POSIX_TRACE_FLUSH);
    assert_eq!(api::create(0, Some(&a), None), Err(libc::EINVAL));
}

#[test]
fn truncation_at_record_and_at_read() {
    let _s = serial();
    let mut a = TraceAttr::default();
    assert!(a.set_max_data_size(8));
    let trid = api::create(0, Some(&a), None).unwrap();
    let id = traced::eventid_open(b"trunc").unwrap();
    api::start(trid).unwrap();
    traced::trace_event(id, b"0123456789abcdef");
    traced::trace_event(id, b"01234567");
    let mut buf = [0u8; 64];
    api::getnext_event(trid, &mut buf, Wait::Never).unwrap(); // START
    let e = api::getnext_event(trid, &mut buf, Wait::Never)
        .unwrap()
        .unwrap();
    assert_eq!(
        (e.data_len, e.info.truncation),
        (8, POSIX_TRACE_TRUNCATED_RECORD)
    );
    assert_eq!(&buf[..8], b"01234567");
    let mut tiny = [0u8; 3];
    let e = api::getnext_event(trid, &mut tiny, Wait::Never)
        .unwrap()
        .unwrap();
    assert_eq!(
        (e.data_len, e.info.truncation),
        (3, POSIX_TRACE_TRUNCATED_READ)
    );
    assert_eq!(&tiny, b"012");
    api::shutdown(trid).unwrap();
}

#[test]
fn timed_and_try_reads() {
    let _s = serial();
    let trid = api::create(0, None, None).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(api::getnext_event(trid, &mut buf, Wait::Never), Ok(None));
    let now = tracekit_posix::clock::realtime_ns() + 20_000_000;
    let ts = libc::timespec {
        tv_sec: now / 1_000_000_000,
        tv_nsec: now % 1_000_000_000,
    };
    assert_eq!(
        api::getnext_event(trid, &mut buf, Wait::Until(ts)),
        Err(libc::ETIMEDOUT)
    );
    let bad = libc::timespec {
        tv_sec: 0,
        tv_nsec: 2_000_000_000,
    };
    assert_eq!(
        api::getnext_event(trid, &mut buf, Wait::Until(bad)),
        Err(libc::EINVAL)
    );
    api::start(trid).unwrap();
    // An event is ready: the deadline is not even looked at.
    assert!(api::getnext_event(trid, &mut buf, Wait::Until(bad))
        .unwrap()
        .is_some());
    // A blocked reader sees events written later by another thread.
    let id = traced::eventid_open(b"late").unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        traced::trace_event(id, b"x");
    });
    let e = api::getnext_event(trid, &mut buf, Wait::Forever)
        .unwrap()
        .unwrap();
    assert_eq!(e.info.event_id, id);
    t.join().unwrap();
    api::shutdown(trid).unwrap();
}

#[test]
fn clear_drops_events_but_keeps_state_and_names() {
    let _s = serial();
    let trid = api::create(0, Some(&small(4, POSIX_TRACE_LOOP)), None).unwrap();
    let id = traced::eventid_open(b"clear").unwrap();
    api::start(trid).unwrap();
    for _ in 0..10 {
        traced::trace_event(id, b"x");
    }
    api::clear(trid).unwrap();
    let st = api::get_status(trid).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_RUNNING);
    assert_eq!(st.stream_full_status, POSIX_TRACE_NOT_FULL);
    assert_eq!(st.stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    assert!(drain(trid).is_empty());
    traced::trace_event(id, b"y");
    assert_eq!(ids(&drain(trid)), vec![id]);
    assert_eq!(api::eventid_get_name(trid, id).unwrap(), b"clear");
    api::shutdown(trid).unwrap();
}

#[test]
fn event_names_registry_rules() {
    let _s = serial();
    let long = [b'n'; TRACE_EVENT_NAME_MAX + 1];
    assert_eq!(traced::eventid_open(&long), Err(libc::ENAMETOOLONG));
    let trid = api::create(0, None, None).unwrap();
    assert_eq!(api::trid_eventid_open(trid, &long), Err(libc::ENAMETOOLONG));
    // Controller and traced process agree on ids in one process.
    let c = api::trid_eventid_open(trid, b"from-controller").unwrap();
    assert_eq!(traced::eventid_open(b"from-controller").unwrap(), c);
    // The type list has every system type and every user type, once.
    let mut seen = Vec::new();
    while let Some(id) = api::eventtypelist_getnext_id(trid).unwrap() {
        seen.push(id);
    }
    assert!(seen.contains(&POSIX_TRACE_START) && seen.contains(&c));
    assert!(seen.iter().all(|&i| api::eventid_get_name(trid, i).is_ok()));
    api::eventtypelist_rewind(trid).unwrap();
    assert_eq!(api::eventtypelist_getnext_id(trid).unwrap(), Some(seen[0]));
    api::shutdown(trid).unwrap();
}

#[test]
fn two_threads_lose_nothing_and_keep_per_thread_order() {
    let _s = serial();
    let mut a = TraceAttr::default();
    a.stream_size = 16 << 20;
    assert!(a.set_stream_policy(POSIX_TRACE_UNTIL_FULL));
    let trid = api::create(0, Some(&a), None).unwrap();
    let id = traced::eventid_open(b"mt").unwrap();
    api::start(trid).unwrap();
    const N: u32 = 10_000;
    let threads: Vec<_> = (0..2u32)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..N {
                    traced::trace_event(id, &[t.to_le_bytes(), i.to_le_bytes()].concat());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let got = drain(trid);
    let mut next = [0u32; 2];
    for (eid, d, _) in &got[1..] {
        assert_eq!(*eid, id);
        let t = u32::from_le_bytes(d[..4].try_into().unwrap()) as usize;
        let i = u32::from_le_bytes(d[4..8].try_into().unwrap());
        assert_eq!(i, next[t]);
        next[t] += 1;
    }
    assert_eq!(next, [N, N]);
    api::shutdown(trid).unwrap();
}

#[test]
fn trace_sys_max_streams() {
    let _s = serial();
    let mut v = Vec::new();
    let mut small_attr = TraceAttr::default();
    small_attr.stream_size = 4096;
    loop {
        match api::create(0, Some(&small_attr), None) {
            Ok(t) => v.push(t),
            Err(e) => {
                assert_eq!(e, libc::EAGAIN);
                break;
            }
        }
    }
    assert_eq!(v.len(), TRACE_SYS_MAX);
    for t in v {
        api::shutdown(t).unwrap();
    }
    assert_eq!(api::create(99_999_999, None, None), Err(libc::ESRCH));
}

fn log_file() -> (tempfile::NamedTempFile, std::fs::File) {
    let f = tempfile::NamedTempFile::new().unwrap();
    let h = f.reopen().unwrap();
    (f, h)
}

fn read_log(path: &std::path::Path) -> (u64, Vec<(u32, Vec<u8>, i32)>) {
    let f = std::fs::File::open(path).unwrap();
    let trid = api::open(f.as_raw_fd()).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while let Some(e) = api::getnext_event(trid, &mut buf, Wait::Forever).unwrap() {
        out.push((
            e.info.event_id,
            buf[..e.data_len].to_vec(),
            e.info.truncation,
        ));
    }
    (trid, out)
}

#[test]
fn log_round_trip_with_names_status_and_rewind() {
    let _s = serial();
    let (tmp, f) = log_file();
    let mut a = TraceAttr::default();
    a.set_name(b"roundtrip");
    let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(b"logged").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..100 {
        traced::trace_event(id, &i.to_le_bytes());
    }
    let mut buf = [0u8; 8];
    assert_eq!(
        api::getnext_event(trid, &mut buf, Wait::Never),
        Err(libc::EINVAL)
    );
    api::shutdown(trid).unwrap();
    let (lt, got) = read_log(tmp.path());
    let user: Vec<u32> = got
        .iter()
        .filter(|e| e.0 == id)
        .map(|e| u32::from_le_bytes(e.1[..4].try_into().unwrap()))
        .collect();
    assert_eq!(user, (0..100).collect::<Vec<_>>());
    // Oldest first, starting with START; shutdown's STOP, then its flush.
    let all = ids(&got);
    assert_eq!(all[0], POSIX_TRACE_START);
    assert_eq!(
        all[all.len() - 3..],
        [
            POSIX_TRACE_STOP,
            POSIX_TRACE_FLUSH_START,
            POSIX_TRACE_FLUSH_STOP
        ]
    );
    assert_eq!(api::eventid_get_name(lt, id).unwrap(), b"logged");
    assert_eq!(api::get_attr(lt).unwrap().name_str(), "roundtrip");
    let st = api::get_status(lt).unwrap();
    assert_eq!(st.stream_status, POSIX_TRACE_SUSPENDED);
    assert_eq!(st.log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    assert_eq!(
        api::getnext_event(lt, &mut buf, Wait::Never),
        Err(libc::EINVAL)
    );
    api::rewind(lt).unwrap();
    let e = api::getnext_event(lt, &mut buf, Wait::Forever)
        .unwrap()
        .unwrap();
    assert_eq!(e.info.event_id, POSIX_TRACE_START);
    assert_eq!(api::start(lt), Err(libc::EINVAL));
    api::close(lt).unwrap();
    assert_eq!(api::close(lt), Err(libc::EINVAL));
}

fn log_with_policy(log_policy: i32, log_size: u64, events: u32) -> (tempfile::NamedTempFile, u32) {
    let (tmp, f) = log_file();
    let mut a = TraceAttr::default();
    a.stream_size = 8 << 20;
    assert!(a.set_stream_policy(POSIX_TRACE_UNTIL_FULL));
    assert!(a.set_log_policy(log_policy));
    a.log_size = log_size;
    let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(format!("lp{log_policy}").as_bytes()).unwrap();
    api::start(trid).unwrap();
    for i in 0..events {
        traced::trace_event(id, &i.to_le_bytes());
    }
    api::shutdown(trid).unwrap();
    (tmp, id)
}

fn user_seq(got: &[(u32, Vec<u8>, i32)], id: u32) -> Vec<u32> {
    got.iter()
        .filter(|e| e.0 == id)
        .map(|e| u32::from_le_bytes(e.1[..4].try_into().unwrap()))
        .collect()
}

#[test]
fn log_full_policies() {
    let _s = serial();
    // APPEND: everything, log-max-size ignored.
    let (tmp, id) = log_with_policy(POSIX_TRACE_APPEND, 4096, 20_000);
    let (lt, got) = read_log(tmp.path());
    assert_eq!(user_seq(&got, id), (0..20_000).collect::<Vec<_>>());
    api::close(lt).unwrap();

    // UNTIL_FULL: a prefix, then STOP as the last event, log full.
    let (tmp, id) = log_with_policy(POSIX_TRACE_UNTIL_FULL, 64 << 10, 20_000);
    let (lt, got) = read_log(tmp.path());
    let seq = user_seq(&got, id);
    assert!(!seq.is_empty() && seq.len() < 20_000);
    assert_eq!(seq, (0..seq.len() as u32).collect::<Vec<_>>());
    assert_eq!(got.last().unwrap().0, POSIX_TRACE_STOP);
    let st = api::get_status(lt).unwrap();
    assert_eq!(st.log_full_status, POSIX_TRACE_FULL);
    assert_eq!(st.log_overrun_status, POSIX_TRACE_OVERRUN);
    assert!(api::lost_events(lt).unwrap() >= 20_000 - seq.len() as u64);
    api::close(lt).unwrap();

    // LOOP: the newest events, in order, the oldest overwritten.
    let (tmp, id) = log_with_policy(POSIX_TRACE_LOOP, 64 << 10, 20_000);
    let (lt, got) = read_log(tmp.path());
    let seq = user_seq(&got, id);
    assert!(!seq.is_empty() && seq.len() < 20_000);
    assert_eq!(*seq.last().unwrap(), 19_999);
    assert!(seq.windows(2).all(|w| w[1] == w[0] + 1), "contiguous");
    let st = api::get_status(lt).unwrap();
    assert_eq!(st.log_full_status, POSIX_TRACE_FULL);
    assert_eq!(st.log_overrun_status, POSIX_TRACE_OVERRUN);
    api::close(lt).unwrap();
}

#[test]
fn flush_policy_drains_to_the_log_and_counts_what_it_could_not() {
    let _s = serial();
    let (tmp, f) = log_file();
    let mut a = TraceAttr::default();
    let (_, slot) = tracekit_posix::shm::slot_geometry(a.max_data_size);
    a.stream_size = 64 * slot as u64;
    a.set_log_policy(POSIX_TRACE_APPEND);
    let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(b"flushpol").unwrap();
    api::start(trid).unwrap();
    const N: u32 = 5000;
    for i in 0..N {
        traced::trace_event(id, &i.to_le_bytes());
        if i % 16 == 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
    // Explicit flush: asynchronous, completion visible in the status.
    api::flush(trid).unwrap();
    while api::get_status(trid).unwrap().stream_flush_status == POSIX_TRACE_FLUSHING {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let lost = api::lost_events(trid).unwrap();
    api::shutdown(trid).unwrap();
    let (lt, got) = read_log(tmp.path());
    let seq = user_seq(&got, id);
    // Nothing silently dropped: logged + counted as lost = written.
    assert_eq!(seq.len() as u64 + lost, N as u64, "lost {lost}");
    assert!(seq.windows(2).all(|w| w[1] > w[0]));
    assert!(ids(&got).contains(&POSIX_TRACE_FLUSH_START));
    api::close(lt).unwrap();
}

#[test]
fn open_rejects_what_is_not_a_log() {
    let _s = serial();
    let (tmp, f) = log_file();
    std::fs::write(tmp.path(), b"not a log at all").unwrap();
    assert_eq!(api::open(f.as_raw_fd()), Err(libc::EINVAL));
    assert_eq!(api::open(-1), Err(libc::EINVAL));
    let ro = std::fs::File::open(tmp.path()).unwrap();
    assert_eq!(api::create(0, None, Some(ro.as_raw_fd())), Err(libc::EBADF));
    let dir = std::fs::File::open("/").unwrap();
    assert_eq!(
        api::create(0, None, Some(dir.as_raw_fd())),
        Err(libc::EBADF)
    );
}

extern "C" fn on_usr1(_: libc::c_int) {}

#[test]
fn a_signal_interrupts_a_blocked_read_with_eintr() {
    let _s = serial();
    // SAFETY: installing a no-op handler without SA_RESTART.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as *const () as usize;
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
    let trid = api::create(0, None, None).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        // SAFETY: no preconditions.
        tx.send(unsafe { libc::pthread_self() }).unwrap();
        let mut buf = [0u8; 8];
        api::getnext_event(trid, &mut buf, Wait::Forever)
    });
    let thread = rx.recv().unwrap();
    while !reader.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY: the thread is alive until is_finished.
        unsafe { libc::pthread_kill(thread, libc::SIGUSR1) };
    }
    assert_eq!(reader.join().unwrap(), Err(libc::EINTR));
    api::shutdown(trid).unwrap();
}

#[test]
fn shutdown_wakes_a_blocked_reader_with_einval() {
    let _s = serial();
    let trid = api::create(0, None, None).unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 8];
        api::getnext_event(trid, &mut buf, Wait::Forever)
    });
    std::thread::sleep(std::time::Duration::from_millis(20));
    api::shutdown(trid).unwrap();
    assert_eq!(reader.join().unwrap(), Err(libc::EINVAL));
}

/// What a writer waiting for a lane-mate (and the reader waiting for a
/// slot) goes by: a process that runs is waited for; one that is stopped,
/// a zombie or gone is not.
#[test]
fn process_runs_tells_running_from_stopped_zombie_and_gone() {
    use tracekit_posix::producer::process_runs;
    assert!(process_runs(std::process::id() as i32));
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    assert!(process_runs(pid));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let stopped = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(5));
        !process_runs(pid)
    });
    assert!(stopped, "a stopped process does not run");
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let resumed = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(5));
        process_runs(pid)
    });
    assert!(resumed);
    child.kill().unwrap();
    let zombie = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(5));
        !process_runs(pid)
    });
    assert!(zombie, "a zombie does not run");
    child.wait().unwrap();
    assert!(!process_runs(pid));
    assert!(!process_runs(0) && !process_runs(-1));
}
