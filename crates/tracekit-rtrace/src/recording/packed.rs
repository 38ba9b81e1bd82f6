//! tracekit's memory recording file, `*.tkmem` (`docs/formats/tkmem.md`
//! is the full description): every process image of a `record mem` run in
//! one compact binary file, written by the recorder while the command runs.
//!
//! A file is a 16-byte head (magic, version) and a sequence of blocks, each
//! a 32-byte header (kind, codec, lengths, CRC-32, image, count, first
//! event number) and a payload, usually one zstd frame. Code addresses and
//! backtraces are stored once: a *dictionary* of instruction pointers and
//! the nodes of a trace tree (`(parent node, instruction pointer)`, the
//! root 0 is the empty backtrace), as heaptrack's file has them; an event
//! names its backtrace by its innermost node. Events are small deltas
//! (event number, milliseconds, address: a hit in the last seven
//! addresses, else the difference to the previous one), one thread's
//! events per block, in the order of their numbers. Memory maps are kept
//! per image (the executable mappings of every snapshot the shim sent),
//! and how each image ended.
//!
//! The writer ([`Writer`]) keeps the interning tables (distinct addresses,
//! nodes and the shim's backtrace numbers) and one block; it writes each
//! block with one `write`, so after a crash the file is valid up to its
//! last whole block. The reader ([`PackedFile`]) checks every block's CRC
//! and stops at the first incomplete or damaged one, saying where and how
//! many bytes it could not read; the event numbers missing then are counted
//! as lost per image, as for any gap.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;
use tracekit_core::{Error, Position, Result};

use super::capture::ImageEnd;
use super::wire::*;
use super::{RecordingInfo, Source};
use crate::number_map::NumberMap;

/// The first 8 bytes of a file (`TKMEM`, then CR LF and ^Z, which a
/// text-mode transfer or `type` would mangle or stop at).
pub const MAGIC: [u8; 8] = *b"TKMEM\r\n\x1a";
/// The layout's version (the u32 after the magic).
pub const VERSION: u32 = 3;
/// The oldest layout this version reads (version 2 added `aptr` code 12
/// and numbers each new (size, node) pair afresh).
pub const OLDEST_VERSION: u32 = 1;
/// The file's head flag (version 3): the heap blocks released within
/// their events block have no address in the file ([`NOT_KEPT`]).
pub const FLAG_TRANSIENT_UNADDRESSED: u32 = 1;
/// The bit an allocation's id has when its address was not kept (a heap
/// block released within its events block, in a file with
/// [`FLAG_TRANSIENT_UNADDRESSED`]): the id is then this bit and the
/// allocation's event number. User-space addresses never have it.
pub const NOT_KEPT: u64 = 1 << 63;
/// The file's head: magic, version u32, flags u32.
pub const FILE_HEAD: usize = 16;
/// A block's header: see [`BlockHeader`].
pub const BLOCK_HEAD: usize = 32;
/// Every block header starts with these two bytes.
pub const BLOCK_TAG: [u8; 2] = *b"TB";
/// `image` of the blocks that belong to no image.
pub const NO_IMAGE: u32 = u32::MAX;
/// The largest payload a reader accepts, stored or decompressed.
pub const MAX_PAYLOAD: usize = 64 << 20;
/// The node of a backtrace the recorder never saw defined.
pub const UNKNOWN_NODE: u32 = u32::MAX;

/// Block kinds.
pub const KIND_RECORDING: u8 = 1;
pub const KIND_IMAGE: u8 = 2;
pub const KIND_DICT: u8 = 3;
pub const KIND_MAPS: u8 = 4;
pub const KIND_EVENTS: u8 = 5;
pub const KIND_END: u8 = 6;
pub const KIND_FINISH: u8 = 7;
/// Payload codecs.
pub const CODEC_STORED: u8 = 0;
pub const CODEC_ZSTD: u8 = 1;

/// The zstd level blocks are compressed with (9: 6% smaller than 3 for
/// a fifth more time, `docs/formats/tkmem.md`).
const LEVEL: i32 = 9;

/// Does `head` (a file's first bytes) start a `.tkmem` recording?
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}

// ---------------------------------------------------------------------
// Varints.

#[inline]
fn put_uv(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn put_sv(out: &mut Vec<u8>, v: i64) {
    put_uv(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Reads a payload front to back; every read says `None` past the end or
/// on an over-long varint.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cur<'a> {
    fn new(b: &'a [u8]) -> Cur<'a> {
        Cur { b, at: 0 }
    }

    #[inline]
    fn u8(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    #[inline]
    fn uv(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    #[inline]
    fn sv(&mut self) -> Option<i64> {
        let u = self.uv()?;
        Some((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

// ---------------------------------------------------------------------
// Block headers.

/// A block's 32-byte header, little-endian:
/// `"TB"`, kind u8, codec u8, stored length u32, raw length u32, CRC-32
/// u32 (of the other 28 header bytes and the stored payload), image u32,
/// count u32, first u64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub kind: u8,
    pub codec: u8,
    pub stored: u32,
    pub raw: u32,
    pub crc: u32,
    pub image: u32,
    pub count: u32,
    pub first: u64,
}

impl BlockHeader {
    fn encode(&self) -> [u8; BLOCK_HEAD] {
        let mut h = [0u8; BLOCK_HEAD];
        h[0..2].copy_from_slice(&BLOCK_TAG);
        h[2] = self.kind;
        h[3] = self.codec;
        h[4..8].copy_from_slice(&self.stored.to_le_bytes());
        h[8..12].copy_from_slice(&self.raw.to_le_bytes());
        h[12..16].copy_from_slice(&self.crc.to_le_bytes());
        h[16..20].copy_from_slice(&self.image.to_le_bytes());
        h[20..24].copy_from_slice(&self.count.to_le_bytes());
        h[24..32].copy_from_slice(&self.first.to_le_bytes());
        h
    }

    fn decode(h: &[u8; BLOCK_HEAD]) -> Option<BlockHeader> {
        if h[0..2] != BLOCK_TAG {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        Some(BlockHeader {
            kind: h[2],
            codec: h[3],
            stored: u32_at(4),
            raw: u32_at(8),
            crc: u32_at(12),
            image: u32_at(16),
            count: u32_at(20),
            first: u64::from_le_bytes(h[24..32].try_into().ok()?),
        })
    }

    /// The CRC-32 of the header (without its CRC field) and `payload`.
    fn checksum(&self, payload: &[u8]) -> u32 {
        let h = self.encode();
        let mut c = crc32fast::Hasher::new();
        c.update(&h[0..12]);
        c.update(&h[16..32]);
        c.update(payload);
        c.finalize()
    }
}

/// One block of any kind and payload (stored, not compressed) with its
/// header and checksum: what a writer of another tool, a test or a fuzzer
/// needs to make a file whose blocks pass the reader's checks.
pub fn stored_block(kind: u8, image: u32, count: u32, first: u64, payload: &[u8]) -> Vec<u8> {
    let mut h = BlockHeader {
        kind,
        codec: CODEC_STORED,
        stored: payload.len() as u32,
        raw: payload.len() as u32,
        crc: 0,
        image,
        count,
        first,
    };
    h.crc = h.checksum(payload);
    let mut out = h.encode().to_vec();
    out.extend_from_slice(payload);
    out
}

// ---------------------------------------------------------------------
// Events.

/// One event record of the recorder (the wire layout's fields), with the
/// backtrace as a trace-tree node (0: none, [`UNKNOWN_NODE`]: a number
/// never defined).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ev {
    kind: u8,
    res: u8,
    func: u8,
    ts: u32,
    seq: u64,
    size: u64,
    id: u64,
    node: u32,
}

impl Ev {
    /// The fields of a whole allocation, release, void or marker record (a
    /// marker's: `res` its kind, `id` its thread, `size` its name's length
    /// in the program, `node` its backtrace; the name is the record's
    /// bytes after [`MARK_HEAD`]).
    fn from_wire(r: &[u8]) -> Ev {
        let u32_at = |i: usize| u32::from_le_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&r[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let mut e = Ev {
            kind: r[0],
            ts: u32_at(4),
            seq: u64_at(8),
            ..Ev::default()
        };
        match r[0] {
            KIND_ALLOC => {
                e.res = r[1];
                e.func = r[2];
                e.size = u64_at(16);
                e.id = u64_at(24);
                e.node = u32_at(32);
            }
            KIND_FREE => {
                e.res = r[1];
                e.func = r[2];
                e.id = u64_at(16);
            }
            KIND_MARK => {
                e.res = r[1];
                e.id = u64::from(u32_at(16));
                e.node = u32_at(20);
                e.size = u64::from(u32_at(24));
            }
            _ => {}
        }
        e
    }

    /// The name of a marker record (see [`Ev::from_wire`]).
    fn mark_name(r: &[u8]) -> &[u8] {
        let n = r.get(2).copied().unwrap_or(0) as usize;
        r.get(MARK_HEAD..MARK_HEAD + n).unwrap_or_default()
    }

    /// Appends the record in the wire layout (the stack field holds the
    /// node); `name` is a marker's name (at most [`MARK_NAME_MAX`] bytes).
    fn write_wire(&self, out: &mut Vec<u8>, name: &[u8]) {
        let start = out.len();
        let name = &name[..name.len().min(MARK_NAME_MAX)];
        let len = match self.kind {
            KIND_ALLOC => ALLOC_LEN,
            KIND_FREE => FREE_LEN,
            KIND_MARK => MARK_HEAD + name.len().div_ceil(8) * 8,
            _ => VOID_LEN,
        };
        out.resize(start + len, 0);
        let r = &mut out[start..];
        r[0] = self.kind;
        r[4..8].copy_from_slice(&self.ts.to_le_bytes());
        r[8..16].copy_from_slice(&self.seq.to_le_bytes());
        match self.kind {
            KIND_ALLOC => {
                r[1] = self.res;
                r[2] = self.func;
                r[16..24].copy_from_slice(&self.size.to_le_bytes());
                r[24..32].copy_from_slice(&self.id.to_le_bytes());
                r[32..36].copy_from_slice(&self.node.to_le_bytes());
            }
            KIND_FREE => {
                r[1] = self.res;
                r[2] = self.func;
                r[16..24].copy_from_slice(&self.id.to_le_bytes());
            }
            KIND_MARK => {
                r[1] = self.res;
                r[2] = name.len() as u8;
                r[16..20].copy_from_slice(&(self.id as u32).to_le_bytes());
                r[20..24].copy_from_slice(&self.node.to_le_bytes());
                r[24..28].copy_from_slice(&(self.size as u32).to_le_bytes());
                r[MARK_HEAD..MARK_HEAD + name.len()].copy_from_slice(name);
            }
            _ => {}
        }
    }
}

/// Records an events block is made of at most, in bytes: twice what the
/// recorder writes at once (a thread's buffer, at most 8 MiB and the
/// batch that filled it), so each of its writes is one block; the
/// streams then stay far below [`MAX_PAYLOAD`] (an event's streams take
/// at most 1.6 times its record).
pub(crate) const PART: usize = 16 << 20;

/// Where the part of `records` starting at `at` ends: after the last
/// whole record within [`PART`] bytes (at least one record).
fn part_end(records: &[u8], at: usize) -> usize {
    let mut end = at;
    while let Some(len) = record_len(&records[end..]).filter(|&l| end + l <= records.len()) {
        if end > at && end + len - at > PART {
            break;
        }
        end += len;
    }
    end
}

/// Which allocations of one block's `records` (by their order among its
/// allocations) are heap blocks released within it with nothing numbered
/// between the two but the thread's own events: their pairing is then
/// the one any reader would make by address (no other thread could have
/// released or reused the address in between), so the block names them
/// by number and stores no address. An address allocated again before
/// its release (a batch delivered twice, a release not recorded) is
/// named by address, both times.
fn transients(records: &[u8], unaddressed: &mut Vec<bool>, open: &mut HashMap<u64, (usize, u32)>) {
    // As the encoder pairs them (`Model::live_at`): a release with the
    // latest allocation of its address, whatever their resources.
    const NAMED: u32 = u32::MAX;
    open.clear();
    let mut prev: Option<u64> = None;
    // Runs of consecutive numbers so far.
    let mut runs = 0u32;
    let mut at = 0;
    while let Some(len) = record_len(&records[at..]).filter(|&l| at + l <= records.len()) {
        let r = &records[at..at + len];
        at += len;
        if r[0] == KIND_STACK {
            continue;
        }
        // The encoder's reading of the record (whole: `record_len`).
        let e = Ev::from_wire(r);
        if prev.is_none_or(|p| e.seq != p.wrapping_add(1)) {
            runs += 1;
        }
        prev = Some(e.seq);
        match e.kind {
            KIND_ALLOC => {
                let k = unaddressed.len();
                unaddressed.push(false);
                // Only a heap block can be named by number.
                let run = if e.res == RES_MEMORY { runs } else { NAMED };
                if open.insert(e.id, (k, run)).is_some() {
                    open.insert(e.id, (k, NAMED));
                }
            }
            KIND_FREE => {
                if let Some((k, run)) = open.remove(&e.id) {
                    if run == runs && e.res == RES_MEMORY {
                        unaddressed[k] = true;
                    }
                }
            }
            _ => {}
        }
    }
}

/// The streams of an events block, in the order they are stored (see
/// `docs/formats/tkmem.md`): each is compressed well by zstd on its own
/// terms (the calls' pattern, the sites, the addresses).
const S_CODE: usize = 0;
const S_RES: usize = 1;
const S_FUNC: usize = 2;
const S_SEQ: usize = 3;
const S_MS: usize = 4;
const S_INFO: usize = 5;
const S_SIZE: usize = 6;
const S_NODE: usize = 7;
const S_APTR: usize = 8;
const S_APTRX: usize = 9;
const S_FREF: usize = 10;
const S_FPTR: usize = 11;
/// Markers (since the streams were 14): a u8 per void event, its marker
/// kind (0: a plain void event), and per marker its thread, backtrace
/// node, name length in the program and kept name.
const S_MARK: usize = 12;
const S_MTEXT: usize = 13;
const STREAMS: usize = 14;
/// The streams a block must have (version 1's first writers wrote 12).
const STREAMS_MIN: usize = 12;

/// `kind` in the low bits of a code byte (the function, up to 62, above;
/// 63: the function byte is in `S_FUNC`).
const EV_ALLOC: u8 = 0;
const EV_FREE: u8 = 1;
const EV_VOID: u8 = 2;
const FUNC_ESCAPE: u8 = 63;

/// Recent (size, node) pairs an allocation can name by position.
const RECENT_INFO: usize = 254;
/// `S_INFO` values: the pair that followed the previous allocation's last
/// time; a position (1 + index) among the recent ones; a new pair (size
/// and node follow in their streams).
const INFO_NEXT: u8 = 0;
const INFO_NEW: u8 = 255;
/// How deep the lists of released addresses are searched.
const CLASS_TOP: usize = 8;
const DEEP: usize = 256;
/// `S_APTR` codes of an allocation's address (0..8: the position from the
/// top among the released addresses of its size class).
const APTR_CLASS_DEEP: u8 = 8;
const APTR_NEXT: u8 = 9;
const APTR_FREED: u8 = 10;
const APTR_DELTA: u8 = 11;
const APTR_END: u8 = 12;
/// Version 3, [`FLAG_TRANSIENT_UNADDRESSED`]: a heap block released
/// within the block, named by its number ([`NOT_KEPT`]); no address.
const APTR_UNADDRESSED: u8 = 13;

/// glibc's chunk size for a request of `size` bytes (64-bit): what its
/// bins are keyed by, so a released block of the same class is what the
/// next allocation of that class usually gets back.
#[inline]
fn class_of(size: u64) -> u64 {
    (size.saturating_add(8 + 15) & !15).max(32)
}

/// What both ends of an events block know of its addresses while going
/// through it (each block starts afresh, so it decodes on its own): the
/// last number and millisecond, the block's live allocations and released
/// addresses. Its (size, node) pairs are [`Pairs`].
#[derive(Default)]
struct Model {
    seq: u64,
    ts: u32,
    /// Live allocations of the block, in allocation order.
    live: Live,
    /// The encoder's index of `live` by address: the allocation's ordinal.
    live_at: HashMap<u64, usize>,
    /// Released addresses by class, and all of them, the latest last.
    classes: Classes,
    freed: Vec<u64>,
    /// The last allocation's address and class.
    last: (u64, u64),
    /// Where the latest [`ENDS`] allocations end (address + class), by
    /// allocation count modulo [`ENDS`]; `allocs`: the block's so far.
    ends: Ends,
    allocs: u64,
}

/// The class a heap block without an address ([`APTR_UNADDRESSED`]) has
/// in [`Live`]: it takes no part in the address model.
const UNADDRESSED: u64 = u64::MAX;

/// Allocation ends the model remembers (`aptr` 12 names one of them).
const ENDS: usize = 64;

struct Ends([u64; ENDS]);

impl Default for Ends {
    fn default() -> Ends {
        Ends([0; ENDS])
    }
}

/// Released addresses by class: the small classes (most) by index, the
/// others hashed.
#[derive(Default)]
struct Classes {
    small: Vec<Vec<u64>>,
    large: HashMap<u64, Vec<u64>>,
}

/// Classes below this many bytes are kept by index.
const SMALL_CLASS: u64 = 1 << 16;

impl Classes {
    /// The released addresses of `class`, the latest last.
    #[inline]
    fn list(&mut self, class: u64) -> &mut Vec<u64> {
        if class < SMALL_CLASS {
            let k = (class / 16) as usize;
            if self.small.len() <= k {
                self.small.resize_with(k + 1, Vec::new);
            }
            &mut self.small[k]
        } else {
            self.large.entry(class).or_default()
        }
    }
}

impl Model {
    fn new(first: u64) -> Model {
        let mut m = Model {
            seq: first.wrapping_sub(1),
            ..Model::default()
        };
        // Ranks are counted from the live bits; the tree is built only
        // for one far from both ends.
        m.live.lazy = true;
        m
    }

    fn allocated(&mut self, addr: u64, class: u64, encoder: bool) {
        self.last = (addr, class);
        self.ends.0[self.allocs as usize % ENDS] = addr.wrapping_add(class);
        self.allocs += 1;
        let ordinal = self.live.push(addr, class);
        if encoder {
            self.live_at.insert(addr, ordinal);
        }
    }

    fn released(&mut self, addr: u64, class: Option<u64>) {
        if let Some(c) = class {
            self.classes.list(c).push(addr);
        }
        self.freed.push(addr);
    }

    /// Where `addr` is among the `DEEP` entries of `list` after its latest
    /// `skip` (0: the latest); it is taken out.
    fn take_from(list: &mut Vec<u64>, addr: u64, skip: usize) -> Option<usize> {
        let end = list.len().saturating_sub(skip);
        let start = end.saturating_sub(DEEP);
        let i = start + rfind(&list[start..end], addr)?;
        list.remove(i);
        Some(list.len() - i)
    }

    /// Which of the allocations before the latest (1: the one before it)
    /// ends at `addr`, among the latest [`ENDS`] (the latest's end is
    /// `predicted`).
    fn end_of_recent(&self, addr: u64) -> Option<usize> {
        (1..ENDS).find(|&j| self.end_at(j) == Some(addr))
    }

    /// The `j`-th latest allocation's end (1 ≤ j < [`ENDS`]).
    fn end_at(&self, j: usize) -> Option<u64> {
        if j == 0 || j >= ENDS || j as u64 >= self.allocs {
            return None;
        }
        Some(self.ends.0[(self.allocs as usize - 1 - j) % ENDS])
    }

    /// The `d`-th latest entry of `list`, taken out.
    fn take_at(list: &mut Vec<u64>, d: usize) -> Option<u64> {
        let i = list.len().checked_sub(d + 1)?;
        Some(list.remove(i))
    }
}

/// Where `v` last is in `s`. The encoder looks for most addresses and
/// pairs in lists where they are not: compared 8 at a time (the compiler
/// makes vector compares of the fold), a scan costs a fraction of one
/// element at a time.
#[inline]
fn rfind<T: Copy + PartialEq>(s: &[T], v: T) -> Option<usize> {
    let chunks = s.rchunks_exact(8);
    let head = chunks.remainder();
    for (k, c) in chunks.enumerate() {
        if c.iter().fold(false, |hit, &a| hit | (a == v)) {
            let base = s.len() - 8 * (k + 1);
            return c.iter().rposition(|&a| a == v).map(|i| base + i);
        }
    }
    head.iter().rposition(|&a| a == v)
}

/// The live allocations of a block, in allocation order, each named by
/// its rank from the latest (1: the latest still live): every allocation
/// by its ordinal, and a Fenwick tree of which are still live, so that
/// ranking and taking out are O(log n) (a list would move the entries
/// after it at every release).
#[derive(Default)]
struct Live {
    /// (address, class) by ordinal.
    slots: Vec<(u64, u64)>,
    /// The Fenwick tree over `slots` (1-based: `tree[j - 1]` counts the
    /// live ones among ordinals `j - lowbit(j) .. j`).
    tree: Vec<u32>,
    /// Whether each ordinal is still live: bit `i % 64` of word `i / 64`,
    /// and how many are, per word.
    bits: Vec<u64>,
    word_live: Vec<u8>,
    /// The words before this one have none live.
    lo: usize,
    count: usize,
    /// The tree is not kept up to date (empty) until a search needs it
    /// (the decoder's: most ranks are found from the live bits).
    lazy: bool,
}

impl Live {
    /// Live ones among the first `i` ordinals.
    fn prefix(&self, mut i: usize) -> usize {
        let mut n = 0;
        while i > 0 {
            n += self.tree[i - 1] as usize;
            i &= i - 1;
        }
        n
    }

    /// Appends a live allocation; returns its ordinal.
    fn push(&mut self, addr: u64, class: u64) -> usize {
        let j = self.slots.len() + 1;
        if !self.lazy {
            let low = j & j.wrapping_neg();
            // Live ones among ordinals j - low + 1 .. j - 1: the nodes
            // from j - 1 down to j - low (one walk, not two prefixes).
            let mut below = 0;
            let mut i = j - 1;
            while i > j - low {
                below += self.tree[i - 1];
                i &= i - 1;
            }
            self.tree.push(below + 1);
        }
        let (w, b) = ((j - 1) / 64, (j - 1) % 64);
        if b == 0 {
            self.bits.push(0);
            self.word_live.push(0);
        }
        self.bits[w] |= 1 << b;
        self.word_live[w] += 1;
        self.slots.push((addr, class));
        self.count += 1;
        j - 1
    }

    /// Builds the tree from the live bits (it was lazy); it is kept up to
    /// date from now on.
    fn build_tree(&mut self) {
        let n = self.slots.len();
        self.tree.clear();
        self.tree
            .extend((0..n).map(|i| (self.bits[i / 64] >> (i % 64) & 1) as u32));
        for j in 1..=n {
            let parent = j + (j & j.wrapping_neg());
            if parent <= n {
                self.tree[parent - 1] += self.tree[j - 1];
            }
        }
        self.lazy = false;
    }

    fn is_live(&self, ordinal: usize) -> bool {
        ordinal < self.slots.len() && self.bits[ordinal / 64] >> (ordinal % 64) & 1 != 0
    }

    /// The rank of live allocation `ordinal` (1: the latest): counted from
    /// the live bits when it is within [`RANK_SCAN`] words of either end
    /// (most are), else from the tree.
    fn rank(&mut self, ordinal: usize) -> usize {
        let (w, b) = (ordinal / 64, ordinal % 64);
        let words = self.word_live.len();
        if words - w <= RANK_SCAN {
            let later: usize = self.word_live[w + 1..].iter().map(|&n| n as usize).sum();
            return (self.bits[w] >> b).count_ones() as usize + later;
        }
        while self.word_live.get(self.lo) == Some(&0) {
            self.lo += 1;
        }
        if w >= self.lo && w - self.lo <= RANK_SCAN {
            let earlier: usize = self.word_live[self.lo..w].iter().map(|&n| n as usize).sum();
            let below = (self.bits[w] & ((1u64 << b) - 1)).count_ones() as usize;
            return self.count - earlier - below;
        }
        if self.lazy {
            self.build_tree();
        }
        self.count - self.prefix(ordinal + 1) + 1
    }

    /// Takes allocation `ordinal` out (it must be live).
    fn take(&mut self, ordinal: usize) -> (u64, u64) {
        let mut j = ordinal + 1;
        while !self.lazy && j <= self.tree.len() {
            self.tree[j - 1] -= 1;
            j += j & j.wrapping_neg();
        }
        self.count -= 1;
        self.bits[ordinal / 64] &= !(1 << (ordinal % 64));
        self.word_live[ordinal / 64] -= 1;
        self.slots[ordinal]
    }

    /// Drops the released allocations when they are most of the tree, so
    /// that it stays the size of what is live (the ranks stay the same;
    /// the ordinals change, so only the decoder, which keeps none, calls
    /// it).
    fn compact(&mut self) {
        if self.slots.len() < 1024 || self.count * 4 > self.slots.len() {
            return;
        }
        // In place: the live ones moved down, then a tree of all live
        // (node j counts the lowbit(j) ordinals it covers).
        let mut w = 0;
        for i in 0..self.slots.len() {
            if self.bits[i / 64] >> (i % 64) & 1 != 0 {
                self.slots[w] = self.slots[i];
                w += 1;
            }
        }
        self.slots.truncate(w);
        self.bits.clear();
        self.bits.resize(w / 64, u64::MAX);
        self.word_live.clear();
        self.word_live.resize(w / 64, 64);
        if w % 64 != 0 {
            self.bits.push((1 << (w % 64)) - 1);
            self.word_live.push((w % 64) as u8);
        }
        self.lo = 0;
        self.tree.clear();
        if !self.lazy {
            self.tree
                .extend((1..=w).map(|j| (j & j.wrapping_neg()) as u32));
        }
        self.count = w;
    }

    /// The ordinal of rank `r` (1 ≤ r ≤ count), if it is within
    /// [`RANK_SCAN`] words of the end it is nearer.
    #[inline]
    fn near_end(&mut self, r: usize) -> Option<usize> {
        let k = self.count - r + 1;
        if k <= r {
            // The k-th live one from the first.
            while self.word_live.get(self.lo) == Some(&0) {
                self.lo += 1;
            }
            let mut k = k;
            let end = self.word_live.len().min(self.lo + RANK_SCAN);
            for w in self.lo..end {
                let n = self.word_live[w] as usize;
                if n >= k {
                    return Some(w * 64 + select_bit(self.bits[w], k));
                }
                k -= n;
            }
        } else {
            // The r-th live one from the last.
            let mut r = r;
            let start = self.word_live.len().saturating_sub(RANK_SCAN);
            for w in (start..self.word_live.len()).rev() {
                let n = self.word_live[w] as usize;
                if n >= r {
                    return Some(w * 64 + select_bit(self.bits[w], n - r + 1));
                }
                r -= n;
            }
        }
        None
    }

    /// The allocation of rank `r` (1: the latest live one), taken out.
    fn take_rank(&mut self, r: usize) -> Option<(u64, u64)> {
        if r == 0 || r > self.count {
            return None;
        }
        // Most releases are of allocations near the latest or the oldest
        // live one: counted from that end a word at a time (loads that do
        // not wait for each other), over a few words, before searching the
        // tree (whose steps do).
        if let Some(ordinal) = self.near_end(r) {
            return Some(self.take(ordinal));
        }
        if self.lazy {
            self.build_tree();
        }
        // The k-th live one from the first.
        let mut k = self.count - r + 1;
        let n = self.tree.len();
        let mut pos = 0;
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            // Without a branch on the data (its outcome is random; the
            // compiler makes a branch of an `if` or a comparison, so the
            // sign of a difference): a node past the end counts as more
            // than any `k` (counts and `k` are below 2^32).
            let next: usize = pos + step;
            let past = usize::from(next > n) << 62;
            let t = self.tree[(next - 1).min(n - 1)] as u64 | past as u64;
            let go = ((t.wrapping_sub(k as u64) >> 63) as usize).wrapping_neg();
            pos += step & go;
            k -= t as usize & go;
            step >>= 1;
        }
        Some(self.take(pos))
    }
}

/// Words of live bits [`Live::take_rank`] counts over from an end before
/// searching its tree.
const RANK_SCAN: usize = 16;

/// The position of the `k`-th set bit of `word` from bit 0 (1 ≤ k ≤ its
/// set bits), without a branch on the data: the set bits counted per
/// byte and summed up the bytes, the byte where the sum reaches `k` found
/// by the borrow of a subtraction, then the bit in that byte from a table.
#[inline]
fn select_bit(word: u64, k: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut c = word - ((word >> 1) & 0x5555_5555_5555_5555);
    c = (c & 0x3333_3333_3333_3333) + ((c >> 2) & 0x3333_3333_3333_3333);
    c = (c + (c >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte i: the set bits of bytes 0..=i (at most 64).
    let sums = c.wrapping_mul(ONES);
    let k = k as u64;
    // The high bit of byte i is set where that sum is at least k.
    let reached = ((sums | HIGH) - k * ONES) & HIGH;
    let byte = (reached.trailing_zeros() / 8).min(7) as usize;
    let before = ((sums << 8) >> (8 * byte)) & 0xff;
    let bits = (word >> (8 * byte)) & 0xff;
    8 * byte + SELECT_IN_BYTE[bits as usize][(k - before - 1) as usize & 7] as usize
}

/// `SELECT_IN_BYTE[b][i]`: the position of the `i + 1`-th set bit of
/// byte `b` (0 where there is none).
const SELECT_IN_BYTE: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        let mut bit = 0;
        while bit < 8 {
            if b >> bit & 1 != 0 {
                t[b][i] = bit as u8;
                i += 1;
            }
            bit += 1;
        }
        b += 1;
    }
    t
};

/// The (size, node) pairs of a block, as both ends keep them, by number:
/// the successor table and the recent pairs. Version 2 gives every new
/// pair (info 255) a new number, so the decoder hashes no pair at all
/// (the encoder one per allocation its successor table does not
/// predict); version 1 numbered each distinct pair once ([`Pairs::intern`]).
/// [`Pairs::reset`] starts a block.
#[derive(Default)]
struct Pairs {
    ids: HashMap<(u64, u32), u32>,
    pairs: Vec<(u64, u32)>,
    /// The number of the pair that followed each pair last (`NO_PAIR`:
    /// none yet).
    next: Vec<u32>,
    /// The recent pairs, the most recent last (position 0 of the format).
    recent: std::collections::VecDeque<u32>,
    /// Whether each pair is among `recent` (the encoder looks for one
    /// there only when it is).
    in_recent: Vec<bool>,
    /// The last allocation's pair ((0, 0) at first).
    prev: u32,
}

const NO_PAIR: u32 = u32::MAX;

impl Pairs {
    /// Empties it for a block (the lists keep their room).
    fn reset(&mut self) {
        self.ids.clear();
        self.pairs.clear();
        self.next.clear();
        self.recent.clear();
        self.in_recent.clear();
        self.prev = self.intern((0, 0));
    }

    /// The number of `pair`, given the first time it is met (version 1).
    fn intern(&mut self, pair: (u64, u32)) -> u32 {
        let n = self.pairs.len() as u32;
        let id = *self.ids.entry(pair).or_insert(n);
        if id == n {
            self.push_new(pair);
        }
        id
    }

    /// A new number for `pair` (version 2: even if it was met before).
    fn push_new(&mut self, pair: (u64, u32)) -> u32 {
        let n = self.pairs.len() as u32;
        self.pairs.push(pair);
        self.next.push(NO_PAIR);
        self.in_recent.push(false);
        n
    }

    /// The position (0: the most recent) of pair `id` among the recent
    /// pairs.
    fn recent_find(&self, id: u32) -> Option<usize> {
        if !self.in_recent[id as usize] {
            return None;
        }
        let (older, newer) = self.recent.as_slices();
        match rfind(newer, id) {
            Some(i) => Some(newer.len() - 1 - i),
            None => rfind(older, id).map(|i| self.recent.len() - 1 - i),
        }
    }

    /// The pair at position `k` (0: the most recent), moved to the front.
    #[inline]
    fn recent_front(&mut self, k: usize) -> Option<u32> {
        if k == 0 {
            return self.recent.back().copied();
        }
        let i = self.recent.len().checked_sub(k + 1)?;
        let v = self.recent.remove(i)?;
        self.recent.push_back(v);
        Some(v)
    }

    fn recent_push(&mut self, id: u32) {
        if self.recent.len() == RECENT_INFO {
            if let Some(old) = self.recent.pop_front() {
                self.in_recent[old as usize] = false;
            }
        }
        self.recent.push_back(id);
        self.in_recent[id as usize] = true;
    }

    /// The allocation's pair came: the successor table learns it.
    #[inline]
    fn seen(&mut self, id: u32) -> (u64, u32) {
        self.next[self.prev as usize] = id;
        self.prev = id;
        self.pairs[id as usize]
    }
}

/// Encodes one events block: its events in the order of their numbers.
struct BlockEncoder {
    streams: [Vec<u8>; STREAMS],
    m: Model,
    pairs: Pairs,
    count: u32,
    first: u64,
}

impl BlockEncoder {
    fn new(first: u64) -> BlockEncoder {
        let mut pairs = Pairs::default();
        pairs.reset();
        BlockEncoder {
            streams: Default::default(),
            m: Model::new(first),
            pairs,
            count: 0,
            first,
        }
    }

    /// Adds an event; `name` is a marker's name (empty for the others);
    /// `unaddressed`: an allocation named by its number (see
    /// [`transients`]).
    fn push(&mut self, e: &Ev, name: &[u8], unaddressed: bool) {
        let s = &mut self.streams;
        let m = &mut self.m;
        let pairs = &mut self.pairs;
        self.count += 1;
        let kind = match e.kind {
            KIND_ALLOC => EV_ALLOC,
            KIND_FREE => EV_FREE,
            _ => EV_VOID,
        };
        let func = if kind == EV_VOID { 0 } else { e.func };
        s[S_CODE].push(func.min(FUNC_ESCAPE) << 2 | kind);
        if func >= FUNC_ESCAPE {
            s[S_FUNC].push(func);
        }
        put_sv(
            &mut s[S_SEQ],
            e.seq.wrapping_sub(m.seq).wrapping_sub(1) as i64,
        );
        m.seq = e.seq;
        put_sv(&mut s[S_MS], i64::from(e.ts.wrapping_sub(m.ts) as i32));
        m.ts = e.ts;
        if kind == EV_VOID {
            // A marker is a void event to readers of 12 streams.
            if e.kind == KIND_MARK && e.res != 0 {
                s[S_MARK].push(e.res);
                let t = &mut s[S_MTEXT];
                put_uv(t, e.id);
                put_uv(t, u64::from(e.node));
                put_uv(t, e.size);
                let name = &name[..name.len().min(MARK_NAME_MAX)];
                put_uv(t, name.len() as u64);
                t.extend_from_slice(name);
            } else {
                s[S_MARK].push(0);
            }
            return;
        }
        s[S_RES].push(e.res);
        if kind == EV_ALLOC {
            let pair = (e.size, e.node);
            let predicted = pairs.next[pairs.prev as usize];
            let id = if predicted != NO_PAIR && pairs.pairs[predicted as usize] == pair {
                s[S_INFO].push(INFO_NEXT);
                predicted
            } else if let Some((k, id)) = pairs
                .ids
                .get(&pair)
                .and_then(|&id| Some((pairs.recent_find(id)?, id)))
            {
                // The pair's latest number: an earlier one is never among
                // the recent (a pair is new only when it is not there).
                s[S_INFO].push(k as u8 + 1);
                pairs.recent_front(k);
                id
            } else {
                s[S_INFO].push(INFO_NEW);
                put_uv(&mut s[S_SIZE], e.size);
                put_uv(&mut s[S_NODE], u64::from(e.node));
                let id = pairs.push_new(pair);
                pairs.ids.insert(pair, id);
                pairs.recent_push(id);
                id
            };
            pairs.seen(id);
            if unaddressed {
                // The model does not see it.
                s[S_APTR].push(APTR_UNADDRESSED);
                let ordinal = m.live.push(e.id, UNADDRESSED);
                m.live_at.insert(e.id, ordinal);
                return;
            }
            let class = class_of(e.size);
            let addr = e.id;
            let list = m.classes.list(class);
            let predicted = m.last.0.wrapping_add(m.last.1);
            if let Some(d) = list.iter().rev().take(CLASS_TOP).position(|&a| a == addr) {
                list.remove(list.len() - 1 - d);
                s[S_APTR].push(d as u8);
            } else if let Some(d) = Model::take_from(list, addr, CLASS_TOP) {
                s[S_APTR].push(APTR_CLASS_DEEP);
                put_uv(&mut s[S_APTRX], (d - CLASS_TOP) as u64);
            } else if addr == predicted {
                s[S_APTR].push(APTR_NEXT);
            } else if let Some(d) = Model::take_from(&mut m.freed, addr, 0) {
                s[S_APTR].push(APTR_FREED);
                put_uv(&mut s[S_APTRX], d as u64);
            } else if let Some(j) = m.end_of_recent(addr) {
                s[S_APTR].push(APTR_END);
                put_uv(&mut s[S_APTRX], j as u64);
            } else {
                s[S_APTR].push(APTR_DELTA);
                put_sv(&mut s[S_APTRX], addr.wrapping_sub(predicted) as i64);
            }
            m.allocated(addr, class, true);
        } else {
            let addr = e.id;
            match m.live_at.remove(&addr).filter(|&o| m.live.is_live(o)) {
                Some(ordinal) => {
                    put_uv(&mut s[S_FREF], m.live.rank(ordinal) as u64);
                    let (_, class) = m.live.take(ordinal);
                    if class != UNADDRESSED {
                        m.released(addr, Some(class));
                    }
                }
                None => {
                    put_uv(&mut s[S_FREF], 0);
                    put_sv(&mut s[S_FPTR], addr.wrapping_sub(m.last.0) as i64);
                    m.released(addr, None);
                }
            }
        }
    }

    /// The block's payload (thread, stream lengths, streams) into `out`.
    fn finish(&self, thread: u64, out: &mut Vec<u8>) {
        out.clear();
        put_uv(out, thread);
        put_uv(out, STREAMS as u64);
        for s in &self.streams {
            put_uv(out, s.len() as u64);
        }
        for s in &self.streams {
            out.extend_from_slice(s);
        }
    }
}

/// Decodes an events block's payload (`count` events from number
/// `first`) into wire records appended to `out` (the stack field holds
/// the node); `None` at the first thing that does not decode (the records
/// before it are kept).
#[cfg(test)]
fn decode_block(p: &[u8], first: u64, count: u32, out: &mut Vec<u8>) -> Option<()> {
    let mut state = BlockState::default();
    decode_block_with(p, first, count, u32::MAX, Rules::default(), out, &mut state)
}

/// How a file's events blocks are read (its version and flags say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Version 1: (size, node) pairs are numbered by value.
    pub pairs_by_value: bool,
    /// [`FLAG_TRANSIENT_UNADDRESSED`]: an allocation may be named by its
    /// number ([`APTR_UNADDRESSED`]).
    pub unaddressed: bool,
}

/// `node`, or [`UNKNOWN_NODE`] when it is not below `nodes`.
#[inline]
fn known_node(node: u32, nodes: u32) -> u32 {
    if node < nodes {
        node
    } else {
        UNKNOWN_NODE
    }
}

/// What decoding an events block builds, kept from block to block so
/// that its lists keep their room (each block starts from it emptied).
#[derive(Default)]
pub(crate) struct BlockState {
    m: Model,
    pairs: Pairs,
}

impl Model {
    /// Empties the decoder's state for a block starting at number
    /// `first` (the lists keep their room).
    fn reset(&mut self, first: u64) {
        self.seq = first.wrapping_sub(1);
        self.ts = 0;
        self.live_at.clear();
        self.live.slots.clear();
        self.live.tree.clear();
        self.live.bits.clear();
        self.live.word_live.clear();
        self.live.lo = 0;
        self.live.lazy = true;
        self.live.count = 0;
        for l in &mut self.classes.small {
            l.clear();
        }
        self.classes.large.clear();
        self.freed.clear();
        self.last = (0, 0);
        self.allocs = 0;
    }
}

/// [`decode_block`] with the state kept from the last block; a node not
/// below `nodes` (not defined before the block: damage) becomes
/// [`UNKNOWN_NODE`].
fn decode_block_with(
    p: &[u8],
    first: u64,
    count: u32,
    nodes: u32,
    rules: Rules,
    out: &mut Vec<u8>,
    state: &mut BlockState,
) -> Option<()> {
    let mut c = Cur::new(p);
    let _thread = c.uv()?;
    let n = usize::try_from(c.uv()?).ok()?;
    // Every stream has its length; every event at least three bytes.
    if n < STREAMS_MIN || n > p.len() || count as usize > p.len() {
        return None;
    }
    let mut lens = Vec::with_capacity(n);
    for _ in 0..n {
        lens.push(usize::try_from(c.uv()?).ok()?);
    }
    let mut s: Vec<Cur<'_>> = Vec::with_capacity(n);
    for len in lens {
        s.push(Cur::new(c.bytes(len)?));
    }
    let marks = n >= STREAMS;
    let BlockState { m, pairs } = state;
    m.reset(first);
    pairs.reset();
    let mut e = Ev::default();
    for _ in 0..count {
        let code = s[S_CODE].u8()?;
        let kind = code & 3;
        let mut func = code >> 2;
        if func == FUNC_ESCAPE {
            func = s[S_FUNC].u8()?;
        }
        m.seq = m.seq.wrapping_add(s[S_SEQ].sv()? as u64).wrapping_add(1);
        m.ts = m.ts.wrapping_add(i32::try_from(s[S_MS].sv()?).ok()? as u32);
        e.seq = m.seq;
        e.ts = m.ts;
        e.func = func;
        match kind {
            EV_VOID => {
                if func != 0 {
                    return None;
                }
                e.kind = KIND_VOID;
                e.res = 0;
                let mark = if marks { s[S_MARK].u8()? } else { 0 };
                if mark != 0 {
                    let t = &mut s[S_MTEXT];
                    let (tid, node, full) = (t.uv()?, t.uv()?, t.uv()?);
                    let len = usize::try_from(t.uv()?).ok()?;
                    if len > MARK_NAME_MAX {
                        return None;
                    }
                    let name = t.bytes(len)?;
                    e.kind = KIND_MARK;
                    e.res = mark;
                    e.id = u64::from(u32::try_from(tid).ok()?);
                    e.node = known_node(u32::try_from(node).ok()?, nodes);
                    e.size = u64::from(u32::try_from(full).ok()?);
                    e.write_wire(out, name);
                    continue;
                }
            }
            EV_ALLOC => {
                e.kind = KIND_ALLOC;
                e.res = s[S_RES].u8()?;
                let id = match s[S_INFO].u8()? {
                    INFO_NEXT => Some(pairs.next[pairs.prev as usize]).filter(|&i| i != NO_PAIR)?,
                    INFO_NEW => {
                        let info = (s[S_SIZE].uv()?, u32::try_from(s[S_NODE].uv()?).ok()?);
                        let id = if rules.pairs_by_value {
                            pairs.intern(info)
                        } else {
                            pairs.push_new(info)
                        };
                        pairs.recent_push(id);
                        id
                    }
                    k => pairs.recent_front(k as usize - 1)?,
                };
                (e.size, e.node) = pairs.seen(id);
                e.node = known_node(e.node, nodes);
                let code = s[S_APTR].u8()?;
                if code == APTR_UNADDRESSED && rules.unaddressed {
                    e.id = NOT_KEPT | e.seq;
                    m.live.push(e.id, UNADDRESSED);
                    e.write_wire(out, &[]);
                    continue;
                }
                let class = class_of(e.size);
                let predicted = m.last.0.wrapping_add(m.last.1);
                let list = m.classes.list(class);
                e.id = match code {
                    d @ 0..=7 => Model::take_at(list, d as usize)?,
                    APTR_CLASS_DEEP => {
                        let d = usize::try_from(s[S_APTRX].uv()?)
                            .ok()?
                            .checked_add(CLASS_TOP)?;
                        Model::take_at(list, d)?
                    }
                    APTR_NEXT => predicted,
                    APTR_FREED => {
                        let d = usize::try_from(s[S_APTRX].uv()?).ok()?;
                        Model::take_at(&mut m.freed, d)?
                    }
                    APTR_DELTA => predicted.wrapping_add(s[S_APTRX].sv()? as u64),
                    APTR_END => m.end_at(usize::try_from(s[S_APTRX].uv()?).ok()?)?,
                    _ => return None,
                };
                m.allocated(e.id, class, false);
            }
            EV_FREE => {
                e.kind = KIND_FREE;
                e.res = s[S_RES].u8()?;
                match usize::try_from(s[S_FREF].uv()?).ok()? {
                    0 => {
                        e.id = m.last.0.wrapping_add(s[S_FPTR].sv()? as u64);
                        m.released(e.id, None);
                    }
                    r => {
                        m.live.compact();
                        let (addr, class) = m.live.take_rank(r)?;
                        e.id = addr;
                        if class != UNADDRESSED {
                            m.released(addr, Some(class));
                        }
                    }
                }
            }
            _ => return None,
        }
        e.write_wire(out, &[]);
    }
    Some(())
}

// ---------------------------------------------------------------------
// Memory maps.

/// The executable mappings of a `/proc/<pid>/maps` snapshot, in its order:
/// `(path, start, end)` (what the text's `: path => 0xstart-0xend` lines
/// are made of).
pub(crate) fn exec_mappings(text: &str) -> impl Iterator<Item = (String, u64, u64)> + '_ {
    text.lines().filter_map(|line| {
        let mut parts = line.split_whitespace();
        let (range, perms) = (parts.next()?, parts.next()?);
        let path: Vec<&str> = parts.skip(3).collect();
        if !perms.contains('x') || path.is_empty() {
            return None;
        }
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        Some((path.join(" "), a, b))
    })
}

// ---------------------------------------------------------------------
// Writing.

/// What the file says about the recording as a whole (its first block).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordingHead {
    /// The command line.
    pub command: Vec<String>,
    /// The recorder's pid: the command's first process is its child.
    pub recorder_pid: Option<u32>,
    /// The recorder (`tracekit 0.x`).
    pub origin: Option<String>,
    /// Every heap block's address is in the file (`record mem
    /// --addresses`); when false (the default), those released within
    /// their events block are named by their event number
    /// ([`FLAG_TRANSIENT_UNADDRESSED`] in the file's head).
    pub transient_addresses: bool,
}

/// What the recorder knew at the end (the last block; a file without it
/// was not finished: the recorder was killed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Finish {
    /// The command's pid.
    pub pid: Option<i64>,
    /// The transport's counts (`capture::CaptureStats`) by name.
    pub capture: serde_json::Map<String, serde_json::Value>,
}

/// How much a [`Writer`] wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteStats {
    pub bytes: u64,
    pub blocks: u64,
    pub events: u64,
    pub ips: u64,
    pub nodes: u64,
    /// Payload bytes before compression.
    pub raw_bytes: u64,
}

/// What a [`Writer`] wrote of one image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageCounts {
    pub allocs: u64,
    pub frees: u64,
    /// Numbers taken that produced no call (a failed `realloc`).
    pub voids: u64,
    /// Markers the program made (`include/tracekit/mem.h`).
    pub marks: u64,
    /// One more than the largest event number (0: none): with no
    /// duplicates, `allocs + frees + voids + marks` short of it is what
    /// was lost.
    pub numbers: u64,
}

/// The shim's backtrace numbers of one image and their nodes.
struct StackMap(NumberMap<u32>);

impl Default for StackMap {
    /// Numbers below 2^22 by index.
    fn default() -> StackMap {
        StackMap(NumberMap::new(1 << 22))
    }
}

impl StackMap {
    fn get(&self, id: u32) -> u32 {
        if id == 0 {
            return 0;
        }
        self.0.get(id).copied().unwrap_or(UNKNOWN_NODE)
    }

    /// Keeps the first definition of a number (as the text decoder does).
    fn define(&mut self, id: u32, node: u32) {
        if id != 0 && self.get(id) == UNKNOWN_NODE {
            self.0.insert(id, node);
        }
    }
}

/// A backtrace's hash (the writer's index of known backtraces).
fn stack_hash(frames: &[u64]) -> u64 {
    let mut h = frames.len() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    for &f in frames {
        h = (h.rotate_left(5) ^ f).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h
}

/// Writes a `.tkmem` file as the recording goes: [`Writer::image`] when a
/// process image starts, [`Writer::maps`] for each maps snapshot,
/// [`Writer::events`] for each thread's events (in number order), and
/// [`Writer::end`]; [`Writer::finish`] last. Memory: the interning tables
/// and one block.
pub struct Writer<W: Write> {
    out: W,
    zstd: zstd::bulk::Compressor<'static>,
    ips: HashMap<u64, u32>,
    nodes: HashMap<(u32, u32), u32>,
    /// Nodes so far, the root included.
    node_count: u32,
    /// The addresses and nodes by index, and whole backtraces by hash.
    ip_list: Vec<u64>,
    node_list: Vec<(u32, u32)>,
    by_hash: HashMap<u64, u32>,
    frames: Vec<u64>,
    strings: HashMap<String, u32>,
    pending_strings: Vec<String>,
    pending_ips: Vec<u64>,
    pending_nodes: Vec<(u32, u32)>,
    images: Vec<StackMap>,
    counts: Vec<ImageCounts>,
    payload: Vec<u8>,
    block: Vec<u8>,
    stats: WriteStats,
    /// Heap blocks released within their events block get no address.
    unaddressed: bool,
    /// [`transients`]' results and map, kept for their room.
    unaddressed_scratch: Vec<bool>,
    open_scratch: HashMap<u64, (usize, u32)>,
}

impl<W: Write> Writer<W> {
    /// Starts a file: its head and the recording block.
    pub fn new(out: W, head: &RecordingHead) -> io::Result<Writer<W>> {
        let mut w = Writer {
            out,
            zstd: zstd::bulk::Compressor::new(LEVEL)?,
            ips: HashMap::default(),
            nodes: HashMap::default(),
            node_count: 1,
            ip_list: Vec::new(),
            node_list: Vec::new(),
            by_hash: HashMap::default(),
            frames: Vec::new(),
            strings: HashMap::default(),
            pending_strings: Vec::new(),
            pending_ips: Vec::new(),
            pending_nodes: Vec::new(),
            images: Vec::new(),
            counts: Vec::new(),
            payload: Vec::new(),
            block: Vec::new(),
            stats: WriteStats::default(),
            unaddressed: !head.transient_addresses,
            unaddressed_scratch: Vec::new(),
            open_scratch: HashMap::default(),
        };
        let mut h = [0u8; FILE_HEAD];
        h[..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        if !head.transient_addresses {
            h[12..16].copy_from_slice(&FLAG_TRANSIENT_UNADDRESSED.to_le_bytes());
        }
        w.out.write_all(&h)?;
        w.stats.bytes += FILE_HEAD as u64;
        let json = serde_json::json!({
            "command": head.command,
            "recorder_pid": head.recorder_pid,
            "origin": head.origin,
        });
        let payload = serde_json::to_vec(&json).map_err(io::Error::other)?;
        w.write_block(KIND_RECORDING, NO_IMAGE, 0, 0, &payload, false)?;
        Ok(w)
    }

    /// What has been written so far.
    pub fn stats(&self) -> WriteStats {
        self.stats
    }

    /// What has been written of each image, in the order they started.
    pub fn image_counts(&self) -> Vec<ImageCounts> {
        self.counts.clone()
    }

    /// Starts image `n` of its pid with the shim's header record (the
    /// `TKHD` chunk's payload: pid, ppid, times, depth, modules, nonce,
    /// executable); returns the image's index in the file.
    pub fn image(&mut self, n: u32, header: &[u8]) -> io::Result<u32> {
        let k = self.images.len() as u32;
        self.images.push(StackMap::default());
        self.counts.push(ImageCounts::default());
        self.write_block(KIND_IMAGE, k, n, 0, header, false)?;
        Ok(k)
    }

    /// A `/proc/<pid>/maps` snapshot of image `image`: its executable
    /// mappings are kept.
    pub fn maps(&mut self, image: u32, snapshot: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(snapshot);
        let mut entries = Vec::new();
        for (path, a, b) in exec_mappings(&text) {
            let s = self.string(path);
            entries.push((s, a, b));
        }
        self.flush_dict()?;
        let mut p = std::mem::take(&mut self.payload);
        p.clear();
        put_uv(&mut p, entries.len() as u64);
        let mut prev = 0u64;
        for (s, a, b) in &entries {
            put_uv(&mut p, u64::from(*s));
            put_sv(&mut p, a.wrapping_sub(prev) as i64);
            put_uv(&mut p, b.wrapping_sub(*a));
            prev = *b;
        }
        let r = self.write_block(KIND_MAPS, image, entries.len() as u32, 0, &p, true);
        self.payload = p;
        r
    }

    /// One thread's records of image `image` (whole records of the wire
    /// layout, in the order of their numbers, each backtrace definition
    /// before the record that uses it first): definitions become trace-tree
    /// nodes, the other records one events block.
    pub fn events(&mut self, image: u32, thread: u64, records: &[u8]) -> io::Result<()> {
        let k = image as usize;
        if k >= self.images.len() {
            return Err(io::Error::other(format!(
                "events of image {image}, never started"
            )));
        }
        // One block per part (what the recorder writes at once is one).
        let mut at = 0;
        while at < records.len() {
            let end = part_end(records, at);
            if end == at {
                break;
            }
            self.events_part(k, thread, &records[at..end])?;
            at = end;
        }
        Ok(())
    }

    /// One events block of `records` (whole records, at most [`PART`]
    /// bytes).
    fn events_part(&mut self, k: usize, thread: u64, records: &[u8]) -> io::Result<()> {
        let mut unaddressed = std::mem::take(&mut self.unaddressed_scratch);
        unaddressed.clear();
        if self.unaddressed {
            transients(records, &mut unaddressed, &mut self.open_scratch);
        }
        let mut enc: Option<BlockEncoder> = None;
        let mut allocs = 0;
        let mut at = 0;
        while let Some(len) = record_len(&records[at..]).filter(|&l| at + l <= records.len()) {
            let r = &records[at..at + len];
            at += len;
            if r[0] == KIND_STACK {
                let n = r[1] as usize;
                let id = u32::from_le_bytes([r[4], r[5], r[6], r[7]]);
                if self.images[k].get(id) == UNKNOWN_NODE {
                    let mut frames = std::mem::take(&mut self.frames);
                    frames.clear();
                    frames.extend((0..n).map(|i| {
                        let at = STACK_HEAD + 8 * i;
                        u64::from_le_bytes(r[at..at + 8].try_into().unwrap_or_default())
                    }));
                    let node = self.intern_stack(&frames);
                    self.frames = frames;
                    self.images[k].define(id, node);
                }
                continue;
            }
            let mut e = Ev::from_wire(r);
            let c = &mut self.counts[k];
            let mut name: &[u8] = &[];
            let mut named_by_number = false;
            match e.kind {
                KIND_ALLOC => {
                    e.node = self.images[k].get(e.node);
                    c.allocs += 1;
                    named_by_number = unaddressed.get(allocs).copied().unwrap_or(false);
                    allocs += 1;
                }
                KIND_FREE => c.frees += 1,
                KIND_MARK => {
                    e.node = self.images[k].get(e.node);
                    name = Ev::mark_name(r);
                    c.marks += 1;
                }
                _ => c.voids += 1,
            }
            c.numbers = c.numbers.max(e.seq.saturating_add(1));
            enc.get_or_insert_with(|| BlockEncoder::new(e.seq))
                .push(&e, name, named_by_number);
        }
        self.unaddressed_scratch = unaddressed;
        match enc {
            Some(b) => self.events_block(k as u32, thread, &b),
            None => Ok(()),
        }
    }

    fn events_block(&mut self, image: u32, thread: u64, b: &BlockEncoder) -> io::Result<()> {
        self.flush_dict()?;
        self.stats.events += u64::from(b.count);
        let mut p = std::mem::take(&mut self.payload);
        b.finish(thread, &mut p);
        let r = self.write_block(KIND_EVENTS, image, b.count, b.first, &p, true);
        self.payload = p;
        r
    }

    /// How image `image` ended (a later one replaces an earlier one).
    pub fn end(&mut self, image: u32, end: ImageEnd) -> io::Result<()> {
        self.write_block(KIND_END, image, 0, 0, &end.encode(), false)
    }

    /// Writes the closing block and flushes; returns the output (what was
    /// written in all: [`Writer::stats`] before).
    pub fn finish(mut self, finish: &Finish) -> io::Result<W> {
        let json = serde_json::json!({ "pid": finish.pid, "capture": finish.capture });
        let payload = serde_json::to_vec(&json).map_err(io::Error::other)?;
        self.write_block(KIND_FINISH, NO_IMAGE, 0, 0, &payload, false)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Flushes what was written (blocks are written whole).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn string(&mut self, s: String) -> u32 {
        if let Some(&k) = self.strings.get(&s) {
            return k;
        }
        let k = self.strings.len() as u32;
        self.pending_strings.push(s.clone());
        self.strings.insert(s, k);
        k
    }

    /// The node of a backtrace (innermost frame first): the path from the
    /// outermost frame down, each (parent, address) once.
    fn intern_stack(&mut self, frames: &[u64]) -> u32 {
        // The shim defines a backtrace again whenever its per-thread table
        // starts over, and per thread: most definitions are of a known
        // backtrace, found by its hash (checked along the tree).
        let h = stack_hash(frames);
        if let Some(&node) = self.by_hash.get(&h) {
            if self.path_is(node, frames) {
                return node;
            }
        }
        let node = self.intern_path(frames);
        self.by_hash.insert(h, node);
        node
    }

    /// Whether node `node`'s path is `frames` (innermost first).
    fn path_is(&self, node: u32, frames: &[u64]) -> bool {
        let mut n = node;
        for &addr in frames {
            let Some(&(parent, ip)) = n
                .checked_sub(1)
                .and_then(|k| self.node_list.get(k as usize))
            else {
                return false;
            };
            if self.ip_list.get(ip as usize) != Some(&addr) {
                return false;
            }
            n = parent;
        }
        n == 0
    }

    fn intern_path(&mut self, frames: &[u64]) -> u32 {
        let mut node = 0u32;
        for &addr in frames.iter().rev() {
            let next_ip = self.ips.len() as u32;
            let ip = *self.ips.entry(addr).or_insert_with(|| {
                self.pending_ips.push(addr);
                self.ip_list.push(addr);
                next_ip
            });
            let next = self.node_count;
            node = *self.nodes.entry((node, ip)).or_insert_with(|| {
                self.pending_nodes.push((node, ip));
                self.node_list.push((node, ip));
                next
            });
            if node == next {
                self.node_count += 1;
            }
        }
        node
    }

    /// Writes the strings, addresses and nodes defined since the last
    /// dictionary block, if any.
    fn flush_dict(&mut self) -> io::Result<()> {
        if self.pending_strings.is_empty()
            && self.pending_ips.is_empty()
            && self.pending_nodes.is_empty()
        {
            return Ok(());
        }
        let mut p =
            Vec::with_capacity(self.pending_ips.len() * 4 + self.pending_nodes.len() * 3 + 64);
        put_uv(&mut p, self.pending_strings.len() as u64);
        for s in self.pending_strings.drain(..) {
            put_uv(&mut p, s.len() as u64);
            p.extend_from_slice(s.as_bytes());
        }
        put_uv(&mut p, self.pending_ips.len() as u64);
        let mut prev = 0u64;
        for a in self.pending_ips.drain(..) {
            put_sv(&mut p, a.wrapping_sub(prev) as i64);
            prev = a;
        }
        put_uv(&mut p, self.pending_nodes.len() as u64);
        let first = self.node_count - self.pending_nodes.len() as u32;
        let mut prev_ip = 0u32;
        for (i, (parent, ip)) in self.pending_nodes.drain(..).enumerate() {
            // Nodes are made from the outermost frame in: the parent is
            // usually the node just before.
            put_uv(&mut p, u64::from(first + i as u32 - parent));
            put_sv(&mut p, i64::from(ip) - i64::from(prev_ip));
            prev_ip = ip;
        }
        self.stats.ips = self.ips.len() as u64;
        self.stats.nodes = u64::from(self.node_count);
        self.write_block(KIND_DICT, NO_IMAGE, 0, u64::from(first), &p, true)
    }

    /// One block, written with one `write` (compressed when that makes it
    /// smaller).
    fn write_block(
        &mut self,
        kind: u8,
        image: u32,
        count: u32,
        first: u64,
        payload: &[u8],
        compress: bool,
    ) -> io::Result<()> {
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        block.resize(BLOCK_HEAD, 0);
        let mut codec = CODEC_STORED;
        if compress && payload.len() > 64 {
            let bound = zstd::zstd_safe::compress_bound(payload.len());
            block.reserve(bound);
            let mut z = std::mem::take(&mut block);
            let n = {
                let spare = z.spare_capacity_mut();
                // SAFETY: the compressor writes at most `bound` bytes into
                // the spare capacity; only those it reports are kept.
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), spare.len())
                };
                self.zstd.compress_to_buffer(payload, dst)
            };
            block = z;
            match n {
                Ok(n) if n < payload.len() => {
                    // SAFETY: the compressor initialised these n bytes.
                    unsafe { block.set_len(BLOCK_HEAD + n) };
                    codec = CODEC_ZSTD;
                }
                _ => {}
            }
        }
        if codec == CODEC_STORED {
            block.extend_from_slice(payload);
        }
        let mut h = BlockHeader {
            kind,
            codec,
            stored: (block.len() - BLOCK_HEAD) as u32,
            raw: payload.len() as u32,
            crc: 0,
            image,
            count,
            first,
        };
        h.crc = h.checksum(&block[BLOCK_HEAD..]);
        block[..BLOCK_HEAD].copy_from_slice(&h.encode());
        let r = self.out.write_all(&block);
        self.stats.bytes += block.len() as u64;
        self.stats.blocks += 1;
        self.stats.raw_bytes += payload.len() as u64;
        self.block = block;
        r
    }
}

// ---------------------------------------------------------------------
// Reading.

/// Addresses and trace-tree nodes of a file.
#[derive(Debug, Default)]
pub struct Dict {
    pub strings: Vec<String>,
    pub ips: Vec<u64>,
    /// `(parent, ip index)` of node `k + 1` (node 0 is the root).
    pub nodes: Vec<(u32, u32)>,
}

impl Dict {
    /// The return addresses of node `node`'s backtrace, innermost first
    /// (`None`: no such node).
    pub fn frames(&self, node: u32, out: &mut Vec<u64>) -> Option<()> {
        out.clear();
        let mut n = node;
        while n != 0 {
            let &(parent, ip) = self.nodes.get(n as usize - 1)?;
            out.push(*self.ips.get(ip as usize)?);
            if parent >= n || out.len() > 256 {
                return None;
            }
            n = parent;
        }
        Some(())
    }

    /// Nodes so far, the root included.
    pub fn node_count(&self) -> u32 {
        self.nodes.len() as u32 + 1
    }
}

/// An events block of an image.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventsRef {
    /// Where its payload starts.
    pub offset: u64,
    pub header: BlockHeader,
    /// The nodes defined before it (a reference to a later one is damage).
    pub nodes: u32,
    /// How its events are read.
    pub rules: Rules,
}

/// One process image of a file.
#[derive(Debug, Clone)]
pub struct PackedImage {
    /// Its header (and how it ended, from its last end block).
    pub info: RecordingInfo,
    /// Counts the images of one pid (exec starts the next).
    pub n: u32,
    /// Events in its blocks (duplicates included).
    pub events: u64,
    /// The executable mappings of each maps snapshot, in file order.
    pub(crate) maps: Vec<Vec<(u32, u64, u64)>>,
    pub(crate) blocks: Vec<EventsRef>,
}

/// Where and why a reader stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The offset of the first block not read.
    pub offset: u64,
    /// Bytes from there to the end of the file.
    pub bytes: u64,
    pub reason: String,
    /// The events of the block cut short there, when its header says:
    /// (image index, events).
    pub cut_events: Option<(u32, u32)>,
}

/// A `.tkmem` file, read: its blocks' headers, the dictionary, the images
/// (headers, maps, where their events are) and how it ended. Events are
/// read an image at a time ([`PackedFile::decoder`],
/// [`PackedFile::events`]).
pub struct PackedFile {
    pub path: Option<PathBuf>,
    /// The layout version the file says it has.
    pub version: u32,
    /// Its head's flags ([`FLAG_TRANSIENT_UNADDRESSED`]).
    pub flags: u32,
    pub(crate) src: Arc<dyn Source + Send + Sync>,
    pub head: RecordingHead,
    pub finish: Option<Finish>,
    pub images: Vec<PackedImage>,
    pub(crate) dict: Arc<Dict>,
    /// Set when reading stopped before the end of the file.
    pub damage: Option<Damage>,
    pub size: u64,
    pub blocks: u64,
    /// Bytes of the blocks of each kind (headers included), by kind.
    pub bytes_by_kind: [u64; 8],
}

impl std::fmt::Debug for PackedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedFile")
            .field("path", &self.path)
            .field("head", &self.head)
            .field("images", &self.images.len())
            .field("damage", &self.damage)
            .finish()
    }
}

/// An owned copy of a file's bytes.
struct Owned(Vec<u8>);

impl Source for Owned {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let off = usize::try_from(off).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = off
            .checked_add(buf.len())
            .and_then(|end| self.0.get(off..end))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl PackedFile {
    /// Reads the file at `path` (with `pread`: only the dictionary, the
    /// maps and the block headers stay in memory).
    pub fn open(path: &Path) -> Result<PackedFile> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(Some(path), e))?;
        let mut p = PackedFile::read(Arc::new(f)).map_err(|e| e.in_file(path))?;
        p.path = Some(path.to_path_buf());
        Ok(p)
    }

    /// Reads an open file (a temporary copy of standard input).
    pub fn from_file(f: std::fs::File) -> Result<PackedFile> {
        PackedFile::read(Arc::new(f))
    }

    /// Reads a file held in memory.
    pub fn from_bytes(data: Vec<u8>) -> Result<PackedFile> {
        PackedFile::read(Arc::new(Owned(data)))
    }

    fn read(src: Arc<dyn Source + Send + Sync>) -> Result<PackedFile> {
        let size = src.size();
        let io = |e| Error::io(None, e);
        let mut head = [0u8; FILE_HEAD];
        if size < FILE_HEAD as u64 {
            return Err(Error::malformed(
                Position::Offset(0),
                format!(
                    "a .tkmem file starts with a {FILE_HEAD}-byte head; this one has {size} bytes"
                ),
            ));
        }
        src.read_at(0, &mut head).map_err(io)?;
        if head[..8] != MAGIC {
            return Err(Error::malformed(
                Position::Offset(0),
                "not a tracekit memory recording (.tkmem)",
            ));
        }
        let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(Error::malformed(
                Position::Offset(8),
                format!(
                    "tracekit memory recording version {version}: this tracekit reads versions {OLDEST_VERSION} to {VERSION}"
                ),
            ));
        }
        let flags = u32::from_le_bytes([head[12], head[13], head[14], head[15]]);
        let known = if version >= 3 {
            FLAG_TRANSIENT_UNADDRESSED
        } else {
            0
        };
        if flags & !known != 0 {
            return Err(Error::malformed(
                Position::Offset(12),
                format!(
                    "tracekit memory recording version {version} with flags {flags:#x}: this tracekit knows {known:#x}"
                ),
            ));
        }
        let mut file = PackedFile {
            path: None,
            version,
            flags,
            src: src.clone(),
            // The flag says it, whether or not the recording block reads.
            head: RecordingHead {
                transient_addresses: flags & FLAG_TRANSIENT_UNADDRESSED == 0,
                ..RecordingHead::default()
            },
            finish: None,
            images: Vec::new(),
            dict: Arc::new(Dict::default()),
            damage: None,
            size,
            blocks: 0,
            bytes_by_kind: [0; 8],
        };
        let mut dict = Dict::default();
        let mut off = FILE_HEAD as u64;
        let mut payload = Vec::new();
        let mut raw = Vec::new();
        let stop = |off: u64, reason: String| Damage {
            offset: off,
            bytes: size - off,
            reason,
            cut_events: None,
        };
        while off < size {
            if size - off < BLOCK_HEAD as u64 {
                file.damage = Some(stop(off, "an incomplete block header".into()));
                break;
            }
            let mut hb = [0u8; BLOCK_HEAD];
            src.read_at(off, &mut hb).map_err(io)?;
            let Some(h) = BlockHeader::decode(&hb) else {
                file.damage = Some(stop(off, "not a block header".into()));
                break;
            };
            let body = off + BLOCK_HEAD as u64;
            if h.stored as usize > MAX_PAYLOAD || h.raw as usize > MAX_PAYLOAD {
                file.damage = Some(stop(
                    off,
                    format!(
                        "a block of {} bytes (at most {MAX_PAYLOAD})",
                        h.stored.max(h.raw)
                    ),
                ));
                break;
            }
            if size - body < u64::from(h.stored) {
                let mut d = stop(
                    off,
                    format!(
                        "a block cut short ({} of its {} bytes)",
                        size - body,
                        h.stored
                    ),
                );
                if h.kind == KIND_EVENTS && (h.image as usize) < file.images.len() {
                    d.cut_events = Some((h.image, h.count));
                }
                file.damage = Some(d);
                break;
            }
            payload.resize(h.stored as usize, 0);
            src.read_at(body, &mut payload).map_err(io)?;
            if h.checksum(&payload) != h.crc {
                file.damage = Some(stop(
                    off,
                    "a block whose checksum does not match (damaged)".into(),
                ));
                break;
            }
            if let Err(why) = file.take_block(&h, body, &payload, &mut raw, &mut dict) {
                file.damage = Some(stop(off, why));
                break;
            }
            file.blocks += 1;
            file.bytes_by_kind[(h.kind as usize).min(7)] += BLOCK_HEAD as u64 + u64::from(h.stored);
            off = body + u64::from(h.stored);
        }
        file.dict = Arc::new(dict);
        Ok(file)
    }

    /// Takes in one checked block.
    fn take_block(
        &mut self,
        h: &BlockHeader,
        body: u64,
        payload: &[u8],
        raw: &mut Vec<u8>,
        dict: &mut Dict,
    ) -> std::result::Result<(), String> {
        if h.kind == KIND_EVENTS {
            // Read when its image is: only checked here.
            let image = self
                .images
                .get_mut(h.image as usize)
                .ok_or_else(|| format!("events of image {}, never started", h.image))?;
            if h.codec != CODEC_STORED && h.codec != CODEC_ZSTD {
                return Err(format!("unknown codec {}", h.codec));
            }
            image.events += u64::from(h.count);
            image.blocks.push(EventsRef {
                offset: body,
                header: *h,
                nodes: dict.node_count(),
                rules: Rules {
                    pairs_by_value: self.version == 1,
                    unaddressed: self.flags & FLAG_TRANSIENT_UNADDRESSED != 0,
                },
            });
            return Ok(());
        }
        let p = unpack(h, payload, raw)?;
        let bad = |what: &str| format!("a damaged {what} block");
        match h.kind {
            KIND_RECORDING => {
                let v: serde_json::Value =
                    serde_json::from_slice(p).map_err(|e| format!("recording block: {e}"))?;
                self.head = RecordingHead {
                    command: v["command"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|s| s.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default(),
                    recorder_pid: v["recorder_pid"]
                        .as_u64()
                        .and_then(|p| u32::try_from(p).ok()),
                    origin: v["origin"].as_str().map(str::to_string),
                    transient_addresses: self.head.transient_addresses,
                };
            }
            KIND_IMAGE => {
                if h.image as usize != self.images.len() {
                    return Err(format!(
                        "image {} where image {} was due",
                        h.image,
                        self.images.len()
                    ));
                }
                let info = super::parse_header(p).ok_or_else(|| bad("image"))?;
                self.images.push(PackedImage {
                    info,
                    n: h.count,
                    events: 0,
                    maps: Vec::new(),
                    blocks: Vec::new(),
                });
            }
            KIND_DICT => {
                if h.first != u64::from(dict.node_count()) {
                    return Err(format!(
                        "a dictionary starting at node {} where node {} was due",
                        h.first,
                        dict.node_count()
                    ));
                }
                read_dict(p, dict).ok_or_else(|| bad("dictionary"))?;
            }
            KIND_MAPS => {
                let n_strings = dict.strings.len() as u64;
                let image = self
                    .images
                    .get_mut(h.image as usize)
                    .ok_or_else(|| format!("maps of image {}, never started", h.image))?;
                let mut c = Cur::new(p);
                let n = c.uv().ok_or_else(|| bad("maps"))?;
                let mut entries = Vec::new();
                let mut prev = 0u64;
                for _ in 0..n {
                    let s = c
                        .uv()
                        .filter(|&s| s < n_strings)
                        .ok_or_else(|| bad("maps"))?;
                    let a = prev.wrapping_add(c.sv().ok_or_else(|| bad("maps"))? as u64);
                    let b = a.wrapping_add(c.uv().ok_or_else(|| bad("maps"))?);
                    entries.push((s as u32, a, b));
                    prev = b;
                }
                image.maps.push(entries);
            }
            KIND_END => {
                let image = self
                    .images
                    .get_mut(h.image as usize)
                    .ok_or_else(|| format!("the end of image {}, never started", h.image))?;
                image.info.end = Some(ImageEnd::decode(p).ok_or_else(|| bad("end"))?);
            }
            KIND_FINISH => {
                let v: serde_json::Value =
                    serde_json::from_slice(p).map_err(|e| format!("finish block: {e}"))?;
                self.finish = Some(Finish {
                    pid: v["pid"].as_i64(),
                    capture: v["capture"].as_object().cloned().unwrap_or_default(),
                });
            }
            // A later version's block: what this version knows stays
            // readable.
            _ => {}
        }
        Ok(())
    }

    /// The command's pid: from the closing block, else the image whose
    /// parent was the recorder.
    pub fn root_pid(&self) -> Option<i64> {
        if let Some(pid) = self.finish.as_ref().and_then(|f| f.pid) {
            return Some(pid);
        }
        let recorder = self.head.recorder_pid?;
        self.images
            .iter()
            .find(|i| i.info.ppid == recorder)
            .map(|i| i64::from(i.info.pid))
    }

    /// The executable mappings of image `k`, as the text trace lists them:
    /// those of its last snapshot, then those only earlier ones had, each
    /// once.
    pub fn image_maps(&self, k: usize) -> Vec<(String, u64, u64)> {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut out = Vec::new();
        let Some(image) = self.images.get(k) else {
            return out;
        };
        for snapshot in image.maps.iter().rev() {
            for &(s, a, b) in snapshot {
                if seen.insert((s, a, b)) {
                    let path = self
                        .dict
                        .strings
                        .get(s as usize)
                        .cloned()
                        .unwrap_or_default();
                    out.push((path, a, b));
                }
            }
        }
        out
    }

    /// The dictionary's size: (addresses, trace-tree nodes).
    pub fn dict_size(&self) -> (usize, usize) {
        (self.dict.ips.len(), self.dict.nodes.len())
    }
}

/// The payload of a block, decompressed if it was compressed.
fn unpack<'a>(
    h: &BlockHeader,
    payload: &'a [u8],
    raw: &'a mut Vec<u8>,
) -> std::result::Result<&'a [u8], String> {
    match h.codec {
        CODEC_STORED => Ok(payload),
        CODEC_ZSTD => {
            raw.clear();
            raw.reserve(h.raw as usize);
            let n = zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress_to_buffer(payload, raw))
                .map_err(|e| format!("a block that does not decompress: {e}"))?;
            if n != h.raw as usize {
                return Err(format!(
                    "a block of {n} bytes where its header says {}",
                    h.raw
                ));
            }
            Ok(&raw[..n])
        }
        c => Err(format!("unknown codec {c}")),
    }
}

fn read_dict(p: &[u8], dict: &mut Dict) -> Option<()> {
    let mut c = Cur::new(p);
    let n = c.uv()?;
    for _ in 0..n {
        let len = usize::try_from(c.uv()?).ok()?;
        dict.strings
            .push(String::from_utf8_lossy(c.bytes(len)?).into_owned());
    }
    let n = c.uv()?;
    let mut prev = 0u64;
    for _ in 0..n {
        prev = prev.wrapping_add(c.sv()? as u64);
        dict.ips.push(prev);
    }
    let n = c.uv()?;
    let mut prev_ip = 0i64;
    for _ in 0..n {
        let k = dict.node_count();
        let back = u32::try_from(c.uv()?).ok().filter(|&b| b >= 1 && b <= k)?;
        prev_ip += c.sv()?;
        let ip = u32::try_from(prev_ip)
            .ok()
            .filter(|&i| (i as usize) < dict.ips.len())?;
        dict.nodes.push((k - back, ip));
    }
    c.done().then_some(())
}

/// Decodes an events block into wire records (the stack field holding
/// the node) appended to `out`; returns how many bytes of its payload could
/// not be decoded (damage: the records before it are kept).
pub(crate) fn decode_events(
    src: &dyn Source,
    block: &EventsRef,
    out: &mut Vec<u8>,
    scratch: &mut (Vec<u8>, Vec<u8>, BlockState),
) -> Result<u64> {
    let h = &block.header;
    let (payload, raw, state) = scratch;
    payload.resize(h.stored as usize, 0);
    src.read_at(block.offset, payload)
        .map_err(|e| Error::io(None, e))?;
    let p = match unpack(h, payload, raw) {
        Ok(p) => p,
        Err(why) => {
            return Err(Error::malformed(Position::Offset(block.offset), why));
        }
    };
    out.reserve((h.count as usize).min(p.len()) * ALLOC_LEN);
    // Nodes not defined before the block are damage: no backtrace.
    let whole =
        decode_block_with(p, h.first, h.count, block.nodes, block.rules, out, state).is_some();
    Ok(if whole { 0 } else { p.len() as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test data's generator (xorshift64: the same numbers on every
    /// machine).
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn varints_round_trip() {
        let mut b = Vec::new();
        let vals = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        for v in vals {
            put_uv(&mut b, v);
        }
        let svals = [0i64, -1, 1, -64, 64, i64::MIN, i64::MAX];
        for v in svals {
            put_sv(&mut b, v);
        }
        let mut c = Cur::new(&b);
        for v in vals {
            assert_eq!(c.uv(), Some(v));
        }
        for v in svals {
            assert_eq!(c.sv(), Some(v));
        }
        assert!(c.done());
        assert_eq!(Cur::new(&[0xff; 11]).uv(), None);
    }

    /// Markers ride in the events block as void events plus streams 12
    /// and 13: they come back whole, and a block without those streams
    /// (files of version 1's first writers) still decodes, its void events
    /// plain.
    #[test]
    fn markers_round_trip_and_old_blocks_read() {
        let mut mark = Vec::new();
        Ev {
            kind: KIND_MARK,
            res: MARK_SNAPSHOT,
            ts: 77,
            seq: 11,
            id: 4242,
            node: 5,
            size: 400,
            ..Ev::default()
        }
        .write_wire(&mut mark, &[b'n'; 300]);
        assert_eq!(record_len(&mark), Some(mark.len()));
        assert_eq!(mark.len(), MARK_HEAD + 256);
        let events = [
            Ev {
                kind: KIND_ALLOC,
                ts: 70,
                seq: 10,
                size: 16,
                id: 0x1000,
                node: 3,
                ..Ev::default()
            },
            Ev::from_wire(&mark),
            Ev {
                kind: KIND_VOID,
                ts: 78,
                seq: 12,
                ..Ev::default()
            },
        ];
        let mut enc = BlockEncoder::new(10);
        for e in &events {
            let name = if e.kind == KIND_MARK {
                Ev::mark_name(&mark)
            } else {
                &[]
            };
            enc.push(e, name, false);
        }
        let mut p = Vec::new();
        enc.finish(1, &mut p);
        let mut wire = Vec::new();
        assert!(decode_block(&p, 10, 3, &mut wire).is_some());
        let mut expected = Vec::new();
        events[0].write_wire(&mut expected, &[]);
        expected.extend_from_slice(&mark);
        events[2].write_wire(&mut expected, &[]);
        assert_eq!(wire, expected);
        assert_eq!(Ev::mark_name(&mark), &[b'n'; 255][..]);

        // The same block as the first writers made it: 12 streams.
        let mut old = Vec::new();
        put_uv(&mut old, 1);
        put_uv(&mut old, STREAMS_MIN as u64);
        for s in &enc.streams[..STREAMS_MIN] {
            put_uv(&mut old, s.len() as u64);
        }
        for s in &enc.streams[..STREAMS_MIN] {
            old.extend_from_slice(s);
        }
        let mut wire = Vec::new();
        assert!(decode_block(&old, 10, 3, &mut wire).is_some());
        let mut expected = Vec::new();
        events[0].write_wire(&mut expected, &[]);
        let mut void = events[1];
        (void.kind, void.res, void.id, void.node, void.size) = (KIND_VOID, 0, 0, 0, 0);
        void.write_wire(&mut expected, &[]);
        events[2].write_wire(&mut expected, &[]);
        assert_eq!(wire, expected);

        // Cut anywhere: never a panic.
        for cut in 0..p.len() {
            let _ = decode_block(&p[..cut], 10, 3, &mut Vec::new());
        }
    }

    /// The decoder's live tree, compacted whenever it may be, names the
    /// same allocation by rank as a plain list does.
    #[test]
    fn live_ranks_survive_compaction() {
        let mut live = Live::default();
        let mut list: Vec<(u64, u64)> = Vec::new();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut compacted = false;
        for i in 0..20_000u64 {
            live.push(i, i % 7);
            list.push((i, i % 7));
            let x = rng.next();
            if list.len() > 300 || x.is_multiple_of(3) {
                let r = (x % list.len() as u64) as usize + 1;
                let before = live.slots.len();
                live.compact();
                compacted |= live.slots.len() < before;
                assert_eq!(live.take_rank(r), Some(list.remove(list.len() - r)));
            }
        }
        assert!(compacted);
        assert_eq!(live.count, list.len());
        assert_eq!(live.take_rank(list.len() + 1), None);
    }

    /// Version 1 numbered a pair met again by its first number, version 2
    /// gives it a new one: a block whose info says "new A, new B, new A,
    /// what followed A last time" reads B there in version 1 and is
    /// damaged in version 2 (the second A has no successor yet).
    #[test]
    fn pairs_are_numbered_by_value_in_version_1_only() {
        let mut streams: [Vec<u8>; STREAMS] = Default::default();
        for _ in 0..4 {
            streams[S_CODE].push(1 << 2 | EV_ALLOC);
            streams[S_RES].push(0);
            put_sv(&mut streams[S_SEQ], 0);
            put_sv(&mut streams[S_MS], 0);
            streams[S_APTR].push(APTR_NEXT);
        }
        streams[S_INFO] = vec![INFO_NEW, INFO_NEW, INFO_NEW, INFO_NEXT];
        for size in [24u64, 40, 24] {
            put_uv(&mut streams[S_SIZE], size);
            put_uv(&mut streams[S_NODE], 0);
        }
        let mut p = Vec::new();
        let enc = BlockEncoder {
            streams,
            ..BlockEncoder::new(0)
        };
        enc.finish(1, &mut p);
        let sizes = |by_value: bool| {
            let (mut wire, mut state) = (Vec::new(), BlockState::default());
            let whole = decode_block_with(
                &p,
                0,
                4,
                1,
                Rules {
                    pairs_by_value: by_value,
                    ..Rules::default()
                },
                &mut wire,
                &mut state,
            );
            let mut at = 0;
            let mut sizes = Vec::new();
            while let Some(len) = record_len(&wire[at..]) {
                sizes.push(Ev::from_wire(&wire[at..at + len]).size);
                at += len;
            }
            (whole.is_some(), sizes)
        };
        assert_eq!(sizes(true), (true, vec![24, 40, 24, 40]));
        assert_eq!(sizes(false), (false, vec![24, 40, 24]));
    }

    #[test]
    fn recent_ends_are_named_within_their_bounds() {
        let mut m = Model::new(0);
        assert_eq!(m.end_at(1), None, "no allocation yet");
        for i in 0..100u64 {
            m.allocated(0x1000 * i, 32, true);
        }
        // The latest ends at 0x63020 (that is `predicted`, not code 12).
        assert_eq!(m.end_at(0), None);
        assert_eq!(m.end_at(1), Some(0x62020));
        assert_eq!(m.end_at(63), Some(0x1000 * 36 + 32));
        assert_eq!(m.end_at(64), None, "beyond what the model keeps");
        assert_eq!(m.end_of_recent(0x62020), Some(1));
        assert_eq!(m.end_of_recent(0x63020), None);
        assert_eq!(m.end_of_recent(0x1000 * 35 + 32), None);
        let mut few = Model::new(0);
        few.allocated(0x10, 32, true);
        few.allocated(0x30, 32, true);
        assert_eq!(few.end_at(1), Some(0x30));
        assert_eq!(few.end_at(2), None, "only two allocations so far");
    }

    /// Decodes `p` (a block of `events`, from the first one's number) and
    /// checks it gives them back, record by record; returns the records.
    fn decodes_to(p: &[u8], events: &[Ev]) -> Vec<u8> {
        let mut wire = Vec::new();
        assert!(decode_block(p, events[0].seq, events.len() as u32, &mut wire).is_some());
        let mut at = 0;
        for e in events {
            let len = record_len(&wire[at..]).unwrap();
            assert_eq!(Ev::from_wire(&wire[at..at + len]), *e);
            at += len;
        }
        assert_eq!(at, wire.len());
        wire
    }

    #[test]
    fn rfind_is_the_last_position() {
        for len in 0..40usize {
            let s: Vec<u64> = (0..len as u64).map(|i| i % 7).collect();
            for v in 0..9u64 {
                assert_eq!(rfind(&s, v), s.iter().rposition(|&a| a == v), "{len} {v}");
            }
        }
    }

    /// A word's k-th set bit, as counting its bits one by one finds it.
    #[test]
    fn select_bit_finds_the_kth_set_bit() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for round in 0..20_000 {
            let x = rng.next();
            let word = match round % 4 {
                0 => x,
                1 => x & x >> 1,
                2 => u64::MAX,
                _ => 1 << (x % 64) | 1 << 63,
            };
            let set: Vec<usize> = (0..64).filter(|&b| word >> b & 1 != 0).collect();
            for (i, &b) in set.iter().enumerate() {
                assert_eq!(select_bit(word, i + 1), b, "{word:#x} k {}", i + 1);
            }
        }
    }

    /// Ranks near either end and far from both, with many live, before
    /// and after compaction, are found as a plain list finds them.
    #[test]
    fn live_ranks_near_the_ends_and_far_from_them() {
        for lazy in [false, true] {
            live_ranks_as_a_list(lazy);
        }
    }

    fn live_ranks_as_a_list(lazy: bool) {
        let mut live = Live {
            lazy,
            ..Live::default()
        };
        let mut list: Vec<(u64, u64)> = Vec::new();
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        for i in 0..40_000u64 {
            live.push(i, i % 5);
            list.push((i, i % 5));
            let x = rng.next();
            if i % 3 != 0 {
                // Near the latest, near the oldest, or anywhere.
                let n = list.len() as u64;
                let r = match x % 3 {
                    0 => x % n.min(100),
                    1 => n - 1 - x % n.min(100),
                    _ => x % n,
                } as usize
                    + 1;
                live.compact();
                assert_eq!(live.take_rank(r), Some(list.remove(list.len() - r)));
            }
        }
        assert_eq!(live.count, list.len());
        while !list.is_empty() {
            assert_eq!(live.take_rank(list.len()), Some(list.remove(0)));
        }
        assert_eq!(live.take_rank(1), None);
    }

    /// Every field of every kind of event comes back, whatever its value.
    #[test]
    fn events_round_trip_of_a_heap() {
        // A heap's pattern: thousands live at once, released at any rank
        // (near either end and far from both, where the encoder's rank
        // needs its tree), addresses reused by class, repeated pairs.
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut next = || rng.next();
        let mut events = Vec::new();
        let mut live: Vec<u64> = Vec::new();
        let mut freed: Vec<u64> = Vec::new();
        let mut ends: Vec<u64> = Vec::new();
        let mut top = 0x10_0000u64;
        for seq in 0..40_000u64 {
            let r = next();
            let alloc = live.len() < 200 || (live.len() < 6000 && r % 3 != 0);
            let mut e = Ev {
                seq,
                ts: (seq / 100) as u32,
                func: 1,
                ..Ev::default()
            };
            if alloc {
                let size = [16u64, 24, 40, 100, 1000][(r >> 8) as usize % 5];
                e.kind = KIND_ALLOC;
                e.size = size;
                // 300 pairs: more than the 254 recent ones, so pairs leave
                // them and come back new (a second number in version 2).
                e.node = (r >> 16) as u32 % 60;
                e.id = if r % 16 == 1 && ends.len() > 10 {
                    // Where an allocation a few before ended (glibc
                    // splitting a chunk it merged).
                    ends[ends.len() - 1 - (r >> 40) as usize % 10]
                } else if !freed.is_empty() && r % 4 != 0 {
                    let i = freed.len() - 1 - (r >> 24) as usize % freed.len().min(40);
                    freed.remove(i)
                } else {
                    top += class_of(size);
                    top
                };
                ends.push(e.id + class_of(size));
                live.push(e.id);
            } else {
                let i = match r % 4 {
                    0 => live.len() - 1,
                    1 => 0,
                    _ => (r >> 32) as usize % live.len(),
                };
                e.kind = KIND_FREE;
                e.id = live.remove(i);
                freed.push(e.id);
            }
            events.push(e);
        }
        let mut enc = BlockEncoder::new(0);
        for e in &events {
            enc.push(e, &[], false);
        }
        assert!(
            enc.m.live.count > 4000 && !enc.m.live.lazy,
            "the tree was needed"
        );
        let codes = |c: u8| enc.streams[S_APTR].iter().filter(|&&a| a == c).count();
        assert!(codes(APTR_END) > 100, "ends of recent allocations named");
        let new_pairs = enc.streams[S_INFO]
            .iter()
            .filter(|&&c| c == INFO_NEW)
            .count();
        assert!(new_pairs > 300, "pairs came back new: {new_pairs}");
        assert!(codes(APTR_FREED) > 100 && codes(0) > 1000 && codes(APTR_NEXT) > 100);
        let mut p = Vec::new();
        enc.finish(1, &mut p);
        decodes_to(&p, &events);
    }

    /// Which heap blocks a block names by number: released within it with
    /// every number between in it, and nothing else; they decode to their
    /// number (the release too), and only under the flag's rules.
    #[test]
    fn transients_are_named_by_number_within_a_run() {
        let ev = |kind: u8, res: u8, seq: u64, id: u64| Ev {
            kind,
            res,
            func: if kind == KIND_FREE { 4 } else { 0 },
            ts: 7,
            seq,
            size: 24,
            id,
            node: 0,
        };
        let (a, b, c, d, e) = (0x1000, 0x2000, 0x3000, 5, 0x5000);
        let events = [
            ev(KIND_ALLOC, RES_MEMORY, 0, a),
            ev(KIND_ALLOC, RES_MEMORY, 1, b), // never released: an address
            ev(KIND_FREE, RES_MEMORY, 2, a),  // a: by number
            ev(KIND_ALLOC, RES_MEMORY, 3, c),
            ev(KIND_FREE, RES_MEMORY, 5, c), // 4 is another thread's: c keeps it
            ev(KIND_ALLOC, RES_FD, 6, d),
            ev(KIND_FREE, RES_FD, 7, d), // a descriptor keeps its number
            ev(KIND_ALLOC, RES_MEMORY, 8, e),
            ev(KIND_ALLOC, RES_MEMORY, 9, e), // allocated again: both keep it
            ev(KIND_FREE, RES_MEMORY, 10, e),
            ev(KIND_ALLOC, RES_MEMORY, 11, a), // a again, released in a run
            ev(KIND_VOID, 0, 12, 0),
            ev(KIND_FREE, RES_MEMORY, 13, a),
        ];
        let mut records = Vec::new();
        for e in &events {
            e.write_wire(&mut records, &[]);
        }
        let (mut flags, mut open) = (Vec::new(), HashMap::default());
        transients(&records, &mut flags, &mut open);
        assert_eq!(flags, [true, false, false, false, false, false, true]);
        let mut enc = BlockEncoder::new(0);
        let mut allocs = 0;
        for e in &events {
            let by_number = e.kind == KIND_ALLOC && flags[allocs];
            allocs += usize::from(e.kind == KIND_ALLOC);
            enc.push(e, &[], by_number);
        }
        let mut p = Vec::new();
        enc.finish(1, &mut p);
        let unaddressed = Rules {
            unaddressed: true,
            ..Rules::default()
        };
        let (mut wire, mut state) = (Vec::new(), BlockState::default());
        decode_block_with(&p, 0, 13, 1, unaddressed, &mut wire, &mut state).unwrap();
        let mut at = 0;
        let mut ids = Vec::new();
        while let Some(len) = record_len(&wire[at..]) {
            ids.push(Ev::from_wire(&wire[at..at + len]).id);
            at += len;
        }
        let n = |seq: u64| NOT_KEPT | seq;
        assert_eq!(ids, [n(0), b, n(0), c, c, d, d, e, e, e, n(11), 0, n(11)]);
        // Without the flag's rules, code 13 is damage.
        let mut wire = Vec::new();
        assert!(decode_block(&p, 0, 13, &mut wire).is_none());
    }

    #[test]
    fn events_round_trip() {
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        let mut next = || rng.next();
        let mut events = Vec::new();
        let mut seq = 1000u64;
        for i in 0..5000u64 {
            let r = next();
            seq = match r % 5 {
                0 => seq.wrapping_add(r >> 40),
                1 => seq.wrapping_sub(3),
                _ => seq + 1,
            };
            let kind = [KIND_ALLOC, KIND_FREE, KIND_VOID][(r >> 8) as usize % 3];
            let id = if i % 3 == 0 {
                0x5555_0000 + (r >> 50) % 4 * 16
            } else {
                next()
            };
            let mut e = Ev {
                kind,
                ts: if i % 4 == 0 { next() as u32 } else { 100 },
                seq,
                ..Ev::default()
            };
            if kind != KIND_VOID {
                e.res = (r >> 16) as u8 % 3;
                e.func = (r >> 24) as u8;
                e.id = id;
            }
            if kind == KIND_ALLOC {
                e.size = next() >> (r % 64);
                e.node = [0, 7, UNKNOWN_NODE, next() as u32][(r >> 30) as usize % 4];
            }
            events.push(e);
        }
        let mut enc = BlockEncoder::new(events[0].seq);
        for e in &events {
            enc.push(e, &[], false);
        }
        let mut p = Vec::new();
        enc.finish(9, &mut p);
        let wire = decodes_to(&p, &events);
        // Cut anywhere: never a panic, a prefix of the events.
        for cut in (0..p.len()).step_by(97) {
            let mut w = Vec::new();
            let _ = decode_block(&p[..cut], events[0].seq, events.len() as u32, &mut w);
            assert!(wire.starts_with(&w));
        }
    }
}
