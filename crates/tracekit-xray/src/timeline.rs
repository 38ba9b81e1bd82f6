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

/// Maps `trace` into `sink`; returns the trace's warnings plus the exits
/// without a matching entry and the calls that never returned.
pub fn map_trace<S: Sink + ?Sized>(
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
    let mut warnings = trace.warnings.clone();
    // Per thread: open calls and (pid, last timestamp). The thread being
    // read is kept out of the maps (records come thread by thread in FDR
    // logs) and put back when another one starts.
    let mut stacks: FxHashMap<u32, Vec<i32>> = Default::default();
    let mut last: FxHashMap<u32, (u32, u64)> = Default::default();
    let mut tracks: FxHashMap<(u32, u32), TrackId> = Default::default();
    let mut current: Option<(u32, u32)> = None;
    let mut track: TrackId = 0;
    let mut stack: Vec<i32> = Vec::new();
    let mut last_tsc = 0u64;
    let mut orphans = 0u64;
    let mut arg_text = String::new();
    let res = trace.try_for_each(|r| {
        if current != Some((r.pid, r.tid)) {
            if let Some((pid, tid)) = current {
                last.insert(tid, (pid, last_tsc));
                if let Some(s) = stacks.get_mut(&tid) {
                    std::mem::swap(s, &mut stack);
                }
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
            stack = std::mem::take(stacks.entry(r.tid).or_default());
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
            if r.args.is_empty() {
                sink.event(&Event::Begin {
                    track,
                    ts: ticks(r.tsc),
                    name,
                    category: b"",
                    args: &[],
                    flows: &[],
                })
                .map_err(io)?;
            } else {
                use std::fmt::Write as _;
                arg_text.clear();
                arg_text.push('[');
                for (i, a) in r.args.iter().enumerate() {
                    if i > 0 {
                        arg_text.push(',');
                    }
                    let _ = write!(arg_text, "{a}");
                }
                arg_text.push(']');
                sink.event(&Event::Begin {
                    track,
                    ts: ticks(r.tsc),
                    name,
                    category: b"",
                    args: &[("args", Value::Json(arg_text.as_bytes()))],
                    flows: &[],
                })
                .map_err(io)?;
            }
            stack.push(r.func_id);
            return Ok(());
        }
        match stack.iter().rposition(|&f| f == r.func_id) {
            None => orphans += 1,
            Some(at) => {
                let ts = ticks(r.tsc);
                while stack.len() > at {
                    stack.pop();
                    sink.event(&Event::End {
                        track,
                        ts,
                        args: &[],
                    })
                    .map_err(io)?;
                }
            }
        }
        Ok(())
    });
    if let Some((pid, tid)) = current {
        last.insert(tid, (pid, last_tsc));
        if let Some(s) = stacks.get_mut(&tid) {
            std::mem::swap(s, &mut stack);
        }
    }
    warnings.extend(res?);
    let mut unfinished = 0u64;
    for (tid, stack) in stacks {
        if let Some(&(pid, tsc)) = last.get(&tid) {
            let Some(&track) = tracks.get(&(pid, tid)) else {
                continue;
            };
            for _ in 0..stack.len() {
                unfinished += 1;
                sink.event(&Event::End {
                    track,
                    ts: ticks(tsc),
                    args: &[],
                })
                .map_err(io)?;
            }
        }
    }
    if orphans > 0 {
        warnings.push(
            Position::Unknown,
            crate::record::orphan_exits_message(orphans),
        );
    }
    if unfinished > 0 {
        warnings.push(
            Position::Unknown,
            format!("{unfinished} calls never returned; closed at their thread's last timestamp"),
        );
    }
    sink.finish().map_err(io)?;
    Ok(warnings)
}
