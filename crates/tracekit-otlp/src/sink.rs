//! The timeline model as OTLP spans: [`OtlpSink`], for `tracekit convert
//! --to otlp` of any dialect.
//!
//! * Every process, thread and lane track is a span (its start and end are
//!   the first and last time seen on it and on the tracks under it), child
//!   of its parent track's span; a process track is `SPAN_KIND_SERVER`,
//!   everything else `INTERNAL`.
//! * Every slice is a span, child of the slice it is nested in on its
//!   track, or of the track's span. Slice arguments become attributes
//!   under their own names (an `End`'s are added to its slice), the
//!   category `tracekit.category`.
//! * Instants are span events of the innermost slice open on their track
//!   at that time (or of the track's span); counter samples are events of
//!   the counter's parent track span. At most
//!   [`SinkOptions::max_events_per_span`] per span; more are counted in
//!   `dropped_events_count`.
//! * A flow becomes a link: the second slice of a flow links to the first.
//! * Ids (see [`crate::ids`]): a track with a [`Event::TrackOrigin`] (a
//!   Trace2 process) gets trace2receiver's ids from it, and the tracks
//!   and slices under it its trace id; everything else belongs to one
//!   trace per input. Span ids are derived from the trace id and the
//!   span's ordinal in the input, so the output is reproducible.
//! * Time: Unix nanoseconds from the clock's anchor; a clock without one
//!   (XRay's TSC) needs [`SinkOptions::fallback_anchor`] (the caller passes
//!   the file's mtime and says so): the first event is placed at it, and
//!   the resource says so in `tracekit.time.anchor`.
//!
//! **Architecture Invariant:** memory is the open spans (per track: its
//! span and its stack of open slices), the open flows and one piece of
//! completed spans ([`SinkOptions::spans_per_piece`]); a completed span is
//! handed to the output and forgotten.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::sync::Arc;

use tracekit_core::timeline::{
    Clock, Event, Flow, NsScale, Origin, Sink, TraceInfo, TrackId, TrackKind, Value,
};

use crate::batch::Piece;
use crate::exporter::Exporter;
use crate::ids::{self, SpanId, TraceId};
use crate::proto::{
    any_value, kv_int, kv_str, push_capped, resource_spans, sdk_attributes, span_kind, AnyValue,
    KeyValue, Span, SpanEvent, SpanLink,
};
use crate::redact::Redactor;

/// Where finished pieces go.
pub trait PieceOutput {
    fn put(&mut self, piece: Piece) -> io::Result<()>;
}

/// Pieces written one after the other: the file is one
/// `ExportTraceServiceRequest` (see [`crate::batch`]).
pub struct FileOutput<W: Write>(pub W);

impl<W: Write> PieceOutput for FileOutput<W> {
    fn put(&mut self, piece: Piece) -> io::Result<()> {
        self.0.write_all(&piece.bytes)
    }
}

impl PieceOutput for &Exporter {
    fn put(&mut self, piece: Piece) -> io::Result<()> {
        self.submit(piece);
        Ok(())
    }
}

impl<P: PieceOutput + ?Sized> PieceOutput for &mut P {
    fn put(&mut self, piece: Piece) -> io::Result<()> {
        (**self).put(piece)
    }
}

/// How the sink maps.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    pub redactor: Arc<Redactor>,
    /// For a clock without a Unix anchor: the Unix time (ns) to place the
    /// first event at, and what that time is (`"the file's mtime"`).
    pub fallback_anchor: Option<(i64, String)>,
    /// Resource attributes added to the sink's own (`host.name`, ...).
    pub resource: Vec<KeyValue>,
    pub max_events_per_span: usize,
    pub spans_per_piece: usize,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            redactor: Arc::new(Redactor::none()),
            fallback_anchor: None,
            resource: Vec::new(),
            max_events_per_span: 1000,
            spans_per_piece: 2048,
        }
    }
}

/// What the sink wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SinkStats {
    pub spans: u64,
    pub events: u64,
    pub links: u64,
    /// Events beyond the per-span cap.
    pub events_dropped: u64,
    /// Slices still open at their track's end (closed there).
    pub unclosed: u64,
    /// Traces written (distinct trace ids).
    pub traces: u64,
    /// The fallback anchor was used: times are placed, not measured.
    pub anchored_by_fallback: bool,
}

struct Open {
    span: Span,
    /// End tick of a `Complete` slice (it stays open for the slices nested
    /// in it); `None` for a `Begin` until its `End`.
    end: Option<i64>,
}

struct TrackState {
    kind: TrackKind<'static>,
    parent: Option<TrackId>,
    name: String,
    trace: Option<TraceId>,
    span_id: Option<SpanId>,
    /// Explicit parent span (from the origin); `None` with an origin is a
    /// root.
    origin_parent: Option<Option<SpanId>>,
    first: Option<i64>,
    last: i64,
    events: Vec<SpanEvent>,
    dropped_events: u32,
    stack: Vec<Open>,
}

/// The timeline model as OTLP; see the module docs.
pub struct OtlpSink<O: PieceOutput> {
    out: O,
    opts: SinkOptions,
    clock: NsScale,
    dialect: &'static str,
    source: String,
    host: Vec<u8>,
    /// Tick of the first event, for a relative clock.
    base: Option<i64>,
    input_trace: Option<TraceId>,
    tracks: HashMap<TrackId, TrackState>,
    flows: HashMap<u64, (TraceId, SpanId)>,
    pending: Vec<Span>,
    ordinal: u64,
    traces: HashSet<TraceId>,
    resource: Vec<KeyValue>,
    stats: SinkStats,
}

fn owned_kind(kind: TrackKind<'_>) -> TrackKind<'static> {
    match kind {
        TrackKind::Process { pid } => TrackKind::Process { pid },
        TrackKind::Thread { pid, tid } => TrackKind::Thread { pid, tid },
        TrackKind::Lane { pid, lane } => TrackKind::Lane { pid, lane },
        TrackKind::Counter { pid, .. } => TrackKind::Counter { pid, series: "" },
    }
}

/// A model value as an OTLP attribute value.
pub fn any_value(v: &Value<'_>, redactor: &Redactor) -> AnyValue {
    let value = match *v {
        Value::Str(s) | Value::Json(s) => any_value::Value::StringValue(redactor.text(s)),
        Value::Int(i) => any_value::Value::IntValue(i),
        Value::UInt(u) => match i64::try_from(u) {
            Ok(i) => any_value::Value::IntValue(i),
            Err(_) => any_value::Value::StringValue(u.to_string()),
        },
        Value::Float(f) => any_value::Value::DoubleValue(f),
        Value::Bool(b) => any_value::Value::BoolValue(b),
    };
    AnyValue { value: Some(value) }
}

fn attributes(args: &[(&str, Value<'_>)], redactor: &Redactor) -> Vec<KeyValue> {
    args.iter()
        .map(|(k, v)| KeyValue {
            key: (*k).to_string(),
            value: Some(any_value(v, redactor)),
        })
        .collect()
}

impl<O: PieceOutput> OtlpSink<O> {
    pub fn new(out: O, opts: SinkOptions) -> Self {
        OtlpSink {
            out,
            opts,
            clock: Clock::MICROS_UNIX.scale(),
            dialect: "",
            source: String::new(),
            host: Vec::new(),
            base: None,
            input_trace: None,
            tracks: HashMap::new(),
            flows: HashMap::new(),
            pending: Vec::new(),
            ordinal: 0,
            traces: HashSet::new(),
            resource: Vec::new(),
            stats: SinkStats::default(),
        }
    }

    pub fn stats(&self) -> &SinkStats {
        &self.stats
    }

    pub fn into_inner(self) -> O {
        self.out
    }

    fn unix_ns(&mut self, ts: i64) -> u64 {
        let ns = match self.clock.to_unix_ns(ts) {
            Some(ns) => ns,
            // No Unix anchor: placed from the first event.
            None => {
                let base = *self.base.get_or_insert(ts);
                let anchor = self.opts.fallback_anchor.as_ref().map_or(0, |a| a.0);
                anchor.saturating_add(self.clock.to_ns(ts.saturating_sub(base)))
            }
        };
        ns.max(0) as u64
    }

    /// The trace of one whole input, fixed at its first timed event.
    fn input_trace(&mut self, ts: i64) -> TraceId {
        if let Some(t) = self.input_trace {
            return t;
        }
        let first = self.unix_ns(ts) as i64;
        let t = ids::input_trace_id(self.dialect, &self.host, &self.source, first);
        self.input_trace = Some(t);
        t
    }

    fn trace_of(&mut self, track: TrackId, ts: i64) -> TraceId {
        let mut at = Some(track);
        while let Some(id) = at {
            let Some(t) = self.tracks.get(&id) else {
                break;
            };
            if let Some(trace) = t.trace {
                return trace;
            }
            at = t.parent;
        }
        self.input_trace(ts)
    }

    fn next_span_id(&mut self, trace: &TraceId) -> SpanId {
        self.ordinal += 1;
        ids::child_span_id(trace, self.ordinal)
    }

    /// The span id of a track (assigned at its first use).
    fn track_span_id(&mut self, track: TrackId, ts: i64) -> Option<SpanId> {
        let existing = self.tracks.get(&track)?.span_id;
        if existing.is_some() {
            return existing;
        }
        let trace = self.trace_of(track, ts);
        let id = self.next_span_id(&trace);
        if let Some(t) = self.tracks.get_mut(&track) {
            t.span_id = Some(id);
        }
        Some(id)
    }

    /// Notes that `track` (and the tracks above it) saw time `ts`.
    fn touch(&mut self, track: TrackId, ts: i64) {
        let mut at = Some(track);
        while let Some(id) = at {
            let Some(t) = self.tracks.get_mut(&id) else {
                break;
            };
            t.first = Some(t.first.map_or(ts, |f| f.min(ts)));
            t.last = t.last.max(ts);
            at = t.parent;
        }
    }

    /// Closes `Complete` slices on `track` that end at or before `ts`.
    fn settle(&mut self, track: TrackId, ts: i64) -> io::Result<()> {
        loop {
            let Some(t) = self.tracks.get_mut(&track) else {
                return Ok(());
            };
            match t.stack.last() {
                Some(Open { end: Some(end), .. }) if *end <= ts => {
                    let open = t.stack.pop().expect("checked");
                    self.emit(open.span)?;
                }
                _ => return Ok(()),
            }
        }
    }

    fn emit(&mut self, span: Span) -> io::Result<()> {
        self.stats.spans += 1;
        self.stats.events += span.events.len() as u64;
        self.stats.links += span.links.len() as u64;
        if let Ok(t) = <[u8; 16]>::try_from(&span.trace_id[..]) {
            self.traces.insert(t);
        }
        self.pending.push(span);
        if self.pending.len() >= self.opts.spans_per_piece {
            self.flush_piece(0)?;
        }
        Ok(())
    }

    fn flush_piece(&mut self, sessions: u64) -> io::Result<()> {
        if self.pending.is_empty() && sessions == 0 {
            return Ok(());
        }
        let rs = resource_spans(self.resource.clone(), std::mem::take(&mut self.pending));
        let mut piece = Piece::default();
        piece.push(&rs);
        piece.sessions = sessions;
        self.out.put(piece)
    }

    /// Adds an event to the innermost slice open on `track`, or the
    /// track's span (or, for a counter, its parent's).
    fn add_event(&mut self, track: TrackId, event: SpanEvent) {
        let cap = self.opts.max_events_per_span;
        let mut target = track;
        if let Some(t) = self.tracks.get(&track) {
            if matches!(t.kind, TrackKind::Counter { .. }) {
                if let Some(p) = t.parent {
                    target = p;
                }
            }
        }
        let Some(t) = self.tracks.get_mut(&target) else {
            return;
        };
        let (events, dropped) = match t.stack.last_mut() {
            Some(open) => (&mut open.span.events, &mut open.span.dropped_events_count),
            None => (&mut t.events, &mut t.dropped_events),
        };
        if !push_capped(events, dropped, cap, event) {
            self.stats.events_dropped += 1;
        }
    }

    /// Starts a slice span on `track`.
    #[allow(clippy::too_many_arguments)]
    fn open_slice(
        &mut self,
        track: TrackId,
        ts: i64,
        end: Option<i64>,
        name: &[u8],
        category: &[u8],
        args: &[(&str, Value<'_>)],
        flows: &[Flow],
    ) -> io::Result<()> {
        if !self.tracks.contains_key(&track) {
            return Ok(());
        }
        self.settle(track, ts)?;
        self.touch(track, ts);
        if let Some(end) = end {
            self.touch(track, end);
        }
        let trace = self.trace_of(track, ts);
        let parent = match self.tracks.get(&track).and_then(|t| t.stack.last()) {
            Some(open) => open.span.span_id.clone(),
            None => self
                .track_span_id(track, ts)
                .map(|s| s.to_vec())
                .unwrap_or_default(),
        };
        let span_id = self.next_span_id(&trace);
        let r = self.opts.redactor.clone();
        let mut attrs = attributes(args, &r);
        if !category.is_empty() {
            attrs.push(kv_str("tracekit.category", r.text(category)));
        }
        let mut links = Vec::new();
        for f in flows {
            match self.flows.remove(&f.id) {
                Some((t, s)) => {
                    links.push(SpanLink {
                        trace_id: t.to_vec(),
                        span_id: s.to_vec(),
                        attributes: vec![kv_int("tracekit.flow.id", f.id as i64)],
                        ..SpanLink::default()
                    });
                }
                None => {
                    self.flows.insert(f.id, (trace, span_id));
                }
            }
        }
        let start = self.unix_ns(ts);
        let end_ns = end.map(|e| self.unix_ns(e)).unwrap_or(start);
        let span = Span {
            trace_id: trace.to_vec(),
            span_id: span_id.to_vec(),
            parent_span_id: parent,
            name: r.text(name),
            kind: span_kind::INTERNAL,
            start_time_unix_nano: start,
            end_time_unix_nano: end_ns,
            attributes: attrs,
            links,
            ..Span::default()
        };
        if let Some(t) = self.tracks.get_mut(&track) {
            t.stack.push(Open { span, end });
        }
        Ok(())
    }

    /// Ends a track: its open slices (at its last time), then its span.
    fn close_track(&mut self, track: TrackId) -> io::Result<()> {
        let Some(last) = self.tracks.get(&track).map(|t| t.last) else {
            return Ok(());
        };
        loop {
            let Some(t) = self.tracks.get_mut(&track) else {
                return Ok(());
            };
            let Some(mut open) = t.stack.pop() else {
                break;
            };
            if open.end.is_none() {
                self.stats.unclosed += 1;
                open.span.end_time_unix_nano = self.unix_ns(last);
                open.span
                    .attributes
                    .push(crate::proto::kv_bool("tracekit.unclosed", true));
            }
            self.emit(open.span)?;
        }
        let Some(t) = self.tracks.remove(&track) else {
            return Ok(());
        };
        let Some(first) = t.first else {
            return Ok(()); // nothing happened on it
        };
        if matches!(t.kind, TrackKind::Counter { .. }) {
            return Ok(());
        }
        // Children that outlive their parent's end (they were declared
        // under it) still point at its span: keep the span id known.
        let trace = match t.trace {
            Some(tr) => tr,
            None => {
                // Put the state back briefly to resolve through parents.
                let parent = t.parent;
                match parent {
                    Some(p) => self.trace_of(p, first),
                    None => self.input_trace(first),
                }
            }
        };
        let span_id = match t.span_id {
            Some(s) => s,
            None => self.next_span_id(&trace),
        };
        let parent_span = match t.origin_parent {
            Some(explicit) => explicit.map(|s| s.to_vec()).unwrap_or_default(),
            None => match t.parent {
                Some(p) => self
                    .track_span_id(p, first)
                    .map(|s| s.to_vec())
                    .unwrap_or_default(),
                None => Vec::new(),
            },
        };
        let mut attrs = Vec::new();
        let kind = match t.kind {
            TrackKind::Process { pid } => {
                attrs.push(kv_int("process.pid", pid));
                span_kind::SERVER
            }
            TrackKind::Thread { tid, .. } => {
                attrs.push(kv_int("thread.id", tid));
                span_kind::INTERNAL
            }
            TrackKind::Lane { lane, .. } => {
                attrs.push(kv_int("tracekit.lane", lane));
                span_kind::INTERNAL
            }
            TrackKind::Counter { .. } => span_kind::INTERNAL,
        };
        let start = self.unix_ns(first);
        let end = self.unix_ns(t.last);
        let span = Span {
            trace_id: trace.to_vec(),
            span_id: span_id.to_vec(),
            parent_span_id: parent_span,
            name: t.name,
            kind,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: attrs,
            events: t.events,
            dropped_events_count: t.dropped_events,
            ..Span::default()
        };
        self.emit(span)
    }
}

impl<O: PieceOutput> Sink for OtlpSink<O> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        self.clock = info.clock.scale();
        self.dialect = info.dialect;
        self.source = info.source.to_string();
        self.host = info.host.unwrap_or_default().to_vec();
        let r = self.opts.redactor.clone();
        let mut res = vec![
            kv_str("service.name", format!("tracekit-{}", info.dialect)),
            kv_str("tracekit.dialect", info.dialect),
            kv_str("tracekit.source", r.apply(info.source).into_owned()),
        ];
        res.extend(sdk_attributes());
        if let Some(h) = info.host {
            res.push(kv_str("host.name", r.text(h)));
        }
        if info.clock.origin == Origin::Relative {
            match &self.opts.fallback_anchor {
                Some((_, what)) => {
                    self.stats.anchored_by_fallback = true;
                    res.push(kv_str(
                        "tracekit.time.anchor",
                        format!(
                            "{what}: the trace's clock has no wall-clock anchor, its first \
                             event is placed at this time; absolute times are approximate"
                        ),
                    ));
                }
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "{}: the trace's clock has no wall-clock anchor and none was given \
                             (OTLP needs Unix times)",
                            info.source
                        ),
                    ))
                }
            }
        }
        res.extend(self.opts.resource.iter().cloned());
        self.resource = res;
        Ok(())
    }

    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        match *event {
            Event::Track(t) => {
                let r = self.opts.redactor.clone();
                let name = match (t.name, t.kind) {
                    (Some(n), _) => r.text(n),
                    (None, TrackKind::Process { pid }) => format!("process {pid}"),
                    (None, TrackKind::Thread { tid, .. }) => format!("thread {tid}"),
                    (None, TrackKind::Lane { lane, .. }) => format!("lane {lane}"),
                    (None, TrackKind::Counter { series, .. }) => series.to_string(),
                };
                match self.tracks.get_mut(&t.id) {
                    Some(existing) => existing.name = name,
                    None => {
                        self.tracks.insert(
                            t.id,
                            TrackState {
                                kind: owned_kind(t.kind),
                                parent: t.parent,
                                name,
                                trace: None,
                                span_id: None,
                                origin_parent: None,
                                first: None,
                                last: i64::MIN,
                                events: Vec::new(),
                                dropped_events: 0,
                                stack: Vec::new(),
                            },
                        );
                    }
                }
                Ok(())
            }
            Event::TrackName { track, name } => {
                let n = self.opts.redactor.text(name);
                if let Some(t) = self.tracks.get_mut(&track) {
                    t.name = n;
                }
                Ok(())
            }
            Event::TrackOrigin {
                track,
                trace,
                span,
                parent,
            } => {
                if let Some(t) = self.tracks.get_mut(&track) {
                    t.trace = Some(ids::trace2_trace_id(trace));
                    t.span_id = Some(ids::trace2_component_span_id(span));
                    t.origin_parent = Some(parent.map(ids::trace2_component_span_id));
                }
                Ok(())
            }
            Event::TrackDone { track } => self.close_track(track),
            Event::Begin {
                track,
                ts,
                name,
                category,
                args,
                flows,
            } => self.open_slice(track, ts, None, name.text, category, args, flows),
            Event::Complete {
                track,
                ts,
                dur,
                name,
                category,
                args,
                flows,
            } => self.open_slice(
                track,
                ts,
                Some(ts.saturating_add(dur.max(0))),
                name.text,
                category,
                args,
                flows,
            ),
            Event::End { track, ts, args } => {
                self.touch(track, ts);
                let end_ns = self.unix_ns(ts);
                let r = self.opts.redactor.clone();
                // Complete slices nested in the closing one end first.
                loop {
                    let Some(t) = self.tracks.get_mut(&track) else {
                        return Ok(());
                    };
                    match t.stack.pop() {
                        Some(mut open) if open.end.is_some() => {
                            if open.span.end_time_unix_nano > end_ns {
                                open.span.end_time_unix_nano = end_ns;
                            }
                            self.emit(open.span)?;
                        }
                        Some(mut open) => {
                            open.span.end_time_unix_nano =
                                end_ns.max(open.span.start_time_unix_nano);
                            open.span.attributes.extend(attributes(args, &r));
                            return self.emit(open.span);
                        }
                        None => return Ok(()),
                    }
                }
            }
            Event::Instant {
                track,
                ts,
                name,
                category,
                args,
                ..
            } => {
                if !self.tracks.contains_key(&track) {
                    return Ok(());
                }
                self.settle(track, ts)?;
                self.touch(track, ts);
                let r = self.opts.redactor.clone();
                let mut attrs = attributes(args, &r);
                if !category.is_empty() {
                    attrs.push(kv_str("tracekit.category", r.text(category)));
                }
                let ev = SpanEvent {
                    time_unix_nano: self.unix_ns(ts),
                    name: r.text(name.text),
                    attributes: attrs,
                    dropped_attributes_count: 0,
                };
                self.add_event(track, ev);
                Ok(())
            }
            Event::Counter { track, ts, value } => {
                let Some(t) = self.tracks.get(&track) else {
                    return Ok(());
                };
                let name = t.name.clone();
                self.touch(track, ts);
                let ev = SpanEvent {
                    time_unix_nano: self.unix_ns(ts),
                    name,
                    attributes: vec![crate::proto::kv_f64("value", value)],
                    dropped_attributes_count: 0,
                };
                self.add_event(track, ev);
                Ok(())
            }
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        // Tracks never declared done: children before parents, so a
        // parent's span covers what its children saw.
        let mut rest: Vec<(usize, TrackId)> = self
            .tracks
            .keys()
            .map(|&id| {
                let mut depth = 0;
                let mut at = self.tracks.get(&id).and_then(|t| t.parent);
                while let Some(p) = at {
                    depth += 1;
                    at = self.tracks.get(&p).and_then(|t| t.parent);
                }
                (depth, id)
            })
            .collect();
        rest.sort_by(|a, b| b.cmp(a));
        for (_, id) in rest {
            self.close_track(id)?;
        }
        self.stats.traces = self.traces.len() as u64;
        let sessions = self.stats.traces;
        self.flush_piece(sessions)
    }
}
