//! `tracekit report` on a trace log, as data ([`tracekit_report::Report`]):
//! one pass over the log's events counts them by type, process and thread
//! ([`Summary`]) and over time ([`TimeBuckets`], per type and per
//! process). The text layout is the one `tracekit report` has always
//! printed (carried verbatim by the sections); JSON and HTML draw the same
//! data.

use std::fmt::Write as _;

use tracekit_report::series::{Buckets, TimeBuckets};
use tracekit_report::{
    Body, Column, Item, Level, Note, Report, Section, Series, Table, TextForm, Unit,
};

use crate::analysis::{event_name, policy_name, Summary};
use crate::log::{LogReader, VERSION_MAJOR, VERSION_MINOR};

/// What the report shows.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows of the ranked tables (the CLI's `--top`).
    pub top: usize,
    /// Lines of a chart of events over time (the rest fold into `other`).
    pub series: usize,
    /// Buckets of those charts, at most.
    pub buckets: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 20,
            series: 8,
            buckets: 240,
        }
    }
}

/// Reads `r` from its current position to the end and builds its report;
/// `name` is the input as the user named it.
pub fn build(r: &mut LogReader, name: &str, opts: &Options) -> Report {
    let mut s = Summary::default();
    let mut by_type: TimeBuckets<u32> = TimeBuckets::new(opts.buckets);
    let mut by_pid: TimeBuckets<i32> = TimeBuckets::new(opts.buckets);
    while let Some(e) = r.next_event() {
        match e {
            Ok(e) => {
                s.add(&e.info, e.data.len());
                by_type.add(&e.info.event_id, e.info.timestamp_ns, 1);
                by_pid.add(&e.info.pid, e.info.timestamp_ns, 1);
            }
            Err(_) => s.corrupt += 1,
        }
    }
    let name_of = |id: u32| String::from_utf8_lossy(&event_name(r, id)).into_owned();
    let span_s = s.span_s().unwrap_or(0.0);
    let (lost_stream, lost_log, after_shutdown) = (
        r.meta.events_lost_stream,
        r.meta.events_lost_log,
        r.meta.events_after_shutdown,
    );
    let format = format!("POSIX trace log {VERSION_MAJOR}.{VERSION_MINOR}");

    let mut rep = Report::new("posix", format!("POSIX trace log {name}"));
    rep.input(name, Some(format));
    rep.text = TextForm::Omit;

    // Summary (and the text's first lines).
    let mut text = format!(
        "{name}: {} events over {span_s:.6} s ({:.0} events/s)\n",
        s.events,
        s.events_per_s()
    );
    if lost_stream + lost_log + after_shutdown > 0 {
        let _ = writeln!(
            text,
            "  LOST: {lost_stream} in the stream, {lost_log} in the log, {after_shutdown} written after shutdown"
        );
    }
    let items = vec![
        Item::new("events", "events", s.events, Unit::Count),
        Item::new("span", "time span", span_s, Unit::S),
        Item::new(
            "events_per_s",
            "events per second",
            s.events_per_s(),
            Unit::PerS,
        ),
        Item::new(
            "lost_in_stream",
            "lost in the stream",
            lost_stream,
            Unit::Count,
        ),
        Item::new("lost_in_log", "lost in the log", lost_log, Unit::Count),
        Item::new(
            "lost_after_shutdown",
            "written after shutdown",
            after_shutdown,
            Unit::Count,
        ),
        Item::new("truncated", "truncated", s.truncated, Unit::Count),
        Item::new("corrupt", "unreadable records", s.corrupt, Unit::Count),
        Item::new("processes", "processes", s.pids.len(), Unit::Count),
        Item::new("threads", "threads", s.threads.len(), Unit::Count),
        Item::new("event_types", "event types", s.by_type.len(), Unit::Count),
        Item::new("trace_name", "trace name", r.attr.name_str(), Unit::Text),
        Item::new(
            "stream_policy",
            "stream policy",
            policy_name(r.attr.stream_policy),
            Unit::Text,
        ),
        Item::new(
            "log_policy",
            "log policy",
            policy_name(r.attr.log_policy),
            Unit::Text,
        ),
        Item::new(
            "complete",
            "shut down cleanly",
            r.meta.flags & 1 != 0,
            Unit::Text,
        ),
    ];
    rep.push(Section::summary("summary", "Summary", items).verbatim(text));

    // Event types.
    let share = |n: u64| n as f64 * 100.0 / s.events.max(1) as f64;
    let mut types = Table::new(vec![
        Column::new("event", "event type", Unit::Text),
        Column::new("id", "id", Unit::Id),
        Column::new("events", "events", Unit::Count),
        Column::new("share", "share", Unit::Percent),
        Column::new("payload", "payload", Unit::Bytes),
        Column::new("mean_payload", "mean payload", Unit::Bytes),
    ])
    .sorted_by("events", true);
    let mut text = format!(
        "\n  {:<32} {:>12} {:>8} {:>14}\n",
        "event type", "events", "share", "mean payload"
    );
    let all_types = s.top_types(usize::MAX);
    for (k, (i, n, b)) in all_types.iter().enumerate() {
        let mean = *b as f64 / (*n).max(1) as f64;
        if k < opts.top {
            let _ = writeln!(
                text,
                "  {:<32} {n:>12} {:>7.2}% {:>12.1} B",
                name_of(*i),
                share(*n),
                mean
            );
        }
        types.row(vec![
            name_of(*i).into(),
            (*i).into(),
            (*n).into(),
            share(*n).into(),
            (*b).into(),
            mean.into(),
        ]);
    }
    types.keep(opts.top, &["events", "share", "payload"]);
    rep.push(Section::table("event_types", "Event types", types).verbatim(text));

    // Threads.
    let mut threads = Table::new(vec![
        Column::new("pid", "pid", Unit::Id),
        Column::new("thread", "thread", Unit::HexId),
        Column::new("events", "events", Unit::Count),
        Column::new("share", "share", Unit::Percent),
    ])
    .sorted_by("events", true);
    let mut text = format!("\n  {:>8} {:>18} {:>12}\n", "pid", "thread", "events");
    for (k, ((p, t), n)) in s.top_threads(usize::MAX).into_iter().enumerate() {
        if k < opts.top {
            let _ = writeln!(text, "  {p:>8} {t:>#18x} {n:>12}");
        }
        threads.row(vec![p.into(), t.into(), n.into(), share(n).into()]);
    }
    threads.keep(opts.top, &["events", "share"]);
    rep.push(Section::table("threads", "Threads", threads).verbatim(text));

    // Processes (not in the text report).
    let mut threads_per_pid = std::collections::BTreeMap::<i32, u64>::new();
    for (p, _) in s.threads.keys() {
        *threads_per_pid.entry(*p).or_default() += 1;
    }
    let mut pids: Vec<(i32, u64)> = s.pids.iter().map(|(p, n)| (*p, *n)).collect();
    pids.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut procs = Table::new(vec![
        Column::new("pid", "pid", Unit::Id),
        Column::new("threads", "threads", Unit::Count),
        Column::new("events", "events", Unit::Count),
        Column::new("share", "share", Unit::Percent),
    ])
    .sorted_by("events", true);
    for (p, n) in pids {
        procs.row(vec![
            p.into(),
            threads_per_pid.get(&p).copied().unwrap_or(0).into(),
            n.into(),
            share(n).into(),
        ]);
    }
    procs.keep(opts.top, &["threads", "events", "share"]);
    rep.push(Section::table("processes", "Processes", procs).omit_text());

    // Events over time.
    if let Some(first) = s.first_ns {
        let types_chart = over_time(by_type.finish(), |id| name_of(*id), opts, first);
        rep.push(
            Section::new(
                "events_by_type",
                "Events over time, by type",
                Body::Series(types_chart),
            )
            .omit_text(),
        );
        let pid_chart = over_time(by_pid.finish(), |p| format!("pid {p}"), opts, first);
        rep.push(
            Section::new(
                "events_by_process",
                "Events over time, by process",
                Body::Series(pid_chart),
            )
            .omit_text(),
        );
    }

    if !r.warnings.is_empty() || s.corrupt > 0 {
        let mut w = Section::warnings("warnings", "Warnings", &r.warnings);
        if s.corrupt > 0 {
            if let Body::Notes { items, .. } = &mut w.body {
                items.push(Note {
                    level: Level::Warning,
                    text: format!(
                        "{} records could not be read (the rest of each such block was skipped)",
                        s.corrupt
                    ),
                });
            }
        }
        rep.push(w.omit_text());
    }
    rep
}

/// Events per bucket of time since `first` (ns), the busiest keys first.
fn over_time<K>(b: Buckets<K>, name: impl Fn(&K) -> String, opts: &Options, first: i64) -> Series {
    b.to_series(
        opts.series,
        name,
        "time since the first event",
        Unit::S,
        1e-9,
        first,
        "events per bucket",
        Unit::Count,
    )
}
