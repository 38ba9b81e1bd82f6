//! The stream layout and a `no_std` writer for processes that cannot link
//! this crate (the `tracekit-preload` shim: `no_std`, no allocator, no TLS).
//!
//! This file uses only `core` and `crate::consts`, so such a library can
//! compile it as its own module:
//!
//! ```text
//! #[path = ".../tracekit-posix/src/consts.rs"] mod consts;
//! #[path = ".../tracekit-posix/src/producer.rs"] mod producer;
//! ```
//!
//! The types here ARE the layout of a stream mapping: [`crate::shm`] uses
//! them (its `StreamHeader` is [`StreamHeaderOf`] with the real attribute
//! and calibration types; a library without those uses [`Opaque`] blocks
//! of the same size, checked at compile time in `lib.rs`). [`write_event`]
//! follows the slot protocol of `shm.rs` (see there): reserve a slot with
//! an atomic, write it under its sequence word, publish.

use core::ptr;
use core::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering::*};

use crate::consts::*;

pub const STREAM_MAGIC: [u8; 8] = *b"TKPXSTRM";
pub const STREAM_VERSION: u32 = 5;
/// Most lanes a stream can have (see [`Lane`]).
pub const MAX_LANES: usize = 16;
/// Bytes before the first slot's payload.
pub const SLOT_HEADER: usize = core::mem::size_of::<SlotHeader>();
/// `running` of a stream that UNTIL_FULL/FLUSH suspended because it
/// filled up: events refused meanwhile are counted as lost, and the
/// consumer restarts the stream once it has drained it. Reported as
/// POSIX_TRACE_SUSPENDED.
pub const AUTO_SUSPENDED: u32 = 0x100 | POSIX_TRACE_SUSPENDED as u32;
/// `running` of a stream that suspended itself because full and was then
/// stopped by the controller: the consumer still reports the automatic
/// STOP once drained, but does not restart it. Reported as
/// POSIX_TRACE_SUSPENDED; writers are not admitted (not a loss).
pub const AUTO_STOPPED: u32 = 0x200 | POSIX_TRACE_SUSPENDED as u32;
/// `running` of a stream shut down while processes may still write into it
/// (`tracekit posix record --inherit --stop-at-exit`: descendants of the
/// program outlive it): an event written now is not recorded but counted
/// in `late` (the log's header gets the count once those processes are
/// gone). Reported as POSIX_TRACE_SUSPENDED.
pub const CLOSED: u32 = 0x400 | POSIX_TRACE_SUSPENDED as u32;
/// [`CLOSED`] while suspended because full: the reader still reports the
/// automatic STOP once drained (as for [`AUTO_STOPPED`]), then it is
/// [`CLOSED`].
pub const CLOSED_AUTO: u32 = 0x800 | POSIX_TRACE_SUSPENDED as u32;
/// Is `running` one of the shut-down-with-writers states?
#[inline(always)]
pub fn is_closed(running: u32) -> bool {
    running & (CLOSED | CLOSED_AUTO) & !(POSIX_TRACE_SUSPENDED as u32) != 0
}
/// Number of 64-bit words in an event set: one bit per identifier below
/// [`EVENT_ID_END`].
pub const EVENTSET_WORDS: usize = (EVENT_ID_END as usize).div_ceil(64);
/// Size of `TraceAttr` and of `Calibration` (checked in `lib.rs`).
pub const ATTR_SIZE: usize = 136;
pub const CALIBRATION_SIZE: usize = 32;
/// Raw clock kinds of a stream (`Calibration::kind`).
pub const CLOCK_REALTIME_NS: u32 = 1;
pub const CLOCK_TSC: u32 = 2;

/// Keeps a hot atomic on its own cache line.
#[repr(C, align(64))]
pub struct Padded<T>(pub T);

/// One ring of a stream. A stream has `lanes` of them, each of
/// `slot_count` slots with its own reservation counter, so that writers on
/// different threads (and processes) do not fight over one cache line: a
/// writer picks its lane from its thread and process ([`lane_for`]); the
/// consumer merges the lanes by timestamp. One thread always writes to the
/// same lane, so a single writer sees exactly `slot_count` slots.
///
/// One more ring follows the writers' lanes: the *system lane* (index
/// `lanes`, see [`system_lane`]), where the controller records the system
/// events it causes (START, STOP, FILTER, FLUSH_START, FLUSH_STOP, ERROR).
/// User events never go there, so a stream full of user events still
/// takes them, each at its place in time.
#[repr(C)]
pub struct Lane {
    /// Slots reserved in this lane.
    pub tail: Padded<AtomicU64>,
    /// Slots of this lane the (single) consumer has finished with.
    pub head: Padded<AtomicU64>,
}

/// Stands for a header member whose type a `no_std` writer does not have.
#[repr(C, align(8))]
pub struct Opaque<const N: usize>(pub [u8; N]);

#[repr(C)]
pub struct RegEntry {
    /// 0 free, 1 being written, 2 ready.
    pub state: AtomicU32,
    pub len: u32,
    pub name: [u8; TRACE_EVENT_NAME_MAX + 1],
}

/// The stream's event-type table: entry `i` is user event type `1024 + i`;
/// entry 0 is the unnamed user event.
#[repr(C)]
pub struct Registry {
    pub entries: [RegEntry; TRACE_USER_EVENT_MAX],
}

/// The first bytes of a stream mapping. `A` is `TraceAttr`, `C` is
/// `Calibration` (or [`Opaque`] blocks of their size).
#[repr(C)]
pub struct StreamHeaderOf<A, C> {
    pub magic: [u8; 8],
    pub version: u32,
    pub header_size: u32,
    pub slot_size: u32,
    pub slot_data: u32,
    /// Slots per lane.
    pub slot_count: u64,
    /// Number of lanes in use (a power of two, at most [`MAX_LANES`]).
    pub lanes: u32,
    pub max_data_size: u32,
    pub stream_policy: i32,
    pub inheritance: i32,
    pub with_log: u32,
    /// The process to trace: attach only if `getpid()` equals it; -1 lets
    /// any process holding the stream's name attach.
    pub traced_pid: AtomicI32,
    pub creator_pid: i32,
    pub attr: A,
    pub calibration: C,
    /// POSIX_TRACE_RUNNING, POSIX_TRACE_SUSPENDED, [`AUTO_SUSPENDED`] or
    /// [`AUTO_STOPPED`] (one word, so that a writer never sees a half-made
    /// transition between "stopped by the controller" and "stopped
    /// because full").
    pub running: Padded<AtomicU32>,
    pub full: AtomicU32,
    pub overrun: AtomicU32,
    pub shutdown: AtomicU32,
    /// Futex word the flusher sleeps on.
    pub flush_wake: AtomicU32,
    /// Events lost by the stream (full, overwritten, crashed writer).
    pub lost: AtomicU64,
    /// System events lost (system lane full) since the last one recorded:
    /// the next one recorded carries the count (see [`SlotHeader::prog`]),
    /// so the reader reports the loss where it happened.
    pub system_lost: AtomicU64,
    /// Events written after the stream was shut down ([`CLOSED`]): not
    /// recorded, counted.
    pub late: AtomicU64,
    /// Raw time of the event whose refusal suspended an UNTIL_FULL stream
    /// (the automatic STOP is reported at that time).
    pub suspended_ticks: AtomicU64,
    /// Futex word bumped whenever the consumer frees slots: writers of a
    /// full POSIX_TRACE_FLUSH stream wait on it for the flush.
    pub space_wake: AtomicU32,
    /// Writers waiting on `space_wake` (the consumer wakes only if any).
    pub space_waiters: AtomicU32,
    /// Set bit = event type filtered out.
    pub filter: [AtomicU64; EVENTSET_WORDS],
    /// The writers' lanes, then the system lane at index `lanes`.
    pub lane: [Lane; MAX_LANES + 1],
    pub registry: Registry,
}

/// The header as a writer without the attribute types sees it.
pub type OpaqueHeader = StreamHeaderOf<Opaque<ATTR_SIZE>, Opaque<CALIBRATION_SIZE>>;

#[repr(C)]
pub struct SlotHeader {
    pub seq: AtomicU64,
    pub event_id: u32,
    pub pid: i32,
    pub data_len: u32,
    pub truncation: i32,
    pub thread: u64,
    /// The writer's program address. In the system lane (no addresses
    /// there): how many system events were lost right before this one.
    pub prog: u64,
    pub ticks: u64,
    /// Who holds the slot while its sequence word is odd (claimed, being
    /// written): written *before* the odd sequence word, so a writer that
    /// sees the slot claimed sees its holder ([`wait_for_previous`]), not
    /// the previous lap's. The consumer never reads these.
    pub owner_thread: u64,
    pub owner_pid: i32,
    pub _pad: u32,
}

/// Bytes of the mapping before the first slot.
pub const fn header_size() -> usize {
    core::mem::size_of::<OpaqueHeader>().next_multiple_of(4096)
}

/// Where slot `pos` of `lane` lives: lane after lane, each a ring of
/// `slot_count` slots, the system lane last.
///
/// # Safety
/// `h` must head a valid ([`is_valid`]) mapping and `lane <= h.lanes`.
#[inline(always)]
pub unsafe fn slot_ptr<A, C>(h: &StreamHeaderOf<A, C>, lane: usize, pos: u64) -> *mut SlotHeader {
    let idx = lane as u64 * h.slot_count + (pos & (h.slot_count - 1));
    // SAFETY: idx < (lanes + 1) * slot_count, the slots the mapping holds.
    unsafe {
        (h as *const StreamHeaderOf<A, C> as *mut u8)
            .add(h.header_size as usize + idx as usize * h.slot_size as usize)
            .cast::<SlotHeader>()
    }
}

/// Does a mapping of `len` bytes at `h` hold a well-formed stream?
pub fn is_valid<A, C>(h: &StreamHeaderOf<A, C>, len: usize) -> bool {
    let expect = h
        .slot_count
        .checked_mul(h.lanes as u64 + 1)
        .and_then(|s| s.checked_mul(h.slot_size as u64))
        .and_then(|s| s.checked_add(h.header_size as u64));
    h.magic == STREAM_MAGIC
        && h.version == STREAM_VERSION
        && h.header_size as usize == header_size()
        && h.slot_count.is_power_of_two()
        && h.lanes.is_power_of_two()
        && h.lanes as usize <= MAX_LANES
        && h.slot_size as usize >= SLOT_HEADER + h.slot_data as usize
        && expect == Some(len as u64)
}

/// The index of the system lane of a stream (after the writers' lanes).
#[inline(always)]
pub fn system_lane<A, C>(h: &StreamHeaderOf<A, C>) -> usize {
    (h.lanes as usize).min(MAX_LANES)
}

/// The stream's id of the user event type `name`, if registered (read-only:
/// a writer that cannot register looks up what the controller registered).
pub fn lookup<A, C>(h: &StreamHeaderOf<A, C>, name: &[u8]) -> Option<u32> {
    h.registry.entries.iter().enumerate().find_map(|(i, e)| {
        let len = (e.len as usize).min(TRACE_EVENT_NAME_MAX);
        (e.state.load(Acquire) == 2 && &e.name[..len] == name)
            .then_some(USER_EVENT_FIRST + i as u32)
    })
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut [i64; 2]) -> i32;
    fn sched_yield() -> i32;
    fn nanosleep(req: *const [i64; 2], rem: *mut [i64; 2]) -> i32;
    fn open(path: *const u8, flags: i32, ...) -> i32;
    fn read(fd: i32, buf: *mut u8, n: usize) -> isize;
    fn close(fd: i32) -> i32;
}

/// `O_RDONLY | O_CLOEXEC` (Linux, every architecture this runs on).
const O_RDONLY_CLOEXEC: i32 = 0o2000000;

/// Reads the raw clock of kind `kind` (the one of the stream's calibration).
/// The TSC is read with a plain `rdtsc`, which may run ahead of earlier
/// loads (Intel SDM, RDTSC): enough for a writer alone in its lane (its
/// reads follow each other), see [`raw_now_ordered`] for the others.
#[inline(always)]
pub fn raw_now(kind: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if kind == CLOCK_TSC {
        // SAFETY: rdtsc has no preconditions; a stream only selects it
        // when the CPU reports constant_tsc and nonstop_tsc.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    let _ = kind;
    realtime_ns()
}

/// [`raw_now`] read only once every earlier load is done (`lfence;
/// rdtsc`, as the kernel's `rdtsc_ordered`): a writer that waited for a
/// lane-mate's slot stamps after it saw that slot published, not before;
/// the reader's "now" is not older than what it read. (`clock_gettime`
/// orders its own read.) About 10 ns more than [`raw_now`].
#[inline(always)]
pub fn raw_now_ordered(kind: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if kind == CLOCK_TSC {
        // SAFETY: lfence and rdtsc have no preconditions (x86-64 baseline);
        // the TSC as in `raw_now`.
        return unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        };
    }
    let _ = kind;
    realtime_ns()
}

/// `CLOCK_REALTIME` in nanoseconds since the epoch (the vDSO: no system call).
pub fn realtime_ns() -> u64 {
    clock_ns(0)
}

/// `clock`'s time in nanoseconds (0 `CLOCK_REALTIME`, 1 `CLOCK_MONOTONIC`).
fn clock_ns(clock: i32) -> u64 {
    let mut ts = [0i64; 2];
    // SAFETY: a clock id and a valid out-pointer to a timespec (two 64-bit
    // words on the 64-bit targets this runs on).
    unsafe { clock_gettime(clock, &mut ts) };
    (ts[0] as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts[1] as u64)
}

/// The time an event is stamped with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// Read the raw clock of this kind (the stream's calibration kind)
    /// once the slot is reserved and the lane's previous slot published:
    /// what keeps each lane in time order.
    Now(u32),
    /// A time the caller read itself (raw ticks). The lane's order is then
    /// the caller's business: prefer [`Stamp::Now`].
    At(u64),
}

impl Stamp {
    #[inline(always)]
    fn ticks(self) -> u64 {
        match self {
            Stamp::Now(kind) => raw_now(kind),
            Stamp::At(ticks) => ticks,
        }
    }

    /// [`Stamp::ticks`] with the clock read after every earlier load
    /// ([`raw_now_ordered`]).
    #[inline(always)]
    fn ticks_ordered(self) -> u64 {
        match self {
            Stamp::Now(kind) => raw_now_ordered(kind),
            Stamp::At(ticks) => ticks,
        }
    }
}

impl From<u64> for Stamp {
    fn from(ticks: u64) -> Stamp {
        Stamp::At(ticks)
    }
}

/// What became of an event handed to [`write_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Written,
    /// Suspended or filtered out: not recorded, not a loss.
    NotAdmitted,
    /// Counted in the stream's lost count (the stream is full). With
    /// `wake_flusher`, a FLUSH stream's flusher should be woken (futex
    /// wake on `flush_wake`, after incrementing it).
    Lost {
        wake_flusher: bool,
    },
}

/// Counts `n` events lost by the stream and raises its overrun flag.
#[cold]
pub fn note_lost<A, C>(h: &StreamHeaderOf<A, C>, n: u64) {
    if h.overrun.load(Relaxed) == 0 {
        h.overrun.store(POSIX_TRACE_OVERRUN as u32, Relaxed);
    }
    h.lost.fetch_add(n, Relaxed);
}

/// Is event type `id` filtered out of the stream?
#[inline(always)]
pub fn is_filtered<A, C>(h: &StreamHeaderOf<A, C>, id: u32) -> bool {
    let w = (id / 64) as usize;
    w < EVENTSET_WORDS && h.filter[w].load(Relaxed) & (1 << (id % 64)) != 0
}

/// Should an event of type `id` be recorded now? `Ok` if the stream is
/// running and `id` passes the filter; otherwise what became of the event:
/// refused because an UNTIL_FULL/FLUSH stream stopped itself, it is lost
/// (and counted here); stopped by the controller or filtered out, it is
/// simply not recorded. The one admission check of every writer.
#[inline(always)]
pub fn admit<A, C>(h: &StreamHeaderOf<A, C>, id: u32) -> Result<(), Outcome> {
    // The filter first: a filtered-out event (the cheap "disabled trace
    // point") costs one load, and is never a loss, even while the stream
    // is suspended because full.
    if is_filtered(h, id) {
        return Err(Outcome::NotAdmitted);
    }
    admit_running(h)
}

/// The second half of [`admit`], for a caller that has checked the filter
/// itself: `Ok` if the stream is running; a stream that suspended itself
/// because full counts the event lost.
#[inline(always)]
pub fn admit_running<A, C>(h: &StreamHeaderOf<A, C>) -> Result<(), Outcome> {
    let running = h.running.0.load(Relaxed);
    if running != POSIX_TRACE_RUNNING as u32 {
        return Err(not_running(h, running));
    }
    Ok(())
}

/// What becomes of an event written while the stream is not running.
#[cold]
fn not_running<A, C>(h: &StreamHeaderOf<A, C>, running: u32) -> Outcome {
    if running == AUTO_SUSPENDED {
        note_lost(h, 1);
    } else if is_closed(running) {
        h.late.fetch_add(1, Relaxed);
    } else {
        return Outcome::NotAdmitted;
    }
    Outcome::Lost {
        wake_flusher: false,
    }
}

/// Records one event, its payload the concatenation of `parts` (so a
/// caller can put a header before a piece of a larger buffer without
/// copying), as `StreamView::record` does: honours the running
/// state and the filter, then [`write`](fn@write)s it. A full FLUSH stream loses the
/// event here (counted): this writer does not wait for the flush. No
/// allocation, no lock, no system call (but `sched_yield` while the lane's
/// previous slot is being written, see [`write`](fn@write)).
///
/// # Safety
/// `h` must be the header of a live, valid ([`is_valid`]) stream mapping
/// holding `slot_count` slots after `header_size` bytes.
pub unsafe fn write_event<A, C>(
    h: &StreamHeaderOf<A, C>,
    id: u32,
    parts: &[&[u8]],
    pid: i32,
    thread: u64,
    stamp: impl Into<Stamp>,
) -> Outcome {
    if let Err(refused) = admit(h, id) {
        return refused;
    }
    let lane = lane_for(h, thread, pid);
    // SAFETY: the caller's guarantee.
    match unsafe { write(h, lane, id, parts, pid, thread, 0, stamp.into()) } {
        Ok(()) => Outcome::Written,
        Err(full) => {
            if full.may_wait {
                note_lost(h, 1);
            }
            Outcome::Lost {
                wake_flusher: full.wake_flusher,
            }
        }
    }
}

/// The one write path of every writer (after admission): reserves a slot
/// of `lane` ([`reserve`]), claims it, waits (bounded) until the lane's
/// previous slot is published (`wait_for_previous`), reads the clock,
/// publishes. Stamping after both is what keeps a lane in time order, the
/// order the reader's merge relies on.
///
/// # Safety
/// As for [`write_event`]; `lane < h.lanes`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn write<A, C>(
    h: &StreamHeaderOf<A, C>,
    lane: usize,
    id: u32,
    parts: &[&[u8]],
    pid: i32,
    thread: u64,
    prog: u64,
    stamp: Stamp,
) -> Result<(), Full> {
    let pos = reserve(h, lane, move || stamp.ticks())?;
    // SAFETY: the caller's guarantee; `pos` was just reserved in `lane`.
    unsafe {
        let slot = slot_ptr(h, lane, pos);
        claim(slot, pos, pid, thread);
        let ticks = if wait_for_previous(h, lane, pos, slot, pid, thread) {
            stamp.ticks_ordered()
        } else {
            stamp.ticks()
        };
        complete(h, slot, pos, (id, pid, thread), parts, prog, ticks);
    }
    Ok(())
}

/// Marks reserved slot `pos` (at `slot`) as being written by (`pid`,
/// `thread`): odd sequence word, then the writer. A writer waiting for
/// this slot ([`wait_for_previous`]) sees who holds it.
///
/// # Safety
/// As for [`publish`]; `slot` is where slot `pos` lives.
#[inline(always)]
unsafe fn claim(slot: *mut SlotHeader, pos: u64, pid: i32, thread: u64) {
    // SAFETY: the caller's guarantee: we own slot `pos`.
    unsafe {
        ptr::addr_of_mut!((*slot).owner_pid).write_volatile(pid);
        ptr::addr_of_mut!((*slot).owner_thread).write_volatile(thread);
        (*slot).seq.store(2 * pos + 1, Release);
        fence(Release);
    }
}

/// How often a writer waiting for the lane's previous slot checks that
/// the slot's writer is still there (see [`wait_for_previous`]); also how
/// long it waits for a slot reserved but not yet claimed (its writer is
/// not known).
pub const PREVIOUS_SLOT_WAIT_NS: u64 = 100_000_000;
/// Longest a writer waits for the lane's previous slot in any case (a
/// writer that is there but makes no progress: a thread that died alone,
/// a process in another pid namespace).
pub const PREVIOUS_SLOT_WAIT_MAX_NS: u64 = 10_000_000_000;

/// Waits until the slot before `pos` in `lane` is published, so a writer
/// stamps its event after the one reserved just before it in the same
/// lane: two writers sharing a lane (threads, or processes, e.g. a forked
/// child and its parent's thread), one preempted between its reservation
/// and its clock read, would otherwise leave the lane out of time order.
/// The previous writer only has to read the clock and copy its payload.
/// No wait when that slot is held by this very thread (a signal handler
/// that interrupted it: it would wait for itself). A writer that is not
/// running is waited for as long as its process runs (checked every
/// [`PREVIOUS_SLOT_WAIT_NS`]): an overloaded machine may keep it off a CPU
/// for long, and going ahead would put this event before its. If its
/// process is gone, a zombie or stopped (it crashed mid-event, or was
/// stopped by a signal or a debugger), or after
/// [`PREVIOUS_SLOT_WAIT_MAX_NS`], the wait gives up and the order may be
/// off by that one event.
///
/// Returns whether that slot is another writer's: the caller then reads
/// the clock ordered after this wait ([`raw_now_ordered`]), since a plain
/// `rdtsc` may run ahead of the load that saw it published. A writer
/// alone in its lane (the usual case) reads it plainly: its clock reads
/// follow each other.
///
/// # Safety
/// As for [`slot_ptr`]: `h` is a live, valid stream mapping.
#[inline(always)]
unsafe fn wait_for_previous<A, C>(
    h: &StreamHeaderOf<A, C>,
    lane: usize,
    pos: u64,
    slot: *mut SlotHeader,
    pid: i32,
    thread: u64,
) -> bool {
    if pos == 0 {
        return false;
    }
    // SAFETY: the caller's guarantee; pos - 1 is a slot of this lane: the
    // one before `slot`, or the lane's last when `pos` starts a lap.
    let prev = unsafe {
        &*if pos & (h.slot_count - 1) != 0 {
            slot.cast::<u8>()
                .sub(h.slot_size as usize)
                .cast::<SlotHeader>()
        } else {
            slot_ptr(h, lane, pos - 1)
        }
    };
    if prev.seq.load(Acquire) >= 2 * pos {
        // Published. Its holder fields name its writer (or a later lap's,
        // another writer: ordered then, which is only slower).
        // SAFETY: plain reads of a slot of the mapping, written before its
        // sequence word, which this thread has seen (Acquire).
        let (p, t) = unsafe {
            (
                ptr::addr_of!(prev.owner_pid).read_volatile(),
                ptr::addr_of!(prev.owner_thread).read_volatile(),
            )
        };
        return p != pid || t != thread;
    }
    wait_slow(prev, 2 * pos, pid, thread)
}

/// Who holds a slot whose sequence word is `seq`, if it is claimed for
/// position `pos` (odd word `2 * pos + 1`): (pid, thread).
#[inline(always)]
fn holder(slot: &SlotHeader, seq: u64, pos: u64) -> Option<(i32, u64)> {
    // SAFETY: plain reads of a slot of the mapping; the claim wrote them
    // before its odd sequence word (Release), which the caller has seen
    // (Acquire), so they name the slot's holder, not the previous lap's.
    (seq == 2 * pos + 1).then(|| unsafe {
        (
            ptr::addr_of!(slot.owner_pid).read_volatile(),
            ptr::addr_of!(slot.owner_thread).read_volatile(),
        )
    })
}

/// The process holding a claimed slot (a writer in the middle of an
/// event), if that slot is claimed for position `pos`.
pub fn slot_holder(slot: &SlotHeader, pos: u64) -> Option<i32> {
    holder(slot, slot.seq.load(Acquire), pos).map(|(p, _)| p)
}

/// The slow part of [`wait_for_previous`]; true unless the slot is this
/// thread's own.
#[cold]
#[inline(never)]
fn wait_slow(prev: &SlotHeader, want: u64, pid: i32, thread: u64) -> bool {
    let mut since = 0;
    let mut checked = 0;
    let mut spins = 0u32;
    loop {
        let seq = prev.seq.load(Acquire);
        if seq >= want {
            return true;
        }
        let owner = holder(prev, seq, want / 2 - 1);
        if owner == Some((pid, thread)) {
            // Claimed by this thread, interrupted (a signal handler).
            return false;
        }
        if spins < 64 {
            spins += 1;
            core::hint::spin_loop();
            continue;
        }
        let now = clock_ns(1);
        if since == 0 {
            (since, checked) = (now, now);
        }
        let waited = now.wrapping_sub(since);
        if now.wrapping_sub(checked) > PREVIOUS_SLOT_WAIT_NS {
            checked = now;
            if waited > PREVIOUS_SLOT_WAIT_MAX_NS || !owner.is_some_and(|(p, _)| process_runs(p)) {
                return true;
            }
        }
        if waited < 1_000_000 {
            // SAFETY: sched_yield has no preconditions.
            unsafe { sched_yield() };
        } else {
            // The previous writer is not running: sleep rather than keep
            // a CPU busy yielding, so that it gets one sooner.
            let ts = [0i64, 20_000];
            // SAFETY: a valid timespec; no remainder wanted.
            unsafe { nanosleep(&ts, ptr::null_mut()) };
        }
    }
}

/// Is process `pid` there and able to run (not gone, not a zombie, not
/// stopped)? From `/proc/PID/stat`, without allocating (a writer's wait
/// calls it); false if that cannot be read.
pub fn process_runs(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let mut path = *b"/proc/\0\0\0\0\0\0\0\0\0\0/stat\0";
    let mut digits = [0u8; 10];
    let (mut n, mut v) = (0, pid as u32);
    while v > 0 || n == 0 {
        digits[n] = b'0' + (v % 10) as u8;
        v /= 10;
        n += 1;
    }
    let mut at = 6;
    for d in digits[..n].iter().rev() {
        path[at] = *d;
        at += 1;
    }
    path[at..at + 6].copy_from_slice(b"/stat\0");
    let mut buf = [0u8; 512];
    // SAFETY: a NUL-terminated path; reading into a buffer we own; closing
    // the descriptor we opened.
    let len = unsafe {
        let fd = open(path.as_ptr(), O_RDONLY_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let len = read(fd, buf.as_mut_ptr(), buf.len());
        close(fd);
        len
    };
    if len <= 0 {
        return false;
    }
    // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, the
    // state follows the last ") ".
    let b = &buf[..len as usize];
    match b.iter().rposition(|&c| c == b')') {
        Some(i) if i + 2 < b.len() => !matches!(b[i + 2], b'Z' | b'X' | b'x' | b'T' | b't'),
        _ => false,
    }
}

/// The lane was full (UNTIL_FULL/FLUSH): no slot was reserved.
#[derive(Debug, Clone, Copy)]
pub struct Full {
    /// A FLUSH stream's flusher should be woken (futex wake on
    /// `flush_wake`, after incrementing it).
    pub wake_flusher: bool,
    /// POSIX_TRACE_FLUSH: the event is not lost yet. The stream is flushed
    /// as by `posix_trace_flush`; a writer that can wait (futex on
    /// `space_wake`) reserves again once the flush freed slots, and counts
    /// the event lost ([`note_lost`]) only if it gives up. UNTIL_FULL: the
    /// stream suspended itself and the event is counted lost already.
    pub may_wait: bool,
}

/// The lane a writer uses: its thread (`pthread_self`, whose values for
/// the threads of one process lie one stack-plus-guard apart, an odd number
/// of pages for the usual power-of-two stack sizes, so consecutive threads
/// land in consecutive lanes) plus its process id (consecutive processes
/// too). Two writers sharing a lane is correct, only slower.
#[inline(always)]
pub fn lane_for<A, C>(h: &StreamHeaderOf<A, C>, thread: u64, pid: i32) -> usize {
    ((thread >> 12).wrapping_add(pid as u64) & (h.lanes as u64 - 1)) as usize
}

/// Reserves the next slot of `lane`: fetch-add under LOOP (overwriting
/// the oldest unread event sets the full and overrun flags), a
/// capacity-checked compare-exchange under UNTIL_FULL/FLUSH. A full
/// UNTIL_FULL stream suspends itself (at the time `now` gives, the time of
/// the refused event) and counts the event lost; a full FLUSH stream asks
/// for a flush (see [`Full::may_wait`]). The one definition of the
/// writers' side of the ring protocol, shared by `shm::StreamView` and
/// `no_std` shims.
#[inline(always)]
pub fn reserve<A, C>(
    h: &StreamHeaderOf<A, C>,
    lane: usize,
    now: impl FnOnce() -> u64,
) -> Result<u64, Full> {
    let cap = h.slot_count;
    let l = &h.lane[lane & (MAX_LANES - 1)];
    if h.stream_policy == POSIX_TRACE_LOOP {
        let pos = l.tail.0.fetch_add(1, Relaxed);
        if pos >= cap && pos - cap >= l.head.0.load(Relaxed) {
            // Overwrites an unread event: the window moves on.
            if h.full.load(Relaxed) == 0 {
                h.full.store(POSIX_TRACE_FULL as u32, Relaxed);
            }
            if h.overrun.load(Relaxed) == 0 {
                h.overrun.store(POSIX_TRACE_OVERRUN as u32, Relaxed);
            }
        }
        return Ok(pos);
    }
    reserve_room(l, cap).ok_or_else(|| lane_full(h, now))
}

/// Reserves the next slot of `l` if it has room (`tail - head < cap`):
/// the compare-exchange loop of a lane that never overwrites.
#[inline(always)]
fn reserve_room(l: &Lane, cap: u64) -> Option<u64> {
    let mut t = l.tail.0.load(Relaxed);
    loop {
        if t.wrapping_sub(l.head.0.load(Acquire)) >= cap {
            return None;
        }
        match l.tail.0.compare_exchange_weak(t, t + 1, Relaxed, Relaxed) {
            Ok(_) => return Some(t),
            Err(now) => t = now,
        }
    }
}

#[cold]
fn lane_full<A, C>(h: &StreamHeaderOf<A, C>, now: impl FnOnce() -> u64) -> Full {
    if is_closed(h.running.0.load(Relaxed)) {
        // Admitted before the stream was shut down, written after.
        h.late.fetch_add(1, Relaxed);
        return Full {
            wake_flusher: false,
            may_wait: false,
        };
    }
    h.full.store(POSIX_TRACE_FULL as u32, Relaxed);
    if h.stream_policy == POSIX_TRACE_FLUSH {
        return Full {
            wake_flusher: true,
            may_wait: true,
        };
    }
    if h.running
        .0
        .compare_exchange(POSIX_TRACE_RUNNING as u32, AUTO_SUSPENDED, Release, Relaxed)
        .is_ok()
    {
        h.suspended_ticks.store(now().max(1), Relaxed);
    }
    note_lost(h, 1);
    Full {
        wake_flusher: false,
        may_wait: false,
    }
}

/// Reserves a slot of the system lane: capacity-checked under every
/// policy (a system event never overwrites one), never suspends the
/// stream. A full system lane loses the event, counted in `lost` and in
/// `system_lost` (which the next system event recorded carries, see
/// [`SlotHeader::prog`]): `None` then. `Some((pos, lost_before))`: the
/// slot and the system events lost right before it.
pub fn reserve_system<A, C>(h: &StreamHeaderOf<A, C>) -> Option<(u64, u64)> {
    match reserve_room(&h.lane[system_lane(h)], h.slot_count) {
        Some(pos) => Some((pos, h.system_lost.swap(0, AcqRel))),
        None => {
            note_lost(h, 1);
            h.system_lost.fetch_add(1, AcqRel);
            None
        }
    }
}

/// Does the system lane have room for one more event?
pub fn system_room<A, C>(h: &StreamHeaderOf<A, C>) -> bool {
    let l = &h.lane[system_lane(h)];
    l.tail.0.load(Relaxed).wrapping_sub(l.head.0.load(Acquire)) < h.slot_count
}

/// Writes a reserved slot under its sequence word (odd while written, the
/// reader's seqlock check) with the concatenation of `parts` as payload,
/// truncated to the stream's limit for the event's kind.
///
/// # Safety
/// As for [`write_event`], and `pos` must have been returned by
/// [`reserve`] on `h` and `lane` and not yet published.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn publish<A, C>(
    h: &StreamHeaderOf<A, C>,
    lane: usize,
    pos: u64,
    id: u32,
    parts: &[&[u8]],
    pid: i32,
    thread: u64,
    prog: u64,
    ticks: u64,
) {
    // SAFETY: the caller's guarantee.
    unsafe {
        let slot = slot_ptr(h, lane, pos);
        claim(slot, pos, pid, thread);
        complete(h, slot, pos, (id, pid, thread), parts, prog, ticks);
    }
}

/// Writes the rest of a [`claim`]ed slot (slot `pos`, at `slot`) and
/// publishes it (even sequence word).
///
/// # Safety
/// As for [`publish`], and the slot was claimed by this writer.
#[inline(always)]
unsafe fn complete<A, C>(
    h: &StreamHeaderOf<A, C>,
    slot: *mut SlotHeader,
    pos: u64,
    (id, pid, thread): (u32, i32, u64),
    parts: &[&[u8]],
    prog: u64,
    ticks: u64,
) {
    let limit = if id >= USER_EVENT_FIRST {
        h.max_data_size as usize
    } else {
        h.slot_data as usize
    };
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let (len, truncation) = if total > limit {
        (limit, POSIX_TRACE_TRUNCATED_RECORD)
    } else {
        (total, POSIX_TRACE_NOT_TRUNCATED)
    };
    // SAFETY: the caller guarantees the slots follow the header; we own
    // slot `pos` of `lane` (claimed: odd sequence word) until we publish
    // it; len <= slot_data.
    unsafe {
        ptr::addr_of_mut!((*slot).event_id).write_volatile(id);
        ptr::addr_of_mut!((*slot).pid).write_volatile(pid);
        ptr::addr_of_mut!((*slot).thread).write_volatile(thread);
        ptr::addr_of_mut!((*slot).data_len).write_volatile(len as u32);
        ptr::addr_of_mut!((*slot).truncation).write_volatile(truncation);
        ptr::addr_of_mut!((*slot).prog).write_volatile(prog);
        ptr::addr_of_mut!((*slot).ticks).write_volatile(ticks);
        let mut dst = (slot as *mut u8).add(SLOT_HEADER);
        let mut room = len;
        for p in parts {
            let n = p.len().min(room);
            copy_payload(p.as_ptr(), dst, n);
            dst = dst.add(n);
            room -= n;
        }
        (*slot).seq.store(2 * pos + 2, Release);
    }
}

/// Copies an event's payload into its slot. The preload shim, built with
/// `--cfg tracekit_nolibc`, copies with `rep movsb` rather than calling
/// libc's `memcpy`: in a fork child, the first call of a libc function
/// costs a page fault.
///
/// The usual small payload (8 to 32 bytes) is copied inline with two
/// overlapping unaligned loads and stores: no call, no `rep movsb` start-up.
#[inline(always)]
unsafe fn copy_payload(src: *const u8, dst: *mut u8, n: usize) {
    if (8..=32).contains(&n) {
        // SAFETY: as below; each access lies within the `n` bytes (the two
        // halves overlap when `n` is below 32 or 16).
        unsafe {
            if n >= 16 {
                let head = ptr::read_unaligned(src.cast::<[u8; 16]>());
                let tail = ptr::read_unaligned(src.add(n - 16).cast::<[u8; 16]>());
                ptr::write_unaligned(dst.cast::<[u8; 16]>(), head);
                ptr::write_unaligned(dst.add(n - 16).cast::<[u8; 16]>(), tail);
            } else {
                let head = ptr::read_unaligned(src.cast::<u64>());
                let tail = ptr::read_unaligned(src.add(n - 8).cast::<u64>());
                ptr::write_unaligned(dst.cast::<u64>(), head);
                ptr::write_unaligned(dst.add(n - 8).cast::<u64>(), tail);
            }
        }
        return;
    }
    #[cfg(all(tracekit_nolibc, target_arch = "x86_64"))]
    // SAFETY: the caller passes `n` readable bytes at `src` and `n`
    // writable ones at `dst`, not overlapping; the direction flag is clear
    // by the ABI.
    unsafe {
        core::arch::asm!("rep movsb", inout("rcx") n => _, inout("rsi") src => _,
                         inout("rdi") dst => _, options(nostack, preserves_flags));
    }
    #[cfg(not(all(tracekit_nolibc, target_arch = "x86_64")))]
    // SAFETY: as above.
    unsafe {
        ptr::copy_nonoverlapping(src, dst, n)
    }
}
