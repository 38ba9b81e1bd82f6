//! `tracekit report` on an XRay trace, as data ([`tracekit_report::Report`]).
//!
//! One pass over the trace (llvm-xray's load order) feeds:
//! * the [`Profile`] (self and total time per function and per call path:
//!   the text report's rankings and the flame graph);
//! * an [`Accountant`] with `-k` (the latency statistics of `tracekit xray
//!   account -k`: count, min, median, 90th and 99th percentiles, max, sum);
//! * [`CallStacks`] (calls paired as the timeline pairs them): a histogram
//!   of call durations, and each call as a span on its thread's lane while
//!   the trace has at most [`Options::timeline_calls`] calls (past that, the
//!   lanes are dropped and only the per-thread aggregates stay);
//! * per-thread aggregates (calls, first and last record).
//!
//! The text layout is the one `tracekit report` has always printed (the
//! sections carry it verbatim); JSON and HTML draw the same data.
//!
//! **Architecture Invariant:** memory is what the three analyses keep
//! (call paths, per-function durations as `account` keeps them, open
//! calls per thread) plus at most `timeline_calls` spans.

use std::fmt::Write as _;

use rustc_hash::FxHashMap;
use tracekit_core::{Result, Warnings};
use tracekit_report::{
    Body, Bucket, Column, Flame, Histogram, Item, Lane, Level, MoreStacks, Note, Report, Section,
    Span, SpanView, Spans, Stack, Table, TextForm, Unit, Value,
};

use crate::account::{AccountOptions, Accountant};
use crate::calls::CallStacks;
use crate::names::FunctionNames;
use crate::profile::{FunctionTotals, Profile};
use crate::summary::ticks_to_secs;
use crate::trace::Trace;

/// What the report shows.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows of the text report's rankings (the CLI's `--top`).
    pub top: usize,
    /// Rows of the functions table (the rest are summed on its last line).
    pub functions: usize,
    /// Stacks of the flame graph (the lightest beyond are summed).
    pub flame_stacks: usize,
    /// Per-thread timelines are drawn for traces of at most this many calls.
    pub timeline_calls: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 20,
            functions: 200,
            flame_stacks: 2000,
            timeline_calls: 5000,
        }
    }
}

/// Per-thread aggregates.
#[derive(Debug, Clone, Copy)]
struct ThreadAgg {
    pid: u32,
    tid: u32,
    entries: u64,
    first: u64,
    last: u64,
}

/// A call kept for the timelines.
struct CallSpan {
    lane: u32,
    function: i32,
    entry: u64,
    duration: u64,
    depth: u32,
    open: bool,
}

/// Builds the report of `trace` (named `name`). Returns it with the
/// warnings `tracekit report` prints (the trace's and the profile's).
pub fn build(
    trace: &Trace<'_>,
    names: &FunctionNames,
    name: &str,
    opts: &Options,
) -> Result<(Report, Warnings)> {
    let freq = trace.header.cycle_frequency;
    let secs = |t: u64| ticks_to_secs(freq, t);
    let mut profile = Profile::default();
    let mut acc = Accountant::new(AccountOptions {
        keep_going: true,
        deduce_sibling_calls: false,
        recursive_calls_only: false,
    })
    .orphan_exits_are_errors(trace.yaml.is_some());
    let mut stacks = CallStacks::new();
    let mut threads: Vec<ThreadAgg> = Vec::new();
    let mut thread_of: FxHashMap<(u32, u32), usize> = FxHashMap::default();
    let mut lane_of_tid: FxHashMap<u32, usize> = FxHashMap::default();
    let mut cached: Option<((u32, u32), usize)> = None;
    let mut spans: Vec<CallSpan> = Vec::new();
    let mut too_many = false;
    let mut durations = [0u64; 65];
    let mut warnings = trace.warnings.clone();
    warnings.extend(trace.try_for_each(|r| {
        profile.add(r);
        acc.add(r)?;
        let key = (r.pid, r.tid);
        let ti = match cached {
            Some((k, i)) if k == key => i,
            _ => {
                let n = threads.len();
                let i = *thread_of.entry(key).or_insert(n);
                if i == n {
                    threads.push(ThreadAgg {
                        pid: r.pid,
                        tid: r.tid,
                        entries: 0,
                        first: r.tsc,
                        last: r.tsc,
                    });
                }
                lane_of_tid.insert(r.tid, i);
                cached = Some((key, i));
                i
            }
        };
        let t = &mut threads[ti];
        t.first = t.first.min(r.tsc);
        t.last = t.last.max(r.tsc);
        if r.kind.is_entry() {
            t.entries += 1;
            stacks.enter(r);
        } else if !r.kind.is_event() {
            stacks.exit(r, |c| {
                durations[64 - c.duration_tsc.leading_zeros() as usize] += 1;
                if !too_many {
                    if spans.len() == opts.timeline_calls {
                        too_many = true;
                        spans = Vec::new();
                    } else {
                        spans.push(CallSpan {
                            lane: ti as u32,
                            function: c.function_id,
                            entry: c.entry_tsc,
                            duration: c.duration_tsc,
                            depth: c.depth,
                            open: false,
                        });
                    }
                }
                Ok::<(), tracekit_core::Error>(())
            })?;
        }
        Ok(())
    })?);
    warnings.extend(profile.finish());
    let (acc_rows, acc_warnings) = acc.rows(freq);
    let (_, open) = stacks.finish();
    if !too_many {
        // Calls still open at the end: drawn to their thread's last record
        // (as the timeline closes them), and said so.
        for (tid, frames) in &open {
            let Some(&lane) = lane_of_tid.get(tid) else {
                continue;
            };
            let last = threads[lane].last;
            for (depth, f) in frames.iter().enumerate() {
                if spans.len() == opts.timeline_calls {
                    too_many = true;
                    spans = Vec::new();
                    break;
                }
                spans.push(CallSpan {
                    lane: lane as u32,
                    function: f.function_id,
                    entry: f.tsc,
                    duration: last.saturating_sub(f.tsc),
                    depth: depth as u32,
                    open: true,
                });
            }
        }
    }
    let zero = profile.first_tsc.unwrap_or(0);
    let fname = |id: i32| names.symbol_or_number(id).to_string();

    let mut rep = Report::new("xray", format!("LLVM XRay trace {name}"));
    rep.input(name, Some(format!("LLVM XRay {}", kind(trace))));
    rep.text = TextForm::Omit;

    // Summary.
    let calls: u64 = profile.functions.values().map(|t| t.calls).sum();
    let text = format!(
        "{name}: {} records, {} events, {} functions\n",
        profile.records,
        profile.events,
        profile.functions.len()
    );
    let span_ticks = profile
        .last_tsc
        .zip(profile.first_tsc)
        .map(|(l, f)| l.saturating_sub(f));
    let items = vec![
        Item::new("records", "records", profile.records, Unit::Count),
        Item::new(
            "events",
            "events (custom and typed)",
            profile.events,
            Unit::Count,
        ),
        Item::new(
            "functions",
            "functions called",
            profile.functions.len(),
            Unit::Count,
        ),
        Item::new("calls", "calls", calls, Unit::Count),
        Item::new("threads", "threads", threads.len(), Unit::Count),
        Item::new("span", "time span", span_ticks.map(secs), Unit::S),
        Item::new("cycle_frequency", "cycle frequency (Hz)", freq, Unit::Count),
        Item::new(
            "orphan_exits",
            "exits without their entry",
            profile.orphan_exits,
            Unit::Count,
        ),
        Item::new(
            "unfinished_calls",
            "calls that never returned",
            profile.unfinished_calls,
            Unit::Count,
        ),
    ];
    rep.push(Section::summary("summary", "Summary", items).verbatim(text));

    // Functions: the profile's totals with account's latency statistics.
    let self_all: u64 = profile.functions.values().map(|t| t.self_time).sum();
    let stats: FxHashMap<i32, &crate::account::Row> =
        acc_rows.iter().map(|r| (r.func_id, r)).collect();
    let mut funcs: Vec<(i32, &FunctionTotals)> =
        profile.functions.iter().map(|(k, v)| (*k, v)).collect();
    funcs.sort_by(|a, b| b.1.self_time.cmp(&a.1.self_time).then(a.0.cmp(&b.0)));
    let mut table = Table::new(vec![
        Column::new("function", "function", Unit::Text),
        Column::new("funcid", "id", Unit::Id),
        Column::new("location", "location", Unit::Text),
        Column::new("calls", "calls", Unit::Count),
        Column::new("total_s", "total", Unit::S),
        Column::new("self_s", "self", Unit::S),
        Column::new("self_share", "self share", Unit::Percent),
        Column::new("count", "timed calls", Unit::Count),
        Column::new("min_s", "min", Unit::S),
        Column::new("median_s", "median", Unit::S),
        Column::new("p90_s", "90%", Unit::S),
        Column::new("p99_s", "99%", Unit::S),
        Column::new("max_s", "max", Unit::S),
        Column::new("sum_s", "sum", Unit::S),
    ])
    .sorted_by("self_s", true);
    for (id, t) in &funcs {
        let loc = names.file_line_column(*id);
        let loc: Value = if loc == "(unknown)" || loc.starts_with("<invalid>") {
            Value::Null
        } else {
            loc.into()
        };
        let mut row = vec![
            fname(*id).into(),
            (*id).into(),
            loc,
            t.calls.into(),
            secs(t.total).into(),
            secs(t.self_time).into(),
            (t.self_time as f64 * 100.0 / self_all.max(1) as f64).into(),
        ];
        match stats.get(id) {
            Some(s) => row.extend([
                s.count.into(),
                s.min.into(),
                s.median.into(),
                s.pct90.into(),
                s.pct99.into(),
                s.max.into(),
                s.sum.into(),
            ]),
            None => row.extend(std::iter::repeat_n(Value::Null, 7)),
        }
        table.row(row);
    }
    table.keep(
        opts.functions,
        &["calls", "self_s", "self_share", "count", "sum_s"],
    );
    let mut account_notes = vec![Note {
        level: Level::Info,
        text: "total: inclusive time, recursion counted once; self: callees excluded; \
               timed calls and min to sum: the latencies of `tracekit xray account -k` \
               (exits that do not match the innermost open call are skipped)"
            .into(),
    }];
    account_notes.extend(acc_warnings.kept().iter().map(|w| Note {
        level: Level::Warning,
        text: format!("account: {}", w.message),
    }));
    rep.push(
        Section::table("functions", "Functions", table)
            .omit_text()
            .child(
                Section::notes("functions_notes", "About these figures", account_notes).omit_text(),
            ),
    );

    // The text report's three rankings (the functions table shows them all
    // in the page, sortable).
    let hot = profile.hottest(opts.top);
    let ranking = |id: &str, title: &str, rows: &[(i32, FunctionTotals)], key: &str| {
        let mut t = Table::new(vec![
            Column::new("total_s", "total", Unit::S),
            Column::new("self_s", "self", Unit::S),
            Column::new("calls", "calls", Unit::Count),
            Column::new("function", "function", Unit::Text),
            Column::new("funcid", "id", Unit::Id),
        ])
        .sorted_by(key, true);
        let mut text = format!(
            "\n{title}\n  {:>12} {:>12} {:>10}  function\n",
            "total s", "self s", "calls"
        );
        for (fid, ft) in rows {
            let _ = writeln!(
                text,
                "  {:>12.6} {:>12.6} {:>10}  {}",
                secs(ft.total),
                secs(ft.self_time),
                ft.calls,
                fname(*fid)
            );
            t.row(vec![
                secs(ft.total).into(),
                secs(ft.self_time).into(),
                ft.calls.into(),
                fname(*fid).into(),
                (*fid).into(),
            ]);
        }
        Section::table(id, title.trim_end_matches(':'), t)
            .verbatim(text)
            .omit_html()
    };
    rep.push(ranking(
        "by_total",
        "Hottest functions by total (inclusive) time:",
        &hot.by_total,
        "total_s",
    ));
    rep.push(ranking(
        "by_self",
        "Hottest functions by self time:",
        &hot.by_self,
        "self_s",
    ));
    rep.push(ranking(
        "by_calls",
        "Most called functions:",
        &hot.by_calls,
        "calls",
    ));

    // Deepest stacks.
    let deepest = profile.deepest(opts.top.min(10));
    let mut t = Table::new(vec![
        Column::new("depth", "depth", Unit::Count),
        Column::new("stack", "stack", Unit::Stack),
    ])
    .sorted_by("depth", true);
    let mut text = String::from("\nDeepest stacks:\n");
    for &n in &deepest {
        let path: Vec<String> = profile.path(n).into_iter().map(fname).collect();
        let _ = writeln!(
            text,
            "  depth {:>4}: {}",
            profile.nodes[n].depth,
            path.join(" > ")
        );
        t.row(vec![profile.nodes[n].depth.into(), path.into()]);
    }
    text.push('\n');
    rep.push(Section::table("deepest_stacks", "Deepest stacks", t).verbatim(text));

    // Flame graph of self time.
    let mut folded: Vec<(usize, u64)> = (0..profile.nodes.len())
        .filter(|&i| profile.nodes[i].self_time > 0)
        .map(|i| (i, profile.nodes[i].self_time))
        .collect();
    folded.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let rest = folded.split_off(folded.len().min(opts.flame_stacks));
    let flame = Flame {
        measure: "self time".into(),
        unit: Unit::S,
        stacks: folded
            .iter()
            .map(|&(i, w)| Stack {
                frames: profile.path(i).into_iter().map(fname).collect(),
                weight: secs(w),
            })
            .collect(),
        more: (!rest.is_empty()).then(|| MoreStacks {
            stacks: rest.len() as u64,
            weight: secs(rest.iter().map(|r| r.1).sum()),
        }),
    };
    rep.push(Section::new("flame", "Flame graph (self time)", Body::Flame(flame)).omit_text());

    // Call durations.
    let used = durations
        .iter()
        .position(|&n| n > 0)
        .zip(durations.iter().rposition(|&n| n > 0));
    let buckets: Vec<Bucket> = match used {
        None => Vec::new(),
        Some((first, last)) => (first..=last)
            .map(|i| {
                // Bucket i holds the durations of i significant bits:
                // [2^(i-1), 2^i) ticks; bucket 0 the zero ones.
                let (lo, hi) = if i == 0 {
                    (0, 1)
                } else {
                    (1u128 << (i - 1), 1u128 << i)
                };
                Bucket {
                    lo: secs_f(freq, lo),
                    hi: secs_f(freq, hi),
                    count: durations[i],
                }
            })
            .collect(),
    };
    if !buckets.is_empty() {
        rep.push(
            Section::new(
                "call_durations",
                "Call durations",
                Body::Histogram(Histogram {
                    counted: "calls".into(),
                    unit: Unit::S,
                    log: true,
                    buckets,
                }),
            )
            .omit_text(),
        );
    }

    // Threads.
    let mut tt = Table::new(vec![
        Column::new("pid", "pid", Unit::Id),
        Column::new("tid", "thread", Unit::Id),
        Column::new("calls", "calls", Unit::Count),
        Column::new("first_s", "first record", Unit::S),
        Column::new("last_s", "last record", Unit::S),
        Column::new("span_s", "span", Unit::S),
    ]);
    for t in &threads {
        tt.row(vec![
            t.pid.into(),
            t.tid.into(),
            t.entries.into(),
            secs(t.first.saturating_sub(zero)).into(),
            secs(t.last.saturating_sub(zero)).into(),
            secs(t.last.saturating_sub(t.first)).into(),
        ]);
    }
    tt.keep(opts.functions, &["calls"]);
    rep.push(Section::table("threads", "Threads", tt).omit_text());

    // Per-thread timelines.
    if too_many {
        rep.push(
            Section::notes(
                "timelines",
                "Timelines",
                vec![Note {
                    level: Level::Info,
                    text: format!(
                        "{calls} calls: per-thread timelines are drawn for traces of at most {} calls; \
                         see the functions, flame graph and threads above, or `tracekit convert --to perfetto`",
                        opts.timeline_calls
                    ),
                }],
            )
            .omit_text(),
        );
    } else if !spans.is_empty() {
        let lanes: Vec<Lane> = threads
            .iter()
            .map(|t| Lane {
                name: if t.pid != 0 {
                    format!("pid {} thread {}", t.pid, t.tid)
                } else {
                    format!("thread {}", t.tid)
                },
            })
            .collect();
        spans.sort_by_key(|s| (s.lane, s.entry, s.depth));
        let spans: Vec<Span> = spans
            .iter()
            .map(|s| Span {
                lane: s.lane,
                depth: s.depth,
                start: secs(s.entry.saturating_sub(zero)),
                end: secs(s.entry.saturating_sub(zero) + s.duration),
                name: fname(s.function),
                id: None,
                parent: None,
                highlight: false,
                detail: s
                    .open
                    .then(|| "never returned: drawn to its thread's last record".to_string()),
            })
            .collect();
        rep.push(
            Section::new(
                "timelines",
                "Timelines",
                Body::Spans(Spans {
                    view: SpanView::Gantt,
                    unit: Unit::S,
                    lanes,
                    spans,
                    highlight: None,
                    more: 0,
                }),
            )
            .omit_text(),
        );
    }

    if !warnings.is_empty() {
        rep.push(Section::warnings("warnings", "Warnings", &warnings).omit_text());
    }
    Ok((rep, warnings))
}

fn secs_f(freq: u64, ticks: u128) -> f64 {
    let f = if freq == 0 { 1e9 } else { freq as f64 };
    ticks as f64 / f
}

fn kind(trace: &Trace<'_>) -> &'static str {
    match (trace.header.kind, trace.yaml.is_some()) {
        (crate::LogKind::Fdr, false) => "FDR log",
        (crate::LogKind::Basic, false) => "basic log",
        (crate::LogKind::Fdr, true) => "YAML trace of an FDR log",
        (crate::LogKind::Basic, true) => "YAML trace of a basic log",
    }
}
