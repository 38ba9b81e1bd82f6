//! Reading a stream: the single consumer that takes events in time order
//! and synthesises the system events reading produces (OVERFLOW/RESUME
//! around losses, the automatic STOP/START of UNTIL_FULL and FLUSH streams).

use super::*;

/// How many events the reader converts between two looks at the clock
/// calibration (reading the clock per event would cost more than the
/// conversion).
pub(super) const RECALIBRATE_EVERY: u32 = 4096;
/// How long a reserved slot may stay incomplete before the reader decides
/// its writer died and skips it.
pub(super) const STUCK_SLOT: Duration = Duration::from_millis(100);

pub(super) struct Consumer {
    pub(super) raw: RawEvent,
    pub(super) pending: VecDeque<(EventInfo, Vec<u8>)>,
    pub(super) in_loss: bool,
    pub(super) busy: Option<(shm::SlotRef, Instant)>,
    pub(super) cal: Calibration,
    pub(super) cal_at: Instant,
    /// Events converted since the calibration was last checked: the
    /// clock is read once per [`RECALIBRATE_EVERY`] events, not per event.
    pub(super) since_check: u32,
    /// Payload of the event being handed out (kept: no allocation per read).
    pub(super) out: Vec<u8>,
}

pub(super) enum Next {
    Event(EventInfo),
    Empty,
    Busy,
}

impl Consumer {
    pub(super) fn new(view: &StreamView) -> Consumer {
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
    pub(super) fn next(&mut self, view: &StreamView, data: &mut Vec<u8>) -> Next {
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
