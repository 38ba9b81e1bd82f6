//! Reading a stream: the single consumer that takes events in time order
//! and synthesises the system events reading produces (OVERFLOW/RESUME
//! around losses, the automatic STOP/START of UNTIL_FULL and FLUSH streams).

use super::*;

/// How many events the reader converts between two looks at the clock
/// calibration (reading the clock per event would cost more than the
/// conversion).
pub(super) const RECALIBRATE_EVERY: u32 = 4096;
/// How long a reserved slot may stay incomplete before the reader looks
/// whether its writer is still there: if not (or the slot was never
/// claimed, so its writer is not known), the reader skips it; if so, it
/// looks again after as long (an overloaded machine may keep a writer off
/// a CPU for long), up to [`STUCK_SLOT_MAX`].
pub(super) const STUCK_SLOT: Duration = Duration::from_millis(100);
/// Longest the reader waits for a slot whose writer is there but makes no
/// progress (see `producer::PREVIOUS_SLOT_WAIT_MAX_NS`).
pub(super) const STUCK_SLOT_MAX: Duration = Duration::from_secs(10);

pub(super) struct Consumer {
    pub(super) raw: RawEvent,
    /// Read position in each ring (writers' lanes, then the system lane);
    /// published to the writers by [`Consumer::commit`].
    pub(super) cursor: shm::Cursor,
    pub(super) pending: VecDeque<(EventInfo, Vec<u8>)>,
    /// The slot the reader waits for: since when, last looked at when.
    pub(super) busy: Option<(shm::SlotRef, Instant, Instant)>,
    pub(super) cal: Calibration,
    pub(super) cal_at: Instant,
    /// Events converted since the calibration was last checked: the
    /// clock is read once per [`RECALIBRATE_EVERY`] events, not per event.
    pub(super) since_check: u32,
    /// Time of the last event handed out: the events that reading makes
    /// up (OVERFLOW, RESUME, UNTIL_FULL's automatic STOP) are never placed
    /// before it.
    pub(super) last_ts: i64,
    /// Drained while full: what [`Consumer::commit`] does once the slots
    /// are handed back.
    pub(super) drained: Option<Drained>,
    /// Where the payload of the event [`Consumer::step`] handed out is.
    pub(super) held: Held,
    /// Payload of a pending event handed out.
    pub(super) popped: Vec<u8>,
    /// No stuck slot was skipped: a writer that completes a skipped slot
    /// late may write into a slot reused since, which only a copy checked
    /// by the sequence word notices; so after a skip, payloads are copied.
    pub(super) in_place: bool,
}

/// Where the payload of the last event handed out lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// The event taken from a ring ([`StreamView::payload`] of `raw`).
    Raw,
    /// `popped`.
    Popped,
    /// A system event without payload.
    Nothing,
    /// The automatic STOP's payload.
    AutoStop,
}

/// Payload of the automatic STOP of an UNTIL_FULL stream.
const AUTO_STOP_DATA: [u8; 4] = 1i32.to_ne_bytes();

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Drained {
    /// The stream is no longer full.
    Full,
    /// The automatic STOP of an UNTIL_FULL stream was reported: the stream
    /// is no longer full and restarts, unless the controller stopped it.
    AutoStop,
}

pub(super) enum Next {
    Event(EventInfo),
    Empty,
    Busy,
}

fn system_event(id: u32, timestamp_ns: i64) -> EventInfo {
    EventInfo {
        event_id: id,
        pid: 0,
        truncation: POSIX_TRACE_NOT_TRUNCATED,
        thread: 0,
        prog_address: 0,
        timestamp_ns,
    }
}

impl Consumer {
    pub(super) fn new(view: &StreamView) -> Consumer {
        Self::resume(view, &view.heads(), i64::MIN)
    }

    /// A consumer that continues at `cursor` (from a log's header, when
    /// a keeper takes a log over) after an event of time `last_ts`.
    pub(super) fn resume(view: &StreamView, cursor: &[u64], last_ts: i64) -> Consumer {
        let mut c = view.heads();
        if cursor.len() == c.len() {
            c.copy_from_slice(cursor);
        }
        let c = shm::Cursor::at(c);
        Consumer {
            raw: RawEvent {
                data: Vec::with_capacity(view.header().slot_data as usize),
                ..RawEvent::default()
            },
            cursor: c,
            pending: VecDeque::new(),
            busy: None,
            cal: view.header().calibration,
            cal_at: Instant::now(),
            since_check: 0,
            last_ts,
            drained: None,
            held: Held::Nothing,
            popped: Vec::new(),
            in_place: true,
        }
    }

    fn ticks_to_ns(&mut self, ticks: u64) -> i64 {
        self.since_check = self.since_check.saturating_add(1);
        if self.since_check >= RECALIBRATE_EVERY {
            self.since_check = 0;
            // Events come in tick order: the new rate applies from this
            // one on, continuing from where the old one puts it.
            if self.cal_at.elapsed() > Duration::from_secs(1) {
                self.cal = self.cal.refined(ticks);
                self.cal_at = Instant::now();
            }
        }
        self.cal.to_ns(ticks)
    }

    /// Hands every slot read so far back to the writers; a drained
    /// UNTIL_FULL stream that suspended itself restarts now (its START is
    /// recorded once the restart took place), and a drained stream is no
    /// longer full.
    pub(super) fn commit(&mut self, view: &StreamView) {
        view.commit(&self.cursor);
        let Some(drained) = self.drained.take() else {
            return;
        };
        let h = view.header();
        h.full.store(POSIX_TRACE_NOT_FULL as u32, Relaxed);
        if drained == Drained::Full {
            return;
        }
        h.suspended_ticks.store(0, Relaxed);
        let _ = h.running.0.compare_exchange(
            AUTO_STOPPED,
            POSIX_TRACE_SUSPENDED as u32,
            AcqRel,
            Relaxed,
        );
        let _ = h
            .running
            .0
            .compare_exchange(CLOSED_AUTO, CLOSED, AcqRel, Relaxed);
        // Only this lock's holders leave AUTO_SUSPENDED (writers only
        // enter it), so the restart cannot race the controller.
        if h.running.0.load(Acquire) == AUTO_SUSPENDED {
            super::lifecycle::run_with_start(view, 0, 0);
        }
    }

    /// Next event into `data` (a copy of [`Consumer::step`]'s).
    pub(super) fn next(&mut self, view: &StreamView, data: &mut Vec<u8>) -> Next {
        // Copied out of the ring (checked by the sequence word): `data`
        // may live on after a commit.
        let next = self.step_as(view, false);
        data.clear();
        if let Next::Event(_) = next {
            data.extend_from_slice(self.payload(view));
        }
        next
    }

    /// The payload of the event [`Consumer::step`] handed out last: valid
    /// until the next step or [`Consumer::commit`] (both take `self`
    /// mutably, so the borrow ends first).
    pub(super) fn payload<'a>(&'a self, view: &'a StreamView) -> &'a [u8] {
        match self.held {
            // SAFETY: `raw` is the last event taken, and its slot is not
            // committed before `self` is borrowed mutably again.
            Held::Raw => unsafe { view.payload(&self.raw) },
            Held::Popped => &self.popped,
            Held::Nothing => &[],
            Held::AutoStop => &AUTO_STOP_DATA,
        }
    }

    /// Next event, oldest first, its payload left where it is
    /// ([`Consumer::payload`]); synthesises OVERFLOW/RESUME around losses
    /// and the automatic STOP of an UNTIL_FULL stream (after its last
    /// event). The slots read stay the consumer's until
    /// [`Consumer::commit`].
    pub(super) fn step(&mut self, view: &StreamView) -> Next {
        self.step_as(view, self.in_place)
    }

    fn step_as(&mut self, view: &StreamView, in_place: bool) -> Next {
        if let Some((info, d)) = self.pending.pop_front() {
            self.popped = d;
            self.held = Held::Popped;
            return Next::Event(info);
        }
        self.held = Held::Nothing;
        loop {
            match view.take(&mut self.cursor, &mut self.raw, in_place) {
                Take::Event { after_loss } => {
                    self.busy = None;
                    let ts = self.ticks_to_ns(self.raw.ticks);
                    self.last_ts = self.last_ts.max(ts);
                    let info = EventInfo {
                        event_id: self.raw.event_id,
                        pid: self.raw.pid,
                        truncation: self.raw.truncation,
                        thread: self.raw.thread,
                        prog_address: self.raw.prog,
                        timestamp_ns: ts,
                    };
                    if after_loss {
                        // OVERFLOW and RESUME stand right before the first
                        // event after the loss, at its time (the lost
                        // events' times are gone with them).
                        self.pending
                            .push_back((system_event(POSIX_TRACE_RESUME, ts), Vec::new()));
                        // SAFETY: the event just taken, not committed.
                        let d = unsafe { view.payload(&self.raw) }.to_vec();
                        self.pending.push_back((info, d));
                        return Next::Event(system_event(POSIX_TRACE_OVERFLOW, ts));
                    }
                    self.held = Held::Raw;
                    return Next::Event(info);
                }
                Take::Busy(pos) => match self.busy {
                    Some((p, since, looked)) if p == pos && looked.elapsed() > STUCK_SLOT => {
                        let writer_runs = view
                            .slot_holder(pos)
                            .is_some_and(crate::producer::process_runs);
                        if writer_runs && since.elapsed() < STUCK_SLOT_MAX {
                            self.busy = Some((pos, since, Instant::now()));
                            return Next::Busy;
                        }
                        view.skip_stuck(&mut self.cursor, pos);
                        self.busy = None;
                        self.in_place = false;
                    }
                    Some((p, _, _)) if p == pos => return Next::Busy,
                    _ => {
                        let now = Instant::now();
                        self.busy = Some((pos, now, now));
                        return Next::Busy;
                    }
                },
                Take::Empty => {
                    // Idle: let the next event check the calibration.
                    self.since_check = RECALIBRATE_EVERY;
                    let h = view.header();
                    // System events lost (system lane full) after the last
                    // one recorded: no later one carries the count (see
                    // `SlotHeader::prog`), so the loss is reported here,
                    // after everything read, at the time it is noticed.
                    if h.system_lost.load(Relaxed) != 0 && h.system_lost.swap(0, AcqRel) != 0 {
                        let ts = self.cal.to_ns(view.now()).max(self.last_ts);
                        self.last_ts = ts;
                        self.pending
                            .push_back((system_event(POSIX_TRACE_RESUME, ts), Vec::new()));
                        return Next::Event(system_event(POSIX_TRACE_OVERFLOW, ts));
                    }
                    if h.shutdown.load(Acquire) != 0 || self.drained.is_some() {
                        return Next::Empty;
                    }
                    if h.stream_policy != POSIX_TRACE_UNTIL_FULL {
                        // Drained: an empty LOOP or FLUSH stream is not
                        // full (FLUSH never suspends itself: its writers
                        // wait for the flush).
                        if h.full.load(Relaxed) != 0 {
                            self.drained = Some(Drained::Full);
                        }
                        return Next::Empty;
                    }
                    // UNTIL_FULL, drained. If it stopped itself because
                    // full (and was maybe stopped by the controller since:
                    // that stop records nothing), the reader gets the
                    // automatic STOP after the last event, at the time the
                    // stream filled up; the stream is no longer full once
                    // the slots are handed back, and restarts then unless
                    // the controller stopped it.
                    let running = h.running.0.load(Acquire);
                    if ![AUTO_SUSPENDED, AUTO_STOPPED, CLOSED_AUTO].contains(&running) {
                        // Full but stopped by the controller before it could
                        // stop itself: no automatic STOP, just not full any
                        // more. (Full and running: a writer is suspending
                        // it right now; the next read reports that.)
                        if running == POSIX_TRACE_SUSPENDED as u32 && h.full.load(Relaxed) != 0 {
                            self.drained = Some(Drained::Full);
                        }
                        return Next::Empty;
                    }
                    self.drained = Some(Drained::AutoStop);
                    let filled_at = match h.suspended_ticks.load(Relaxed) {
                        0 => crate::clock::realtime_ns(),
                        t => self.cal.to_ns(t),
                    };
                    let ts = filled_at.max(self.last_ts);
                    self.last_ts = ts;
                    if view.is_filtered(POSIX_TRACE_STOP) {
                        return Next::Empty;
                    }
                    self.held = Held::AutoStop;
                    return Next::Event(system_event(POSIX_TRACE_STOP, ts));
                }
            }
        }
    }
}
