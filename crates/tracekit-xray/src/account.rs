//! `account`: per-function call latency statistics (llvm-xray's
//! `LatencyAccountant`), with llvm-xray's output formats.
//!
//! Differences from llvm-xray 14, on purpose: records are accounted per
//! thread without llvm-xray's cross-thread "TSC went backwards" rejection
//! (which drops or refuses ordinary multi-threaded traces), and exits
//! without any entry on their thread's stack (a trace that starts
//! mid-call, ring-buffer overwrite) are counted as warnings, not errors.
//! A function's `sum` is its exact total in cycles rounded once to a
//! double; llvm-xray adds the durations as doubles one by one, which
//! differs only once a function's total exceeds 2^53 cycles.

use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::densemap;
use crate::names::FunctionNames;
use crate::record::Record;

/// The column to sort by (`-sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortField {
    FuncId,
    Count,
    Min,
    Med,
    Pct90,
    Pct99,
    Max,
    Sum,
    Func,
}

impl SortField {
    pub fn parse(s: &str) -> Option<SortField> {
        Some(match s {
            "funcid" => SortField::FuncId,
            "count" => SortField::Count,
            "min" => SortField::Min,
            "med" => SortField::Med,
            "90p" => SortField::Pct90,
            "99p" => SortField::Pct99,
            "max" => SortField::Max,
            "sum" => SortField::Sum,
            "func" => SortField::Func,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone)]
pub struct AccountOptions {
    pub keep_going: bool,
    pub deduce_sibling_calls: bool,
    pub recursive_calls_only: bool,
}

#[derive(Default)]
struct ThreadStack {
    frames: Vec<(i32, u64)>,
    /// Per function: depth on this stack and whether it recursed.
    recursion: Option<HashMap<i32, (u32, bool)>>,
}

/// Accumulates call durations per function.
pub struct Accountant {
    opts: AccountOptions,
    threads: Vec<ThreadStack>,
    thread_index: HashMap<u32, usize>,
    last_thread: Option<(u32, usize)>,
    /// Function ids in first-latency order (llvm-xray's DenseMap keys).
    order: Vec<i32>,
    /// Durations by function id.
    store: Store,
    scratch: Vec<(i32, u64)>,
    pub warnings: Warnings,
    orphan_exits: u64,
    skipped: u64,
}

/// Durations of one function: listed, as u32 while they fit (halves
/// memory on big traces), u64 after; counted once there are many.
enum Durations {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
    Hist(Box<Histogram>),
}

/// Functions with this many durations switch to a [`Histogram`] (whose
/// table of counts then costs what the listed durations did; the long
/// durations stay listed, 8 bytes each).
const HIST_FROM: usize = 1 << 17;
/// Durations below this are counted by value, exactly.
const HIST_LEN: usize = 1 << 16;

/// The durations of a much-called function: a count per small value (the
/// common case: short calls) and the longer ones listed. Exact: order
/// statistics are read off the counts.
struct Histogram {
    counts: Vec<u64>,
    big: Vec<u64>,
    n: u64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            counts: vec![0; HIST_LEN],
            big: Vec::new(),
            n: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, d: u64) {
        self.n += 1;
        match self.counts.get_mut(d as usize) {
            Some(c) if d < HIST_LEN as u64 => *c += 1,
            _ => self.big.push(d),
        }
    }

    /// Adds the durations of `d`.
    fn absorb(&mut self, d: Durations) {
        match d {
            Durations::Narrow(v) => v.iter().for_each(|&x| self.push(u64::from(x))),
            Durations::Wide(v) => v.iter().for_each(|&x| self.push(x)),
            Durations::Hist(h) => {
                for (a, b) in self.counts.iter_mut().zip(&h.counts) {
                    *a += b;
                }
                self.big.extend_from_slice(&h.big);
                self.n += h.n;
            }
        }
    }

    /// (min, median, 90th, 99th percentile, max, sum) as [`stats`] gives
    /// them on the listed durations.
    fn stats(&mut self) -> (f64, f64, f64, f64, f64, f64) {
        let n = self.n as usize;
        if n == 0 {
            return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        }
        let small: u64 = self.counts.iter().sum();
        let mut total: u128 = self.big.iter().map(|&x| u128::from(x)).sum();
        for (v, &c) in self.counts.iter().enumerate() {
            total += v as u128 * u128::from(c);
        }
        let first_small = self.counts.iter().position(|&c| c > 0);
        let last_small = self.counts.iter().rposition(|&c| c > 0);
        let min = match first_small {
            Some(v) => v as u64,
            None => self.big.iter().copied().min().unwrap_or(0),
        };
        let max = match self.big.iter().copied().max() {
            Some(m) => m,
            None => last_small.unwrap_or(0) as u64,
        };
        let ranks = [
            n / 2,
            ((n as f64 * 0.9).floor() as usize).min(n - 1),
            ((n as f64 * 0.99).floor() as usize).min(n - 1),
        ];
        let mut at = [0u64; 3];
        for (i, &k) in ranks.iter().enumerate() {
            let k = k as u64;
            at[i] = if k < small {
                let mut seen = 0u64;
                let mut value = 0u64;
                for (v, &c) in self.counts.iter().enumerate() {
                    seen += c;
                    if seen > k {
                        value = v as u64;
                        break;
                    }
                }
                value
            } else {
                let k = (k - small) as usize;
                if k < self.big.len() {
                    *self.big.select_nth_unstable(k).1
                } else {
                    0
                }
            };
        }
        (
            min as f64,
            at[0] as f64,
            at[1] as f64,
            at[2] as f64,
            max as f64,
            total as f64,
        )
    }
}

impl Durations {
    #[inline(always)]
    fn push(&mut self, d: u64) {
        match self {
            Durations::Narrow(v) if v.len() < HIST_FROM => match u32::try_from(d) {
                Ok(x) => v.push(x),
                Err(_) => self.push_slow(d),
            },
            Durations::Wide(v) if v.len() < HIST_FROM => v.push(d),
            Durations::Hist(h) => h.push(d),
            _ => self.push_slow(d),
        }
    }

    #[cold]
    fn push_slow(&mut self, d: u64) {
        match self {
            Durations::Narrow(v) if v.len() < HIST_FROM => {
                let mut w: Vec<u64> = v.iter().map(|&x| u64::from(x)).collect();
                w.push(d);
                *self = Durations::Wide(w);
            }
            Durations::Narrow(_) | Durations::Wide(_) => {
                let mut h = Box::new(Histogram::new());
                h.absorb(std::mem::replace(self, Durations::Narrow(Vec::new())));
                h.push(d);
                *self = Durations::Hist(h);
            }
            Durations::Hist(h) => h.push(d),
        }
    }
}

/// One output row, durations in seconds when the frequency is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub func_id: i32,
    pub count: u64,
    pub min: f64,
    pub median: f64,
    pub pct90: f64,
    pub pct99: f64,
    pub max: f64,
    pub sum: f64,
}

fn stats<T: Copy + Ord + Into<u64>>(v: &mut [T]) -> (f64, f64, f64, f64, f64, f64) {
    let n = v.len();
    if n == 0 {
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    }
    let (mut min, mut max, mut total) = (u64::MAX, 0u64, 0u128);
    for &x in v.iter() {
        let x: u64 = x.into();
        min = min.min(x);
        max = max.max(x);
        total += u128::from(x);
    }
    // The exact total, rounded once. llvm-xray adds the durations as
    // doubles in load order: the same number while the total stays below
    // 2^53 cycles (every partial sum is exact); above, its result depends
    // on the order, which the parallel path does not keep, so ours is the
    // exactly rounded sum instead (a deliberate difference, see the module
    // documentation).
    let sum = total as f64;
    // Order statistics: each later rank is selected among the elements
    // above the previous one only.
    let k_med = n / 2;
    let k90 = ((n as f64 * 0.9).floor() as usize).min(n - 1);
    let k99 = ((n as f64 * 0.99).floor() as usize).min(n - 1);
    let mut select = |from: usize, k: usize| -> u64 {
        let (_, x, _) = v[from..].select_nth_unstable(k - from);
        (*x).into()
    };
    let med = select(0, k_med);
    // (k_med <= k90 <= k99; an equal rank is the element selected.)
    let p90 = if k90 > k_med {
        select(k_med + 1, k90)
    } else {
        med
    };
    let p99 = if k99 > k90 { select(k90 + 1, k99) } else { p90 };
    (
        min as f64, med as f64, p90 as f64, p99 as f64, max as f64, sum,
    )
}

impl Accountant {
    pub fn new(opts: AccountOptions) -> Accountant {
        Accountant {
            opts,
            threads: Vec::new(),
            thread_index: HashMap::default(),
            last_thread: None,
            order: Vec::new(),
            store: Store::default(),
            scratch: Vec::new(),
            warnings: Warnings::default(),
            orphan_exits: 0,
            skipped: 0,
        }
    }

    fn thread(&mut self, tid: u32) -> usize {
        if let Some((t, i)) = self.last_thread {
            if t == tid {
                return i;
            }
        }
        let n = self.threads.len();
        let i = *self.thread_index.entry(tid).or_insert(n);
        if i == n {
            self.threads.push(ThreadStack::default());
        }
        self.last_thread = Some((tid, i));
        i
    }

    #[inline]
    fn record_latency(&mut self, id: i32, d: u64) {
        if self.store.push(id, d) {
            self.order.push(id);
        }
    }

    /// Accounts one record (records of a thread must come in time order).
    pub fn add(&mut self, r: &Record<'_>) -> Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        let recursive_only = self.opts.recursive_calls_only;
        let ti = self.thread(r.tid);
        let ts = &mut self.threads[ti];
        if recursive_only && ts.recursion.is_none() {
            ts.recursion = Some(HashMap::default());
        }
        if r.kind.is_entry() {
            ts.frames.push((r.func_id, r.tsc));
            if let Some(rec) = ts.recursion.as_mut() {
                let e = rec.entry(r.func_id).or_insert((0, false));
                e.0 += 1;
                if !e.1 && e.0 == 2 {
                    e.1 = true;
                }
            }
            return Ok(());
        }
        let Some(&(top_id, top_tsc)) = ts.frames.last() else {
            self.orphan_exits += 1;
            return Ok(());
        };
        if top_id == r.func_id {
            let counts = ts
                .recursion
                .as_ref()
                .is_none_or(|m| m.get(&top_id).is_some_and(|e| e.1));
            pop_recursion(ts, top_id);
            ts.frames.pop();
            if counts {
                self.record_latency(top_id, r.tsc.abs_diff(top_tsc));
            }
            return Ok(());
        }
        let mut done = std::mem::take(&mut self.scratch);
        done.clear();
        {
            let found = ts.frames.iter().rposition(|f| f.0 == r.func_id);
            match found {
                Some(at) if self.opts.deduce_sibling_calls => {
                    for &(id, tsc) in &ts.frames[at..] {
                        let counts = ts
                            .recursion
                            .as_ref()
                            .is_none_or(|m| m.get(&id).is_some_and(|e| e.1));
                        if counts {
                            done.push((id, r.tsc.abs_diff(tsc)));
                        }
                    }
                    while ts.frames.len() > at {
                        if let Some((id, _)) = ts.frames.pop() {
                            pop_recursion(ts, id);
                        }
                    }
                }
                _ => {
                    if self.opts.keep_going {
                        self.skipped += 1;
                        self.scratch = done;
                        return Ok(());
                    }
                    return Err(mismatch(r.tid, r.func_id, r.tsc, top_id));
                }
            }
        }
        for &(id, d) in &done {
            self.record_latency(id, d);
        }
        self.scratch = done;
        Ok(())
    }

    /// The rows in llvm-xray's order before sorting (its DenseMap order).
    pub fn rows(mut self, cycle_frequency: u64) -> (Vec<Row>, Warnings) {
        warn_skipped(&mut self.warnings, self.orphan_exits, self.skipped);
        let hashes: Vec<u32> = self
            .order
            .iter()
            .map(|&id| densemap::hash_u32(id as u32))
            .collect();
        let mut rows = Vec::with_capacity(self.order.len());
        for i in densemap::iteration_order(&hashes) {
            let id = self.order[i];
            if let Some(d) = self.store.take(id) {
                rows.push(row(id, d, cycle_frequency));
            }
        }
        (rows, self.warnings)
    }
}

/// Durations by function id: a dense table for the small ids the runtime
/// hands out (from 1), a map for the rest.
#[derive(Default)]
struct Store {
    dense: Vec<Option<Durations>>,
    sparse: HashMap<i32, Durations>,
}

/// Function ids below this are kept in [`Store::dense`].
const DENSE_IDS: i32 = 1 << 22;

impl Store {
    /// Adds a duration; true when `id` is new to the store.
    #[inline(always)]
    fn push(&mut self, id: i32, d: u64) -> bool {
        if (0..DENSE_IDS).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            return match &mut self.dense[i] {
                Some(v) => {
                    v.push(d);
                    false
                }
                slot @ None => {
                    let mut v = Durations::Narrow(Vec::new());
                    v.push(d);
                    *slot = Some(v);
                    true
                }
            };
        }
        match self.sparse.get_mut(&id) {
            Some(v) => {
                v.push(d);
                false
            }
            None => {
                let mut v = Durations::Narrow(Vec::new());
                v.push(d);
                self.sparse.insert(id, v);
                true
            }
        }
    }

    fn take(&mut self, id: i32) -> Option<Durations> {
        if (0..DENSE_IDS).contains(&id) {
            self.dense.get_mut(id as usize).and_then(Option::take)
        } else {
            self.sparse.remove(&id)
        }
    }
}

impl Durations {
    fn len(&self) -> usize {
        match self {
            Durations::Narrow(v) => v.len(),
            Durations::Wide(v) => v.len(),
            Durations::Hist(h) => h.n as usize,
        }
    }

    /// Adds `other`'s durations.
    fn append(&mut self, other: Durations) {
        let listed = self.len() + other.len() <= HIST_FROM;
        match (self, other) {
            (Durations::Narrow(a), Durations::Narrow(b)) if listed => a.extend_from_slice(&b),
            (Durations::Wide(a), Durations::Wide(b)) if listed => a.extend_from_slice(&b),
            (Durations::Wide(a), Durations::Narrow(b)) if listed => {
                a.extend(b.iter().map(|&x| u64::from(x)))
            }
            (Durations::Hist(h), other) => h.absorb(other),
            (this, other) => {
                let mine = std::mem::replace(this, Durations::Narrow(Vec::new()));
                *this = match (mine, other) {
                    (Durations::Narrow(a), Durations::Wide(b)) if listed => {
                        let mut w: Vec<u64> = Vec::with_capacity(a.len() + b.len());
                        w.extend(a.iter().map(|&x| u64::from(x)));
                        w.extend_from_slice(&b);
                        Durations::Wide(w)
                    }
                    (mine, Durations::Hist(mut h)) => {
                        h.absorb(mine);
                        Durations::Hist(h)
                    }
                    (mine, other) => {
                        let mut h = Box::new(Histogram::new());
                        h.absorb(mine);
                        h.absorb(other);
                        Durations::Hist(h)
                    }
                };
            }
        }
    }
}

/// The output row of one function's durations.
fn row(func_id: i32, mut d: Durations, cycle_frequency: u64) -> Row {
    let (count, s) = match &mut d {
        Durations::Narrow(v) => (v.len(), stats(v)),
        Durations::Wide(v) => (v.len(), stats(v)),
        Durations::Hist(h) => (h.n as usize, h.stats()),
    };
    let f = if cycle_frequency != 0 {
        cycle_frequency as f64
    } else {
        1.0
    };
    Row {
        func_id,
        count: count as u64,
        min: s.0 / f,
        median: s.1 / f,
        pct90: s.2 / f,
        pct99: s.3 / f,
        max: s.4 / f,
        sum: s.5 / f,
    }
}

/// Reports the exits skipped: `orphans` without any open call on their
/// thread, `skipped` (with -k) not matching the innermost one.
fn warn_skipped(warnings: &mut Warnings, orphans: u64, skipped: u64) {
    if orphans > 0 {
        warnings.push(
            Position::Unknown,
            format!(
                "{orphans} exits without a matching entry skipped (the trace starts in the middle of calls)"
            ),
        );
    }
    if skipped > 0 {
        warnings.push(
            Position::Unknown,
            format!("{skipped} exits not matching the innermost open call skipped (-k)"),
        );
    }
}

/// The message of an exit that is not the innermost open call.
fn mismatch(tid: u32, func_id: i32, tsc: u64, top_id: i32) -> Error {
    Error::malformed(
        Position::Unknown,
        format!(
            "thread {tid}: exit of function {func_id} at tsc {tsc} does not match the innermost open call (function {top_id}); use -d to deduce sibling calls or -k to skip such records"
        ),
    )
}

/// Where a record lies in the load order: (segment index << 40) + its
/// number in the segment. Orders the functions' first latencies.
type LoadPos = u64;

/// What one segment leaves for the merge: the work that depends on the
/// calls opened before it.
struct SegmentPart {
    tid: u32,
    /// Exits that found the segment's own stack empty: they close calls
    /// opened before the segment (or none: an orphan).
    deferred: Vec<(i32, u64, LoadPos)>,
    /// Calls still open at the segment's end, innermost last.
    open: Vec<(i32, u64)>,
    skipped: u64,
    error: Option<Error>,
    warnings: Warnings,
    /// See [`crate::trace::ThreadCursor::tid_switched`].
    tid_switched: bool,
}

/// One worker's share: the durations of all its segments.
struct WorkerPart {
    store: Store,
    /// Functions in the order they got their first latency here.
    firsts: Vec<(i32, LoadPos)>,
    segments: Vec<SegmentPart>,
}

/// The per-record work of a segment (see [`account_worker`]).
struct SegmentSink<'w> {
    store: &'w mut Store,
    firsts: &'w mut Vec<(i32, LoadPos)>,
    open: Vec<(i32, u64)>,
    deferred: Vec<(i32, u64, LoadPos)>,
    skipped: u64,
    pos: LoadPos,
    tid: u32,
    keep_going: bool,
}

impl crate::record::FunctionSink for SegmentSink<'_> {
    #[inline(always)]
    fn function(&mut self, kind: crate::RecordKind, id: i32, tsc: u64) -> Result<()> {
        self.pos += 1;
        if kind.is_entry() {
            self.open.push((id, tsc));
            return Ok(());
        }
        if let Some(&(top, start)) = self.open.last() {
            if top == id {
                self.open.pop();
                if self.store.push(id, tsc.abs_diff(start)) {
                    self.firsts.push((id, self.pos));
                }
                return Ok(());
            }
        }
        self.other_exit(id, tsc)
    }
}

impl SegmentSink<'_> {
    /// An exit that does not close the segment's innermost open call.
    #[cold]
    fn other_exit(&mut self, id: i32, tsc: u64) -> Result<()> {
        match self.open.last() {
            None => self.deferred.push((id, tsc, self.pos)),
            Some(&(top, _)) => {
                if !self.keep_going {
                    return Err(mismatch(self.tid, id, tsc, top));
                }
                self.skipped += 1;
            }
        }
        Ok(())
    }
}

fn account_worker(
    trace: &crate::Trace<'_>,
    segments: &[(usize, crate::trace::Segment)],
    keep_going: bool,
) -> WorkerPart {
    let mut store = Store::default();
    let mut firsts = Vec::new();
    let mut parts = Vec::new();
    for (index, segment) in segments {
        let tid = trace.threads[segment.thread].tid as u32;
        let mut sink = SegmentSink {
            store: &mut store,
            firsts: &mut firsts,
            open: Vec::new(),
            deferred: Vec::new(),
            skipped: 0,
            pos: (*index as u64) << 40,
            tid,
            keep_going,
        };
        let mut cursor = trace.segment_cursor(segment);
        let res = cursor.drive_functions(&mut sink);
        parts.push(SegmentPart {
            tid,
            deferred: sink.deferred,
            open: sink.open,
            skipped: sink.skipped,
            error: res.err(),
            warnings: std::mem::take(&mut cursor.warnings),
            tid_switched: cursor.tid_switched,
        });
    }
    WorkerPart {
        store,
        firsts,
        segments: parts,
    }
}

/// `account` rows (before sorting) of an FDR trace with the default
/// matching (`-k` allowed, not `-d` or `-r`), the load order cut into
/// parts accounted on `workers` threads. The same rows, row order and
/// warnings as [`Accountant`] fed in load order: each part runs the stack
/// machine from an empty stack and defers the exits that reach below it;
/// the merge replays those, in order, against the stacks the parts before
/// left open.
pub fn account_fdr_parallel(
    trace: &crate::Trace<'_>,
    keep_going: bool,
    workers: usize,
    parts: usize,
) -> Result<(Vec<Row>, Warnings)> {
    let results = trace.par_groups(
        workers,
        parts,
        |segments| account_worker(trace, segments, keep_going),
        |w| w.segments.iter().any(|p| p.tid_switched),
    );
    let Some(mut results) = results else {
        let mut acc = Accountant::new(AccountOptions {
            keep_going,
            deduce_sibling_calls: false,
            recursive_calls_only: false,
        });
        let mut warnings = trace.try_for_each(|r| acc.add(r))?;
        let (rows, w) = acc.rows(trace.header.cycle_frequency);
        warnings.extend(w);
        return Ok((rows, warnings));
    };
    let mut warnings = Warnings::default();
    let mut stacks: HashMap<u32, Vec<(i32, u64)>> = HashMap::default();
    let mut replayed = Store::default();
    let mut firsts: Vec<(i32, LoadPos)> = Vec::new();
    let (mut orphans, mut skipped) = (0u64, 0u64);
    for w in &mut results {
        firsts.append(&mut w.firsts);
        for part in w.segments.drain(..) {
            let stack = stacks.entry(part.tid).or_default();
            for (id, tsc, pos) in part.deferred {
                match stack.last() {
                    None => orphans += 1,
                    Some(&(top, start)) if top == id => {
                        stack.pop();
                        if replayed.push(id, tsc.abs_diff(start)) {
                            firsts.push((id, pos));
                        }
                    }
                    Some(&(top, _)) => {
                        if !keep_going {
                            return Err(mismatch(part.tid, id, tsc, top));
                        }
                        skipped += 1;
                    }
                }
            }
            if let Some(e) = part.error {
                return Err(e);
            }
            stack.extend(part.open);
            skipped += part.skipped;
            warnings.extend(part.warnings);
        }
    }
    warn_skipped(&mut warnings, orphans, skipped);
    // First-latency order over the whole load order.
    firsts.sort_by_key(|&(_, pos)| pos);
    let mut seen: rustc_hash::FxHashSet<i32> = Default::default();
    let order: Vec<i32> = firsts
        .into_iter()
        .filter(|&(id, _)| seen.insert(id))
        .map(|(id, _)| id)
        .collect();
    let hashes: Vec<u32> = order
        .iter()
        .map(|&id| densemap::hash_u32(id as u32))
        .collect();
    let mut gathered: Vec<(i32, Durations)> = Vec::with_capacity(order.len());
    for i in densemap::iteration_order(&hashes) {
        let id = order[i];
        let mut all: Option<Durations> = None;
        for d in results
            .iter_mut()
            .map(|w| &mut w.store)
            .chain(std::iter::once(&mut replayed))
            .filter_map(|s| s.take(id))
        {
            match all.as_mut() {
                None => all = Some(d),
                Some(a) => a.append(d),
            }
        }
        if let Some(d) = all {
            gathered.push((id, d));
        }
    }
    drop(results);
    let freq = trace.header.cycle_frequency;
    Ok((rows_parallel(gathered, freq, workers), warnings))
}

/// The rows of `gathered` (in order), their statistics computed on
/// `workers` threads (the biggest functions spread first).
fn rows_parallel(gathered: Vec<(i32, Durations)>, freq: u64, workers: usize) -> Vec<Row> {
    let n = gathered.len();
    if workers <= 1 || n <= 1 {
        return gathered
            .into_iter()
            .map(|(id, d)| row(id, d, freq))
            .collect();
    }
    let mut by_size: Vec<(usize, i32, Durations)> = gathered
        .into_iter()
        .enumerate()
        .map(|(i, (id, d))| (i, id, d))
        .collect();
    by_size.sort_by_key(|(_, _, d)| std::cmp::Reverse(d.len()));
    /// Row index, function id, its durations.
    type Work = (usize, i32, Durations);
    let mut bins: Vec<(usize, Vec<Work>)> = (0..workers).map(|_| (0, Vec::new())).collect();
    for item in by_size {
        if let Some(bin) = bins.iter_mut().min_by_key(|b| b.0) {
            bin.0 += item.2.len();
            bin.1.push(item);
        }
    }
    let mut rows: Vec<Option<Row>> = (0..n).map(|_| None).collect();
    let done: Vec<Vec<(usize, Row)>> = crate::trace::par_map(bins, |(_, items)| {
        items
            .into_iter()
            .map(|(i, id, d)| (i, row(id, d, freq)))
            .collect()
    });
    for (i, r) in done.into_iter().flatten() {
        rows[i] = Some(r);
    }
    rows.into_iter().flatten().collect()
}

fn pop_recursion(ts: &mut ThreadStack, id: i32) {
    if let Some(rec) = ts.recursion.as_mut() {
        if let Some(e) = rec.get_mut(&id) {
            e.0 = e.0.saturating_sub(1);
            if e.1 && e.0 == 0 {
                e.1 = false;
            }
        }
    }
}

/// Sorts rows like llvm-xray (stable, so ties keep its map order) and
/// keeps the first `top` (0: all).
pub fn sort_rows(rows: &mut Vec<Row>, field: SortField, descending: bool, top: usize) {
    let key = |r: &Row| -> f64 {
        match field {
            SortField::FuncId => r.func_id as f64,
            SortField::Count => r.count as f64,
            SortField::Min => r.min,
            SortField::Med => r.median,
            SortField::Pct90 => r.pct90,
            SortField::Pct99 => r.pct99,
            SortField::Max => r.max,
            SortField::Sum => r.sum,
            SortField::Func => 0.0,
        }
    };
    if field != SortField::Func {
        rows.sort_by(|a, b| {
            let (x, y) = (key(a), key(b));
            let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
            if descending {
                o.reverse()
            } else {
                o
            }
        });
    }
    if top > 0 {
        rows.truncate(top);
    }
}

/// C's `%e` (as LLVM's `raw_ostream << double` prints).
pub fn fmt_exp(v: f64) -> String {
    let s = format!("{v:.6e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// The text table (`-format=text`).
pub fn write_text<W: Write + ?Sized>(
    out: &mut W,
    total_functions: usize,
    rows: &[Row],
    names: &FunctionNames,
) -> std::io::Result<()> {
    writeln!(out, "Functions with latencies: {total_functions}")?;
    writeln!(
        out,
        "{:>9} {:>10} [{:>9}, {:>9}, {:>9}, {:>9}, {:>9}] {:>9}  {:<12}",
        "funcid", "count", "min", "med", "90p", "99p", "max", "sum", "function"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:>9} {:>10} [{:>9.6}, {:>9.6}, {:>9.6}, {:>9.6}, {:>9.6}] {:>9.6}  {}: {}",
            r.func_id,
            r.count,
            r.min,
            r.median,
            r.pct90,
            r.pct99,
            r.max,
            r.sum,
            names.file_line_column(r.func_id),
            names.symbol_or_number(r.func_id)
        )?;
    }
    Ok(())
}

/// The CSV table (`-format=csv`).
pub fn write_csv<W: Write + ?Sized>(
    out: &mut W,
    rows: &[Row],
    names: &FunctionNames,
) -> std::io::Result<()> {
    writeln!(
        out,
        "funcid,count,min,median,90%ile,99%ile,max,sum,debug,function"
    )?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},\"{}\",\"{}\"",
            r.func_id,
            r.count,
            fmt_exp(r.min),
            fmt_exp(r.median),
            fmt_exp(r.pct90),
            fmt_exp(r.pct99),
            fmt_exp(r.max),
            fmt_exp(r.sum),
            names.file_line_column(r.func_id),
            names.symbol_or_number(r.func_id)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{fmt_exp, stats, Durations, HIST_FROM};

    /// The histogram gives the listed durations' statistics, whatever the
    /// mix of short and long calls, and so does merging parts.
    #[test]
    fn histogram_statistics_equal_list_statistics() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 20
        };
        for (n, spread) in [
            (HIST_FROM + 5, 300u64),
            (300_000, 70_000),
            (200_000, 1 << 33),
        ] {
            let values: Vec<u64> = (0..n).map(|_| next() % spread).collect();
            let mut listed = values.clone();
            let want = stats(&mut listed);
            let mut one = Durations::Narrow(Vec::new());
            for &v in &values {
                one.push(v);
            }
            assert!(matches!(one, Durations::Hist(_)));
            let mut parts = Durations::Narrow(Vec::new());
            for chunk in values.chunks(n / 3 + 1) {
                let mut p = Durations::Narrow(Vec::new());
                for &v in chunk {
                    p.push(v);
                }
                parts.append(p);
            }
            for d in [one, parts] {
                let Durations::Hist(mut h) = d else {
                    panic!("not a histogram");
                };
                assert_eq!(h.n as usize, n);
                assert_eq!(h.stats(), want, "n={n} spread={spread}");
            }
        }
    }

    #[test]
    fn exponent_format_is_c_like() {
        assert_eq!(fmt_exp(3.47e-7), "3.470000e-07");
        assert_eq!(fmt_exp(0.0), "0.000000e+00");
        assert_eq!(fmt_exp(1.717987), "1.717987e+00");
        assert_eq!(fmt_exp(123456.0), "1.234560e+05");
    }
}
