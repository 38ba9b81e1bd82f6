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

use rustc_hash::FxHashSet as HashSet;
use tracekit_core::{Error, Position, Result};

use crate::record::{format_call, format_frame, CallKind, Header, HeaderField};

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
}

struct Chunk<'a> {
    tag: [u8; 4],
    payload: &'a [u8],
    offset: usize,
}

fn chunks(data: &[u8]) -> (Vec<Chunk<'_>>, u64) {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 8 <= data.len() {
        let tag = [data[off], data[off + 1], data[off + 2], data[off + 3]];
        let len = u32::from_le_bytes([data[off + 4], data[off + 5], data[off + 6], data[off + 7]])
            as usize;
        if off + 8 + len > data.len() {
            break;
        }
        out.push(Chunk {
            tag,
            payload: &data[off + 8..off + 8 + len],
            offset: off,
        });
        off += 8 + len;
    }
    (out, (data.len() - off) as u64)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

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
    // SAFETY: read-only map of a file the recorder has finished writing.
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(Some(path), e))?;
    decode(&map, out).map_err(|e| e.in_file(path))
}

/// Decodes recorder bytes into text.
pub fn decode<W: Write>(data: &[u8], mut out: W) -> Result<(RecordingInfo, DecodeStats)> {
    let (chunks, truncated) = chunks(data);
    let io = |e: std::io::Error| Error::io(None, e);
    let head = chunks
        .iter()
        .find(|c| c.tag == TAG_HEADER)
        .ok_or_else(|| Error::malformed(Position::Offset(0), "no recorder header chunk"))?;
    let h = head.payload;
    if h.len() < HEADER_FIXED {
        return Err(Error::malformed(
            Position::Offset(head.offset as u64),
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
        for line in String::from_utf8_lossy(maps.payload).lines() {
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
    let mut line: Vec<u8> = Vec::with_capacity(LINE_BATCH + 4096);
    let mut emit = |data: &[u8], at: usize, stats: &mut DecodeStats, out: &mut W| -> Result<()> {
        let e = &data[at..];
        let (kind, res, func, n) = (e[0], e[1], e[2], e[3] as usize);
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
        let size = u64_at(e, 16);
        let id = u64_at(e, 24);
        let name = FUNCTIONS.get(func as usize).copied().unwrap_or("unknown");
        let kind = if kind == KIND_ALLOC {
            stats.allocs += 1;
            CallKind::Alloc {
                size: size.min(i64::MAX as u64) as i64,
            }
        } else {
            stats.frees += 1;
            CallKind::Free
        };
        format_call(
            &mut line,
            seq as i64 + 1,
            0,
            Some(ts),
            name,
            type_name(res),
            kind,
            id,
        );
        for i in 0..n {
            format_frame(&mut line, u64_at(e, EVENT_FIXED + 8 * i));
        }
        line.push(b'\n');
        // Lines collect in `line` and go out in large writes, which pass
        // the writer's buffer by (one copy fewer per byte of text).
        if line.len() >= LINE_BATCH {
            out.write_all(&line).map_err(io)?;
            line.clear();
        }
        Ok(())
    };
    // Each chunk holds one thread's events in increasing number order:
    // merge the open chunks (a handful: about one per thread) by number.
    struct Cursor<'d> {
        payload: &'d [u8],
        base: usize,
        off: usize,
    }
    impl Cursor<'_> {
        /// Number and absolute offset of the current event, if whole.
        fn peek(&self) -> Option<(u64, usize, usize)> {
            let p = self.payload;
            if self.off + EVENT_FIXED > p.len() {
                return None;
            }
            let len = EVENT_FIXED + 8 * p[self.off + 3] as usize;
            if self.off + len > p.len() {
                return None;
            }
            Some((u64_at(p, self.off + 8), self.base + self.off, len))
        }
    }
    // A thread's buffer is written when it fills or at exit, so a chunk's
    // place in the file says little about its numbers (the main thread's
    // first events often come last): visit chunks by their first number
    // and merge the few whose ranges overlap.
    let mut sorted: Vec<(u64, Cursor<'_>)> = Vec::new();
    for c in chunks.iter().filter(|c| c.tag == TAG_EVENTS) {
        let cursor = Cursor {
            payload: c.payload,
            base: c.offset + 8,
            off: 0,
        };
        match cursor.peek() {
            Some((first, _, _)) => sorted.push((first, cursor)),
            None => stats.truncated_bytes += c.payload.len() as u64,
        }
    }
    sorted.sort_by_key(|(first, _)| *first);
    let mut pending = sorted.into_iter().peekable();
    let mut open: Vec<Cursor<'_>> = Vec::new();
    loop {
        while let Some((_, c)) = pending.next_if(|(first, _)| *first <= next) {
            open.push(c);
        }
        let hit = open.iter().enumerate().find_map(|(i, c)| {
            c.peek()
                .filter(|(seq, _, _)| *seq == next)
                .map(|(_, at, len)| (i, at, len))
        });
        match hit {
            Some((i, at, len)) => {
                emit(data, at, &mut stats, &mut out)?;
                next += 1;
                open[i].off += len;
                if open[i].peek().is_none() {
                    let c = open.swap_remove(i);
                    stats.truncated_bytes += (c.payload.len() - c.off) as u64;
                }
            }
            None => {
                // A number that never came: skip to the smallest one left.
                let in_open = open.iter().filter_map(|c| c.peek().map(|p| p.0)).min();
                let in_pending = pending.peek().map(|(first, _)| *first);
                let Some(skip_to) = in_open.into_iter().chain(in_pending).min() else {
                    break;
                };
                stats.lost += skip_to.saturating_sub(next);
                next = skip_to;
            }
        }
    }
    out.write_all(&line).map_err(io)?;
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
