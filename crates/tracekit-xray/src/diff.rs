//! `tracekit diff A B` on two XRay logs of one binary, as data
//! ([`tracekit_report::Report`]): per function (matched by function id,
//! named through the instrumentation map), the calls, their total time and
//! their median and 99th-percentile durations before and after, as
//! llvm-xray's `graph-diff` compares them but in a table, and whether the
//! durations changed beyond their spread (the Mann–Whitney U test over the
//! two sides' calls, `tracekit_report::stats`). Rows are ranked by how much
//! the function's total time changed.
//!
//! Calls are paired as [`crate::calls`] pairs them (every call with both
//! its records; an exit closes the calls above it, as `account -d`), and
//! durations are seconds at each log's own cycle frequency, so logs of two
//! clock modes compare.
//!
//! **Architecture Invariant:** memory is per function: its count and sum,
//! and at most [`Options::samples`] durations (past that, a uniform sample
//! of them, reservoir sampling with a fixed seed; the percentiles and the
//! test then come from that sample, and a note says so).

use rustc_hash::FxHashMap;
use tracekit_core::{Result, Warnings};
use tracekit_report::diff as d;
use tracekit_report::stats::percentile;
use tracekit_report::{Column, Level, Note, Report, Section, Table, Unit, Value};

use crate::calls::{for_each_call, CallStats};
use crate::names::FunctionNames;
use crate::summary::ticks_to_secs;
use crate::trace::Trace;

/// What the comparison shows.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows of the functions table (the rest are counted, with totals).
    pub top: usize,
    /// Durations kept per function and side for percentiles and the test.
    pub samples: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 20,
            samples: 100_000,
        }
    }
}

#[derive(Default)]
struct Func {
    calls: u64,
    sum_ticks: u128,
    /// Durations in ticks (all of them, or a uniform sample).
    samples: Vec<u64>,
}

/// One log's calls per function, read by [`Side::read`].
pub struct Side {
    funcs: FxHashMap<i32, Func>,
    stats: CallStats,
    freq: u64,
    sampled: bool,
}

/// A small deterministic generator for reservoir sampling (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

impl Side {
    /// Reads every call of `trace`; returns it with the log's warnings.
    pub fn read(trace: &Trace<'_>, opts: &Options) -> Result<(Side, Warnings)> {
        let mut w = trace.warnings.clone();
        let s = side(trace, opts, &mut w)?;
        Ok((s, w))
    }
}

fn side(trace: &Trace<'_>, opts: &Options, warnings: &mut Warnings) -> Result<Side> {
    let mut funcs: FxHashMap<i32, Func> = FxHashMap::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut sampled = false;
    let cap = opts.samples.max(1);
    let (stats, w) = for_each_call(trace, |c| {
        let f = funcs.entry(c.function_id).or_default();
        f.calls += 1;
        f.sum_ticks += u128::from(c.duration_tsc);
        if f.samples.len() < cap {
            f.samples.push(c.duration_tsc);
        } else {
            sampled = true;
            let j = rng.below(f.calls) as usize;
            if j < cap {
                f.samples[j] = c.duration_tsc;
            }
        }
        Ok(())
    })?;
    warnings.extend(w);
    for f in funcs.values_mut() {
        f.samples.sort_unstable();
    }
    Ok(Side {
        funcs,
        stats,
        freq: trace.header.cycle_frequency,
        sampled,
    })
}

impl Side {
    fn ns(&self, ticks: u64) -> f64 {
        ticks_to_secs(self.freq, ticks) * 1e9
    }
    fn sum_ns(&self, f: &Func) -> f64 {
        // Through f64: a sum of ticks past u64 is no longer exact anyway.
        let s = f.sum_ticks as f64;
        if self.freq == 0 {
            s
        } else {
            s / self.freq as f64 * 1e9
        }
    }
    fn q(&self, f: Option<&Func>, q: f64) -> Option<f64> {
        f.and_then(|f| percentile(&f.samples, q))
            .map(|t| self.ns(t))
    }
}

/// Compares two logs ([`Side::read`]) of the binary `names` describes
/// (calls that could not be paired are counted in the totals).
pub fn diff(
    b: &Side,
    before_name: &str,
    a: &Side,
    after_name: &str,
    names: &FunctionNames,
    opts: &Options,
) -> Report {
    let mut rep = Report::new(
        "xray",
        format!("LLVM XRay logs {before_name} → {after_name}"),
    );
    rep.input(before_name, Some("LLVM XRay".into()));
    rep.input(after_name, Some("LLVM XRay".into()));

    let total_ns = |s: &Side| s.funcs.values().map(|f| s.sum_ns(f)).sum::<f64>();
    let mut items = Vec::new();
    items.extend(d::items(
        "calls",
        "calls",
        Unit::Count,
        d::uint(Some(b.stats.calls), Some(a.stats.calls)),
    ));
    items.extend(d::items(
        "functions",
        "functions called",
        Unit::Count,
        d::uint(Some(b.funcs.len() as u64), Some(a.funcs.len() as u64)),
    ));
    items.extend(d::items(
        "time",
        "time in calls (nested calls counted in each)",
        Unit::Ns,
        d::float(Some(total_ns(b)), Some(total_ns(a))),
    ));
    items.extend(d::items(
        "orphan_exits",
        "exits without entry",
        Unit::Count,
        d::uint(Some(b.stats.orphan_exits), Some(a.stats.orphan_exits)),
    ));
    items.extend(d::items(
        "unfinished",
        "calls never returned",
        Unit::Count,
        d::uint(Some(b.stats.unfinished), Some(a.stats.unfinished)),
    ));
    rep.push(d::compact_text(Section::summary("totals", "Totals", items)));

    let mut cols = vec![
        Column::new("function", "function", Unit::Text),
        Column::new("id", "function id", Unit::Id),
        Column::new("presence", "in", Unit::Text),
    ];
    cols.extend(d::columns("calls", "calls", Unit::Count));
    cols.extend(d::columns("sum", "total time", Unit::Ns));
    cols.extend(d::columns("p50", "median", Unit::Ns));
    cols.extend(d::columns("p99", "p99", Unit::Ns));
    cols.extend(d::test_columns());
    cols.push(d::impact_column(Unit::Ns));
    let mut ids: Vec<i32> = b.funcs.keys().chain(a.funcs.keys()).copied().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut rows: Vec<(f64, i32, Vec<Value>)> = Vec::with_capacity(ids.len());
    for id in ids {
        let (x, y) = (b.funcs.get(&id), a.funcs.get(&id));
        let presence = match (x, y) {
            (Some(_), Some(_)) => "both",
            (None, _) => "added",
            (_, None) => "removed",
        };
        let sb = x.map_or(0.0, |f| b.sum_ns(f));
        let sa = y.map_or(0.0, |f| a.sum_ns(f));
        let mut row: Vec<Value> = vec![
            names.symbol_or_number(id).to_string().into(),
            Value::Int(i64::from(id)),
            presence.into(),
        ];
        row.extend(d::uint(
            Some(x.map_or(0, |f| f.calls)),
            Some(y.map_or(0, |f| f.calls)),
        ));
        row.extend(d::float(Some(sb), Some(sa)));
        row.extend(d::float(b.q(x, 0.5), a.q(y, 0.5)));
        row.extend(d::float(b.q(x, 0.99), a.q(y, 0.99)));
        let secs = |s: &Side, f: Option<&Func>| -> Vec<f64> {
            f.map_or_else(Vec::new, |f| f.samples.iter().map(|&t| s.ns(t)).collect())
        };
        row.extend(d::test(&secs(b, x), &secs(a, y)));
        let impact = (sa - sb).abs();
        row.push(impact.into());
        rows.push((impact, id, row));
    }
    rows.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
    let mut t = Table::new(cols).sorted_by("impact", true);
    for (_, _, r) in rows {
        t.row(r);
    }
    t.keep(
        opts.top,
        &[
            "calls_before",
            "calls_after",
            "calls_delta",
            "sum_before",
            "sum_after",
            "sum_delta",
            "impact",
        ],
    );
    rep.push(d::compact_text(Section::table(
        "functions",
        "Functions, by change of total time",
        t,
    )));
    let mut notes = vec![Note {
        level: Level::Info,
        text: "significance: two-sided Mann–Whitney U test of the calls' durations, \
               before against after, at p < 0.05"
            .into(),
    }];
    if b.sampled || a.sampled {
        notes.push(Note {
            level: Level::Info,
            text: format!(
                "functions with more than {} calls: percentiles and the test use a uniform \
                 sample of that many of their calls (counts and totals use every call)",
                opts.samples
            ),
        });
    }
    rep.push(Section::notes("notes", "Notes", notes));
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_report::Body;

    fn functions(r: &Report) -> &Table {
        match &r.find("functions").map(|s| &s.body) {
            Some(Body::Table(t)) => t,
            b => panic!("{b:?}"),
        }
    }

    #[test]
    fn a_sample_of_the_calls_keeps_counts_and_totals_exact() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/corpus/xray/recursion"
        );
        let a = std::fs::read(format!("{dir}/recursion.fdr.xray")).unwrap();
        let b = std::fs::read(format!("{dir}/recursion.basic.xray")).unwrap();
        let (ta, tb) = (Trace::open(&a).unwrap(), Trace::open(&b).unwrap());
        let names = FunctionNames::default();
        let run = |samples: usize| {
            let opts = Options { top: 20, samples };
            let (sa, _) = Side::read(&ta, &opts).unwrap();
            let (sb, _) = Side::read(&tb, &opts).unwrap();
            (sa.sampled, diff(&sa, "a", &sb, "b", &names, &opts))
        };
        let (sampled, all) = run(100_000);
        assert!(!sampled);
        let (sampled, few) = run(5);
        assert!(sampled);
        let (ta, tf) = (functions(&all), functions(&few));
        let col = |t: &Table, k: &str| t.column(k).unwrap();
        for k in ["calls_before", "calls_after", "sum_before", "sum_after"] {
            let x: Vec<&Value> = ta.rows.iter().map(|r| &r[col(ta, k)]).collect();
            let y: Vec<&Value> = tf.rows.iter().map(|r| &r[col(tf, k)]).collect();
            assert_eq!(x, y, "{k}");
        }
        // fib's 177 calls a side: with 5 kept, the test sees 5 against 5.
        let fib = tf
            .rows
            .iter()
            .find(|r| r[0] == Value::Text("1".into()) || r[1] == Value::Int(1))
            .unwrap();
        assert_ne!(fib[col(tf, "p_value")], Value::Null);
        let notes = format!("{:?}", few.find("notes").unwrap().body);
        assert!(notes.contains("uniform sample"), "{notes}");
    }
}
