//! `account`: per-function call latency statistics (llvm-xray's
//! `LatencyAccountant`), with llvm-xray's output formats.
//!
//! Differences from llvm-xray 14, on purpose: records are accounted per
//! thread without llvm-xray's cross-thread "TSC went backwards" rejection
//! (which drops or refuses ordinary multi-threaded traces), and exits
//! without any entry on their thread's stack (a trace that starts
//! mid-call, ring-buffer overwrite) are counted as warnings, not errors.

use crate::fxhash::FxMap as HashMap;
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
    /// Durations by function id (small ids; the runtime numbers from 1).
    dense: Vec<Option<Durations>>,
    latencies: HashMap<i32, Durations>,
    scratch: Vec<(i32, u64)>,
    pub warnings: Warnings,
    orphan_exits: u64,
    skipped: u64,
}

/// Durations of one function; u32 while they fit (halves memory on big
/// traces), u64 after.
enum Durations {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Durations {
    fn push(&mut self, d: u64) {
        match self {
            Durations::Narrow(v) => match u32::try_from(d) {
                Ok(x) => v.push(x),
                Err(_) => {
                    let mut w: Vec<u64> = v.iter().map(|&x| u64::from(x)).collect();
                    w.push(d);
                    *self = Durations::Wide(w);
                }
            },
            Durations::Wide(v) => v.push(d),
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
    let sum = v.iter().fold(0.0f64, |acc, &x| acc + x.into() as f64);
    let min = v.iter().min().map(|&x| x.into()).unwrap_or(0) as f64;
    let max = v.iter().max().map(|&x| x.into()).unwrap_or(0) as f64;
    let n = v.len();
    let mut pick = |k: usize| -> f64 {
        let k = k.min(n - 1);
        let (_, x, _) = v.select_nth_unstable(k);
        (*x).into() as f64
    };
    let med = pick(n / 2);
    let p90 = pick((n as f64 * 0.9).floor() as usize);
    let p99 = pick((n as f64 * 0.99).floor() as usize);
    (min, med, p90, p99, max, sum)
}

impl Accountant {
    pub fn new(opts: AccountOptions) -> Accountant {
        Accountant {
            opts,
            threads: Vec::new(),
            thread_index: HashMap::default(),
            last_thread: None,
            order: Vec::new(),
            dense: Vec::new(),
            latencies: HashMap::default(),
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
        const DENSE: i32 = 1 << 22;
        if (0..DENSE).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            match &mut self.dense[i] {
                Some(v) => v.push(d),
                slot @ None => {
                    self.order.push(id);
                    let mut v = Durations::Narrow(Vec::new());
                    v.push(d);
                    *slot = Some(v);
                }
            }
            return;
        }
        match self.latencies.get_mut(&id) {
            Some(v) => v.push(d),
            None => {
                self.order.push(id);
                let mut v = Durations::Narrow(Vec::new());
                v.push(d);
                self.latencies.insert(id, v);
            }
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
                    return Err(Error::malformed(
                        Position::Unknown,
                        format!(
                            "thread {}: exit of function {} at tsc {} does not match the innermost open call (function {top_id}); use -d to deduce sibling calls or -k to skip such records",
                            r.tid, r.func_id, r.tsc
                        ),
                    ));
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
        if self.orphan_exits > 0 {
            self.warnings.push(
                Position::Unknown,
                format!(
                    "{} exits without a matching entry skipped (the trace starts in the middle of calls)",
                    self.orphan_exits
                ),
            );
        }
        if self.skipped > 0 {
            self.warnings.push(
                Position::Unknown,
                format!(
                    "{} exits not matching the innermost open call skipped (-k)",
                    self.skipped
                ),
            );
        }
        let hashes: Vec<u32> = self
            .order
            .iter()
            .map(|&id| densemap::hash_u32(id as u32))
            .collect();
        let mut rows = Vec::with_capacity(self.order.len());
        for i in densemap::iteration_order(&hashes) {
            let id = self.order[i];
            let taken = if (0..1 << 22).contains(&id) {
                self.dense.get_mut(id as usize).and_then(Option::take)
            } else {
                self.latencies.remove(&id)
            };
            let Some(mut d) = taken else {
                continue;
            };
            let (count, s) = match &mut d {
                Durations::Narrow(v) => (v.len(), stats(v)),
                Durations::Wide(v) => (v.len(), stats(v)),
            };
            let f = if cycle_frequency != 0 {
                cycle_frequency as f64
            } else {
                1.0
            };
            rows.push(Row {
                func_id: id,
                count: count as u64,
                min: s.0 / f,
                median: s.1 / f,
                pct90: s.2 / f,
                pct99: s.3 / f,
                max: s.4 / f,
                sum: s.5 / f,
            });
        }
        (rows, self.warnings)
    }
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
    use super::fmt_exp;

    #[test]
    fn exponent_format_is_c_like() {
        assert_eq!(fmt_exp(3.47e-7), "3.470000e-07");
        assert_eq!(fmt_exp(0.0), "0.000000e+00");
        assert_eq!(fmt_exp(1.717987), "1.717987e+00");
        assert_eq!(fmt_exp(123456.0), "1.234560e+05");
    }
}
