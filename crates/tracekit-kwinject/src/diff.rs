//! `tracekit diff A B` on two builds, as data ([`tracekit_report::Report`]).
//!
//! * [`builds`]: two recorded build traces. Units are the build's steps
//!   ([`crate::steps`]: the jobs of make/ninja, named by what they build),
//!   matched by name (the n-th step of a name with the n-th); per unit the
//!   time before and after, units added and removed; the critical path of
//!   each side; the build's wall time, its busy time (processes doing work,
//!   their parents waiting not counted) and its mean parallelism (busy time
//!   over wall time), and the most jobs at once.
//! * [`ninja_logs`]: two `.ninja_log`s ([`NinjaDiff`]: targets matched by
//!   output), their targets' time, and the critical paths when the build
//!   graph is known.
//!
//! A build runs each unit once: there are no samples to test, so no
//! significance column (two builds are two observations).

use std::collections::HashMap;

use tracekit_report::diff as d;
use tracekit_report::{Column, Item, Report, Section, Table, Unit, Value};

use crate::analysis::Build;
use crate::ninja::{NinjaBuild, NinjaDiff};
use crate::steps::{StepGraph, StepOptions};

/// A unit's name and its duration (µs), per side.
fn units(g: &StepGraph) -> Vec<(String, Option<u64>)> {
    g.steps
        .iter()
        .map(|s| (s.name.clone(), s.duration_us()))
        .collect()
}

/// (wall µs, busy µs): the span of the records with times, and the time
/// of the processes doing work (no child of their own).
fn wall_and_busy(b: &Build) -> (Option<u64>, u64) {
    let wall = b.span().map(|(s, e)| e - s);
    let busy = b
        .trace
        .processes
        .iter()
        .enumerate()
        .filter(|(i, _)| b.children[*i].is_empty())
        .filter_map(|(_, p)| Some(p.end_us?.saturating_sub(p.start_us?)))
        .sum();
    (wall, busy)
}

fn parallelism(wall: Option<u64>, busy: u64) -> Option<f64> {
    wall.filter(|w| *w > 0).map(|w| busy as f64 / w as f64)
}

/// One side's critical path as rows: (position, name, duration).
fn path_rows(g: &StepGraph) -> Vec<(String, Option<u64>)> {
    g.critical_path.as_ref().map_or_else(Vec::new, |c| {
        c.steps
            .iter()
            .map(|&s| (g.steps[s].name.clone(), g.steps[s].duration_us()))
            .collect()
    })
}

fn critical_path_section(
    id: &str,
    before: Vec<(String, Option<u64>)>,
    after: Vec<(String, Option<u64>)>,
    unit: Unit,
) -> Section {
    let mut t = Table::new(vec![
        Column::new("side", "build", Unit::Text),
        Column::new("position", "#", Unit::Count),
        Column::new("unit", "unit", Unit::Text),
        Column::new("duration", "duration", unit),
        Column::new("on_other_path", "also on the other's path", Unit::Text),
    ]);
    for (side, rows, other) in [("before", &before, &after), ("after", &after, &before)] {
        for (i, (name, dur)) in rows.iter().enumerate() {
            let also = other.iter().any(|(n, _)| n == name);
            t.row(vec![
                side.into(),
                (i as u64 + 1).into(),
                name.as_str().into(),
                (*dur).into(),
                if also { "yes" } else { "no" }.into(),
            ]);
        }
    }
    Section::table(id, "Critical paths, before and after", t)
}

/// Units compared: name, presence, duration ×4, impact; ranked by impact.
fn unit_table(
    before: &[(String, Option<u64>)],
    after: &[(String, Option<u64>)],
    unit: Unit,
    top: usize,
) -> (Table, u64, u64) {
    // The n-th unit of a name pairs with the n-th of that name.
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut by_key: HashMap<(&str, usize), usize> = HashMap::new();
    for (i, (n, _)) in before.iter().enumerate() {
        let k = seen.entry(n.as_str()).or_default();
        by_key.insert((n.as_str(), *k), i);
        *k += 1;
    }
    let mut matched = vec![false; before.len()];
    let mut rows: Vec<(u64, String, Vec<Value>)> = Vec::new();
    let mut seen_after: HashMap<&str, usize> = HashMap::new();
    let (mut added, mut removed) = (0, 0);
    let mut push = |name: &str, presence: &str, b: Option<u64>, a: Option<u64>| {
        let mut row: Vec<Value> = vec![name.into(), presence.into()];
        row.extend(d::uint(b, a));
        let impact = match (b, a) {
            (Some(x), Some(y)) => x.abs_diff(y),
            (x, y) => x.or(y).unwrap_or(0),
        };
        row.push(impact.into());
        rows.push((impact, name.to_string(), row));
    };
    for (n, dur) in after {
        let k = seen_after.entry(n.as_str()).or_default();
        match by_key.get(&(n.as_str(), *k)) {
            Some(&i) => {
                matched[i] = true;
                push(n, "both", before[i].1, *dur);
            }
            None => {
                added += 1;
                push(n, "added", None, *dur);
            }
        }
        *k += 1;
    }
    for (i, (n, dur)) in before.iter().enumerate() {
        if !matched[i] {
            removed += 1;
            push(n, "removed", *dur, None);
        }
    }
    rows.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    let mut cols = vec![
        Column::new("unit", "unit", Unit::Text),
        Column::new("presence", "in", Unit::Text),
    ];
    cols.extend(d::columns("time", "time", unit));
    cols.push(d::impact_column(unit));
    let mut t = Table::new(cols).sorted_by("impact", true);
    for (_, _, r) in rows {
        t.row(r);
    }
    t.keep(top, &["time_before", "time_after", "time_delta", "impact"]);
    (t, added, removed)
}

/// Two recorded build traces compared.
pub fn builds(
    before: &Build,
    before_name: &str,
    after: &Build,
    after_name: &str,
    top: usize,
) -> Report {
    let opts = StepOptions::default();
    let (gb, ga) = (before.steps(&opts), after.steps(&opts));
    let mut rep = Report::new("build", format!("Builds {before_name} → {after_name}"));
    rep.input(before_name, Some("kwinject build trace".into()));
    rep.input(after_name, Some("kwinject build trace".into()));
    let (ub, ua) = (units(&gb), units(&ga));
    let (table, added, removed) = unit_table(&ub, &ua, Unit::Us, top);

    let (wb, bb) = wall_and_busy(before);
    let (wa, ba) = wall_and_busy(after);
    let cp = |g: &StepGraph| g.critical_path.as_ref().map(|c| c.total_us);
    let mut items: Vec<Item> = Vec::new();
    items.extend(d::items("wall", "wall time", Unit::Us, d::uint(wb, wa)));
    items.extend(d::items(
        "busy",
        "busy time (processes doing work)",
        Unit::Us,
        d::uint(Some(bb), Some(ba)),
    ));
    items.extend(d::items(
        "parallelism",
        "mean parallelism (busy / wall)",
        Unit::Number,
        d::float(parallelism(wb, bb), parallelism(wa, ba)),
    ));
    items.extend(d::items(
        "peak_jobs",
        "most jobs at once",
        Unit::Count,
        d::uint(Some(gb.peak_jobs), Some(ga.peak_jobs)),
    ));
    items.extend(d::items(
        "critical_path",
        "critical path",
        Unit::Us,
        d::uint(cp(&gb), cp(&ga)),
    ));
    items.extend(d::items(
        "units",
        "units",
        Unit::Count,
        d::uint(Some(ub.len() as u64), Some(ua.len() as u64)),
    ));
    items.push(Item::new(
        "units_added",
        "units only after",
        added,
        Unit::Count,
    ));
    items.push(Item::new(
        "units_removed",
        "units only before",
        removed,
        Unit::Count,
    ));
    items.extend(d::items(
        "processes",
        "processes",
        Unit::Count,
        d::uint(
            Some(before.trace.processes.len() as u64),
            Some(after.trace.processes.len() as u64),
        ),
    ));
    rep.push(d::compact_text(Section::summary("totals", "Totals", items)));
    rep.push(d::compact_text(Section::table(
        "units",
        "Units, by change of time",
        table,
    )));
    rep.push(critical_path_section(
        "critical_path",
        path_rows(&gb),
        path_rows(&ga),
        Unit::Us,
    ));
    rep
}

fn ninja_path(b: &NinjaBuild) -> Vec<(String, Option<u64>)> {
    b.critical_path.as_ref().map_or_else(Vec::new, |c| {
        c.steps
            .iter()
            .filter_map(|&s| b.targets.get(s))
            .map(|t| (t.name(), Some(t.duration_ms())))
            .collect()
    })
}

/// Two `.ninja_log`s compared (targets matched by output, as
/// [`NinjaDiff`] matches them).
pub fn ninja_logs(
    before: &NinjaBuild,
    before_name: &str,
    after: &NinjaBuild,
    after_name: &str,
    top: usize,
) -> Report {
    let nd = NinjaDiff::new(&before.targets, &after.targets);
    let mut rep = Report::new("ninja", format!("ninja logs {before_name} → {after_name}"));
    rep.input(before_name, Some("ninja build log".into()));
    rep.input(after_name, Some("ninja build log".into()));
    let wall = |b: &NinjaBuild| {
        let s = b.targets.iter().map(|t| t.start_ms).min()?;
        let e = b.targets.iter().map(|t| t.end_ms).max()?;
        Some(e.saturating_sub(s))
    };
    let (wb, wa) = (wall(before), wall(after));
    let cp = |b: &NinjaBuild| b.critical_path.as_ref().map(|c| c.total_us / 1000);
    let mut items: Vec<Item> = Vec::new();
    items.extend(d::items(
        "targets_time",
        "targets' time",
        Unit::Ms,
        d::uint(Some(nd.before_total_ms), Some(nd.after_total_ms)),
    ));
    items.extend(d::items(
        "wall",
        "first start to last end",
        Unit::Ms,
        d::uint(wb, wa),
    ));
    items.extend(d::items(
        "parallelism",
        "mean parallelism (targets' time / wall)",
        Unit::Number,
        d::float(
            parallelism(wb, nd.before_total_ms),
            parallelism(wa, nd.after_total_ms),
        ),
    ));
    items.extend(d::items(
        "critical_path",
        "critical path",
        Unit::Ms,
        d::uint(cp(before), cp(after)),
    ));
    items.extend(d::items(
        "targets",
        "targets",
        Unit::Count,
        d::uint(
            Some(before.targets.len() as u64),
            Some(after.targets.len() as u64),
        ),
    ));
    items.push(Item::new(
        "targets_added",
        "targets only after",
        nd.added.len() as u64,
        Unit::Count,
    ));
    items.push(Item::new(
        "targets_removed",
        "targets only before",
        nd.removed.len() as u64,
        Unit::Count,
    ));
    rep.push(d::compact_text(Section::summary("totals", "Totals", items)));
    let b: Vec<(String, Option<u64>)> = nd
        .changed
        .iter()
        .map(|c| (c.name.clone(), Some(c.before_ms)))
        .chain(nd.removed.iter().map(|(n, ms)| (n.clone(), Some(*ms))))
        .collect();
    let a: Vec<(String, Option<u64>)> = nd
        .changed
        .iter()
        .map(|c| (c.name.clone(), Some(c.after_ms)))
        .chain(nd.added.iter().map(|(n, ms)| (n.clone(), Some(*ms))))
        .collect();
    let (table, _, _) = unit_table(&b, &a, Unit::Ms, top);
    rep.push(d::compact_text(Section::table(
        "units",
        "Targets, by change of time",
        table,
    )));
    if before.critical_path.is_some() || after.critical_path.is_some() {
        rep.push(critical_path_section(
            "critical_path",
            ninja_path(before),
            ninja_path(after),
            Unit::Ms,
        ));
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &Table) -> Vec<(String, String, Value, Value)> {
        t.rows
            .iter()
            .map(|r| {
                let s = |v: &Value| match v {
                    Value::Text(s) => s.clone(),
                    _ => String::new(),
                };
                (s(&r[0]), s(&r[1]), r[2].clone(), r[3].clone())
            })
            .collect()
    }

    #[test]
    fn units_of_one_name_pair_in_order() {
        let before = vec![
            ("cc a.c".to_string(), Some(10)),
            ("cc a.c".to_string(), Some(20)),
            ("ld".to_string(), Some(5)),
        ];
        let after = vec![
            ("cc a.c".to_string(), Some(30)),
            ("ar".to_string(), Some(1)),
        ];
        let (t, added, removed) = unit_table(&before, &after, Unit::Us, 10);
        assert_eq!((added, removed), (1, 2));
        assert_eq!(
            names(&t),
            [
                // The first `cc a.c` with the first: 10 → 30.
                (
                    "cc a.c".into(),
                    "both".into(),
                    Value::UInt(10),
                    Value::UInt(30)
                ),
                (
                    "cc a.c".into(),
                    "removed".into(),
                    Value::UInt(20),
                    Value::Null
                ),
                ("ld".into(), "removed".into(), Value::UInt(5), Value::Null),
                ("ar".into(), "added".into(), Value::Null, Value::UInt(1)),
            ]
        );
        let (t, _, _) = unit_table(&before, &after, Unit::Us, 2);
        assert_eq!(t.more.as_ref().map(|m| m.rows), Some(2));
    }

    #[test]
    fn parallelism_is_busy_over_wall() {
        assert_eq!(parallelism(Some(100), 250), Some(2.5));
        assert_eq!(parallelism(Some(0), 250), None);
        assert_eq!(parallelism(None, 250), None);
    }
}
