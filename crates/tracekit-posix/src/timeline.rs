//! A POSIX trace log mapped to the timeline model
//! (`tracekit_core::timeline`), once, for every sink.
//!
//! A process track per traced pid and, under it, a track per thread in
//! order of appearance (lanes 1, 2, ...; lane 0 is thread 0, the engine's
//! own events), named by the thread's id. Each event is an instant named
//! after its type (category `user` or `system`) with its payload in hex and
//! as printable text; a `POSIX_TRACE_FLUSH_START`/`FLUSH_STOP` pair is a
//! `flush` slice. Times are CLOCK_REALTIME nanoseconds from the stream's
//! creation (or the first event, when the log does not say).

use std::collections::BTreeMap;
use std::io;

use tracekit_core::timeline::{
    Clock, Event, Name, Origin, Scope, Sink, TraceInfo, Track, TrackId, TrackKind, Value,
};
use tracekit_core::{Position, Warnings};

use crate::analysis::{hex, printable};
use crate::consts::*;
use crate::log::LogReader;

/// Maps the events of `r` (from where it stands) into `sink`. Records
/// that cannot be read are counted in the returned warnings.
pub fn map_log<S: Sink + ?Sized>(
    r: &mut LogReader,
    source: &str,
    sink: &mut S,
) -> io::Result<Warnings> {
    let names: BTreeMap<u32, Vec<u8>> = r.types.iter().cloned().collect();
    let created = r.attr.create_time_sec * 1_000_000_000 + r.attr.create_time_nsec;
    let mut warnings = Warnings::default();
    let mut started = false;
    let mut base = 0i64;
    // pid -> process track; (pid, thread) -> its lane's track.
    let mut processes: BTreeMap<i32, TrackId> = BTreeMap::new();
    let mut threads: BTreeMap<(i32, u64), TrackId> = BTreeMap::new();
    let mut next_track: TrackId = 0;
    let mut flush_begin: Option<(i64, TrackId)> = None;
    while let Some(e) = r.next_event() {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                warnings.push(
                    Position::Unknown,
                    format!("unreadable record skipped: {err}"),
                );
                continue;
            }
        };
        let i = e.info;
        if !started {
            started = true;
            // Times relative to the stream's creation (flush events are
            // written out of time order, so not "the first event").
            base = if created > 0 { created } else { i.timestamp_ns };
            sink.start(&TraceInfo {
                dialect: "posix",
                source,
                host: None,
                clock: Clock {
                    ticks_per_second: 1_000_000_000,
                    origin: Origin::Unix { ns_at_zero: base },
                },
            })?;
        }
        let ts = i.timestamp_ns - base;
        let process = match processes.get(&i.pid) {
            Some(&t) => t,
            None => {
                let id = next_track;
                next_track += 1;
                sink.event(&Event::Track(Track {
                    id,
                    parent: None,
                    kind: TrackKind::Process {
                        pid: i64::from(i.pid),
                    },
                    name: None,
                    sort_index: None,
                }))?;
                processes.insert(i.pid, id);
                id
            }
        };
        let track = match threads.get(&(i.pid, i.thread)) {
            Some(&t) => t,
            None => {
                // Numbered as in tracekit's Chrome output before the model:
                // entries so far (thread 0 of any process included) + 1.
                let lane = if i.thread == 0 {
                    0
                } else {
                    threads.len() as i64 + 1
                };
                let id = next_track;
                next_track += 1;
                sink.event(&Event::Track(Track {
                    id,
                    parent: Some(process),
                    kind: TrackKind::Lane {
                        pid: i64::from(i.pid),
                        lane,
                    },
                    name: Some(format!("thread {:#x}", i.thread).as_bytes()),
                    sort_index: None,
                }))?;
                threads.insert((i.pid, i.thread), id);
                id
            }
        };
        match i.event_id {
            POSIX_TRACE_FLUSH_START => flush_begin = Some((ts, track)),
            POSIX_TRACE_FLUSH_STOP => {
                if let Some((b, t)) = flush_begin.take() {
                    sink.event(&Event::Complete {
                        track: t,
                        ts: b,
                        dur: ts - b,
                        name: Name::text(b"flush"),
                        category: b"posix_trace",
                        args: &[],
                        flows: &[],
                    })?;
                }
            }
            _ => {
                let generic;
                let name: &[u8] = match names.get(&i.event_id) {
                    Some(n) => n,
                    None => match system_event_name(i.event_id) {
                        Some(s) => s.as_bytes(),
                        None => {
                            generic = format!("event-{}", i.event_id);
                            generic.as_bytes()
                        }
                    },
                };
                let category: &[u8] = if i.event_id >= USER_EVENT_FIRST {
                    b"user"
                } else {
                    b"system"
                };
                let (hx, text) = (hex(e.data), printable(e.data));
                let mut args: Vec<(&str, Value<'_>)> = Vec::new();
                if !e.data.is_empty() {
                    args.push(("data_hex", Value::Str(hx.as_bytes())));
                    args.push(("data_text", Value::Str(text.as_bytes())));
                }
                if i.truncation != POSIX_TRACE_NOT_TRUNCATED {
                    args.push(("truncated", Value::Bool(true)));
                }
                sink.event(&Event::Instant {
                    track,
                    ts,
                    name: Name::keyed(name, u64::from(i.event_id)),
                    category,
                    scope: Scope::Thread,
                    args: &args,
                })?;
            }
        }
    }
    if !started {
        sink.start(&TraceInfo {
            dialect: "posix",
            source,
            host: None,
            clock: Clock {
                ticks_per_second: 1_000_000_000,
                origin: Origin::Unix {
                    ns_at_zero: created,
                },
            },
        })?;
    }
    sink.finish()?;
    Ok(warnings)
}
