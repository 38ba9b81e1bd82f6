//! `tracekit diff A B` on two trace logs, as data
//! ([`tracekit_report::Report`]): per event type (matched by name, since
//! ids are given out in the order a run opened them), the events and their
//! rate over each log's span, and the totals (events, span, rate, payload
//! bytes, loss). Types are ranked by how much their count changed.
//!
//! A log has no samples to test (each event type is one count per run), so
//! there is no significance column: two runs are two observations.

use std::collections::BTreeMap;

use tracekit_report::diff as d;
use tracekit_report::{Column, Item, Report, Section, Table, Unit, Value};

use crate::analysis::{event_name, Summary};
use crate::log::LogReader;

/// One side: its counts and its event types' names.
struct Side {
    summary: Summary,
    lost: u64,
    /// Name → (events, payload bytes).
    types: BTreeMap<String, (u64, u64)>,
}

fn side(r: &mut LogReader) -> Side {
    let summary = crate::analysis::summarise(r);
    let mut types: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (id, (n, bytes)) in &summary.by_type {
        let name = String::from_utf8_lossy(&event_name(r, *id)).into_owned();
        let e = types.entry(name).or_default();
        e.0 += n;
        e.1 += bytes;
    }
    let lost = r.meta.events_lost_stream + r.meta.events_lost_log;
    Side {
        summary,
        lost,
        types,
    }
}

fn rate(n: u64, span_s: Option<f64>) -> Option<f64> {
    match span_s {
        Some(s) if s > 0.0 => Some(n as f64 / s),
        _ => None,
    }
}

/// Reads both logs to their end and compares them; `top` rows of the
/// event-type table are shown (the rest counted with their totals).
pub fn diff(
    before: &mut LogReader,
    before_name: &str,
    after: &mut LogReader,
    after_name: &str,
    top: usize,
) -> Report {
    let (b, a) = (side(before), side(after));
    let (bs, as_) = (b.summary.span_s(), a.summary.span_s());
    let mut rep = Report::new(
        "posix",
        format!("POSIX trace logs {before_name} → {after_name}"),
    );
    let format = Some(format!(
        "POSIX trace log {}.{}",
        crate::log::VERSION_MAJOR,
        crate::log::VERSION_MINOR
    ));
    rep.input(before_name, format.clone());
    rep.input(after_name, format);

    let mut items: Vec<Item> = Vec::new();
    items.extend(d::items(
        "events",
        "events",
        Unit::Count,
        d::uint(Some(b.summary.events), Some(a.summary.events)),
    ));
    items.extend(d::items("span", "span", Unit::S, d::float(bs, as_)));
    items.extend(d::items(
        "rate",
        "events per second",
        Unit::PerS,
        d::float(rate(b.summary.events, bs), rate(a.summary.events, as_)),
    ));
    let bytes = |s: &Side| s.types.values().map(|t| t.1).sum::<u64>();
    items.extend(d::items(
        "payload",
        "payload bytes",
        Unit::Bytes,
        d::uint(Some(bytes(&b)), Some(bytes(&a))),
    ));
    items.extend(d::items(
        "event_types",
        "event types",
        Unit::Count,
        d::uint(Some(b.types.len() as u64), Some(a.types.len() as u64)),
    ));
    items.extend(d::items(
        "processes",
        "processes",
        Unit::Count,
        d::uint(
            Some(b.summary.pids.len() as u64),
            Some(a.summary.pids.len() as u64),
        ),
    ));
    items.extend(d::items(
        "threads",
        "threads",
        Unit::Count,
        d::uint(
            Some(b.summary.threads.len() as u64),
            Some(a.summary.threads.len() as u64),
        ),
    ));
    items.extend(d::items(
        "lost",
        "events lost",
        Unit::Count,
        d::uint(Some(b.lost), Some(a.lost)),
    ));
    items.extend(d::items(
        "corrupt",
        "records unreadable",
        Unit::Count,
        d::uint(Some(b.summary.corrupt), Some(a.summary.corrupt)),
    ));
    rep.push(d::compact_text(Section::summary("totals", "Totals", items)));

    // Event types, by |change of events|.
    let mut cols = vec![
        Column::new("event", "event type", Unit::Text),
        Column::new("presence", "in", Unit::Text),
    ];
    cols.extend(d::columns("events", "events", Unit::Count));
    cols.extend(d::columns("rate", "rate", Unit::PerS));
    cols.extend(d::columns("payload", "payload", Unit::Bytes));
    cols.push(d::impact_column(Unit::Count));
    let mut rows: Vec<(u64, String, Vec<Value>)> = Vec::new();
    let names: std::collections::BTreeSet<&String> = b.types.keys().chain(a.types.keys()).collect();
    for name in names {
        let (x, y) = (b.types.get(name), a.types.get(name));
        let presence = match (x, y) {
            (Some(_), Some(_)) => "both",
            (None, _) => "added",
            (_, None) => "removed",
        };
        let (nb, na) = (x.map_or(0, |t| t.0), y.map_or(0, |t| t.0));
        let mut row: Vec<Value> = vec![name.as_str().into(), presence.into()];
        row.extend(d::uint(Some(nb), Some(na)));
        row.extend(d::float(rate(nb, bs), rate(na, as_)));
        row.extend(d::uint(
            Some(x.map_or(0, |t| t.1)),
            Some(y.map_or(0, |t| t.1)),
        ));
        let impact = nb.abs_diff(na);
        row.push(impact.into());
        rows.push((impact, name.clone(), row));
    }
    rows.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    let mut t = Table::new(cols).sorted_by("impact", true);
    for (_, _, r) in rows {
        t.row(r);
    }
    t.keep(
        top,
        &["events_before", "events_after", "events_delta", "impact"],
    );
    rep.push(d::compact_text(Section::table(
        "event_types",
        "Event types, by change of events",
        t,
    )));
    rep
}
