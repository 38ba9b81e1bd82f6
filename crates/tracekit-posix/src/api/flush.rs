//! Trace Log: the flusher thread of a stream with log, and flushing a
//! stream into its log (`posix_trace_flush`, shutdown, the keeper).

use super::*;

pub(super) fn flusher(a: Arc<Active>) {
    let h = a.view.header();
    loop {
        let seen = h.flush_wake.load(Acquire);
        if a.closed.load(Acquire) {
            return;
        }
        let requested = a.flush_requested.swap(0, AcqRel) != 0;
        let auto = h.stream_policy == POSIX_TRACE_FLUSH
            && (h.running.0.load(Acquire) == AUTO_SUSPENDED || a.view.fill() * 2 >= h.slot_count);
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

/// Copies what the stream holds into `w`, bracketed by FLUSH_START and
/// FLUSH_STOP recorded as `pid`/`thread`; returns the first write error.
pub(super) fn copy_stream(
    view: StreamView,
    c: &mut Consumer,
    w: &mut LogWriter,
    pid: i32,
    thread: u64,
) -> Errno {
    let mut first_err = 0;
    let mut note = |r: std::io::Result<()>| {
        if let Err(e) = r {
            if first_err == 0 {
                first_err = e.raw_os_error().unwrap_or(libc::EIO);
            }
        }
    };
    let sys = |id, ts| EventInfo {
        event_id: id,
        pid,
        truncation: POSIX_TRACE_NOT_TRUNCATED,
        thread,
        prog_address: 0,
        timestamp_ns: ts,
    };
    if !view.is_filtered(POSIX_TRACE_FLUSH_START) {
        note(w.append(
            &sys(POSIX_TRACE_FLUSH_START, crate::clock::realtime_ns()),
            &[],
        ));
    }
    let mut data = Vec::with_capacity(view.header().slot_data as usize);
    let budget = view.capacity() + 16;
    let mut n = 0;
    while n < budget {
        match c.next(&view, &mut data) {
            Next::Event(info) => {
                note(w.append(&info, &data));
                n += 1;
            }
            Next::Busy => std::thread::sleep(Duration::from_micros(50)),
            Next::Empty => break,
        }
    }
    if !view.is_filtered(POSIX_TRACE_FLUSH_STOP) {
        note(w.append(
            &sys(POSIX_TRACE_FLUSH_STOP, crate::clock::realtime_ns()),
            &[],
        ));
    }
    first_err
}

/// Copies the stream into its log, bracketed by FLUSH_START/FLUSH_STOP.
pub(super) fn do_flush(a: &Active) {
    a.flush_status.store(POSIX_TRACE_FLUSHING, Release);
    let mut log = lock(&a.log);
    let Some(w) = log.as_mut() else {
        a.flush_status.store(POSIX_TRACE_NOT_FLUSHING, Release);
        return;
    };
    let mut c = lock(&a.consumer);
    let mut first_err = copy_stream(a.view, &mut c, w, traced::cached_pid(), self_thread());
    drop(c);
    let mut note = |r: std::io::Result<()>| {
        if let Err(e) = r {
            if first_err == 0 {
                first_err = e.raw_os_error().unwrap_or(libc::EIO);
            }
        }
    };
    let view = a.view;
    let sys = |id, ts| EventInfo {
        event_id: id,
        pid: traced::cached_pid(),
        truncation: POSIX_TRACE_NOT_TRUNCATED,
        thread: self_thread(),
        prog_address: 0,
        timestamp_ns: ts,
    };
    let status = stream_status(a);
    note(w.sync(&user_types(&view), status, view.header().lost.load(Relaxed)));
    if w.take_log_overrun() != 0 {
        a.log_overrun.store(POSIX_TRACE_OVERRUN, Release);
    }
    a.log_full.store(w.log_full(), Release);
    if first_err != 0 {
        let _ = a
            .flush_error
            .compare_exchange(0, first_err, AcqRel, Relaxed);
        // Tell the analyzer too, if the log can still take it.
        if !view.is_filtered(POSIX_TRACE_ERROR) {
            let _ = w.append(
                &sys(POSIX_TRACE_ERROR, crate::clock::realtime_ns()),
                &first_err.to_ne_bytes(),
            );
        }
    }
    a.flush_status.store(POSIX_TRACE_NOT_FLUSHING, Release);
}

/// `posix_trace_flush`: asynchronous; poll `get_status` for completion.
pub fn flush(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    if !a.with_log {
        return Err(libc::EINVAL);
    }
    a.flush_status.store(POSIX_TRACE_FLUSHING, Release);
    a.flush_requested.store(1, Release);
    a.view.wake_flusher();
    Ok(())
}
