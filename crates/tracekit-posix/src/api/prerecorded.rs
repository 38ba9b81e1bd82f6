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
    insert(Handle::Log(Box::new(Pre {
        reader,
        typelist_pos: 0,
    })))
}

/// `posix_trace_rewind`.
pub fn rewind(trid: TraceId) -> Result<(), Errno> {
    with_handle(trid, |h| match h {
        Handle::Log(p) => {
            p.reader.rewind();
            Ok(())
        }
        _ => Err(libc::EINVAL),
    })
}

/// `posix_trace_close`.
pub fn close(trid: TraceId) -> Result<(), Errno> {
    let idx = (trid & 0xffff_ffff) as usize;
    let mut t = lock(&TABLE);
    match idx.checked_sub(1).and_then(|i| t.get_mut(i)) {
        Some(e)
            if e.generation as u64 == trid >> 32 && matches!(e.handle, Some(Handle::Log(_))) =>
        {
            e.handle = None;
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }
}
