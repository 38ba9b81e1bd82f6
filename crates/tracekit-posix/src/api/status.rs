//! Status and attributes of a stream or a log.

use super::*;

/// The stream state as the standard names it (an automatic suspension
/// is POSIX_TRACE_SUSPENDED).
pub(crate) fn reported_running(h: &shm::StreamHeader) -> i32 {
    if h.running.0.load(Acquire) == POSIX_TRACE_RUNNING as u32 {
        POSIX_TRACE_RUNNING
    } else {
        POSIX_TRACE_SUSPENDED
    }
}

pub(super) fn stream_status(a: &Active) -> Status {
    let h = a.view.header();
    Status {
        stream_status: reported_running(h),
        stream_full_status: h.full.load(Acquire) as i32,
        stream_overrun_status: h.overrun.load(Acquire) as i32,
        stream_flush_status: a.flush_status.load(Acquire),
        stream_flush_error: a.flush_error.load(Acquire),
        log_overrun_status: POSIX_TRACE_NO_OVERRUN,
        log_full_status: POSIX_TRACE_NOT_FULL,
    }
}

/// `posix_trace_get_attr`.
pub fn get_attr(trid: TraceId) -> Result<TraceAttr, Errno> {
    with_handle(trid, |h| match h {
        Handle::Active(a) if a.is_live() => Ok(a.view.header().attr),
        Handle::Log(p) => Ok(p.reader.attr),
        _ => Err(libc::EINVAL),
    })
}

/// `posix_trace_get_status`: reads and resets the overrun and flush-error
/// members of an active stream; a log's final status is never reset.
pub fn get_status(trid: TraceId) -> Result<Status, Errno> {
    with_handle(trid, |h| match h {
        Handle::Log(p) => Ok(p.reader.meta.status),
        Handle::Active(a) if a.is_live() => {
            let h = a.view.header();
            let mut s = stream_status(a);
            s.stream_overrun_status = h.overrun.swap(0, AcqRel) as i32;
            s.stream_flush_error = a.flush_error.swap(0, AcqRel);
            if a.with_log {
                s.log_overrun_status = a.log_overrun.swap(0, AcqRel);
                s.log_full_status = a.log_full.load(Acquire);
            }
            Ok(s)
        }
        _ => Err(libc::EINVAL),
    })
}

/// Events the stream lost so far (our extension: the standard only has
/// the overrun flag); for a log, also those it lost and those written
/// after the shutdown.
pub fn lost_events(trid: TraceId) -> Result<u64, Errno> {
    with_handle(trid, |h| match h {
        Handle::Active(a) => Ok(a.view.header().lost.load(Relaxed)),
        Handle::Log(p) => {
            let m = &p.reader.meta;
            Ok(m.events_lost_stream + m.events_lost_log + m.events_after_shutdown)
        }
    })
}
