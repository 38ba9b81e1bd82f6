//! The build report as data ([`tracekit_report::Report`]): what `tracekit
//! report` renders as text, `--json` (`tracekit.report/1`) and `--html`.
//!
//! Each section carries its part of [`report_text`]'s output verbatim
//! (the text stays what it was, byte for byte); the bodies hold the data:
//! the process tree (spans by parent, times since the build's first
//! start), a Gantt chart of the steps (each job with its processes nested
//! under it, on lanes packed like job slots, the critical path
//! highlighted), parallelism over time, the slowest compile units, the
//! critical path, the job-slot waits.
//!
//! [`report_text`]: crate::analysis::report_text

use std::io;

use tracekit_report::{
    Body, Column, Item, Lane, Line, Report, Section, Series, Span, SpanView, Spans, Table,
    TextForm, Unit,
};

use crate::analysis::{
    failed_count, fmt_dur, fmt_exit, units_by_duration, write_critical_path, write_parallelism,
    write_slowest_units, write_summary, write_trailer, write_tree, write_waits, Build,
};
use crate::steps::{Named, StepGraph, StepKind, StepOptions, WidthHow};

/// What the report shows.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows of the ranked tables (the CLI's `--top`).
    pub top: usize,
    /// Start the text with `== NAME` (several traces in one report).
    pub heading: bool,
    /// Spans of the process tree at most (the first in tree order; the
    /// rest counted).
    pub tree_spans: usize,
    /// Spans of the Gantt chart at most (the critical path's, then the
    /// longest; the rest counted).
    pub gantt_spans: usize,
    /// Buckets of the parallelism chart.
    pub buckets: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 20,
            heading: false,
            tree_spans: 500,
            gantt_spans: 1000,
            buckets: 200,
        }
    }
}

fn text_of(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = f(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// The report of the build trace `name` (the input as the user named it).
pub fn to_report(b: &Build, name: &str, opts: &Options) -> Report {
    let t = b.trace;
    let g = b.steps(&StepOptions::default());
    let top = opts.top;
    let mut rep = Report::new("build", format!("Build trace {name}"));
    rep.input(name, Some("kwinject".to_string()));
    rep.text = TextForm::Omit;
    let span = b.span();
    let origin = span.map_or(0, |(s, _)| s);

    // Summary.
    let mut kinds = [0u64; 4];
    for s in &g.steps {
        kinds[s.kind as usize] += 1;
    }
    let (slot, other) = g.wait_totals();
    let timed = span.is_some();
    let items = vec![
        Item::new("processes", "processes", t.processes.len(), Unit::Count),
        Item::new(
            "compile_units",
            "compile units",
            b.compile_units,
            Unit::Count,
        ),
        Item::new("failed", "failed processes", failed_count(b), Unit::Count),
        Item::new("creator", "creator", t.creator.clone(), Unit::Text),
        Item::new(
            "wall_time",
            "wall time",
            span.map(|(s, e)| secs(e - s)),
            Unit::S,
        ),
        Item::new("steps", "steps", g.steps.len(), Unit::Count),
        Item::new("compile_steps", "compile steps", kinds[0], Unit::Count),
        Item::new("archive_steps", "archive steps", kinds[1], Unit::Count),
        Item::new("link_steps", "link steps", kinds[2], Unit::Count),
        Item::new("other_steps", "other steps", kinds[3], Unit::Count),
        Item::new(
            "folded_steps",
            "short steps folded in the text",
            g.steps.iter().filter(|s| s.folded).count(),
            Unit::Count,
        ),
        Item::new(
            "jobs",
            "job slots",
            if timed { g.width.jobs } else { None },
            Unit::Count,
        ),
        Item::new(
            "jobs_from",
            "job slots from",
            timed.then(|| match &g.width.how {
                WidthHow::Argument { text, .. } => format!("argument {text}"),
                WidthHow::MakeDefault { .. } => "make's default (one job)".to_string(),
                WidthHow::Observed => "observed".to_string(),
            }),
            Unit::Text,
        ),
        Item::new(
            "peak_jobs",
            "most steps at once",
            timed.then_some(g.peak_jobs),
            Unit::Count,
        ),
        Item::new(
            "critical_path",
            "critical path",
            g.critical_path.as_ref().map(|c| secs(c.total_us)),
            Unit::S,
        ),
        Item::new(
            "slot_wait",
            "job-slot waits",
            timed.then(|| secs(slot)),
            Unit::S,
        ),
        Item::new(
            "other_wait",
            "other delays of ready steps",
            timed.then(|| secs(other)),
            Unit::S,
        ),
        Item::new(
            "truncated_kept",
            "records the recorder kept (truncated trace)",
            t.truncated.as_ref().map(|x| x.records),
            Unit::Count,
        ),
        Item::new(
            "truncated_of",
            "records the build had (truncated trace)",
            t.truncated.as_ref().map(|x| x.of),
            Unit::Count,
        ),
        Item::new("lost_records", "records missing", t.lost(), Unit::Count),
        Item::new(
            "warnings",
            "warnings while reading",
            t.warnings.total(),
            Unit::Count,
        ),
    ];
    let mut head = if opts.heading {
        format!("== {name}\n")
    } else {
        String::new()
    };
    head.push_str(&text_of(|o| write_summary(b, &g, o)));
    rep.push(Section::summary("summary", "Summary", items).verbatim(head));
    if !timed {
        rep.push(
            Section::notes(
                "no_times",
                "No times",
                vec![tracekit_report::Note {
                    level: tracekit_report::Level::Info,
                    text: "The trace has no tk_start_us/tk_end_us (not a tracekit recording): \
                           no durations, Gantt chart, critical path, waits or parallelism."
                        .into(),
                }],
            )
            .omit_text(),
        );
    }

    // The process tree.
    rep.push(
        process_tree(b, &g, origin, timed, opts.tree_spans)
            .verbatim(text_of(|o| write_tree(b, &g, o))),
    );
    if timed {
        rep.push(gantt(b, &g, origin, opts.gantt_spans).omit_text());
    }

    // Slowest compile units.
    let mut units = Table::new(vec![
        Column::new("file", "source", Unit::Text),
        Column::new("duration_s", "duration", Unit::S),
        Column::new("exit", "exit", Unit::Text),
        Column::new("record", "record", Unit::Id),
    ])
    .sorted_by("duration_s", true);
    for i in units_by_duration(b) {
        let p = b.p(i);
        units.row(vec![
            b.compile_file[i].clone().into(),
            p.duration_us().map(secs).into(),
            p.exit.map(|e| fmt_exit(Some(e))).into(),
            i.into(),
        ]);
    }
    units.keep(top, &["duration_s"]);
    rep.push(
        Section::table("slowest_units", "Slowest compile units", units)
            .verbatim(text_of(|o| write_slowest_units(b, top, o))),
    );

    // The critical path.
    let mut path = Table::new(vec![
        Column::new("step", "step", Unit::Id),
        Column::new("kind", "kind", Unit::Text),
        Column::new("name", "builds", Unit::Text),
        Column::new("start_s", "start", Unit::S),
        Column::new("duration_s", "duration", Unit::S),
        Column::new("reads", "reads (from the step before)", Unit::Text),
    ]);
    if let Some(cp) = &g.critical_path {
        for (k, &s) in cp.steps.iter().enumerate() {
            let step = &g.steps[s];
            let via = k
                .checked_sub(1)
                .and_then(|e| cp.edges.get(e))
                .map(|&e| crate::steps::short_path(&g.edges[e].file, &g.base));
            path.row(vec![
                s.into(),
                step.kind.as_str().into(),
                step.name.as_str().into(),
                step.start_us.map(|x| secs(x.saturating_sub(origin))).into(),
                step.duration_us().map(secs).into(),
                via.into(),
            ]);
        }
    }
    let mut how: std::collections::BTreeMap<(StepKind, StepKind, Named), u64> =
        std::collections::BTreeMap::new();
    for e in &g.edges {
        *how.entry((e.written_by, e.read_by, e.named)).or_default() += 1;
    }
    let mut deps = Table::new(vec![
        Column::new("written_by", "written by", Unit::Text),
        Column::new("read_by", "read by", Unit::Text),
        Column::new("named", "named", Unit::Text),
        Column::new("files", "files", Unit::Count),
    ]);
    for ((w, r, named), n) in how {
        deps.row(vec![
            w.as_str().into(),
            r.as_str().into(),
            named.as_str().into(),
            n.into(),
        ]);
    }
    rep.push(
        Section::table("critical_path", "Critical path", path)
            .verbatim(text_of(|o| write_critical_path(b, &g, o)))
            .child(
                Section::table(
                    "dependencies",
                    "Dependencies (files a step read that an earlier step wrote)",
                    deps,
                )
                .omit_text(),
            ),
    );

    // Job-slot waits.
    let mut waits = Table::new(vec![
        Column::new("step", "step", Unit::Id),
        Column::new("kind", "kind", Unit::Text),
        Column::new("name", "builds", Unit::Text),
        Column::new("ready_s", "ready", Unit::S),
        Column::new("slot_wait_s", "job-slot wait", Unit::S),
        Column::new("other_wait_s", "other delay", Unit::S),
    ])
    .sorted_by("slot_wait_s", true);
    let mut waited: Vec<_> = g.waits.iter().filter(|w| w.slot_us > 0).collect();
    waited.sort_by_key(|w| std::cmp::Reverse(w.slot_us));
    for w in waited {
        let step = &g.steps[w.step];
        waits.row(vec![
            w.step.into(),
            step.kind.as_str().into(),
            step.name.as_str().into(),
            secs(w.ready_us.saturating_sub(origin)).into(),
            secs(w.slot_us).into(),
            secs(w.other_us).into(),
        ]);
    }
    waits.keep(top, &["slot_wait_s", "other_wait_s"]);
    let mut waits = Section::table("job_slot_waits", "Job-slot waits", waits)
        .verbatim(text_of(|o| write_waits(b, &g, top, o)));
    if !timed {
        waits = waits.omit_html();
    }
    rep.push(waits);

    // Parallelism over time.
    if let Some((width, busy)) = b.parallelism(opts.buckets.max(1)) {
        let x: Vec<f64> = (0..busy.len()).map(|k| secs(k as u64 * width)).collect();
        let mut lines = vec![Line {
            name: "processes working".into(),
            values: busy,
        }];
        if let Some(jobs) = g.width.jobs {
            lines.push(Line {
                name: "job slots".into(),
                values: vec![jobs as f64; x.len()],
            });
        }
        rep.push(
            Section::new(
                "parallelism",
                "Parallelism over time (processes working, not waiting for a child)",
                Body::Series(Series {
                    x_label: "time since the build's first start".into(),
                    x_unit: Unit::S,
                    x,
                    bucket: Some(secs(width)),
                    y_label: "processes working (average over the bucket)".into(),
                    y_unit: Unit::Count,
                    stacked: false,
                    lines,
                    folded: 0,
                }),
            )
            .verbatim(text_of(|o| write_parallelism(b, o))),
        );
    }

    let mut warnings = Section::warnings("warnings", "Warnings", &t.warnings)
        .verbatim(text_of(|o| write_trailer(b, o)));
    if t.warnings.is_empty() {
        warnings = warnings.omit_html();
    }
    rep.push(warnings);
    rep
}

/// Every process by parent, with its times (since `origin`, µs) and
/// status; a trace without times gives a table instead.
fn process_tree(b: &Build, g: &StepGraph, origin: u64, timed: bool, cap: usize) -> Section {
    let t = b.trace;
    let title = "Process tree";
    if !timed {
        let mut table = Table::new(vec![
            Column::new("record", "record", Unit::Id),
            Column::new("parent", "parent record", Unit::Id),
            Column::new("exit", "exit", Unit::Text),
            Column::new("process", "process", Unit::Text),
        ]);
        for i in 0..t.processes.len() {
            table.row(vec![
                i.into(),
                b.parent[i].into(),
                b.p(i).exit.map(|e| fmt_exit(Some(e))).into(),
                b.label(i, g).into(),
            ]);
        }
        table.keep(cap, &[]);
        return Section::table("process_tree", title, table);
    }
    let critical = on_critical_path(g, t.processes.len());
    let mut spans = Vec::new();
    let mut more = 0u64;
    // Depth first, parents before children (record order within).
    let mut stack: Vec<(usize, u32)> = b.roots().into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        stack.extend(b.children[i].iter().rev().map(|&c| (c, depth + 1)));
        if spans.len() >= cap {
            more += 1;
            continue;
        }
        let p = b.p(i);
        let (start, end, note) = match (p.start_us, p.end_us) {
            (Some(s), Some(e)) => (s, e.max(s), ""),
            (Some(s), None) => (s, s, "; no end recorded"),
            // Drawn at its parent's start, and said so.
            _ => {
                let s = b.parent[i].and_then(|q| b.p(q).start_us).unwrap_or(origin);
                (s, s, "; no times recorded (drawn at its parent's start)")
            }
        };
        spans.push(Span {
            lane: 0,
            depth,
            start: secs(start.saturating_sub(origin)),
            end: secs(end.saturating_sub(origin)),
            name: b.label(i, g),
            id: Some(i as u64),
            parent: b.parent[i].map(|q| q as u64),
            highlight: critical[i],
            detail: Some(format!(
                "{}, {}{note}; {}",
                fmt_dur(p.duration_us()),
                fmt_exit(p.exit),
                cut(&p.args.join(" "), 160)
            )),
        });
    }
    Section::new(
        "process_tree",
        title,
        Body::Spans(Spans {
            view: SpanView::Tree,
            unit: Unit::S,
            lanes: vec![Lane {
                name: "processes".into(),
            }],
            spans,
            highlight: Some("on the critical path".into()),
            more,
        }),
    )
}

/// `s` cut to `n` characters (`...` when cut).
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut o: String = s.chars().take(n.saturating_sub(3)).collect();
    o.push_str("...");
    o
}

/// Per process record, whether its step is on the critical path.
fn on_critical_path(g: &StepGraph, n: usize) -> Vec<bool> {
    let mut on = vec![false; g.steps.len()];
    if let Some(cp) = &g.critical_path {
        for &s in &cp.steps {
            on[s] = true;
        }
    }
    (0..n)
        .map(|i| g.step_of.get(i).copied().flatten().is_some_and(|s| on[s]))
        .collect()
}

/// The steps on lanes packed as job slots (a step takes the first lane
/// free at its start), each step's processes nested under it by depth,
/// the critical path highlighted; the build tools that ran them on a lane
/// of their own. At most `cap` spans: the critical path's, then the
/// longest.
fn gantt(b: &Build, g: &StepGraph, origin: u64, cap: usize) -> Section {
    let critical = on_critical_path(g, b.trace.processes.len());
    let mut order: Vec<usize> = (0..g.steps.len())
        .filter(|&s| g.steps[s].start_us.is_some())
        .collect();
    order.sort_by_key(|&s| (g.steps[s].start_us, s));
    // Lane 0: the build tools (processes in no step).
    let mut lanes = vec![Lane {
        name: "build tool".into(),
    }];
    let mut free_at: Vec<u64> = Vec::new();
    let mut lane_of = vec![0u32; g.steps.len()];
    for &s in &order {
        let st = &g.steps[s];
        let (start, end) = (
            st.start_us.unwrap_or(0),
            st.end_us.or(st.start_us).unwrap_or(0),
        );
        let k = match free_at.iter().position(|&f| f <= start) {
            Some(k) => k,
            None => {
                free_at.push(0);
                lanes.push(Lane {
                    name: format!("slot {}", free_at.len()),
                });
                free_at.len() - 1
            }
        };
        free_at[k] = end.max(start);
        lane_of[s] = k as u32 + 1;
    }
    let mut spans = Vec::new();
    let mut more = 0u64;
    let n = b.trace.processes.len();
    // The spans kept: the critical path's, then the longest.
    let mut by_weight: Vec<usize> = (0..n)
        .filter(|&i| b.p(i).start_us.is_some() && b.p(i).end_us.is_some())
        .collect();
    by_weight.sort_by_key(|&i| {
        (
            !critical[i],
            std::cmp::Reverse(b.p(i).duration_us().unwrap_or(0)),
            i,
        )
    });
    let mut keep = vec![false; n];
    for &i in by_weight.iter().take(cap) {
        keep[i] = true;
    }
    // Depth of each record within its step (0: the step's process), or
    // within the build tools' tree.
    let mut depth = vec![0u32; n];
    for i in 0..n {
        let p = b.p(i);
        let (Some(s), Some(e)) = (p.start_us, p.end_us) else {
            continue;
        };
        let step = g.step_of[i];
        if let Some(q) = b.parent[i] {
            let same = match step {
                Some(st) => g.step_of[q] == Some(st) && g.steps[st].process != i,
                None => g.step_of[q].is_none(),
            };
            if same {
                depth[i] = depth[q] + 1;
            }
        }
        if !keep[i] {
            more += 1;
            continue;
        }
        let lane = step.map_or(0, |st| lane_of[st]);
        let name = match step {
            Some(st) if g.steps[st].process == i => {
                format!("{} {}", g.steps[st].kind.as_str(), g.steps[st].name)
            }
            _ => b.label(i, g),
        };
        spans.push(Span {
            lane,
            depth: depth[i],
            start: secs(s.saturating_sub(origin)),
            end: secs(e.max(s).saturating_sub(origin)),
            name,
            id: Some(i as u64),
            parent: b.parent[i].map(|q| q as u64),
            highlight: critical[i],
            detail: Some(format!(
                "{}, {}",
                fmt_dur(p.duration_us()),
                fmt_exit(p.exit)
            )),
        });
    }
    Section::new(
        "gantt",
        "Steps over time (lanes packed like job slots)",
        Body::Spans(Spans {
            view: SpanView::Gantt,
            unit: Unit::S,
            lanes,
            spans,
            highlight: Some("on the critical path".into()),
            more,
        }),
    )
}
