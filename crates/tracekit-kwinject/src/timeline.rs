//! A build trace mapped to the timeline model (`tracekit_core::timeline`),
//! once, for every sink.
//!
//! One process track, `build` (pid 1), with lanes `lane 1`, `lane 2`, ...:
//! each traced process is a complete slice, packed into the first lane
//! where it nests under what is open there (children under their parents
//! where they fit), so that parallel jobs show side by side. A compile is
//! category `compile` with its source as `file`; anything else `process`.
//! A flow joins each process to the children it started. Times are
//! tracekit's `tk_start_us`/`tk_end_us`, in microseconds from the first
//! start (anchored to Unix time); records without times (other producers)
//! are not placed and are counted instead.

use std::io;

use tracekit_core::timeline::{
    Clock, Event, Flow, Name, Origin, Sink, TraceInfo, Track, TrackId, TrackKind, Value,
};

use crate::analysis::Build;
use crate::trace::Exit;

const BUILD_TRACK: TrackId = 0;

/// Maps `b` into `sink`; returns how many records had no times and were
/// left out.
pub fn map_build<S: Sink + ?Sized>(b: &Build, source: &str, sink: &mut S) -> io::Result<u64> {
    let t = b.trace;
    let base = b.span().map(|(s, _)| s).unwrap_or(0);
    sink.start(&TraceInfo {
        dialect: "kwinject",
        source,
        host: None,
        clock: Clock {
            ticks_per_second: 1_000_000,
            origin: Origin::Unix {
                ns_at_zero: (base as i64).saturating_mul(1000),
            },
        },
    })?;
    let timed = |i: usize| t.processes[i].start_us.is_some();
    let mut order: Vec<usize> = (0..t.processes.len()).filter(|&i| timed(i)).collect();
    let skipped = (t.processes.len() - order.len()) as u64;
    order.sort_by_key(|&i| {
        let p = &t.processes[i];
        (p.start_us, std::cmp::Reverse(p.end_us))
    });
    sink.event(&Event::Track(Track {
        id: BUILD_TRACK,
        parent: None,
        kind: TrackKind::Process { pid: 1 },
        name: Some(b"build"),
        sort_index: None,
    }))?;
    // Per lane, the stack of (end) of open slices.
    let mut lanes: Vec<Vec<u64>> = Vec::new();
    let mut flows: Vec<Flow> = Vec::new();
    for i in order {
        let p = &t.processes[i];
        let s = p.start_us.unwrap_or(base);
        let e = p.end_us.unwrap_or(s).max(s);
        let mut lane = None;
        for (k, stack) in lanes.iter_mut().enumerate() {
            while stack.last().is_some_and(|&end| end <= s) {
                stack.pop();
            }
            if stack.last().is_none_or(|&end| end >= e) {
                stack.push(e);
                lane = Some(k);
                break;
            }
        }
        let lane = match lane {
            Some(k) => k,
            None => {
                lanes.push(vec![e]);
                let n = lanes.len() as i64;
                sink.event(&Event::Track(Track {
                    id: n as TrackId,
                    parent: Some(BUILD_TRACK),
                    kind: TrackKind::Lane { pid: 1, lane: n },
                    name: Some(format!("lane {n}").as_bytes()),
                    sort_index: None,
                }))?;
                lanes.len() - 1
            }
        };
        let cmd = p.args.join(" ");
        let mut args = vec![
            ("pid", Value::Int(p.id)),
            ("cmd", Value::Str(cmd.as_bytes())),
            ("cwd", Value::Str(p.work_dir.as_bytes())),
        ];
        match p.exit {
            Some(Exit::Code(c)) => args.push(("exit", Value::Int(c as i64))),
            Some(Exit::Signal(s)) => args.push(("exit", Value::Int(-(s as i64)))),
            None => {}
        }
        if let Some(f) = &b.compile_file[i] {
            args.push(("file", Value::Str(f.as_bytes())));
        }
        let category: &[u8] = if b.compile_file[i].is_some() {
            b"compile"
        } else {
            b"process"
        };
        // Flow ids are record indices + 1: from a process to each child
        // it started (placed later: children start after their parents),
        // and into this one from its parent.
        flows.clear();
        if b.parent[i].is_some_and(timed) {
            flows.push(Flow {
                id: i as u64 + 1,
                terminating: true,
            });
        }
        flows.extend(b.children[i].iter().filter(|&&c| timed(c)).map(|&c| Flow {
            id: c as u64 + 1,
            terminating: false,
        }));
        sink.event(&Event::Complete {
            track: lane as TrackId + 1,
            ts: (s - base) as i64,
            dur: (e - s) as i64,
            name: Name::text(p.program_name().as_bytes()),
            category,
            args: &args,
            flows: &flows,
        })?;
    }
    sink.finish()?;
    Ok(skipped)
}
