//! `tracekit diff A B` on Git Trace2 traces (files or directories of
//! them), as data ([`tracekit_report::Report`]).
//!
//! Each side is one [`ReportBuilder`] pass (sessions stitched across files
//! as `tracekit report` stitches them) with [`Samples`] attached: every
//! process's elapsed time, grouped by command exactly as the report's
//! per-command statistics group them (`cmd_name` and mode, through
//! [`ReportBuilder::on_process`]). The comparison:
//! * commands: runs, failures and the p50/p90/p99 and total time before
//!   and after, whether the command is new or vanished, and whether its
//!   run times changed beyond their spread (two-sided Mann–Whitney U over
//!   the runs, `tracekit_report::stats`); ranked by the change of total
//!   time;
//! * regions (category and label, over every process): count, total and
//!   self time, the ones that got slower first;
//! * totals: sessions, processes, events, unfinished processes, errors.
//!
//! **Architecture Invariant:** memory is what each side's report keeps plus
//! one integer per finished process (its elapsed time).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use tracekit_report::diff as d;
use tracekit_report::stats::percentile;
use tracekit_report::{Column, Item, Level, Note, Report, Section, Table, Unit, Value};

use crate::report::{self, ReportBuilder};

/// A command as the report groups it: its name and mode.
pub type CommandKey = (String, Option<String>);

/// Every finished process's elapsed time (µs), per command, collected
/// while a [`ReportBuilder`] folds sessions.
#[derive(Clone, Default)]
pub struct Samples(Arc<Mutex<BTreeMap<CommandKey, Vec<i64>>>>);

impl Samples {
    /// Attaches a collector to `builder` (it takes the builder's process
    /// hook).
    pub fn attach(builder: &mut ReportBuilder) -> Samples {
        let s = Samples::default();
        let inner = Arc::clone(&s.0);
        builder.on_process(move |p| {
            let Some(us) = p.elapsed_us else { return };
            let key = (
                String::from_utf8_lossy(p.command).into_owned(),
                p.mode.map(|m| String::from_utf8_lossy(m).into_owned()),
            );
            if let Ok(mut m) = inner.lock() {
                m.entry(key).or_default().push(us);
            }
        });
        s
    }

    /// The samples, each command's sorted (after the builder finished).
    pub fn take(&self) -> BTreeMap<CommandKey, Vec<i64>> {
        let mut m = self
            .0
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        for v in m.values_mut() {
            v.sort_unstable();
        }
        m
    }
}

/// One side: its finished report and its samples.
pub struct Side<'a> {
    pub name: &'a str,
    pub report: &'a report::Report,
    pub samples: &'a BTreeMap<CommandKey, Vec<i64>>,
}

fn key_of(c: &report::CommandStats) -> CommandKey {
    (c.name.clone(), c.mode.clone())
}

fn q(v: Option<&Vec<i64>>, p: f64) -> Option<u64> {
    v.and_then(|v| percentile(v, p))
        .map(|x| u64::try_from(x).unwrap_or(0))
}

/// Compares two sides; `top` rows of each ranked table are shown.
pub fn diff(b: &Side<'_>, a: &Side<'_>, top: usize) -> Report {
    let mut rep = Report::new("trace2", format!("Git Trace2 {} → {}", b.name, a.name));
    rep.input(b.name, Some("Git Trace2".into()));
    rep.input(a.name, Some("Git Trace2".into()));
    let (rb, ra) = (b.report, a.report);

    let bc: BTreeMap<CommandKey, &report::CommandStats> =
        rb.commands.iter().map(|c| (key_of(c), c)).collect();
    let ac: BTreeMap<CommandKey, &report::CommandStats> =
        ra.commands.iter().map(|c| (key_of(c), c)).collect();
    let keys: BTreeSet<&CommandKey> = bc.keys().chain(ac.keys()).collect();
    let added = keys.iter().filter(|k| !bc.contains_key(**k)).count();
    let removed = keys.iter().filter(|k| !ac.contains_key(**k)).count();

    let mut items: Vec<Item> = Vec::new();
    let u = |x: u64| Some(x);
    items.extend(d::items(
        "sessions",
        "sessions",
        Unit::Count,
        d::uint(u(rb.sessions), u(ra.sessions)),
    ));
    items.extend(d::items(
        "processes",
        "processes",
        Unit::Count,
        d::uint(u(rb.processes), u(ra.processes)),
    ));
    items.extend(d::items(
        "events",
        "events",
        Unit::Count,
        d::uint(u(rb.events), u(ra.events)),
    ));
    items.extend(d::items(
        "unfinished",
        "unfinished processes",
        Unit::Count,
        d::uint(u(rb.unfinished_processes), u(ra.unfinished_processes)),
    ));
    let errors = |r: &report::Report| r.errors.iter().map(|e| e.count).sum::<u64>();
    items.extend(d::items(
        "errors",
        "errors",
        Unit::Count,
        d::uint(u(errors(rb)), u(errors(ra))),
    ));
    items.extend(d::items(
        "commands",
        "commands",
        Unit::Count,
        d::uint(u(bc.len() as u64), u(ac.len() as u64)),
    ));
    items.push(Item::new(
        "commands_added",
        "commands only after",
        added as u64,
        Unit::Count,
    ));
    items.push(Item::new(
        "commands_removed",
        "commands only before",
        removed as u64,
        Unit::Count,
    ));
    rep.push(d::compact_text(Section::summary("totals", "Totals", items)));

    // Commands, by |change of total time|.
    let mut cols = vec![
        Column::new("command", "command", Unit::Text),
        Column::new("mode", "mode", Unit::Text),
        Column::new("presence", "in", Unit::Text),
    ];
    cols.extend(d::columns("count", "runs", Unit::Count));
    cols.extend(d::columns("failed", "failed", Unit::Count));
    cols.extend(d::columns("p50", "p50", Unit::Us));
    cols.extend(d::columns("p90", "p90", Unit::Us));
    cols.extend(d::columns("p99", "p99", Unit::Us));
    cols.extend(d::columns("total", "total", Unit::Us));
    cols.extend(d::test_columns());
    cols.push(d::impact_column(Unit::Us));
    let mut rows: Vec<(u64, &CommandKey, Vec<Value>)> = Vec::new();
    for k in &keys {
        let (x, y) = (bc.get(*k), ac.get(*k));
        let (sx, sy) = (b.samples.get(*k), a.samples.get(*k));
        let presence = match (x, y) {
            (Some(_), Some(_)) => "both",
            (None, _) => "added",
            (_, None) => "removed",
        };
        let mut row: Vec<Value> = vec![k.0.as_str().into(), k.1.clone().into(), presence.into()];
        row.extend(d::uint(
            Some(x.map_or(0, |c| c.count)),
            Some(y.map_or(0, |c| c.count)),
        ));
        row.extend(d::uint(
            Some(x.map_or(0, |c| c.failed)),
            Some(y.map_or(0, |c| c.failed)),
        ));
        for p in [0.5, 0.9, 0.99] {
            row.extend(d::uint(q(sx, p), q(sy, p)));
        }
        let total =
            |s: Option<&Vec<i64>>| s.map_or(0, |v| v.iter().map(|&t| t.max(0) as u64).sum());
        let (tb, ta) = (total(sx), total(sy));
        row.extend(d::uint(Some(tb), Some(ta)));
        let f = |s: Option<&Vec<i64>>| -> Vec<f64> {
            s.map_or_else(Vec::new, |v| v.iter().map(|&t| t as f64).collect())
        };
        row.extend(d::test(&f(sx), &f(sy)));
        let impact = tb.abs_diff(ta);
        row.push(impact.into());
        rows.push((impact, k, row));
    }
    rows.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(y.1)));
    let mut t = Table::new(cols).sorted_by("impact", true);
    for (_, _, r) in rows {
        t.row(r);
    }
    t.keep(
        top,
        &[
            "count_before",
            "count_after",
            "count_delta",
            "total_before",
            "total_after",
            "total_delta",
            "impact",
        ],
    );
    rep.push(d::compact_text(Section::table(
        "commands",
        "Commands, by change of total time",
        t,
    )));

    // Regions, the ones that got slower first.
    let rk = |r: &report::RegionTotal| (r.category.clone(), r.label.clone());
    let br: BTreeMap<(String, String), &report::RegionTotal> =
        rb.regions.iter().map(|r| (rk(r), r)).collect();
    let ar: BTreeMap<(String, String), &report::RegionTotal> =
        ra.regions.iter().map(|r| (rk(r), r)).collect();
    let mut cols = vec![
        Column::new("category", "category", Unit::Text),
        Column::new("label", "label", Unit::Text),
        Column::new("presence", "in", Unit::Text),
    ];
    cols.extend(d::columns("count", "count", Unit::Count));
    cols.extend(d::columns("total", "total", Unit::S));
    cols.extend(d::columns("self", "self", Unit::S));
    let mut rows: Vec<(f64, (String, String), Vec<Value>)> = Vec::new();
    let rkeys: BTreeSet<&(String, String)> = br.keys().chain(ar.keys()).collect();
    for k in rkeys {
        let (x, y) = (br.get(k), ar.get(k));
        let presence = match (x, y) {
            (Some(_), Some(_)) => "both",
            (None, _) => "added",
            (_, None) => "removed",
        };
        let mut row: Vec<Value> = vec![k.0.as_str().into(), k.1.as_str().into(), presence.into()];
        row.extend(d::uint(
            Some(x.map_or(0, |r| r.count)),
            Some(y.map_or(0, |r| r.count)),
        ));
        let (tb, ta) = (x.map_or(0.0, |r| r.total_s), y.map_or(0.0, |r| r.total_s));
        row.extend(d::float(Some(tb), Some(ta)));
        row.extend(d::float(
            Some(x.map_or(0.0, |r| r.self_s)),
            Some(y.map_or(0.0, |r| r.self_s)),
        ));
        rows.push((ta - tb, k.clone(), row));
    }
    rows.sort_by(|x, y| y.0.total_cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    let mut t = Table::new(cols).sorted_by("total_delta", true);
    for (_, _, r) in rows {
        t.row(r);
    }
    t.keep(
        top,
        &[
            "count_before",
            "count_after",
            "total_before",
            "total_after",
            "total_delta",
        ],
    );
    rep.push(d::compact_text(Section::table(
        "regions",
        "Regions, most slowed first",
        t,
    )));
    rep.push(Section::notes(
        "notes",
        "Notes",
        vec![Note {
            level: Level::Info,
            text: "significance: two-sided Mann–Whitney U test of the command's run times \
                   (elapsed of each finished process), before against after, at p < 0.05"
                .into(),
        }],
    ));
    rep
}
