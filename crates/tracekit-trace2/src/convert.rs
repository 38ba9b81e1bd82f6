//! Writing events in any trace2 format, with the per-process state the
//! text formats need.
//!
//! Converting EVENT to PERF or NORMAL needs what git knows while writing
//! and EVENT does not spell out: the number of regions open on the thread
//! (PERF's dots), the local time of day, `t_abs` on the events where EVENT
//! leaves it out (computed from `time` and the process start in the SID),
//! and the source location of events the target itself emits (`atexit`,
//! `signal`, `counter` carry the emitting target's own file and line).

use std::borrow::Cow;
use std::collections::HashMap;

use crate::event::{sid_own, Body, Event, Kind, Time};
use crate::perf::PerfOptions;
use crate::reader::Format;
use crate::time::{Micros, UnixMicros};
use crate::{event_fmt, normal, perf};

/// Writes an event back in the format it was read from (the event carries
/// every column that format needs).
pub fn write_same_format(ev: &Event<'_>, format: Format, out: &mut Vec<u8>) {
    match format {
        Format::Event => event_fmt::write(ev, out),
        Format::Perf { brief } => perf::write(ev, 0, 0, PerfOptions { brief }, out),
        Format::Normal { brief } => normal::write(ev, brief, out),
    }
}

/// Where git 2.47's targets emit the events they write themselves.
fn target_location(kind: Kind, target: Format) -> Option<(&'static str, i64)> {
    let (event, perf, normal) = match kind {
        Kind::Signal => (189, 205, 118),
        Kind::AtExit => (205, 217, 128),
        Kind::Counter => (675, 593, 371),
        _ => return None,
    };
    Some(match target {
        Format::Event => ("trace2/tr2_tgt_event.c", event),
        Format::Perf { .. } => ("trace2/tr2_tgt_perf.c", perf),
        Format::Normal { .. } => ("trace2/tr2_tgt_normal.c", normal),
    })
}

#[derive(Default)]
struct Process {
    /// Regions open per thread.
    open: HashMap<Vec<u8>, u32>,
    start: Option<UnixMicros>,
}

/// Converts a stream of events (of any format) to `target`.
pub struct Converter {
    target: Format,
    processes: HashMap<Vec<u8>, Process>,
    /// Regions open per thread when events carry no SID (PERF/NORMAL
    /// input); keyed by depth and thread.
    anonymous: HashMap<(u32, Vec<u8>), u32>,
    tz_cache: Option<(i64, i64)>,
}

impl Converter {
    pub fn new(target: Format) -> Self {
        Converter {
            target,
            processes: HashMap::new(),
            anonymous: HashMap::new(),
            tz_cache: None,
        }
    }

    /// How many processes are being tracked (their state is dropped at
    /// `atexit`/`signal`).
    pub fn live_processes(&self) -> usize {
        self.processes.len()
    }

    /// Appends `ev` in the target format to `out` (nothing for events the
    /// target does not write).
    pub fn write(&mut self, ev: &Event<'_>, out: &mut Vec<u8>) {
        let kind = ev.kind();
        let brief = match self.target {
            Format::Event => false,
            Format::Perf { brief } | Format::Normal { brief } => brief,
        };
        let needs_time = !brief && self.target != Format::Event;
        let mut conv: Cow<'_, Event<'_>> = Cow::Borrowed(ev);

        // Target-emitted events: use the target's own source location.
        if let Some(file) = &ev.file {
            if file.starts_with(b"trace2/tr2_tgt_") {
                if let Some((f, l)) = target_location(kind, self.target) {
                    let c = conv.to_mut();
                    c.file = Some(Cow::Borrowed(f.as_bytes()));
                    c.line = Some(l);
                }
            }
        }

        // Region depth before this event (PERF dots), and its update.
        let indent = self.track_regions(ev);

        if self.target != Format::Event {
            let unix = ev.time.as_ref().and_then(Time::unix);
            if let Some(sid) = &ev.sid {
                let p = self.processes.entry(sid.to_vec()).or_default();
                if p.start.is_none() {
                    p.start = UnixMicros::parse_sid(sid_own(sid));
                }
                // t_abs where PERF shows it and EVENT left it out.
                if matches!(self.target, Format::Perf { .. }) {
                    if let (Some(now), Some(start)) = (unix, p.start) {
                        fill_t_abs(conv.to_mut(), Micros(now.0 - start.0));
                    }
                }
            }
            if needs_time {
                if let Some(u) = unix {
                    conv.to_mut().time = Some(Time::OfDay(self.local_time_of_day(u)));
                }
            }
        }

        match self.target {
            Format::Event => event_fmt::write(&conv, out),
            Format::Perf { brief } => {
                let depth = ev.process_depth().unwrap_or(0);
                perf::write(&conv, indent, depth, PerfOptions { brief }, out)
            }
            Format::Normal { brief } => normal::write(&conv, brief, out),
        }

        if matches!(kind, Kind::AtExit | Kind::Signal) {
            if let Some(sid) = &ev.sid {
                self.processes.remove(&sid[..]);
            }
        }
    }

    /// Returns the regions open on the event's thread before the event
    /// and updates the count.
    fn track_regions(&mut self, ev: &Event<'_>) -> u32 {
        let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        let slot: &mut u32 = match &ev.sid {
            Some(sid) => {
                let p = match self.processes.get_mut(&sid[..]) {
                    Some(p) => p,
                    None => self.processes.entry(sid.to_vec()).or_default(),
                };
                if !p.open.contains_key(thread) {
                    p.open.insert(thread.to_vec(), 0);
                }
                match p.open.get_mut(thread) {
                    Some(s) => s,
                    None => return 0,
                }
            }
            None => {
                let key = (ev.depth.unwrap_or(0), thread.to_vec());
                self.anonymous.entry(key).or_insert(0)
            }
        };
        let before = *slot;
        match &ev.body {
            // EVENT's nesting is the depth before the push (thread = 1).
            Body::RegionEnter(r) => {
                *slot = r.nesting.max(1) as u32;
                (r.nesting - 1).max(0) as u32
            }
            Body::RegionLeave { region, .. } => {
                *slot = (region.nesting - 1).max(0) as u32;
                (region.nesting - 1).max(0) as u32
            }
            _ => ev.indent.unwrap_or(before),
        }
    }

    fn local_time_of_day(&mut self, u: UnixMicros) -> crate::time::TimeOfDay {
        // The zone offset changes at most hourly; cache it per hour.
        let hour = u.0.div_euclid(3_600_000_000);
        let offset = match self.tz_cache {
            Some((h, off)) if h == hour => off,
            _ => {
                let off = crate::time::local_offset_secs(u.0.div_euclid(1_000_000));
                self.tz_cache = Some((hour, off));
                off
            }
        };
        let local = u.0 + offset * 1_000_000;
        crate::time::TimeOfDay(local.rem_euclid(86_400_000_000) as u64)
    }
}

/// Sets t_abs on the events whose PERF line shows it but whose EVENT
/// record does not carry it.
fn fill_t_abs(ev: &mut Event<'_>, t: Micros) {
    match &mut ev.body {
        Body::Start { t_abs, .. }
        | Body::ChildStart { t_abs, .. }
        | Body::ChildExit { t_abs, .. }
        | Body::ChildReady { t_abs, .. }
        | Body::ThreadStart { t_abs }
        | Body::ThreadExit { t_abs, .. }
        | Body::Exec { t_abs, .. }
        | Body::ExecResult { t_abs, .. }
        | Body::Printf { t_abs, .. } => {
            if t_abs.is_none() {
                *t_abs = Some(t);
            }
        }
        Body::RegionEnter(r) | Body::RegionLeave { region: r, .. } => {
            if r.t_abs.is_none() {
                r.t_abs = Some(t);
            }
        }
        _ => {}
    }
}
