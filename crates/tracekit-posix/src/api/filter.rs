//! Trace Event Filter: the stream's filter.

use super::*;

/// `posix_trace_set_filter`.
pub fn set_filter(trid: TraceId, set: &EventSet, how: i32) -> Result<(), Errno> {
    let a = active(trid)?;
    let old = a.view.filter();
    let new = match how {
        POSIX_TRACE_SET_EVENTSET => *set,
        POSIX_TRACE_ADD_EVENTSET => old.union(set),
        POSIX_TRACE_SUB_EVENTSET => old.minus(set),
        _ => return Err(libc::EINVAL),
    };
    let h = a.view.header();
    if h.running.0.load(Acquire) == POSIX_TRACE_RUNNING as u32 {
        let mut data = [0u8; shm::MAX_SYSTEM_DATA];
        let half = shm::MAX_SYSTEM_DATA / 2;
        data[..half].copy_from_slice(&old.to_bytes());
        data[half..].copy_from_slice(&new.to_bytes());
        a.view.record_system(
            POSIX_TRACE_FILTER,
            &data,
            traced::cached_pid(),
            self_thread(),
        );
    }
    a.view.set_filter(&new);
    Ok(())
}

/// `posix_trace_get_filter`.
pub fn get_filter(trid: TraceId) -> Result<EventSet, Errno> {
    Ok(active(trid)?.view.filter())
}
