//! The timeline model as Chrome Trace Event JSON.
//!
//! Each model event becomes one Chrome event (plus one per flow end): a
//! track's declaration writes its `M` metadata (name, then sort index), a
//! slice `B`/`E` or `X`, an instant `i`, a counter sample `C` named after
//! its track with the track's series as the argument, a flow end `s`/`t`/`f`
//! bound to its slice. Timestamps are microseconds of the trace's clock
//! ([`Clock::to_us_f64`]); durations are the difference of the converted
//! ends, so a slice ends exactly where a `B`/`E` pair would.
//!
//! **Architecture Invariant:** memory is one small entry per live track
//! (dropped on [`Event::TrackDone`]) and one id per flow started but not
//! yet finished.

use std::io::{self, Write};

use rustc_hash::{FxHashMap, FxHashSet};
use tracekit_core::timeline::{
    Clock, Event, Flow, Scope as ModelScope, Sink, TraceInfo, TrackId, TrackKind,
};

use crate::chrome::{ChromeWriter, FlowPhase, Scope};

#[derive(Clone, Copy)]
struct Ids {
    pid: i64,
    tid: i64,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Process,
    Thread,
    Counter,
}

/// Writes the timeline as Chrome JSON to `W`.
pub struct ChromeSink<W: Write> {
    out: ChromeWriter<W>,
    clock: Clock,
    tracks: FxHashMap<TrackId, Ids>,
    /// Counter tracks' (name, series), by track.
    counters: FxHashMap<TrackId, (Box<[u8]>, Box<str>)>,
    started_flows: FxHashSet<u64>,
}

impl<W: Write> ChromeSink<W> {
    pub fn new(out: W) -> io::Result<Self> {
        Ok(ChromeSink {
            out: ChromeWriter::new(out)?,
            clock: Clock::MICROS_UNIX,
            tracks: FxHashMap::default(),
            counters: FxHashMap::default(),
            started_flows: FxHashSet::default(),
        })
    }

    /// Closes the document (if [`Sink::finish`] did not) and gives the
    /// output back.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.finish()
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.out.events()
    }

    fn ids(&self, track: TrackId) -> io::Result<Ids> {
        self.tracks.get(&track).copied().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("timeline event on track {track}, which was never declared"),
            )
        })
    }

    fn flows(&mut self, ids: Ids, ts_us: f64, flows: &[Flow]) -> io::Result<()> {
        for f in flows {
            let ph = if f.terminating {
                self.started_flows.remove(&f.id);
                FlowPhase::Finish
            } else if self.started_flows.insert(f.id) {
                FlowPhase::Start
            } else {
                FlowPhase::Step
            };
            self.out.flow(ph, ids.pid, ids.tid, ts_us, f.id)?;
        }
        Ok(())
    }
}

impl<W: Write> Sink for ChromeSink<W> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        self.clock = info.clock;
        Ok(())
    }

    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        let clock = self.clock;
        let us = |ts: i64| clock.to_us_f64(ts);
        match *event {
            Event::Track(t) => {
                let (ids, name_kind) = match t.kind {
                    TrackKind::Process { pid } => (
                        Ids {
                            pid,
                            tid: 0,
                            kind: Kind::Process,
                        },
                        Kind::Process,
                    ),
                    TrackKind::Thread { pid, tid } => (
                        Ids {
                            pid,
                            tid,
                            kind: Kind::Thread,
                        },
                        Kind::Thread,
                    ),
                    TrackKind::Lane { pid, lane } => (
                        Ids {
                            pid,
                            tid: lane,
                            kind: Kind::Thread,
                        },
                        Kind::Thread,
                    ),
                    TrackKind::Counter { pid, series } => {
                        let name = t.name.unwrap_or(b"counter");
                        self.counters.insert(t.id, (name.into(), series.into()));
                        (
                            Ids {
                                pid,
                                tid: 0,
                                kind: Kind::Counter,
                            },
                            Kind::Counter,
                        )
                    }
                };
                self.tracks.insert(t.id, ids);
                let w = &mut self.out;
                match name_kind {
                    Kind::Process => {
                        if let Some(n) = t.name {
                            w.process_name(ids.pid, n)?;
                        }
                        if let Some(i) = t.sort_index {
                            w.process_sort_index(ids.pid, i)?;
                        }
                    }
                    Kind::Thread => {
                        if let Some(n) = t.name {
                            w.thread_name(ids.pid, ids.tid, n)?;
                        }
                        if let Some(i) = t.sort_index {
                            w.thread_sort_index(ids.pid, ids.tid, i)?;
                        }
                    }
                    Kind::Counter => {}
                }
                Ok(())
            }
            Event::TrackName { track, name } => {
                let ids = self.ids(track)?;
                match ids.kind {
                    Kind::Process => self.out.process_name(ids.pid, name),
                    Kind::Thread => self.out.thread_name(ids.pid, ids.tid, name),
                    Kind::Counter => {
                        if let Some(c) = self.counters.get_mut(&track) {
                            c.0 = name.into();
                        }
                        Ok(())
                    }
                }
            }
            Event::TrackDone { track } => {
                self.tracks.remove(&track);
                self.counters.remove(&track);
                Ok(())
            }
            // Chrome JSON has no cross-trace ids.
            Event::TrackOrigin { .. } => Ok(()),
            Event::Begin {
                track,
                ts,
                name,
                category,
                args,
                flows,
            } => {
                let ids = self.ids(track)?;
                let w = &mut self.out;
                w.begin(ids.pid, ids.tid, us(ts), name.text, category, args)?;
                self.flows(ids, us(ts), flows)
            }
            Event::End { track, ts, args } => {
                let ids = self.ids(track)?;
                let w = &mut self.out;
                w.end(ids.pid, ids.tid, us(ts), args)
            }
            Event::Complete {
                track,
                ts,
                dur,
                name,
                category,
                args,
                flows,
            } => {
                let ids = self.ids(track)?;
                let start = us(ts);
                let dur_us = (us(ts.saturating_add(dur)) - start).max(0.0);
                let w = &mut self.out;
                w.complete(ids.pid, ids.tid, start, dur_us, name.text, category, args)?;
                self.flows(ids, start, flows)
            }
            Event::Instant {
                track,
                ts,
                name,
                category,
                scope,
                args,
            } => {
                let ids = self.ids(track)?;
                let scope = match scope {
                    ModelScope::Thread => Scope::Thread,
                    ModelScope::Process => Scope::Process,
                    ModelScope::Global => Scope::Global,
                };
                let w = &mut self.out;
                w.instant(ids.pid, ids.tid, us(ts), name.text, category, scope, args)
            }
            Event::Counter { track, ts, value } => {
                let ids = self.ids(track)?;
                let (name, series) = self.counters.get(&track).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("counter sample on track {track}, which is not a counter track"),
                    )
                })?;
                let w = &mut self.out;
                w.counter(ids.pid, us(ts), name, &[(series, value)])
            }
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.close()
    }
}
