//! Writing events in any trace2 format, with the per-process state the
//! text formats need.
//!
//! Converting EVENT to PERF or NORMAL needs what git knows while writing
//! and EVENT does not spell out: the number of regions open on the thread
//! (PERF's dots), the local time of day, `t_abs` on the events where EVENT
//! leaves it out (computed from `time` and the process start in the SID),
//! and the source location of events the target itself emits (`atexit`,
//! `signal`, `counter` carry the emitting target's own file and line).
//!
//! **Architecture Invariant:** converting an event allocates nothing but
//! the state of a newly seen process or thread; state is dropped when the
//! process ends.

use rustc_hash::FxHashMap;

use crate::event::{sid_own, Body, Event, Kind, Time};
use crate::perf::{Context, PerfOptions};
use crate::reader::Format;
use crate::time::{Micros, TimeOfDay, UnixMicros};
use crate::{event_fmt, normal, perf};

/// Writes an event back in the format it was read from (the event carries
/// every column that format needs).
pub fn write_same_format(ev: &Event<'_>, format: Format, out: &mut Vec<u8>) {
    let ctx = Context::default();
    match format {
        Format::Event => event_fmt::write(ev, out),
        Format::Perf { brief } => perf::write(ev, &ctx, PerfOptions { brief }, out),
        Format::Normal { brief } => normal::write(ev, brief, &ctx, out),
    }
}

/// Where git 2.47's targets emit the events they write themselves.
fn target_location(kind: Kind, target: Format) -> Option<(&'static [u8], i64)> {
    let (event, perf, normal) = match kind {
        Kind::Signal => (189, 205, 118),
        Kind::AtExit => (205, 217, 128),
        Kind::Counter => (675, 593, 371),
        _ => return None,
    };
    Some(match target {
        Format::Event => (b"trace2/tr2_tgt_event.c", event),
        Format::Perf { .. } => (b"trace2/tr2_tgt_perf.c", perf),
        Format::Normal { .. } => (b"trace2/tr2_tgt_normal.c", normal),
    })
}

#[derive(Default)]
struct Process {
    /// Regions open per thread.
    open: FxHashMap<Vec<u8>, u32>,
    start: Option<UnixMicros>,
    depth: u32,
}

/// Converts a stream of events (of any format) to `target`.
pub struct Converter {
    target: Format,
    processes: FxHashMap<Vec<u8>, Process>,
    /// Regions open per thread when events carry no SID (PERF/NORMAL
    /// input); keyed by depth and thread.
    anonymous: FxHashMap<(u32, Vec<u8>), u32>,
    tz_cache: Option<(i64, i64)>,
}

impl Converter {
    pub fn new(target: Format) -> Self {
        Converter {
            target,
            processes: FxHashMap::default(),
            anonymous: FxHashMap::default(),
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
        let mut ctx = Context::default();

        // Target-emitted events: use the target's own source location.
        if ev
            .file
            .as_deref()
            .is_some_and(|f| f.starts_with(b"trace2/tr2_tgt_"))
        {
            ctx.location = target_location(kind, self.target);
        }

        if self.target == Format::Event {
            event_fmt::write(ev, out);
            return;
        }

        let (indent, start, depth) = self.track(ev);
        ctx.indent = indent;
        ctx.depth = depth;
        if let Some(now) = ev.time.as_ref().and_then(Time::unix) {
            ctx.time = Some(self.local_time_of_day(now));
            if let Some(start) = start {
                ctx.t_abs = Some(Micros(now.0 - start.0));
            }
        }
        match self.target {
            Format::Perf { brief } => perf::write(ev, &ctx, PerfOptions { brief }, out),
            Format::Normal { brief } => {
                if brief {
                    ctx.time = None;
                }
                normal::write(ev, brief, &ctx, out)
            }
            Format::Event => {}
        }

        if matches!(kind, Kind::AtExit | Kind::Signal) {
            if let Some(sid) = &ev.sid {
                self.processes.remove(&sid[..]);
            }
        }
    }

    /// Returns the regions open on the event's thread before the event and
    /// the process start time, and updates the region count.
    fn track(&mut self, ev: &Event<'_>) -> (u32, Option<UnixMicros>, u32) {
        let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        let (slot, start, depth): (&mut u32, Option<UnixMicros>, u32) = match &ev.sid {
            Some(sid) => {
                if !self.processes.contains_key(&sid[..]) {
                    let p = Process {
                        start: UnixMicros::parse_sid(sid_own(sid)),
                        depth: memchr::memchr_iter(b'/', sid).count() as u32,
                        ..Process::default()
                    };
                    self.processes.insert(sid.to_vec(), p);
                }
                let Some(p) = self.processes.get_mut(&sid[..]) else {
                    return (0, None, 0);
                };
                if !p.open.contains_key(thread) {
                    p.open.insert(thread.to_vec(), 0);
                }
                let (start, depth) = (p.start, p.depth);
                match p.open.get_mut(thread) {
                    Some(s) => (s, start, depth),
                    None => return (0, start, depth),
                }
            }
            None => {
                let key = (ev.depth.unwrap_or(0), thread.to_vec());
                (
                    self.anonymous.entry(key).or_insert(0),
                    None,
                    ev.depth.unwrap_or(0),
                )
            }
        };
        let before = *slot;
        let indent = match &ev.body {
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
        };
        (indent, start, depth)
    }

    fn local_time_of_day(&mut self, u: UnixMicros) -> TimeOfDay {
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
        TimeOfDay(local.rem_euclid(86_400_000_000) as u64)
    }
}
