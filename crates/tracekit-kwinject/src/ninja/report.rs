//! The report of a `.ninja_log` as data ([`tracekit_report::Report`]):
//! what `tracekit report` renders as text, `--json`
//! (`tracekit.report/1`) and `--html`.
//!
//! Each section carries its part of the text report verbatim (the text
//! is what it was before the report became data, byte for byte); the
//! bodies hold the data: the summary, the slowest targets, the critical
//! path over the graph (how each target is linked to the one before), the
//! last run's job-slot waits and a Gantt chart of the last run's targets
//! on lanes as ninjatracing packs them, the critical path highlighted.
//! Times are milliseconds, as the log has them: a target's start and end
//! are since the start of its run of ninja.

use std::io::{self, Write};

use tracekit_report::{
    Body, Column, Item, Lane, Level, Note, Report, Section, Span, SpanView, Spans, Table, TextForm,
    Unit, Value,
};

use super::{log, DepKind, GraphSource, NinjaBuild, Target};

/// What the report shows.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows of the ranked tables (the CLI's `--top`).
    pub top: usize,
    /// Spans of the Gantt chart at most (the critical path's, then the
    /// longest; the rest counted).
    pub gantt_spans: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 20,
            gantt_spans: 1000,
        }
    }
}

/// A duration for people: seconds from one second on, else milliseconds.
pub fn fmt_ms(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else {
        format!("{:.1} ms", us as f64 / 1e3)
    }
}

/// Where the dependency graph came from, in words.
pub fn graph_text(b: &NinjaBuild) -> String {
    match &b.graph {
        GraphSource::Manifest(files) => format!("build.ninja ({} files)", files.len()),
        GraphSource::ToolGraph => "ninja -t graph output".into(),
        GraphSource::None => "none (no build.ninja beside the log)".into(),
    }
}

/// Microseconds as milliseconds: a whole number when it is one (the log's
/// times are whole milliseconds), else a fraction.
fn ms(us: u64) -> Value {
    if us.is_multiple_of(1000) {
        Value::UInt(us / 1000)
    } else {
        Value::Float(us as f64 / 1e3)
    }
}

fn text_of(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = f(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Targets by duration, longest first (the log's order among equals).
fn by_duration(b: &NinjaBuild) -> Vec<usize> {
    let mut order: Vec<usize> = (0..b.targets.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(b.targets[i].duration_ms()));
    order
}

/// Job-slot waits of the targets that waited, longest first.
fn waited(b: &NinjaBuild) -> Vec<&crate::steps::Wait> {
    let Some(w) = &b.waits else {
        return Vec::new();
    };
    let mut waited: Vec<_> = w.waits.iter().filter(|x| x.slot_us > 0).collect();
    waited.sort_by_key(|x| std::cmp::Reverse(x.slot_us));
    waited
}

fn write_summary(b: &NinjaBuild, name: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "ninja log v{}: {name}: {} targets from {} entries, {} runs in the log",
        b.log.version,
        b.targets.len(),
        b.log.entries.len(),
        b.runs
    )?;
    if let Some(w) = b.wall_us() {
        writeln!(
            out,
            "Last run: {} targets, wall time {} (the timeline's)",
            b.last_run().len(),
            fmt_ms(w)
        )?;
    }
    writeln!(out, "Dependency graph: {}", graph_text(b))?;
    if b.not_in_graph > 0 {
        writeln!(
            out,
            "  {} targets of the log have no build statement in the graph (removed since?)",
            b.not_in_graph
        )?;
    }
    Ok(())
}

fn write_slowest(b: &NinjaBuild, top: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "\nSlowest targets (the latest entry of each output, over all runs):"
    )?;
    for &i in by_duration(b).iter().take(top) {
        writeln!(
            out,
            "  {:>10}  {:<7}  {}",
            fmt_ms(b.targets[i].duration_ms() * 1000),
            b.info[i].kind.as_str(),
            b.info[i].name
        )?;
    }
    Ok(())
}

fn write_critical_path(b: &NinjaBuild, out: &mut dyn Write) -> io::Result<()> {
    let Some(cp) = &b.critical_path else {
        return writeln!(
            out,
            "\nCritical path: unknown (no build.ninja beside the log, and no ninja -t graph given)"
        );
    };
    writeln!(
        out,
        "\nCritical path (the longest chain of targets over the dependency graph, each \
         weighted by its measured time; {}{}):",
        fmt_ms(cp.total_us),
        b.wall_us()
            .map(|w| format!(" against {} wall time of the last run", fmt_ms(w)))
            .unwrap_or_default()
    )?;
    for (k, &s) in cp.steps.iter().enumerate() {
        let via = match k.checked_sub(1).map(|e| &b.deps[cp.edges[e]]) {
            Some(d) if d.kind == DepKind::Header => format!("  (header {})", d.file),
            Some(d) => format!("  (needs {})", d.file),
            None => String::new(),
        };
        writeln!(
            out,
            "  {:>10}  {:<7}  {}{via}",
            fmt_ms(b.targets[s].duration_ms() * 1000),
            b.info[s].kind.as_str(),
            b.info[s].name
        )?;
    }
    let (declared, headers) = dep_counts(b);
    writeln!(
        out,
        "  Dependencies: {declared} declared in the graph (through {} build statements \
         that ran nothing: phony, or not in the log), {headers} from ninja's deps log \
         (ninja -t deps)",
        b.passes.len()
    )
}

/// Dependencies declared in the graph, and from ninja's deps log.
fn dep_counts(b: &NinjaBuild) -> (usize, usize) {
    let declared = b
        .deps
        .iter()
        .filter(|d| d.kind == DepKind::Declared)
        .count();
    (declared, b.deps.len() - declared)
}

fn write_waits(b: &NinjaBuild, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let Some(w) = &b.waits else {
        return Ok(());
    };
    let (slot, other) = w.totals();
    let waited = waited(b);
    writeln!(
        out,
        "\nJob-slot waits of the last run (time a target that was ready waited while {} \
         commands ran: the most seen at once, the log does not say ninja's -j; ready: the \
         targets it depends on had ended): {} in all, {} targets",
        w.jobs,
        fmt_ms(slot),
        waited.len()
    )?;
    for x in waited.iter().take(top) {
        writeln!(
            out,
            "  {:>10}  {:<7}  {}",
            fmt_ms(x.slot_us),
            b.info[x.step].kind.as_str(),
            b.info[x.step].name
        )?;
    }
    writeln!(
        out,
        "  Other delays of ready targets (fewer commands running): {} in all",
        fmt_ms(other)
    )
}

/// Whether each target is on the critical path.
fn on_critical_path(b: &NinjaBuild) -> Vec<bool> {
    let mut on = vec![false; b.targets.len()];
    if let Some(cp) = &b.critical_path {
        for &s in &cp.steps {
            on[s] = true;
        }
    }
    on
}

/// The report of the log `name` (the input as the user named it).
pub fn to_report(b: &NinjaBuild, name: &str, opts: &Options) -> Report {
    let top = opts.top;
    let mut rep = Report::new("ninja", format!("ninja build log {name}"));
    rep.input(name, Some("ninja build log".to_string()));
    rep.text = TextForm::Omit;
    let has_graph = b.graph != GraphSource::None;

    // Summary.
    let items = vec![
        Item::new("version", "log version", b.log.version, Unit::Id),
        Item::new(
            "targets",
            "targets (the latest entry of each output)",
            b.targets.len(),
            Unit::Count,
        ),
        Item::new("entries", "entries", b.log.entries.len(), Unit::Count),
        Item::new("runs", "runs of ninja in the log", b.runs, Unit::Count),
        Item::new(
            "last_run_targets",
            "targets of the last run",
            b.last_run().len(),
            Unit::Count,
        ),
        Item::new(
            "wall_time",
            "wall time of the last run",
            b.wall_us().map(ms).unwrap_or(Value::Null),
            Unit::Ms,
        ),
        Item::new(
            "graph",
            "dependency graph",
            match &b.graph {
                GraphSource::Manifest(_) => Some("build.ninja"),
                GraphSource::ToolGraph => Some("ninja -t graph"),
                GraphSource::None => None,
            },
            Unit::Text,
        ),
        Item::new(
            "graph_files",
            "build.ninja files read",
            match &b.graph {
                GraphSource::Manifest(f) => Some(f.len()),
                _ => None,
            },
            Unit::Count,
        ),
        Item::new(
            "not_in_graph",
            "targets with no build statement in the graph",
            has_graph.then_some(b.not_in_graph),
            Unit::Count,
        ),
        Item::new(
            "critical_path",
            "critical path",
            b.critical_path
                .as_ref()
                .map(|c| ms(c.total_us))
                .unwrap_or(Value::Null),
            Unit::Ms,
        ),
        Item::new(
            "warnings",
            "warnings while reading",
            b.log.warnings.total(),
            Unit::Count,
        ),
    ];
    rep.push(
        Section::summary("summary", "Summary", items)
            .verbatim(text_of(|o| write_summary(b, name, o))),
    );

    // Slowest targets.
    let mut slowest = target_table(has_graph).sorted_by("duration_ms", true);
    for i in by_duration(b) {
        slowest.row(target_row(b, i, has_graph));
    }
    slowest.keep(top, &["duration_ms"]);
    rep.push(
        Section::table(
            "slowest_targets",
            "Slowest targets (the latest entry of each output, over all runs)",
            slowest,
        )
        .verbatim(text_of(|o| write_slowest(b, top, o))),
    );

    // The critical path.
    let path_text = text_of(|o| write_critical_path(b, o));
    match &b.critical_path {
        None => rep.push(
            Section::notes(
                "critical_path",
                "Critical path",
                vec![Note {
                    level: Level::Info,
                    text: "Unknown: no build.ninja beside the log, and no ninja -t graph given."
                        .into(),
                }],
            )
            .verbatim(path_text),
        ),
        Some(cp) => {
            let mut path = Table::new(vec![
                Column::new("position", "position", Unit::Count),
                Column::new("duration_ms", "duration", Unit::Ms),
                Column::new("kind", "kind", Unit::Text),
                Column::new("name", "target", Unit::Text),
                Column::new("outputs", "outputs", Unit::Text),
                Column::new("start_ms", "start", Unit::Ms),
                Column::new("run", "run", Unit::Id),
                Column::new("link", "linked to the target before", Unit::Text),
                Column::new("via", "through", Unit::Text),
            ]);
            for (k, &s) in cp.steps.iter().enumerate() {
                let t = &b.targets[s];
                let dep = k.checked_sub(1).map(|e| &b.deps[cp.edges[e]]);
                path.row(vec![
                    (k + 1).into(),
                    t.duration_ms().into(),
                    b.info[s].kind.as_str().into(),
                    b.info[s].name.as_str().into(),
                    t.name().into(),
                    t.start_ms.into(),
                    (t.run + 1).into(),
                    dep.map(|d| match d.kind {
                        DepKind::Declared => "declared",
                        DepKind::Header => "header",
                    })
                    .into(),
                    dep.map(|d| d.file.as_str()).into(),
                ]);
            }
            let (declared, headers) = dep_counts(b);
            let totals = vec![
                Item::new("total", "critical path", ms(cp.total_us), Unit::Ms),
                Item::new(
                    "wall_time",
                    "wall time of the last run",
                    b.wall_us().map(ms).unwrap_or(Value::Null),
                    Unit::Ms,
                ),
                Item::new(
                    "declared_dependencies",
                    "dependencies declared in the graph",
                    declared,
                    Unit::Count,
                ),
                Item::new(
                    "passes",
                    "build statements between them that ran nothing (phony, or not in the log)",
                    b.passes.len(),
                    Unit::Count,
                ),
                Item::new(
                    "header_dependencies",
                    "dependencies from ninja's deps log (ninja -t deps)",
                    headers,
                    Unit::Count,
                ),
            ];
            rep.push(
                Section::table("critical_path", "Critical path", path)
                    .verbatim(path_text)
                    .child(
                        Section::summary("critical_path_totals", "Critical path in all", totals)
                            .omit_text(),
                    ),
            )
        }
    };

    // Job-slot waits of the last run.
    if let Some(w) = &b.waits {
        let mut waits = Table::new(vec![
            Column::new("slot_wait_ms", "job-slot wait", Unit::Ms),
            Column::new("kind", "kind", Unit::Text),
            Column::new("name", "target", Unit::Text),
            Column::new("ready_ms", "ready", Unit::Ms),
            Column::new("start_ms", "start", Unit::Ms),
            Column::new("ready_after", "ready when this ended", Unit::Text),
            Column::new("other_wait_ms", "other delay", Unit::Ms),
        ])
        .sorted_by("slot_wait_ms", true);
        for x in waited(b) {
            waits.row(vec![
                ms(x.slot_us),
                b.info[x.step].kind.as_str().into(),
                b.info[x.step].name.as_str().into(),
                ms(x.ready_us),
                b.targets[x.step].start_ms.into(),
                x.ready_after.map(|a| b.info[a].name.as_str()).into(),
                ms(x.other_us),
            ]);
        }
        let waited_n = waits.rows.len();
        waits.keep(top, &["slot_wait_ms", "other_wait_ms"]);
        let (slot, other) = w.totals();
        let totals = vec![
            Item::new(
                "jobs",
                "job slots (the most commands seen at once)",
                w.jobs,
                Unit::Count,
            ),
            Item::new("jobs_from", "job slots from", "observed", Unit::Text),
            Item::new("slot_wait", "job-slot waits", ms(slot), Unit::Ms),
            Item::new(
                "waited_targets",
                "targets that waited",
                waited_n,
                Unit::Count,
            ),
            Item::new(
                "other_wait",
                "other delays of ready targets (fewer commands running)",
                ms(other),
                Unit::Ms,
            ),
        ];
        rep.push(
            Section::table("job_slot_waits", "Job-slot waits of the last run", waits)
                .verbatim(text_of(|o| write_waits(b, top, o)))
                .child(
                    Section::summary("job_slot_totals", "Job-slot waits in all", totals)
                        .omit_text(),
                ),
        );
    }

    if let Some(g) = gantt(b, opts.gantt_spans) {
        rep.push(g.omit_text());
    }

    let mut warnings = Section::warnings("warnings", "Warnings", &b.log.warnings).omit_text();
    if b.log.warnings.is_empty() {
        warnings = warnings.omit_html();
    }
    rep.push(warnings);
    rep
}

/// The columns of a table of targets.
fn target_table(has_graph: bool) -> Table {
    let mut cols = vec![
        Column::new("duration_ms", "duration", Unit::Ms),
        Column::new("kind", "kind", Unit::Text),
        Column::new("name", "target", Unit::Text),
        Column::new("outputs", "outputs", Unit::Text),
        Column::new("start_ms", "start", Unit::Ms),
        Column::new("end_ms", "end", Unit::Ms),
        Column::new("run", "run", Unit::Id),
        Column::new("line", "line", Unit::Id),
    ];
    if has_graph {
        cols.push(Column::new("in_graph", "in the graph", Unit::Text));
    }
    Table::new(cols)
}

fn target_row(b: &NinjaBuild, i: usize, has_graph: bool) -> Vec<Value> {
    let t: &Target = &b.targets[i];
    let mut row = vec![
        t.duration_ms().into(),
        b.info[i].kind.as_str().into(),
        b.info[i].name.as_str().into(),
        t.name().into(),
        t.start_ms.into(),
        t.end_ms.into(),
        (t.run + 1).into(),
        t.line.into(),
    ];
    if has_graph {
        row.push(b.info[i].edge.is_some().into());
    }
    row
}

/// The last run's targets on lanes as ninjatracing packs them (the
/// timeline's), the critical path highlighted. At most `cap` spans: the
/// critical path's, then the longest.
fn gantt(b: &NinjaBuild, cap: usize) -> Option<Section> {
    let mut idx = b.last_run();
    if idx.is_empty() {
        return None;
    }
    idx.sort_by_key(|&i| {
        (
            b.targets[i].start_ms,
            std::cmp::Reverse(b.targets[i].end_ms),
        )
    });
    let refs: Vec<&Target> = idx.iter().map(|&i| &b.targets[i]).collect();
    let lane_of = log::lanes(&refs);
    let critical = on_critical_path(b);
    let mut keep: Vec<usize> = (0..idx.len()).collect();
    keep.sort_by_key(|&k| {
        let i = idx[k];
        (
            !critical[i],
            std::cmp::Reverse(b.targets[i].duration_ms()),
            k,
        )
    });
    keep.truncate(cap);
    keep.sort_unstable();
    let n_lanes = lane_of.iter().copied().max().map_or(0, |m| m + 1);
    let lanes = (1..=n_lanes)
        .map(|k| Lane {
            name: format!("lane {k}"),
        })
        .collect();
    let spans = keep
        .iter()
        .map(|&k| {
            let i = idx[k];
            let t = &b.targets[i];
            Span {
                lane: lane_of[k] as u32,
                depth: 0,
                start: t.start_ms as f64,
                end: t.end_ms.max(t.start_ms) as f64,
                name: b.info[i].name.clone(),
                id: Some(i as u64),
                parent: None,
                highlight: critical[i],
                detail: Some(format!(
                    "{}; outputs: {}; .ninja_log line {}",
                    b.info[i].kind.as_str(),
                    t.name(),
                    t.line
                )),
            }
        })
        .collect();
    Some(Section::new(
        "gantt",
        "The last run's targets over time (lanes as ninjatracing packs them)",
        Body::Spans(Spans {
            view: SpanView::Gantt,
            unit: Unit::Ms,
            lanes,
            spans,
            highlight: Some("on the critical path".into()),
            more: (idx.len() - keep.len()) as u64,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ninja::{manifest, read_log};

    /// A generated header on the critical path (from ninja's deps log),
    /// the longest target off it (one run: entries in the order they
    /// ended); the tables keep `top` rows and the Gantt chart the
    /// critical path's spans first.
    fn build() -> NinjaBuild {
        let log = read_log(
            b"# ninja log v5\n0\t100\t0\tgen.h\t1\n100\t130\t0\tb.o\t2\n0\t140\t0\tc.o\t4\n130\t150\t0\tapp\t3\n",
        )
        .unwrap();
        let m = manifest::read_manifest(
            "rule cc\n  command = cc -c $in -o $out\nrule ld\n  command = cc $in -o $out\nrule gen\n  command = ./gen > $out\nbuild gen.h: gen\nbuild b.o: cc ../b.c\nbuild c.o: cc ../c.c\nbuild app: ld b.o\n",
            "build.ninja",
            &|_| None,
        )
        .unwrap();
        let deps = vec![(
            "b.o".to_string(),
            vec!["../b.c".to_string(), "/w/b/gen.h".to_string()],
        )];
        NinjaBuild::new(
            log,
            "/w/b",
            GraphSource::Manifest(m.files.clone()),
            m.edges,
            &deps,
        )
    }

    fn table<'a>(r: &'a Report, id: &str) -> &'a Table {
        match r.find(id).map(|s| &s.body) {
            Some(Body::Table(t)) => t,
            other => panic!("{id}: {other:?}"),
        }
    }

    fn column(t: &Table, key: &str) -> Vec<Value> {
        let c = t.column(key).unwrap();
        t.rows.iter().map(|r| r[c].clone()).collect()
    }

    #[test]
    fn critical_path_says_how_each_target_is_linked() {
        let b = build();
        let r = to_report(&b, "x/.ninja_log", &Options::default());
        let path = table(&r, "critical_path");
        assert_eq!(
            column(path, "name"),
            ["gen.h", "../b.c → b.o", "app"].map(Value::from)
        );
        assert_eq!(
            column(path, "link"),
            [Value::Null, "header".into(), "declared".into()]
        );
        assert_eq!(
            column(path, "via"),
            [Value::Null, "/w/b/gen.h".into(), "b.o".into()]
        );
        assert_eq!(
            column(path, "duration_ms"),
            [100u64, 30, 20].map(Value::from)
        );
        // The text says the same.
        let text = match &r.find("critical_path").unwrap().text {
            TextForm::Verbatim(t) => t.clone(),
            other => panic!("{other:?}"),
        };
        assert!(text.contains("../b.c → b.o  (header /w/b/gen.h)"), "{text}");
        assert!(text.contains("1 from ninja's deps log"), "{text}");
    }

    #[test]
    fn tables_and_gantt_are_bounded() {
        let b = build();
        let opts = Options {
            top: 1,
            gantt_spans: 2,
        };
        let r = to_report(&b, "x/.ninja_log", &opts);
        let slowest = table(&r, "slowest_targets");
        assert_eq!(column(slowest, "outputs"), [Value::from("c.o")]);
        let more = slowest.more.as_ref().unwrap();
        assert_eq!(more.rows, 3);
        let c = slowest.column("duration_ms").unwrap();
        assert_eq!(more.totals[c], Value::UInt(100 + 30 + 20));
        // The critical path's two longest, then nothing: c.o (the
        // longest of all) and app are counted.
        let Some(Body::Spans(g)) = r.find("gantt").map(|s| &s.body) else {
            panic!("no gantt");
        };
        let names: Vec<&str> = g.spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["gen.h", "../b.c → b.o"]);
        assert!(g.spans.iter().all(|s| s.highlight));
        assert_eq!(g.more, 2);
    }
}
