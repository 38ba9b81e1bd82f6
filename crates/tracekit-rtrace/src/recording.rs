//! Decoding what the LD_PRELOAD recorder (`tracekit-rtrace-preload`)
//! records — fixed-layout binary events, a header and the memory maps,
//! which travel through a POSIX trace stream and are split into one file
//! of chunks per process image by [`capture`] — into the sp-rtrace text
//! protocol.
//!
//! Events arrive in per-thread chunks; each carries a number from one
//! process-wide counter, so a min-heap restores the global order with
//! memory bounded by how far the threads' chunks interleave.

use std::io::Write;
use std::path::Path;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use tracekit_core::{Error, Position, Result};

use crate::record::{format_frame, Header, HeaderField};

/// Bytes of event lines gathered before one write.
const LINE_BATCH: usize = 256 << 10;

/// The recorder's event layout.
pub use tracekit_rtrace_preload::wire;

use wire::*;

pub mod capture;

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
}

/// Where the recorder file's bytes come from: a file read with `pread`
/// (pages are copied from the page cache, nothing stays mapped, so the
/// recorder's resident memory does not grow with the recording), or
/// bytes in memory.
trait Source {
    fn size(&self) -> u64;
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

/// Recorder bytes in memory.
struct Bytes<'a>(&'a [u8]);

impl Source for Bytes<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let off = off as usize;
        let src = self
            .0
            .get(off..off + buf.len())
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
struct Chunk {
    tag: [u8; 4],
    offset: u64,
    len: usize,
}

impl Chunk {
    fn read(&self, src: &dyn Source) -> Result<Vec<u8>> {
        self.read_into(src, Vec::new())
    }

    /// The payload, in `buf` (reused: only its growth is cleared).
    fn read_into(&self, src: &dyn Source, mut buf: Vec<u8>) -> Result<Vec<u8>> {
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
fn chunks(src: &dyn Source) -> Result<(Vec<Chunk>, u64)> {
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

/// Decodes a recorder file into text.
pub fn decode_file<W: Write>(path: &Path, out: W) -> Result<(RecordingInfo, DecodeStats)> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(Some(path), e))?;
    let len = f.metadata().map_err(|e| Error::io(Some(path), e))?.len();
    if len == 0 {
        return Err(Error::malformed(Position::Offset(0), "empty recording").in_file(path));
    }
    decode_from(&f, out).map_err(|e| e.in_file(path))
}

/// Decodes recorder bytes into text.
pub fn decode<W: Write>(data: &[u8], out: W) -> Result<(RecordingInfo, DecodeStats)> {
    decode_from(&Bytes(data), out)
}

fn decode_from<W: Write>(src: &dyn Source, mut out: W) -> Result<(RecordingInfo, DecodeStats)> {
    let (chunks, truncated) = chunks(src)?;
    let io = |e: std::io::Error| Error::io(None, e);
    let head = chunks
        .iter()
        .find(|c| c.tag == TAG_HEADER)
        .ok_or_else(|| Error::malformed(Position::Offset(0), "no recorder header chunk"))?;
    let h = &head.read(src)?;
    if h.len() < HEADER_FIXED {
        return Err(Error::malformed(
            Position::Offset(head.offset),
            "recorder header chunk too short",
        ));
    }
    let info = RecordingInfo {
        pid: u32_at(h, 0),
        ppid: u32_at(h, 4),
        start_epoch_s: u64_at(h, 8),
        backtrace_depth: u32_at(h, 24),
        modules: u32_at(h, 28),
        executable: String::from_utf8_lossy(&h[HEADER_FIXED..]).into_owned(),
        end: match chunks.iter().rev().find(|c| c.tag == TAG_END) {
            Some(c) => capture::ImageEnd::decode(&c.read(src)?),
            None => None,
        },
    };
    let mut stats = DecodeStats {
        truncated_bytes: truncated,
        ..Default::default()
    };

    // Header line.
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
    header.write(&mut out).map_err(io)?;

    // Resource registry: the types of the enabled modules.
    let mut types: Vec<(u8, &'static str, &'static str)> = Vec::new();
    if info.modules & MODULE_MEMORY != 0 {
        types.push((RES_MEMORY, "memory", "memory allocation in bytes"));
    }
    if info.modules & MODULE_FILE != 0 {
        types.push((RES_FD, "fd", "file descriptor"));
        types.push((RES_FP, "fp", "file pointer"));
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

    // Executable mappings: those of the last maps snapshot, then those
    // only earlier snapshots had (objects unloaded before the end; the
    // shim sends the maps whenever its unwinder finds a new object), each
    // once, so every frame has its module.
    let mut seen: HashSet<(String, u64, u64)> = HashSet::default();
    for maps in chunks.iter().rev().filter(|c| c.tag == TAG_MAPS) {
        for line in String::from_utf8_lossy(&maps.read(src)?).lines() {
            let mut parts = line.split_whitespace();
            let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
                continue;
            };
            let path: Vec<&str> = parts.skip(3).collect();
            if !perms.contains('x') || path.is_empty() {
                continue;
            }
            let Some((a, b)) = range.split_once('-') else {
                continue;
            };
            let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
                continue;
            };
            let path = path.join(" ");
            if seen.insert((path.clone(), a, b)) {
                writeln!(out, ": {path} => 0x{a:x}-0x{b:x}").map_err(io)?;
            }
        }
    }

    // Events, in counter order.
    // Threads read the clock just after taking their number, so a later
    // number can carry an earlier millisecond: keep time monotonic in
    // number order (the text format orders calls by time, then index).
    let mut last_ts: Option<u32> = None;
    let mut next: u64 = 0;
    // Text collects in `text[..pos]` and goes out in large writes, which
    // pass the writer's buffer by (one copy fewer per byte); the slack
    // holds one more line and its frames.
    // (255 frames of at most 20 bytes: the longest backtrace a record can
    // define.)
    let mut text = vec![0u8; LINE_BATCH + CALL_MAX + 255 * 20 + 1].into_boxed_slice();
    let mut pos = 0usize;
    let mut fmt = CallFormatter::new([RES_MEMORY, RES_FD, RES_FP].map(type_name));
    let mut backtraces = Backtraces::default();
    let mut emit =
        |e: &[u8], stats: &mut DecodeStats, bt: &Backtraces, out: &mut W| -> Result<()> {
            let (kind, res, func) = (e[0], e[1], e[2]);
            if kind == KIND_VOID {
                return Ok(());
            }
            stats.events += 1;
            let mut ts = u32_at(e, 4);
            if let Some(prev) = last_ts {
                // A smaller value after midnight-of-uptime wrap is kept.
                if ts < prev && prev - ts < 60_000 {
                    ts = prev;
                }
            }
            last_ts = Some(ts);
            let seq = u64_at(e, 8);
            if kind == KIND_ALLOC {
                stats.allocs += 1;
                let size = u64_at(e, 16).min(i64::MAX as u64);
                pos += fmt.call(
                    &mut text[pos..],
                    seq.wrapping_add(1),
                    ts,
                    func,
                    res,
                    Some(size),
                    u64_at(e, 24),
                );
                let stack = u32_at(e, 32);
                if stack != 0 {
                    match bt.text(stack) {
                        Some(frames) => {
                            text[pos..pos + frames.len()].copy_from_slice(frames);
                            pos += frames.len();
                        }
                        None => stats.unknown_backtraces += 1,
                    }
                }
            } else {
                stats.frees += 1;
                pos += fmt.call(
                    &mut text[pos..],
                    seq.wrapping_add(1),
                    ts,
                    func,
                    res,
                    None,
                    u64_at(e, 16),
                );
            }
            text[pos] = b'\n';
            pos += 1;
            if pos >= LINE_BATCH {
                out.write_all(&text[..pos]).map_err(io)?;
                pos = 0;
            }
            Ok(())
        };
    // Each chunk holds one thread's records in increasing number order
    // (backtrace definitions just before their first use): merge the open
    // chunks (a handful: about one per thread) by number.
    struct Cursor {
        payload: Vec<u8>,
        off: usize,
    }
    impl Cursor {
        /// Number and length of the current event, if whole; backtrace
        /// definitions on the way are registered.
        fn peek(&mut self, bt: &mut Backtraces) -> Option<(u64, usize)> {
            loop {
                let p = &self.payload[self.off..];
                let len = record_len(p).filter(|&l| l <= p.len())?;
                if p[0] != KIND_STACK {
                    return Some((record_seq(p), len));
                }
                bt.define(&p[..len]);
                self.off += len;
            }
        }
    }
    // A thread's buffer is written when it fills or at exit, so a chunk's
    // place in the file says little about its numbers (the main thread's
    // first events often come last): visit chunks by their first number
    // and merge the few whose ranges overlap. A chunk is read when its
    // turn comes (only its first records before).
    let mut sorted: Vec<(u64, Chunk)> = Vec::new();
    for c in chunks.iter().filter(|c| c.tag == TAG_EVENTS) {
        let mut prefix = Cursor {
            payload: vec![0u8; c.len.min(4096)],
            off: 0,
        };
        src.read_at(c.offset + 8, &mut prefix.payload).map_err(io)?;
        let mut first = prefix.peek(&mut backtraces);
        if first.is_none() && c.len > prefix.payload.len() {
            prefix = Cursor {
                payload: c.read(src)?,
                off: 0,
            };
            first = prefix.peek(&mut backtraces);
        }
        match first {
            Some((seq, _)) => sorted.push((seq, *c)),
            None => stats.truncated_bytes += (c.len - prefix.off) as u64,
        }
    }
    sorted.sort_by_key(|(first, _)| *first);
    let mut pending = sorted.into_iter().peekable();
    let mut open: Vec<(u64, usize, Cursor)> = Vec::new();
    // Payload buffers of finished chunks, for the next ones.
    let mut spare: Vec<Vec<u8>> = Vec::new();
    loop {
        while let Some((_, c)) = pending.next_if(|(first, _)| *first <= next) {
            let buf = spare.pop().unwrap_or_default();
            let mut cursor = Cursor {
                payload: c.read_into(src, buf)?,
                off: 0,
            };
            if let Some((seq, len)) = cursor.peek(&mut backtraces) {
                open.push((seq, len, cursor));
            }
        }
        match open.iter().position(|(seq, _, _)| *seq <= next) {
            Some(i) => {
                let (seq, len, c) = &mut open[i];
                if *seq == next {
                    emit(
                        &c.payload[c.off..c.off + *len],
                        &mut stats,
                        &backtraces,
                        &mut out,
                    )?;
                    next = next.saturating_add(1);
                } else {
                    // A number seen before: the same event delivered twice.
                    stats.duplicates += 1;
                }
                c.off += *len;
                match c.peek(&mut backtraces) {
                    Some((s, l)) => (*seq, *len) = (s, l),
                    None => {
                        let (_, _, c) = open.swap_remove(i);
                        stats.truncated_bytes += (c.payload.len() - c.off) as u64;
                        spare.push(c.payload);
                    }
                }
            }
            None => {
                // A number that never came: skip to the smallest one left.
                let in_open = open.iter().map(|(seq, _, _)| *seq).min();
                let in_pending = pending.peek().map(|(first, _)| *first);
                let Some(skip_to) = in_open.into_iter().chain(in_pending).min() else {
                    break;
                };
                stats.lost += skip_to.saturating_sub(next);
                next = skip_to;
            }
        }
    }
    out.write_all(&text[..pos]).map_err(io)?;
    if let Some(end) = info.end {
        writeln!(out, "## tracekit: {}", describe_end(end)).map_err(io)?;
    }
    if stats.lost > 0 {
        // Never silently: the trace says it is incomplete.
        writeln!(
            out,
            "## tracekit: {} event(s) of this process were lost while recording",
            stats.lost
        )
        .map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok((info, stats))
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

/// The backtraces of an image, by number, as the text of their frame
/// lines: each is formatted once however many calls share it.
#[derive(Default)]
struct Backtraces {
    text: HashMap<u32, Box<[u8]>>,
}

impl Backtraces {
    /// Registers a `KIND_STACK` record (whole, as `record_len` says).
    fn define(&mut self, rec: &[u8]) {
        let n = rec[1] as usize;
        let id = u32_at(rec, 4);
        let mut text = Vec::with_capacity(n * 16);
        for i in 0..n {
            format_frame(&mut text, u64_at(rec, STACK_HEAD + 8 * i));
        }
        self.text.insert(id, text.into_boxed_slice());
    }

    fn text(&self, id: u32) -> Option<&[u8]> {
        self.text.get(&id).map(|t| &t[..])
    }
}

/// Writes call lines exactly as `record::format_call` does for the
/// recorder's calls (no context, a timestamp, a size or not), faster:
/// the `[HH:MM:SS.mmm] ` of the last millisecond, the `name<type>(` of
/// every function and the decimal digits of the last index are kept (the
/// next index is usually one more: its digits are incremented in place),
/// and a line is built in one buffer and appended at once.
struct CallFormatter {
    last_ms: Option<u32>,
    stamp: [u8; 15],
    /// `name<type>(` (and its length) by function * 3 + resource; the
    /// last function: unknown names.
    heads: Vec<([u8; HEAD_MAX], usize)>,
    /// `name(` by function.
    untagged: Vec<([u8; HEAD_MAX], usize)>,
    /// The decimal digits of `index` in `index_digits[index_at..20]`
    /// (the rest is slack for fixed-size copies).
    index: u64,
    index_digits: [u8; 40],
    index_at: usize,
}

const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `v` in decimal ending at `buf[20]`; returns where it starts.
fn dec_into(buf: &mut [u8], mut v: u64) -> usize {
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

/// `v` in lower-case hex (no leading zeros) at the start of `out` (at
/// least 16 bytes); returns the length.
#[inline]
fn hex_into(out: &mut [u8], v: u64) -> usize {
    let len = if v == 0 {
        1
    } else {
        (64 - v.leading_zeros() as usize).div_ceil(4)
    };
    let mut digits = [0u8; 32];
    digits[..8].copy_from_slice(&hex8((v >> 32) as u32).to_be_bytes());
    digits[8..16].copy_from_slice(&hex8(v as u32).to_be_bytes());
    out[..16].copy_from_slice(&digits[16 - len..32 - len]);
    len
}

impl CallFormatter {
    fn new(tags: [Option<&'static str>; 3]) -> CallFormatter {
        let fixed = |text: &[u8]| {
            let mut h = [0u8; HEAD_MAX];
            let n = text.len().min(HEAD_MAX);
            h[..n].copy_from_slice(&text[..n]);
            (h, n)
        };
        let names = || FUNCTIONS.iter().copied().chain(["unknown"]);
        let mut heads = Vec::with_capacity(FUNCTIONS.len() * 3 + 3);
        for name in names() {
            for tag in tags {
                let mut h = name.as_bytes().to_vec();
                if let Some(t) = tag {
                    h.push(b'<');
                    h.extend_from_slice(t.as_bytes());
                    h.push(b'>');
                }
                h.push(b'(');
                heads.push(fixed(&h));
            }
        }
        let untagged = names()
            .map(|name| fixed(&[name.as_bytes(), b"("].concat()))
            .collect();
        CallFormatter {
            last_ms: None,
            stamp: [0; 15],
            heads,
            untagged,
            index: 0,
            index_digits: [b'0'; 40],
            index_at: 19,
        }
    }

    /// Makes `index_digits[index_at..20]` the decimal digits of `index`.
    #[inline]
    fn index_digits(&mut self, index: u64) {
        if index == self.index.wrapping_add(1) && self.index_at > 0 {
            // One more: increment the digits in place.
            self.index = index;
            let mut i = 19;
            loop {
                if self.index_digits[i] != b'9' {
                    self.index_digits[i] += 1;
                    break;
                }
                self.index_digits[i] = b'0';
                if i == self.index_at {
                    self.index_at -= 1;
                    self.index_digits[self.index_at] = b'1';
                    break;
                }
                i -= 1;
            }
        } else {
            self.index = index;
            let mut d = [0u8; 20];
            self.index_at = dec_into(&mut d, index);
            self.index_digits[..20].copy_from_slice(&d);
        }
    }

    /// One call line (with its newline) at the start of `w` (at least
    /// [`CALL_MAX`] bytes); returns its length. `size` for an allocation,
    /// none for a release. Pieces are copied as fixed-size blocks (the
    /// bytes past each piece are overwritten by the next).
    #[allow(clippy::too_many_arguments)]
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
        let b: &mut [u8; CALL_MAX] = match w.get_mut(..CALL_MAX).map(|w| w.try_into()) {
            Some(Ok(b)) => b,
            _ => return 0,
        };
        self.index_digits(index);
        let at = self.index_at;
        let mut n = 20 - at;
        b[..20].copy_from_slice(&self.index_digits[at..at + 20]);
        b[n..n + 2].copy_from_slice(b". ");
        n += 2;
        if self.last_ms != Some(ms) {
            self.last_ms = Some(ms);
            let two = |b: &mut [u8], v: u32| {
                let d = (v % 100) as usize * 2;
                b.copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
            };
            let s = &mut self.stamp;
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
        b[n..n + 15].copy_from_slice(&self.stamp);
        n += 15;
        let f = (func as usize).min(FUNCTIONS.len());
        let (head, len) = match res {
            0..=2 => &self.heads[f * 3 + res as usize],
            // An unknown resource type has no tag.
            _ => &self.untagged[f],
        };
        b[n..n + HEAD_MAX].copy_from_slice(head);
        n += len;
        match size {
            Some(size) => {
                let mut num = [0u8; 40];
                let at = dec_into(&mut num, size);
                b[n..n + 20].copy_from_slice(&num[at..at + 20]);
                n += 20 - at;
                b[n..n + 6].copy_from_slice(b") = 0x");
                n += 6;
                n += hex_into(&mut b[n..n + 16], id);
            }
            None => {
                b[n..n + 2].copy_from_slice(b"0x");
                n += 2;
                n += hex_into(&mut b[n..n + 16], id);
                b[n] = b')';
                n += 1;
            }
        }
        b[n] = b'\n';
        n + 1
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
    use crate::record::{format_call, CallKind};

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
        let mut fast = CallFormatter::new([Some("memory"), Some("fd"), None]);
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
            let ms = (next() % 86_400_000) as u32;
            let func = (next() % FUNCTIONS.len() as u64) as u8;
            let res = (next() % 4) as u8;
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
            let tag = [Some("memory"), Some("fd"), None, None][res as usize];
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
