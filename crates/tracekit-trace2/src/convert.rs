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
    /// The last time seen in the process, for events written without one.
    last: Option<UnixMicros>,
}

/// Converts a stream of events (of any format) to `target`.
pub struct Converter {
    target: Format,
    processes: FxHashMap<Vec<u8>, Process>,
    /// Regions open per thread when events carry no SID (PERF/NORMAL
    /// input); keyed by depth and thread.
    anonymous: FxHashMap<u32, FxHashMap<Vec<u8>, u32>>,
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

        let now = ev.time.as_ref().and_then(Time::unix);
        let (indent, start, depth, last) = self.track(ev, now);
        ctx.indent = indent;
        ctx.depth = depth;
        // Brief EVENT keeps `time` only on version and atexit: derive it from
        // the process start and t_abs, else the process's last known time.
        let derived = now
            .or_else(|| Some(UnixMicros(start?.0 + ev.body.t_abs()?.0)))
            .or(last);
        if let Some(t) = derived {
            ctx.time = Some(self.local_time_of_day(t));
        }
        if let (Some(now), Some(start)) = (now, start) {
            ctx.t_abs = Some(Micros(now.0 - start.0));
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

    /// Returns the regions open on the event's thread before the event, the
    /// process start time, its depth and the last time seen before this
    /// event, and updates the region count and last time.
    fn track(
        &mut self,
        ev: &Event<'_>,
        now: Option<UnixMicros>,
    ) -> (u32, Option<UnixMicros>, u32, Option<UnixMicros>) {
        let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        let (threads, start, depth, last) = match &ev.sid {
            Some(sid) => {
                let p = match self.processes.get_mut(&sid[..]) {
                    Some(p) => p,
                    None => self
                        .processes
                        .entry(sid.to_vec())
                        .or_insert_with(|| Process {
                            start: UnixMicros::parse_sid(sid_own(sid)),
                            depth: memchr::memchr_iter(b'/', sid).count() as u32,
                            ..Process::default()
                        }),
                };
                let last = p.last;
                if now.is_some() {
                    p.last = now;
                }
                (&mut p.open, p.start, p.depth, last)
            }
            None => {
                let depth = ev.depth.unwrap_or(0);
                (self.anonymous.entry(depth).or_default(), None, depth, None)
            }
        };
        // Look up by borrowed name: only a new thread allocates.
        let slot = match threads.get_mut(thread) {
            Some(s) => s,
            None => threads.entry(thread.to_vec()).or_insert(0),
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
        (indent, start, depth, last)
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
