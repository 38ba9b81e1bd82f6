use super::*;
use std::sync::MutexGuard;

/// Streams this process creates trace all of its threads: tests that
/// count events must not run at the same time.
fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// Threads writing at once use different lanes; the reader merges the
/// lanes back into one stream: nothing lost, each thread's events in
/// order, and (read after the writers finished) timestamps in order.
#[test]
fn concurrent_writers_are_merged_in_time_order() {
    let _s = serial();
    const THREADS: u32 = 4;
    const EACH: u32 = 3000;
    let trid = create(0, None, None).unwrap();
    let id = traced::eventid_open(b"lanes").unwrap();
    start(trid).unwrap();
    let a = active(trid).unwrap();
    let lanes: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let h = a.view.header();
                s.spawn(move || {
                    for i in 0..EACH {
                        let mut p = [0u8; 8];
                        p[..4].copy_from_slice(&t.to_le_bytes());
                        p[4..].copy_from_slice(&i.to_le_bytes());
                        traced::trace_event(id, &p);
                    }
                    // SAFETY: pthread_self has no preconditions.
                    let me = unsafe { libc::pthread_self() } as u64;
                    crate::producer::lane_for(h, me, traced::cached_pid())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut distinct = lanes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() >= 2, "all threads in one lane: {lanes:?}");
    let mut next = [0u32; THREADS as usize];
    let mut last_ts = i64::MIN;
    let mut in_order = true;
    let mut buf = [0u8; 256];
    while let Some(e) = getnext_event(trid, &mut buf, Wait::Never).unwrap() {
        if e.info.event_id != id {
            continue;
        }
        let t = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
        let i = u32::from_le_bytes(buf[4..8].try_into().unwrap());
        assert_eq!(i, next[t], "thread {t} out of order");
        next[t] += 1;
        in_order &= e.info.timestamp_ns >= last_ts;
        last_ts = e.info.timestamp_ns;
    }
    assert_eq!(next, [EACH; THREADS as usize]);
    assert_eq!(lost_events(trid).unwrap(), 0);
    if distinct.len() == THREADS as usize {
        // One writer per lane: each lane is in time order, so the merge is.
        assert!(in_order, "merged events out of time order");
    }
    shutdown(trid).unwrap();
}

/// A writer that dies between reserving a slot and completing it costs
/// that one event: the reader skips the slot after a grace period,
/// reports the loss (OVERFLOW/RESUME) and reads on.
#[test]
fn a_crashed_writer_loses_only_its_event() {
    let _s = serial();
    let trid = create(0, None, None).unwrap();
    let id = traced::eventid_open(b"crash").unwrap();
    start(trid).unwrap();
    traced::trace_event(id, b"before");
    let a = active(trid).unwrap();
    // Reserve a slot of this thread's lane and never complete it, as a
    // killed writer would.
    let h = a.view.header();
    // SAFETY: pthread_self has no preconditions.
    let thread = unsafe { libc::pthread_self() } as u64;
    let lane = crate::producer::lane_for(h, thread, traced::cached_pid());
    h.lane[lane].tail.0.fetch_add(1, AcqRel);
    traced::trace_event(id, b"after");
    let mut buf = [0u8; 256];
    let mut got = Vec::new();
    let t0 = Instant::now();
    while got.len() < 5 {
        if let Some(e) = getnext_event(trid, &mut buf, Wait::Never).unwrap() {
            got.push((e.info.event_id, buf[..e.data_len].to_vec()));
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{got:?}");
    }
    let ids: Vec<u32> = got.iter().map(|g| g.0).collect();
    assert_eq!(
        ids,
        [
            POSIX_TRACE_START,
            id,
            POSIX_TRACE_OVERFLOW,
            POSIX_TRACE_RESUME,
            id
        ]
    );
    assert_eq!(got[4].1, b"after");
    assert_eq!(lost_events(trid).unwrap(), 1);
    assert_eq!(
        get_status(trid).unwrap().stream_overrun_status,
        POSIX_TRACE_OVERRUN
    );
    shutdown(trid).unwrap();
}

/// A writer killed between reserving a slot and completing it, in a stream
/// with log: the flush skips the slot after the grace period, the log
/// holds everything else in order with OVERFLOW/RESUME where the event
/// was lost, and the loss is counted in the log's header and status.
#[test]
fn a_writer_killed_mid_event_is_a_counted_loss_in_the_log() {
    use std::os::fd::AsRawFd;
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.trace");
    let f = File::create(&path).unwrap();
    let trid = create(0, None, Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(b"midwrite").unwrap();
    start(trid).unwrap();
    traced::trace_event(id, b"before");
    let a = active(trid).unwrap();
    let h = a.view.header();
    // SAFETY: pthread_self has no preconditions.
    let thread = unsafe { libc::pthread_self() } as u64;
    let lane = crate::producer::lane_for(h, thread, traced::cached_pid());
    h.lane[lane].tail.0.fetch_add(1, AcqRel);
    traced::trace_event(id, b"after");
    shutdown(trid).unwrap();
    let mut r = LogReader::open_path(&path).unwrap();
    let mut got = Vec::new();
    while let Some(e) = r.next_event() {
        let e = e.unwrap();
        got.push((e.info.event_id, e.data.to_vec()));
    }
    let ids: Vec<u32> = got.iter().map(|g| g.0).collect();
    assert_eq!(
        ids[..5],
        [
            POSIX_TRACE_START,
            id,
            POSIX_TRACE_OVERFLOW,
            POSIX_TRACE_RESUME,
            id
        ],
        "{ids:?}"
    );
    assert_eq!(got[4].1, b"after");
    assert_eq!(r.meta.events_lost_stream, 1);
    assert_eq!(r.meta.status.stream_overrun_status, POSIX_TRACE_OVERRUN);
}

/// Threads writing while the stream is read: what the reader gets is in
/// time order (writers read the clock after reserving their slot, and the
/// reader looks again at lanes that were empty), each thread's events in
/// its order, nothing lost.
#[test]
fn reading_while_threads_write_gives_time_order() {
    let _s = serial();
    const THREADS: u32 = 4;
    const EACH: u32 = 10_000;
    // Room for every event in each lane: nothing overwritten if the
    // reader falls behind.
    let mut attr = TraceAttr::default();
    attr.stream_size = 8 << 20;
    let trid = create(0, Some(&attr), None).unwrap();
    let id = traced::eventid_open(b"concurrent-read").unwrap();
    start(trid).unwrap();
    let done = std::sync::atomic::AtomicU32::new(0);
    let (times, counts) = std::thread::scope(|s| {
        for t in 0..THREADS {
            let done = &done;
            s.spawn(move || {
                for i in 0..EACH {
                    let mut p = [0u8; 8];
                    p[..4].copy_from_slice(&t.to_le_bytes());
                    p[4..].copy_from_slice(&i.to_le_bytes());
                    traced::trace_event(id, &p);
                }
                done.fetch_add(1, AcqRel);
            });
        }
        let mut times = Vec::new();
        let mut next = [0u32; THREADS as usize];
        let mut buf = [0u8; 64];
        loop {
            let finished = done.load(Acquire) == THREADS;
            match getnext_event(trid, &mut buf, Wait::Never).unwrap() {
                Some(e) => {
                    times.push(e.info.timestamp_ns);
                    if e.info.event_id == id {
                        let t = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
                        let i = u32::from_le_bytes(buf[4..8].try_into().unwrap());
                        assert_eq!(i, next[t], "thread {t} out of order");
                        next[t] += 1;
                    }
                }
                None if finished => break,
                None => std::thread::yield_now(),
            }
        }
        (times, next)
    });
    assert_eq!(counts, [EACH; THREADS as usize]);
    let back = times.windows(2).position(|w| w[1] < w[0]);
    assert_eq!(back, None, "a timestamp goes back");
    assert_eq!(lost_events(trid).unwrap(), 0);
    shutdown(trid).unwrap();
}

/// The recorders' batch read gives what `getnext_event` would, whether the
/// payload is read in the ring (UNTIL_FULL) or copied out (LOOP): every
/// event once, each thread's in order with its payload intact, times in
/// order, at most `max` a call, mixed freely with `next_with`; an error
/// of the closure stops the batch after the event it saw.
#[test]
fn drain_with_reads_as_getnext_does() {
    use crate::fragments::StreamReader;
    let _s = serial();
    const THREADS: u32 = 3;
    const EACH: u32 = 4000;
    fn payload(t: u32, i: u32) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&t.to_le_bytes());
        p.extend_from_slice(&i.to_le_bytes());
        p.extend((0..i % 50).map(|k| (k as u8) ^ (i as u8)));
        p
    }
    for policy in [POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL] {
        let mut attr = TraceAttr::default();
        attr.stream_size = 8 << 20;
        assert!(attr.set_stream_policy(policy));
        let trid = create(0, Some(&attr), None).unwrap();
        let id = traced::eventid_open(b"drain").unwrap();
        start(trid).unwrap();
        let reader = StreamReader::new(trid);
        let done = std::sync::atomic::AtomicU32::new(0);
        let mut next = [0u32; THREADS as usize];
        let mut last_ts = i64::MIN;
        let mut check = |info: &EventInfo, data: &[u8]| {
            assert!(info.timestamp_ns >= last_ts, "a timestamp goes back");
            last_ts = info.timestamp_ns;
            if info.event_id == id {
                let t = u32::from_le_bytes(data[..4].try_into().unwrap());
                let i = u32::from_le_bytes(data[4..8].try_into().unwrap());
                assert_eq!(i, next[t as usize], "thread {t} out of order");
                assert_eq!(data, payload(t, i));
                next[t as usize] += 1;
            }
        };
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let done = &done;
                s.spawn(move || {
                    for i in 0..EACH {
                        traced::trace_event(id, &payload(t, i));
                    }
                    done.fetch_add(1, AcqRel);
                });
            }
            let mut turn = 0u32;
            loop {
                let finished = done.load(Acquire) == THREADS;
                turn += 1;
                let n = if turn.is_multiple_of(3) {
                    let got = reader.next_with(Wait::Never, |i, d| check(i, d)).unwrap();
                    usize::from(got.is_some())
                } else {
                    let n = reader
                        .drain_with(7, |i, d| {
                            check(i, d);
                            Ok::<(), ()>(())
                        })
                        .unwrap()
                        .unwrap();
                    assert!(n <= 7, "{n} events in a batch of 7");
                    n
                };
                if n == 0 && finished {
                    break;
                }
            }
        });
        assert_eq!(next, [EACH; THREADS as usize], "policy {policy}");
        assert_eq!(lost_events(trid).unwrap(), 0);

        for i in 0..3 {
            traced::trace_event(id, &payload(0, i));
        }
        let mut seen = Vec::new();
        let stopped = reader
            .drain_with(10, |info, data| {
                if info.event_id != id {
                    return Ok(());
                }
                seen.push(data[4]);
                if seen.len() == 2 {
                    Err("stop")
                } else {
                    Ok(())
                }
            })
            .unwrap();
        assert_eq!(stopped, Err("stop"));
        assert_eq!(seen, [0, 1]);
        let rest = reader
            .drain_with(10, |info, data| {
                assert_eq!((info.event_id, data), (id, &payload(0, 2)[..]));
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(rest, Ok(1));
        shutdown(trid).unwrap();
    }
}
