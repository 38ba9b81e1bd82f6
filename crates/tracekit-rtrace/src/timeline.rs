//! An sp-rtrace trace mapped to the timeline model
//! (`tracekit_core::timeline`), once, for every sink.
//!
//! * A process track (the header's pid and process), with a **counter**
//!   track per resource type: what is in use (bytes for memory, handles for
//!   the others: the sum of the sizes the calls give), sampled once per
//!   distinct call time (its value after the last call of that
//!   millisecond), following sp-rtrace's rules (a refcount resource is
//!   released by its last free).
//! * A `leaks` track: every allocation never freed, as an instant at the
//!   time it was made, named after the allocating function, with its size,
//!   id and backtrace (as the trace writes its frames).
//!
//! * The markers the program made (`include/tracekit/mem.h`, read from
//!   their `## tracekit-marker: ` comments, [`crate::marker`]): an
//!   instant each on its thread's track (declared at the thread's first
//!   marker), named after the marker, category `mark` or `snapshot`, with
//!   its index, kind, the name's length when it was cut, its backtrace
//!   and, for a snapshot, the memory in use at its point.
//!
//! Time: the calls' milliseconds (sp-rtrace writes the time of day, a
//! monotonic clock modulo 24 h), unwrapped at midnight; relative, since the
//! trace does not say its time zone. Calls without a time cannot be placed
//! and are counted ([`MapStats::untimed`]).
//!
//! **Architecture Invariant:** memory is the live set (what a leak report
//! needs) plus one value per resource; samples are written as the calls
//! come.

use std::io;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use tracekit_core::timeline::{
    Clock, Event, Name, Origin, Scope, Sink, TraceInfo, Track, TrackId, TrackKind, Value,
};
use tracekit_core::{Error, Result, Warnings};

use crate::reader::{IntoItems, Item, Items};
use crate::record::{Frame, ResourceDef};
use crate::report::Clock as DayClock;

/// What the mapping wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MapStats {
    pub calls: u64,
    pub counter_samples: u64,
    pub leaks: u64,
    /// Markers written as instants.
    pub markers: u64,
    /// Calls without a timestamp (not placed; still counted in the live set).
    pub untimed: u64,
}

struct Resource {
    def: ResourceDef,
    track: TrackId,
    in_use: i64,
    /// The time whose sample is pending (written when time moves on).
    pending: Option<i64>,
}

struct Block {
    size: i64,
    /// Its address is not in the recording (a `.tkmem` file names it by
    /// number).
    by_number: bool,
    refs: u32,
    ts: Option<i64>,
    function: compact_str::CompactString,
    frames: Rc<[Frame]>,
}

fn io(e: io::Error) -> Error {
    Error::io(None, e)
}

/// Maps the trace read from `input` into `sink`.
pub fn map_trace<R: IntoItems, S: Sink + ?Sized>(
    input: R,
    source: &str,
    sink: &mut S,
) -> Result<(MapStats, Warnings)> {
    let mut tracks = Tracks::default();
    let r = map_one(input, source, sink, &mut tracks)?;
    sink.finish().map_err(io)?;
    Ok(r)
}

/// Maps several traces into one timeline (the process images of one
/// recording, which share the monotonic clock): a process track each,
/// one sink start and finish. `traces` yields each trace's reader and
/// name; the stats and warnings are per trace.
pub fn map_traces<R: IntoItems, S: Sink + ?Sized>(
    traces: impl IntoIterator<Item = Result<(R, String)>>,
    source: &str,
    sink: &mut S,
) -> Result<Vec<(String, MapStats, Warnings)>> {
    let mut tracks = Tracks::default();
    let mut out = Vec::new();
    for t in traces {
        let (input, name) = t?;
        let (stats, warnings) = map_one(input, source, sink, &mut tracks)
            .map_err(|e| e.in_file(std::path::Path::new(&name)))?;
        out.push((name, stats, warnings));
    }
    if !tracks.started {
        start_sink(sink, source)?;
    }
    sink.finish().map_err(io)?;
    Ok(out)
}

/// Track numbering across the traces of one sink.
#[derive(Default)]
struct Tracks {
    started: bool,
    next: TrackId,
}

fn start_sink<S: Sink + ?Sized>(sink: &mut S, source: &str) -> Result<()> {
    sink.start(&TraceInfo {
        dialect: "rtrace",
        source,
        host: None,
        clock: Clock {
            ticks_per_second: 1000,
            origin: Origin::Relative,
        },
    })
    .map_err(io)
}

fn map_one<R: IntoItems, S: Sink + ?Sized>(
    input: R,
    source: &str,
    sink: &mut S,
    tracks: &mut Tracks,
) -> Result<(MapStats, Warnings)> {
    let mut asm = input.into_items();
    let mut stats = MapStats::default();
    let mut resources: Vec<Resource> = Vec::new();
    let mut live: FxHashMap<(usize, u64), Block> = FxHashMap::default();
    // Blocks whose id was allocated again without a free (still leaked).
    let mut orphans: Vec<((usize, u64), Block)> = Vec::new();
    let mut clock = DayClock::default();
    let mut started = false;
    // This trace's process track, its leaks track, then its counters.
    let process: TrackId = tracks.next;
    let leaks_track: TrackId = process + 1;
    let mut next_track: TrackId = process + 2;
    let mut pid: i64 = 0;
    // Marker threads' tracks, by thread id.
    let mut threads: FxHashMap<u32, TrackId> = FxHashMap::default();
    let start = |sink: &mut S,
                 tracks: &mut Tracks,
                 header: Option<&crate::record::Header>|
     -> Result<i64> {
        if !tracks.started {
            tracks.started = true;
            start_sink(sink, source)?;
        }
        let pid = header
            .and_then(|h| h.get("pid"))
            .and_then(|p| p.trim().parse::<i64>().ok())
            .unwrap_or(0);
        let name = header.and_then(|h| h.get("process")).map(str::as_bytes);
        sink.event(&Event::Track(Track {
            id: process,
            parent: None,
            kind: TrackKind::Process { pid },
            name,
            sort_index: None,
        }))
        .map_err(io)?;
        sink.event(&Event::Track(Track {
            id: leaks_track,
            parent: Some(process),
            kind: TrackKind::Lane { pid, lane: 1 },
            name: Some(b"leaks"),
            sort_index: None,
        }))
        .map_err(io)?;
        Ok(pid)
    };
    while let Some(item) = asm.next_item()? {
        match item {
            Item::Header(h) if !started => {
                started = true;
                pid = start(sink, tracks, Some(&h))?;
            }
            Item::Resource(r) if !resources.iter().any(|x| x.def.name == r.name) => {
                if !started {
                    started = true;
                    pid = start(sink, tracks, None)?;
                }
                resources.push(declare(sink, &mut next_track, process, pid, r)?);
            }
            Item::Call(fc) => {
                if !started {
                    started = true;
                    pid = start(sink, tracks, None)?;
                }
                stats.calls += 1;
                let ts = fc.call.timestamp.map(|t| clock.tick(t) as i64);
                if ts.is_none() {
                    stats.untimed += 1;
                }
                let ri = match &fc.call.resource_type {
                    Some(name) => resources.iter().position(|r| &r.def.name == name),
                    None => (!resources.is_empty()).then_some(0),
                };
                let ri = match ri {
                    Some(i) => i,
                    None => {
                        // A call of a type never declared: declare it, so
                        // nothing is left out.
                        let name = fc
                            .call
                            .resource_type
                            .clone()
                            .unwrap_or_else(|| "memory".into());
                        let def = ResourceDef {
                            id: 0,
                            name,
                            description: String::new(),
                            flags: None,
                        };
                        resources.push(declare(sink, &mut next_track, process, pid, def)?);
                        resources.len() - 1
                    }
                };
                let refcount = resources[ri].def.is_refcount();
                let key = (ri, fc.call.id);
                let change = if fc.call.is_alloc() {
                    match live.get_mut(&key) {
                        Some(b) if refcount => {
                            b.refs += 1;
                            0
                        }
                        _ => {
                            let size = fc.call.size();
                            // The same id again without a free: the older
                            // block stays in use (as the report counts it).
                            let old = live.insert(
                                key,
                                Block {
                                    size,
                                    by_number: fc.call.by_number,
                                    refs: 1,
                                    ts,
                                    function: fc.call.name.clone(),
                                    frames: fc.frames.clone(),
                                },
                            );
                            if let Some(old) = old {
                                orphans.push((key, old));
                            }
                            size
                        }
                    }
                } else {
                    match live.get_mut(&key) {
                        Some(b) => {
                            b.refs = b.refs.saturating_sub(1);
                            if b.refs == 0 || !refcount {
                                let size = b.size;
                                live.remove(&key);
                                -size
                            } else {
                                0
                            }
                        }
                        None => 0,
                    }
                };
                let r = &mut resources[ri];
                if let Some(t) = ts {
                    // A new time: the previous one's value is final.
                    if r.pending.is_some_and(|p| p != t) {
                        sample(sink, r, &mut stats)?;
                    }
                    r.pending = Some(t);
                }
                r.in_use += change;
            }
            Item::Comment(c) if c.starts_with(crate::marker::PREFIX) => {
                let Some(m) = crate::marker::Marker::parse(&c) else {
                    continue;
                };
                if !started {
                    started = true;
                    pid = start(sink, tracks, None)?;
                }
                let Some(ts) = m.timestamp.map(|t| clock.tick(t) as i64) else {
                    stats.untimed += 1;
                    continue;
                };
                let track = match threads.get(&m.thread) {
                    Some(&t) => t,
                    None => {
                        let t = next_track;
                        next_track += 1;
                        sink.event(&Event::Track(Track {
                            id: t,
                            parent: Some(process),
                            kind: TrackKind::Thread {
                                pid,
                                tid: i64::from(m.thread),
                            },
                            name: None,
                            sort_index: None,
                        }))
                        .map_err(io)?;
                        threads.insert(m.thread, t);
                        t
                    }
                };
                let memory = resources
                    .iter()
                    .find(|r| r.def.name == "memory")
                    .map(|r| r.in_use);
                marker(sink, track, ts, &m, memory, &mut stats)?;
            }
            _ => {}
        }
    }
    if !started {
        start(sink, tracks, None)?;
    }
    for r in resources.iter_mut() {
        if r.pending.is_some() {
            sample(sink, r, &mut stats)?;
        }
    }
    // Leaks, in the order they were made (timed ones by time).
    let mut leaks: Vec<((usize, u64), Block)> = live.into_iter().chain(orphans).collect();
    leaks.sort_by_key(|((ri, id), b)| (b.ts.is_none(), b.ts, *ri, *id));
    for ((ri, id), b) in &leaks {
        leak(
            sink,
            leaks_track,
            b,
            &resources[*ri].def.name,
            *id,
            &mut stats,
        )?;
    }
    tracks.next = next_track;
    let warnings = asm.take_warnings();
    Ok((stats, warnings))
}

/// A marker as an instant on its thread's track; `memory` is the memory in
/// use at its point (written for snapshots).
fn marker<S: Sink + ?Sized>(
    sink: &mut S,
    track: TrackId,
    ts: i64,
    m: &crate::marker::Marker,
    memory: Option<i64>,
    stats: &mut MapStats,
) -> Result<()> {
    use std::fmt::Write as _;
    stats.markers += 1;
    let mut trace = String::new();
    for a in &m.frames {
        if !trace.is_empty() {
            trace.push('\n');
        }
        let _ = write!(trace, "0x{a:x}");
    }
    let kind = m.kind.name();
    let mut args: Vec<(&str, Value<'_>)> = vec![
        ("index", Value::UInt(m.index)),
        ("kind", Value::Str(kind.as_bytes())),
    ];
    if let Some(n) = m.cut_from {
        args.push(("name_length", Value::UInt(n)));
    }
    if m.kind == crate::marker::MarkerKind::Snapshot {
        if let Some(bytes) = memory {
            args.push(("memory_in_use", Value::Int(bytes)));
        }
    }
    if !trace.is_empty() {
        args.push(("backtrace", Value::Str(trace.as_bytes())));
    }
    sink.event(&Event::Instant {
        track,
        ts,
        name: Name::text(m.name.as_bytes()),
        category: kind.as_bytes(),
        scope: Scope::Thread,
        args: &args,
    })
    .map_err(io)
}

fn declare<S: Sink + ?Sized>(
    sink: &mut S,
    next_track: &mut TrackId,
    process: TrackId,
    pid: i64,
    def: ResourceDef,
) -> Result<Resource> {
    let track = *next_track;
    *next_track += 1;
    let name = format!("{} in use", def.name);
    sink.event(&Event::Track(Track {
        id: track,
        parent: Some(process),
        kind: TrackKind::Counter {
            pid,
            series: "in_use",
        },
        name: Some(name.as_bytes()),
        sort_index: None,
    }))
    .map_err(io)?;
    Ok(Resource {
        def,
        track,
        in_use: 0,
        pending: None,
    })
}

fn sample<S: Sink + ?Sized>(sink: &mut S, r: &mut Resource, stats: &mut MapStats) -> Result<()> {
    if let Some(t) = r.pending.take() {
        stats.counter_samples += 1;
        sink.event(&Event::Counter {
            track: r.track,
            ts: t,
            value: r.in_use as f64,
        })
        .map_err(io)?;
    }
    Ok(())
}

/// A block never freed, at the time it was allocated (blocks without a
/// time cannot be placed: counted, not written).
fn leak<S: Sink + ?Sized>(
    sink: &mut S,
    track: TrackId,
    b: &Block,
    resource: &str,
    id: u64,
    stats: &mut MapStats,
) -> Result<()> {
    let Some(ts) = b.ts else {
        return Ok(());
    };
    stats.leaks += 1;
    let mut trace = String::new();
    for f in b.frames.iter() {
        use std::fmt::Write as _;
        if !trace.is_empty() {
            trace.push('\n');
        }
        let _ = write!(trace, "0x{:x}", f.addr);
        if let Some(t) = &f.text {
            trace.push(' ');
            trace.push_str(t);
        }
    }
    // A leak has its address (only blocks released in their events block
    // are named by number), unless the block that released it was cut.
    let id = if b.by_number {
        "address not kept".to_string()
    } else {
        format!("0x{id:x}")
    };
    sink.event(&Event::Instant {
        track,
        ts,
        name: Name::text(b.function.as_bytes()),
        category: b"leak",
        scope: Scope::Thread,
        args: &[
            ("resource", Value::Str(resource.as_bytes())),
            ("size", Value::Int(b.size)),
            ("id", Value::Str(id.as_bytes())),
            ("backtrace", Value::Str(trace.as_bytes())),
        ],
    })
    .map_err(io)
}
