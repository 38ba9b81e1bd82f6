//! The shared-memory stream: header, event-type registry and the lock-free
//! ring of fixed-size event slots.
//!
//! One stream is one `MAP_SHARED` mapping of a memfd or a `/dev/shm` file.
//! Every piece of state that writers touch lives in the mapping and is only
//! accessed with atomics, so the same code works for threads of one process
//! and for many processes that map the same file. Writers never allocate,
//! never lock and never make a system call (the one exception: waking the
//! controller's flusher when a `POSIX_TRACE_FLUSH` stream fills up, a single
//! `futex` wake, which is async-signal-safe).
//!
//! ## Ring protocol
//! A stream has `lanes` rings ([`crate::producer::Lane`]) of `slot_count`
//! slots each; a writer uses the lane of its thread and process, so
//! threads writing at once do not contend for one counter (the merge by
//! timestamp below restores one order). One more ring, the system lane,
//! takes the system events the controller records. In each lane, `tail`
//! counts reserved slots and `head` counts slots the (single) consumer has
//! finished with. The consumer reads ahead of `head` with cursors of its
//! own and publishes them ([`StreamView::commit`]) once what it read is
//! safe: at once when an analyzer reads the stream, after the log is
//! written when the stream is flushed, so slots are never reused before
//! their events are in the log (a controller killed mid-flush loses
//! nothing: its keeper reads them again). Slot `pos` lives at index `pos & (slot_count - 1)` of its
//! lane and carries a sequence word: `2*pos+1` while being written,
//! `2*pos+2` once complete. The consumer reads a slot like a seqlock
//! (sequence, copy, sequence again), so under `POSIX_TRACE_LOOP`, where
//! writers may overwrite a slot being read, a torn copy is detected and
//! counted as lost. Under `UNTIL_FULL` and `FLUSH` a writer reserves with
//! a compare-exchange that fails when `tail - head == slot_count`, so
//! nothing unread is ever overwritten (so the consumer may leave a
//! complete slot's payload in place until it commits: [`RawEvent::in_ring`]);
//! a full lane suspends an UNTIL_FULL
//! stream, and makes a writer of a FLUSH stream wake the flusher and wait
//! for the slots the flush frees (the one case where a writer makes system
//! calls). A writer reads the clock after reserving and after the lane's
//! previous slot is published, so each lane is in time order. The
//! consumer takes, among the lanes' oldest unread events, the one with the
//! smallest timestamp; while a lane's oldest slot is reserved but not
//! complete it waits (that event may be the oldest), and a lane that was
//! empty when it looked but has a slot reserved since makes it look again
//! (also once its clock is [`IN_FLIGHT_NS`] past the event: a writer's
//! plain `rdtsc` may precede its reservation's arrival). A writer that
//! dies between reserving and completing leaves one slot that never
//! completes; the consumer skips it after a grace period and counts it
//! lost, so a crash loses at most the event being written.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{fence, Ordering::*};

use crate::attr::TraceAttr;
use crate::clock::Calibration;
use crate::consts::*;
use crate::eventset::{EventSet, EVENTSET_WORDS};
use crate::producer::Stamp;

// The layout types live in `producer` (shared with `no_std` writers such
// as the preload shim).
pub use crate::producer::{
    Lane, Padded, RegEntry, Registry, SlotHeader, MAX_LANES, SLOT_HEADER, STREAM_MAGIC,
    STREAM_VERSION,
};

/// A slot of a stream: lane and position.
pub type SlotRef = (usize, u64);
/// The first bytes of a stream mapping.
pub type StreamHeader = crate::producer::StreamHeaderOf<TraceAttr, Calibration>;
/// Largest system event payload: the two event sets of `POSIX_TRACE_FILTER`.
pub const MAX_SYSTEM_DATA: usize = 2 * EVENTSET_WORDS * 8;

/// Payload room and slot size for a stream with `max_data_size`.
pub fn slot_geometry(max_data_size: u64) -> (usize, usize) {
    let data = (max_data_size as usize)
        .max(MAX_SYSTEM_DATA)
        .next_multiple_of(8);
    (data, SLOT_HEADER + data)
}

pub fn header_size() -> usize {
    std::mem::size_of::<StreamHeader>().next_multiple_of(4096)
}

/// A mapping of a stream (owned: unmapped on drop unless leaked).
pub struct Region {
    base: *mut u8,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is shared memory accessed only through atomics and
// the seqlock protocol above; the pointer itself is immutable.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    fn map(fd: OwnedFd, len: usize) -> io::Result<Region> {
        // SAFETY: mapping a file we hold open, shared, at a kernel-chosen address.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region {
            base: p.cast(),
            len,
            fd,
        })
    }

    /// An anonymous stream (memfd): shared with children across `fork`.
    pub fn create_anon(len: usize) -> io::Result<Region> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"tracekit-posix".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::sized(fd, len)
    }

    /// A stream other processes can open by path.
    pub fn create_named(path: &Path, len: usize) -> io::Result<Region> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        Self::sized(f.into(), len)
    }

    fn sized(fd: OwnedFd, len: usize) -> io::Result<Region> {
        // SAFETY: fd is a valid descriptor we own.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Self::map(fd, len)
    }

    /// Maps an existing stream by path, without allocating (usable from
    /// inside `malloc`): `path` must be NUL-terminated.
    pub fn open_cstr(path: &CStr) -> io::Result<Region> {
        // SAFETY: path is NUL-terminated.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and is ours.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::open_fd(fd)
    }

    /// Maps an existing stream from a descriptor, checking its header.
    pub fn open_fd(fd: OwnedFd) -> io::Result<Region> {
        // SAFETY: st is a valid out-pointer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is valid.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let len = st.st_size as usize;
        if len < header_size() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let r = Self::map(fd, len)?;
        if !crate::producer::is_valid(r.view().header(), len) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(r)
    }

    pub fn view(&self) -> StreamView {
        StreamView { base: self.base }
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Gives the mapping up without unmapping it, for streams that writers
    /// of this process may still touch; the slot pages are released.
    pub fn leak(self) {
        let hs = header_size();
        if self.len > hs {
            // SAFETY: releases the pages of our own mapping past the header;
            // a late write re-faults a zero page, which is harmless.
            unsafe {
                libc::madvise(self.base.add(hs).cast(), self.len - hs, libc::MADV_REMOVE);
            }
        }
        std::mem::forget(self);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we created.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Lanes for a new stream: one per CPU (rounded up to a power of two), at
/// least 4 so that a handful of threads rarely share one, at most
/// [`MAX_LANES`]. Memory is reserved per lane but only touched by the
/// lanes writers use.
pub fn lane_count() -> u32 {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .next_power_of_two()
        .clamp(4, MAX_LANES) as u32
}

/// Bytes of a stream mapping; `None` if that does not fit in a `usize`.
pub fn stream_len(slot_count: u64, slot_size: usize, lanes: u32) -> Option<usize> {
    usize::try_from(slot_count)
        .ok()?
        .checked_mul(lanes as usize + 1)?
        .checked_mul(slot_size)?
        .checked_add(header_size())
}

/// Initialises a fresh mapping as a stream of `lanes` lanes of
/// `slot_count` slots.
pub fn init_stream(
    r: &Region,
    attr: &TraceAttr,
    policy: i32,
    with_log: bool,
    slot_count: u64,
    lanes: u32,
) {
    let (data, slot) = slot_geometry(attr.max_data_size);
    // SAFETY: the mapping is at least header_size() long, zero-filled (new
    // file), and nobody else sees it yet.
    let h = unsafe { &mut *(r.base as *mut StreamHeader) };
    h.version = STREAM_VERSION;
    h.header_size = header_size() as u32;
    h.slot_size = slot as u32;
    h.slot_data = data as u32;
    h.slot_count = slot_count;
    h.lanes = lanes;
    h.max_data_size = attr.max_data_size as u32;
    h.stream_policy = policy;
    h.inheritance = attr.inheritance;
    h.with_log = with_log as u32;
    h.creator_pid = crate::traced::cached_pid();
    h.attr = *attr;
    h.calibration = crate::clock::calibration();
    let unnamed = system_event_name(POSIX_TRACE_UNNAMED_USEREVENT).unwrap_or_default();
    let e = &mut h.registry.entries[0];
    e.name[..unnamed.len()].copy_from_slice(unnamed.as_bytes());
    e.len = unnamed.len() as u32;
    e.state.store(2, Relaxed);
    fence(Release);
    h.magic = STREAM_MAGIC;
}

/// Slot count for a stream-min-size: a power of two, at least 4; `None`
/// if that power of two does not fit in a `u64`.
pub fn slot_count_for(stream_size: u64, slot_size: usize) -> Option<u64> {
    stream_size
        .div_ceil((slot_size as u64).max(1))
        .max(4)
        .checked_next_power_of_two()
}

/// A raw view of a mapped stream. Copyable; valid while the mapping is.
#[derive(Clone, Copy)]
pub struct StreamView {
    base: *mut u8,
}

// SAFETY: all shared state in the mapping is accessed through atomics or
// the seqlock protocol; the view is just an address.
unsafe impl Send for StreamView {}
// SAFETY: as above.
unsafe impl Sync for StreamView {}

/// Outcome of one consumer step.
pub enum Take {
    /// An event; `after_loss`: events of its ring were lost right before.
    Event {
        after_loss: bool,
    },
    Empty,
    /// This slot (the oldest unread of its lane) is reserved but not
    /// complete yet.
    Busy(SlotRef),
}

/// Where the consumer reads: a position in each ring (writers' lanes,
/// then the system lane), and whether events of that ring were lost since
/// the last one read from it.
#[derive(Clone, Debug, Default)]
pub struct Cursor {
    pub pos: Vec<u64>,
    pub loss: Vec<bool>,
    /// The stream's raw clock as last read by the reader, ordered
    /// ([`crate::producer::raw_now_ordered`]): see [`IN_FLIGHT_NS`].
    pub now: u64,
}

impl Cursor {
    pub fn at(pos: Vec<u64>) -> Cursor {
        let loss = vec![false; pos.len()];
        Cursor { pos, loss, now: 0 }
    }
}

/// How long, at most, a writer's reservation may still be on its way to
/// memory after its (plain, unordered) TSC read: `rdtsc` may run ahead of
/// the locked add that reserves the slot, by about that add's latency (a
/// cache line fetched from another core: well under a microsecond; an
/// interrupt in between discards the early read). Before taking an event
/// while some lane looked empty, the reader makes sure its own ordered
/// clock is this far past the event and looks at those lanes again: a
/// writer that read its clock before the event's time has made its
/// reservation visible by then.
pub const IN_FLIGHT_NS: u64 = 50_000;

/// An event copied out of the ring.
#[derive(Clone, Debug, Default)]
pub struct RawEvent {
    pub event_id: u32,
    pub pid: i32,
    pub truncation: i32,
    pub thread: u64,
    pub prog: u64,
    pub ticks: u64,
    /// The payload, when copied out (a `POSIX_TRACE_LOOP` stream, whose
    /// writers may overwrite an unread slot).
    pub data: Vec<u8>,
    /// The payload left in the ring (offset in the mapping, length): under
    /// `UNTIL_FULL` and `FLUSH` no writer reuses a slot before the consumer
    /// commits it, so it is read in place ([`StreamView::payload`]).
    pub in_ring: Option<(usize, usize)>,
}

impl StreamView {
    /// # Safety
    /// `base` must point at a live stream mapping.
    pub unsafe fn from_ptr(base: *mut u8) -> StreamView {
        StreamView { base }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.base
    }

    #[inline(always)]
    pub fn header(&self) -> &StreamHeader {
        // SAFETY: a StreamView is only made from a live, initialised mapping.
        unsafe { &*(self.base as *const StreamHeader) }
    }

    #[inline(always)]
    fn slot(&self, lane: usize, pos: u64) -> *mut SlotHeader {
        let h = self.header();
        // SAFETY: the mapping was checked when mapped (`is_valid`) and
        // lane <= h.lanes.
        unsafe { crate::producer::slot_ptr(h, lane.min(crate::producer::system_lane(h)), pos) }
    }

    /// Every ring: the writers' lanes, then the system lane.
    fn lanes(&self) -> &[Lane] {
        let h = self.header();
        &h.lane[..=crate::producer::system_lane(h)]
    }

    /// The writers' lanes.
    fn user_lanes(&self) -> &[Lane] {
        let h = self.header();
        &h.lane[..crate::producer::system_lane(h)]
    }

    /// Number of rings (writers' lanes and the system lane): the length of
    /// a consumer's cursor array.
    pub fn rings(&self) -> usize {
        self.lanes().len()
    }

    /// The consumer's starting cursors: what it finished with so far.
    pub fn heads(&self) -> Vec<u64> {
        self.lanes()
            .iter()
            .map(|l| l.head.0.load(Acquire))
            .collect()
    }

    #[inline(always)]
    pub fn is_filtered(&self, id: u32) -> bool {
        crate::producer::is_filtered(self.header(), id)
    }

    /// Should an event of type `id` be recorded now? (See
    /// [`crate::producer::admit`]: an event refused because an
    /// UNTIL_FULL/FLUSH stream stopped itself is counted as lost.)
    #[inline(always)]
    pub fn admits(&self, id: u32) -> bool {
        crate::producer::admit(self.header(), id).is_ok()
    }

    /// [`Self::admits`] for a type the caller knows passes the filter:
    /// is the stream running?
    #[inline(always)]
    pub fn admits_unfiltered(&self) -> bool {
        crate::producer::admit_running(self.header()).is_ok()
    }

    /// Records an event if the stream is running and `id` passes the
    /// filter. The hot path: no allocation, no lock, no system call.
    #[inline(always)]
    pub fn record(&self, id: u32, data: &[u8], pid: i32, thread: u64, prog: u64) {
        if self.admits(id) {
            self.write(id, data, pid, thread, prog);
        }
    }

    /// Records a system event caused by the controller (or its flusher or
    /// keeper) into the system lane, regardless of the running state;
    /// still honours the filter. Returns false if lost (system lane full).
    /// The clock is read after the slot is reserved, under a process-wide
    /// lock, so the system lane is in time order.
    pub fn record_system(&self, id: u32, data: &[u8], pid: i32, thread: u64) -> bool {
        static SYSTEM_EVENTS: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _order = lock(&SYSTEM_EVENTS);
        self.record_system_alone(id, data, pid, thread)
    }

    /// Slots of the system lane the consumer has finished with (changes
    /// whenever a reader makes progress there).
    pub fn system_consumed(&self) -> u64 {
        let h = self.header();
        h.lane[crate::producer::system_lane(h)].head.0.load(Acquire)
    }

    /// Does the system lane have room for one more system event?
    pub fn system_room(&self) -> bool {
        crate::producer::system_room(self.header())
    }

    /// [`Self::record_system`] for a process that is the stream's only
    /// system-event writer and must not take the process-wide lock (a
    /// keeper: forked while another thread may have held it).
    pub fn record_system_alone(&self, id: u32, data: &[u8], pid: i32, thread: u64) -> bool {
        if self.is_filtered(id) {
            return true;
        }
        let h = self.header();
        let Some((pos, lost_before)) = crate::producer::reserve_system(h) else {
            return false;
        };
        let ticks = self.now();
        // SAFETY: the view's mapping is a valid stream and `pos` was just
        // reserved in the system lane. Its `prog` carries the system
        // events lost right before it (see `SlotHeader::prog`).
        unsafe {
            crate::producer::publish(
                h,
                crate::producer::system_lane(h),
                pos,
                id,
                &[data],
                pid,
                thread,
                lost_before,
                ticks,
            )
        };
        true
    }

    /// The stream's raw clock now.
    pub fn now(&self) -> u64 {
        crate::clock::raw_now(self.header().calibration.kind)
    }

    /// Wakes the flusher of a stream with log.
    pub fn wake_flusher(&self) {
        let h = self.header();
        h.flush_wake.fetch_add(1, Release);
        futex_wake(&h.flush_wake, 1);
    }

    /// Sleeps until woken by [`Self::wake_flusher`] or `timeout_ms` passes.
    pub fn wait_flusher(&self, seen: u32, timeout_ms: u64) {
        futex_wait(&self.header().flush_wake, seen, timeout_ms);
    }

    /// Writes an event without checking state or filter (see
    /// [`Self::admits`]), by [`crate::producer::write`]: the event's time
    /// is read once its slot is reserved and the lane's previous slot
    /// published, so a lane's events are in time order and an event the
    /// consumer has not seen reserved yet is newer than any it took (the
    /// merge is exact).
    #[inline(always)]
    pub fn write(&self, id: u32, data: &[u8], pid: i32, thread: u64, prog: u64) -> bool {
        let h = self.header();
        let stamp = Stamp::Now(h.calibration.kind);
        let lane = crate::producer::lane_for(h, thread, pid);
        // SAFETY: the view's mapping is a valid stream (checked at open);
        // `lane_for` gives a writers' lane.
        match unsafe { crate::producer::write(h, lane, id, &[data], pid, thread, prog, stamp) } {
            Ok(()) => true,
            Err(full) => self.write_when_full(full, lane, id, data, pid, thread, prog),
        }
    }

    /// A full lane: an UNTIL_FULL stream lost the event already; a FLUSH
    /// stream is flushed while the writer waits for room (nothing lost
    /// unless the flush makes no progress for [`FLUSH_WAIT_LIMIT`]). After
    /// a wait the event is admitted again: the controller may have
    /// stopped the stream or filtered the type out meanwhile.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn write_when_full(
        &self,
        mut full: crate::producer::Full,
        lane: usize,
        id: u32,
        data: &[u8],
        pid: i32,
        thread: u64,
        prog: u64,
    ) -> bool {
        let h = self.header();
        let stamp = Stamp::Now(h.calibration.kind);
        let mut progress_at = std::time::Instant::now();
        let mut heads = self.lanes()[lane].head.0.load(Acquire);
        loop {
            if full.wake_flusher {
                self.wake_flusher();
            }
            if !full.may_wait {
                return false;
            }
            if h.shutdown.load(Acquire) != 0 {
                // Shut down while this writer waited for room: the event
                // goes nowhere, counted (as written after shutdown if
                // the stream still counts those).
                if crate::producer::is_closed(h.running.0.load(Relaxed)) {
                    h.late.fetch_add(1, Relaxed);
                } else {
                    crate::producer::note_lost(h, 1);
                }
                return false;
            }
            let seen = h.space_wake.load(Acquire);
            // SAFETY: as in `write`.
            match unsafe { crate::producer::write(h, lane, id, &[data], pid, thread, prog, stamp) }
            {
                Ok(()) => return true,
                Err(f) => full = f,
            }
            let now_heads = self.lanes()[lane].head.0.load(Acquire);
            if now_heads != heads {
                heads = now_heads;
                progress_at = std::time::Instant::now();
            } else if progress_at.elapsed() > FLUSH_WAIT_LIMIT {
                // Nobody flushes (the controller and its keeper are gone,
                // or the flush is stuck): give the event up, counted.
                crate::producer::note_lost(h, 1);
                return false;
            }
            h.space_waiters.fetch_add(1, AcqRel);
            futex_wait(&h.space_wake, seen, 10);
            h.space_waiters.fetch_sub(1, AcqRel);
            if !self.admits(id) {
                // Stopped or filtered out while waiting: not recorded,
                // not a loss (a stream that suspended itself counts it).
                return false;
            }
        }
    }

    /// Takes the next event (single consumer) at the consumer's cursor
    /// (one position per ring, see [`Self::rings`]): of the rings' oldest
    /// unread events, the one with the smallest timestamp. Copies into
    /// `out` and advances the cursor; the slots stay reserved for the
    /// consumer until it [`commit`](Self::commit)s. Events lost in a ring
    /// (overwritten under LOOP, or skipped) are reported with the first
    /// event taken from that ring after them, so the loss stands at its
    /// place in time among the other rings' events. With `in_place`, the
    /// payload of a stream other than LOOP is left in its slot
    /// ([`RawEvent::in_ring`]).
    pub fn take(&self, cursor: &mut Cursor, out: &mut RawEvent, in_place: bool) -> Take {
        let h = self.header();
        let cap = h.slot_count;
        'scan: loop {
            let mut best: Option<(usize, u64, u64)> = None;
            // Rings seen empty: (ring, tail then).
            let mut empty = [(0usize, 0u64); MAX_LANES + 1];
            let mut n_empty = 0;
            for (k, l) in self.lanes().iter().enumerate() {
                let Some(&head) = cursor.pos.get(k) else {
                    break;
                };
                let tail = l.tail.0.load(Acquire);
                if head >= tail {
                    empty[n_empty] = (k, tail);
                    n_empty += 1;
                    continue;
                }
                if tail - head > cap {
                    // LOOP: the oldest unread events were overwritten.
                    let lost = tail - cap - head;
                    cursor.pos[k] = tail - cap;
                    cursor.loss[k] = true;
                    h.lost.fetch_add(lost, Relaxed);
                    continue 'scan;
                }
                let slot = self.slot(k, head);
                // SAFETY: slot is inside the mapping; the timestamp is read
                // volatile and validated by the sequence word afterwards.
                let ticks = unsafe {
                    let s1 = (*slot).seq.load(Acquire);
                    let want = 2 * head + 2;
                    if s1 < want {
                        return Take::Busy((k, head));
                    }
                    let t = ptr::addr_of!((*slot).ticks).read_volatile();
                    fence(Acquire);
                    if s1 != want || (*slot).seq.load(Relaxed) != s1 {
                        // Overwritten before we could read it.
                        cursor.pos[k] = head + 1;
                        cursor.loss[k] = true;
                        h.lost.fetch_add(1, Relaxed);
                        continue 'scan;
                    }
                    t
                };
                if best.is_none_or(|(_, _, t)| ticks < t) {
                    best = Some((k, head, ticks));
                }
            }
            let Some((k, head, ticks)) = best else {
                return Take::Empty;
            };
            // A ring that was empty when scanned and has a slot reserved
            // since may hold an older event than the one chosen (its
            // writer read its clock after we looked): look again. Once no
            // ring changed, any later event is newer than the chosen one
            // (writers read the clock after reserving).
            if empty[..n_empty]
                .iter()
                .any(|&(e, tail)| self.lanes()[e].tail.0.load(Acquire) != tail)
            {
                continue 'scan;
            }
            // Writers read the TSC without ordering it after their
            // reservation (see `IN_FLIGHT_NS`): a reservation not visible
            // yet may carry an older time. Once the clock is far enough
            // past the chosen event, look again.
            if n_empty > 0 && h.calibration.kind == crate::producer::CLOCK_TSC {
                let grace = (IN_FLIGHT_NS as f64 / h.calibration.ns_per_tick.max(1e-6)) as i64;
                let age = |now: u64| (now as i64).wrapping_sub(ticks as i64);
                if age(cursor.now) < grace {
                    let kind = h.calibration.kind;
                    let start = crate::producer::raw_now_ordered(kind);
                    cursor.now = start;
                    while age(cursor.now) < grace {
                        if (cursor.now as i64).wrapping_sub(start as i64) >= 2 * grace {
                            // A stamp ahead of this CPU's clock (a skew the
                            // TSC should not have): not waited out.
                            cursor.now = ticks.wrapping_add(grace as u64);
                            break;
                        }
                        std::hint::spin_loop();
                        cursor.now = crate::producer::raw_now_ordered(kind);
                    }
                    continue 'scan;
                }
            }
            let slot = self.slot(k, head);
            cursor.pos[k] = head + 1;
            // SAFETY: slot is inside the mapping; fields are read volatile
            // and validated by the sequence word afterwards (seqlock read).
            unsafe {
                let want = 2 * head + 2;
                let s1 = (*slot).seq.load(Acquire);
                if s1 == want {
                    out.event_id = ptr::addr_of!((*slot).event_id).read_volatile();
                    out.pid = ptr::addr_of!((*slot).pid).read_volatile();
                    let len = (ptr::addr_of!((*slot).data_len).read_volatile() as usize)
                        .min(h.slot_data as usize);
                    out.truncation = ptr::addr_of!((*slot).truncation).read_volatile();
                    out.thread = ptr::addr_of!((*slot).thread).read_volatile();
                    out.prog = ptr::addr_of!((*slot).prog).read_volatile();
                    out.ticks = ptr::addr_of!((*slot).ticks).read_volatile();
                    let system_lost_before = if k == crate::producer::system_lane(h) {
                        std::mem::take(&mut out.prog)
                    } else {
                        0
                    };
                    out.data.clear();
                    if !in_place || h.stream_policy == POSIX_TRACE_LOOP {
                        out.in_ring = None;
                        out.data.reserve(len);
                        ptr::copy_nonoverlapping(
                            (slot as *const u8).add(SLOT_HEADER),
                            out.data.as_mut_ptr(),
                            len,
                        );
                        out.data.set_len(len);
                    } else {
                        // Complete (s1 == want) and not reusable before the
                        // commit: the payload stays where it is.
                        let at = (slot as *const u8).add(SLOT_HEADER).offset_from(self.base);
                        out.in_ring = Some((at as usize, len));
                    }
                    fence(Acquire);
                    let s2 = (*slot).seq.load(Relaxed);
                    if s2 == s1 {
                        // System events lost before this one (system lane
                        // full) are reported right before it, like losses
                        // of the other rings.
                        let lost = std::mem::take(&mut cursor.loss[k]);
                        return Take::Event {
                            after_loss: lost || system_lost_before != 0,
                        };
                    }
                }
            }
            // Overwritten while (or before) we read it.
            cursor.loss[k] = true;
            h.lost.fetch_add(1, Relaxed);
        }
    }

    /// The payload of the event [`Self::take`] put in `raw`: in `raw` (a
    /// LOOP stream) or in the ring.
    ///
    /// # Safety
    /// The slot `raw` was taken from must not have been committed since
    /// (until then no writer touches it), nor may it be while the slice lives.
    pub unsafe fn payload<'a>(&'a self, raw: &'a RawEvent) -> &'a [u8] {
        match raw.in_ring {
            // SAFETY: `take` checked the range lies in a slot of the
            // mapping; the caller guarantees nobody writes it meanwhile.
            Some((at, len)) => unsafe { std::slice::from_raw_parts(self.base.add(at), len) },
            None => &raw.data,
        }
    }

    /// Hands the slots before `cursor` back to the writers, and wakes
    /// writers waiting for room.
    pub fn commit(&self, cursor: &Cursor) {
        let h = self.header();
        for (l, &c) in self.lanes().iter().zip(&cursor.pos) {
            if l.head.0.load(Relaxed) < c {
                l.head.0.store(c, Release);
            }
        }
        h.space_wake.fetch_add(1, Release);
        if h.space_waiters.load(Acquire) != 0 {
            futex_wake(&h.space_wake, i32::MAX);
        }
    }

    /// The process writing slot `(lane, pos)`, if the slot is claimed
    /// (a writer is in the middle of its event) for that position.
    pub fn slot_holder(&self, (lane, pos): SlotRef) -> Option<i32> {
        // SAFETY: the slot lies in the mapping.
        crate::producer::slot_holder(unsafe { &*self.slot(lane, pos) }, pos)
    }

    /// Gives up on a slot whose writer never completed it.
    pub fn skip_stuck(&self, cursor: &mut Cursor, (lane, pos): SlotRef) {
        if cursor.pos.get(lane) == Some(&pos) {
            cursor.pos[lane] = pos + 1;
            cursor.loss[lane] = true;
            crate::producer::note_lost(self.header(), 1);
        }
    }

    /// Events currently held by the fullest writers' lane (approximate
    /// under concurrent writes): what decides whether the stream is full.
    pub fn fill(&self) -> u64 {
        let h = self.header();
        self.user_lanes()
            .iter()
            .map(|l| {
                let t = l.tail.0.load(Relaxed);
                let hd = l.head.0.load(Relaxed);
                t.saturating_sub(hd).min(h.slot_count)
            })
            .max()
            .unwrap_or(0)
    }

    /// Most events the stream can hold (every ring full).
    pub fn capacity(&self) -> u64 {
        self.header().slot_count * self.lanes().len() as u64
    }

    /// Drops every unread event (`posix_trace_clear`); `cursor` is the
    /// consumer's.
    pub fn discard_all(&self, cursor: &mut Cursor) {
        for (l, c) in self.lanes().iter().zip(cursor.pos.iter_mut()) {
            *c = l.tail.0.load(Acquire);
        }
        cursor.loss.iter_mut().for_each(|f| *f = false);
        self.commit(cursor);
    }

    pub fn filter(&self) -> EventSet {
        let mut s = EventSet::empty();
        for (b, w) in s.bits.iter_mut().zip(&self.header().filter) {
            *b = w.load(Relaxed);
        }
        s
    }

    pub fn set_filter(&self, set: &EventSet) {
        for (w, b) in self.header().filter.iter().zip(set.bits) {
            w.store(b, Relaxed);
        }
    }

    /// Finds or adds `name` in the stream's table. `None` if the name is
    /// too long; the unnamed event when the table is full. Lock-free: an
    /// entry is claimed with a compare-exchange, so processes can register
    /// concurrently; a claimant that died mid-way is skipped after a while.
    pub fn register(&self, name: &[u8]) -> Option<u32> {
        if name.len() > TRACE_EVENT_NAME_MAX {
            return None;
        }
        let reg = &self.header().registry;
        for (i, e) in reg.entries.iter().enumerate() {
            let mut spins = 0u32;
            loop {
                match e.state.load(Acquire) {
                    2 => {
                        if entry_name(e) == name {
                            return Some(USER_EVENT_FIRST + i as u32);
                        }
                        break;
                    }
                    0 => {
                        if e.state.compare_exchange(0, 1, Acquire, Relaxed).is_ok() {
                            let ep = e as *const RegEntry as *mut RegEntry;
                            // SAFETY: we own the entry while its state is 1.
                            unsafe {
                                let dst = ptr::addr_of_mut!((*ep).name) as *mut u8;
                                ptr::write_bytes(dst, 0, TRACE_EVENT_NAME_MAX + 1);
                                ptr::copy_nonoverlapping(name.as_ptr(), dst, name.len());
                                ptr::addr_of_mut!((*ep).len).write(name.len() as u32);
                            }
                            e.state.store(2, Release);
                            return Some(USER_EVENT_FIRST + i as u32);
                        }
                    }
                    _ => {
                        spins += 1;
                        if spins > 1 << 20 {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                }
            }
        }
        Some(POSIX_TRACE_UNNAMED_USEREVENT)
    }

    /// The name of a user event type, if registered.
    pub fn user_name(&self, id: u32) -> Option<&[u8]> {
        let i = id.checked_sub(USER_EVENT_FIRST)? as usize;
        let e = self.header().registry.entries.get(i)?;
        (e.state.load(Acquire) == 2).then(|| entry_name(e))
    }

    /// Every event type of the stream: system types, then user types.
    pub fn type_ids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = SYSTEM_EVENT_NAMES.iter().map(|(i, _)| *i).collect();
        v.retain(|&i| i != POSIX_TRACE_UNNAMED_USEREVENT);
        for i in 0..TRACE_USER_EVENT_MAX as u32 {
            if self.user_name(USER_EVENT_FIRST + i).is_some() {
                v.push(USER_EVENT_FIRST + i);
            }
        }
        v
    }

    pub fn type_name(&self, id: u32) -> Option<Vec<u8>> {
        if id >= USER_EVENT_FIRST {
            self.user_name(id).map(<[u8]>::to_vec)
        } else {
            system_event_name(id).map(|s| s.as_bytes().to_vec())
        }
    }
}

fn entry_name(e: &RegEntry) -> &[u8] {
    &e.name[..(e.len as usize).min(TRACE_EVENT_NAME_MAX)]
}

/// How long a writer of a full POSIX_TRACE_FLUSH stream waits for a flush
/// that frees no slot before it gives the event up (counted lost).
pub const FLUSH_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Sleeps on a futex word of a stream mapping (shared, not PRIVATE: the
/// waker may be another process) until woken, `timeout_ms` passes or the
/// word no longer equals `seen`.
fn futex_wait(word: &std::sync::atomic::AtomicU32, seen: u32, timeout_ms: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_nsec: ((timeout_ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: futex wait on a word of a live mapping with a relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes up to `n` sleepers on a futex word of a stream mapping (shared,
/// not PRIVATE: they may be other processes). Async-signal-safe.
fn futex_wake(word: &std::sync::atomic::AtomicU32, n: i32) {
    // SAFETY: a futex wake on a word of a live mapping.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, n);
    }
}

thread_local! {
    /// Locks of the engine this thread holds ([`holds_a_lock`]): a plain
    /// counter in static thread-local storage, readable from a signal
    /// handler.
    static LOCKS_HELD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A lock of the engine's, counted per thread while held: `_exit` called
/// from a signal handler that interrupted this thread inside the engine
/// must not wait for a lock the thread itself holds ([`holds_a_lock`]).
pub(crate) struct Locked<'a, T>(std::mem::ManuallyDrop<std::sync::MutexGuard<'a, T>>);

impl<T> std::ops::Deref for Locked<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Locked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> Drop for Locked<'_, T> {
    fn drop(&mut self) {
        // Unlock first, then stop counting it.
        // SAFETY: the guard is dropped once, here, and not used after.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.0) };
        LOCKS_HELD.with(|n| n.set(n.get() - 1));
    }
}

/// Takes one of the engine's locks (a poisoned lock is taken anyway: the
/// state it guards stays usable), counted while held.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> Locked<'_, T> {
    LOCKS_HELD.with(|n| n.set(n.get() + 1));
    Locked(std::mem::ManuallyDrop::new(
        m.lock().unwrap_or_else(|e| e.into_inner()),
    ))
}

/// Does this thread hold one of the engine's locks (it is inside the
/// engine: a signal handler running on it must not take them)?
pub(crate) fn holds_a_lock() -> bool {
    LOCKS_HELD.with(|n| n.get()) != 0
}
