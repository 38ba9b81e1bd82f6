//! An XRay trace mapped to the timeline model (`tracekit_core::timeline`),
//! once, for every sink (Chrome JSON, Perfetto, ...).
//!
//! A thread track per (pid, tid), named `thread TID`; each function call a
//! slice (an exit closes the open frames up to its function, so tail calls
//! and unwinding close what they skipped), call arguments as a JSON array
//! argument `args`, custom and typed events instants with their payload.
//! Function names are keyed by function id, so interning sinks never hash
//! them. Time: TSC ticks since the earliest record, at the header's cycle
//! frequency (1 GHz when the header has none).
//!
//! **Architecture Invariant:** threads are streamed one after the other in
//! llvm-xray's load order: nothing is sorted or held beyond each thread's
//! open frames.

use std::io;

use rustc_hash::FxHashMap;
use tracekit_core::timeline::{
    Clock, Event, Name, Origin, Scope, Sink, TraceInfo, Track, TrackId, TrackKind, Value,
};
use tracekit_core::{Error, Position, Result, Warnings};

use crate::calls::{Call, CallStacks};
use crate::commands::earliest_tsc;
use crate::names::FunctionNames;
use crate::trace::Trace;

fn io(e: io::Error) -> Error {
    Error::io(None, e)
}

/// The clock of `trace`: TSC ticks since its earliest record.
pub fn clock(trace: &Trace<'_>) -> Clock {
    Clock {
        ticks_per_second: match trace.header.cycle_frequency {
            0 => 1_000_000_000,
            f => f,
        },
        origin: Origin::Relative,
    }
}

/// A [`Sink`] that also takes every finished call with its own two
/// records (the `xray_calls` table), from the same pass as the timeline.
pub trait CallSink: Sink {
    /// Whether [`CallSink::call`] is wanted at all.
    fn wants_calls(&self) -> bool;
    /// One finished call, named as its slice is.
    fn call(&mut self, call: &Call<'_>, function: &str) -> io::Result<()>;
}

/// A plain [`Sink`] as a [`CallSink`] that wants no calls.
struct NoCalls<'s, S: ?Sized>(&'s mut S);

impl<S: Sink + ?Sized> Sink for NoCalls<'_, S> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        self.0.start(info)
    }
    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        self.0.event(event)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.finish()
    }
}

impl<S: Sink + ?Sized> CallSink for NoCalls<'_, S> {
    fn wants_calls(&self) -> bool {
        false
    }
    fn call(&mut self, _: &Call<'_>, _: &str) -> io::Result<()> {
        Ok(())
    }
}

/// Call arguments as a JSON array (`[1,2]`), appended to `out`.
pub fn write_args_json(out: &mut Vec<u8>, args: &[u64]) {
    out.push(b'[');
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(itoa::Buffer::new().format(*a).as_bytes());
    }
    out.push(b']');
}

/// Maps `trace` into `sink`; returns the trace's warnings plus the exits
/// without a matching entry and the calls that never returned.
pub fn map_trace<S: Sink + ?Sized>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    source: &str,
    sink: &mut S,
) -> Result<Warnings> {
    map_trace_calls(trace, names, source, &mut NoCalls(sink))
}

/// [`map_trace`], also handing every finished call to the sink.
pub fn map_trace_calls<S: CallSink + ?Sized>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    source: &str,
    sink: &mut S,
) -> Result<Warnings> {
    sink.start(&TraceInfo {
        dialect: "xray",
        source,
        host: None,
        clock: clock(trace),
    })
    .map_err(io)?;
    let base = earliest_tsc(trace);
    let ticks = |tsc: u64| tsc.wrapping_sub(base) as i64;
    let wants_calls = sink.wants_calls();
    let mut warnings = trace.warnings.clone();
    let mut calls = CallStacks::new();
    // Per thread: (pid, last timestamp), put in the map when another
    // thread's records start (FDR logs come thread by thread).
    let mut last: FxHashMap<u32, (u32, u64)> = Default::default();
    let mut tracks: FxHashMap<(u32, u32), TrackId> = Default::default();
    let mut current: Option<(u32, u32)> = None;
    let mut track: TrackId = 0;
    let mut last_tsc = 0u64;
    let mut arg_text = Vec::new();
    let res = trace.try_for_each(|r| {
        if current != Some((r.pid, r.tid)) {
            if let Some((pid, tid)) = current {
                last.insert(tid, (pid, last_tsc));
            }
            current = Some((r.pid, r.tid));
            let next = tracks.len() as TrackId;
            track = *tracks.entry((r.pid, r.tid)).or_insert(next);
            if track == next {
                sink.event(&Event::Track(Track {
                    id: track,
                    parent: None,
                    kind: TrackKind::Thread {
                        pid: i64::from(r.pid),
                        tid: i64::from(r.tid),
                    },
                    name: Some(format!("thread {}", r.tid).as_bytes()),
                    sort_index: None,
                }))
                .map_err(io)?;
            }
        }
        last_tsc = r.tsc;
        if r.kind.is_event() {
            let what: &[u8] = if r.kind == crate::RecordKind::TypedEvent {
                b"typed-event"
            } else {
                b"custom-event"
            };
            let data = String::from_utf8_lossy(&r.data);
            return sink
                .event(&Event::Instant {
                    track,
                    ts: ticks(r.tsc),
                    name: Name::text(what),
                    category: b"xray",
                    scope: Scope::Thread,
                    args: &[
                        ("data", Value::Str(data.as_bytes())),
                        ("type", Value::Int(i64::from(r.record_type))),
                    ],
                })
                .map_err(io);
        }
        if r.kind.is_entry() {
            let name = names.symbol_or_number(r.func_id);
            let name = Name::keyed(name.as_bytes(), r.func_id as u32 as u64);
            let args: &[(&str, Value<'_>)] = if r.args.is_empty() {
                &[]
            } else {
                arg_text.clear();
                write_args_json(&mut arg_text, &r.args);
                &[("args", Value::Json(&arg_text))]
            };
            sink.event(&Event::Begin {
                track,
                ts: ticks(r.tsc),
                name,
                category: b"",
                args,
                flows: &[],
            })
            .map_err(io)?;
            calls.enter(r);
            return Ok(());
        }
        let ts = ticks(r.tsc);
        calls
            .exit(r, |c| {
                if wants_calls {
                    sink.call(c, &names.symbol_or_number(c.function_id))?;
                }
                sink.event(&Event::End {
                    track,
                    ts,
                    args: &[],
                })
            })
            .map_err(io)?;
        Ok(())
    });
    if let Some((pid, tid)) = current {
        last.insert(tid, (pid, last_tsc));
    }
    warnings.extend(res?);
    let (stats, open) = calls.finish();
    for (tid, stack) in open {
        if let Some(&(pid, tsc)) = last.get(&tid) {
            let Some(&track) = tracks.get(&(pid, tid)) else {
                continue;
            };
            for _ in 0..stack.len() {
                sink.event(&Event::End {
                    track,
                    ts: ticks(tsc),
                    args: &[],
                })
                .map_err(io)?;
            }
        }
    }
    if stats.orphan_exits > 0 {
        warnings.push(
            Position::Unknown,
            crate::record::orphan_exits_message(stats.orphan_exits),
        );
    }
    if stats.unfinished > 0 {
        warnings.push(
            Position::Unknown,
            format!(
                "{} calls never returned; closed at their thread's last timestamp",
                stats.unfinished
            ),
        );
    }
    sink.finish().map_err(io)?;
    Ok(warnings)
}
