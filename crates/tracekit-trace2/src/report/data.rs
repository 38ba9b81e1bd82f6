//! The report as data ([`tracekit_report::Report`]): what `tracekit
//! report` renders as text, `--json` (`tracekit.report/1`) and `--html`.
//!
//! Each section carries its part of [`write_text`](super::write_text)'s
//! output verbatim, so the text stays what it was byte for byte; the
//! bodies hold the data for JSON and the page: the per-command latency
//! table and the distribution of every command's duration, region totals,
//! errors, and for each session shown its process tree (spans by parent,
//! times from the session's start), its regions as a flame graph and its
//! data, counters, timers and errors.

use tracekit_report::{
    Body, Bucket, Column, Flame, Histogram, Item, Lane, MoreStacks, Report as Doc, Section, Span,
    SpanView, Spans, Stack, Table, TextForm, Unit, Value,
};

use super::text::{
    write_command_regions, write_commands, write_errors, write_header, write_region_totals,
    write_session, write_sessions_heading,
};
use super::*;

/// Spans of one session's process tree, at most (the rest counted).
pub const MAX_SESSION_SPANS: usize = 500;
/// Stacks of one session's region flame graph, at most.
pub const MAX_REGION_STACKS: usize = 500;
/// Rows of one session's data/counter/timer/error table, at most.
pub const MAX_DETAIL_ROWS: usize = 200;

/// What one of the text writers prints, as a string.
fn text_of(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = f(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn label(name: &str, mode: Option<&str>) -> String {
    match mode {
        Some(m) => format!("{name}#{m}"),
        None => name.to_string(),
    }
}

/// The report of `r` as data. `inputs` are the inputs as the user named
/// them (files or directories); `top` is the CLI's `--top` (the ranked
/// tables keep that many rows, as the text does).
pub fn to_report(r: &Report, inputs: &[String], top: usize) -> Doc {
    let top = top.max(1);
    let mut doc = Doc::new("trace2", "Git Trace2 report");
    for i in inputs {
        doc.input(i.clone(), Some("Git Trace2".to_string()));
    }
    doc.text = TextForm::Omit;

    let a = &r.anomalies;
    let items = vec![
        Item::new("events", "events", r.events, Unit::Count),
        Item::new("processes", "processes", r.processes, Unit::Count),
        Item::new("sessions", "sessions", r.sessions, Unit::Count),
        Item::new("files", "files read", r.sources.len(), Unit::Count),
        Item::new(
            "unfinished_processes",
            "processes that did not end",
            r.unfinished_processes,
            Unit::Count,
        ),
        Item::new(
            "late_processes",
            "processes after their session was summarised",
            r.late_processes,
            Unit::Count,
        ),
        Item::new(
            "unmatched_region_leave",
            "region_leave without region_enter",
            a.unmatched_region_leave,
            Unit::Count,
        ),
        Item::new(
            "unclosed_regions",
            "regions never left",
            a.unclosed_regions,
            Unit::Count,
        ),
        Item::new(
            "unmatched_child_exit",
            "child_exit without child_start",
            a.unmatched_child_exit,
            Unit::Count,
        ),
        Item::new(
            "events_without_process",
            "events without a process",
            a.events_without_process,
            Unit::Count,
        ),
    ];
    doc.push(
        Section::summary("summary", "Summary", items).verbatim(text_of(|o| write_header(r, o))),
    );

    doc.push(
        Section::table("commands", "Commands (by total time)", commands(r, top))
            .verbatim(text_of(|o| write_commands(r, o, top))),
    );
    doc.push(
        Section::new(
            "command_durations",
            "Command durations",
            Body::Histogram(Histogram {
                counted: "commands".into(),
                unit: Unit::S,
                log: true,
                buckets: r
                    .command_durations
                    .iter()
                    .map(|b| Bucket {
                        lo: b.lo_us as f64 / 1e6,
                        hi: b.hi_us as f64 / 1e6,
                        count: b.count,
                    })
                    .collect(),
            }),
        )
        .omit_text(),
    );
    doc.push(
        Section::table(
            "regions",
            "Regions (by total time over all processes)",
            regions(r, top),
        )
        .verbatim(text_of(|o| write_region_totals(r, o, top))),
    );
    doc.push(
        Section::table(
            "command_regions",
            "Costliest regions per command",
            command_regions(r, top),
        )
        .verbatim(text_of(|o| write_command_regions(r, o, top))),
    );
    doc.push(
        Section::table("errors", "Errors (by format)", errors(r, top))
            .verbatim(text_of(|o| write_errors(r, o, top))),
    );

    let title = if (r.sessions_shown.len() as u64) < r.sessions {
        format!(
            "Sessions (the {} slowest of {})",
            r.sessions_shown.len(),
            r.sessions
        )
    } else {
        "Sessions".to_string()
    };
    let mut group = Section::group("sessions", title);
    if r.sessions_shown.is_empty() {
        group = group.verbatim("");
    } else {
        group = group.verbatim(text_of(|o| write_sessions_heading(r, o)));
    }
    for (k, s) in r.sessions_shown.iter().enumerate() {
        group = group.child(session(s, k + 1));
    }
    doc.push(group);
    doc
}

fn commands(r: &Report, top: usize) -> Table {
    let mut t = Table::new(vec![
        Column::new("command", "command", Unit::Text),
        Column::new("mode", "mode", Unit::Text),
        Column::new("count", "count", Unit::Count),
        Column::new("failed", "failed", Unit::Count),
        Column::new("unfinished", "unfinished", Unit::Count),
        Column::new("p50_s", "p50", Unit::S),
        Column::new("p90_s", "p90", Unit::S),
        Column::new("p99_s", "p99", Unit::S),
        Column::new("max_s", "max", Unit::S),
        Column::new("total_s", "total", Unit::S),
    ])
    .sorted_by("total_s", true);
    for c in &r.commands {
        t.row(vec![
            c.name.as_str().into(),
            c.mode.clone().into(),
            c.count.into(),
            c.failed.into(),
            c.unfinished.into(),
            c.p50_s.into(),
            c.p90_s.into(),
            c.p99_s.into(),
            c.max_s.into(),
            c.total_s.into(),
        ]);
    }
    t.keep(top, &["count", "failed", "unfinished", "total_s"]);
    t
}

fn regions(r: &Report, top: usize) -> Table {
    let mut t = Table::new(vec![
        Column::new("category", "category", Unit::Text),
        Column::new("label", "label", Unit::Text),
        Column::new("count", "count", Unit::Count),
        Column::new("total_s", "total", Unit::S),
        Column::new("self_s", "self", Unit::S),
        Column::new("max_s", "max", Unit::S),
    ])
    .sorted_by("total_s", true);
    for x in &r.regions {
        t.row(vec![
            x.category.as_str().into(),
            x.label.as_str().into(),
            x.count.into(),
            x.total_s.into(),
            x.self_s.into(),
            x.max_s.into(),
        ]);
    }
    t.keep(top, &["count", "total_s", "self_s"]);
    t
}

fn command_regions(r: &Report, top: usize) -> Table {
    let mut t = Table::new(vec![
        Column::new("command", "command", Unit::Text),
        Column::new("mode", "mode", Unit::Text),
        Column::new("category", "category", Unit::Text),
        Column::new("label", "label", Unit::Text),
        Column::new("count", "count", Unit::Count),
        Column::new("total_s", "total", Unit::S),
        Column::new("share", "share of the command's time", Unit::Percent),
    ]);
    for c in r.commands.iter().take(top) {
        for x in &c.top_regions {
            let share = (c.total_s > 0.0).then(|| x.total_s / c.total_s * 100.0);
            t.row(vec![
                c.name.as_str().into(),
                c.mode.clone().into(),
                x.category.as_str().into(),
                x.label.as_str().into(),
                x.count.into(),
                x.total_s.into(),
                share.into(),
            ]);
        }
    }
    t
}

fn errors(r: &Report, top: usize) -> Table {
    let mut t = Table::new(vec![
        Column::new("format", "format", Unit::Text),
        Column::new("count", "count", Unit::Count),
        Column::new("example", "first message", Unit::Text),
    ])
    .sorted_by("count", true);
    for e in &r.errors {
        t.row(vec![
            e.format.as_str().into(),
            e.count.into(),
            e.example.as_str().into(),
        ]);
    }
    t.keep(top, &["count"]);
    t
}

/// One session: its text, its process tree, its regions, its details.
fn session(s: &SessionReport, k: usize) -> Section {
    let id = format!("session_{k}");
    let title = format!(
        "Session {}{}",
        s.session,
        s.elapsed_s
            .map_or(String::new(), |e| format!(" ({e:.6} s)"))
    );
    let mut sec = Section::group(id.clone(), title).verbatim(text_of(|o| write_session(s, o)));
    let mut walk = Walk::new(s);
    for p in &s.processes {
        walk.process(p, None, 0, None);
    }
    let mut items = vec![
        Item::new("session", "session", s.session.as_str(), Unit::Text),
        Item::new("start", "start (UTC)", s.start.clone(), Unit::Text),
        Item::new("elapsed", "elapsed", s.elapsed_s, Unit::S),
        Item::new("processes", "processes", walk.processes, Unit::Count),
    ];
    if walk.unplaced > 0 {
        items.push(Item::new(
            "unplaced",
            "processes whose start the trace does not carry",
            walk.unplaced,
            Unit::Count,
        ));
    }
    sec = sec.child(Section::summary(format!("{id}_summary"), "Session", items).omit_text());
    sec = sec.child(
        Section::new(
            format!("{id}_processes"),
            "Process tree",
            Body::Spans(Spans {
                view: SpanView::Tree,
                unit: Unit::S,
                lanes: vec![Lane {
                    name: s.session.clone(),
                }],
                spans: walk.spans,
                highlight: None,
                more: walk.more_spans,
            }),
        )
        .omit_text(),
    );
    if !walk.stacks.is_empty() {
        let mut stacks = walk.stacks;
        stacks.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        let more = (stacks.len() > MAX_REGION_STACKS).then(|| {
            let rest = stacks.split_off(MAX_REGION_STACKS);
            MoreStacks {
                stacks: rest.len() as u64,
                weight: rest.iter().map(|s| s.weight).sum(),
            }
        });
        sec = sec.child(
            Section::new(
                format!("{id}_regions"),
                "Regions (self time by process, thread and region path)",
                Body::Flame(Flame {
                    measure: "self time".into(),
                    unit: Unit::S,
                    stacks,
                    more,
                }),
            )
            .omit_text(),
        );
    }
    if !walk.details.rows.is_empty() || walk.details.more.is_some() {
        sec = sec.child(
            Section::table(
                format!("{id}_details"),
                "Data, counters, timers and errors",
                walk.details,
            )
            .omit_text(),
        );
    }
    sec
}

/// A depth-first walk of a session's processes, collecting the tree's
/// spans, the regions' stacks and the detail rows.
struct Walk {
    /// The session's start (µs since the epoch): the SID's time, else the
    /// earliest start of its processes.
    origin: Option<i64>,
    spans: Vec<Span>,
    more_spans: u64,
    stacks: Vec<Stack>,
    details: Table,
    processes: u64,
    unplaced: u64,
}

fn earliest(p: &ProcessReport) -> Option<i64> {
    let mut m = p.start_unix_us;
    let mut see = |x: Option<i64>| {
        if let Some(x) = x {
            m = Some(m.map_or(x, |v: i64| v.min(x)));
        }
    };
    for c in &p.children {
        see(c.start_unix_us);
        if let Some(cp) = &c.process {
            see(earliest(cp));
        }
    }
    for q in p.exec.iter().chain(&p.forked).chain(&p.descendants) {
        see(earliest(q));
    }
    m
}

impl Walk {
    fn new(s: &SessionReport) -> Walk {
        let origin = s
            .session
            .split('/')
            .next()
            .and_then(|root| crate::time::UnixMicros::parse_sid(root.as_bytes()))
            .map(|t| t.0)
            .or_else(|| s.processes.iter().filter_map(earliest).min());
        Walk {
            origin,
            spans: Vec::new(),
            more_spans: 0,
            stacks: Vec::new(),
            details: Table::new(vec![
                Column::new("process", "process", Unit::Text),
                Column::new("kind", "kind", Unit::Text),
                Column::new("thread", "thread", Unit::Text),
                Column::new("name", "name", Unit::Text),
                Column::new("value", "value", Unit::Text),
            ]),
            processes: 0,
            unplaced: 0,
        }
    }

    /// Seconds since the session's start.
    fn at(&self, unix_us: Option<i64>) -> Option<f64> {
        Some((unix_us? - self.origin?) as f64 / 1e6)
    }

    fn push(&mut self, mut span: Span) -> Option<u64> {
        if self.spans.len() >= MAX_SESSION_SPANS {
            self.more_spans += 1;
            return None;
        }
        let id = self.spans.len() as u64;
        span.id = Some(id);
        self.spans.push(span);
        Some(id)
    }

    /// `p` under span `parent` (if any) at `depth`; `started` is when its
    /// parent started it (a child's `child_start`), when known.
    fn process(
        &mut self,
        p: &ProcessReport,
        parent: Option<(u64, f64)>,
        depth: u32,
        started: Option<f64>,
    ) {
        self.processes += 1;
        let own = p.sid.rsplit('/').next().unwrap_or(&p.sid).to_string();
        let own = if p.fork > 0 {
            format!("{own} fork {}", p.fork)
        } else {
            own
        };
        let name = format!(
            "git {}",
            label(
                p.cmd_name.as_deref().unwrap_or("(no cmd_name)"),
                p.cmd_mode.as_deref()
            )
        );
        let end = match p.end {
            "exit" => format!("exit {}", p.exit_code.unwrap_or(0)),
            "signal" => format!("signal {}", p.signal.unwrap_or(0)),
            "exec" => "exec".to_string(),
            _ => "no exit (crashed, killed or cut off)".to_string(),
        };
        let mut argv = Vec::new();
        crate::quote::sq_quote_argv(&mut argv, &p.argv);
        let mut detail = format!("[{own}] {end}; argv: {}", text(&argv));
        if let Some(v) = &p.version {
            detail.push_str(&format!("; git {v}"));
        }
        if !p.source.is_empty() {
            detail.push_str(&format!("; file: {}", p.source));
        }
        let start = match self.at(p.start_unix_us).or(started) {
            Some(s) => {
                detail.push_str(&format!("; started at +{s:.6} s"));
                s
            }
            None => {
                // Not in the trace (a forked process, PERF/NORMAL input):
                // drawn at its parent's start, and said so.
                self.unplaced += 1;
                detail.push_str("; start not in the trace (drawn at its parent's)");
                parent.map_or(0.0, |(_, s)| s)
            }
        };
        if p.elapsed_s.is_none() {
            detail.push_str("; duration not known");
        }
        let id = self.push(Span {
            lane: 0,
            depth,
            start,
            end: start + p.elapsed_s.unwrap_or(0.0),
            name: name.clone(),
            id: None,
            parent: parent.map(|(id, _)| id),
            highlight: false,
            detail: Some(detail),
        });
        let me = id.map(|id| (id, start));
        // Regions, as stacks: process, thread, region path.
        for t in &p.threads {
            let mut path = vec![format!("{name} [{own}]"), t.thread.clone()];
            self.regions(&t.regions, &mut path);
        }
        self.details(p, &own);
        for c in &p.children {
            let cstart = self.at(c.start_unix_us);
            match &c.process {
                Some(cp) => self.process(cp, me.or(parent), depth + 1, cstart),
                None => self.child(c, me.or(parent), depth + 1, cstart),
            }
        }
        for q in p.exec.iter().chain(&p.forked).chain(&p.descendants) {
            self.process(q, me.or(parent), depth + 1, None);
        }
    }

    /// A child that has no trace of its own: its span as the parent saw it.
    fn child(&mut self, c: &ChildReport, parent: Option<(u64, f64)>, depth: u32, at: Option<f64>) {
        self.processes += 1;
        let class = match (&c.class, &c.hook) {
            (Some(cl), Some(h)) => format!("{cl}:{h}"),
            (Some(cl), None) => cl.clone(),
            (None, _) => "?".to_string(),
        };
        let status = match (c.exit_code, c.pid) {
            (Some(-1), Some(-1)) => "not started".to_string(),
            (Some(code), _) => format!("exit {code}"),
            (None, _) => "no child_exit".to_string(),
        };
        let mut argv = Vec::new();
        crate::quote::sq_quote_argv(&mut argv, &c.argv);
        let argv = text(&argv);
        let mut detail = format!("child [{}] {class}, {status}; argv: {argv}", c.child_id);
        let start = match at {
            Some(s) => {
                detail.push_str(&format!("; started at +{s:.6} s"));
                s
            }
            None => {
                self.unplaced += 1;
                detail.push_str("; start not in the trace (drawn at its parent's)");
                parent.map_or(0.0, |(_, s)| s)
            }
        };
        if c.elapsed_s.is_none() {
            detail.push_str("; duration not known");
        }
        let name: String = c.argv.first().cloned().unwrap_or_else(|| class.clone());
        self.push(Span {
            lane: 0,
            depth,
            start,
            end: start + c.elapsed_s.unwrap_or(0.0),
            name: format!("{name} (child {})", c.child_id),
            id: None,
            parent: parent.map(|(id, _)| id),
            highlight: false,
            detail: Some(detail),
        });
    }

    fn regions(&mut self, nodes: &[RegionNode], path: &mut Vec<String>) {
        for n in nodes {
            path.push(format!("{}/{}", n.category, n.label));
            if n.self_s > 0.0 {
                self.stacks.push(Stack {
                    frames: path.clone(),
                    weight: n.self_s,
                });
            }
            self.regions(&n.children, path);
            path.pop();
        }
    }

    fn details(&mut self, p: &ProcessReport, own: &str) {
        let mut rows: Vec<[Value; 5]> = Vec::new();
        if let Some(a) = &p.alias {
            let mut argv = Vec::new();
            crate::quote::sq_quote_argv(&mut argv, &a.argv);
            rows.push([
                own.into(),
                "alias".into(),
                Value::Null,
                a.alias.as_str().into(),
                text(&argv).into(),
            ]);
        }
        if let Some(h) = &p.hierarchy {
            rows.push([
                own.into(),
                "hierarchy".into(),
                Value::Null,
                Value::Null,
                h.as_str().into(),
            ]);
        }
        // What the builder left out of this process's lists, counted.
        for (what, n) in [
            ("data_omitted", p.data_omitted),
            ("errors_omitted", p.errors_omitted),
            ("children_omitted", p.children_omitted),
        ] {
            if n > 0 {
                rows.push([
                    own.into(),
                    what.into(),
                    Value::Null,
                    Value::Null,
                    n.to_string().into(),
                ]);
            }
        }
        for d in &p.data {
            rows.push([
                own.into(),
                if d.json { "data_json" } else { "data" }.into(),
                d.thread.as_str().into(),
                format!("{}/{}", d.category, d.key).into(),
                d.value.as_str().into(),
            ]);
        }
        for c in &p.counters {
            rows.push([
                own.into(),
                "counter".into(),
                c.thread.as_str().into(),
                format!("{}/{}", c.category, c.name).into(),
                c.count.to_string().into(),
            ]);
        }
        for t in &p.timers {
            rows.push([
                own.into(),
                "timer".into(),
                t.thread.as_str().into(),
                format!("{}/{}", t.category, t.name).into(),
                format!(
                    "intervals {}, total {:.6} s, min {:.6} s, max {:.6} s",
                    t.intervals, t.total_s, t.min_s, t.max_s
                )
                .into(),
            ]);
        }
        for e in &p.errors {
            rows.push([
                own.into(),
                "error".into(),
                Value::Null,
                Value::Null,
                e.as_str().into(),
            ]);
        }
        for r in rows {
            if self.details.rows.len() < MAX_DETAIL_ROWS {
                self.details.row(r.into());
            } else {
                let more = self.details.more.get_or_insert_with(Default::default);
                more.rows += 1;
                more.totals = vec![Value::Null; 5];
            }
        }
    }
}
