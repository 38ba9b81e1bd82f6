//! The traced-process role: the event-name table of this process, the
//! streams this process writes into, and `posix_trace_event`.
//!
//! A process writes into up to [`TRACE_SYS_MAX`] streams at once. It gets
//! attached to a stream in one of three ways:
//! - it created the stream for itself (`create(0, ...)`),
//! - the environment variable [`STREAM_ENV`] names a stream file (that is
//!   how `tracekit posix record` and LD_PRELOAD recorders hand a stream to
//!   the programs they start): attachment happens on the first
//!   [`eventid_open`] or [`trace_event`], or explicitly with
//!   [`attach_from_env`],
//! - a controller in another process created a stream for this pid
//!   (`/dev/shm/tracekit-posix.<pid>.*`), found by [`eventid_open`],
//! - it inherited the stream (`POSIX_TRACE_INHERITED`): a `fork` child
//!   keeps its parent's attachments; across `exec` and `posix_spawn` (where
//!   the standard keeps tracing the new image) the stream's descriptor
//!   travels open, named in [`INHERIT_ENV`] (see [`crate::exec`]).
//!
//! Event type ids returned to this process are the ids of this process's
//! own name table; each attachment keeps a translation to the stream's ids,
//! so streams created by different controllers never disagree.

use std::ffi::CStr;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering::*};
use std::sync::Mutex;

use crate::consts::*;
use crate::shm::{Region, StreamView};

/// Names the stream file(s) a traced process attaches to (several separated
/// by `:`).
pub const STREAM_ENV: &str = "TRACEKIT_POSIX_STREAM";
const STREAM_ENV_C: &CStr = c"TRACEKIT_POSIX_STREAM";
/// Names the descriptors of inherited streams a new process image writes
/// into (several separated by `:`), set by the exec and spawn wrappers of
/// the C library.
pub const INHERIT_ENV: &str = "TRACEKIT_POSIX_INHERIT";
const INHERIT_ENV_C: &CStr = c"TRACEKIT_POSIX_INHERIT";
/// Prefix of stream files in `/dev/shm`.
pub const SHM_PREFIX: &str = "tracekit-posix.";

struct Attachment {
    base: AtomicPtr<u8>,
    /// A descriptor of the stream's file, open for the life of the
    /// process (close-on-exec), or -1: what exec passes on.
    fd: AtomicI32,
    /// Local user id index -> stream id.
    translate: [AtomicU32; TRACE_USER_EVENT_MAX],
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Attachment = Attachment {
    base: AtomicPtr::new(std::ptr::null_mut()),
    fd: AtomicI32::new(-1),
    translate: [const { AtomicU32::new(0) }; TRACE_USER_EVENT_MAX],
};
static ATTACH: [Attachment; TRACE_SYS_MAX] = [EMPTY; TRACE_SYS_MAX];
/// One more than the highest attachment index in use, plus
/// [`ENV_UNCHECKED`] until [`attach_from_env`] has run: so that
/// [`trace_event_at`] decides with one load and compare whether it has
/// exactly one stream to write into (read it with [`attached`]).
static NATTACH: AtomicUsize = AtomicUsize::new(ENV_UNCHECKED);
/// The bit of [`NATTACH`] saying the environment was not checked yet.
const ENV_UNCHECKED: usize = 1 << (usize::BITS - 1);
static PID: AtomicI32 = AtomicI32::new(0);
static ENV_STATE: AtomicU32 = AtomicU32::new(0);
static ATFORK: AtomicBool = AtomicBool::new(false);

struct Local {
    names: [[u8; TRACE_EVENT_NAME_MAX]; TRACE_USER_EVENT_MAX],
    lens: [u8; TRACE_USER_EVENT_MAX],
    /// Entries used, the unnamed event (index 0) included.
    count: usize,
    /// Inode numbers of attached stream files (to attach each once).
    inodes: [u64; TRACE_SYS_MAX],
}

static LOCAL: Mutex<Local> = Mutex::new(Local {
    names: [[0; TRACE_EVENT_NAME_MAX]; TRACE_USER_EVENT_MAX],
    lens: [0; TRACE_USER_EVENT_MAX],
    count: 1,
    inodes: [0; TRACE_SYS_MAX],
});

fn local() -> std::sync::MutexGuard<'static, Local> {
    LOCAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process's pid, cached (refreshed in the child after `fork`).
#[inline(always)]
pub fn cached_pid() -> i32 {
    let p = PID.load(Relaxed);
    if p != 0 {
        return p;
    }
    install_atfork();
    // SAFETY: getpid has no preconditions.
    let p = unsafe { libc::getpid() };
    PID.store(p, Relaxed);
    p
}

fn install_atfork() {
    if !ATFORK.swap(true, AcqRel) {
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_child)) };
    }
}

extern "C" fn after_fork_child() {
    // SAFETY: getpid is async-signal-safe.
    PID.store(unsafe { libc::getpid() }, Relaxed);
    for a in &ATTACH {
        let p = a.base.load(Acquire);
        if p.is_null() {
            continue;
        }
        // SAFETY: attached mappings stay mapped for the life of the process.
        let v = unsafe { StreamView::from_ptr(p) };
        if v.header().inheritance != POSIX_TRACE_INHERITED {
            a.base.store(std::ptr::null_mut(), Release);
        }
    }
}

/// Records an event into every stream tracing this process in which
/// `event_id` is not filtered out (`posix_trace_event`). `prog` is the call
/// site reported as `posix_prog_address`.
///
/// Safe to call from `malloc`, signal handlers and forked children: no
/// allocation, no lock, no system call once the environment was checked.
#[inline]
pub fn trace_event_at(event_id: u32, data: &[u8], prog: usize) {
    // One load and compare: one stream attached, the environment checked.
    let n = NATTACH.load(Acquire);
    if n == 1 {
        // The usual case, one stream. With the event type filtered out
        // (the "disabled trace point"): a few loads and compares, no call,
        // no registers to save; the filter is not checked again.
        let a = &ATTACH[0];
        let p = a.base.load(Acquire);
        if p.is_null() {
            return;
        }
        // SAFETY: attached mappings are never unmapped while attached
        // (see `detach`).
        let v = unsafe { StreamView::from_ptr(p) };
        let id = stream_id(a, event_id);
        if !v.is_filtered(id) {
            write_unfiltered(v, id, data, prog as u64);
        }
        return;
    }
    if n != 0 {
        trace_event_each(n, event_id, data, prog);
    }
}

/// How many attachment slots are in use (some may be detached since).
#[inline(always)]
fn attached() -> usize {
    NATTACH.load(Acquire) & !ENV_UNCHECKED
}

/// The stream's id of this process's event type `event_id` in attachment `a`.
#[inline(always)]
fn stream_id(a: &Attachment, event_id: u32) -> u32 {
    let user = event_id.wrapping_sub(USER_EVENT_FIRST) as usize;
    if user < TRACE_USER_EVENT_MAX {
        a.translate[user].load(Relaxed)
    } else {
        event_id
    }
}

/// Records an event whose type passes `v`'s filter if the stream is
/// running: out of line, so that the filtered-out path of
/// [`trace_event_at`] stays small.
#[inline(never)]
fn write_unfiltered(v: StreamView, id: u32, data: &[u8], prog: u64) {
    if v.admits_unfiltered() {
        write_admitted(v, id, data, prog);
    }
}

/// [`trace_event_at`] into each of the `n` attached streams (`n` as read
/// from [`NATTACH`]: the environment is checked first if it was not).
#[inline(never)]
fn trace_event_each(mut n: usize, event_id: u32, data: &[u8], prog: usize) {
    if n & ENV_UNCHECKED != 0 {
        n = attach_from_env();
    }
    for a in &ATTACH[..n] {
        let p = a.base.load(Acquire);
        if p.is_null() {
            continue;
        }
        // SAFETY: attached mappings are never unmapped while attached
        // (see `detach`).
        let v = unsafe { StreamView::from_ptr(p) };
        let id = stream_id(a, event_id);
        if !v.admits(id) {
            continue;
        }
        write_admitted(v, id, data, prog as u64);
    }
}

/// The writing half of [`trace_event_at`], once the event is admitted.
#[inline(always)]
fn write_admitted(v: StreamView, id: u32, data: &[u8], prog: u64) {
    // SAFETY: pthread_self has no preconditions.
    let thread = unsafe { libc::pthread_self() } as u64;
    v.write(id, data, cached_pid(), thread, prog);
}

/// [`trace_event_at`] without a call-site address.
#[inline]
pub fn trace_event(event_id: u32, data: &[u8]) {
    trace_event_at(event_id, data, 0)
}

/// True if an event of this type would be recorded somewhere now: lets a
/// hook skip building a payload (the cheap "disabled trace point" test).
#[inline]
pub fn is_enabled(event_id: u32) -> bool {
    let n = attached();
    ATTACH[..n].iter().any(|a| {
        let p = a.base.load(Acquire);
        if p.is_null() {
            return false;
        }
        // SAFETY: as in trace_event_at.
        let v = unsafe { StreamView::from_ptr(p) };
        let id = stream_id(a, event_id);
        v.header().running.0.load(Relaxed) == POSIX_TRACE_RUNNING as u32 && !v.is_filtered(id)
    })
}

/// Attaches to the streams named by [`STREAM_ENV`], once per process
/// image. No allocation except glibc's, once, for the `pthread_atfork`
/// registration of the first attachment: a preload shim should call it
/// from its constructor. Returns how many streams this process writes into
/// afterwards.
pub fn attach_from_env() -> usize {
    if ENV_STATE.compare_exchange(0, 1, Acquire, Relaxed).is_err() {
        return attached();
    }
    // SAFETY: getenv with a NUL-terminated name; the result is read at once.
    let val = unsafe { libc::getenv(STREAM_ENV_C.as_ptr()) };
    if !val.is_null() {
        // SAFETY: getenv returns a NUL-terminated string.
        let bytes = unsafe { CStr::from_ptr(val) }.to_bytes();
        for part in bytes.split(|&b| b == b':') {
            let mut buf = [0u8; 512];
            if part.is_empty() || part.len() >= buf.len() {
                continue;
            }
            buf[..part.len()].copy_from_slice(part);
            let Ok(path) = CStr::from_bytes_until_nul(&buf) else {
                continue;
            };
            let _ = attach_path(path);
        }
    }
    // SAFETY: as above.
    let val = unsafe { libc::getenv(INHERIT_ENV_C.as_ptr()) };
    if !val.is_null() {
        // SAFETY: getenv returns a NUL-terminated string.
        let bytes = unsafe { CStr::from_ptr(val) }.to_bytes();
        for part in bytes.split(|&b| b == b':') {
            if let Some(fd) = std::str::from_utf8(part).ok().and_then(|p| p.parse().ok()) {
                attach_inherited_fd(fd);
            }
        }
    }
    ENV_STATE.store(2, Release);
    NATTACH.fetch_and(!ENV_UNCHECKED, AcqRel) & !ENV_UNCHECKED
}

/// Maps the stream at `path` and writes into it if it traces this process.
/// Returns the attachment index.
pub fn attach_path(path: &CStr) -> Option<usize> {
    let region = Region::open_cstr(path).ok()?;
    let v = region.view();
    let want = v.header().traced_pid.load(Acquire);
    if want != -1 && want != cached_pid() {
        return None;
    }
    // SAFETY: st is a valid out-pointer and fd is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::fstat(region.fd(), &mut st) };
    {
        let l = local();
        if l.inodes.contains(&st.st_ino) {
            return None;
        }
    }
    let idx = attach(v, region.fd())?;
    local().inodes[idx] = st.st_ino;
    // Writers use the mapping for the rest of the process's life.
    std::mem::forget(region);
    Some(idx)
}

/// Attaches to an inherited stream whose descriptor `fd` an exec or spawn
/// wrapper passed open: the stream traces this process because its
/// parent image was traced into it with `POSIX_TRACE_INHERITED`. `fd` is
/// closed (a close-on-exec duplicate is kept), so programs that do not
/// know it do not hold it.
fn attach_inherited_fd(fd: i32) {
    // SAFETY: duplicating a descriptor number from our own environment; a
    // stale number fails here or at the header check below.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return;
    }
    // SAFETY: closing the passed descriptor; the duplicate is ours.
    unsafe { libc::close(fd) };
    // SAFETY: dup is a fresh descriptor owned by nobody else.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(dup) };
    let Ok(region) = Region::open_fd(owned) else {
        return;
    };
    let v = region.view();
    let h = v.header();
    // A stream shut down while processes may still write into it counts
    // their events: attach to it so that this process's are counted too.
    let counting = crate::producer::is_closed(h.running.0.load(Acquire));
    if h.inheritance != POSIX_TRACE_INHERITED || (h.shutdown.load(Acquire) != 0 && !counting) {
        return;
    }
    // SAFETY: st is a valid out-pointer and the descriptor is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::fstat(region.fd(), &mut st) };
    if local().inodes.contains(&st.st_ino) {
        return;
    }
    let Some(idx) = attach(v, region.fd()) else {
        return;
    };
    local().inodes[idx] = st.st_ino;
    std::mem::forget(region);
}

/// Descriptors of the inherited streams a new process image keeps being
/// traced into: every attached stream with `POSIX_TRACE_INHERITED`, except
/// (for `exec`, `include_own == false`) the streams this process created,
/// which exec shuts down.
pub fn inherited_fds(include_own: bool) -> Vec<i32> {
    // SAFETY: getpid has no preconditions (not the cached pid: this may
    // run in a vfork child, which shares its parent's memory).
    let me = unsafe { libc::getpid() };
    let n = attached();
    let mut fds = Vec::new();
    for a in &ATTACH[..n] {
        let p = a.base.load(Acquire);
        let fd = a.fd.load(Acquire);
        if p.is_null() || fd < 0 {
            continue;
        }
        // SAFETY: attached mappings stay mapped.
        let v = unsafe { StreamView::from_ptr(p) };
        let h = v.header();
        if h.inheritance == POSIX_TRACE_INHERITED && (include_own || h.creator_pid != me) {
            fds.push(fd);
        }
    }
    fds
}

/// Starts writing this process's events into the stream `v` (which must
/// stay mapped for the rest of the process's life, as `fd`, a descriptor
/// of its file, must stay open; -1 if there is none). Returns the index,
/// or `None` if [`TRACE_SYS_MAX`] streams are attached already.
pub fn attach(v: StreamView, fd: i32) -> Option<usize> {
    cached_pid();
    let l = local();
    let idx = ATTACH.iter().position(|a| a.base.load(Acquire).is_null())?;
    let a = &ATTACH[idx];
    for (i, t) in a.translate.iter().enumerate() {
        t.store(USER_EVENT_FIRST + i as u32, Relaxed);
    }
    for i in 1..l.count {
        let name = &l.names[i][..l.lens[i] as usize];
        let sid = v.register(name).unwrap_or(POSIX_TRACE_UNNAMED_USEREVENT);
        a.translate[i].store(sid, Relaxed);
    }
    a.fd.store(fd, Release);
    a.base.store(v.as_ptr(), Release);
    // Keeps the ENV_UNCHECKED bit as it is.
    let _ = NATTACH.fetch_update(AcqRel, Acquire, |v| {
        Some((v & ENV_UNCHECKED) | (v & !ENV_UNCHECKED).max(idx + 1))
    });
    Some(idx)
}

/// Stops writing into attachment `idx`. The mapping must not be unmapped
/// afterwards (a writer may still hold the pointer); see `Region::leak`.
pub fn detach(idx: usize) {
    let _l = local();
    if let Some(a) = ATTACH.get(idx) {
        a.base.store(std::ptr::null_mut(), Release);
        a.fd.store(-1, Release);
    }
}

/// `posix_trace_eventid_open`: the id of `name` in this process, mapped
/// into every attached stream. Err(ENAMETOOLONG) for a long name; the
/// unnamed user event once the table is full.
pub fn eventid_open(name: &[u8]) -> Result<u32, i32> {
    if name.len() > TRACE_EVENT_NAME_MAX {
        return Err(libc::ENAMETOOLONG);
    }
    attach_from_env();
    discover();
    let mut l = local();
    let idx = match (1..l.count).find(|&i| &l.names[i][..l.lens[i] as usize] == name) {
        Some(i) => i,
        None if l.count < TRACE_USER_EVENT_MAX => {
            let i = l.count;
            l.names[i][..name.len()].copy_from_slice(name);
            l.lens[i] = name.len() as u8;
            l.count += 1;
            i
        }
        None => return Ok(POSIX_TRACE_UNNAMED_USEREVENT),
    };
    for a in &ATTACH {
        let p = a.base.load(Acquire);
        if p.is_null() {
            continue;
        }
        // SAFETY: attached mappings stay mapped.
        let v = unsafe { StreamView::from_ptr(p) };
        let sid = v.register(name).unwrap_or(POSIX_TRACE_UNNAMED_USEREVENT);
        a.translate[idx].store(sid, Relaxed);
    }
    Ok(USER_EVENT_FIRST + idx as u32)
}

/// Looks in `/dev/shm` for streams another process created for this pid.
fn discover() {
    let prefix = format!("{SHM_PREFIX}{}.", cached_pid());
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        if n.starts_with(&prefix) {
            if let Ok(c) = std::ffi::CString::new(format!("/dev/shm/{n}")) {
                let _ = attach_path(&c);
            }
        }
    }
}

/// Is the attachment `idx` the stream at `base`?
pub fn attachment_of(base: *mut u8) -> Option<usize> {
    ATTACH.iter().position(|a| a.base.load(Acquire) == base)
}
