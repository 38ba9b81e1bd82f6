//! Trace Log: the flusher thread of a stream with log, and flushing a
//! stream into its log (`posix_trace_flush`, shutdown, the keeper).

use super::*;

pub(super) fn flusher(a: Arc<Active>) {
    // Signals are the application's: its handlers run on its threads, not
    // on this one (which holds the log's locks while it flushes).
    // SAFETY: a full signal set on our own thread's mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    }
    let h = a.view.header();
    loop {
        let seen = h.flush_wake.load(Acquire);
        if a.closed.load(Acquire) {
            return;
        }
        let requested = a.flush_requested.swap(0, AcqRel) != 0;
        // POSIX_TRACE_FLUSH: flushed as by posix_trace_flush once half
        // full, or at once when a writer found it full (and waits).
        let auto = h.stream_policy == POSIX_TRACE_FLUSH && a.view.fill() * 2 >= h.slot_count;
        if requested || auto {
            do_flush(&a);
        } else {
            a.view.wait_flusher(seen, 5);
        }
    }
}

pub(super) fn user_types(view: &StreamView) -> Vec<(u32, Vec<u8>)> {
    view.type_ids()
        .into_iter()
        .filter(|&i| i >= USER_EVENT_FIRST)
        .filter_map(|i| view.type_name(i).map(|n| (i, n)))
        .collect()
}

/// Writes the log's open block, type table and header with the
/// consumer's positions, then hands the copied slots back to the writers:
/// a slot is reused only once its event is in the log file, so a keeper
/// that takes the log over (the controller died) reads on from exactly
/// there. Returns the write error, if any (the slots are handed back
/// anyway: a log that cannot be written must not block the writers).
pub(super) fn sync_and_commit(
    view: &StreamView,
    c: &mut Consumer,
    w: &mut LogWriter,
    status: Status,
) -> std::io::Result<()> {
    w.set_stream_position(&c.cursor.pos, c.last_ts);
    let r = w.sync(&user_types(view), status, view.header().lost.load(Relaxed));
    c.commit(view);
    r
}

/// `posix_trace_flush`'s copy: records FLUSH_START, copies the stream's
/// events into `w` oldest first, records FLUSH_STOP and copies on up to
/// it, so both stand in the log at their place in time and events traced
/// during the flush are kept (before FLUSH_STOP if older than it, in the
/// next flush otherwise). Syncs the log and hands slots back every
/// `commit_every` events, so writers of a full FLUSH stream go on during
/// a long flush. The flush events are recorded as `pid`/`thread` (by a
/// keeper, `alone`: see [`StreamView::record_system_alone`]); returns the
/// first write error.
pub(super) fn copy_stream(
    view: StreamView,
    c: &mut Consumer,
    w: &mut LogWriter,
    (pid, thread, alone): (i32, u64, bool),
    status: &dyn Fn() -> Status,
) -> Errno {
    let record = |id| {
        if alone {
            view.record_system_alone(id, &[], pid, thread)
        } else {
            view.record_system(id, &[], pid, thread)
        }
    };
    let mut first_err = 0;
    let mut note = |r: std::io::Result<()>| {
        if let Err(e) = r {
            if first_err == 0 {
                first_err = e.raw_os_error().unwrap_or(libc::EIO);
            }
        }
    };
    let commit_every = (view.header().slot_count / 2).max(64);
    let mut data = Vec::with_capacity(view.header().slot_data as usize);
    let budget = view.capacity() + 16;
    record(POSIX_TRACE_FLUSH_START);
    let mut stop_recorded = false;
    let mut copied = 0u64;
    let mut since_commit = 0u64;
    while copied < 2 * budget {
        match c.next(&view, &mut data) {
            Next::Event(info) => {
                note(w.append(&info, &data));
                copied += 1;
                since_commit += 1;
                if stop_recorded && info.event_id == POSIX_TRACE_FLUSH_STOP && info.pid == pid {
                    break;
                }
                if since_commit >= commit_every {
                    since_commit = 0;
                    note(sync_and_commit(&view, c, w, status()));
                }
            }
            Next::Busy => std::thread::sleep(Duration::from_micros(50)),
            Next::Empty if stop_recorded => break,
            Next::Empty => {
                stop_recorded = true;
                if view.is_filtered(POSIX_TRACE_FLUSH_STOP) || !record(POSIX_TRACE_FLUSH_STOP) {
                    break;
                }
            }
        }
        if copied >= budget && !stop_recorded {
            // Writers keep the stream busy: end the flush here.
            stop_recorded = true;
            if view.is_filtered(POSIX_TRACE_FLUSH_STOP) || !record(POSIX_TRACE_FLUSH_STOP) {
                break;
            }
        }
    }
    note(sync_and_commit(&view, c, w, status()));
    first_err
}

/// Flushes the stream into its log; returns the first error (0 if none).
pub(super) fn do_flush(a: &Active) -> Errno {
    a.flush_status.store(POSIX_TRACE_FLUSHING, Release);
    let mut log = lock(&a.log);
    let Some(w) = log.as_mut() else {
        a.flush_status.store(POSIX_TRACE_NOT_FLUSHING, Release);
        return 0;
    };
    let mut c = lock(&a.consumer);
    let status = || stream_status(a);
    let err = copy_stream(
        a.view,
        &mut c,
        w,
        (traced::cached_pid(), self_thread(), false),
        &status,
    );
    drop(c);
    if w.take_log_overrun() != 0 {
        a.log_overrun.store(POSIX_TRACE_OVERRUN, Release);
    }
    a.log_full.store(w.log_full(), Release);
    if err != 0 {
        let _ = a.flush_error.compare_exchange(0, err, AcqRel, Relaxed);
        // Tell the analyzer too: the next flush writes it, if the log can
        // still take it.
        a.view.record_system(
            POSIX_TRACE_ERROR,
            &err.to_ne_bytes(),
            traced::cached_pid(),
            self_thread(),
        );
    }
    if a.flush_requested.load(Acquire) == 0 {
        a.flush_status.store(POSIX_TRACE_NOT_FLUSHING, Release);
    }
    err
}

/// `posix_trace_flush`: asynchronous; poll `get_status` for completion.
pub fn flush(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    if !a.with_log {
        return Err(libc::EINVAL);
    }
    a.flush_status.store(POSIX_TRACE_FLUSHING, Release);
    a.flush_requested.fetch_add(1, AcqRel);
    a.view.wake_flusher();
    Ok(())
}
