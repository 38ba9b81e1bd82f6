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

mod durations;
mod output;
mod parallel;

pub use durations::Row;
pub use output::{fmt_exp, sort_rows, write_csv, write_text};
pub use parallel::account_fdr_parallel;

use rustc_hash::FxHashMap as HashMap;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::densemap;
use crate::names::FunctionNames;
use crate::record::Record;
use durations::{row, Store};

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
    tid: u32,
    frames: Vec<(i32, u64)>,
    /// Per function: depth on this stack and whether it recursed.
    recursion: Option<HashMap<i32, (u32, bool)>>,
}

/// Accumulates call durations per function.
pub struct Accountant<'n> {
    opts: AccountOptions,
    /// Names the functions of llvm-xray's report of a record it cannot
    /// process (`#id` without).
    names: Option<&'n FunctionNames>,
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
    /// See [`Accountant::orphan_exits_are_errors`].
    strict_orphans: bool,
}
impl<'n> Accountant<'n> {
    pub fn new(opts: AccountOptions) -> Accountant<'n> {
        Accountant {
            opts,
            names: None,
            threads: Vec::new(),
            thread_index: HashMap::default(),
            last_thread: None,
            order: Vec::new(),
            store: Store::default(),
            scratch: Vec::new(),
            warnings: Warnings::default(),
            orphan_exits: 0,
            skipped: 0,
            strict_orphans: false,
        }
    }

    /// Names functions in the report of a record that cannot be processed.
    pub fn with_names(mut self, names: &'n FunctionNames) -> Self {
        self.names = Some(names);
        self
    }

    /// An exit on an empty stack is an error (a warning with -k) in
    /// llvm-xray's words, as llvm-xray treats it, instead of a counted,
    /// set-aside record. For inputs that cannot have lost their oldest
    /// records (YAML traces, where llvm-xray's own tests expect this).
    pub fn orphan_exits_are_errors(mut self, yes: bool) -> Self {
        self.strict_orphans = yes;
        self
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
            self.threads.push(ThreadStack {
                tid,
                ..ThreadStack::default()
            });
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
        // Every record's thread has a stack, as in llvm-xray (whose report
        // of a record it cannot process lists them all).
        let ti = self.thread(r.tid);
        if r.kind.is_event() {
            return Ok(());
        }
        let recursive_only = self.opts.recursive_calls_only;
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
            if self.strict_orphans {
                return self.unprocessed(r);
            }
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
                    self.scratch = done;
                    if self.opts.keep_going && !self.strict_orphans {
                        self.skipped += 1;
                        return Ok(());
                    }
                    // Not the innermost open call and (with -d) not open
                    // at all on this thread.
                    return self.unprocessed(r);
                }
            }
        }
        for &(id, d) in &done {
            self.record_latency(id, d);
        }
        self.scratch = done;
        Ok(())
    }

    /// A record the stack machine cannot process (an exit on an empty
    /// stack of a YAML trace, an exit that is not the innermost open call
    /// and, with -d, not open at all): llvm-xray's report of it, an error,
    /// or with -k a warning (the record is skipped).
    fn unprocessed(&mut self, r: &Record<'_>) -> Result<()> {
        let report = self.report(r);
        if !self.opts.keep_going {
            return Err(Error::Other(report));
        }
        self.warnings.push(Position::Unknown, report);
        Ok(())
    }

    /// llvm-xray's report of a record it could not process: the record,
    /// then every thread's stack, innermost call first (`#depth\tname`,
    /// or `(empty stack)`), threads in the order of llvm-xray's DenseMap of
    /// thread ids.
    pub fn report(&self, r: &Record<'_>) -> String {
        use std::fmt::Write;
        let kind = match r.kind {
            crate::RecordKind::Enter => "enter",
            crate::RecordKind::EnterArg => "enter-arg",
            crate::RecordKind::Exit => "exit",
            crate::RecordKind::TailExit => "tail-exit",
            crate::RecordKind::CustomEvent => "custom-event",
            crate::RecordKind::TypedEvent => "typed-event",
        };
        // llvm-xray's format string closes the braces twice.
        let mut s = format!(
            "Error processing record: {{type: {}; cpu: {}; record-type: {kind}; function-id: {}; tsc: {}; thread-id: {}; process-id: {}}}}}",
            r.record_type, r.cpu, r.func_id, r.tsc, r.tid, r.pid
        );
        let hashes: Vec<u32> = self
            .threads
            .iter()
            .map(|t| densemap::hash_u32(t.tid))
            .collect();
        for i in densemap::iteration_order(&hashes) {
            let t = &self.threads[i];
            let _ = write!(s, "\nThread ID: {}", t.tid);
            if t.frames.is_empty() {
                s.push_str("\n  (empty stack)");
            }
            for (depth, &(id, _)) in t.frames.iter().enumerate().rev() {
                let name = match self.names {
                    Some(n) => n.symbol_or_number(id).to_string(),
                    None => format!("#{id}"),
                };
                let _ = write!(s, "\n  #{}\t{name}", depth + 1);
            }
        }
        s
    }

    /// The rows in llvm-xray's order before sorting (its DenseMap order).
    pub fn rows(mut self, cycle_frequency: u64) -> (Vec<Row>, Warnings) {
        warn_skipped(&mut self.warnings, self.orphan_exits, self.skipped);
        let open: u64 = self.threads.iter().map(|t| t.frames.len() as u64).sum();
        if open > 0 {
            self.warnings
                .push(Position::Unknown, crate::record::open_calls_message(open));
        }
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
/// Reports the exits skipped: `orphans` without any open call on their
/// thread, `skipped` (with -k) not matching the innermost one.
fn warn_skipped(warnings: &mut Warnings, orphans: u64, skipped: u64) {
    if orphans > 0 {
        warnings.push(
            Position::Unknown,
            crate::record::orphan_exits_message(orphans),
        );
    }
    if skipped > 0 {
        warnings.push(
            Position::Unknown,
            format!("{skipped} exits not matching the innermost open call skipped (-k)"),
        );
    }
}

/// An exit that is not the innermost open call, found by a part of the
/// parallel pass (which then hands over to the sequential one for
/// llvm-xray's report).
fn mismatch(tid: u32, func_id: i32, tsc: u64, top_id: i32) -> Error {
    Error::malformed(
        Position::Unknown,
        format!(
            "thread {tid}: exit of function {func_id} at tsc {tsc} does not match the innermost open call (function {top_id})"
        ),
    )
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
