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
use tracekit_core::timeline::{Args, Clock, Event, Flow, Name, Scope, Sink, TraceInfo, TrackId};
use tracekit_core::timeline::{TrackKind, Value};

use crate::rows::{Source, Tables};
use crate::schema::Table;

#[derive(Default)]
struct OpenSlice {
    id: u64,
    ts: i64,
    name: Vec<u8>,
    key: Option<u64>,
    category: Vec<u8>,
    /// The JSON object's members so far (without braces).
    args: String,
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
    clock: Clock,
    tracks: FxHashMap<TrackId, TrackState>,
    next_slice: u64,
    json: String,
    pub stats: RowStats,
}

impl<'t, 'o> TimelineRows<'t, 'o> {
    pub fn new(tables: &'t mut Tables<'o>) -> Self {
        TimelineRows {
            tables,
            clock: Clock::MICROS_UNIX,
            tracks: FxHashMap::default(),
            next_slice: 0,
            json: String::new(),
            stats: RowStats::default(),
        }
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

/// Appends `"key":value` members for `args` to `out`.
pub fn json_members(out: &mut String, args: Args<'_>) {
    for (k, v) in args {
        if !out.is_empty() {
            out.push(',');
        }
        json_string(out, k.as_bytes());
        out.push(':');
        json_value(out, v);
    }
}

fn json_value(out: &mut String, v: &Value<'_>) {
    match *v {
        Value::Str(s) => json_string(out, s),
        Value::Int(i) => out.push_str(itoa::Buffer::new().format(i)),
        Value::UInt(u) => out.push_str(itoa::Buffer::new().format(u)),
        Value::Float(f) if f.is_finite() => out.push_str(ryu::Buffer::new().format_finite(f)),
        Value::Float(_) => out.push_str("null"),
        Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Value::Json(j) => out.push_str(&String::from_utf8_lossy(j)),
    }
}

/// A JSON string of `s` (invalid UTF-8 replaced).
pub fn json_string(out: &mut String, s: &[u8]) {
    let s = String::from_utf8_lossy(s);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
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
        self.clock = info.clock;
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
                let (pid, tid) = (t.pid, t.tid);
                let o = &mut t.stack[depth];
                json_members(&mut o.args, args);
                let clock = self.clock;
                let o = &*o;
                self.json.clear();
                if !o.args.is_empty() {
                    self.json.push('{');
                    self.json.push_str(&o.args);
                    self.json.push('}');
                }
                let json = &self.json;
                self.tables.push(Table::Slices, |r| {
                    r.u64(o.id)
                        .u64(track)
                        .i64(pid)
                        .opt_i64(tid)
                        .bytes(&o.name)
                        .opt_u64(o.key)
                        .opt_bytes(opt_nonempty(&o.category))
                        .i64(clock.to_ns(o.ts))
                        .time(clock.to_unix_ns(o.ts))
                        .i64(clock.to_ns(ts) - clock.to_ns(o.ts))
                        .i32(depth as i32)
                        .opt_u64(o.parent)
                        .opt_str((!json.is_empty()).then_some(json.as_str()));
                })?;
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
                let parent = t.depth.checked_sub(1).map(|d| t.stack[d].id);
                let (pid, tid, depth) = (t.pid, t.tid, t.depth);
                self.slice_row(
                    id, track, pid, tid, ts, dur, name, category, args, depth, parent,
                )?;
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
                let json = &self.json;
                let clock = self.clock;
                self.tables.push(Table::Instants, |r| {
                    r.u64(track)
                        .i64(pid)
                        .opt_i64(tid)
                        .bytes(name.text)
                        .opt_bytes(opt_nonempty(category))
                        .str(scope_name(scope))
                        .i64(clock.to_ns(ts))
                        .time(clock.to_unix_ns(ts));
                    if json.is_empty() {
                        r.opt_str(None);
                    } else {
                        r.str(&format!("{{{json}}}"));
                    }
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
        self.tables.flush()
    }
}

impl TimelineRows<'_, '_> {
    #[allow(clippy::too_many_arguments)]
    fn slice_row(
        &mut self,
        id: u64,
        track: TrackId,
        pid: i64,
        tid: Option<i64>,
        ts: i64,
        dur: i64,
        name: Name<'_>,
        category: &[u8],
        args: Args<'_>,
        depth: usize,
        parent: Option<u64>,
    ) -> io::Result<()> {
        self.json.clear();
        json_members(&mut self.json, args);
        let json = &self.json;
        let clock = self.clock;
        let start = clock.to_ns(ts);
        let end = clock.to_ns(ts.saturating_add(dur));
        self.tables.push(Table::Slices, |r| {
            r.u64(id)
                .u64(track)
                .i64(pid)
                .opt_i64(tid)
                .bytes(name.text)
                .opt_u64(name.key)
                .opt_bytes(opt_nonempty(category))
                .i64(start)
                .time(clock.to_unix_ns(ts))
                .i64(end - start)
                .i32(depth as i32);
            r.opt_u64(parent);
            if json.is_empty() {
                r.opt_str(None);
            } else {
                r.str(&format!("{{{json}}}"));
            }
        })
    }
}
