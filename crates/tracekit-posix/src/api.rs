//! The controller and analyzer roles: trace stream identifiers and every
//! `posix_trace_*` function that takes one. Functions return
//! `Err(errno)` exactly where the standard says the C function returns that
//! error number; `tracekit-posix-c` only converts types.

use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::attr::TraceAttr;
use crate::clock::Calibration;
use crate::consts::*;
use crate::eventset::EventSet;
use crate::log::{EventInfo, LogReader, LogWriter, Status};
use crate::producer::AUTO_SUSPENDED;
use crate::shm::{self, RawEvent, Region, StreamView, Take};
use crate::traced;

mod keeper;

pub type Errno = i32;
/// A trace stream identifier: slot index + 1 in the low 32 bits, a
/// generation in the high 32 bits, so a stale identifier is refused.
pub type TraceId = u64;

/// `pid` value for [`create`]: any process that opens the stream by name
/// (through [`traced::STREAM_ENV`]) writes into it. The rationale of the
/// standard suggests such a value (`POSIX_TRACE_ALLPROC`).
pub const POSIX_TRACE_ALLPROC: i32 = -1;
/// How many events the reader converts between two looks at the clock
/// calibration (reading the clock per event would cost more than the
/// conversion).
const RECALIBRATE_EVERY: u32 = 4096;
/// How long a reserved slot may stay incomplete before the reader decides
/// its writer died and skips it.
const STUCK_SLOT: Duration = Duration::from_millis(100);

/// What a read returns: the event and how many payload bytes were copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadEvent {
    pub info: EventInfo,
    pub data_len: usize,
}

struct Consumer {
    raw: RawEvent,
    pending: VecDeque<(EventInfo, Vec<u8>)>,
    in_loss: bool,
    busy: Option<(shm::SlotRef, Instant)>,
    cal: Calibration,
    cal_at: Instant,
    /// Events converted since the calibration was last checked: the
    /// clock is read once per [`RECALIBRATE_EVERY`] events, not per event.
    since_check: u32,
    /// Payload of the event being handed out (kept: no allocation per read).
    out: Vec<u8>,
}

enum Next {
    Event(EventInfo),
    Empty,
    Busy,
}

impl Consumer {
    fn new(view: &StreamView) -> Consumer {
        Consumer {
            raw: RawEvent {
                data: Vec::with_capacity(view.header().slot_data as usize),
                ..RawEvent::default()
            },
            pending: VecDeque::new(),
            in_loss: false,
            busy: None,
            cal: view.header().calibration,
            cal_at: Instant::now(),
            since_check: 0,
            out: Vec::with_capacity(view.header().slot_data as usize),
        }
    }

    fn ticks_to_ns(&mut self, ticks: u64) -> i64 {
        self.since_check = self.since_check.saturating_add(1);
        if self.since_check >= RECALIBRATE_EVERY {
            self.since_check = 0;
            if self.cal_at.elapsed() > Duration::from_secs(1) {
                self.cal = self.cal.refined();
                self.cal_at = Instant::now();
            }
        }
        self.cal.to_ns(ticks)
    }

    /// Next event into `data`; synthesises OVERFLOW/RESUME around losses
    /// and the automatic STOP/START of UNTIL_FULL and FLUSH streams.
    fn next(&mut self, view: &StreamView, data: &mut Vec<u8>) -> Next {
        if let Some((info, d)) = self.pending.pop_front() {
            data.clear();
            data.extend_from_slice(&d);
            return Next::Event(info);
        }
        loop {
            match view.take(&mut self.raw) {
                Take::Event => {
                    self.busy = None;
                    let info = EventInfo {
                        event_id: self.raw.event_id,
                        pid: self.raw.pid,
                        truncation: self.raw.truncation,
                        thread: self.raw.thread,
                        prog_address: self.raw.prog,
                        timestamp_ns: self.ticks_to_ns(self.raw.ticks),
                    };
                    if self.in_loss {
                        self.in_loss = false;
                        let sys = |id| EventInfo {
                            event_id: id,
                            pid: 0,
                            truncation: POSIX_TRACE_NOT_TRUNCATED,
                            thread: 0,
                            prog_address: 0,
                            timestamp_ns: info.timestamp_ns,
                        };
                        self.pending
                            .push_back((sys(POSIX_TRACE_RESUME), Vec::new()));
                        self.pending.push_back((info, self.raw.data.clone()));
                        data.clear();
                        return Next::Event(sys(POSIX_TRACE_OVERFLOW));
                    }
                    data.clear();
                    data.extend_from_slice(&self.raw.data);
                    return Next::Event(info);
                }
                Take::Lost(_) => self.in_loss = true,
                Take::Busy(pos) => match self.busy {
                    Some((p, since)) if p == pos && since.elapsed() > STUCK_SLOT => {
                        view.skip_stuck(pos);
                        self.in_loss = true;
                        self.busy = None;
                    }
                    Some((p, _)) if p == pos => return Next::Busy,
                    _ => {
                        self.busy = Some((pos, Instant::now()));
                        return Next::Busy;
                    }
                },
                Take::Empty => {
                    // Idle: let the next event check the calibration.
                    self.since_check = RECALIBRATE_EVERY;
                    let h = view.header();
                    if h.shutdown.load(Acquire) != 0 {
                        return Next::Empty;
                    }
                    let running = h.running.0.load(Acquire);
                    if h.stream_policy == POSIX_TRACE_LOOP {
                        // Drained: an empty stream is not full.
                        h.full.store(POSIX_TRACE_NOT_FULL as u32, Relaxed);
                        return Next::Empty;
                    }
                    // UNTIL_FULL/FLUSH, drained. It stopped itself because
                    // full if it is still suspended that way, or if the
                    // controller stopped it since (`full` still set: the
                    // controller's stop records nothing then). Either way
                    // the reader gets the automatic STOP after the last
                    // event, and the stream is no longer full (a writer
                    // that fills it again suspends it again).
                    let stopped_full = running == AUTO_SUSPENDED
                        || (running == POSIX_TRACE_SUSPENDED as u32 && h.full.load(Acquire) != 0);
                    if stopped_full {
                        let ts = crate::clock::realtime_ns();
                        h.full.store(POSIX_TRACE_NOT_FULL as u32, Relaxed);
                        // Restart unless the controller stopped it: the
                        // START event is recorded only once the restart
                        // took place, with the time it was decided.
                        let ticks = view.now();
                        if h.running
                            .0
                            .compare_exchange(
                                AUTO_SUSPENDED,
                                POSIX_TRACE_RUNNING as u32,
                                AcqRel,
                                Relaxed,
                            )
                            .is_ok()
                        {
                            view.record_system_at(
                                POSIX_TRACE_START,
                                &view.filter().to_bytes(),
                                0,
                                0,
                                ticks,
                            );
                        }
                        data.clear();
                        data.extend_from_slice(&1i32.to_ne_bytes());
                        return Next::Event(EventInfo {
                            event_id: POSIX_TRACE_STOP,
                            pid: 0,
                            truncation: POSIX_TRACE_NOT_TRUNCATED,
                            thread: 0,
                            prog_address: 0,
                            timestamp_ns: ts,
                        });
                    }
                    return Next::Empty;
                }
            }
        }
    }
}

struct Active {
    region: Option<Region>,
    view: StreamView,
    creator_pid: i32,
    /// Index of this process's attachment to the stream, or -1.
    attach_idx: AtomicI32,
    named_path: Option<PathBuf>,
    with_log: bool,
    consumer: Mutex<Consumer>,
    log: Mutex<Option<LogWriter>>,
    flush_error: AtomicI32,
    flush_status: AtomicI32,
    flush_requested: AtomicU32,
    log_overrun: AtomicI32,
    log_full: AtomicI32,
    typelist_pos: Mutex<usize>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
    /// Write end of the pipe to this stream's keeper process, or -1.
    keeper_fd: AtomicI32,
}

impl Active {
    fn region_fd(&self) -> i32 {
        self.region.as_ref().map_or(-1, |r| r.fd())
    }

    /// Not shut down, and used by the process that created it (a trid is
    /// not valid in a forked child).
    fn is_live(&self) -> bool {
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

struct Pre {
    reader: LogReader,
    typelist_pos: usize,
    scratch: Vec<u8>,
}

#[derive(Clone)]
enum Handle {
    Active(Arc<Active>),
    Log(Arc<Mutex<Pre>>),
}

struct Entry {
    generation: u32,
    handle: Option<Handle>,
}

static TABLE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static ATEXIT: AtomicBool = AtomicBool::new(false);
static NAME_SEQ: AtomicU32 = AtomicU32::new(0);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn insert(h: Handle) -> Result<TraceId, Errno> {
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

fn get(trid: TraceId) -> Result<Handle, Errno> {
    let idx = (trid & 0xffff_ffff) as usize;
    let t = lock(&TABLE);
    let e = idx
        .checked_sub(1)
        .and_then(|i| t.get(i))
        .ok_or(libc::EINVAL)?;
    if e.generation as u64 != trid >> 32 {
        return Err(libc::EINVAL);
    }
    e.handle.clone().ok_or(libc::EINVAL)
}

fn remove(trid: TraceId) {
    let idx = (trid & 0xffff_ffff) as usize;
    let mut t = lock(&TABLE);
    if let Some(e) = idx.checked_sub(1).and_then(|i| t.get_mut(i)) {
        e.handle = None;
    }
}

fn active(trid: TraceId) -> Result<Arc<Active>, Errno> {
    match get(trid)? {
        Handle::Active(a) if a.creator_pid == traced::cached_pid() && !a.closed.load(Acquire) => {
            Ok(a)
        }
        _ => Err(libc::EINVAL),
    }
}

fn self_thread() -> u64 {
    // SAFETY: no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

extern "C" fn shutdown_all_at_exit() {
    let ids: Vec<TraceId> = {
        let t = lock(&TABLE);
        t.iter()
            .enumerate()
            .filter(|(_, e)| matches!(&e.handle, Some(Handle::Active(a)) if a.creator_pid == traced::cached_pid()))
            .map(|(i, e)| ((e.generation as u64) << 32) | (i as u64 + 1))
            .collect()
    };
    for id in ids {
        let _ = shutdown(id);
    }
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
    });
    let trid = insert(Handle::Active(a.clone()))?;
    if self_traced {
        match traced::attach(view) {
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

fn flusher(a: Arc<Active>) {
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

/// The stream state as the standard names it (an automatic suspension
/// is POSIX_TRACE_SUSPENDED).
pub(crate) fn reported_running(h: &shm::StreamHeader) -> i32 {
    if h.running.0.load(Acquire) == POSIX_TRACE_RUNNING as u32 {
        POSIX_TRACE_RUNNING
    } else {
        POSIX_TRACE_SUSPENDED
    }
}

fn stream_status(a: &Active) -> Status {
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

fn user_types(view: &StreamView) -> Vec<(u32, Vec<u8>)> {
    view.type_ids()
        .into_iter()
        .filter(|&i| i >= USER_EVENT_FIRST)
        .filter_map(|i| view.type_name(i).map(|n| (i, n)))
        .collect()
}

/// Copies what the stream holds into `w`, bracketed by FLUSH_START and
/// FLUSH_STOP recorded as `pid`/`thread`; returns the first write error.
fn copy_stream(
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
fn do_flush(a: &Active) {
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

/// `posix_trace_start`: records START and runs, unless the stream is
/// running already or full, where it records nothing and changes nothing
/// (as the standard says). Full means: suspended by itself because full
/// (it restarts once drained), or stopped by the controller while so and
/// not drained since (it can be started once drained). A LOOP stream is
/// never kept from running by being full: it records by overwriting.
pub fn start(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    // Serialised with the reader's automatic restart (see `stop_active`).
    let _consumer = lock(&a.consumer);
    let h = a.view.header();
    if h.running.0.load(Acquire) != POSIX_TRACE_SUSPENDED as u32 {
        return Ok(());
    }
    if h.stream_policy != POSIX_TRACE_LOOP && h.full.load(Acquire) != 0 {
        return Ok(());
    }
    a.view.record_system(
        POSIX_TRACE_START,
        &a.view.filter().to_bytes(),
        traced::cached_pid(),
        self_thread(),
    );
    h.running.0.store(POSIX_TRACE_RUNNING as u32, Release);
    Ok(())
}

/// `posix_trace_stop`.
pub fn stop(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    stop_active(&a);
    Ok(())
}

fn stop_active(a: &Active) {
    // The reader restarts a drained full stream under this lock: holding
    // it, the restart and this stop cannot interleave, so the stream's
    // last START/STOP event always matches its state.
    let _consumer = lock(&a.consumer);
    let h = a.view.header();
    // Running, or suspended only because it was full: now stopped by the
    // controller (a full stream must not restart itself after this). A
    // stream that stopped itself is already stopped: its STOP (automatic)
    // is reported by the reader once drained (`full` stays set until then).
    let was = h.running.0.swap(POSIX_TRACE_SUSPENDED as u32, AcqRel);
    if was == POSIX_TRACE_RUNNING as u32 {
        a.view.record_system(
            POSIX_TRACE_STOP,
            &0i32.to_ne_bytes(),
            traced::cached_pid(),
            self_thread(),
        );
    }
}

/// `posix_trace_clear`.
pub fn clear(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    let mut log = lock(&a.log);
    let mut c = lock(&a.consumer);
    let h = a.view.header();
    a.view.discard_all();
    c.pending.clear();
    c.in_loss = false;
    c.busy = None;
    h.full.store(POSIX_TRACE_NOT_FULL as u32, Relaxed);
    h.overrun.store(POSIX_TRACE_NO_OVERRUN as u32, Relaxed);
    // Stopped only because it was full: it is not full any more.
    let _ =
        h.running
            .0
            .compare_exchange(AUTO_SUSPENDED, POSIX_TRACE_RUNNING as u32, AcqRel, Relaxed);
    if let Some(w) = log.as_mut() {
        w.clear()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        a.log_full.store(POSIX_TRACE_NOT_FULL, Release);
    }
    Ok(())
}

/// `posix_trace_shutdown`: stops, flushes what remains into the log (if
/// any), completes the log and frees the stream.
pub fn shutdown(trid: TraceId) -> Result<(), Errno> {
    let a = active(trid)?;
    stop_active(&a);
    let mut result = Ok(());
    if a.with_log {
        a.closed.store(true, Release);
        a.view.wake_flusher();
        if let Some(t) = lock(&a.flusher).take() {
            let _ = t.join();
        }
        do_flush(&a);
        let view = a.view;
        let status = stream_status(&a);
        if let Some(w) = lock(&a.log).as_mut() {
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
    if let Some(p) = &a.named_path {
        let _ = std::fs::remove_file(p);
    }
    keeper::release(a.keeper_fd.swap(-1, AcqRel));
    remove(trid);
    result
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

/// `posix_trace_get_attr`.
pub fn get_attr(trid: TraceId) -> Result<TraceAttr, Errno> {
    match get(trid)? {
        Handle::Active(a) if a.is_live() => Ok(a.view.header().attr),
        Handle::Log(p) => Ok(lock(&p).reader.attr),
        _ => Err(libc::EINVAL),
    }
}

/// `posix_trace_get_status`: reads and resets the overrun and flush-error
/// members of an active stream; a log's final status is never reset.
pub fn get_status(trid: TraceId) -> Result<Status, Errno> {
    match get(trid)? {
        Handle::Log(p) => Ok(lock(&p).reader.meta.status),
        Handle::Active(a) if a.is_live() => {
            let h = a.view.header();
            let mut s = stream_status(&a);
            s.stream_overrun_status = h.overrun.swap(0, AcqRel) as i32;
            s.stream_flush_error = a.flush_error.swap(0, AcqRel);
            if a.with_log {
                s.log_overrun_status = a.log_overrun.swap(0, AcqRel);
                s.log_full_status = a.log_full.load(Acquire);
            }
            Ok(s)
        }
        _ => Err(libc::EINVAL),
    }
}

/// Events the stream lost so far (our extension: the standard only has
/// the overrun flag).
pub fn lost_events(trid: TraceId) -> Result<u64, Errno> {
    match get(trid)? {
        Handle::Active(a) => Ok(a.view.header().lost.load(Relaxed)),
        Handle::Log(p) => {
            let m = &lock(&p).reader.meta;
            Ok(m.events_lost_stream + m.events_lost_log)
        }
    }
}

/// `posix_trace_trid_eventid_open`.
pub fn trid_eventid_open(trid: TraceId, name: &[u8]) -> Result<u32, Errno> {
    let a = active(trid)?;
    if name.len() > TRACE_EVENT_NAME_MAX {
        return Err(libc::ENAMETOOLONG);
    }
    if a.attach_idx.load(Acquire) >= 0 {
        // Keep this process's ids and the stream's in step.
        traced::eventid_open(name)?;
    }
    a.view.register(name).ok_or(libc::ENAMETOOLONG)
}

/// `posix_trace_eventid_get_name`.
pub fn eventid_get_name(trid: TraceId, id: u32) -> Result<Vec<u8>, Errno> {
    match get(trid)? {
        Handle::Active(a) if a.is_live() => a.view.type_name(id).ok_or(libc::EINVAL),
        Handle::Log(p) => lock(&p)
            .reader
            .type_name(id)
            .map(<[u8]>::to_vec)
            .ok_or(libc::EINVAL),
        _ => Err(libc::EINVAL),
    }
}

fn log_type_ids(r: &LogReader) -> Vec<u32> {
    let mut v: Vec<u32> = SYSTEM_EVENT_NAMES
        .iter()
        .map(|(i, _)| *i)
        .filter(|&i| i != POSIX_TRACE_UNNAMED_USEREVENT)
        .collect();
    v.extend(r.types.iter().map(|(i, _)| *i));
    v
}

/// `posix_trace_eventtypelist_getnext_id`: `None` at the end.
pub fn eventtypelist_getnext_id(trid: TraceId) -> Result<Option<u32>, Errno> {
    match get(trid)? {
        Handle::Active(a) if a.is_live() => {
            let ids = a.view.type_ids();
            let mut pos = lock(&a.typelist_pos);
            let r = ids.get(*pos).copied();
            if r.is_some() {
                *pos += 1;
            }
            Ok(r)
        }
        Handle::Log(p) => {
            let mut p = lock(&p);
            let ids = log_type_ids(&p.reader);
            let r = ids.get(p.typelist_pos).copied();
            if r.is_some() {
                p.typelist_pos += 1;
            }
            Ok(r)
        }
        _ => Err(libc::EINVAL),
    }
}

/// `posix_trace_eventtypelist_rewind`.
pub fn eventtypelist_rewind(trid: TraceId) -> Result<(), Errno> {
    match get(trid)? {
        Handle::Active(a) if a.is_live() => {
            *lock(&a.typelist_pos) = 0;
            Ok(())
        }
        Handle::Log(p) => {
            lock(&p).typelist_pos = 0;
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }
}

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

/// How a read waits for an event.
#[derive(Clone, Copy, Debug)]
pub enum Wait {
    /// `posix_trace_trygetnext_event`.
    Never,
    /// `posix_trace_getnext_event`.
    Forever,
    /// `posix_trace_timedgetnext_event`: absolute CLOCK_REALTIME deadline.
    Until(libc::timespec),
}

fn copy_out(info: EventInfo, data: &[u8], buf: &mut [u8]) -> ReadEvent {
    let n = data.len().min(buf.len());
    buf[..n].copy_from_slice(&data[..n]);
    let mut info = info;
    if n < data.len() {
        info.truncation = POSIX_TRACE_TRUNCATED_READ;
    }
    ReadEvent { info, data_len: n }
}

/// The getnext functions: `Ok(None)` means "unavailable" (end of a log,
/// nothing ready for [`Wait::Never`]).
pub fn getnext_event(
    trid: TraceId,
    buf: &mut [u8],
    wait: Wait,
) -> Result<Option<ReadEvent>, Errno> {
    match get(trid)? {
        Handle::Log(p) => {
            if matches!(wait, Wait::Never) {
                return Err(libc::EINVAL);
            }
            let mut p = lock(&p);
            let Pre {
                reader, scratch, ..
            } = &mut *p;
            loop {
                match reader.next_event() {
                    None => return Ok(None),
                    Some(Ok(e)) => return Ok(Some(copy_out(e.info, e.data, buf))),
                    // A corrupt block: the reader skipped to the next one.
                    Some(Err(_)) => {
                        scratch.clear();
                        continue;
                    }
                }
            }
        }
        Handle::Active(a) => {
            if a.creator_pid != traced::cached_pid() || a.with_log {
                return Err(libc::EINVAL);
            }
            read_active(&a, buf, wait)
        }
    }
}

fn read_active(a: &Active, buf: &mut [u8], wait: Wait) -> Result<Option<ReadEvent>, Errno> {
    let mut sleep_us = 1u64;
    let mut validated = false;
    loop {
        {
            let mut c = lock(&a.consumer);
            if a.closed.load(Acquire) {
                return Err(libc::EINVAL);
            }
            let mut data = std::mem::take(&mut c.out);
            let next = c.next(&a.view, &mut data);
            let got = match next {
                Next::Event(info) => Some(copy_out(info, &data, buf)),
                _ => None,
            };
            c.out = data;
            if got.is_some() {
                return Ok(got);
            }
        }
        match wait {
            Wait::Never => return Ok(None),
            Wait::Forever => {}
            Wait::Until(ts) => {
                if !validated {
                    if !(0..1_000_000_000).contains(&ts.tv_nsec) {
                        return Err(libc::EINVAL);
                    }
                    validated = true;
                }
                let deadline = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
                if crate::clock::realtime_ns() >= deadline {
                    return Err(libc::ETIMEDOUT);
                }
            }
        }
        // Writers never make system calls, so the reader polls, backing
        // off to 1 ms. A signal interrupts the sleep: EINTR.
        let req = libc::timespec {
            tv_sec: 0,
            tv_nsec: (sleep_us * 1000) as libc::c_long,
        };
        // SAFETY: valid timespec; the remainder pointer may be null.
        if unsafe { libc::nanosleep(&req, std::ptr::null_mut()) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {
            return Err(libc::EINTR);
        }
        sleep_us = (sleep_us * 2).min(1000);
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams this process creates trace all of its threads: tests that
    /// count events must not run at the same time.
    fn serial() -> MutexGuard<'static, ()> {
        static M: Mutex<()> = Mutex::new(());
        M.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Threads writing at once use different lanes; the reader merges the
    /// lanes back into one stream: nothing lost, each thread's events in
    /// order, and (read after the writers finished) timestamps in order.
    #[test]
    fn concurrent_writers_are_merged_in_time_order() {
        let _s = serial();
        const THREADS: u32 = 4;
        const EACH: u32 = 3000;
        let trid = create(0, None, None).unwrap();
        let id = traced::eventid_open(b"lanes").unwrap();
        start(trid).unwrap();
        let a = active(trid).unwrap();
        let lanes: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let h = a.view.header();
                    s.spawn(move || {
                        for i in 0..EACH {
                            let mut p = [0u8; 8];
                            p[..4].copy_from_slice(&t.to_le_bytes());
                            p[4..].copy_from_slice(&i.to_le_bytes());
                            traced::trace_event(id, &p);
                        }
                        // SAFETY: pthread_self has no preconditions.
                        let me = unsafe { libc::pthread_self() } as u64;
                        crate::producer::lane_for(h, me, traced::cached_pid())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut distinct = lanes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() >= 2, "all threads in one lane: {lanes:?}");
        let mut next = [0u32; THREADS as usize];
        let mut last_ts = i64::MIN;
        let mut in_order = true;
        let mut buf = [0u8; 256];
        while let Some(e) = getnext_event(trid, &mut buf, Wait::Never).unwrap() {
            if e.info.event_id != id {
                continue;
            }
            let t = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
            let i = u32::from_le_bytes(buf[4..8].try_into().unwrap());
            assert_eq!(i, next[t], "thread {t} out of order");
            next[t] += 1;
            in_order &= e.info.timestamp_ns >= last_ts;
            last_ts = e.info.timestamp_ns;
        }
        assert_eq!(next, [EACH; THREADS as usize]);
        assert_eq!(lost_events(trid).unwrap(), 0);
        if distinct.len() == THREADS as usize {
            // One writer per lane: each lane is in time order, so the merge is.
            assert!(in_order, "merged events out of time order");
        }
        shutdown(trid).unwrap();
    }

    /// A writer that dies between reserving a slot and completing it costs
    /// that one event: the reader skips the slot after a grace period,
    /// reports the loss (OVERFLOW/RESUME) and reads on.
    #[test]
    fn a_crashed_writer_loses_only_its_event() {
        let _s = serial();
        let trid = create(0, None, None).unwrap();
        let id = traced::eventid_open(b"crash").unwrap();
        start(trid).unwrap();
        traced::trace_event(id, b"before");
        let a = active(trid).unwrap();
        // Reserve a slot of this thread's lane and never complete it, as a
        // killed writer would.
        let h = a.view.header();
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() } as u64;
        let lane = crate::producer::lane_for(h, thread, traced::cached_pid());
        h.lane[lane].tail.0.fetch_add(1, AcqRel);
        traced::trace_event(id, b"after");
        let mut buf = [0u8; 256];
        let mut got = Vec::new();
        let t0 = Instant::now();
        while got.len() < 5 {
            if let Some(e) = getnext_event(trid, &mut buf, Wait::Never).unwrap() {
                got.push((e.info.event_id, buf[..e.data_len].to_vec()));
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "{got:?}");
        }
        let ids: Vec<u32> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            ids,
            [
                POSIX_TRACE_START,
                id,
                POSIX_TRACE_OVERFLOW,
                POSIX_TRACE_RESUME,
                id
            ]
        );
        assert_eq!(got[4].1, b"after");
        assert_eq!(lost_events(trid).unwrap(), 1);
        assert_eq!(
            get_status(trid).unwrap().stream_overrun_status,
            POSIX_TRACE_OVERRUN
        );
        shutdown(trid).unwrap();
    }
}
