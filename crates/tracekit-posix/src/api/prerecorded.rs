//! Pre-recorded logs: open, rewind, close.

use super::*;

/// `posix_trace_open`: a pre-recorded log on a descriptor open for reading.
pub fn open(fd: i32) -> Result<TraceId, Errno> {
    // SAFETY: duplicating a caller-provided descriptor.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(libc::EINVAL);
    }
    // SAFETY: dup is ours.
    let f = unsafe { File::from_raw_fd(dup) };
    let reader = LogReader::open_file(&f).map_err(|_| libc::EINVAL)?;
    insert(Handle::Log(Arc::new(Mutex::new(Pre {
        reader,
        typelist_pos: 0,
        scratch: Vec::new(),
    }))))
}

/// `posix_trace_rewind`.
pub fn rewind(trid: TraceId) -> Result<(), Errno> {
    match get(trid)? {
        Handle::Log(p) => {
            lock(&p).reader.rewind();
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }
}

/// `posix_trace_close`.
pub fn close(trid: TraceId) -> Result<(), Errno> {
    match get(trid)? {
        Handle::Log(_) => {
            remove(trid);
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }
}
