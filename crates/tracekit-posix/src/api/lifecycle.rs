//! The stream life cycle: create (with or without log), start, stop,
//! clear, shutdown (also at exit), and what a controller hands to the
//! processes it starts.

use super::*;

/// The pid of the last process that created a stream here: exec and
/// `_exit` wrappers compare the real `getpid()` with it before anything
/// else (they may run in a `fork` or `vfork` child, which must not touch
/// its parent's streams nor wait on a lock another thread held at fork).
static CONTROLLER_PID: AtomicI32 = AtomicI32::new(0);

/// Is the calling process (by its real pid) a controller with streams?
fn is_controller() -> bool {
    let c = CONTROLLER_PID.load(Acquire);
    // SAFETY: getpid has no preconditions.
    c != 0 && c == unsafe { libc::getpid() }
}

/// The active streams this process created.
fn own_streams() -> Vec<(TraceId, Arc<Active>)> {
    let t = lock(&TABLE);
    t.iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.handle {
            Some(Handle::Active(a)) if a.is_live() => {
                Some((((e.generation as u64) << 32) | (i as u64 + 1), a.clone()))
            }
            _ => None,
        })
        .collect()
}

extern "C" fn shutdown_all_at_exit() {
    shutdown_all_of_this_process();
}

/// Shuts down every stream this process created, as `exit` and `_exit`
/// require of a controller (see [`crate::exec`]).
pub fn shutdown_all_of_this_process() {
    // A signal handler that interrupted this thread inside the engine
    // (holding one of its locks) cannot shut down without deadlocking on
    // it: the keeper completes the logs then, as after a kill.
    if !is_controller() || holds_a_lock() {
        return;
    }
    for (id, _) in own_streams() {
        let _ = shutdown(id);
    }
}

/// Streams whose logs [`prepare_exec`] completed: (stream, was running).
#[derive(Default)]
pub struct ExecStreams(Vec<(Arc<Active>, bool)>);

/// Right before an exec: this controller's streams with a log are stopped
/// (STOP recorded if running), flushed, and their logs completed as
/// shutdown does, so the log holds every event recorded before the exec
/// even though no code of this image runs afterwards. The keeper sees the
/// image go and finds the log complete; it frees the stream and its name.
pub fn prepare_exec() -> ExecStreams {
    let mut done = ExecStreams::default();
    // Called from a signal handler that interrupted this thread inside the
    // engine: leave the logs to the keeper (see shutdown_all_of_this_process).
    if !is_controller() || holds_a_lock() {
        return done;
    }
    for (_, a) in own_streams() {
        if !a.with_log {
            continue;
        }
        let was_running = stop_active(&a);
        let err = do_flush(&a);
        let status = stream_status(&a);
        if let Some(w) = lock(&a.log).as_mut() {
            append_error(w, err);
            let _ = w.finish(
                &user_types(&a.view),
                status,
                a.view.header().lost.load(Relaxed),
            );
        }
        done.0.push((a, was_running));
    }
    done
}

/// The exec did not happen: the logs [`prepare_exec`] completed are
/// written on, and streams that were running run again (START recorded).
pub fn exec_failed(streams: ExecStreams) {
    for (a, was_running) in streams.0 {
        if let Some(w) = lock(&a.log).as_mut() {
            let _ = w.reopen();
        }
        if was_running {
            let _consumer = lock(&a.consumer);
            start_active(&a);
        }
    }
}

/// At the end of a log (shutdown, exec): the error of the last flush, if
/// any, as a POSIX_TRACE_ERROR event (no later flush would write it).
fn append_error(w: &mut LogWriter, err: Errno) {
    if err == 0 {
        return;
    }
    let e = EventInfo {
        event_id: POSIX_TRACE_ERROR,
        pid: traced::cached_pid(),
        truncation: POSIX_TRACE_NOT_TRUNCATED,
        thread: self_thread(),
        prog_address: 0,
        timestamp_ns: crate::clock::realtime_ns(),
    };
    let _ = w.append(&e, &err.to_ne_bytes());
}

/// `posix_trace_create` (`log == None`) and `posix_trace_create_withlog`.
/// `pid` 0 traces the calling process; another pid gets a stream in
/// `/dev/shm` that the process attaches to on its next `eventid_open`;
/// [`POSIX_TRACE_ALLPROC`] makes a stream that any process holding its name
/// writes into (see [`stream_path`]).
pub fn create(pid: i32, attr: Option<&TraceAttr>, log_fd: Option<i32>) -> Result<TraceId, Errno> {
    let mut attr = attr.copied().unwrap_or_default();
    if !attr.is_valid() {
        return Err(libc::EINVAL);
    }
    let me = traced::cached_pid();
    let self_traced = pid == 0 || pid == me;
    if !self_traced && pid != POSIX_TRACE_ALLPROC {
        // SAFETY: signal 0 only checks existence and permission.
        if unsafe { libc::kill(pid, 0) } != 0 {
            let e = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ESRCH);
            return Err(if e == libc::EPERM {
                libc::EPERM
            } else {
                libc::ESRCH
            });
        }
    }
    let policy = attr.effective_stream_policy(log_fd.is_some());
    if policy == POSIX_TRACE_FLUSH && log_fd.is_none() {
        return Err(libc::EINVAL);
    }
    attr.stream_policy = policy;
    attr.stream_policy_set = 1;
    let log_file = match log_fd {
        None => None,
        Some(fd) => Some(open_log_fd(fd)?),
    };
    let now = crate::clock::realtime_ns();
    attr.create_time_sec = now / 1_000_000_000;
    attr.create_time_nsec = now % 1_000_000_000;
    let (slot_data, slot_size) = shm::slot_geometry(attr.max_data_size);
    // A stream-min-size too large to lay out is more memory than there is.
    let slots = shm::slot_count_for(attr.stream_size, slot_size).ok_or(libc::ENOMEM)?;
    let lanes = shm::lane_count();
    let len = shm::stream_len(slots, slot_size, lanes).ok_or(libc::ENOMEM)?;
    let named_path = if self_traced {
        None
    } else {
        let who = if pid == POSIX_TRACE_ALLPROC {
            "all".to_string()
        } else {
            pid.to_string()
        };
        Some(PathBuf::from(format!(
            "/dev/shm/{}{who}.{me}.{}",
            traced::SHM_PREFIX,
            NAME_SEQ.fetch_add(1, Relaxed)
        )))
    };
    let region = match &named_path {
        None => Region::create_anon(len),
        Some(p) => Region::create_named(p, len),
    }
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ENOMEM) | Some(libc::ENOSPC) => libc::ENOMEM,
        Some(libc::EEXIST) => libc::EAGAIN,
        _ => libc::ENOMEM,
    })?;
    shm::init_stream(&region, &attr, policy, log_fd.is_some(), slots, lanes);
    let view = region.view();
    view.header()
        .traced_pid
        .store(if self_traced { me } else { pid }, Release);
    let log = match log_file {
        None => None,
        Some(f) => Some(
            LogWriter::new(f, &attr, slot_data, pid)
                .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?,
        ),
    };
    let a = Arc::new(Active {
        consumer: Mutex::new(Consumer::new(&view)),
        region: Some(region),
        view,
        creator_pid: me,
        attach_idx: AtomicI32::new(-1),
        named_path,
        with_log: log.is_some(),
        log: Mutex::new(log),
        flush_error: AtomicI32::new(0),
        flush_status: AtomicI32::new(POSIX_TRACE_NOT_FLUSHING),
        flush_requested: AtomicU32::new(0),
        log_overrun: AtomicI32::new(0),
        log_full: AtomicI32::new(POSIX_TRACE_NOT_FULL),
        typelist_pos: Mutex::new(0),
        flusher: Mutex::new(None),
        closed: AtomicBool::new(false),
        keeper_fd: AtomicI32::new(-1),
        system_stalled_at: AtomicU64::new(0),
    });
    let trid = insert(Handle::Active(a.clone()))?;
    if self_traced {
        match traced::attach(view, a.region_fd()) {
            Some(i) => a.attach_idx.store(i as i32, Release),
            None => {
                remove(trid);
                return Err(libc::EAGAIN);
            }
        }
    }
    if a.with_log {
        let worker = a.clone();
        let h = std::thread::Builder::new()
            .name("tracekit-flush".into())
            .spawn(move || flusher(worker))
            .map_err(|_| libc::ENOMEM)?;
        *lock(&a.flusher) = Some(h);
    }
    if a.with_log || a.named_path.is_some() {
        let log_fd = lock(&a.log).as_ref().map(|w| w.raw_fd());
        // Without a keeper the stream still works; only exec or a crash of
        // this process would leave the log incomplete or the file behind.
        let fd = keeper::spawn(a.view, log_fd, a.named_path.as_deref(), a.region_fd());
        a.keeper_fd.store(fd, Release);
    }
    CONTROLLER_PID.store(me, Release);
    if !ATEXIT.swap(true, AcqRel) {
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(shutdown_all_at_exit) };
    }
    Ok(trid)
}

fn open_log_fd(fd: i32) -> Result<File, Errno> {
    // SAFETY: fcntl on a caller-provided descriptor; failure means EBADF.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(libc::EBADF);
    }
    if fl & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(libc::EBADF);
    }
    // SAFETY: st is a valid out-pointer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd checked valid above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(libc::EINVAL);
    }
    // SAFETY: duplicating a valid descriptor; we own the duplicate.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(libc::EBADF);
    }
    // SAFETY: dup is a fresh descriptor owned by nobody else.
    Ok(unsafe { File::from_raw_fd(dup) })
}

/// `posix_trace_start`: records START and runs, unless the stream is
/// running already or full, where it records nothing and changes nothing
/// (as the standard says). Full means: suspended by itself because full
/// (it restarts once drained), or stopped by the controller while so and
/// not drained since (it can be started once drained). A LOOP stream is
/// never kept from running by being full: it records by overwriting.
pub fn start(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    // Serialised with the reader's automatic restart (see `stop_active`).
    let _consumer = lock_with_system_room(&a);
    let h = a.view.header();
    if h.running.0.load(Acquire) != POSIX_TRACE_SUSPENDED as u32 {
        return Ok(());
    }
    if h.stream_policy != POSIX_TRACE_LOOP && h.full.load(Acquire) != 0 {
        return Ok(());
    }
    start_active(&a);
    Ok(())
}

/// Records START, then runs. The caller holds the consumer lock.
fn start_active(a: &Active) {
    run_with_start(&a.view, traced::cached_pid(), self_thread());
}

/// Records START, then runs: the state change and its system event in one
/// step, in that order (events admitted from now on are later than the
/// START). Every start goes through here: the controller's and the
/// reader's automatic restart of a drained UNTIL_FULL stream. The caller
/// holds the consumer lock.
pub(super) fn run_with_start(view: &StreamView, pid: i32, thread: u64) {
    view.record_system(POSIX_TRACE_START, &view.filter().to_bytes(), pid, thread);
    view.header()
        .running
        .0
        .store(POSIX_TRACE_RUNNING as u32, Release);
}

/// Stops the stream's state (not recording anything): running becomes
/// stopped by the controller; suspended because full becomes
/// [`AUTO_STOPPED`] (it must not restart itself, and its STOP is the
/// automatic one the reader reports once drained). Returns the state
/// before. Every stop goes through here: the controller's and the
/// keeper's.
pub(super) fn stop_state(h: &shm::StreamHeader) -> u32 {
    let mut was = h.running.0.load(Acquire);
    loop {
        let to = match was {
            AUTO_SUSPENDED | AUTO_STOPPED => AUTO_STOPPED,
            _ => POSIX_TRACE_SUSPENDED as u32,
        };
        match h.running.0.compare_exchange(was, to, AcqRel, Acquire) {
            Ok(_) => return was,
            Err(now) => was = now,
        }
    }
}

/// How long a controller waits for a reader to make room in the system
/// lane before it records a system event (START, STOP) there anyway,
/// counting it lost (the reader then shows OVERFLOW/RESUME at its place).
const SYSTEM_ROOM_WAIT: Duration = Duration::from_millis(200);

/// The consumer lock, taken once the system lane has room for the system
/// event the caller is about to record: a START or STOP lost to a full
/// system lane would leave the log's START/STOP sequence out of step with
/// the state. The reader frees room only while it can take this lock, so
/// the wait is outside it; it ends after [`SYSTEM_ROOM_WAIT`] without
/// progress of the reader, and is not repeated until a reader progresses
/// (nobody may read the stream at all).
fn lock_with_system_room(a: &Active) -> shm::Locked<'_, Consumer> {
    let consumed = || a.view.system_consumed();
    let mut seen = consumed();
    let mut progress_at = Instant::now();
    let mut naps = 0u32;
    loop {
        let c = lock(&a.consumer);
        if a.view.system_room() || a.system_stalled_at.load(Relaxed) == seen + 1 {
            return c;
        }
        drop(c);
        let now = consumed();
        if now != seen {
            seen = now;
            progress_at = Instant::now();
        } else if progress_at.elapsed() > SYSTEM_ROOM_WAIT {
            a.system_stalled_at.store(seen + 1, Relaxed);
            return lock(&a.consumer);
        }
        naps += 1;
        if naps < 16 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// `posix_trace_stop`.
pub fn stop(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    let _ = stop_active(&a);
    Ok(())
}

/// Stops the stream; true if it was running.
fn stop_active(a: &Active) -> bool {
    stop_active_as(a, stop_state)
}

/// Stops the stream with `to_state` (which returns the state before);
/// true if it was running.
fn stop_active_as(a: &Active, to_state: fn(&shm::StreamHeader) -> u32) -> bool {
    // The reader restarts a drained full stream under this lock: holding
    // it, the restart and this stop cannot interleave, so the stream's
    // last START/STOP event always matches its state.
    let _consumer = lock_with_system_room(a);
    // Running: now stopped by the controller (STOP recorded). Suspended
    // because it was full: its STOP is the automatic one the reader
    // reports once drained.
    let was = to_state(a.view.header());
    if was == POSIX_TRACE_RUNNING as u32 {
        a.view.record_system(
            POSIX_TRACE_STOP,
            &0i32.to_ne_bytes(),
            traced::cached_pid(),
            self_thread(),
        );
    }
    was == POSIX_TRACE_RUNNING as u32
}

/// `posix_trace_clear`.
pub fn clear(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    let mut log = lock(&a.log);
    let mut c = lock(&a.consumer);
    let h = a.view.header();
    let c = &mut *c;
    a.view.discard_all(&mut c.cursor);
    c.pending.clear();
    c.busy = None;
    c.drained = None;
    h.full.store(POSIX_TRACE_NOT_FULL as u32, Relaxed);
    h.overrun.store(POSIX_TRACE_NO_OVERRUN as u32, Relaxed);
    h.suspended_ticks.store(0, Relaxed);
    // Stopped only because it was full: it is not full any more.
    let _ =
        h.running
            .0
            .compare_exchange(AUTO_SUSPENDED, POSIX_TRACE_RUNNING as u32, AcqRel, Relaxed);
    let _ =
        h.running
            .0
            .compare_exchange(AUTO_STOPPED, POSIX_TRACE_SUSPENDED as u32, AcqRel, Relaxed);
    if let Some(w) = log.as_mut() {
        w.clear()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        a.log_full.store(POSIX_TRACE_NOT_FULL, Release);
    }
    Ok(())
}

/// As [`stop_state`], for a stream shut down while processes may still
/// write into it: [`CLOSED`] (or [`CLOSED_AUTO`] if it was suspended
/// because full), so that an event written from now on is counted.
fn close_state(h: &shm::StreamHeader) -> u32 {
    let mut was = h.running.0.load(Acquire);
    loop {
        let to = match was {
            AUTO_SUSPENDED | AUTO_STOPPED | CLOSED_AUTO => CLOSED_AUTO,
            _ => CLOSED,
        };
        match h.running.0.compare_exchange(was, to, AcqRel, Acquire) {
            Ok(_) => return was,
            Err(now) => was = now,
        }
    }
}

/// `posix_trace_shutdown`: stops, flushes what remains into the log (if
/// any), completes the log and frees the stream.
pub fn shutdown(trid: TraceId) -> Result<(), Errno> {
    shutdown_as(trid, false)
}

/// [`shutdown`] for a controller whose traced processes may outlive the
/// stream (`tracekit posix record --inherit --stop-at-exit`): from the
/// STOP on, an event written into the stream is not recorded but counted
/// (the stream stays [`CLOSED`]), and the stream's `/dev/shm` name stays,
/// so that a process attaching later counts its events too. The caller's
/// [`LateWrites`] (made before) writes the count into the log's header and
/// removes the name once those processes are gone.
pub fn shutdown_with_late_writers(trid: TraceId) -> Result<(), Errno> {
    shutdown_as(trid, true)
}

fn shutdown_as(trid: TraceId, late_writers: bool) -> Result<(), Errno> {
    let a = active(trid)?;
    let _ = stop_active_as(
        &a,
        if late_writers {
            close_state
        } else {
            stop_state
        },
    );
    let mut result = Ok(());
    if a.with_log {
        a.closed.store(true, Release);
        a.view.wake_flusher();
        if let Some(t) = lock(&a.flusher).take() {
            let _ = t.join();
        }
        let err = do_flush(&a);
        let view = a.view;
        let status = stream_status(&a);
        if let Some(w) = lock(&a.log).as_mut() {
            append_error(w, err);
            if let Err(e) = w.finish(&user_types(&view), status, view.header().lost.load(Relaxed)) {
                result = Err(e.raw_os_error().unwrap_or(libc::EIO));
            }
        }
        *lock(&a.log) = None;
    }
    a.closed.store(true, Release);
    {
        // Wait out readers inside the ring before the mapping can go.
        let _c = lock(&a.consumer);
        a.view.header().shutdown.store(1, Release);
    }
    if let Ok(i) = usize::try_from(a.attach_idx.load(Acquire)) {
        traced::detach(i);
    }
    if let Some(p) = a.named_path.as_ref().filter(|_| !late_writers) {
        let _ = std::fs::remove_file(p);
    }
    keeper::release(a.keeper_fd.swap(-1, AcqRel));
    remove(trid);
    result
}

/// Counts the events written into a stream after
/// [`shutdown_with_late_writers`] and records them in its log, for a
/// process that outlives the controller (made before the shutdown, e.g.
/// right before forking that process, which keeps the stream mapped).
pub struct LateWrites {
    base: *mut u8,
    path: Option<std::ffi::CString>,
    /// Device and inode of the stream's file: the name is removed only if
    /// it still names this stream.
    identity: Option<(u64, u64)>,
}

// SAFETY: reads atomics of a shared mapping that stays mapped in the
// process using it (see `late_writes`).
unsafe impl Send for LateWrites {}
// SAFETY: as above.
unsafe impl Sync for LateWrites {}

/// A [`LateWrites`] for an active stream. It may be used after the
/// stream's shutdown only in a process that keeps the mapping: a child
/// forked before the shutdown (the controller unmaps it).
pub fn late_writes(trid: TraceId) -> Result<LateWrites, Errno> {
    use std::os::unix::ffi::OsStrExt;
    let a = active(trid)?;
    let path = a
        .named_path
        .as_ref()
        .and_then(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).ok());
    // SAFETY: st is a valid out-pointer; the fd is the stream's.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let identity =
        (unsafe { libc::fstat(a.region_fd(), &mut st) } == 0).then_some((st.st_dev, st.st_ino));
    Ok(LateWrites {
        base: a.view.as_ptr(),
        path,
        identity,
    })
}

impl LateWrites {
    /// Events written after the shutdown so far: refused by the shut-down
    /// stream ([`CLOSED`] counts them), and those of writers admitted just
    /// before that reserved their slot after the last copy into the log
    /// (the lanes' slots reserved past what the reader finished with).
    pub fn count(&self) -> u64 {
        // SAFETY: the mapping stays mapped in this process (see above).
        let view = unsafe { StreamView::from_ptr(self.base) };
        let h = view.header();
        let lanes = (h.lanes as usize).min(crate::producer::MAX_LANES);
        let reserved_since: u64 = h.lane[..lanes]
            .iter()
            .map(|l| {
                l.tail
                    .0
                    .load(Acquire)
                    .saturating_sub(l.head.0.load(Acquire))
            })
            .sum();
        h.late.load(Acquire) + reserved_since
    }

    /// Writes [`Self::count`] into the (complete) log's header, its count
    /// of events written after shutdown; returns it.
    pub fn record(&self, log: &File) -> std::io::Result<u64> {
        let n = self.count();
        crate::log::set_events_after_shutdown(log, n)?;
        Ok(n)
    }

    /// Removes the stream's `/dev/shm` name, if it still names the stream.
    pub fn remove_name(&self) {
        let (Some(p), Some((dev, ino))) = (&self.path, self.identity) else {
            return;
        };
        // SAFETY: st is a valid out-pointer, p a NUL-terminated path.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::stat(p.as_ptr(), &mut st) } == 0 && (st.st_dev, st.st_ino) == (dev, ino) {
            // SAFETY: as above.
            unsafe { libc::unlink(p.as_ptr()) };
        }
    }
}

/// The `/dev/shm` path of a stream created for another process (or for
/// [`POSIX_TRACE_ALLPROC`]): put it in [`traced::STREAM_ENV`] of the
/// processes to trace.
pub fn stream_path(trid: TraceId) -> Result<PathBuf, Errno> {
    active(trid)?.named_path.clone().ok_or(libc::EINVAL)
}

/// Lets a controller decide which pid may attach by name, e.g. from a
/// `pre_exec` hook right before `exec` (async-signal-safe: one atomic
/// store into the shared header).
#[derive(Clone, Copy)]
pub struct TracedPidSetter(*mut u8);
// SAFETY: only performs an atomic store into a shared mapping that lives
// as long as the stream.
unsafe impl Send for TracedPidSetter {}
// SAFETY: as above.
unsafe impl Sync for TracedPidSetter {}

impl TracedPidSetter {
    pub fn set(&self, pid: i32) {
        // SAFETY: the pointer is a live stream mapping (see `traced_pid_setter`).
        unsafe { StreamView::from_ptr(self.0) }
            .header()
            .traced_pid
            .store(pid, Release);
    }
}

/// A [`TracedPidSetter`] for an active stream; valid until its shutdown.
pub fn traced_pid_setter(trid: TraceId) -> Result<TracedPidSetter, Errno> {
    Ok(TracedPidSetter(active(trid)?.view.as_ptr()))
}
