//! The trace log file: writer (used by flush and shutdown) and a
//! memory-mapped, zero-copy reader. The format is documented in
//! `docs/posix-trace-log.md`; all integers are little-endian.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use tracekit_core::{Error, Position};

use crate::attr::TraceAttr;
use crate::consts::*;

pub const LOG_MAGIC: [u8; 8] = *b"TKPXLOG\0";
pub const BLOCK_MAGIC: [u8; 8] = *b"TKPXBLK\0";
pub const TYPES_MAGIC: [u8; 8] = *b"TKPXTYPE";
pub const VERSION_MAJOR: u16 = 1;
pub const VERSION_MINOR: u16 = 2;
pub const HEADER_SIZE: usize = 4096;
pub const BLOCK_HEADER: usize = 32;
pub const RECORD_HEADER: usize = 40;
/// Header flag: written by shutdown, the log is complete.
pub const FLAG_COMPLETE: u32 = 1;
/// Most stream read positions a header holds (16 lanes and the system lane).
pub const MAX_STREAM_POSITIONS: usize = 17;
/// Where the header keeps them (version 1.1).
const POSITIONS_AT: usize = 256;
/// Where the header keeps the size of the open block at the last sync.
const OPEN_BLOCK_AT: usize = POSITIONS_AT + 8 * MAX_STREAM_POSITIONS;
/// Where the header keeps the events written after shutdown (version 1.2).
const AFTER_SHUTDOWN_AT: usize = OPEN_BLOCK_AT + 8;

/// The `posix_trace_status_info` members.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub stream_status: i32,
    pub stream_full_status: i32,
    pub stream_overrun_status: i32,
    pub stream_flush_status: i32,
    pub stream_flush_error: i32,
    pub log_overrun_status: i32,
    pub log_full_status: i32,
}

/// One event as stored in a log (or read back from a stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventInfo {
    pub event_id: u32,
    pub pid: i32,
    pub truncation: i32,
    pub thread: u64,
    pub prog_address: u64,
    /// CLOCK_REALTIME nanoseconds since the epoch.
    pub timestamp_ns: i64,
}

/// Everything in the fixed header besides the attributes.
#[derive(Clone, Debug, Default)]
pub struct LogMeta {
    pub flags: u32,
    pub block_size: u32,
    /// Block slots for LOOP/UNTIL_FULL logs; 0 for APPEND (unbounded).
    pub block_slots: u64,
    /// Blocks ever started = the next block sequence number.
    pub blocks_written: u64,
    pub types_offset: u64,
    pub types_len: u64,
    pub events_logged: u64,
    pub events_lost_stream: u64,
    pub events_lost_log: u64,
    pub traced_pid: i32,
    pub status: Status,
    /// The stream's read position in each of its rings when the header was
    /// last written (empty if unknown): where a process that takes the log
    /// over reads on. Version 1.1; readers of the events ignore it.
    pub stream_positions: Vec<u64>,
    /// Time of the last event copied from the stream at that point.
    pub last_timestamp_ns: i64,
    /// Bytes of records and records in the open (last) block when the
    /// header was written: a writer that takes the log over continues
    /// that block from there (records written into it after the header
    /// are read again from the stream).
    pub open_block_used: u32,
    pub open_block_events: u32,
    /// Events processes wrote into the stream after it was shut down
    /// (lost: `tracekit posix record --inherit --stop-at-exit` stops at
    /// the program's exit while its descendants go on). Written after the
    /// log is complete, by the process that waits for those descendants
    /// ([`set_events_after_shutdown`]). Version 1.2.
    pub events_after_shutdown: u64,
}

/// Chooses the block size for a log: big blocks for big logs, at least
/// two maximal records per block.
pub fn block_size_for(log_policy: i32, log_size: u64, slot_data: usize) -> u32 {
    let need = (BLOCK_HEADER + 2 * (RECORD_HEADER + slot_data)).next_power_of_two();
    let want = if log_policy == POSIX_TRACE_APPEND {
        65536
    } else {
        ((log_size / 16) as usize)
            .clamp(4096, 65536)
            .next_power_of_two()
    };
    want.max(need) as u32
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn encode_header(attr: &TraceAttr, m: &LogMeta) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_SIZE];
    h[0..8].copy_from_slice(&LOG_MAGIC);
    put_u16(&mut h, 8, VERSION_MAJOR);
    put_u16(&mut h, 10, VERSION_MINOR);
    put_u32(&mut h, 12, HEADER_SIZE as u32);
    put_u32(&mut h, 16, m.block_size);
    put_u32(&mut h, 20, RECORD_HEADER as u32);
    put_u32(&mut h, 24, m.flags);
    put_u32(&mut h, 28, attr.stream_policy as u32);
    put_u32(&mut h, 32, attr.log_policy as u32);
    put_u32(&mut h, 36, attr.inheritance as u32);
    put_u64(&mut h, 40, attr.max_data_size);
    put_u64(&mut h, 48, attr.stream_size);
    put_u64(&mut h, 56, attr.log_size);
    put_u64(&mut h, 64, attr.create_time_sec as u64);
    put_u64(&mut h, 72, attr.create_time_nsec as u64);
    put_u64(&mut h, 80, attr.clockres_nsec as u64);
    h[88..120].copy_from_slice(&attr.name);
    h[120..152].copy_from_slice(&attr.genversion);
    let s = &m.status;
    for (i, v) in [
        s.stream_status,
        s.stream_full_status,
        s.stream_overrun_status,
        s.stream_flush_status,
        s.stream_flush_error,
        s.log_overrun_status,
        s.log_full_status,
    ]
    .into_iter()
    .enumerate()
    {
        put_u32(&mut h, 152 + 4 * i, v as u32);
    }
    put_u64(&mut h, 184, m.block_slots);
    put_u64(&mut h, 192, m.blocks_written);
    put_u64(&mut h, 200, m.types_offset);
    put_u64(&mut h, 208, m.types_len);
    put_u64(&mut h, 216, m.events_logged);
    put_u64(&mut h, 224, m.events_lost_stream);
    put_u64(&mut h, 232, m.events_lost_log);
    put_u32(&mut h, 240, m.traced_pid as u32);
    let n = m.stream_positions.len().min(MAX_STREAM_POSITIONS);
    put_u32(&mut h, 244, n as u32);
    put_u64(&mut h, 248, m.last_timestamp_ns as u64);
    for (i, p) in m.stream_positions[..n].iter().enumerate() {
        put_u64(&mut h, POSITIONS_AT + 8 * i, *p);
    }
    put_u32(&mut h, OPEN_BLOCK_AT, m.open_block_used);
    put_u32(&mut h, OPEN_BLOCK_AT + 4, m.open_block_events);
    put_u64(&mut h, AFTER_SHUTDOWN_AT, m.events_after_shutdown);
    h
}

/// Records in a complete log's header how many events were written into
/// its stream after the shutdown (see [`LogMeta::events_after_shutdown`]).
pub fn set_events_after_shutdown(log: &File, n: u64) -> io::Result<()> {
    log.write_all_at(&n.to_le_bytes(), AFTER_SHUTDOWN_AT as u64)?;
    log.sync_data().or(Ok(()))
}

fn bad(at: u64, msg: impl Into<String>) -> Error {
    Error::malformed(Position::Offset(at), msg)
}

/// Parses and validates the fixed header.
pub fn decode_header(b: &[u8]) -> Result<(TraceAttr, LogMeta), Error> {
    if b.len() < 8 || b[0..8] != LOG_MAGIC {
        return Err(bad(0, "not a tracekit POSIX trace log (bad magic)"));
    }
    if b.len() < HEADER_SIZE {
        return Err(bad(b.len() as u64, "truncated header"));
    }
    let major = get_u16(b, 8);
    if major != VERSION_MAJOR {
        return Err(bad(8, format!("unsupported log version {major}")));
    }
    if get_u32(b, 12) as usize != HEADER_SIZE || get_u32(b, 20) as usize != RECORD_HEADER {
        return Err(bad(12, "unexpected header or record size"));
    }
    let block_size = get_u32(b, 16);
    if !(4096..=1 << 24).contains(&block_size) || !block_size.is_power_of_two() {
        return Err(bad(16, format!("bad block size {block_size}")));
    }
    let mut attr = TraceAttr::default();
    attr.stream_policy = get_u32(b, 28) as i32;
    attr.stream_policy_set = 1;
    attr.log_policy = get_u32(b, 32) as i32;
    attr.inheritance = get_u32(b, 36) as i32;
    attr.max_data_size = get_u64(b, 40);
    attr.stream_size = get_u64(b, 48);
    attr.log_size = get_u64(b, 56);
    attr.create_time_sec = get_u64(b, 64) as i64;
    attr.create_time_nsec = get_u64(b, 72) as i64;
    attr.clockres_nsec = get_u64(b, 80) as i64;
    attr.name.copy_from_slice(&b[88..120]);
    attr.genversion.copy_from_slice(&b[120..152]);
    attr.name[TRACE_NAME_MAX] = 0;
    attr.genversion[TRACE_NAME_MAX] = 0;
    let st = |i: usize| get_u32(b, 152 + 4 * i) as i32;
    let m = LogMeta {
        flags: get_u32(b, 24),
        block_size,
        block_slots: get_u64(b, 184),
        blocks_written: get_u64(b, 192),
        types_offset: get_u64(b, 200),
        types_len: get_u64(b, 208),
        events_logged: get_u64(b, 216),
        events_lost_stream: get_u64(b, 224),
        events_lost_log: get_u64(b, 232),
        traced_pid: get_u32(b, 240) as i32,
        stream_positions: (0..(get_u32(b, 244) as usize).min(MAX_STREAM_POSITIONS))
            .map(|i| get_u64(b, POSITIONS_AT + 8 * i))
            .collect(),
        last_timestamp_ns: get_u64(b, 248) as i64,
        open_block_used: get_u32(b, OPEN_BLOCK_AT),
        open_block_events: get_u32(b, OPEN_BLOCK_AT + 4),
        events_after_shutdown: get_u64(b, AFTER_SHUTDOWN_AT),
        status: Status {
            stream_status: st(0),
            stream_full_status: st(1),
            stream_overrun_status: st(2),
            stream_flush_status: st(3),
            stream_flush_error: st(4),
            log_overrun_status: st(5),
            log_full_status: st(6),
        },
    };
    Ok((attr, m))
}

fn encode_types(types: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + types.len() * 48);
    out.extend_from_slice(&TYPES_MAGIC);
    out.extend_from_slice(&(types.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for (id, name) in types {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    out
}

/// Appends records to a log file according to its log-full-policy.
pub struct LogWriter {
    file: File,
    attr: TraceAttr,
    pub meta: LogMeta,
    /// The open block (header included).
    block: Vec<u8>,
    block_seq: u64,
    block_open: bool,
    /// UNTIL_FULL: the log is full, later records are discarded.
    stopped: bool,
    /// `events_lost_log` at the last `take_log_overrun`.
    lost_seen: u64,
}

impl LogWriter {
    /// Starts a log on `file` (a regular file open for writing).
    pub fn new(
        file: File,
        attr: &TraceAttr,
        slot_data: usize,
        traced_pid: i32,
    ) -> io::Result<LogWriter> {
        let block_size = block_size_for(attr.log_policy, attr.log_size, slot_data);
        let block_slots = if attr.log_policy == POSIX_TRACE_APPEND {
            0
        } else {
            (attr.log_size / block_size as u64).max(2)
        };
        let mut w = LogWriter {
            file,
            attr: *attr,
            meta: LogMeta {
                block_size,
                block_slots,
                traced_pid,
                ..LogMeta::default()
            },
            block: Vec::with_capacity(block_size as usize),
            block_seq: 0,
            block_open: false,
            stopped: false,
            lost_seen: 0,
        };
        w.start_over()?;
        Ok(w)
    }

    /// An empty log with this writer's geometry: no blocks, no events,
    /// no losses, no stream position; the file is the header alone.
    fn start_over(&mut self) -> io::Result<()> {
        self.meta = LogMeta {
            block_size: self.meta.block_size,
            block_slots: self.meta.block_slots,
            traced_pid: self.meta.traced_pid,
            ..LogMeta::default()
        };
        self.block.clear();
        self.block_seq = 0;
        self.block_open = false;
        self.stopped = false;
        self.lost_seen = 0;
        self.file.set_len(0)?;
        self.write_header()
    }

    /// Takes over a log that another process (a controller that exec'd or
    /// died) was writing: its header as of that process's last flush, and
    /// the block that flush left open, which later records extend.
    pub fn resume(file: File) -> io::Result<LogWriter> {
        let mut head = vec![0u8; HEADER_SIZE];
        file.read_exact_at(&mut head, 0)?;
        let (attr, meta) = decode_header(&head)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let stopped = attr.log_policy == POSIX_TRACE_UNTIL_FULL
            && meta.status.log_full_status == POSIX_TRACE_FULL;
        let lost_seen = meta.events_lost_log;
        let mut w = LogWriter {
            file,
            attr,
            block: Vec::with_capacity(meta.block_size as usize),
            meta,
            block_seq: 0,
            block_open: false,
            stopped,
            lost_seen,
        };
        if let Some(seq) = w.meta.blocks_written.checked_sub(1) {
            let mut b = vec![0u8; w.meta.block_size as usize];
            let off = w.block_offset(seq);
            // A block the file does not hold whole is not reopened: the
            // next record starts a fresh block after it.
            if w.file.read_exact_at(&mut b, off).is_ok()
                && b[0..8] == BLOCK_MAGIC
                && get_u64(&b, 8) == seq
            {
                let mut used = get_u32(&b, 16) as usize;
                if !w.meta.stream_positions.is_empty() {
                    // Only what the block held at the header's sync: the
                    // records after it are copied again from the stream.
                    let open = w.meta.open_block_used as usize;
                    if open <= used {
                        used = open;
                        put_u32(&mut b, 16, open as u32);
                        put_u32(&mut b, 20, w.meta.open_block_events);
                    }
                }
                if BLOCK_HEADER + used <= b.len() {
                    b.truncate(BLOCK_HEADER + used);
                    w.block = b;
                    w.block_seq = seq;
                    w.block_open = true;
                }
            }
        }
        Ok(w)
    }

    fn block_offset(&self, seq: u64) -> u64 {
        let slot = if self.meta.block_slots == 0 {
            seq
        } else {
            seq % self.meta.block_slots
        };
        HEADER_SIZE as u64 + slot * self.meta.block_size as u64
    }

    fn open_block(&mut self) {
        let seq = self.meta.blocks_written;
        if self.meta.block_slots != 0 && seq >= self.meta.block_slots {
            // LOOP: the oldest block is overwritten.
            let off = self.block_offset(seq);
            let mut hdr = [0u8; BLOCK_HEADER];
            if self.file.read_exact_at(&mut hdr, off).is_ok() && hdr[0..8] == BLOCK_MAGIC {
                self.meta.events_lost_log += get_u32(&hdr, 20) as u64;
            }
            self.meta.status.log_overrun_status = POSIX_TRACE_OVERRUN;
            self.meta.status.log_full_status = POSIX_TRACE_FULL;
        }
        self.block.clear();
        self.block.resize(BLOCK_HEADER, 0);
        self.block[0..8].copy_from_slice(&BLOCK_MAGIC);
        put_u64(&mut self.block, 8, seq);
        self.block_seq = seq;
        self.block_open = true;
        self.meta.blocks_written = seq + 1;
    }

    fn room(&self) -> usize {
        self.meta.block_size as usize - self.block.len()
    }

    fn push_record(&mut self, e: &EventInfo, data: &[u8]) {
        let start = self.block.len();
        self.block.resize(start + RECORD_HEADER, 0);
        let b = &mut self.block[start..];
        put_u32(b, 0, e.event_id);
        put_u32(b, 4, e.pid as u32);
        put_u32(b, 8, data.len() as u32);
        put_u32(b, 12, e.truncation as u32);
        put_u64(b, 16, e.thread);
        put_u64(b, 24, e.prog_address);
        put_u64(b, 32, e.timestamp_ns as u64);
        self.block.extend_from_slice(data);
        self.block.resize(self.block.len().next_multiple_of(8), 0);
        let used = (self.block.len() - BLOCK_HEADER) as u32;
        put_u32(&mut self.block, 16, used);
        let count = get_u32(&self.block, 20) + 1;
        put_u32(&mut self.block, 20, count);
        self.meta.events_logged += 1;
    }

    /// Appends one event, applying the log-full-policy.
    pub fn append(&mut self, e: &EventInfo, data: &[u8]) -> io::Result<()> {
        if self.stopped {
            self.meta.events_lost_log += 1;
            self.meta.status.log_overrun_status = POSIX_TRACE_OVERRUN;
            return Ok(());
        }
        let need = RECORD_HEADER + data.len().next_multiple_of(8);
        if !self.block_open {
            self.open_block();
        }
        let last = self.attr.log_policy == POSIX_TRACE_UNTIL_FULL
            && self.block_seq + 1 >= self.meta.block_slots;
        // The last block of an UNTIL_FULL log keeps room for the final STOP.
        let reserve = if last { RECORD_HEADER + 8 } else { 0 };
        if self.room() < need + reserve {
            if last {
                let stop = EventInfo {
                    event_id: POSIX_TRACE_STOP,
                    pid: 0,
                    truncation: POSIX_TRACE_NOT_TRUNCATED,
                    thread: 0,
                    prog_address: 0,
                    timestamp_ns: e.timestamp_ns,
                };
                self.push_record(&stop, &1i32.to_le_bytes());
                self.stopped = true;
                self.meta.status.log_full_status = POSIX_TRACE_FULL;
                self.meta.status.log_overrun_status = POSIX_TRACE_OVERRUN;
                self.meta.events_lost_log += 1;
                return Ok(());
            }
            self.write_block()?;
            self.open_block();
        }
        self.push_record(e, data);
        Ok(())
    }

    fn write_block(&mut self) -> io::Result<()> {
        if self.block_open {
            let off = self.block_offset(self.block_seq);
            self.file.write_all_at(&self.block, off)?;
        }
        Ok(())
    }

    /// Writes the open block, the event-type table and the header, so the
    /// file is a readable log after every flush.
    pub fn sync(
        &mut self,
        types: &[(u32, Vec<u8>)],
        status: Status,
        lost_stream: u64,
    ) -> io::Result<()> {
        self.write_block()?;
        let t = encode_types(types);
        let off = if self.meta.block_slots == 0 {
            HEADER_SIZE as u64 + self.meta.blocks_written * self.meta.block_size as u64
        } else {
            HEADER_SIZE as u64 + self.meta.block_slots * self.meta.block_size as u64
        };
        self.file.write_all_at(&t, off)?;
        self.meta.types_offset = off;
        self.meta.types_len = t.len() as u64;
        let keep_log = (
            self.meta.status.log_overrun_status,
            self.meta.status.log_full_status,
        );
        self.meta.status = status;
        self.meta.status.log_overrun_status = keep_log.0;
        self.meta.status.log_full_status = keep_log.1;
        self.meta.events_lost_stream = lost_stream;
        (self.meta.open_block_used, self.meta.open_block_events) = if self.block_open {
            (
                (self.block.len() - BLOCK_HEADER) as u32,
                get_u32(&self.block, 20),
            )
        } else {
            (0, 0)
        };
        self.write_header()
    }

    fn write_header(&mut self) -> io::Result<()> {
        let h = encode_header(&self.attr, &self.meta);
        self.file.write_all_at(&h, 0)
    }

    /// Marks the log complete and trims anything past the type table.
    pub fn finish(
        &mut self,
        types: &[(u32, Vec<u8>)],
        status: Status,
        lost_stream: u64,
    ) -> io::Result<()> {
        self.meta.flags |= FLAG_COMPLETE;
        self.sync(types, status, lost_stream)?;
        self.file
            .set_len(self.meta.types_offset + self.meta.types_len)?;
        self.file.sync_data().or(Ok(()))
    }

    /// `posix_trace_clear` on a stream with log: start the log over.
    pub fn clear(&mut self) -> io::Result<()> {
        self.start_over()
    }

    /// Did the log lose events since the last call? (The status kept in
    /// the file stays set: it is the log's final status.)
    pub fn take_log_overrun(&mut self) -> i32 {
        let lost = self.meta.events_lost_log;
        let new = lost > self.lost_seen;
        self.lost_seen = lost;
        if new {
            POSIX_TRACE_OVERRUN
        } else {
            POSIX_TRACE_NO_OVERRUN
        }
    }

    /// Records where the stream's consumer stands (written with the next
    /// header): see [`LogMeta::stream_positions`].
    pub fn set_stream_position(&mut self, positions: &[u64], last_timestamp_ns: i64) {
        self.meta.stream_positions.clear();
        self.meta.stream_positions.extend_from_slice(positions);
        self.meta.last_timestamp_ns = last_timestamp_ns;
    }

    /// A log completed for an exec that failed: not complete any more,
    /// written on by the same process.
    pub fn reopen(&mut self) -> io::Result<()> {
        self.meta.flags &= !FLAG_COMPLETE;
        self.write_header()
    }

    /// The log's descriptor, for a keeper process to take the log over.
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    pub fn log_full(&self) -> i32 {
        self.meta.status.log_full_status
    }
}

/// A record of a log, borrowed from the mapping.
#[derive(Clone, Copy, Debug)]
pub struct LogEvent<'a> {
    pub info: EventInfo,
    pub data: &'a [u8],
    /// Byte offset of the record in the file.
    pub offset: u64,
}

/// A pre-recorded log, memory-mapped. Iterate with [`LogReader::next_event`].
enum Backing {
    Map(memmap2::Mmap),
    Bytes(Vec<u8>),
}

impl std::ops::Deref for Backing {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Bytes(b) => b,
        }
    }
}

pub struct LogReader {
    map: Backing,
    pub attr: TraceAttr,
    pub meta: LogMeta,
    pub types: Vec<(u32, Vec<u8>)>,
    /// (sequence, offset, used) of every block, oldest first.
    blocks: Vec<(u64, usize, usize)>,
    cur_block: usize,
    cur_off: usize,
    /// Problems found while opening (missing type table, bad blocks).
    pub warnings: tracekit_core::Warnings,
}

impl LogReader {
    pub fn open_path(path: &Path) -> Result<LogReader, Error> {
        let f = File::open(path).map_err(|e| Error::io(Some(path), e))?;
        LogReader::open_file(&f).map_err(|e| e.in_file(path))
    }

    pub fn open_file(f: &File) -> Result<LogReader, Error> {
        // SAFETY: read-only mapping; the standard makes it undefined to
        // modify a log while it is open for analysis.
        let map = unsafe { memmap2::Mmap::map(f) }.map_err(|e| Error::io(None, e))?;
        Self::new(Backing::Map(map))
    }

    /// A log held in memory (e.g. read from standard input).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<LogReader, Error> {
        Self::new(Backing::Bytes(bytes))
    }

    fn new(map: Backing) -> Result<LogReader, Error> {
        let (attr, meta) = decode_header(&map)?;
        let mut warnings = tracekit_core::Warnings::default();
        let bs = meta.block_size as usize;
        let present = if meta.block_slots == 0 {
            meta.blocks_written
        } else {
            meta.blocks_written.min(meta.block_slots)
        };
        let mut blocks = Vec::new();
        let mut out_of_window = 0u64;
        for i in 0..present {
            let off = HEADER_SIZE + i as usize * bs;
            if off + BLOCK_HEADER > map.len() {
                warnings.push(
                    Position::Offset(off as u64),
                    format!("log truncated: block {i} is missing"),
                );
                break;
            }
            let b = &map[off..];
            if b[0..8] != BLOCK_MAGIC {
                warnings.push(
                    Position::Offset(off as u64),
                    "bad block magic, block skipped",
                );
                continue;
            }
            let used = get_u32(b, 16) as usize;
            if used > bs - BLOCK_HEADER || off + BLOCK_HEADER + used > map.len() {
                warnings.push(
                    Position::Offset(off as u64 + 16),
                    "block size out of range, block skipped",
                );
                continue;
            }
            let seq = get_u64(b, 8);
            // A block written after the header was (by a controller killed
            // before its next sync; whoever completed the log wrote these
            // positions again) or one the window has left behind.
            let window_start = match meta.block_slots {
                0 => 0,
                n => meta.blocks_written.saturating_sub(n),
            };
            if seq >= meta.blocks_written || seq < window_start {
                out_of_window += 1;
                continue;
            }
            blocks.push((seq, off, used));
        }
        blocks.sort_unstable();
        if out_of_window > 0 {
            warnings.push(
                Position::Offset(192),
                format!(
                    "{out_of_window} of the log's {present} blocks are missing (overwritten by a controller that died before its next flush)"
                ),
            );
        }
        let mut types = Vec::new();
        let (to, tl) = (meta.types_offset as usize, meta.types_len as usize);
        if tl == 0 {
            warnings.push(
                Position::Offset(200),
                "no event-type table (log never flushed?)",
            );
        } else if to.checked_add(tl).is_none_or(|e| e > map.len())
            || tl < 16
            || map[to..to + 8] != TYPES_MAGIC
        {
            warnings.push(
                Position::Offset(to as u64),
                "event-type table missing or corrupt",
            );
        } else {
            let t = &map[to..to + tl];
            let n = get_u32(t, 8) as usize;
            let mut at = 16;
            for _ in 0..n {
                if at + 8 > t.len() {
                    warnings.push(
                        Position::Offset((to + at) as u64),
                        "event-type table truncated",
                    );
                    break;
                }
                let id = get_u32(t, at);
                let len = get_u32(t, at + 4) as usize;
                if len > TRACE_EVENT_NAME_MAX || at + 8 + len > t.len() {
                    warnings.push(Position::Offset((to + at) as u64), "bad event-type entry");
                    break;
                }
                types.push((id, t[at + 8..at + 8 + len].to_vec()));
                at = (at + 8 + len).next_multiple_of(8);
            }
        }
        if meta.flags & FLAG_COMPLETE == 0 {
            warnings.push(
                Position::Offset(24),
                "log was not shut down cleanly: events after the last flush are missing",
            );
        }
        Ok(LogReader {
            map,
            attr,
            meta,
            types,
            blocks,
            cur_block: 0,
            cur_off: 0,
            warnings,
        })
    }

    pub fn rewind(&mut self) {
        self.cur_block = 0;
        self.cur_off = 0;
    }

    /// The next event, oldest first; `None` at the end.
    #[inline(always)]
    pub fn next_event(&mut self) -> Option<Result<LogEvent<'_>, Error>> {
        loop {
            let &(_, boff, used) = self.blocks.get(self.cur_block)?;
            if self.cur_off >= used {
                self.cur_block += 1;
                self.cur_off = 0;
                continue;
            }
            let start = boff + BLOCK_HEADER + self.cur_off;
            let end = boff + BLOCK_HEADER + used;
            let b = &self.map[start..end];
            if b.len() < RECORD_HEADER {
                self.cur_block += 1;
                self.cur_off = 0;
                return Some(Err(bad(start as u64, "truncated record header")));
            }
            let len = get_u32(b, 8) as usize;
            let total = RECORD_HEADER + len.next_multiple_of(8);
            if total > b.len() {
                self.cur_block += 1;
                self.cur_off = 0;
                return Some(Err(bad(
                    start as u64 + 8,
                    format!("record data length {len} runs past its block"),
                )));
            }
            self.cur_off += total;
            let info = EventInfo {
                event_id: get_u32(b, 0),
                pid: get_u32(b, 4) as i32,
                truncation: get_u32(b, 12) as i32,
                thread: get_u64(b, 16),
                prog_address: get_u64(b, 24),
                timestamp_ns: get_u64(b, 32) as i64,
            };
            return Some(Ok(LogEvent {
                info,
                data: &self.map[start + RECORD_HEADER..start + RECORD_HEADER + len],
                offset: start as u64,
            }));
        }
    }

    /// Name of an event type of this log.
    pub fn type_name(&self, id: u32) -> Option<&[u8]> {
        if let Some((_, n)) = self.types.iter().find(|(i, _)| *i == id) {
            return Some(n);
        }
        system_event_name(id).map(str::as_bytes)
    }
}
