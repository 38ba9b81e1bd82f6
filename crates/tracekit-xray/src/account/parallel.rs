//! `account` on all cores: the load order cut into segments, each run
//! from an empty stack, merged in order.

use rustc_hash::FxHashMap as HashMap;

use tracekit_core::{Error, Result, Warnings};

use super::durations::{row, Durations, Row, Store};
use super::{mismatch, warn_skipped, AccountOptions, Accountant};
use crate::densemap;
use crate::names::FunctionNames;

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
/// left open. A record it cannot process (and any decoding error) hands
/// the whole trace to the sequential [`Accountant`], whose error (llvm-xray's
/// report of the record, functions named by `names`) or result it returns.
pub fn account_fdr_parallel(
    trace: &crate::Trace<'_>,
    keep_going: bool,
    workers: usize,
    parts: usize,
    names: &FunctionNames,
) -> Result<(Vec<Row>, Warnings)> {
    // Only binary FDR logs have buffers to cut at; the rest run in order.
    let results = if trace.is_fdr_log() {
        trace.par_groups(
            workers,
            parts,
            |segments| account_worker(trace, segments, keep_going),
            |w| w.segments.iter().any(|p| p.tid_switched),
        )
    } else {
        None
    };
    let sequential = || -> Result<(Vec<Row>, Warnings)> {
        let mut acc = Accountant::new(AccountOptions {
            keep_going,
            deduce_sibling_calls: false,
            recursive_calls_only: false,
        })
        .with_names(names);
        let mut warnings = trace.try_for_each(|r| acc.add(r))?;
        let (rows, w) = acc.rows(trace.header.cycle_frequency);
        warnings.extend(w);
        Ok((rows, warnings))
    };
    let Some(mut results) = results else {
        return sequential();
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
                    Some(_) => {
                        if !keep_going {
                            return sequential();
                        }
                        skipped += 1;
                    }
                }
            }
            if part.error.is_some() {
                return sequential();
            }
            stack.extend(part.open);
            skipped += part.skipped;
            warnings.extend(part.warnings);
        }
    }
    warn_skipped(&mut warnings, orphans, skipped);
    let open: u64 = stacks.values().map(|s| s.len() as u64).sum();
    if open > 0 {
        warnings.push(
            tracekit_core::Position::Unknown,
            crate::record::open_calls_message(open),
        );
    }
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
