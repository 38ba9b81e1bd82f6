//! The timeline model (`tracekit_core::timeline`) as rows of the generic
//! tables: processes, threads, slices, instants, counters, flows.
//!
//! Begin/End pairs are matched per track with a stack (one row per slice,
//! written when it ends, with its depth and enclosing slice); Complete
//! slices are written as they come, nested under what is open on their
//! track. A process or thread row is written when its track is done (or
//! at the end), so it carries the name learnt last.
//!
//! **Architecture Invariant:** memory is per live track (its open slices,
//! whose buffers are reused), never per event.

use std::io;

use rustc_hash::FxHashMap;
use tracekit_core::timeline::{Args, Clock, Event, Flow, NsScale, Scope, Sink, TraceInfo, TrackId};
use tracekit_core::timeline::{TrackKind, Value};

use arrow_array::types::{Int32Type, Int64Type, UInt64Type};
use arrow_array::ArrayRef;

use crate::rows::{Prim, Source, Tables, Text, TypedBatch, TypedColumns};
use crate::schema::Table;

#[derive(Default)]
struct OpenSlice {
    id: u64,
    ts: i64,
    name: Vec<u8>,
    key: Option<u64>,
    category: Vec<u8>,
    /// The args as a JSON object so far (`{` and members; closed when
    /// written), empty when there are none.
    args: Vec<u8>,
    parent: Option<u64>,
}

enum Kind {
    Process,
    Thread,
    Lane,
    Counter { series: String },
}

struct TrackState {
    kind: Kind,
    pid: i64,
    tid: Option<i64>,
    parent: Option<TrackId>,
    name: Option<Vec<u8>>,
    sort_index: Option<i64>,
    /// Open slices: `stack[..depth]`; entries past `depth` are kept for
    /// their buffers.
    stack: Vec<OpenSlice>,
    depth: usize,
}

/// What the rows sink saw that it could not write.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RowStats {
    /// Begins never ended (no duration known: not written).
    pub unclosed_slices: u64,
    /// Ends on a track with no open slice.
    pub unmatched_ends: u64,
    /// Events on a track never declared.
    pub undeclared_tracks: u64,
}

/// A [`Sink`] of the timeline model writing rows into [`Tables`].
pub struct TimelineRows<'t, 'o> {
    tables: &'t mut Tables<'o>,
    clock: NsScale,
    tracks: FxHashMap<TrackId, TrackState>,
    next_slice: u64,
    json: Vec<u8>,
    /// The `slices` batch, when the table is wanted.
    slices: Option<TypedBatch<SliceColumns>>,
    pub stats: RowStats,
}

impl<'t, 'o> TimelineRows<'t, 'o> {
    pub fn new(tables: &'t mut Tables<'o>) -> Self {
        TimelineRows {
            clock: Clock::MICROS_UNIX.scale(),
            tracks: FxHashMap::default(),
            next_slice: 0,
            json: Vec::new(),
            slices: TypedBatch::wanted(tables),
            stats: RowStats::default(),
            tables,
        }
    }

    /// The tables the rows go to (for a dialect's own rows written from
    /// the same pass).
    pub fn tables(&mut self) -> &mut Tables<'o> {
        self.tables
    }

    fn write_track(tables: &mut Tables<'_>, id: TrackId, t: &TrackState) -> io::Result<()> {
        let name = t.name.as_deref();
        match t.kind {
            Kind::Process => tables.push(Table::Processes, |r| {
                r.u64(id).i64(t.pid).opt_bytes(name).opt_i64(t.sort_index);
            }),
            Kind::Thread | Kind::Lane => tables.push(Table::Threads, |r| {
                r.u64(id)
                    .opt_u64(t.parent)
                    .i64(t.pid)
                    .i64(t.tid.unwrap_or(0))
                    .str(if matches!(t.kind, Kind::Lane) {
                        "lane"
                    } else {
                        "thread"
                    })
                    .opt_bytes(name)
                    .opt_i64(t.sort_index);
            }),
            Kind::Counter { .. } => Ok(()),
        }
    }

    fn close_track(&mut self, id: TrackId) -> io::Result<()> {
        if let Some(t) = self.tracks.remove(&id) {
            self.stats.unclosed_slices += t.depth as u64;
            Self::write_track(self.tables, id, &t)?;
        }
        Ok(())
    }

    fn write_flows(
        &mut self,
        slice: u64,
        track: TrackId,
        ts: i64,
        flows: &[Flow],
    ) -> io::Result<()> {
        let ts_ns = self.clock.to_ns(ts);
        for f in flows {
            self.tables.push(Table::Flows, |r| {
                r.u64(f.id)
                    .u64(slice)
                    .u64(track)
                    .i64(ts_ns)
                    .bool(f.terminating);
            })?;
        }
        Ok(())
    }
}

fn opt_nonempty(b: &[u8]) -> Option<&[u8]> {
    (!b.is_empty()).then_some(b)
}

/// Appends `"key":value` members for `args` to `out`, opening the
/// object (`{`) with the first one; [`close_json`] ends it.
pub fn json_members(out: &mut Vec<u8>, args: Args<'_>) {
    for (k, v) in args {
        out.push(if out.is_empty() { b'{' } else { b',' });
        json_string(out, k.as_bytes());
        out.push(b':');
        json_value(out, v);
    }
}

/// The object [`json_members`] built, closed; `None` when it has no members.
fn close_json(out: &mut Vec<u8>) -> Option<&[u8]> {
    if out.is_empty() {
        return None;
    }
    out.push(b'}');
    Some(out)
}

fn json_value(out: &mut Vec<u8>, v: &Value<'_>) {
    match *v {
        Value::Str(s) => json_string(out, s),
        Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
        Value::UInt(u) => out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes()),
        Value::Float(f) if f.is_finite() => {
            out.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes())
        }
        Value::Float(_) => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Json(j) => out.extend_from_slice(j),
    }
}

/// A JSON string of `s` (invalid UTF-8 replaced).
pub fn json_string(out: &mut Vec<u8>, s: &[u8]) {
    // Writing to a Vec cannot fail.
    let _ = tracekit_export::json::write_str(out, s);
}

fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::Thread => "thread",
        Scope::Process => "process",
        Scope::Global => "global",
    }
}

impl Sink for TimelineRows<'_, '_> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        // A batch never mixes sources.
        if let Some(slices) = &mut self.slices {
            slices.flush(self.tables)?;
        }
        self.clock = info.clock.scale();
        self.tables.set_source(Source {
            file: info.source.to_string(),
            host: info.host.map(|h| String::from_utf8_lossy(h).into_owned()),
            dialect: info.dialect,
        })
    }

    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        match *event {
            Event::Track(t) => {
                let (kind, tid) = match t.kind {
                    TrackKind::Process { .. } => (Kind::Process, None),
                    TrackKind::Thread { tid, .. } => (Kind::Thread, Some(tid)),
                    TrackKind::Lane { lane, .. } => (Kind::Lane, Some(lane)),
                    TrackKind::Counter { series, .. } => (
                        Kind::Counter {
                            series: series.to_string(),
                        },
                        None,
                    ),
                };
                match self.tracks.get_mut(&t.id) {
                    Some(s) => {
                        if let Some(n) = t.name {
                            s.name = Some(n.to_vec());
                        }
                        if t.sort_index.is_some() {
                            s.sort_index = t.sort_index;
                        }
                    }
                    None => {
                        self.tracks.insert(
                            t.id,
                            TrackState {
                                kind,
                                pid: t.kind.pid(),
                                tid,
                                parent: t.parent,
                                name: t.name.map(<[u8]>::to_vec),
                                sort_index: t.sort_index,
                                stack: Vec::new(),
                                depth: 0,
                            },
                        );
                    }
                }
            }
            // Span ids are OTLP's; the tables key tracks by their own id.
            Event::TrackOrigin { .. } => {}
            Event::TrackName { track, name } => {
                if let Some(s) = self.tracks.get_mut(&track) {
                    s.name = Some(name.to_vec());
                }
            }
            Event::TrackDone { track } => self.close_track(track)?,
            Event::Begin {
                track,
                ts,
                name,
                category,
                args,
                flows,
            } => {
                let id = self.next_slice;
                self.next_slice += 1;
                let Some(t) = self.tracks.get_mut(&track) else {
                    self.stats.undeclared_tracks += 1;
                    return Ok(());
                };
                let parent = t.depth.checked_sub(1).map(|d| t.stack[d].id);
                if t.stack.len() == t.depth {
                    t.stack.push(OpenSlice::default());
                }
                let o = &mut t.stack[t.depth];
                t.depth += 1;
                o.id = id;
                o.ts = ts;
                o.name.clear();
                o.name.extend_from_slice(name.text);
                o.key = name.key;
                o.category.clear();
                o.category.extend_from_slice(category);
                o.args.clear();
                json_members(&mut o.args, args);
                o.parent = parent;
                if !flows.is_empty() {
                    self.write_flows(id, track, ts, flows)?;
                }
            }
            Event::End { track, ts, args } => {
                let Some(t) = self.tracks.get_mut(&track) else {
                    self.stats.undeclared_tracks += 1;
                    return Ok(());
                };
                if t.depth == 0 {
                    self.stats.unmatched_ends += 1;
                    return Ok(());
                }
                t.depth -= 1;
                let depth = t.depth;
                let o = &mut t.stack[depth];
                json_members(&mut o.args, args);
                let row = SliceRow {
                    id: o.id,
                    track,
                    pid: t.pid,
                    tid: t.tid,
                    ts: o.ts,
                    dur: ts.saturating_sub(o.ts),
                    name: &o.name,
                    key: o.key,
                    category: &o.category,
                    args: close_json(&mut o.args),
                    depth,
                    parent: o.parent,
                };
                if let Some(slices) = &mut self.slices {
                    let clock = self.clock;
                    slices.push(self.tables, |c| c.push(clock, &row))?;
                }
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
                let id = self.next_slice;
                self.next_slice += 1;
                let Some(t) = self.tracks.get(&track) else {
                    self.stats.undeclared_tracks += 1;
                    return Ok(());
                };
                self.json.clear();
                json_members(&mut self.json, args);
                let row = SliceRow {
                    id,
                    track,
                    pid: t.pid,
                    tid: t.tid,
                    ts,
                    dur,
                    name: name.text,
                    key: name.key,
                    category,
                    args: close_json(&mut self.json),
                    depth: t.depth,
                    parent: t.depth.checked_sub(1).map(|d| t.stack[d].id),
                };
                if let Some(slices) = &mut self.slices {
                    let clock = self.clock;
                    slices.push(self.tables, |c| c.push(clock, &row))?;
                }
                if !flows.is_empty() {
                    self.write_flows(id, track, ts, flows)?;
                }
            }
            Event::Instant {
                track,
                ts,
                name,
                category,
                scope,
                args,
            } => {
                let Some(t) = self.tracks.get(&track) else {
                    self.stats.undeclared_tracks += 1;
                    return Ok(());
                };
                let (pid, tid) = (t.pid, t.tid);
                self.json.clear();
                json_members(&mut self.json, args);
                let json = close_json(&mut self.json);
                let clock = self.clock;
                self.tables.push(Table::Instants, |r| {
                    r.u64(track)
                        .i64(pid)
                        .opt_i64(tid)
                        .bytes(name.text)
                        .opt_bytes(opt_nonempty(category))
                        .str(scope_name(scope))
                        .i64(clock.to_ns(ts))
                        .time(clock.to_unix_ns(ts))
                        .opt_bytes(json);
                })?;
            }
            Event::Counter { track, ts, value } => {
                let Some(t) = self.tracks.get(&track) else {
                    self.stats.undeclared_tracks += 1;
                    return Ok(());
                };
                let series = match &t.kind {
                    Kind::Counter { series } => series.as_str(),
                    _ => "value",
                };
                let clock = self.clock;
                self.tables.push(Table::Counters, |r| {
                    r.u64(track)
                        .i64(t.pid)
                        .opt_bytes(t.name.as_deref())
                        .str(series)
                        .i64(clock.to_ns(ts))
                        .time(clock.to_unix_ns(ts))
                        .f64(value);
                })?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let mut ids: Vec<TrackId> = self.tracks.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.close_track(id)?;
        }
        if let Some(slices) = &mut self.slices {
            slices.flush(self.tables)?;
        }
        self.tables.flush()
    }
}

/// One finished slice, as the `slices` table has it.
struct SliceRow<'a> {
    id: u64,
    track: TrackId,
    pid: i64,
    tid: Option<i64>,
    ts: i64,
    dur: i64,
    name: &'a [u8],
    key: Option<u64>,
    category: &'a [u8],
    args: Option<&'a [u8]>,
    depth: usize,
    parent: Option<u64>,
}

/// The `slices` table's columns, one typed builder each (the table every
/// dialect fills most).
struct SliceColumns {
    slice_id: Prim<u64>,
    track_id: Prim<u64>,
    pid: Prim<i64>,
    tid: Prim<i64>,
    name: Text,
    name_key: Prim<u64>,
    category: Text,
    start_ns: Prim<i64>,
    start_time: Prim<i64>,
    dur_ns: Prim<i64>,
    depth: Prim<i32>,
    parent_slice_id: Prim<u64>,
    args: Text,
}

impl TypedColumns for SliceColumns {
    const TABLE: Table = Table::Slices;

    fn with_capacity(rows: usize) -> Self {
        let t = Self::TABLE;
        SliceColumns {
            slice_id: Prim::of(t, "slice_id", rows),
            track_id: Prim::of(t, "track_id", rows),
            pid: Prim::of(t, "pid", rows),
            tid: Prim::of(t, "tid", rows),
            name: Text::of(t, "name", rows),
            name_key: Prim::of(t, "name_key", rows),
            category: Text::of(t, "category", rows),
            start_ns: Prim::of(t, "start_ns", rows),
            start_time: Prim::of(t, "start_time", rows),
            dur_ns: Prim::of(t, "dur_ns", rows),
            depth: Prim::of(t, "depth", rows),
            parent_slice_id: Prim::of(t, "parent_slice_id", rows),
            args: Text::of(t, "args", rows),
        }
    }

    fn arrays(&mut self) -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("slice_id", self.slice_id.array::<UInt64Type>()),
            ("track_id", self.track_id.array::<UInt64Type>()),
            ("pid", self.pid.array::<Int64Type>()),
            ("tid", self.tid.array::<Int64Type>()),
            ("name", self.name.array()),
            ("name_key", self.name_key.array::<UInt64Type>()),
            ("category", self.category.array()),
            ("start_ns", self.start_ns.array::<Int64Type>()),
            ("start_time", self.start_time.time_array()),
            ("dur_ns", self.dur_ns.array::<Int64Type>()),
            ("depth", self.depth.array::<Int32Type>()),
            (
                "parent_slice_id",
                self.parent_slice_id.array::<UInt64Type>(),
            ),
            ("args", self.args.array()),
        ]
    }
}

impl SliceColumns {
    /// Stores the row of `s`.
    #[inline]
    fn push(&mut self, clock: NsScale, s: &SliceRow<'_>) {
        let start = clock.to_ns(s.ts);
        let end = clock.to_ns(s.ts.saturating_add(s.dur));
        self.slice_id.push(s.id);
        self.track_id.push(s.track);
        self.pid.push(s.pid);
        self.tid.push_option(s.tid);
        self.name.push(s.name);
        self.name_key.push_option(s.key);
        self.category.push_option(opt_nonempty(s.category));
        self.start_ns.push(start);
        self.start_time.push_option(clock.to_unix_ns(s.ts));
        self.dur_ns.push(end - start);
        self.depth.push(s.depth as i32);
        self.parent_slice_id.push_option(s.parent);
        self.args.push_option(s.args);
    }
}
