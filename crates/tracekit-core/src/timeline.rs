//! The timeline model: the one shape every dialect maps its events to, and
//! every cross-format output (Chrome JSON, Perfetto, Parquet, OTLP) is
//! written from.
//!
//! It is close to what Perfetto calls a track event trace:
//!
//! * **tracks** ([`Track`]): processes, threads, lanes (custom tracks under
//!   a process: a git process's children, a build's parallel jobs) and
//!   counters, each with a stable 64-bit id and a parent;
//! * **slices** on a track: [`Event::Begin`]/[`Event::End`] where the
//!   dialect streams, [`Event::Complete`] where it knows both ends;
//! * **instants** and **counter** samples;
//! * **flows** linking slices (a process and the child it spawned), carried
//!   by the slices they connect;
//! * typed **arguments** ([`Value`]) and names that a producer may tag with
//!   an intern key ([`Name`]) so sinks that intern need not hash the text.
//!
//! A dialect *emits* the model as a stream of [`Event`]s into a [`Sink`];
//! nothing is collected, so memory is whatever the mapping itself keeps.
//!
//! Time: timestamps are integer ticks of the trace's [`Clock`] (1 µs for
//! Trace2 and build traces, 1 ns for POSIX logs, the TSC's cycle for XRay),
//! so the source's precision survives and each sink converts once: Chrome
//! to microseconds, Perfetto and OTLP to nanoseconds, Unix time when the
//! clock is anchored to it.
//!
//! **Architecture Invariant:** the model borrows: an event holds references
//! into the producer's data and is gone after [`Sink::event`] returns.
//! **Architecture Invariant:** a track is declared ([`Event::Track`])
//! before the first event that uses it, and an event's track is never
//! declared with another kind later; [`Event::TrackDone`] lets sinks drop
//! per-track state, so long streams stay bounded.

use std::io;

/// A track's id: unique within one trace (one mapping run).
pub type TrackId = u64;

/// How to read a trace's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Ticks per second of every timestamp of the trace.
    pub ticks_per_second: u64,
    /// What tick 0 is.
    pub origin: Origin,
}

/// Where tick 0 of a [`Clock`] lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Tick 0 is this many nanoseconds after the Unix epoch (UTC).
    Unix { ns_at_zero: i64 },
    /// No wall-clock anchor is known (a local time of day, cycles since
    /// boot): times are only meaningful relative to each other.
    Relative,
}

impl Clock {
    pub const MICROS_UNIX: Clock = Clock {
        ticks_per_second: 1_000_000,
        origin: Origin::Unix { ns_at_zero: 0 },
    };

    /// Nanoseconds since tick 0. Exact for clocks of whole nanoseconds;
    /// others (a TSC) are converted in floating point, well below a
    /// nanosecond of error for any trace shorter than a century.
    ///
    /// Works out the conversion on every call; a sink converting every
    /// event keeps [`Clock::scale`] instead.
    pub fn to_ns(&self, ticks: i64) -> i64 {
        self.scale().to_ns(ticks)
    }

    /// The conversion to nanoseconds, worked out once (an integer division
    /// and a floating-point one that [`Clock::to_ns`] repeats per call).
    pub fn scale(&self) -> NsScale {
        let tps = self.ticks_per_second;
        let per_tick = if tps == 1_000_000_000 || tps == 0 {
            PerTick::One
        } else if 1_000_000_000u64.is_multiple_of(tps) {
            PerTick::Whole((1_000_000_000 / tps) as i64)
        } else {
            PerTick::Fraction(1e9 / tps as f64)
        };
        NsScale {
            per_tick,
            unix_ns_at_zero: match self.origin {
                Origin::Unix { ns_at_zero } => Some(ns_at_zero),
                Origin::Relative => None,
            },
        }
    }

    /// Microseconds since tick 0, as Chrome JSON writes them.
    ///
    /// Computed the way the dialects' writers always did, so their output
    /// stays byte-identical: µs clocks exactly; ns clocks divided by 1000;
    /// others as `ticks * 1e6 / ticks_per_second`.
    pub fn to_us_f64(&self, ticks: i64) -> f64 {
        let tps = self.ticks_per_second;
        if tps == 1_000_000 {
            ticks as f64
        } else if tps != 0 && tps.is_multiple_of(1_000_000) {
            ticks as f64 / (tps / 1_000_000) as f64
        } else if tps == 0 {
            ticks as f64
        } else {
            ticks as f64 * 1e6 / tps as f64
        }
    }

    /// Nanoseconds since the Unix epoch, when the clock is anchored.
    pub fn to_unix_ns(&self, ticks: i64) -> Option<i64> {
        self.scale().to_unix_ns(ticks)
    }
}

/// A [`Clock`]'s conversion to nanoseconds, worked out once
/// ([`Clock::scale`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NsScale {
    per_tick: PerTick,
    unix_ns_at_zero: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PerTick {
    One,
    Whole(i64),
    Fraction(f64),
}

impl NsScale {
    /// Nanoseconds since tick 0 (as [`Clock::to_ns`]).
    #[inline]
    pub fn to_ns(&self, ticks: i64) -> i64 {
        match self.per_tick {
            PerTick::One => ticks,
            PerTick::Whole(n) => ticks.saturating_mul(n),
            PerTick::Fraction(f) => (ticks as f64 * f) as i64,
        }
    }

    /// Nanoseconds since the Unix epoch, when the clock is anchored (as
    /// [`Clock::to_unix_ns`]).
    #[inline]
    pub fn to_unix_ns(&self, ticks: i64) -> Option<i64> {
        self.unix_ns_at_zero
            .map(|zero| zero.saturating_add(self.to_ns(ticks)))
    }
}

/// What a trace is and where it came from, so that outputs from many
/// machines and files can be told apart and merged.
#[derive(Debug, Clone, Copy)]
pub struct TraceInfo<'a> {
    /// `trace2`, `xray`, `kwinject`, `rtrace`, `posix`.
    pub dialect: &'static str,
    /// The input's name as the user gave it (`-` for standard input).
    pub source: &'a str,
    /// The machine that recorded it, where the input says.
    pub host: Option<&'a [u8]>,
    pub clock: Clock,
}

/// What a track stands for. The numbers are the producer's own (a pid, a
/// thread id), used by sinks that need them (Chrome's `pid`/`tid`,
/// Perfetto's process and thread descriptors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackKind<'a> {
    /// A process. `pid` is the producer's number (or a stand-in the
    /// mapping documents, where the input has none).
    Process { pid: i64 },
    /// A thread of process `pid`.
    Thread { pid: i64, tid: i64 },
    /// A custom track under a process: `lane` is its number within the
    /// process (Chrome shows it as that thread id).
    Lane { pid: i64, lane: i64 },
    /// A counter of process `pid`; `series` names the value (Chrome's
    /// counter argument), the track's name the counter.
    Counter { pid: i64, series: &'a str },
}

impl TrackKind<'_> {
    pub fn pid(&self) -> i64 {
        match *self {
            TrackKind::Process { pid }
            | TrackKind::Thread { pid, .. }
            | TrackKind::Lane { pid, .. }
            | TrackKind::Counter { pid, .. } => pid,
        }
    }
}

/// A track declaration (or a later update of its name and order).
#[derive(Debug, Clone, Copy)]
pub struct Track<'a> {
    pub id: TrackId,
    /// The enclosing track (a thread's process, a lane's process).
    pub parent: Option<TrackId>,
    pub kind: TrackKind<'a>,
    pub name: Option<&'a [u8]>,
    /// Display order among siblings (lower first).
    pub sort_index: Option<i64>,
}

/// An event or track name. `key`, when the producer has one, identifies
/// the text within the trace (an XRay function id, a string table index):
/// equal keys mean equal text, so interning sinks can skip hashing it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Name<'a> {
    pub text: &'a [u8],
    pub key: Option<u64>,
}

impl<'a> Name<'a> {
    pub const fn text(text: &'a [u8]) -> Self {
        Name { text, key: None }
    }

    pub const fn keyed(text: &'a [u8], key: u64) -> Self {
        Name {
            text,
            key: Some(key),
        }
    }
}

/// A typed argument value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// Bytes as the input had them (usually UTF-8; sinks that need text
    /// replace invalid sequences).
    Str(&'a [u8]),
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    /// A JSON document the input carried as such (git's `data_json`);
    /// valid JSON, written verbatim where the sink can.
    Json(&'a [u8]),
}

/// Named arguments of an event, in the order the producer gives them.
pub type Args<'a> = &'a [(&'a str, Value<'a>)];

/// Which tracks an instant concerns (Chrome's `s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Thread,
    Process,
    Global,
}

/// A flow end carried by a slice: the slice continues flow `id` (the
/// first slice to carry an id starts it), or ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub id: u64,
    pub terminating: bool,
}

/// One element of the timeline stream.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Declares a track, before its first use; declaring it again updates
    /// its name or sort index.
    Track(Track<'a>),
    /// The track's name, learnt after it was declared (a git process is
    /// named by its `cmd_name` event).
    TrackName { track: TrackId, name: &'a [u8] },
    /// No more events on this track.
    TrackDone { track: TrackId },
    /// Where a track comes from beyond this input, for sinks that link
    /// traces across inputs and machines (OTLP) and derive their ids from
    /// it, so the same process gets the same ids whichever input or
    /// connection carries it: `trace` names the trace the track belongs
    /// to (a Git Trace2 session: the SID's first component), `span` the
    /// track itself (the SID's own component), `parent` the track it
    /// continues in another input (the parent process's own component).
    /// Right after the track's declaration, before its events; sinks
    /// without such ids ignore it (Chrome and Perfetto output do not
    /// change).
    TrackOrigin {
        track: TrackId,
        trace: &'a [u8],
        span: &'a [u8],
        parent: Option<&'a [u8]>,
    },
    /// A slice opens on `track`; slices on one track nest.
    Begin {
        track: TrackId,
        ts: i64,
        name: Name<'a>,
        category: &'a [u8],
        args: Args<'a>,
        flows: &'a [Flow],
    },
    /// The innermost open slice on `track` closes.
    End {
        track: TrackId,
        ts: i64,
        args: Args<'a>,
    },
    /// A slice whose start and duration are known.
    Complete {
        track: TrackId,
        ts: i64,
        dur: i64,
        name: Name<'a>,
        category: &'a [u8],
        args: Args<'a>,
        flows: &'a [Flow],
    },
    /// A point in time.
    Instant {
        track: TrackId,
        ts: i64,
        name: Name<'a>,
        category: &'a [u8],
        scope: Scope,
        args: Args<'a>,
    },
    /// A counter track's value from `ts` on.
    Counter { track: TrackId, ts: i64, value: f64 },
}

/// A consumer of the timeline stream: [`Sink::start`] once, then events,
/// then [`Sink::finish`].
pub trait Sink {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()>;
    fn event(&mut self, event: &Event<'_>) -> io::Result<()>;
    /// Writes what is still buffered; the sink takes no events after it.
    fn finish(&mut self) -> io::Result<()>;
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        (**self).start(info)
    }
    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        (**self).event(event)
    }
    fn finish(&mut self) -> io::Result<()> {
        (**self).finish()
    }
}

/// Counts of what a mapping emitted, by kind (for tests, `--verbose` and
/// the sinks' summaries).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub tracks: u64,
    pub slices: u64,
    pub instants: u64,
    pub counters: u64,
    pub flows: u64,
}

impl Counts {
    pub fn add(&mut self, event: &Event<'_>) {
        match event {
            Event::Track(_) => self.tracks += 1,
            Event::Begin { flows, .. } | Event::Complete { flows, .. } => {
                self.slices += 1;
                self.flows += flows.iter().filter(|f| f.terminating).count() as u64;
            }
            Event::Instant { .. } => self.instants += 1,
            Event::Counter { .. } => self.counters += 1,
            Event::TrackName { .. }
            | Event::TrackDone { .. }
            | Event::TrackOrigin { .. }
            | Event::End { .. } => {}
        }
    }
}

/// A sink that passes everything on and counts it.
pub struct Counting<S> {
    pub inner: S,
    pub counts: Counts,
}

impl<S: Sink> Counting<S> {
    pub fn new(inner: S) -> Self {
        Counting {
            inner,
            counts: Counts::default(),
        }
    }
}

impl<S: Sink> Sink for Counting<S> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        self.inner.start(info)
    }
    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        self.counts.add(event);
        self.inner.event(event)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_conversions_keep_the_source_precision() {
        let us = Clock::MICROS_UNIX;
        assert_eq!(us.to_ns(1_700_000_000_123_456), 1_700_000_000_123_456_000);
        assert_eq!(us.to_us_f64(1_700_000_000_123_456), 1_700_000_000_123_456.0);
        let ns = Clock {
            ticks_per_second: 1_000_000_000,
            origin: Origin::Unix { ns_at_zero: 5 },
        };
        assert_eq!(ns.to_us_f64(1500), 1.5);
        assert_eq!(ns.to_unix_ns(10), Some(15));
        let tsc = Clock {
            ticks_per_second: 3_000_000_000,
            origin: Origin::Relative,
        };
        assert_eq!(tsc.to_ns(3_000), 1_000);
        assert_eq!(tsc.to_us_f64(4_500), 4_500.0 * 1e6 / 3e9);
        assert_eq!(tsc.to_unix_ns(1), None);
    }
}
