//! The timeline model as a native Perfetto trace (`.pftrace`): a stream of
//! `TracePacket`s with `TrackDescriptor`s and `TrackEvent`s, as Perfetto's
//! `protos/perfetto/trace/` define them (field numbers in
//! `docs/formats/timeline-sinks.md`, checked against the compiled protos).
//!
//! Layout, chosen for size and for streaming:
//!
//! * Track descriptors travel on a sequence of their own (id 1), written
//!   when the model declares or renames a track. Processes and threads
//!   whose numbers fit Perfetto's 32-bit pid/tid get process and thread
//!   descriptors; lanes, counters and anything else are named tracks under
//!   their parent.
//! * Every track's events travel on a packet sequence of their own, opened
//!   at its first event with `SEQ_INCREMENTAL_STATE_CLEARED`, packet
//!   defaults naming the track (so events carry no track uuid) and a
//!   sequence-scoped *incremental* clock (id 64, ns, anchored to
//!   `BOOTTIME` by a clock snapshot), so each packet's timestamp is the
//!   delta from the previous one: a few bytes instead of eight. An event
//!   earlier than its predecessor on the track re-anchors the clock with a
//!   new snapshot.
//! * Event names, categories and argument names are interned per sequence
//!   (`InternedData`, iids from 1); packets that define or use them carry
//!   `SEQ_NEEDS_INCREMENTAL_STATE`.
//! * Complete slices become `SLICE_BEGIN` + `SLICE_END`; arguments become
//!   debug annotations; flows are `flow_ids`/`terminating_flow_ids` on the
//!   slices that carry them; counter samples `double_counter_value`.
//! * Packets travel in bundles, as Perfetto's tracing service writes them
//!   when a trace config asks for compression: each MiB of encoded
//!   `Trace.packet` fields is deflated (zlib) into one packet's
//!   `compressed_packets`, which trace_processor and the UI expand in place.
//!   A call trace's packets are a dozen bytes of nearly the same fields,
//!   and compress about sevenfold at zlib's fastest level.
//!   [`PerfettoSink::uncompressed`] writes the packets as they are.
//!
//! Timestamps are nanoseconds: Unix time when the trace's clock is anchored
//! to it, else nanoseconds from the trace's tick 0 (negative ones, which
//! Perfetto cannot hold, become 0 and are counted in [`PerfettoStats`]).
//!
//! **Architecture Invariant:** state is per live track (its sequence and
//! intern tables), dropped on [`Event::TrackDone`]; packets are written as
//! they are made.

use std::io::{self, Write};

use rustc_hash::FxHashMap;
use tracekit_core::timeline::{
    Clock, Event, Flow, Name, NsScale, Sink, TraceInfo, TrackId, TrackKind, Value,
};

use crate::proto;

// TracePacket fields.
const PACKET: u32 = 1; // Trace.packet
const TIMESTAMP: u32 = 8;
const CLOCK_SNAPSHOT: u32 = 6;
const SEQUENCE_ID: u32 = 10;
const TRACK_EVENT: u32 = 11;
const INTERNED_DATA: u32 = 12;
const SEQUENCE_FLAGS: u32 = 13;
const TIMESTAMP_CLOCK_ID: u32 = 58;
const PACKET_DEFAULTS: u32 = 59;
const TRACK_DESCRIPTOR: u32 = 60;
const COMPRESSED_PACKETS: u32 = 50;
/// Uncompressed bytes of packets per compressed bundle.
const BUNDLE_BYTES: usize = 1 << 20;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
// Clocks.
const BOOTTIME: u64 = 6;
/// A sequence-scoped clock (ids 64..127 are the producer's).
const INCREMENTAL_CLOCK: u64 = 64;
// TrackEvent fields and types.
const TE_CATEGORY_IIDS: u32 = 3;
const TE_DEBUG_ANNOTATIONS: u32 = 4;
const TE_TYPE: u32 = 9;
const TE_NAME_IID: u32 = 10;
const TE_DOUBLE_COUNTER_VALUE: u32 = 44;
const TE_FLOW_IDS: u32 = 47;
const TE_TERMINATING_FLOW_IDS: u32 = 48;
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
const TYPE_COUNTER: u64 = 4;
// InternedData fields.
const INTERNED_CATEGORIES: u32 = 1;
const INTERNED_NAMES: u32 = 2;
const INTERNED_ANNOTATION_NAMES: u32 = 3;
/// The sequence of the track descriptors.
const DESCRIPTOR_SEQUENCE: u32 = 1;

/// What was written, for the CLI's summary and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PerfettoStats {
    /// Packets of the trace (those inside compressed bundles).
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Timestamps before Perfetto's zero, written as 0.
    pub clamped_timestamps: u64,
}

/// Interning tables and the clock of one packet sequence.
struct Sequence {
    id: u32,
    /// The previous packet's timestamp (ns), once the clock is anchored.
    last_ns: Option<u64>,
    keyed_names: FxHashMap<u64, u64>,
    names: FxHashMap<Box<[u8]>, u64>,
    categories: FxHashMap<Box<[u8]>, u64>,
    annotation_names: FxHashMap<Box<str>, u64>,
    next_iid: u64,
}

/// A declared track: what its descriptor says, and its event sequence.
struct TrackState {
    uuid: u64,
    parent_uuid: Option<u64>,
    kind: DescKind,
    name: Option<Box<[u8]>>,
    sort_index: Option<i64>,
    seq: Option<Sequence>,
}

#[derive(Clone, Copy)]
enum DescKind {
    Process { pid: i32 },
    Thread { pid: i32, tid: i32 },
    Counter,
    Named,
}

/// Writes the timeline as a Perfetto protobuf trace to `W`.
pub struct PerfettoSink<W: Write> {
    out: W,
    clock: NsScale,
    tracks: FxHashMap<TrackId, TrackState>,
    next_sequence: u32,
    stats: PerfettoStats,
    // Reusable buffers: the packet, its track event, its interned data,
    // one nested message.
    packet: Vec<u8>,
    event: Vec<u8>,
    interned: Vec<u8>,
    nested: Vec<u8>,
    /// Encoded `Trace.packet` fields waiting to be compressed (`None`:
    /// packets are written as they are made).
    bundle: Option<Vec<u8>>,
    finished: bool,
}

fn uuid_of(track: TrackId) -> u64 {
    // Perfetto reserves uuid 0; any other value is ours.
    track.wrapping_add(1).max(1)
}

impl<W: Write> PerfettoSink<W> {
    /// A sink that writes packets in compressed bundles.
    pub fn new(out: W) -> Self {
        let mut sink = Self::uncompressed(out);
        sink.bundle = Some(Vec::with_capacity(BUNDLE_BYTES + 4096));
        sink
    }

    /// A sink that writes every packet as it is (for readers without zlib).
    pub fn uncompressed(out: W) -> Self {
        PerfettoSink {
            out,
            clock: Clock::MICROS_UNIX.scale(),
            tracks: FxHashMap::default(),
            next_sequence: DESCRIPTOR_SEQUENCE + 1,
            stats: PerfettoStats::default(),
            packet: Vec::with_capacity(256),
            event: Vec::with_capacity(128),
            interned: Vec::with_capacity(128),
            nested: Vec::with_capacity(64),
            bundle: None,
            finished: false,
        }
    }

    pub fn stats(&self) -> PerfettoStats {
        self.stats
    }

    /// Writes what is pending, flushes and gives the output back.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush_bundle()?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Writes `self.packet` as one `Trace.packet` field: to the output, or
    /// to the bundle being filled.
    fn flush_packet(&mut self) -> io::Result<()> {
        let head = field_head(PACKET, self.packet.len());
        self.stats.packets += 1;
        match self.bundle.as_mut() {
            Some(bundle) => {
                bundle.extend_from_slice(&head);
                bundle.extend_from_slice(&self.packet);
                self.packet.clear();
                if bundle.len() >= BUNDLE_BYTES {
                    self.flush_bundle()?;
                }
            }
            None => {
                self.out.write_all(&head)?;
                self.out.write_all(&self.packet)?;
                self.stats.bytes += (head.len() + self.packet.len()) as u64;
                self.packet.clear();
            }
        }
        Ok(())
    }

    /// Writes the packets of the bundle, deflated, as one packet's
    /// `compressed_packets`.
    fn flush_bundle(&mut self) -> io::Result<()> {
        let Some(bundle) = self.bundle.as_mut().filter(|b| !b.is_empty()) else {
            return Ok(());
        };
        let mut z = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(bundle.len() / 4),
            flate2::Compression::fast(),
        );
        z.write_all(bundle)?;
        let deflated = z.finish()?;
        bundle.clear();
        let inner = field_head(COMPRESSED_PACKETS, deflated.len());
        let outer = field_head(PACKET, inner.len() + deflated.len());
        for part in [&outer[..], &inner[..], &deflated[..]] {
            self.out.write_all(part)?;
        }
        self.stats.bytes += (outer.len() + inner.len() + deflated.len()) as u64;
        Ok(())
    }

    fn track(&mut self, id: TrackId) -> io::Result<&mut TrackState> {
        self.tracks.get_mut(&id).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("timeline event on track {id}, which was never declared"),
            )
        })
    }

    fn write_descriptor(&mut self, id: TrackId) -> io::Result<()> {
        let Some(t) = self.tracks.get(&id) else {
            return Ok(());
        };
        let desc = &mut self.event;
        desc.clear();
        proto::uint(desc, 1, t.uuid);
        let name = t.name.as_deref();
        match t.kind {
            DescKind::Process { pid } => {
                let n = &mut self.nested;
                n.clear();
                proto::int(n, 1, i64::from(pid));
                if let Some(name) = name {
                    proto::string(n, 6, name);
                }
                proto::bytes(desc, 3, n);
            }
            DescKind::Thread { pid, tid } => {
                let n = &mut self.nested;
                n.clear();
                proto::int(n, 1, i64::from(pid));
                proto::int(n, 2, i64::from(tid));
                if let Some(name) = name {
                    proto::string(n, 5, name);
                }
                proto::bytes(desc, 4, n);
            }
            DescKind::Counter | DescKind::Named => {
                if let Some(p) = t.parent_uuid {
                    proto::uint(desc, 5, p);
                }
                if let Some(name) = name {
                    proto::string(desc, 2, name);
                }
                if matches!(t.kind, DescKind::Counter) {
                    proto::bytes(desc, 8, &[]);
                }
            }
        }
        if let Some(rank) = t.sort_index {
            proto::int(
                desc,
                12,
                rank.clamp(i64::from(i32::MIN), i64::from(i32::MAX)),
            );
        }
        proto::uint(
            &mut self.packet,
            SEQUENCE_ID,
            u64::from(DESCRIPTOR_SEQUENCE),
        );
        proto::bytes(&mut self.packet, TRACK_DESCRIPTOR, &self.event);
        self.flush_packet()
    }

    /// The timestamp in Perfetto's nanoseconds.
    fn ns(&mut self, ts: i64) -> u64 {
        let ns = match self.clock.to_unix_ns(ts) {
            Some(ns) => ns,
            None => self.clock.to_ns(ts),
        };
        if ns < 0 {
            self.stats.clamped_timestamps += 1;
            0
        } else {
            ns as u64
        }
    }

    /// Starts an event packet on `track`'s sequence at `ts`: anchors the
    /// sequence's clock first when needed, and writes the packet's
    /// timestamp (a delta) and sequence id. Returns the sequence id.
    fn open_event(&mut self, track: TrackId, ts: i64) -> io::Result<()> {
        let ns = self.ns(ts);
        let next_sequence = &mut self.next_sequence;
        let t = self.tracks.get_mut(&track).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("timeline event on track {track}, which was never declared"),
            )
        })?;
        let uuid = t.uuid;
        let seq = t.seq.get_or_insert_with(|| {
            let id = *next_sequence;
            *next_sequence = next_sequence.wrapping_add(1).max(DESCRIPTOR_SEQUENCE + 1);
            Sequence {
                id,
                last_ns: None,
                keyed_names: FxHashMap::default(),
                names: FxHashMap::default(),
                categories: FxHashMap::default(),
                annotation_names: FxHashMap::default(),
                next_iid: 1,
            }
        });
        let seq_id = seq.id;
        let fresh = seq.last_ns.is_none();
        let delta = match seq.last_ns {
            Some(last) if ns >= last => Some(ns - last),
            _ => None,
        };
        seq.last_ns = Some(ns);
        if delta.is_none() {
            // Anchor (or re-anchor) the incremental clock at `ns`.
            let p = &mut self.packet;
            proto::uint(p, TIMESTAMP, ns);
            proto::uint(p, TIMESTAMP_CLOCK_ID, BOOTTIME);
            proto::uint(p, SEQUENCE_ID, u64::from(seq_id));
            let snap = &mut self.event;
            snap.clear();
            for (clock, incremental) in [(INCREMENTAL_CLOCK, true), (BOOTTIME, false)] {
                let c = &mut self.nested;
                c.clear();
                proto::uint(c, 1, clock);
                proto::uint(c, 2, ns);
                if incremental {
                    proto::uint(c, 3, 1);
                }
                proto::bytes(snap, 1, c);
            }
            proto::bytes(p, CLOCK_SNAPSHOT, snap);
            if fresh {
                proto::uint(p, SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
                let d = &mut self.event;
                d.clear();
                proto::uint(d, TIMESTAMP_CLOCK_ID, INCREMENTAL_CLOCK);
                let te = &mut self.nested;
                te.clear();
                proto::uint(te, 11, uuid);
                proto::bytes(d, 11, te);
                proto::bytes(p, PACKET_DEFAULTS, d);
            }
            self.flush_packet()?;
        }
        let p = &mut self.packet;
        proto::uint(p, TIMESTAMP, delta.unwrap_or(0));
        proto::uint(p, SEQUENCE_ID, u64::from(seq_id));
        self.event.clear();
        self.interned.clear();
        Ok(())
    }

    fn sequence(&mut self, track: TrackId) -> &mut Sequence {
        self.tracks
            .get_mut(&track)
            .and_then(|t| t.seq.as_mut())
            .expect("open_event created the sequence")
    }

    /// The iid of an event name on `track`'s sequence, interning it in
    /// this packet when new.
    fn name_iid(&mut self, track: TrackId, name: Name<'_>) -> u64 {
        let seq = self.sequence(track);
        let found = match name.key {
            Some(k) => seq.keyed_names.get(&k).copied(),
            None => seq.names.get(name.text).copied(),
        };
        if let Some(iid) = found {
            return iid;
        }
        let iid = seq.next_iid;
        seq.next_iid += 1;
        match name.key {
            Some(k) => seq.keyed_names.insert(k, iid),
            None => seq.names.insert(name.text.into(), iid),
        };
        self.intern(INTERNED_NAMES, iid, name.text);
        iid
    }

    fn category_iid(&mut self, track: TrackId, category: &[u8]) -> u64 {
        let seq = self.sequence(track);
        if let Some(&iid) = seq.categories.get(category) {
            return iid;
        }
        let iid = seq.next_iid;
        seq.next_iid += 1;
        seq.categories.insert(category.into(), iid);
        self.intern(INTERNED_CATEGORIES, iid, category);
        iid
    }

    fn annotation_iid(&mut self, track: TrackId, name: &str) -> u64 {
        let seq = self.sequence(track);
        if let Some(&iid) = seq.annotation_names.get(name) {
            return iid;
        }
        let iid = seq.next_iid;
        seq.next_iid += 1;
        seq.annotation_names.insert(name.into(), iid);
        self.intern(INTERNED_ANNOTATION_NAMES, iid, name.as_bytes());
        iid
    }

    fn intern(&mut self, field: u32, iid: u64, text: &[u8]) {
        let e = &mut self.nested;
        e.clear();
        proto::uint(e, 1, iid);
        proto::string(e, 2, text);
        proto::bytes(&mut self.interned, field, e);
    }

    fn annotations(&mut self, track: TrackId, args: &[(&str, Value<'_>)]) {
        for (name, value) in args {
            let iid = self.annotation_iid(track, name);
            let a = &mut self.nested;
            a.clear();
            proto::uint(a, 1, iid);
            match *value {
                Value::Bool(b) => proto::uint(a, 2, u64::from(b)),
                Value::UInt(n) => proto::uint(a, 3, n),
                Value::Int(n) => proto::int(a, 4, n),
                Value::Float(f) => proto::double(a, 5, f),
                Value::Str(s) => proto::string(a, 6, s),
                Value::Json(j) => proto::string(a, 9, j),
            }
            proto::bytes(&mut self.event, TE_DEBUG_ANNOTATIONS, a);
        }
    }

    fn flows(&mut self, flows: &[Flow]) {
        for f in flows {
            let field = if f.terminating {
                TE_TERMINATING_FLOW_IDS
            } else {
                TE_FLOW_IDS
            };
            proto::fixed64(&mut self.event, field, f.id);
        }
    }

    /// Finishes the packet opened by [`Self::open_event`] with the track
    /// event built in `self.event` (and the interned data it introduced).
    /// `interning`: whether the event defines or uses interned strings;
    /// such packets say so (`SEQ_NEEDS_INCREMENTAL_STATE`), as Perfetto's
    /// documentation of interning asks, so a reader that lost the
    /// sequence's state drops them. (A slice end or a counter sample uses
    /// none: two bytes saved on half the packets of a call trace.)
    fn close_event(&mut self, interning: bool) -> io::Result<()> {
        let p = &mut self.packet;
        if !self.interned.is_empty() {
            proto::bytes(p, INTERNED_DATA, &self.interned);
        }
        if interning {
            proto::uint(p, SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        }
        proto::bytes(p, TRACK_EVENT, &self.event);
        self.flush_packet()
    }

    #[allow(clippy::too_many_arguments)]
    fn slice_begin(
        &mut self,
        track: TrackId,
        ts: i64,
        name: Name<'_>,
        category: &[u8],
        args: &[(&str, Value<'_>)],
        flows: &[Flow],
    ) -> io::Result<()> {
        self.open_event(track, ts)?;
        // Field order as Perfetto writes them does not matter to readers;
        // interning first fills `self.interned` before the event is built.
        let name_iid = self.name_iid(track, name);
        let cat_iid = (!category.is_empty()).then(|| self.category_iid(track, category));
        proto::uint(&mut self.event, TE_TYPE, TYPE_SLICE_BEGIN);
        proto::uint(&mut self.event, TE_NAME_IID, name_iid);
        if let Some(c) = cat_iid {
            proto::uint(&mut self.event, TE_CATEGORY_IIDS, c);
        }
        self.annotations(track, args);
        self.flows(flows);
        self.close_event(true)
    }

    fn slice_end(&mut self, track: TrackId, ts: i64, args: &[(&str, Value<'_>)]) -> io::Result<()> {
        self.open_event(track, ts)?;
        proto::uint(&mut self.event, TE_TYPE, TYPE_SLICE_END);
        self.annotations(track, args);
        self.close_event(!args.is_empty())
    }
}

/// A length-delimited field's key and length (at most 5 + 10 bytes).
struct FieldHead {
    buf: [u8; 15],
    len: usize,
}

impl std::ops::Deref for FieldHead {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

fn field_head(field: u32, len: usize) -> FieldHead {
    let mut h = FieldHead {
        buf: [0; 15],
        len: 0,
    };
    for mut v in [u64::from(field << 3 | 2), len as u64] {
        while v >= 0x80 {
            h.buf[h.len] = v as u8 | 0x80;
            v >>= 7;
            h.len += 1;
        }
        h.buf[h.len] = v as u8;
        h.len += 1;
    }
    h
}

fn fits_i32(n: i64) -> Option<i32> {
    i32::try_from(n).ok()
}

impl<W: Write> Sink for PerfettoSink<W> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        self.clock = info.clock.scale();
        Ok(())
    }

    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        match *event {
            Event::Track(t) => {
                let parent_uuid = t.parent.map(uuid_of);
                let kind = match t.kind {
                    TrackKind::Process { pid } => match fits_i32(pid) {
                        Some(pid) => DescKind::Process { pid },
                        None => DescKind::Named,
                    },
                    TrackKind::Thread { pid, tid } => match (fits_i32(pid), fits_i32(tid)) {
                        (Some(pid), Some(tid)) => DescKind::Thread { pid, tid },
                        _ => DescKind::Named,
                    },
                    TrackKind::Lane { .. } => DescKind::Named,
                    TrackKind::Counter { .. } => DescKind::Counter,
                };
                let state = self.tracks.entry(t.id).or_insert_with(|| TrackState {
                    uuid: uuid_of(t.id),
                    parent_uuid,
                    kind,
                    name: None,
                    sort_index: None,
                    seq: None,
                });
                state.parent_uuid = parent_uuid;
                state.kind = kind;
                if let Some(n) = t.name {
                    state.name = Some(n.into());
                }
                if t.sort_index.is_some() {
                    state.sort_index = t.sort_index;
                }
                self.write_descriptor(t.id)
            }
            Event::TrackName { track, name } => {
                self.track(track)?.name = Some(name.into());
                self.write_descriptor(track)
            }
            Event::TrackDone { track } => {
                self.tracks.remove(&track);
                Ok(())
            }
            // Perfetto's uuids are per trace; nothing to link.
            Event::TrackOrigin { .. } => Ok(()),
            Event::Begin {
                track,
                ts,
                name,
                category,
                args,
                flows,
            } => self.slice_begin(track, ts, name, category, args, flows),
            Event::End { track, ts, args } => self.slice_end(track, ts, args),
            Event::Complete {
                track,
                ts,
                dur,
                name,
                category,
                args,
                flows,
            } => {
                self.slice_begin(track, ts, name, category, args, flows)?;
                self.slice_end(track, ts.saturating_add(dur.max(0)), &[])
            }
            Event::Instant {
                track,
                ts,
                name,
                category,
                args,
                ..
            } => {
                self.open_event(track, ts)?;
                let name_iid = self.name_iid(track, name);
                let cat_iid = (!category.is_empty()).then(|| self.category_iid(track, category));
                proto::uint(&mut self.event, TE_TYPE, TYPE_INSTANT);
                proto::uint(&mut self.event, TE_NAME_IID, name_iid);
                if let Some(c) = cat_iid {
                    proto::uint(&mut self.event, TE_CATEGORY_IIDS, c);
                }
                self.annotations(track, args);
                self.close_event(true)
            }
            Event::Counter { track, ts, value } => {
                self.open_event(track, ts)?;
                proto::uint(&mut self.event, TE_TYPE, TYPE_COUNTER);
                proto::double(&mut self.event, TE_DOUBLE_COUNTER_VALUE, value);
                self.close_event(false)
            }
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        if !self.finished {
            self.finished = true;
            self.flush_bundle()?;
            self.out.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::timeline::Track;

    fn varint(b: &[u8], i: &mut usize) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let c = b[*i];
            *i += 1;
            v |= u64::from(c & 0x7f) << shift;
            shift += 7;
            if c < 0x80 {
                return v;
            }
        }
    }

    /// Length-delimited fields of a message (every field here is one).
    fn fields(b: &[u8]) -> Vec<(u64, &[u8])> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let key = varint(b, &mut i);
            assert_eq!(key & 7, 2, "not length-delimited");
            let len = varint(b, &mut i) as usize;
            out.push((key >> 3, &b[i..i + len]));
            i += len;
        }
        out
    }

    fn write(sink: &mut PerfettoSink<Vec<u8>>, calls: usize) {
        let info = TraceInfo {
            dialect: "test",
            source: "test",
            clock: Clock::MICROS_UNIX,
            host: None,
        };
        sink.start(&info).unwrap();
        sink.event(&Event::Track(Track {
            id: 7,
            parent: None,
            kind: TrackKind::Thread { pid: 1, tid: 2 },
            name: Some(b"main"),
            sort_index: None,
        }))
        .unwrap();
        for i in 0..calls as i64 {
            let name = Name::keyed(if i % 3 == 0 { b"a" } else { b"bb" }, (i % 3) as u64);
            sink.event(&Event::Complete {
                track: 7,
                ts: 10 * i,
                dur: 5,
                name,
                category: b"",
                args: &[],
                flows: &[],
            })
            .unwrap();
        }
        sink.finish().unwrap();
    }

    /// The compressed sink's bundles, inflated, are the uncompressed
    /// sink's bytes: the same packets in the same order.
    #[test]
    fn bundles_expand_to_the_packets() {
        use std::io::Read;
        let calls = 200_000; // several bundles
        let mut plain = PerfettoSink::uncompressed(Vec::new());
        write(&mut plain, calls);
        let plain = plain.into_inner().unwrap();
        let mut packed = PerfettoSink::new(Vec::new());
        write(&mut packed, calls);
        let stats = packed.stats();
        let packed = packed.into_inner().unwrap();
        assert_eq!(stats.bytes, packed.len() as u64);
        assert_eq!(stats.packets, 1 + 2 * calls as u64 + 1);
        let bundles = fields(&packed);
        assert!(bundles.len() > 2, "{} bundles", bundles.len());
        let mut expanded = Vec::new();
        for (field, packet) in bundles {
            assert_eq!(field, u64::from(PACKET));
            let inner = fields(packet);
            assert_eq!(inner.len(), 1);
            assert_eq!(inner[0].0, u64::from(COMPRESSED_PACKETS));
            flate2::read::ZlibDecoder::new(inner[0].1)
                .read_to_end(&mut expanded)
                .unwrap();
        }
        assert!(
            expanded == plain,
            "expanded bundles differ from the packets"
        );
        assert!(
            packed.len() * 5 < plain.len(),
            "{} vs {}",
            packed.len(),
            plain.len()
        );
    }
}
