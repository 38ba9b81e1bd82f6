//! What the LD_PRELOAD recorder (`tracekit-rtrace-preload`) records —
//! fixed-layout binary events, a header and the memory maps, which travel
//! through a POSIX trace stream that [`capture`] reads — kept in a
//! `.tkmem` file ([`packed`], `record mem`'s default) or split into one
//! raw file of chunks per process image (`record mem --format raw`), and
//! read back: as the sp-rtrace text protocol ([`Decoder`]) or as the
//! items the text readers make of that text ([`Events`], what the reports
//! and conversions take), from either.
//!
//! Events arrive in per-thread chunks; each carries a number from one
//! process-wide counter, so merging the few chunks whose ranges overlap
//! restores the global order with memory bounded by how far the threads'
//! chunks interleave. The raw files' format is in `docs/formats/rtrace.md`
//! §14, the `.tkmem` file's in `docs/formats/tkmem.md`.

use std::io::Write;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashSet as HashSet;
use tracekit_core::{Error, Position, Result, Warnings};

use crate::marker::{Marker, MarkerKind};
use crate::number_map::NumberMap;
use crate::reader::{Backtrace, Batch, CallEvent, FullCall, Item, CALL_BATCH};
use crate::record::{format_call, format_frame, Call, CallKind, Frame, Header, HeaderField};

/// The recorder's event layout.
pub use tracekit_rtrace_preload::wire;

use wire::*;

pub mod allocators;
pub mod attach;
pub mod capture;
pub mod packed;
pub mod set;

/// What the recording's header chunk says.
#[derive(Debug, Clone, Default)]
pub struct RecordingInfo {
    pub pid: u32,
    pub ppid: u32,
    pub start_epoch_s: u64,
    pub backtrace_depth: u32,
    pub modules: u32,
    pub executable: String,
    /// How the image ended, if the recording says.
    pub end: Option<capture::ImageEnd>,
}

/// Counts of a decode.
#[derive(Debug, Default, Clone)]
pub struct DecodeStats {
    pub events: u64,
    pub allocs: u64,
    pub frees: u64,
    /// Event numbers never seen (a thread killed with unwritten events).
    pub lost: u64,
    /// Bytes at the end that did not form a whole chunk.
    pub truncated_bytes: u64,
    /// Allocations naming a backtrace that was never defined (written
    /// without frames).
    pub unknown_backtraces: u64,
    /// Events that arrived twice (dropped).
    pub duplicates: u64,
    /// Markers the program made (`include/tracekit/mem.h`), written as
    /// `## tracekit-marker: ` comments (not counted in `events`).
    pub markers: u64,
}

/// Where the recorder file's bytes come from: a file read with `pread`
/// (pages are copied from the page cache, nothing stays mapped, so the
/// recorder's resident memory does not grow with the recording), or
/// bytes in memory.
pub(crate) trait Source {
    fn size(&self) -> u64;
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

/// Recorder bytes in memory.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Source for Bytes<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let off = usize::try_from(off).map_err(|_| std::io::ErrorKind::UnexpectedEof)?;
        let src = off
            .checked_add(buf.len())
            .and_then(|end| self.0.get(off..end))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl Source for std::fs::File {
    fn size(&self) -> u64 {
        self.metadata().map_or(0, |m| m.len())
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, off)
    }
}

/// A chunk: its tag, and where its payload lies in the file.
#[derive(Clone, Copy)]
pub(crate) struct Chunk {
    pub(crate) tag: [u8; 4],
    pub(crate) offset: u64,
    pub(crate) len: usize,
}

impl Chunk {
    fn read(&self, src: &dyn Source) -> Result<Vec<u8>> {
        self.read_into(src, Vec::new())
    }

    /// The payload, in `buf` (reused: only its growth is cleared).
    pub(crate) fn read_into(&self, src: &dyn Source, mut buf: Vec<u8>) -> Result<Vec<u8>> {
        if buf.len() < self.len {
            buf.resize(self.len, 0);
        }
        buf.truncate(self.len);
        src.read_at(self.offset + 8, &mut buf)
            .map_err(|e| Error::io(None, e))?;
        Ok(buf)
    }
}

/// The chunks of the file (their headers only), and the bytes at the end
/// that did not form a whole chunk.
pub(crate) fn chunks(src: &dyn Source) -> Result<(Vec<Chunk>, u64)> {
    let size = src.size();
    let mut out = Vec::new();
    let mut off = 0u64;
    let mut head = [0u8; 8];
    while off + 8 <= size {
        src.read_at(off, &mut head)
            .map_err(|e| Error::io(None, e))?;
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
        if off + 8 + len > size {
            break;
        }
        out.push(Chunk {
            tag: [head[0], head[1], head[2], head[3]],
            offset: off,
            len: len as usize,
        });
        off += 8 + len;
    }
    Ok((out, size - off))
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// `start_epoch_s` as `YYYY.M.D HH:MM:SS` local time (the sp-rtrace
/// header format).
fn local_timestamp(epoch: u64) -> String {
    let t = epoch as libc::time_t;
    // SAFETY: localtime_r writes into our zeroed struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a time_t and a tm.
    let ok = !unsafe { libc::localtime_r(&t, &mut tm) }.is_null();
    if !ok {
        return epoch.to_string();
    }
    format!(
        "{}.{}.{} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// The shim's header record (the `TKHD` chunk's payload), `None` if it is
/// too short.
pub(crate) fn parse_header(h: &[u8]) -> Option<RecordingInfo> {
    if h.len() < HEADER_FIXED {
        return None;
    }
    Some(RecordingInfo {
        pid: u32_at(h, 0),
        ppid: u32_at(h, 4),
        start_epoch_s: u64_at(h, 8),
        backtrace_depth: u32_at(h, 24),
        modules: u32_at(h, 28),
        executable: String::from_utf8_lossy(&h[HEADER_FIXED..]).into_owned(),
        end: None,
    })
}

/// What the header chunk (and the last end chunk) of a recording say.
fn info_of(src: &dyn Source, chunks: &[Chunk]) -> Result<RecordingInfo> {
    let head = chunks
        .iter()
        .find(|c| c.tag == TAG_HEADER)
        .ok_or_else(|| Error::malformed(Position::Offset(0), "no recorder header chunk"))?;
    let mut info = parse_header(&head.read(src)?).ok_or_else(|| {
        Error::malformed(
            Position::Offset(head.offset),
            "recorder header chunk too short",
        )
    })?;
    info.end = match chunks.iter().rev().find(|c| c.tag == TAG_END) {
        Some(c) => capture::ImageEnd::decode(&c.read(src)?),
        None => None,
    };
    Ok(info)
}

/// What a recording file's header says, without decoding its events.
pub fn read_info(path: &Path) -> Result<RecordingInfo> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(Some(path), e))?;
    let (chunks, _) = chunks(&f).map_err(|e| e.in_file(path))?;
    info_of(&f, &chunks).map_err(|e| e.in_file(path))
}

/// Decodes a recorder file into text.
pub fn decode_file<W: Write>(path: &Path, out: W) -> Result<(RecordingInfo, DecodeStats)> {
    Decoder::open(path)?
        .write_to(out)
        .map_err(|e| e.in_file(path))
}

/// Decodes recorder bytes into text.
pub fn decode<W: Write>(data: &[u8], out: W) -> Result<(RecordingInfo, DecodeStats)> {
    Decoder::from_bytes(data)?.write_to(out)
}

/// Does `head` (a file's first bytes) start a tracekit raw recording (the
/// files of `record mem --format raw`)?
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(&TAG_FILE)
}

/// Where an image's event chunks come from: the `TKEV` chunks of a raw
/// recording (wire records as they are), or the events blocks of a
/// `.tkmem` file (decoded into wire records, the stack field naming a
/// trace-tree node).
enum ChunkSource<'a> {
    Raw {
        src: Box<dyn Source + 'a>,
        chunks: Vec<Chunk>,
    },
    Packed {
        src: Arc<dyn Source + Send + Sync>,
        blocks: Vec<packed::EventsRef>,
        scratch: Box<(Vec<u8>, Vec<u8>, packed::BlockState)>,
    },
}

impl ChunkSource<'_> {
    fn size(&self) -> u64 {
        match self {
            ChunkSource::Raw { src, .. } => src.size(),
            ChunkSource::Packed { blocks, .. } => blocks
                .iter()
                .map(|b| u64::from(b.header.stored) + packed::BLOCK_HEAD as u64)
                .sum(),
        }
    }

    /// Chunk `k`'s records, in `buf` (reused); adds what could not be
    /// decoded to `stats`.
    fn load(&mut self, k: usize, mut buf: Vec<u8>, stats: &mut DecodeStats) -> Result<Vec<u8>> {
        match self {
            ChunkSource::Raw { src, chunks } => chunks[k].read_into(&**src, buf),
            ChunkSource::Packed {
                src,
                blocks,
                scratch,
            } => {
                buf.clear();
                stats.truncated_bytes +=
                    packed::decode_events(&**src, &blocks[k], &mut buf, scratch)?;
                Ok(buf)
            }
        }
    }

    /// Bytes of the file chunk `k` stands for (progress).
    fn bytes(&self, k: usize) -> u64 {
        match self {
            ChunkSource::Raw { chunks, .. } => 8 + chunks[k].len as u64,
            ChunkSource::Packed { blocks, .. } => {
                u64::from(blocks[k].header.stored) + packed::BLOCK_HEAD as u64
            }
        }
    }
}

/// The backtraces of an image by number: return addresses, defined by
/// the raw recording's `KIND_STACK` records as they are met, or (a
/// `.tkmem` file) by its trace tree when first asked for. Numbers come
/// from one counter per process image (a `.tkmem` file's nodes from one
/// per file), so most are small: those are found by index.
#[derive(Default)]
struct Stacks {
    addrs: Vec<u64>,
    /// Where backtrace `id`'s addresses are in `addrs`.
    at: NumberMap<(usize, usize)>,
    dict: Option<Arc<packed::Dict>>,
    scratch: Vec<u64>,
}

impl Stacks {
    /// Registers a `KIND_STACK` record (whole, as `record_len` says). A
    /// number keeps its first definition.
    fn define(&mut self, rec: &[u8]) {
        let n = rec[1] as usize;
        let id = u32_at(rec, 4);
        if self.defined(id).is_some() {
            return;
        }
        let start = self.addrs.len();
        self.addrs
            .extend((0..n).map(|i| u64_at(rec, STACK_HEAD + 8 * i)));
        self.place(id, start);
    }

    fn place(&mut self, id: u32, start: usize) {
        self.at.insert(id, (start, self.addrs.len()));
    }

    #[inline]
    fn defined(&self, id: u32) -> Option<(usize, usize)> {
        self.at.get(id).copied()
    }

    /// The addresses of backtrace `id` (`None`: never defined).
    fn get(&mut self, id: u32) -> Option<&[u64]> {
        if let Some((s, e)) = self.defined(id) {
            return self.addrs.get(s..e);
        }
        let dict = self.dict.as_ref()?;
        if id == packed::UNKNOWN_NODE {
            return None;
        }
        dict.frames(id, &mut self.scratch)?;
        let start = self.addrs.len();
        self.addrs.extend_from_slice(&self.scratch);
        self.place(id, start);
        self.addrs.get(start..)
    }
}

/// Backtraces as the text of their frame lines, each formatted once
/// however many calls share it.
#[derive(Default)]
struct StackText {
    text: Vec<u8>,
    /// Where backtrace `id`'s lines are in `text`.
    at: NumberMap<(usize, usize)>,
}

impl StackText {
    #[inline]
    fn get<'s>(&'s mut self, stacks: &mut Stacks, id: u32) -> Option<&'s [u8]> {
        if let Some(&(s, e)) = self.at.get(id) {
            return self.text.get(s..e);
        }
        let addrs = stacks.get(id)?;
        let start = self.text.len();
        for &a in addrs {
            format_frame(&mut self.text, a);
        }
        let end = self.text.len();
        self.at.insert(id, (start, end));
        self.text.get(start..end)
    }
}

/// One thread's chunk being merged: the current record's number and
/// length (`len` 0: none left).
struct Cursor {
    payload: Vec<u8>,
    off: usize,
    seq: u64,
    len: usize,
}

impl Cursor {
    /// Moves to the next whole event record, registering the backtrace
    /// definitions on the way; `false` if there is none.
    #[inline]
    fn advance(&mut self, bt: &mut Stacks) -> bool {
        loop {
            let p = &self.payload[self.off..];
            let Some(len) = record_len(p).filter(|&l| l <= p.len()) else {
                self.len = 0;
                return false;
            };
            if p[0] != KIND_STACK {
                self.seq = record_seq(p);
                self.len = len;
                return true;
            }
            bt.define(&p[..len]);
            self.off += len;
        }
    }
}

/// An image's events in the order of their numbers: the threads' chunks,
/// visited by their first number, the few whose ranges overlap merged. A
/// number never seen is counted lost, one seen twice (from the stream and
/// from a spill file) dropped. Memory is bounded by how far the threads'
/// chunks interleave, not by the recording's length.
struct Merge<'a> {
    src: ChunkSource<'a>,
    /// Event chunks by their first number, and how many have been opened.
    pending: Vec<(u64, usize)>,
    pending_at: usize,
    /// Open chunks (about one per thread), and the one that gave the last
    /// event (usually the next one's too).
    open: Vec<Cursor>,
    hot: usize,
    /// The cursor whose current record was handed out last.
    taken: Option<usize>,
    /// Payload buffers of finished chunks, for the next ones.
    spare: Vec<Vec<u8>>,
    /// The number of the next event.
    next: u64,
    /// Bytes of the file whose chunks have been opened.
    decoded: u64,
}

impl<'a> Merge<'a> {
    /// The merge of a raw recording's event chunks: only a chunk's first
    /// records are read now (they say its first number).
    fn raw(
        src: Box<dyn Source + 'a>,
        chunks: &[Chunk],
        stacks: &mut Stacks,
        stats: &mut DecodeStats,
    ) -> Result<Merge<'a>> {
        // A thread's buffer is written when it fills or at exit, so a
        // chunk's place in the file says little about its numbers (the
        // main thread's first events often come last).
        let mut pending: Vec<(u64, usize)> = Vec::new();
        let events: Vec<Chunk> = chunks
            .iter()
            .filter(|c| c.tag == TAG_EVENTS)
            .copied()
            .collect();
        for (k, c) in events.iter().enumerate() {
            let mut prefix = Cursor {
                payload: vec![0u8; c.len.min(4096)],
                off: 0,
                seq: 0,
                len: 0,
            };
            src.read_at(c.offset + 8, &mut prefix.payload)
                .map_err(|e| Error::io(None, e))?;
            let mut found = prefix.advance(stacks);
            if !found && c.len > prefix.payload.len() {
                prefix.payload = c.read(&*src)?;
                prefix.off = 0;
                found = prefix.advance(stacks);
            }
            if found {
                pending.push((prefix.seq, k));
            } else {
                stats.truncated_bytes += (c.len - prefix.off) as u64;
            }
        }
        Ok(Merge::new(
            ChunkSource::Raw {
                src,
                chunks: events,
            },
            pending,
        ))
    }

    /// The merge of an image's events blocks in a `.tkmem` file (their
    /// headers say their first numbers).
    fn packed(src: Arc<dyn Source + Send + Sync>, blocks: Vec<packed::EventsRef>) -> Merge<'a> {
        let pending = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.header.count > 0)
            .map(|(k, b)| (b.header.first, k))
            .collect();
        Merge::new(
            ChunkSource::Packed {
                src,
                blocks,
                scratch: Default::default(),
            },
            pending,
        )
    }

    fn new(src: ChunkSource<'a>, mut pending: Vec<(u64, usize)>) -> Merge<'a> {
        pending.sort_by_key(|&(first, k)| (first, k));
        Merge {
            src,
            pending,
            pending_at: 0,
            open: Vec::new(),
            hot: 0,
            taken: None,
            spare: Vec::new(),
            next: 0,
            decoded: 0,
        }
    }

    /// Moves cursor `i` past its current record; whether it has another.
    #[inline]
    fn step(&mut self, i: usize, stacks: &mut Stacks, stats: &mut DecodeStats) -> bool {
        let c = &mut self.open[i];
        c.off += c.len;
        if c.advance(stacks) {
            self.hot = i;
            true
        } else {
            let c = self.open.swap_remove(i);
            stats.truncated_bytes += (c.payload.len() - c.off) as u64;
            self.spare.push(c.payload);
            false
        }
    }

    /// The next event record (wire layout, whole), `None` at the end.
    #[inline]
    fn next(&mut self, stacks: &mut Stacks, stats: &mut DecodeStats) -> Result<Option<&[u8]>> {
        if let Some(i) = self.taken.take() {
            // Most often the same chunk holds the next number, and no
            // chunk waits to be opened before it.
            if self.step(i, stacks, stats)
                && self.open[i].seq == self.next
                && self
                    .pending
                    .get(self.pending_at)
                    .is_none_or(|&(first, _)| first > self.next)
            {
                self.next = self.next.saturating_add(1);
                self.taken = Some(i);
                let c = &self.open[i];
                return Ok(Some(&c.payload[c.off..c.off + c.len]));
            }
        }
        loop {
            // Open the chunks whose turn has come.
            while let Some(&(first, k)) = self.pending.get(self.pending_at) {
                if first > self.next {
                    break;
                }
                self.pending_at += 1;
                self.decoded += self.src.bytes(k);
                let buf = self.spare.pop().unwrap_or_default();
                let mut cursor = Cursor {
                    payload: self.src.load(k, buf, stats)?,
                    off: 0,
                    seq: 0,
                    len: 0,
                };
                if cursor.advance(stacks) {
                    self.open.push(cursor);
                } else {
                    stats.truncated_bytes += (cursor.payload.len() - cursor.off) as u64;
                    self.spare.push(cursor.payload);
                }
            }
            // The chunk holding the next number (or one seen before).
            let next = self.next;
            let i = if self.open.get(self.hot).is_some_and(|c| c.seq <= next) {
                self.hot
            } else {
                match self.open.iter().position(|c| c.seq <= next) {
                    Some(i) => i,
                    None => {
                        // A number that never came: skip to the smallest
                        // one left.
                        let in_open = self.open.iter().map(|c| c.seq).min();
                        let in_pending = self.pending.get(self.pending_at).map(|p| p.0);
                        match in_open.into_iter().chain(in_pending).min() {
                            Some(skip_to) => {
                                stats.lost += skip_to.saturating_sub(next);
                                self.next = skip_to;
                                continue;
                            }
                            None => {
                                self.decoded = self.src.size();
                                return Ok(None);
                            }
                        }
                    }
                }
            };
            if self.open[i].seq == next {
                self.next = next.saturating_add(1);
                self.taken = Some(i);
                let c = &self.open[i];
                return Ok(Some(&c.payload[c.off..c.off + c.len]));
            }
            // A number seen before: the same event delivered twice.
            stats.duplicates += 1;
            let _ = self.step(i, stacks, stats);
        }
    }
}

/// Keeps call times monotonic in number order: threads read the clock
/// just after taking their number, so a later number can carry an earlier
/// millisecond (the text format orders calls by time, then index). A
/// smaller value after the midnight-of-uptime wrap is kept.
#[inline]
fn monotonic_ms(ts: u32, last_ts: &mut Option<u32>) -> u32 {
    let mut ts = ts;
    if let Some(prev) = *last_ts {
        if ts < prev && prev - ts < 60_000 {
            ts = prev;
        }
    }
    *last_ts = Some(ts);
    ts
}

/// One process image of a recording, opened for reading: its header, the
/// map lines and resource types of its text, and its events in order.
struct Image<'a> {
    info: RecordingInfo,
    /// The text before the first call (header, registry, map lines).
    prologue: Vec<u8>,
    /// The resource tags call lines carry.
    tags: [Option<&'static str>; RES_TYPES],
    merge: Merge<'a>,
    stacks: Stacks,
    stats: DecodeStats,
    last_ts: Option<u32>,
    progress: Option<Box<dyn FnMut(u64) + 'a>>,
    reported: u64,
}

impl<'a> Image<'a> {
    /// A raw recording's image.
    fn raw(src: Box<dyn Source + 'a>) -> Result<Image<'a>> {
        let (chunks, truncated) = chunks(&*src)?;
        if let Some(sig) = chunks.first().filter(|c| c.tag == TAG_FILE) {
            let v = sig.read(&*src)?;
            let version = v.get(..4).map_or(0, |b| u32_at(b, 0));
            if version != RAW_VERSION {
                return Err(Error::malformed(
                    Position::Offset(8),
                    format!(
                        "tracekit recording format version {version}: this tracekit reads version {RAW_VERSION}"
                    ),
                ));
            }
        }
        let info = info_of(&*src, &chunks)?;
        let mut stats = DecodeStats {
            truncated_bytes: truncated,
            ..Default::default()
        };
        // Executable mappings: those of the last maps snapshot, then
        // those only earlier snapshots had (objects unloaded before the
        // end; the shim sends the maps whenever its unwinder finds a new
        // object), each once, so every frame has its module.
        let mut maps: Vec<(String, u64, u64)> = Vec::new();
        let mut seen: HashSet<(String, u64, u64)> = HashSet::default();
        for c in chunks.iter().rev().filter(|c| c.tag == TAG_MAPS) {
            let snapshot = c.read(&*src)?;
            for m in packed::exec_mappings(&String::from_utf8_lossy(&snapshot)) {
                if seen.insert(m.clone()) {
                    maps.push(m);
                }
            }
        }
        let mut prologue = Vec::new();
        let tags = write_prologue(&info, &maps, &mut prologue)?;
        let mut stacks = Stacks::default();
        let merge = Merge::raw(src, &chunks, &mut stacks, &mut stats)?;
        Ok(Image {
            info,
            prologue,
            tags,
            merge,
            stacks,
            stats,
            last_ts: None,
            progress: None,
            reported: 0,
        })
    }

    /// Image `k` of a `.tkmem` file.
    fn packed(file: &packed::PackedFile, k: usize) -> Result<Image<'a>> {
        let image = file.images.get(k).ok_or_else(|| {
            Error::Other(format!(
                "the recording has {} process images, not {}",
                file.images.len(),
                k + 1
            ))
        })?;
        let info = image.info.clone();
        let mut prologue = Vec::new();
        let tags = write_prologue(&info, &file.image_maps(k), &mut prologue)?;
        Ok(Image {
            info,
            prologue,
            tags,
            merge: Merge::packed(file.src.clone(), image.blocks.clone()),
            stacks: Stacks {
                dict: Some(file.dict.clone()),
                ..Stacks::default()
            },
            stats: DecodeStats::default(),
            last_ts: None,
            progress: None,
            reported: 0,
        })
    }

    /// Tells the progress callback what has been decoded since.
    fn report_progress(&mut self) {
        if let Some(progress) = &mut self.progress {
            let d = self.merge.decoded;
            progress(d - self.reported.min(d));
            self.reported = d;
        }
    }
}

/// Turns a recording into the sp-rtrace text protocol a piece at a time:
/// [`Decoder::write_to`] writes it all; as a [`std::io::BufRead`] it is
/// what the text readers take. Memory is bounded by how far the threads'
/// chunks interleave, not by the recording's length.
pub struct Decoder<'a> {
    image: Image<'a>,
    /// The text of the current piece, `text[..pos]` (the buffer is longer:
    /// the room one more call needs); `text[at..pos]` is not read yet.
    text: Vec<u8>,
    pos: usize,
    at: usize,
    /// The prologue (header, registry, maps) is the first piece.
    started: bool,
    done: bool,
    stack_text: StackText,
    fmt: CallFormatter,
}

/// Bytes of text per piece (one write, or one fill of a reader's buffer).
const LINE_BATCH: usize = 256 << 10;
/// Room after a piece for one more call line with the longest backtrace
/// a record can define (255 frames of at most 20 bytes) and the closing
/// comments.
const SLACK: usize = CALL_MAX + 255 * 20 + 1 + 1024;

impl Decoder<'static> {
    /// A decoder of the raw recording in `path` (read with `pread`, a
    /// chunk at a time: nothing stays mapped).
    pub fn open(path: &Path) -> Result<Decoder<'static>> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(Some(path), e))?;
        let len = f.metadata().map_err(|e| Error::io(Some(path), e))?.len();
        if len == 0 {
            return Err(Error::malformed(Position::Offset(0), "empty recording").in_file(path));
        }
        Decoder::new(Image::raw(Box::new(f)).map_err(|e| e.in_file(path))?)
    }

    /// A decoder of image `k` of a `.tkmem` file: the same text the raw
    /// recording of that image decodes to.
    pub fn packed(file: &packed::PackedFile, k: usize) -> Result<Decoder<'static>> {
        Decoder::new(Image::packed(file, k)?)
    }
}

impl<'a> Decoder<'a> {
    /// A decoder of raw recording bytes in memory.
    pub fn from_bytes(data: &'a [u8]) -> Result<Decoder<'a>> {
        Decoder::new(Image::raw(Box::new(Bytes(data)))?)
    }

    fn new(image: Image<'a>) -> Result<Decoder<'a>> {
        let mut text = Vec::with_capacity(LINE_BATCH + SLACK);
        text.extend_from_slice(&image.prologue);
        let pos = text.len();
        text.resize(pos.max(LINE_BATCH) + SLACK, 0);
        let fmt = CallFormatter::new(image.tags);
        Ok(Decoder {
            image,
            text,
            pos,
            at: 0,
            started: false,
            done: false,
            stack_text: StackText::default(),
            fmt,
        })
    }

    /// What the recording's header says (and how the image ended).
    pub fn info(&self) -> &RecordingInfo {
        &self.image.info
    }

    /// Calls `progress` with how many more bytes of the recording have
    /// been decoded as the text is read (for a progress bar over the
    /// recording's size).
    pub fn on_progress(mut self, progress: impl FnMut(u64) + 'a) -> Self {
        self.image.progress = Some(Box::new(progress));
        self
    }

    /// Writes the whole text to `out`.
    pub fn write_to<W: Write>(mut self, mut out: W) -> Result<(RecordingInfo, DecodeStats)> {
        loop {
            self.fill()?;
            if self.pos == 0 {
                break;
            }
            out.write_all(&self.text[..self.pos])
                .map_err(|e| Error::io(None, e))?;
        }
        out.flush().map_err(|e| Error::io(None, e))?;
        Ok((self.image.info, self.image.stats))
    }

    /// Makes `text[..pos]` the next piece (`pos` 0: the end).
    fn fill(&mut self) -> Result<()> {
        self.at = 0;
        if !self.started {
            // The prologue, made by `new`, is the first piece.
            self.started = true;
            if self.pos > 0 {
                return Ok(());
            }
        }
        self.pos = 0;
        if !self.done {
            self.decode_events()?;
        }
        self.image.report_progress();
        Ok(())
    }

    /// Formats events in number order until a piece is full or they end
    /// (then the closing comments follow).
    fn decode_events(&mut self) -> Result<()> {
        let Decoder {
            image,
            text,
            pos,
            done,
            stack_text,
            fmt,
            ..
        } = self;
        while *pos < LINE_BATCH {
            let Some(rec) = image.merge.next(&mut image.stacks, &mut image.stats)? else {
                *pos += epilogue(&mut text[*pos..], &image.info, &image.stats);
                *done = true;
                return Ok(());
            };
            *pos += emit(
                rec,
                &mut text[*pos..],
                fmt,
                stack_text,
                &mut image.stacks,
                &mut image.stats,
                &mut image.last_ts,
            );
        }
        Ok(())
    }
}

impl std::io::Read for Decoder<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let avail = std::io::BufRead::fill_buf(self)?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        std::io::BufRead::consume(self, n);
        Ok(n)
    }
}

impl std::io::BufRead for Decoder<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at >= self.pos || !self.started {
            self.fill().map_err(std::io::Error::other)?;
        }
        Ok(&self.text[self.at..self.pos])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.pos);
    }
}

/// A recording's image as the items the text readers' [`Assembler`]
/// makes of its text — the same items, line numbers included — without
/// writing the text and reading it back: calls are made from the events,
/// each backtrace's frames made once and shared. This is how `report`,
/// `convert`, `postproc` and the SQL tables read raw recordings and
/// `.tkmem` files.
///
/// [`Assembler`]: crate::reader::Assembler
pub struct Events<'a> {
    image: Image<'a>,
    /// Items of the prologue and the closing comments, in order.
    queue: std::collections::VecDeque<Item>,
    warnings: Warnings,
    /// The line of the last item's last line.
    line: u64,
    state: EventsState,
    /// Frames by backtrace number.
    frames: NumberMap<Option<Backtrace>>,
    empty: Backtrace,
    /// The call's name and `<type>` tag by function × 4 + resource.
    names: Vec<(compact_str::CompactString, Option<String>)>,
    /// Calls since the last progress report.
    since_progress: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EventsState {
    Prologue,
    Calls,
    Done,
}

impl Events<'static> {
    /// The items of the raw recording in `path`.
    pub fn open(path: &Path) -> Result<Events<'static>> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(Some(path), e))?;
        Events::new(Image::raw(Box::new(f)).map_err(|e| e.in_file(path))?)
            .map_err(|e| e.in_file(path))
    }

    /// The items of image `k` of a `.tkmem` file.
    pub fn packed(file: &packed::PackedFile, k: usize) -> Result<Events<'static>> {
        Events::new(Image::packed(file, k)?)
    }
}

impl<'a> Events<'a> {
    /// The items of raw recording bytes in memory.
    pub fn from_bytes(data: &'a [u8]) -> Result<Events<'a>> {
        Events::new(Image::raw(Box::new(Bytes(data)))?)
    }

    fn new(image: Image<'a>) -> Result<Events<'a>> {
        let mut queue = std::collections::VecDeque::new();
        let mut warnings = Warnings::default();
        let line = parse_lines(&image.prologue, 0, &mut queue, &mut warnings)?;
        let mut names = Vec::with_capacity((FUNCTIONS.len() + 1) * (RES_TYPES + 1));
        for name in FUNCTIONS.iter().copied().chain(["unknown"]) {
            for tag in image.tags.into_iter().chain([None]) {
                names.push((
                    compact_str::CompactString::new(name),
                    tag.map(str::to_string),
                ));
            }
        }
        Ok(Events {
            image,
            queue,
            warnings,
            line,
            state: EventsState::Prologue,
            frames: NumberMap::default(),
            empty: Rc::from(Vec::new()),
            names,
            since_progress: 0,
        })
    }

    /// What the recording's header says (and how the image ended).
    pub fn info(&self) -> &RecordingInfo {
        &self.image.info
    }

    /// The bytes of the file its events are in (what the progress
    /// callback counts up to).
    pub fn bytes(&self) -> u64 {
        self.image.merge.src.size()
    }

    /// The decode's counts so far (all of them once the items have ended).
    pub fn stats(&self) -> &DecodeStats {
        &self.image.stats
    }

    /// Calls `progress` with how many more bytes of the recording have
    /// been read (for a progress bar over the recording's size).
    pub fn on_progress(mut self, progress: impl FnMut(u64) + 'a) -> Self {
        self.image.progress = Some(Box::new(progress));
        self
    }

    /// The frames of backtrace `id` (made once).
    fn frames(&mut self, id: u32) -> Option<Backtrace> {
        if let Some(Some(f)) = self.frames.get(id) {
            return Some(f.clone());
        }
        let addrs = self.image.stacks.get(id)?;
        let f: Backtrace = addrs
            .iter()
            .map(|&addr| Frame { addr, text: None })
            .collect();
        self.frames.insert(id, Some(f.clone()));
        Some(f)
    }

    /// What [`Events::call`] and [`Events::call_event`] both read first
    /// from an event record, counted in the image's stats: `None` for a
    /// void record; else the call's number, its resource type, the
    /// allocation's size (`None`: a release) and the address.
    #[inline(always)]
    fn record_head(&mut self, e: &[u8]) -> Option<(u64, usize, Option<u64>, u64)> {
        let kind = e[0];
        if kind == KIND_VOID {
            return None;
        }
        let stats = &mut self.image.stats;
        stats.events += 1;
        let index = u64_at(e, 8).wrapping_add(1);
        let (alloc, id) = if kind == KIND_ALLOC && e.len() >= ALLOC_LEN {
            stats.allocs += 1;
            (Some(u64_at(e, 16).min(i64::MAX as u64)), u64_at(e, 24))
        } else {
            stats.frees += 1;
            (None, u64_at(e, 16))
        };
        Some((index, e[1] as usize, alloc, id))
    }

    /// The item of one event record (`None` for a void one).
    #[inline(always)]
    fn call(&mut self, e: &[u8], ts: u32) -> Option<Item> {
        let (index, res, alloc, id) = self.record_head(e)?;
        let func = e[2] as usize;
        let Some(index) = i64::try_from(index).ok().filter(|_| ts < 360_000_000) else {
            // Not what a recorder writes (a damaged record): the items of
            // the text the decoder writes for it.
            return Some(self.call_from_text(e, ts));
        };
        let frames = if alloc.is_some() && u32_at(e, 32) != 0 {
            let stack = u32_at(e, 32);
            match self.frames(stack) {
                Some(f) => f,
                None => {
                    self.image.stats.unknown_backtraces += 1;
                    self.empty.clone()
                }
            }
        } else {
            self.empty.clone()
        };
        let (name, tag) =
            &self.names[func.min(FUNCTIONS.len()) * (RES_TYPES + 1) + res.min(RES_TYPES)];
        let line = self.line + 1;
        self.line += 2 + frames.len() as u64;
        Some(Item::Call(FullCall {
            call: Call {
                index,
                context: 0,
                timestamp: Some(ts),
                name: name.clone(),
                resource_type: tag.clone(),
                kind: match alloc {
                    Some(size) => CallKind::Alloc { size: size as i64 },
                    None => CallKind::Free,
                },
                id,
                // A recording's addresses come from the shim: user space,
                // never bit 63.
                by_number: id & packed::NOT_KEPT != 0,
            },
            args: Vec::new(),
            frames,
            line,
        }))
    }

    /// The [`CallEvent`] of one event record (`None` for a void one), or
    /// the item [`Events::call`] makes of a record the fast path does not
    /// take.
    #[inline(always)]
    fn call_event(
        &mut self,
        e: &[u8],
        ts: u32,
    ) -> Option<std::result::Result<CallEvent<'static>, Item>> {
        let (index, res, alloc, id) = self.record_head(e)?;
        let Some(index) = i64::try_from(index).ok().filter(|_| ts < 360_000_000) else {
            return Some(Err(self.call_from_text(e, ts)));
        };
        let mut stack = 0;
        let mut depth = 0;
        if alloc.is_some() && u32_at(e, 32) != 0 {
            let s = u32_at(e, 32);
            let known = match self.frames.get(s) {
                Some(Some(f)) => Some(f.len()),
                _ => self.image.stacks.get(s).map(<[u64]>::len),
            };
            match known {
                Some(n) => (stack, depth) = (s, n),
                None => self.image.stats.unknown_backtraces += 1,
            }
        }
        self.line += 2 + depth as u64;
        Some(Ok(CallEvent {
            index,
            timestamp: Some(ts),
            resource_type: self.image.tags.get(res).copied().flatten(),
            alloc: alloc.map(|size| size as i64),
            id,
            stack,
        }))
    }

    /// [`Events::call`] for a record the fast path does not take: its text
    /// as the decoder writes it, read back.
    #[cold]
    fn call_from_text(&mut self, e: &[u8], ts: u32) -> Item {
        let mut fmt = CallFormatter::new(self.image.tags);
        let mut buf = vec![0u8; SLACK];
        let mut stats = DecodeStats::default();
        let mut last = Some(ts);
        let mut stack_text = StackText::default();
        let n = emit(
            e,
            &mut buf,
            &mut fmt,
            &mut stack_text,
            &mut self.image.stacks,
            &mut stats,
            &mut last,
        );
        self.image.stats.unknown_backtraces += stats.unknown_backtraces;
        let mut items = std::collections::VecDeque::new();
        match parse_lines(&buf[..n], self.line, &mut items, &mut self.warnings) {
            Ok(line) => self.line = line,
            Err(_) => self.line += 1,
        }
        let first = items.pop_front();
        self.queue.extend(items);
        first.unwrap_or_else(|| Item::Comment(String::new()))
    }
}

/// Reads text lines as the [`Assembler`] does (after line `first_line`),
/// appending their items to `out`; returns the last line's number.
///
/// [`Assembler`]: crate::reader::Assembler
fn parse_lines(
    text: &[u8],
    first_line: u64,
    out: &mut std::collections::VecDeque<Item>,
    warnings: &mut Warnings,
) -> Result<u64> {
    let mut asm =
        crate::reader::Assembler::new(crate::reader::Reader::starting_at(text, first_line));
    while let Some(item) = asm.next_item()? {
        out.push_back(item);
    }
    let w = std::mem::take(&mut asm.reader.warnings);
    warnings.extend(w);
    Ok(asm.reader.line())
}

impl Events<'_> {
    /// The next item, made by `item` of the prologue's and the closing
    /// items and the markers, by `call` of a call's record (whole or as
    /// far as it goes) and time (`None`: a void one).
    #[inline(always)]
    fn next_with<T>(
        &mut self,
        item: impl Fn(Item) -> T,
        mut call: impl FnMut(&mut Self, &[u8], u32) -> Option<T>,
    ) -> Result<Option<T>> {
        loop {
            if let Some(i) = self.queue.pop_front() {
                return Ok(Some(item(i)));
            }
            match self.state {
                EventsState::Done => return Ok(None),
                EventsState::Prologue => self.state = EventsState::Calls,
                EventsState::Calls => {
                    self.since_progress += 1;
                    if self.since_progress >= 1 << 16 {
                        self.since_progress = 0;
                        self.image.report_progress();
                    }
                    let image = &mut self.image;
                    let Some(rec) = image.merge.next(&mut image.stacks, &mut image.stats)? else {
                        self.state = EventsState::Done;
                        image.report_progress();
                        let mut text = vec![0u8; 1024];
                        let n = epilogue(&mut text, &image.info, &image.stats);
                        self.line = parse_lines(
                            &text[..n],
                            self.line,
                            &mut self.queue,
                            &mut self.warnings,
                        )?;
                        continue;
                    };
                    if rec[0] == KIND_VOID {
                        continue;
                    }
                    let ts = monotonic_ms(u32_at(rec, 4), &mut image.last_ts);
                    if rec[0] == KIND_MARK {
                        // The comment the text has for it, one line.
                        let rec = rec.to_vec();
                        if let Some(m) = marker_of(&rec, ts, &mut image.stacks, &mut image.stats) {
                            self.line += 1;
                            return Ok(Some(item(Item::Comment(m.line()))));
                        }
                        continue;
                    }
                    // The record is copied out: the merge keeps it.
                    let mut e = [0u8; ALLOC_LEN];
                    let n = rec.len().min(ALLOC_LEN);
                    match rec
                        .get(..ALLOC_LEN)
                        .and_then(|w| <[u8; ALLOC_LEN]>::try_from(w).ok())
                    {
                        // A whole allocation record (most): a copy of a
                        // known length.
                        Some(whole) => e = whole,
                        None => e[..n].copy_from_slice(&rec[..n]),
                    }
                    if let Some(item) = call(self, &e[..n], ts) {
                        return Ok(Some(item));
                    }
                }
            }
        }
    }
}

impl crate::reader::Items for Events<'_> {
    fn next_item(&mut self) -> Result<Option<Item>> {
        self.next_with(|i| i, |s, e, ts| s.call(e, ts))
    }

    fn take_warnings(&mut self) -> Warnings {
        std::mem::take(&mut self.warnings)
    }

    fn next_calls(&mut self, calls: &mut Vec<CallEvent>) -> Result<Batch> {
        let next = self.next_with(Batch::Item, |s, e, ts| {
            match s.call_event(e, ts)? {
                Ok(c) => calls.push(c),
                Err(item) => return Some(Batch::Item(item)),
            }
            (calls.len() >= CALL_BATCH).then_some(Batch::Full)
        })?;
        Ok(next.unwrap_or(Batch::End))
    }

    fn backtrace(&mut self, stack: u32) -> Option<Backtrace> {
        if stack == 0 {
            return Some(self.empty.clone());
        }
        self.frames(stack)
    }
}

/// Writes the header line, the resource registry and the map lines into
/// `out`; returns the resource tags call lines carry.
fn write_prologue(
    info: &RecordingInfo,
    maps: &[(String, u64, u64)],
    out: &mut Vec<u8>,
) -> Result<[Option<&'static str>; RES_TYPES]> {
    let io = |e: std::io::Error| Error::io(None, e);
    let field = |k: &str, v: String| HeaderField {
        key: k.to_string(),
        value: Some(v.replace(',', ";")),
    };
    let header = Header {
        fields: vec![
            field("version", "2.0".into()),
            field("arch", std::env::consts::ARCH.into()),
            field("timestamp", local_timestamp(info.start_epoch_s)),
            field("process", info.executable.clone()),
            field("pid", info.pid.to_string()),
            field("backtrace depth", info.backtrace_depth.to_string()),
            field("origin", format!("tracekit {}", env!("CARGO_PKG_VERSION"))),
        ],
        trailing_separator: true,
    };
    header.write(&mut *out).map_err(io)?;

    // Resource registry: the types of the enabled modules.
    let mut types: Vec<(u8, &'static str, &'static str)> = Vec::new();
    if info.modules & MODULE_MEMORY != 0 {
        types.push((RES_MEMORY, "memory", "memory allocation in bytes"));
    }
    if info.modules & MODULE_FILE != 0 {
        types.push((RES_FD, "fd", "file descriptor"));
        types.push((RES_FP, "fp", "file pointer"));
    }
    if info.modules & MODULE_PAGES != 0 {
        types.push((RES_PAGES, "pages", "anonymous memory mappings in bytes"));
    }
    for (i, (_, name, desc)) in types.iter().enumerate() {
        writeln!(out, "<{:x}> : {name} ({desc})", 1u32 << i).map_err(io)?;
    }
    let show_types = types.len() > 1;
    let type_name = |res: u8| -> Option<&'static str> {
        if !show_types {
            return None;
        }
        types.iter().find(|t| t.0 == res).map(|t| t.1)
    };
    for (path, a, b) in maps {
        writeln!(out, ": {path} => 0x{a:x}-0x{b:x}").map_err(io)?;
    }
    Ok([RES_MEMORY, RES_FD, RES_FP, RES_PAGES].map(type_name))
}

/// The note (after `## tracekit: `) of a recording turned on and off by a
/// signal (`record mem --toggle-signal`), followed by the signal's number.
pub const TOGGLE_NOTE: &str = "recording turned on and off by signal";

/// The note of an image whose executable defines allocator functions
/// itself (see [`allocators`]).
pub const HIDDEN_ALLOCATOR_NOTE: &str = "## tracekit: warning: the executable defines allocator functions itself (a statically linked allocator): its calls to them do not go through LD_PRELOAD, those allocations are missing\n";

/// The closing comments (how the image ended, losses) at the start of
/// `out` (at least 1 KiB); returns their length.
fn epilogue(out: &mut [u8], info: &RecordingInfo, stats: &DecodeStats) -> usize {
    let mut s = String::new();
    let attached = info.modules & MODULE_ATTACHED != 0;
    if attached {
        s.push_str(&format!(
            "## tracekit: {}: blocks allocated before recording are not in this trace; their frees are counted apart\n",
            crate::report::ATTACHED_NOTE
        ));
    }
    if let Some(end) = describe_image_end(info) {
        s.push_str(&format!("## tracekit: {end}\n"));
    }
    if info.modules & MODULE_HIDDEN_ALLOCATOR != 0 {
        s.push_str(HIDDEN_ALLOCATOR_NOTE);
    }
    let toggle = (info.modules & MODULE_TOGGLE_MASK) >> MODULE_TOGGLE_SHIFT;
    if toggle != 0 && info.modules & MODULE_TOGGLE_REFUSED != 0 {
        s.push_str(&format!(
            "## tracekit: warning: signal {toggle} already had a handler (or was ignored) when the process started: it did not turn recording on and off here\n"
        ));
    } else if toggle != 0 {
        s.push_str(&format!(
            "## tracekit: {TOGGLE_NOTE} {toggle}{}: allocations made while paused are not recorded, releases are; releases of blocks allocated while paused are counted apart\n",
            if info.modules & MODULE_STARTED_PAUSED != 0 {
                ", started paused"
            } else {
                ""
            }
        ));
    }
    if stats.lost > 0 {
        // Never silently: the trace says it is incomplete.
        s.push_str(&format!(
            "## tracekit: {} event(s) of this process were lost while recording\n",
            stats.lost
        ));
    }
    let n = s.len().min(out.len());
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    n
}

/// One event record as its call line and frames at the start of `out`
/// (at least `CALL_MAX` + 255 × 20 + 1 bytes); returns the length.
#[inline(always)]
fn emit(
    e: &[u8],
    out: &mut [u8],
    fmt: &mut CallFormatter,
    text: &mut StackText,
    stacks: &mut Stacks,
    stats: &mut DecodeStats,
    last_ts: &mut Option<u32>,
) -> usize {
    let kind = e[0];
    if kind == KIND_VOID {
        return 0;
    }
    if kind == KIND_MARK {
        let ts = monotonic_ms(u32_at(e, 4), last_ts);
        let Some(m) = marker_of(e, ts, stacks, stats) else {
            return 0;
        };
        let line = m.line();
        // The buffer has room for the longest call with 255 frames, more
        // than the longest marker line (a 255-byte name escaped, 64 frames).
        let n = line.len().min(out.len() - 1);
        out[..n].copy_from_slice(&line.as_bytes()[..n]);
        out[n] = b'\n';
        return n + 1;
    }
    let (res, func) = (e[1], e[2]);
    stats.events += 1;
    let ts = monotonic_ms(u32_at(e, 4), last_ts);
    let index = u64_at(e, 8).wrapping_add(1);
    let mut n;
    if kind == KIND_ALLOC && e.len() >= ALLOC_LEN {
        stats.allocs += 1;
        let size = u64_at(e, 16).min(i64::MAX as u64);
        n = fmt.call(out, index, ts, func, res, Some(size), u64_at(e, 24));
        let stack = u32_at(e, 32);
        if stack != 0 {
            match text.get(stacks, stack) {
                Some(frames) => {
                    out[n..n + frames.len()].copy_from_slice(frames);
                    n += frames.len();
                }
                None => stats.unknown_backtraces += 1,
            }
        }
    } else {
        stats.frees += 1;
        n = fmt.call(out, index, ts, func, res, None, u64_at(e, 16));
    }
    out[n] = b'\n';
    n + 1
}

/// The marker of a `KIND_MARK` record (`None`: an unknown marker kind, or
/// a record too short), its backtrace from `stacks`.
fn marker_of(e: &[u8], ts: u32, stacks: &mut Stacks, stats: &mut DecodeStats) -> Option<Marker> {
    let kind = MarkerKind::from_wire(*e.get(1)?)?;
    if e.len() < MARK_HEAD {
        return None;
    }
    let n = e[2] as usize;
    let name = String::from_utf8_lossy(e.get(MARK_HEAD..MARK_HEAD + n)?).into_owned();
    let full = u64::from(u32_at(e, 24));
    let stack = u32_at(e, 20);
    let frames = if stack == 0 {
        Vec::new()
    } else {
        match stacks.get(stack) {
            Some(f) => f.to_vec(),
            None => {
                stats.unknown_backtraces += 1;
                Vec::new()
            }
        }
    };
    stats.markers += 1;
    Some(Marker {
        index: u64_at(e, 8).wrapping_add(1),
        timestamp: Some(ts),
        kind,
        thread: u32_at(e, 16),
        name,
        cut_from: (full > n as u64).then_some(full),
        frames,
    })
}

/// How an image ended, in words, as its header and end chunk say (see
/// [`describe_end`]).
pub fn describe_image_end(info: &RecordingInfo) -> Option<String> {
    match info.end? {
        // Attached to (`record mem -p`): the recorder may have stopped
        // first and left the process running.
        capture::ImageEnd::Unseen if info.modules & MODULE_ATTACHED != 0 => Some(
            "the recording stopped before the process ended (tracekit detached), or the process was killed"
                .into(),
        ),
        end => Some(describe_end(end)),
    }
}

/// How an image ended, in words (the trace's closing comment and the
/// recorder's summary).
pub fn describe_end(end: capture::ImageEnd) -> String {
    use capture::ImageEnd::*;
    match end {
        Exit(s) => format!("the process exited with status {s}"),
        Signal(n) => format!("the process was killed by signal {n} ({})", signal_name(n)),
        Exec => "the process image was replaced by exec".into(),
        Exited => "the process exited (its status was not seen)".into(),
        Unseen => "the process ended without exiting (killed by a signal, or crashed): \
                   its last events were read from its spill file"
            .into(),
    }
}

/// The usual name of a Linux signal number.
pub fn signal_name(n: i32) -> &'static str {
    match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => "a signal",
    }
}

/// Writes call lines exactly as `record::format_call` does for the
/// recorder's calls (no context, a timestamp, a size or not), faster: the
/// line's start `<index>. [HH:MM:SS.mmm] ` is kept from one call to the
/// next (the index is usually one more: its digits are incremented in
/// place; the stamp changes once a millisecond), `name<type>(` is kept
/// per function and type, and the pieces are copied as fixed-size blocks.
struct CallFormatter {
    /// The index's decimal digits end at byte 20, then `. ` and the stamp
    /// (`[HH:MM:SS.mmm] `, 15 bytes): a line starts at `index_at`. The
    /// rest is slack for fixed-size copies.
    prefix: [u8; 64],
    index_at: usize,
    index: u64,
    last_ms: Option<u32>,
    /// `name<type>(` (and its length) by function × 4 + resource, the
    /// fourth without a tag (unknown types); the last function: unknown
    /// names.
    heads: Vec<([u8; HEAD_MAX], usize)>,
    /// The resource tags by resource (the last: unknown types, none).
    tags: [Option<&'static str>; RES_TYPES + 1],
}

/// Where the line's start ends in [`CallFormatter::prefix`], and how many
/// bytes of it are copied (enough for the longest start).
const PREFIX_END: usize = 37;
const PREFIX_COPY: usize = 40;

const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `v` in decimal ending at `buf[20]`; returns where it starts.
#[inline]
fn dec_into(buf: &mut [u8; 40], mut v: u64) -> usize {
    let mut i = 20;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    i
}

/// The 8 hex digits of `x`, most significant first, as the bytes of a
/// big-endian u64: nibbles spread one to a byte, then made ASCII.
#[inline]
fn hex8(x: u32) -> u64 {
    let mut x = x as u64;
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // 0-9 -> '0'-'9', 10-15 -> 'a'-'f'.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    x + 0x3030_3030_3030_3030 + letters * 39
}

/// `v` in lower-case hex (no leading zeros) at the start of `out`;
/// returns the length.
#[inline]
fn hex_into(out: &mut [u8; 16], v: u64) -> usize {
    let len = if v == 0 {
        1
    } else {
        (64 - v.leading_zeros() as usize).div_ceil(4)
    };
    let mut digits = [0u8; 32];
    digits[..8].copy_from_slice(&hex8((v >> 32) as u32).to_be_bytes());
    digits[8..16].copy_from_slice(&hex8(v as u32).to_be_bytes());
    out.copy_from_slice(&digits[16 - len..32 - len]);
    len
}

/// The fixed-size block at `at` of `b`.
#[inline(always)]
fn block<const N: usize>(b: &mut [u8; CALL_MAX], at: usize) -> &mut [u8; N] {
    let s = &mut b[at..at + N];
    s.try_into().unwrap_or_else(|_| unreachable!())
}

impl CallFormatter {
    fn new(tags: [Option<&'static str>; RES_TYPES]) -> CallFormatter {
        let mut heads = Vec::with_capacity((FUNCTIONS.len() + 1) * (RES_TYPES + 1));
        for name in FUNCTIONS.iter().copied().chain(["unknown"]) {
            for tag in tags.into_iter().chain([None]) {
                let mut h = name.as_bytes().to_vec();
                if let Some(t) = tag {
                    h.push(b'<');
                    h.extend_from_slice(t.as_bytes());
                    h.push(b'>');
                }
                h.push(b'(');
                let mut fixed = [0u8; HEAD_MAX];
                let n = h.len().min(HEAD_MAX);
                fixed[..n].copy_from_slice(&h[..n]);
                heads.push((fixed, n));
            }
        }
        let mut prefix = [0u8; 64];
        prefix[19] = b'0';
        prefix[20..22].copy_from_slice(b". ");
        CallFormatter {
            prefix,
            index_at: 19,
            index: 0,
            last_ms: None,
            heads,
            tags: [tags[0], tags[1], tags[2], tags[3], None],
        }
    }

    /// Makes the prefix's digits those of `index`.
    #[inline]
    fn set_index(&mut self, index: u64) {
        if index == self.index.wrapping_add(1) && self.index_at > 0 {
            // One more: increment the digits in place.
            self.index = index;
            let d = &mut self.prefix;
            let mut i = 19;
            loop {
                if d[i] != b'9' {
                    d[i] += 1;
                    return;
                }
                d[i] = b'0';
                if i == self.index_at {
                    self.index_at -= 1;
                    d[self.index_at] = b'1';
                    return;
                }
                i -= 1;
            }
        }
        self.index = index;
        let mut digits = [0u8; 40];
        self.index_at = dec_into(&mut digits, index);
        self.prefix[..20].copy_from_slice(&digits[..20]);
    }

    /// Makes the prefix's stamp `[HH:MM:SS.mmm] ` of `ms` (less than 100
    /// hours).
    #[inline]
    fn set_stamp(&mut self, ms: u32) {
        self.last_ms = Some(ms);
        let two = |b: &mut [u8], v: u32| {
            let d = (v % 100) as usize * 2;
            b.copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
        };
        let s = &mut self.prefix[22..PREFIX_END];
        s[0] = b'[';
        two(&mut s[1..3], ms / 3_600_000);
        s[3] = b':';
        two(&mut s[4..6], ms / 60_000 % 60);
        s[6] = b':';
        two(&mut s[7..9], ms / 1000 % 60);
        s[9] = b'.';
        let frac = ms % 1000;
        s[10] = b'0' + (frac / 100) as u8;
        two(&mut s[11..13], frac % 100);
        s[13] = b']';
        s[14] = b' ';
    }

    /// One call line (with its newline) at the start of `w` (at least
    /// [`CALL_MAX`] bytes); returns its length. `size` for an allocation,
    /// none for a release. Pieces are copied as fixed-size blocks (the
    /// bytes past each piece are overwritten by the next).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn call(
        &mut self,
        w: &mut [u8],
        index: u64,
        ms: u32,
        func: u8,
        res: u8,
        size: Option<u64>,
        id: u64,
    ) -> usize {
        let Some(b) = w
            .get_mut(..CALL_MAX)
            .and_then(|w| <&mut [u8; CALL_MAX]>::try_from(w).ok())
        else {
            return 0;
        };
        if ms >= 360_000_000 {
            // Not a time of day (a damaged record): the general writer.
            return self.call_general(b, index, ms, func, res, size, id);
        }
        self.set_index(index);
        if self.last_ms != Some(ms) {
            self.set_stamp(ms);
        }
        let at = self.index_at;
        *block::<PREFIX_COPY>(b, 0) = self.prefix[at..at + PREFIX_COPY]
            .try_into()
            .unwrap_or_else(|_| unreachable!());
        let mut n = PREFIX_END - at;
        let f = (func as usize).min(FUNCTIONS.len());
        let (head, len) = &self.heads[f * (RES_TYPES + 1) + (res as usize).min(RES_TYPES)];
        *block::<HEAD_MAX>(b, n) = *head;
        n += len;
        match size {
            Some(size) => {
                let mut num = [0u8; 40];
                let at = dec_into(&mut num, size);
                *block::<20>(b, n) = num[at..at + 20]
                    .try_into()
                    .unwrap_or_else(|_| unreachable!());
                n += 20 - at;
                *block::<6>(b, n) = *b") = 0x";
                n += 6;
                n += hex_into(block::<16>(b, n), id);
            }
            None => {
                *block::<2>(b, n) = *b"0x";
                n += 2;
                n += hex_into(block::<16>(b, n), id);
                b[n] = b')';
                n += 1;
            }
        }
        b[n] = b'\n';
        n + 1
    }

    /// [`CallFormatter::call`] for any value (a stamp of 100 hours or
    /// more is not a time of day: a damaged record), as
    /// `record::format_call` writes it.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    fn call_general(
        &mut self,
        b: &mut [u8; CALL_MAX],
        index: u64,
        ms: u32,
        func: u8,
        res: u8,
        size: Option<u64>,
        id: u64,
    ) -> usize {
        let mut line = Vec::with_capacity(CALL_MAX);
        let f = (func as usize).min(FUNCTIONS.len());
        let kind = match size {
            Some(s) => CallKind::Alloc {
                size: s.min(i64::MAX as u64) as i64,
            },
            None => CallKind::Free,
        };
        // The writer's index is an i64; a larger one (a damaged record)
        // is written as it is, like the fast path does.
        let signed = i64::try_from(index).ok();
        format_call(
            &mut line,
            signed.unwrap_or(0),
            0,
            Some(ms),
            FUNCTIONS.get(f).copied().unwrap_or("unknown"),
            self.tags[(res as usize).min(RES_TYPES)],
            kind,
            id,
        );
        if signed.is_none() {
            line.splice(0..1, index.to_string().into_bytes());
        }
        // The next call starts over.
        self.index = 0;
        self.index_at = 0;
        self.last_ms = None;
        let n = line.len().min(CALL_MAX);
        b[..n].copy_from_slice(&line[..n]);
        n
    }
}

/// The longest call line [`CallFormatter::call`] writes, with the slack
/// its fixed-size copies need.
const CALL_MAX: usize = 192;
/// `name<type>(` fits in this (the longest: `timerfd_create<memory>(`).
const HEAD_MAX: usize = 48;

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorder's call lines are byte for byte those of the writer.
    #[test]
    fn hex_digits() {
        for v in [
            0u64,
            1,
            9,
            10,
            15,
            16,
            0xabc,
            0x7f80_0f82_d24a,
            u64::MAX,
            1 << 63,
        ] {
            let mut out = [0u8; 16];
            let n = hex_into(&mut out, v);
            assert_eq!(std::str::from_utf8(&out[..n]).unwrap(), format!("{v:x}"));
        }
    }

    #[test]
    fn call_lines_equal_the_writers() {
        let mut fast = CallFormatter::new([Some("memory"), Some("fd"), None, Some("pages")]);
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let specials = [0u64, 1, 9, 10, 99, 100, 999, 1000, u64::MAX >> 1];
        for i in 0..20_000 {
            let pick = |v: u64| {
                if i % 7 == 0 {
                    specials[(v % specials.len() as u64) as usize]
                } else {
                    v >> (v % 60)
                }
            };
            // Runs of consecutive indices across digit boundaries, and
            // jumps.
            let index = match i {
                0..=1500 => i + 1,
                1501..=1600 => 99_950 + i - 1501,
                1601..=1700 => 999_999_950 + i - 1601,
                _ => pick(next()).min(i64::MAX as u64 - 1) + 1,
            };
            // Times of day, and (damaged records) any value.
            let ms = if i % 50 == 7 {
                next() as u32
            } else {
                (next() % 86_400_000) as u32
            };
            let func = (next() % FUNCTIONS.len() as u64) as u8;
            let res = (next() % 5) as u8;
            let id = pick(next());
            let size = (i % 2 == 0).then(|| pick(next()).min(i64::MAX as u64));
            let mut w = [0u8; CALL_MAX];
            let n = fast.call(&mut w, index, ms, func, res, size, id);
            let a = w[..n].to_vec();
            let mut b = Vec::new();
            let kind = match size {
                Some(s) => CallKind::Alloc { size: s as i64 },
                None => CallKind::Free,
            };
            let tag = [Some("memory"), Some("fd"), None, Some("pages"), None][res as usize];
            format_call(
                &mut b,
                index as i64,
                0,
                Some(ms),
                FUNCTIONS[func as usize],
                tag,
                kind,
                id,
            );
            assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
        }
    }
}
