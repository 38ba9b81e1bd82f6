//! The keeper: the part of `posix_trace_shutdown` that must still happen
//! when the controller cannot run it.
//!
//! The standard shuts down the streams a controller created when it calls
//! one of the exec functions, exits or is terminated. Normal exit runs
//! [`super::shutdown`] from `atexit`, the C library's exec and `_exit`
//! wrappers complete the logs before those calls; a fatal signal runs no
//! code of ours. So [`super::create`] forks, for each stream with a log or
//! a `/dev/shm` name, a small *keeper* process (double fork: it is
//! nobody's child, so the application's `wait` never sees it; own session:
//! a Ctrl-C aimed at the controller does not reach it) that keeps only the
//! read end of a pipe and the log's descriptor, and shares the stream's
//! mapping. The controller holds the write end, close-on-exec, and closes
//! it in its forked children. Then:
//! - `shutdown` writes one byte and closes the pipe: the keeper exits
//!   without touching anything;
//! - end of file without that byte means the controller's image is gone
//!   (exec, crash, kill, `_exit`) and all its threads with it (the kernel
//!   closes descriptors after the other threads are gone). The keeper then
//!   does the rest of the shutdown: if the log is complete already (an
//!   exec or `_exit` the library wrapped) it only frees; otherwise it stops
//!   the stream (recording `POSIX_TRACE_STOP`), takes the log over where
//!   the controller's last sync left it ([`LogWriter::resume`]: the header
//!   holds the stream's read positions and the open block's size at that
//!   sync), copies what the stream still holds from there, between
//!   FLUSH_START and FLUSH_STOP, and marks the log complete. Then it tells
//!   writers the stream is shut down and unlinks the `/dev/shm` name if it
//!   still names this stream.
//!
//! Nothing recorded is lost that way: the controller hands slots back to
//! writers only after a sync, so what its flusher had copied but not yet
//! synced is still in the stream. Lost (and counted) is only an event a
//! writer of the dead process was in the middle of writing.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::*;
use crate::log::FLAG_COMPLETE;

/// Write ends of this process's keeper pipes, closed in forked children
/// (a child must not keep a keeper waiting after its controller is gone).
static KEEPER_FDS: [AtomicI32; TRACE_SYS_MAX] = [const { AtomicI32::new(-1) }; TRACE_SYS_MAX];
static ATFORK: AtomicBool = AtomicBool::new(false);

extern "C" fn close_keeper_fds_in_child() {
    for f in &KEEPER_FDS {
        let fd = f.swap(-1, AcqRel);
        if fd >= 0 {
            // SAFETY: close is async-signal-safe; the descriptor is ours.
            unsafe { libc::close(fd) };
        }
    }
}

/// Starts the keeper of a stream; returns the pipe's write end, or -1 if
/// no keeper could be started (the stream works, only exec or a crash of
/// the controller would leave its log incomplete or its name behind).
pub(super) fn spawn(
    view: StreamView,
    log_fd: Option<i32>,
    named: Option<&Path>,
    region_fd: i32,
) -> i32 {
    let path = named.and_then(|p| CString::new(p.as_os_str().as_bytes()).ok());
    // SAFETY: st is a valid out-pointer; region_fd is the stream's fd.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let identity = if unsafe { libc::fstat(region_fd, &mut st) } == 0 {
        Some((st.st_dev, st.st_ino))
    } else {
        None
    };
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return -1;
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    if !ATFORK.swap(true, AcqRel) {
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::pthread_atfork(None, None, Some(close_keeper_fds_in_child)) };
    }
    // SAFETY: the child only forks again and exits; the grandchild runs
    // `run`, which touches only the shared mapping, its two descriptors
    // and memory it allocates itself (glibc's malloc is fork-safe).
    let child = unsafe { libc::fork() };
    if child < 0 {
        // SAFETY: closing our own fresh descriptors.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return -1;
    }
    if child == 0 {
        // SAFETY: fork/_exit in the child, see above.
        unsafe {
            if libc::fork() != 0 {
                libc::_exit(0);
            }
        }
        run(view, read_end, log_fd, path.as_deref(), identity);
    }
    // SAFETY: the read end belongs to the keeper now.
    unsafe { libc::close(read_end) };
    let mut status = 0;
    // SAFETY: reaping our own short-lived child. ECHILD (a SIGCHLD handler
    // of the application reaped it first) is harmless.
    while unsafe { libc::waitpid(child, &mut status, 0) } < 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
    for f in &KEEPER_FDS {
        if f.compare_exchange(-1, write_end, AcqRel, Relaxed).is_ok() {
            break;
        }
    }
    write_end
}

/// `shutdown` is done: let the keeper go without doing anything.
pub(super) fn release(write_end: i32) {
    if write_end < 0 {
        return;
    }
    for f in &KEEPER_FDS {
        let _ = f.compare_exchange(write_end, -1, AcqRel, Relaxed);
    }
    let byte = 1u8;
    // SAFETY: writing one byte from a valid buffer to our pipe, then
    // closing it.
    unsafe {
        while libc::write(write_end, (&byte as *const u8).cast(), 1) < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        libc::close(write_end);
    }
}

/// Closes every descriptor but those in `keep` (sorted). Async-signal-safe.
pub(crate) fn close_all_but(keep: &[i32]) {
    let mut low = 0u32;
    for &k in keep.iter().chain(std::iter::once(&i32::MAX)) {
        let k = k as u32;
        if k > low {
            // SAFETY: close_range on descriptors this process owns.
            let r = unsafe { libc::syscall(libc::SYS_close_range, low, k - 1, 0u32) };
            if r != 0 {
                // Kernels before 5.9: close them one by one.
                for fd in low..k.min(65536) {
                    // SAFETY: as above.
                    unsafe { libc::close(fd as i32) };
                }
            }
        }
        low = k.saturating_add(1);
    }
}

fn run(
    view: StreamView,
    read_end: i32,
    log_fd: Option<i32>,
    path: Option<&CStr>,
    identity: Option<(u64, u64)>,
) -> ! {
    // SAFETY: setsid has no preconditions; failure (already a leader) is fine.
    unsafe { libc::setsid() };
    let mut keep = vec![read_end];
    keep.extend(log_fd);
    keep.sort_unstable();
    close_all_but(&keep);
    let mut byte = 0u8;
    let released = loop {
        // SAFETY: reading one byte into a valid buffer.
        let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            break true;
        }
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break false;
    };
    if !released {
        complete(view, log_fd, path, identity);
    }
    // SAFETY: leaving without running the controller's atexit handlers.
    unsafe { libc::_exit(0) }
}

/// The shutdown the controller could not do.
fn complete(
    view: StreamView,
    log_fd: Option<i32>,
    path: Option<&CStr>,
    identity: Option<(u64, u64)>,
) {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let h = view.header();
    // As `stop` does: a stream suspended because full keeps its automatic
    // STOP, which the copy below reports once drained.
    if super::lifecycle::stop_state(h) == POSIX_TRACE_RUNNING as u32 {
        view.record_system_alone(POSIX_TRACE_STOP, &0i32.to_ne_bytes(), me, 0);
    }
    if let Some(fd) = log_fd {
        // SAFETY: the log's descriptor, inherited and owned by this process.
        let file = unsafe { File::from_raw_fd(fd) };
        if let Ok(mut w) = LogWriter::resume(file) {
            if w.meta.flags & FLAG_COMPLETE == 0 {
                // Read on where the controller's last sync left the log:
                // the slots after it were never handed back to writers.
                let positions = w.meta.stream_positions.clone();
                let last_ts = if positions.is_empty() {
                    i64::MIN
                } else {
                    w.meta.last_timestamp_ns
                };
                let mut c = Consumer::resume(&view, &positions, last_ts);
                let status = || Status {
                    stream_status: super::reported_running(h),
                    stream_full_status: h.full.load(Acquire) as i32,
                    stream_overrun_status: h.overrun.load(Acquire) as i32,
                    stream_flush_status: POSIX_TRACE_NOT_FLUSHING,
                    stream_flush_error: 0,
                    log_overrun_status: POSIX_TRACE_NO_OVERRUN,
                    log_full_status: POSIX_TRACE_NOT_FULL,
                };
                let err = copy_stream(view, &mut c, &mut w, (me, 0, true), &status);
                let mut st = status();
                st.stream_flush_error = err;
                let _ = w.finish(&user_types(&view), st, h.lost.load(Relaxed));
            }
        }
    }
    h.shutdown.store(1, Release);
    if let (Some(p), Some((dev, ino))) = (path, identity) {
        // SAFETY: st is a valid out-pointer, p a NUL-terminated path.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // Unlink only our stream: a later image of the controller may have
        // created another stream under the same name since.
        if unsafe { libc::stat(p.as_ptr(), &mut st) } == 0 && (st.st_dev, st.st_ino) == (dev, ino) {
            // SAFETY: as above.
            unsafe { libc::unlink(p.as_ptr()) };
        }
    }
}
