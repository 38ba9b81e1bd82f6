//! Trace identifiers: the table of what each one names (an active stream
//! or a pre-recorded log) and the per-stream state of the controller.

use super::*;

pub(super) struct Active {
    pub(super) region: Option<Region>,
    pub(super) view: StreamView,
    pub(super) creator_pid: i32,
    /// Index of this process's attachment to the stream, or -1.
    pub(super) attach_idx: AtomicI32,
    pub(super) named_path: Option<PathBuf>,
    pub(super) with_log: bool,
    pub(super) consumer: Mutex<Consumer>,
    pub(super) log: Mutex<Option<LogWriter>>,
    pub(super) flush_error: AtomicI32,
    pub(super) flush_status: AtomicI32,
    pub(super) flush_requested: AtomicU32,
    pub(super) log_overrun: AtomicI32,
    pub(super) log_full: AtomicI32,
    pub(super) typelist_pos: Mutex<usize>,
    pub(super) flusher: Mutex<Option<JoinHandle<()>>>,
    pub(super) closed: AtomicBool,
    /// Write end of the pipe to this stream's keeper process, or -1.
    pub(super) keeper_fd: AtomicI32,
    /// 1 + the system lane's consumed count when the controller last gave
    /// up waiting for room there (0: never): nobody reads, so it does not
    /// wait again until a reader makes progress ([`super::lifecycle`]).
    pub(super) system_stalled_at: AtomicU64,
}

impl Active {
    pub(super) fn region_fd(&self) -> i32 {
        self.region.as_ref().map_or(-1, |r| r.fd())
    }

    /// Not shut down, and used by the process that created it (a trid is
    /// not valid in a forked child).
    pub(super) fn is_live(&self) -> bool {
        !self.closed.load(Acquire) && self.creator_pid == traced::cached_pid()
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        if let Some(r) = self.region.take() {
            if self.attach_idx.load(Acquire) >= 0 {
                // Threads of this process may still be inside a write.
                r.leak();
            }
        }
    }
}

pub(super) struct Pre {
    pub(super) reader: LogReader,
    pub(super) typelist_pos: usize,
}

pub(super) enum Handle {
    Active(Arc<Active>),
    /// A pre-recorded log, used under the table's lock (every use is
    /// short and never blocks).
    Log(Box<Pre>),
}

pub(super) struct Entry {
    pub(super) generation: u32,
    pub(super) handle: Option<Handle>,
}

pub(super) static TABLE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
pub(super) static ATEXIT: AtomicBool = AtomicBool::new(false);
pub(super) static NAME_SEQ: AtomicU32 = AtomicU32::new(0);

// The engine's locks are counted per thread (see `shm::lock`).
pub(super) use crate::shm::{holds_a_lock, lock};

pub(super) fn insert(h: Handle) -> Result<TraceId, Errno> {
    let mut t = lock(&TABLE);
    let live = t.iter().filter(|e| e.handle.is_some()).count();
    if live >= TRACE_SYS_MAX {
        return Err(libc::EAGAIN);
    }
    let idx = match t.iter().position(|e| e.handle.is_none()) {
        Some(i) => i,
        None => {
            t.push(Entry {
                generation: 0,
                handle: None,
            });
            t.len() - 1
        }
    };
    t[idx].generation = t[idx].generation.wrapping_add(1);
    t[idx].handle = Some(h);
    Ok(((t[idx].generation as u64) << 32) | (idx as u64 + 1))
}

/// Runs `f` on what `trid` names (EINVAL if nothing), under the table's
/// lock: `f` must be short and never block (clone an active stream's
/// handle to wait on it). A log is read this way, one lock per event.
pub(super) fn with_handle<R>(
    trid: TraceId,
    f: impl FnOnce(&mut Handle) -> Result<R, Errno>,
) -> Result<R, Errno> {
    let idx = (trid & 0xffff_ffff) as usize;
    let mut t = lock(&TABLE);
    let e = idx
        .checked_sub(1)
        .and_then(|i| t.get_mut(i))
        .ok_or(libc::EINVAL)?;
    if e.generation as u64 != trid >> 32 {
        return Err(libc::EINVAL);
    }
    e.handle.as_mut().map_or(Err(libc::EINVAL), f)
}

pub(super) fn remove(trid: TraceId) {
    let idx = (trid & 0xffff_ffff) as usize;
    let mut t = lock(&TABLE);
    if let Some(e) = idx.checked_sub(1).and_then(|i| t.get_mut(i)) {
        e.handle = None;
    }
}

pub(super) fn active(trid: TraceId) -> Result<Arc<Active>, Errno> {
    with_handle(trid, |h| match h {
        Handle::Active(a) if a.creator_pid == traced::cached_pid() && !a.closed.load(Acquire) => {
            Ok(a.clone())
        }
        _ => Err(libc::EINVAL),
    })
}

pub(super) fn self_thread() -> u64 {
    // SAFETY: no preconditions.
    unsafe { libc::pthread_self() as u64 }
}
