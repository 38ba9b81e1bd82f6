//! A whole trace: header, block index (FDR) and time-stamped record
//! streams in llvm-xray's load order or sorted by timestamp.
//!
//! Memory: the block index holds one small entry per FDR buffer; record
//! streams hold one cursor per thread (FDR) or per time-ordered run (basic).
//! Nothing grows with the number of records.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tracekit_core::{Position, Result, Warnings};

use crate::basic::{BasicReader, RECORD_LEN};
use crate::densemap;
use crate::fdr::{FdrReader, FdrRecord, FunctionAction};
use crate::header::{parse_header, FileHeader, LogKind, HEADER_LEN};
use crate::record::{Record, RecordKind};
use crate::yaml_log::{YamlBody, YamlReader};

/// One FDR buffer as found in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// Offset of the block's first record (BufferExtents, or NewBuffer in v1).
    pub start: usize,
    /// Offset just past the block.
    pub end: usize,
    pub tid: i32,
    /// From the Pid record (v3+); 0 before.
    pub pid: i32,
    pub wall_seconds: u64,
    pub wall_micros: u32,
    /// The first NewCPUId's timestamp, used to order a thread's blocks.
    pub first_tsc: Option<u64>,
}

/// The blocks of one (process, thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadBlocks {
    pub pid: i32,
    pub tid: i32,
    /// Indices into [`Trace::blocks`], in time order.
    pub blocks: Vec<usize>,
}

/// Told the byte ranges of the input that a stream has finished reading,
/// so a memory-mapped input can drop those pages (bounded memory).
pub type Release<'a> = &'a (dyn Fn(usize, usize) + Sync + 'a);

/// An opened trace over its bytes (usually a memory map).
pub struct Trace<'a> {
    /// Called as `f(offset, len)` for input ranges the streams are done
    /// with (FDR buffers, basic-mode stretches): memory-mapped inputs drop
    /// those pages from the resident set.
    release: Option<Release<'a>>,
    pub data: &'a [u8],
    pub header: FileHeader,
    /// FDR buffers in file order (empty for basic logs).
    pub blocks: Vec<BlockInfo>,
    /// FDR threads in llvm-xray's order (its DenseMap of (pid, tid)),
    /// each with its blocks sorted by time.
    pub threads: Vec<ThreadBlocks>,
    /// Problems found while indexing.
    pub warnings: Warnings,
    /// Set when the input is llvm-xray's YAML (then `blocks` and `threads`
    /// are empty, and records come in file order).
    pub yaml: Option<YamlBody>,
}

impl<'a> Trace<'a> {
    /// Reads the header and indexes the FDR buffers (one quick pass that
    /// jumps over block bodies when the extents allow).
    pub fn open(data: &'a [u8]) -> Result<Trace<'a>> {
        Self::open_releasing(data, None)
    }

    /// [`Trace::open`] with a release hook (see [`Release`]), so that indexing hands back each buffer's
    /// pages as soon as it has read the buffer's header: the kernel maps
    /// whole large folios of the page cache on a fault, so touching one
    /// header per buffer could otherwise make most of the file resident.
    pub fn open_releasing(data: &'a [u8], release: Option<Release<'a>>) -> Result<Trace<'a>> {
        let header = match parse_header(data) {
            Ok(h) => h,
            Err(e) => {
                if !crate::yaml_log::looks_like_yaml_log(data) {
                    return Err(e);
                }
                let (header, body, warnings) = crate::yaml_log::open(data)?;
                return Ok(Trace {
                    release,
                    data,
                    header,
                    blocks: Vec::new(),
                    threads: Vec::new(),
                    warnings,
                    yaml: Some(body),
                });
            }
        };
        let mut trace = Trace {
            release,
            data,
            header,
            blocks: Vec::new(),
            threads: Vec::new(),
            warnings: Warnings::default(),
            yaml: None,
        };
        match header.kind {
            LogKind::Fdr => trace.index_fdr()?,
            LogKind::Basic => {
                if data.len() < HEADER_LEN + RECORD_LEN {
                    trace.warnings.push(
                        Position::Offset(HEADER_LEN as u64),
                        "the log holds no records (the runtime writes a bare header when nothing was logged)",
                    );
                }
            }
        }
        Ok(trace)
    }

    fn index_fdr(&mut self) -> Result<()> {
        // Never fails: damage is reported by the record streams.
        let v1 = self.header.version == 1;
        let mut reader = FdrReader::new(self.data, self.header);
        let mut blocks: Vec<BlockInfo> = Vec::new();
        let mut cur: Option<BlockInfo> = None;
        let mut have_tid = false;
        while let Some(item) = reader.next() {
            let r = match item {
                Ok(r) => r,
                Err(e) => {
                    // The stream of the block holding the damage reports
                    // it again, after the records before it.
                    self.warnings.push(
                        Position::Unknown,
                        format!("indexing stopped at a damaged record: {e}"),
                    );
                    break;
                }
            };
            if r.garbage {
                continue;
            }
            let starts_block = match r.record {
                FdrRecord::BufferExtents { .. } => !v1,
                FdrRecord::NewBuffer { .. } => v1 || cur.is_none() || have_tid,
                _ => false,
            };
            if starts_block {
                if let Some(mut b) = cur.take() {
                    b.end = r.offset;
                    self.finish_block(b, have_tid, &mut blocks);
                }
                have_tid = false;
                cur = Some(BlockInfo {
                    start: r.offset,
                    end: r.offset,
                    tid: 0,
                    pid: 0,
                    wall_seconds: 0,
                    wall_micros: 0,
                    first_tsc: None,
                });
            }
            let Some(b) = cur.as_mut() else {
                self.warnings.push(
                    Position::Offset(r.offset as u64),
                    "record before the first buffer header ignored",
                );
                continue;
            };
            match r.record {
                FdrRecord::NewBuffer { tid } => {
                    b.tid = tid;
                    have_tid = true;
                    if self.header.version == 2 {
                        // llvm-xray's convention for v2 logs (no Pid record).
                        b.pid = 0;
                    }
                }
                FdrRecord::Pid { pid } => b.pid = pid,
                FdrRecord::WallClock { seconds, micros } => {
                    b.wall_seconds = seconds;
                    b.wall_micros = micros;
                }
                FdrRecord::NewCpuId { tsc, .. } if b.first_tsc.is_none() => {
                    b.first_tsc = Some(tsc);
                    reader.skip_block_body();
                }
                _ => {}
            }
        }
        if let Some(mut b) = cur.take() {
            b.end = self.data.len();
            self.finish_block(b, have_tid, &mut blocks);
        }
        self.warnings.extend(std::mem::take(&mut reader.warnings));
        self.blocks = blocks;
        self.group_threads();
        Ok(())
    }

    fn finish_block(&mut self, b: BlockInfo, have_tid: bool, blocks: &mut Vec<BlockInfo>) {
        self.release_range(b.start, b.end.saturating_sub(b.start));
        if have_tid {
            blocks.push(b);
        } else {
            self.warnings.push(
                Position::Offset(b.start as u64),
                "buffer without a NewBuffer record (no thread id); its records are ignored",
            );
        }
    }

    fn group_threads(&mut self) {
        let mut keys: Vec<(i32, i32)> = Vec::new();
        let mut lists: Vec<Vec<usize>> = Vec::new();
        let mut slot: std::collections::HashMap<(i32, i32), usize> = Default::default();
        for (i, b) in self.blocks.iter().enumerate() {
            let k = (b.pid, b.tid);
            let s = *slot.entry(k).or_insert_with(|| {
                keys.push(k);
                lists.push(Vec::new());
                keys.len() - 1
            });
            lists[s].push(i);
        }
        let hashes: Vec<u32> = keys
            .iter()
            .map(|&(p, t)| {
                densemap::hash_pair(
                    densemap::hash_u64(p as i64 as u64),
                    densemap::hash_u32(t as u32),
                )
            })
            .collect();
        let blocks = &self.blocks;
        self.threads = densemap::iteration_order(&hashes)
            .into_iter()
            .map(|s| {
                let mut list = std::mem::take(&mut lists[s]);
                // Time order; file order breaks ties (stable sort).
                list.sort_by_key(|&i| blocks[i].first_tsc.unwrap_or(u64::MAX));
                ThreadBlocks {
                    pid: keys[s].0,
                    tid: keys[s].1,
                    blocks: list,
                }
            })
            .collect();
    }

    /// Tells the release hook (if any) that `data[offset..offset + len]`
    /// has been read for good.
    /// True for binary FDR logs (the block index and the parallel paths
    /// apply).
    pub fn is_fdr_log(&self) -> bool {
        self.header.kind == LogKind::Fdr && self.yaml.is_none()
    }

    pub fn release_range(&self, offset: usize, len: usize) {
        if let Some(f) = self.release {
            f(offset, len);
        }
    }

    /// Records in llvm-xray's load order: FDR threads one after the other
    /// (each in time order), basic logs in file order. `account`, `stack`
    /// and `graph` consume this order.
    pub fn records(&self) -> RecordStream<'a> {
        if let Some(body) = self.yaml {
            return RecordStream::Yaml(Box::new(YamlReader::new(self.data, body)));
        }
        match self.header.kind {
            LogKind::Basic => {
                RecordStream::Basic(Box::new(BasicReader::new(self.data, self.header)))
            }
            LogKind::Fdr => RecordStream::Fdr(FdrStream {
                cursors: self
                    .threads
                    .iter()
                    .map(|t| ThreadCursor::new(self, t))
                    .collect(),
                current: 0,
                warnings: Warnings::default(),
            }),
        }
    }

    /// Calls `f` with every record in load order (see [`Trace::records`]);
    /// faster than the iterator. Returns the warnings of the run.
    pub fn try_for_each<F>(&self, mut f: F) -> Result<Warnings>
    where
        F: FnMut(&Record<'a>) -> Result<()>,
    {
        let mut warnings = Warnings::default();
        if let Some(body) = self.yaml {
            let mut r = YamlReader::new(self.data, body);
            for rec in r.by_ref() {
                f(&rec?)?;
            }
            warnings.extend(r.warnings);
            return Ok(warnings);
        }
        match self.header.kind {
            LogKind::Basic => {
                let mut r = BasicReader::new(self.data, self.header);
                r.release = self.release;
                for rec in r.by_ref() {
                    f(&rec?)?;
                }
                warnings.extend(r.warnings);
            }
            LogKind::Fdr => {
                for t in &self.threads {
                    let mut c = ThreadCursor::new(self, t);
                    let res = c.drive(&mut f);
                    warnings.extend(std::mem::take(&mut c.warnings));
                    res?;
                }
            }
        }
        Ok(warnings)
    }

    /// Records ordered by timestamp; ties keep load order (what llvm-xray's
    /// stable sort in `convert` gives for time-ordered threads).
    pub fn sorted_records(&self) -> SortedStream<'a> {
        if let Some(body) = self.yaml {
            let sources = match crate::yaml_log::runs(self.data, body) {
                Ok(runs) => runs
                    .into_iter()
                    .map(|(start, line, n)| {
                        Source::Yaml(Box::new(YamlReader::run(self.data, start, line, n)))
                    })
                    .collect(),
                // The whole stream reports the error after the records
                // before it.
                Err(_) => vec![Source::Yaml(Box::new(YamlReader::new(self.data, body)))],
            };
            return SortedStream::new(sources);
        }
        let sources: Vec<Source<'a>> = match self.header.kind {
            LogKind::Fdr => {
                let mut sources = Vec::new();
                for t in &self.threads {
                    thread_runs(ThreadCursor::new(self, t), &mut sources);
                }
                sources
            }
            LogKind::Basic => basic_runs(self.data, self.header)
                .into_iter()
                .map(|(start, end)| {
                    let mut r = BasicReader::new(self.data, self.header);
                    r.restrict(start, end);
                    Source::Basic(Box::new(r))
                })
                .collect(),
        };
        SortedStream::new(sources)
    }
}

/// How often (in records) a thread's cursor is snapshotted while looking
/// for out-of-order runs.
const SNAPSHOT_EVERY: usize = 4096;

/// Splits a thread's stream into maximal runs of non-decreasing
/// timestamps (v1-v4 custom events carry absolute timestamps, CPUs'
/// counters can disagree) so that merging the runs equals llvm-xray's
/// stable sort. Costs one extra decoding pass; a thread in order stays one
/// source.
fn thread_runs<'a>(cursor: ThreadCursor<'a>, sources: &mut Vec<Source<'a>>) {
    let mut snapshots: Vec<(usize, ThreadCursor<'a>)> = vec![(0, cursor.clone())];
    let mut scan = cursor;
    let mut starts = vec![0usize];
    let mut prev: Option<u64> = None;
    let mut idx = 0usize;
    loop {
        if idx > 0 && idx.is_multiple_of(SNAPSHOT_EVERY) {
            let mut snap = scan.clone();
            snap.warnings = Warnings::default();
            snapshots.push((idx, snap));
        }
        match scan.next() {
            Some(Ok(r)) => {
                if prev.is_some_and(|p| r.tsc < p) {
                    starts.push(idx);
                }
                prev = Some(r.tsc);
                idx += 1;
            }
            _ => break,
        }
    }
    if starts.len() == 1 {
        let (_, first) = snapshots.swap_remove(0);
        sources.push(Source::Thread(Box::new(first)));
        return;
    }
    for (i, &s) in starts.iter().enumerate() {
        let at = snapshots.partition_point(|(n, _)| *n <= s) - 1;
        let (n, snap) = &snapshots[at];
        let mut c = snap.clone();
        for _ in *n..s {
            let _ = c.next();
        }
        // The last run keeps going to the end (or to the decoding error).
        let len = match starts.get(i + 1) {
            Some(&e) => e - s,
            None => usize::MAX,
        };
        if i > 0 {
            c.warnings = Warnings::default();
        }
        sources.push(Source::Run(Box::new(c), len));
    }
}

/// Splits a basic log into maximal runs of non-decreasing timestamps
/// (argument payloads stay with their record). Merging the runs equals a
/// stable sort of the whole file.
fn basic_runs(data: &[u8], header: FileHeader) -> Vec<(usize, usize)> {
    let e = header.endian;
    let body = data.len().saturating_sub(HEADER_LEN);
    let end = HEADER_LEN + body - body % RECORD_LEN;
    let mut runs = Vec::new();
    let mut start = HEADER_LEN;
    let mut last = 0u64;
    let mut at = HEADER_LEN;
    while at < end {
        if e.u16(data, at) == 0 {
            let tsc = e.u64(data, at + 8);
            if tsc < last && at > start {
                runs.push((start, at));
                start = at;
            }
            last = tsc;
        }
        at += RECORD_LEN;
    }
    if start < end {
        runs.push((start, end));
    }
    runs
}

/// Rebuilds the records of one thread from its blocks.
#[derive(Clone)]
pub struct ThreadCursor<'a> {
    data: &'a [u8],
    header: FileHeader,
    blocks: std::rc::Rc<[(usize, usize)]>,
    next_block: usize,
    reader: Option<FdrReader<'a>>,
    tid: u32,
    pid: u32,
    cpu: u16,
    base_tsc: u64,
    have_cpu: bool,
    record_type: u16,
    func_id: i32,
    failed: bool,
    dropped_before_cpu: u64,
    release: Option<Release<'a>>,
    /// A NewBuffer record named another thread than the one the block
    /// index grouped the block under (damaged input): the records do not
    /// all carry the thread's id.
    pub tid_switched: bool,
    pub warnings: Warnings,
}

impl<'a> ThreadCursor<'a> {
    fn new(trace: &Trace<'a>, t: &ThreadBlocks) -> Self {
        Self::for_blocks(trace, t, 0..t.blocks.len())
    }

    /// A cursor over some of the thread's blocks (`range` indexes
    /// `t.blocks`): the records they hold, exactly as the whole thread's
    /// cursor yields them there (every block starts its own time base).
    pub fn for_blocks(trace: &Trace<'a>, t: &ThreadBlocks, range: std::ops::Range<usize>) -> Self {
        ThreadCursor {
            data: trace.data,
            header: trace.header,
            blocks: t.blocks[range]
                .iter()
                .map(|&i| (trace.blocks[i].start, trace.blocks[i].end))
                .collect::<Vec<_>>()
                .into(),
            next_block: 0,
            reader: None,
            tid: t.tid as u32,
            pid: t.pid as u32,
            cpu: 0,
            base_tsc: 0,
            have_cpu: false,
            record_type: 0,
            func_id: 0,
            failed: false,
            dropped_before_cpu: 0,
            release: trace.release,
            tid_switched: false,
            warnings: Warnings::default(),
        }
    }

    fn start(
        &mut self,
        kind: RecordKind,
        cpu: u16,
        tsc: u64,
        data: &'a [u8],
    ) -> Option<Record<'a>> {
        Some(Record {
            record_type: self.record_type,
            cpu,
            kind,
            func_id: self.func_id,
            tsc,
            tid: self.tid,
            pid: self.pid,
            args: Vec::new(),
            data: std::borrow::Cow::Borrowed(data),
        })
    }

    /// The next function record of the current buffer (with the call
    /// arguments that follow it), through the reader's fast path.
    #[inline]
    fn take_function_record(&mut self) -> Option<Record<'a>> {
        let reader = self.reader.as_mut()?;
        let (action, func_id, delta) = reader.take_function()?;
        Some(self.function_record(action, func_id, delta))
    }

    /// The record of a function record just read (with the call arguments
    /// that follow it), advancing the thread's tsc.
    #[inline]
    fn function_record(&mut self, action: FunctionAction, func_id: u32, delta: u32) -> Record<'a> {
        self.func_id = func_id as i32;
        self.base_tsc = self.base_tsc.wrapping_add(u64::from(delta));
        let mut rec = Record {
            record_type: self.record_type,
            cpu: self.cpu,
            kind: action.into(),
            func_id: self.func_id,
            tsc: self.base_tsc,
            tid: self.tid,
            pid: self.pid,
            args: Vec::new(),
            data: std::borrow::Cow::Borrowed(&[]),
        };
        if let Some(reader) = self.reader.as_mut() {
            while let Some(arg) = reader.take_call_argument() {
                rec.args.push(arg);
                rec.kind = RecordKind::EnterArg;
            }
        }
        rec
    }

    /// Calls `f` with every record of the thread, in order: the same
    /// records as the iterator, without moving each one through it (the
    /// per-record cost of account/stack is mostly that).
    pub fn drive<F>(&mut self, f: &mut F) -> Result<()>
    where
        F: FnMut(&Record<'a>) -> Result<()>,
    {
        loop {
            if self.have_cpu {
                while let Some(rec) = self.take_function_record() {
                    f(&rec)?;
                }
            }
            match self.next() {
                Some(Ok(r)) => f(&r)?,
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    }

    /// Like [`ThreadCursor::drive`] for consumers of function records
    /// only: `f(kind, func_id, tsc)` for each, in order (call arguments
    /// are skipped, events ignored), without building a [`Record`] for the
    /// common plain function records.
    pub fn drive_functions<F>(&mut self, f: &mut F) -> Result<()>
    where
        F: crate::record::FunctionSink,
    {
        loop {
            if self.have_cpu {
                if let Some(reader) = self.reader.as_mut() {
                    let mut last = self.func_id as u32;
                    let res = reader.take_function_run(&mut self.base_tsc, &mut last, f);
                    self.func_id = last as i32;
                    res?;
                }
            }
            match self.next() {
                Some(Ok(r)) if !r.kind.is_event() => f.function(r.kind, r.func_id, r.tsc)?,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    }

    fn finish_reader(&mut self) {
        if let Some(r) = self.reader.take() {
            self.warnings.extend(r.warnings);
            if let (Some(f), Some(&(s, e))) = (self.release, self.blocks.get(self.next_block - 1)) {
                f(s, e - s);
            }
        }
        if self.dropped_before_cpu > 0 {
            self.warnings.push(
                Position::Unknown,
                format!(
                    "{} records of thread {} came before the first NewCPUId of their buffer (no time base) and were dropped",
                    self.dropped_before_cpu, self.tid
                ),
            );
            self.dropped_before_cpu = 0;
        }
    }
}

impl<'a> Iterator for ThreadCursor<'a> {
    type Item = Result<Record<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            if self.reader.is_none() {
                if self.next_block >= self.blocks.len() {
                    return None;
                }
                let (s, e) = self.blocks[self.next_block];
                self.next_block += 1;
                self.reader = Some(FdrReader::block(self.data, self.header, s, e));
                self.have_cpu = false;
            }
            if self.have_cpu {
                if let Some(rec) = self.take_function_record() {
                    return Some(Ok(rec));
                }
            }
            let item = self.reader.as_mut().and_then(|r| r.next());
            let raw = match item {
                None => {
                    self.finish_reader();
                    continue;
                }
                Some(Err(e)) => {
                    self.failed = true;
                    self.finish_reader();
                    return Some(Err(e));
                }
                Some(Ok(raw)) => raw,
            };
            if raw.garbage {
                continue;
            }
            let emitted = match raw.record {
                FdrRecord::NewBuffer { tid } => {
                    if tid as u32 != self.tid {
                        self.tid_switched = true;
                    }
                    self.tid = tid as u32;
                    if self.header.version == 2 {
                        self.pid = tid as u32;
                    }
                    None
                }
                FdrRecord::Pid { pid } => {
                    self.pid = pid as u32;
                    None
                }
                FdrRecord::NewCpuId { cpu, tsc } => {
                    self.cpu = cpu;
                    self.base_tsc = tsc;
                    self.have_cpu = true;
                    None
                }
                FdrRecord::TscWrap { base } => {
                    self.base_tsc = base;
                    None
                }
                FdrRecord::WallClock { .. }
                | FdrRecord::BufferExtents { .. }
                | FdrRecord::EndOfBuffer => None,
                FdrRecord::CallArgument { .. } => {
                    // Arguments directly after their function record are
                    // taken with it (below); this one follows something else.
                    self.warnings.push(
                        Position::Offset(raw.offset as u64),
                        "call argument without a function record right before it ignored",
                    );
                    None
                }
                FdrRecord::CustomEvent { tsc, cpu, data, .. } => {
                    self.start(RecordKind::CustomEvent, cpu, tsc, data)
                }
                _ if !self.have_cpu => {
                    self.dropped_before_cpu += 1;
                    None
                }
                FdrRecord::CustomEventV5 { delta, data, .. } => {
                    self.base_tsc = self.base_tsc.wrapping_add(delta as i64 as u64);
                    self.start(RecordKind::CustomEvent, self.cpu, self.base_tsc, data)
                }
                FdrRecord::TypedEvent {
                    delta,
                    event_type,
                    data,
                    ..
                } => {
                    self.record_type = event_type;
                    self.base_tsc = self.base_tsc.wrapping_add(delta as i64 as u64);
                    self.start(RecordKind::TypedEvent, self.cpu, self.base_tsc, data)
                }
                FdrRecord::Function {
                    action,
                    func_id,
                    delta,
                } => Some(self.function_record(action, func_id, delta)),
            };
            if let Some(r) = emitted {
                return Some(Ok(r));
            }
        }
    }
}

/// Records of an FDR trace, thread after thread.
pub struct FdrStream<'a> {
    cursors: Vec<ThreadCursor<'a>>,
    current: usize,
    warnings: Warnings,
}

/// Records in load order (see [`Trace::records`]).
pub enum RecordStream<'a> {
    Basic(Box<BasicReader<'a>>),
    Yaml(Box<YamlReader<'a>>),
    Fdr(FdrStream<'a>),
}

impl<'a> RecordStream<'a> {
    /// Warnings so far (complete once the stream is exhausted).
    pub fn warnings(&self) -> Warnings {
        match self {
            RecordStream::Basic(b) => b.warnings.clone(),
            RecordStream::Yaml(y) => y.warnings.clone(),
            RecordStream::Fdr(f) => {
                let mut w = f.warnings.clone();
                for c in &f.cursors {
                    w.extend(c.warnings.clone());
                }
                w
            }
        }
    }
}

impl<'a> Iterator for RecordStream<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            RecordStream::Basic(b) => b.next(),
            RecordStream::Yaml(y) => y.next(),
            RecordStream::Fdr(f) => loop {
                let c = f.cursors.get_mut(f.current)?;
                match c.next() {
                    Some(r) => return Some(r),
                    None => f.current += 1,
                }
            },
        }
    }
}

enum Source<'a> {
    Thread(Box<ThreadCursor<'a>>),
    /// Part of a thread's stream: at most this many records.
    Run(Box<ThreadCursor<'a>>, usize),
    Basic(Box<BasicReader<'a>>),
    Yaml(Box<YamlReader<'a>>),
}

impl<'a> Source<'a> {
    fn next(&mut self) -> Option<Result<Record<'a>>> {
        match self {
            Source::Thread(t) => t.next(),
            Source::Basic(b) => b.next(),
            Source::Yaml(y) => y.next(),
            Source::Run(c, left) => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                c.next()
            }
        }
    }
    fn warnings(&self) -> &Warnings {
        match self {
            Source::Thread(t) => &t.warnings,
            Source::Basic(b) => &b.warnings,
            Source::Yaml(y) => &y.warnings,
            Source::Run(c, _) => &c.warnings,
        }
    }
}

/// A k-way merge of per-thread (or per-run) streams by timestamp.
pub struct SortedStream<'a> {
    sources: Vec<Source<'a>>,
    heads: Vec<Option<Record<'a>>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    error: Option<tracekit_core::Error>,
    primed: bool,
}

impl<'a> SortedStream<'a> {
    fn new(sources: Vec<Source<'a>>) -> Self {
        let n = sources.len();
        SortedStream {
            sources,
            heads: (0..n).map(|_| None).collect(),
            heap: BinaryHeap::with_capacity(n),
            error: None,
            primed: false,
        }
    }

    fn pull(&mut self, i: usize) {
        match self.sources[i].next() {
            Some(Ok(r)) => {
                self.heap.push(Reverse((r.tsc, i)));
                self.heads[i] = Some(r);
            }
            Some(Err(e)) if self.error.is_none() => self.error = Some(e),
            _ => {}
        }
    }

    /// Warnings of all sources (complete once the stream is exhausted).
    pub fn warnings(&self) -> Warnings {
        let mut w = Warnings::default();
        for s in &self.sources {
            w.extend(s.warnings().clone());
        }
        w
    }
}

impl<'a> Iterator for SortedStream<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.primed {
            self.primed = true;
            for i in 0..self.sources.len() {
                self.pull(i);
            }
        }
        if let Some(e) = self.error.take() {
            self.heap.clear();
            return Some(Err(e));
        }
        let Reverse((_, i)) = self.heap.pop()?;
        let r = self.heads[i].take()?;
        self.pull(i);
        Some(Ok(r))
    }
}

/// A stretch of one FDR thread's blocks: a unit of parallel work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Index into [`Trace::threads`].
    pub thread: usize,
    /// Indices into that thread's `blocks`.
    pub blocks: std::ops::Range<usize>,
}

/// How many worker threads the analyses use: `TRACEKIT_THREADS` if set,
/// else the available cores.
pub fn worker_count() -> usize {
    std::env::var("TRACEKIT_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 64)
}

/// Runs `work` on each item on its own scoped thread; the results in item
/// order. A worker's panic is raised again here.
pub fn par_map<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| scope.spawn(move || work(item)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

impl<'a> Trace<'a> {
    /// The FDR load order cut into `parts` parts
    /// ([`Trace::split_load_order`]), its segments numbered in load order,
    /// the parts given to `workers` threads in consecutive groups: `work`
    /// runs once per group, the results in load order. `None` when
    /// `switched` says a result's records changed threads inside a block
    /// (damaged input): per-part stacks would then not be llvm-xray's, and
    /// callers run sequentially instead.
    pub fn par_groups<R: Send>(
        &self,
        workers: usize,
        parts: usize,
        work: impl Fn(&[(usize, Segment)]) -> R + Sync,
        switched: impl Fn(&R) -> bool,
    ) -> Option<Vec<R>> {
        let cut = self.split_load_order(parts.max(1));
        let workers = workers.clamp(1, cut.len().max(1));
        let per = cut.len().div_ceil(workers).max(1);
        let mut index = 0usize;
        let groups: Vec<Vec<(usize, Segment)>> = cut
            .chunks(per)
            .map(|group| {
                group
                    .iter()
                    .flatten()
                    .map(|s| {
                        index += 1;
                        (index - 1, s.clone())
                    })
                    .collect()
            })
            .collect();
        let results = par_map(groups, |group| work(&group));
        (!results.iter().any(switched)).then_some(results)
    }

    /// Cuts the FDR load order (threads one after the other, each in time
    /// order) at block boundaries into at most `parts` consecutive parts of
    /// about equal bytes; each part is its segments in load order.
    pub fn split_load_order(&self, parts: usize) -> Vec<Vec<Segment>> {
        let size = |i: usize| self.blocks[i].end - self.blocks[i].start;
        let total: usize = self
            .threads
            .iter()
            .flat_map(|t| t.blocks.iter())
            .map(|&i| size(i))
            .sum();
        let parts = parts.max(1);
        let mut out: Vec<Vec<Segment>> = vec![Vec::new()];
        let mut done = 0usize;
        for (ti, t) in self.threads.iter().enumerate() {
            for (bi, &b) in t.blocks.iter().enumerate() {
                let part = out.len() - 1;
                match out[part].last_mut() {
                    Some(s) if s.thread == ti => s.blocks.end = bi + 1,
                    _ => out[part].push(Segment {
                        thread: ti,
                        blocks: bi..bi + 1,
                    }),
                }
                done += size(b);
                // Cut once this part holds its share of the bytes.
                if out.len() < parts && done * parts >= total * out.len() {
                    out.push(Vec::new());
                }
            }
        }
        out.retain(|p| !p.is_empty());
        out
    }

    /// The records of one segment (see [`ThreadCursor::for_blocks`]).
    pub fn segment_cursor(&self, s: &Segment) -> ThreadCursor<'a> {
        ThreadCursor::for_blocks(self, &self.threads[s.thread], s.blocks.clone())
    }
}
