//! `tracekit report` for the dialects whose reports are data
//! (`crates/tracekit-report`: Git Trace2, XRay traces, build traces,
//! `.ninja_log`s, POSIX trace logs):
//! * the text is what `tracekit report` printed before the reports became
//!   data, byte for byte (`tests/expected/report/`, taken from the CLI
//!   before that change; `TRACEKIT_BLESS=1` rewrites them);
//! * `--json` (`docs/report-json.md`) carries the figures other tools
//!   print: llvm-xray 14's `account` and `stack` (the corpus goldens),
//!   `tracekit posix dump`; the Trace2 and build reports' sections and
//!   figures (the text's, the critical path's; `.ninja_log`s' in
//!   `build_logs.rs`);
//! * `--html` writes one self-contained page that headless Chromium
//!   renders without errors or requests (`common::chromium`).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tracekit_report::{Body, Document, Report, Table, Value};

const CORPUS: &str = "../../tests/corpus";

fn tracekit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .output()
        .expect("run tracekit")
}

fn ok(args: &[&str]) -> Output {
    let o = tracekit(args);
    assert!(
        o.status.success(),
        "tracekit {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn corpus(rel: &str) -> String {
    format!("{CORPUS}/{rel}")
}

/// The text reports, as they were.
const TEXT_CASES: &[(&str, &[&str])] = &[
    ("posix-pool", &["posix/pool.trace"]),
    ("posix-pool-top3", &["--top", "3", "posix/pool.trace"]),
    ("xray-mt-fdr", &["-m", "xray/mt/mt", "xray/mt/mt.fdr.xray"]),
    (
        "xray-two",
        &[
            "xray/recursion/recursion.fdr-rdtsc.xray",
            "xray/mt/mt.basic.xray",
        ],
    ),
    (
        "xray-unmatched",
        &["xray/synthetic/inconsistent-v5-unmatched-exits.xray"],
    ),
    (
        "xray-mt-yaml-top2",
        &[
            "--top",
            "2",
            "-m",
            "xray/mt/mt",
            "xray/mt/mt.fdr-rdtsc.yaml",
        ],
    ),
    // Git Trace2 and build traces: taken from the CLI before their
    // reports became data (each input format, a directory, --top).
    ("trace2-clone-local", &["trace2/04-clone-local/event.jsonl"]),
    (
        "trace2-hooks-top2",
        &["--top", "2", "trace2/09-hooks/event.jsonl"],
    ),
    (
        "trace2-detach-perf",
        &["trace2/24-maintenance-detach/perf.log"],
    ),
    (
        "trace2-dir-event",
        &["trace2/13-directory-target/dir-event"],
    ),
    ("trace2-crash", &["trace2/23-crash/event.jsonl"]),
    ("trace2-errors-normal", &["trace2/08-errors/normal.log"]),
    ("build-hiredis", &["examples/build/hiredis-make-j2.trace"]),
    (
        "build-hello-top3",
        &["--top", "3", "buildtrace/recorded/hello-make-j2.trace"],
    ),
    (
        "build-expat",
        &["buildtrace/recorded/expat-2.5.0-ninja-j2.trace"],
    ),
    ("build-nested", &["examples/build/make-nested.trace"]),
    (
        "build-two",
        &[
            "examples/build/make-nested.trace",
            "buildtrace/recorded/hello-make-j2.trace",
        ],
    ),
    // `.ninja_log` reports: taken from the CLI before they became data (a
    // build directory with build.ninja, a log alone, a log with `ninja -t
    // graph`/`-t deps` output and --top, two logs, `report --diff`).
    ("ninja-expat-dir", &["buildtrace/logs/expat-2.5.0/build"]),
    (
        "ninja-expat-run1",
        &["buildtrace/logs/expat-2.5.0/run1.ninja_log"],
    ),
    (
        "ninja-expat-tools-top3",
        &[
            "--top",
            "3",
            "buildtrace/logs/expat-2.5.0/build/.ninja_log",
            "buildtrace/logs/expat-2.5.0/ninja-t-graph.dot",
            "buildtrace/logs/expat-2.5.0/ninja-t-deps.log",
        ],
    ),
    (
        "ninja-two-logs",
        &[
            "buildtrace/logs/expat-2.5.0/run1.ninja_log",
            "buildtrace/logs/expat-2.5.0/ninja-1.13.0-v7.ninja_log",
            "buildtrace/logs/expat-2.5.0/ninja-t-graph.dot",
        ],
    ),
    (
        "ninja-diff",
        &[
            "--diff",
            "buildtrace/logs/expat-2.5.0/run1.ninja_log",
            "buildtrace/logs/expat-2.5.0/build",
        ],
    ),
];

/// A path of the tables above: `examples/...` from the repository's
/// examples, others from the corpus.
fn input_path(a: &str) -> String {
    match a.strip_prefix("examples/") {
        Some(rest) => format!("../../examples/{rest}"),
        None => corpus(a),
    }
}

fn expected(name: &str, got: &[u8]) {
    let path = Path::new("tests/expected/report").join(name);
    if std::env::var_os("TRACEKIT_BLESS").is_some() {
        if got.is_empty() {
            let _ = std::fs::remove_file(&path);
        } else {
            std::fs::write(&path, got).expect("bless");
        }
        return;
    }
    let want = std::fs::read(&path).unwrap_or_default();
    assert!(
        want == got,
        "{} differs:\n--- want\n{}\n--- got\n{}",
        path.display(),
        String::from_utf8_lossy(&want),
        String::from_utf8_lossy(got)
    );
}

#[test]
fn text_reports_are_as_before() {
    for (name, args) in TEXT_CASES {
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a.contains('/') {
                    input_path(a)
                } else {
                    a.to_string()
                }
            })
            .collect();
        let mut all = vec!["report"];
        all.extend(args.iter().map(String::as_str));
        let o = ok(&all);
        expected(&format!("{name}.txt"), &o.stdout);
        expected(&format!("{name}.stderr"), &o.stderr);
    }
}

fn json_reports(args: &[&str]) -> Vec<Report> {
    let mut all = vec!["report", "--json"];
    all.extend(args);
    let o = ok(&all);
    let doc: Document = tracekit_report::json::parse(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not a tracekit.report/1 document: {e}"));
    assert_eq!(doc.schema, "tracekit.report/1");
    doc.reports
}

fn table<'a>(r: &'a Report, id: &str) -> &'a Table {
    match r.find(id).map(|s| &s.body) {
        Some(Body::Table(t)) => t,
        other => panic!("section {id}: {other:?}"),
    }
}

fn col(t: &Table, key: &str) -> usize {
    t.column(key).unwrap_or_else(|| panic!("no column {key}"))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v:?}"))
}

fn text(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    }
}

// ---------------------------------------------------------------- POSIX

/// What `posix dump --json` lists: events per type and per (pid, thread),
/// and in all.
#[derive(Default)]
struct Dumped {
    types: BTreeMap<String, u64>,
    threads: BTreeMap<(i64, u64), u64>,
    events: u64,
}

fn dump_counts(log: &str) -> Dumped {
    let o = ok(&["posix", "dump", "--json", log]);
    let (mut types, mut threads, mut n) = (BTreeMap::new(), BTreeMap::new(), 0);
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("dump line");
        *types
            .entry(v["event"].as_str().expect("event").to_string())
            .or_default() += 1;
        *threads
            .entry((
                v["pid"].as_i64().expect("pid"),
                v["thread"].as_u64().expect("thread"),
            ))
            .or_default() += 1;
        n += 1;
    }
    Dumped {
        types,
        threads,
        events: n,
    }
}

#[test]
fn posix_json_counts_what_posix_dump_lists() {
    let log = corpus("posix/pool.trace");
    let Dumped {
        types,
        threads,
        events: n,
    } = dump_counts(&log);
    assert!(types.len() > 5 && n > 1000, "{types:?}");
    let reports = json_reports(&["--top", "100", &log]);
    let [r] = &reports[..] else {
        panic!("{} reports", reports.len())
    };
    assert_eq!(r.dialect, "posix");
    let events = match &r.find("summary").expect("summary").body {
        Body::Summary { items } => num(&items
            .iter()
            .find(|i| i.key == "events")
            .expect("events")
            .value),
        b => panic!("{b:?}"),
    };
    assert_eq!(events as u64, n);

    let t = table(r, "event_types");
    let (e, c) = (col(t, "event"), col(t, "events"));
    let got: BTreeMap<String, u64> = t
        .rows
        .iter()
        .map(|row| (text(&row[e]), num(&row[c]) as u64))
        .collect();
    assert_eq!(got, types);

    let t = table(r, "threads");
    let (p, th, c) = (col(t, "pid"), col(t, "thread"), col(t, "events"));
    let got: BTreeMap<(i64, u64), u64> = t
        .rows
        .iter()
        .map(|row| {
            (
                (num(&row[p]) as i64, num(&row[th]) as u64),
                num(&row[c]) as u64,
            )
        })
        .collect();
    assert_eq!(got, threads);

    // Over time: each line adds up to its type's count, `other` to the rest.
    let Some(Body::Series(s)) = r.find("events_by_type").map(|s| &s.body) else {
        panic!("events_by_type")
    };
    let mut rest: u64 = types.values().sum();
    for l in &s.lines {
        let sum: f64 = l.values.iter().sum();
        if l.name == "other" {
            assert_eq!(sum as u64, rest, "other");
        } else {
            assert_eq!(Some(&(sum as u64)), types.get(&l.name), "{}", l.name);
            rest -= sum as u64;
        }
        assert_eq!(l.values.len(), s.x.len());
    }
    assert_eq!(s.folded as usize + s.lines.len() - 1, types.len());
    let bucket = s.bucket.expect("bucket");
    assert!(s.x.len() <= 240 && s.x[0] <= 0.0 && s.x[0] > -bucket);

    // With --top 3 the rest is counted on the table's last line.
    let reports = json_reports(&["--top", "3", &log]);
    let t = table(&reports[0], "event_types");
    let more = t.more.as_ref().expect("more");
    assert_eq!(t.rows.len(), 3);
    assert_eq!(more.rows as usize, types.len() - 3);
    let shown: u64 = t
        .rows
        .iter()
        .map(|row| num(&row[col(t, "events")]) as u64)
        .sum();
    assert_eq!(
        num(&more.totals[col(t, "events")]) as u64,
        n - shown,
        "totals of the rows not shown"
    );
}

// ---------------------------------------------------------------- XRay

/// llvm-xray 14's `account` text: funcid -> the printed columns.
fn llvm_account(path: &str) -> BTreeMap<i64, Vec<String>> {
    let text = std::fs::read_to_string(path).expect("golden");
    let mut rows = BTreeMap::new();
    for line in text.lines().skip(2) {
        let clean = line.replace(['[', ']', ','], " ");
        let mut f = clean.split_whitespace();
        let id: i64 = f.next().expect("funcid").parse().expect("funcid");
        let mut cols: Vec<String> = f.by_ref().take(7).map(str::to_string).collect();
        // After the sum, two spaces and "file:line:col: name" (the name
        // may hold spaces).
        let after = line.split_once("] ").expect("statistics").1.trim_start();
        let func = after.split_once("  ").expect("function").1;
        cols.push(func.to_string());
        rows.insert(id, cols);
    }
    rows
}

#[test]
fn xray_functions_table_equals_llvm_xray_account() {
    for (trace, bin, golden) in [
        (
            "xray/recursion/recursion.fdr-rdtsc.xray",
            "xray/recursion/recursion",
            "xray/recursion/recursion.fdr-rdtsc.account.txt",
        ),
        (
            "xray/tailcall/tailcall.fdr.xray",
            "xray/tailcall/tailcall",
            "xray/tailcall/tailcall.fdr.account.txt",
        ),
        (
            "xray/args/args.fdr.xray",
            "xray/args/args",
            "xray/args/args.fdr.account.txt",
        ),
    ] {
        let want = llvm_account(&corpus(golden));
        assert!(!want.is_empty(), "{golden}");
        let reports = json_reports(&["--top", "100", "-m", &corpus(bin), &corpus(trace)]);
        let t = table(&reports[0], "functions");
        let cols = [
            "count", "min_s", "median_s", "p90_s", "p99_s", "max_s", "sum_s",
        ]
        .map(|k| col(t, k));
        let (id, loc, name) = (col(t, "funcid"), col(t, "location"), col(t, "function"));
        let got: BTreeMap<i64, Vec<String>> = t
            .rows
            .iter()
            .filter(|row| !row[cols[0]].is_null())
            .map(|row| {
                let mut v: Vec<String> = cols
                    .iter()
                    .enumerate()
                    .map(|(i, &c)| {
                        if i == 0 {
                            format!("{}", num(&row[c]))
                        } else {
                            format!("{:.6}", num(&row[c]))
                        }
                    })
                    .collect();
                v.push(format!("{}: {}", text(&row[loc]), text(&row[name])));
                (num(&row[id]) as i64, v)
            })
            .collect();
        assert_eq!(got, want, "{trace}");
    }
}

/// llvm-xray's `stack -all-stacks -stack-format=flame -aggregation-type=time`
/// gives each call path's inclusive ticks per thread; the report's flame
/// data gives self time per path, whose sums over each subtree must be
/// those (threads added up).
#[test]
fn xray_flame_adds_up_to_llvm_xray_stacks() {
    for (trace, bin, golden) in [
        (
            "xray/mt/mt.fdr.xray",
            "xray/mt/mt",
            "xray/mt/mt.fdr.stack-flame.txt",
        ),
        (
            "xray/recursion/recursion.fdr-rdtsc.xray",
            "xray/recursion/recursion",
            "xray/recursion/recursion.fdr-rdtsc.stack-flame.txt",
        ),
    ] {
        let mut want: HashMap<Vec<String>, f64> = HashMap::new();
        for line in std::fs::read_to_string(corpus(golden))
            .expect("golden")
            .lines()
        {
            let (path, ticks) = line.rsplit_once("; ").expect("flame line");
            let frames: Vec<String> = path.split(';').skip(1).map(str::to_string).collect();
            *want.entry(frames).or_default() += ticks.trim().parse::<f64>().expect("ticks");
        }
        let reports = json_reports(&["-m", &corpus(bin), &corpus(trace)]);
        let r = &reports[0];
        let freq = match &r.find("summary").expect("summary").body {
            Body::Summary { items } => num(&items
                .iter()
                .find(|i| i.key == "cycle_frequency")
                .expect("frequency")
                .value),
            b => panic!("{b:?}"),
        };
        let Some(Body::Flame(f)) = r.find("flame").map(|s| &s.body) else {
            panic!("flame")
        };
        assert!(f.more.is_none());
        let mut got: HashMap<Vec<String>, f64> = HashMap::new();
        for s in &f.stacks {
            for n in 1..=s.frames.len() {
                *got.entry(s.frames[..n].to_vec()).or_default() += s.weight * freq;
            }
        }
        let mut checked = 0;
        for (path, ticks) in &want {
            let g = got.get(path).copied().unwrap_or(0.0);
            assert!(
                (g - ticks).abs() <= 1e-6 * ticks.max(1.0),
                "{trace}: {path:?}: llvm-xray {ticks} ticks, report {g}"
            );
            checked += 1;
        }
        // Paths with self time only in our data would be missing above.
        for (path, g) in &got {
            assert!(
                want.contains_key(path) || *g == 0.0,
                "{trace}: {path:?} not in llvm-xray's"
            );
        }
        assert!(checked >= 4, "{trace}: {checked}");
    }
}

// ---------------------------------------------------------------- Trace2, build

fn ids(r: &Report) -> Vec<(&str, &'static str)> {
    r.sections
        .iter()
        .map(|s| {
            let k = match &s.body {
                Body::Group => "group",
                Body::Summary { .. } => "summary",
                Body::Table(_) => "table",
                Body::Flame(_) => "flame",
                Body::Series(_) => "series",
                Body::Histogram(_) => "histogram",
                Body::Spans(_) => "spans",
                Body::Notes { .. } => "notes",
            };
            (s.id.as_str(), k)
        })
        .collect()
}

fn item<'a>(r: &'a Report, key: &str) -> &'a Value {
    match r.find("summary").map(|s| &s.body) {
        Some(Body::Summary { items }) => {
            &items
                .iter()
                .find(|i| i.key == key)
                .unwrap_or_else(|| panic!("no item {key}"))
                .value
        }
        other => panic!("summary: {other:?}"),
    }
}

fn spans<'a>(r: &'a Report, id: &str) -> &'a tracekit_report::Spans {
    match r.find(id).map(|s| &s.body) {
        Some(Body::Spans(s)) => s,
        other => panic!("section {id}: {other:?}"),
    }
}

/// The Trace2 report's JSON: its sections, the command table's columns
/// and figures (the same as the text's), each session's tree.
#[test]
fn trace2_json_shape() {
    let input = corpus("trace2/04-clone-local/event.jsonl");
    let reports = json_reports(&[&input]);
    let [r] = &reports[..] else {
        panic!("one report for one Trace2 input: {reports:?}")
    };
    assert_eq!(r.dialect, "trace2");
    assert_eq!(
        ids(r),
        [
            ("summary", "summary"),
            ("commands", "table"),
            ("command_durations", "histogram"),
            ("regions", "table"),
            ("command_regions", "table"),
            ("errors", "table"),
            ("sessions", "group"),
        ]
    );
    assert_eq!(num(item(r, "processes")), 19.0);
    assert_eq!(num(item(r, "sessions")), 4.0);
    let t = table(r, "commands");
    let keys: Vec<&str> = t.columns.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "command",
            "mode",
            "count",
            "failed",
            "unfinished",
            "p50_s",
            "p90_s",
            "p99_s",
            "max_s",
            "total_s"
        ]
    );
    // clone: as the text prints it (4 runs, max 0.281s...).
    let text_out = String::from_utf8(ok(&["report", &input]).stdout).expect("utf8");
    let line = text_out
        .lines()
        .find(|l| l.trim_start().starts_with("clone "))
        .expect("clone line");
    let row = &t.rows[0];
    assert_eq!(text(&row[col(t, "command")]), "clone");
    assert_eq!(num(&row[col(t, "count")]), 4.0);
    let max = format!("{:.6}s", num(&row[col(t, "max_s")]));
    assert!(line.contains(&max), "{line} / {max}");
    // Four sessions, a tree each; every parent is a span of the tree.
    for k in 1..=4 {
        let s = spans(r, &format!("session_{k}_processes"));
        let known: Vec<u64> = s.spans.iter().filter_map(|x| x.id).collect();
        assert!(s
            .spans
            .iter()
            .all(|x| x.parent.is_none_or(|p| known.contains(&p))));
        assert_eq!(s.spans.iter().filter(|x| x.parent.is_none()).count(), 1);
    }
}

/// The build report's JSON: sections, the Gantt chart (one span per timed
/// process, the critical path's highlighted and adding up to the
/// summary's), parallelism; a trace without times says so instead.
#[test]
fn build_json_shape() {
    let reports = json_reports(&["../../examples/build/hiredis-make-j2.trace"]);
    let r = &reports[0];
    assert_eq!(r.dialect, "build");
    assert_eq!(
        ids(r),
        [
            ("summary", "summary"),
            ("process_tree", "spans"),
            ("gantt", "spans"),
            ("slowest_units", "table"),
            ("critical_path", "table"),
            ("job_slot_waits", "table"),
            ("parallelism", "series"),
            ("warnings", "notes"),
        ]
    );
    assert_eq!(num(item(r, "processes")), 56.0);
    assert_eq!(num(item(r, "jobs")), 2.0);
    let tree = spans(r, "process_tree");
    assert_eq!(tree.spans.len(), 56);
    let gantt = spans(r, "gantt");
    assert_eq!(gantt.spans.len(), 56, "every process has times");
    assert!(gantt
        .spans
        .iter()
        .all(|x| x.end >= x.start && x.start >= 0.0));
    let cp = table(r, "critical_path");
    let sum: f64 = cp.rows.iter().map(|x| num(&x[col(cp, "duration_s")])).sum();
    assert!((sum - num(item(r, "critical_path"))).abs() < 1e-6);
    // The critical path's steps are the highlighted step spans.
    let names: Vec<String> = cp.rows.iter().map(|x| text(&x[col(cp, "name")])).collect();
    for n in &names {
        assert!(
            gantt
                .spans
                .iter()
                .any(|x| x.highlight && x.name.ends_with(n.as_str())),
            "{n}"
        );
    }
    let waits = table(r, "job_slot_waits");
    let slot = num(item(r, "slot_wait"));
    let listed: f64 = waits
        .rows
        .iter()
        .map(|x| num(&x[col(waits, "slot_wait_s")]))
        .sum();
    let rest = waits.more.as_ref().map_or(0.0, |m| {
        m.totals[col(waits, "slot_wait_s")].as_f64().unwrap_or(0.0)
    });
    assert!(
        (listed + rest - slot).abs() < 1e-6,
        "{listed} + {rest} != {slot}"
    );
    match r.find("parallelism").map(|s| &s.body) {
        Some(Body::Series(s)) => {
            assert_eq!(s.x.len(), 200);
            assert!(
                s.lines[0].values.iter().any(|&v| v > 1.0),
                "make -j2 ran two at once"
            );
        }
        other => panic!("{other:?}"),
    }

    // No times: a table of processes, a note, no charts.
    let reports = json_reports(&["../../examples/build/make-nested.trace"]);
    let r = &reports[0];
    assert!(item(r, "wall_time").is_null());
    assert!(matches!(
        r.find("process_tree").map(|s| &s.body),
        Some(Body::Table(_))
    ));
    assert!(r.find("no_times").is_some());
    assert!(r.find("gantt").is_none() && r.find("parallelism").is_none());
}

// ---------------------------------------------------------------- HTML

/// The pages of the four dialects: (file name, tracekit arguments,
/// selectors that must match).
fn pages() -> Vec<(&'static str, Vec<String>, &'static [&'static str])> {
    vec![
        (
            "posix-pool.html",
            vec![corpus("posix/pool.trace")],
            &[
                "article[data-dialect=posix]",
                "#r0-summary dl.tk-summary div[data-key=events]",
                "#r0-event_types table.tk-table tbody tr",
                "#r0-threads table.tk-table tbody tr",
                "#r0-processes table.tk-table tbody tr",
                "#r0-events_by_type svg.tk-series-chart path",
                "#r0-events_by_process svg.tk-series-chart rect.hov title",
                "#r0-events_by_type .tk-legend",
            ],
        ),
        (
            "xray-mt.html",
            vec![
                "-m".into(),
                corpus("xray/mt/mt"),
                corpus("xray/mt/mt.fdr.xray"),
            ],
            &[
                "article[data-dialect=xray]",
                "#r0-summary dl.tk-summary",
                "#r0-functions table.tk-table th[data-key=p99_s]",
                "#r0-deepest_stacks .tk-stack",
                "#r0-flame svg.tk-flame g[data-d='4'] rect",
                "#r0-call_durations svg.tk-histogram-chart rect.bar",
                "#r0-threads table.tk-table",
                "#r0-timelines svg.tk-gantt rect.span",
                "#r0-timelines svg.tk-gantt text.lane",
            ],
        ),
        (
            "trace2-clone.html",
            vec![corpus("trace2/04-clone-local/event.jsonl")],
            &[
                "article[data-dialect=trace2]",
                "#r0-summary dl.tk-summary div[data-key=sessions]",
                "#r0-commands table.tk-table th[data-key=p99_s]",
                "#r0-commands table.tk-table tbody tr",
                "#r0-command_durations svg.tk-histogram-chart rect.bar",
                "#r0-regions table.tk-table tbody tr",
                "#r0-sessions #r0-session_1 #r0-session_1_processes details.tk-tree details.tk-tree",
                "#r0-session_1_regions svg.tk-flame rect",
                "#r0-session_1_details table.tk-table tbody tr",
            ],
        ),
        (
            "build-hiredis.html",
            vec!["../../examples/build/hiredis-make-j2.trace".into()],
            &[
                "article[data-dialect=build]",
                "#r0-summary dl.tk-summary div[data-key=critical_path]",
                "#r0-process_tree .tk-treeview details.tk-tree",
                "#r0-gantt svg.tk-gantt.has-hl rect.span.hl",
                "#r0-gantt svg.tk-gantt text.lane",
                "#r0-slowest_units table.tk-table tbody tr",
                "#r0-critical_path table.tk-table tbody tr",
                "#r0-job_slot_waits table.tk-table tbody tr",
                "#r0-parallelism svg.tk-series-chart path",
            ],
        ),
        (
            "ninja-expat.html",
            vec![corpus("buildtrace/logs/expat-2.5.0/build")],
            &[
                "article[data-dialect=ninja]",
                "#r0-summary dl.tk-summary div[data-key=critical_path]",
                "#r0-slowest_targets table.tk-table tbody tr",
                "#r0-critical_path table.tk-table tbody tr",
                "#r0-critical_path_totals dl.tk-summary div[data-key=wall_time]",
                "#r0-job_slot_waits table.tk-table tbody tr",
                "#r0-job_slot_totals dl.tk-summary div[data-key=jobs]",
                "#r0-gantt svg.tk-gantt.has-hl rect.span.hl",
                "#r0-gantt svg.tk-gantt text.lane",
            ],
        ),
    ]
}

fn write_page(dir: &Path, name: &str, args: &[String]) -> PathBuf {
    let out = dir.join(name);
    let mut all = vec![
        "report".to_string(),
        "--html".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    all.extend(args.iter().cloned());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    ok(&all);
    out
}

/// Every attribute value that names something to load or follow.
fn links(html: &str) -> Vec<String> {
    let re = regex::Regex::new(
        r#"(?i)\b(src|href|action|srcset|xlink:href|data)\s*=\s*["']?([^"'\s>]*)"#,
    )
    .expect("regex");
    re.captures_iter(html)
        .map(|c| format!("{}={}", &c[1], &c[2]))
        .collect()
}

#[test]
fn html_pages_are_private_self_contained_and_complete() {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, args, selectors) in pages() {
        let path = write_page(dir.path(), name, &args);
        let mode = std::fs::metadata(&path).expect("page").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}: mode {mode:o}");
        let html = std::fs::read_to_string(&path).expect("page");
        assert!(html.starts_with("<!DOCTYPE html>"), "{name}");
        for l in links(&html) {
            assert!(
                l.starts_with("href=#"),
                "{name}: {l}: a page must link only within itself"
            );
        }
        for bad in ["http:", "https:", "url(", "@import", "src="] {
            assert!(!html.contains(bad), "{name}: {bad}");
        }
        assert!(html.contains("default-src 'none'"), "{name}: no CSP");
        // Every id a selector names is in the page.
        for s in selectors {
            if let Some(id) = s.strip_prefix('#') {
                let id = id.split([' ', '.', '[']).next().unwrap_or_default();
                assert!(html.contains(&format!("id=\"{id}\"")), "{name}: {id}");
            }
        }
        assert!(html.len() < 400_000, "{name}: {} bytes", html.len());
        // `-o -` writes the same page to standard output.
        let mut all = vec!["report", "--html", "-o", "-"];
        all.extend(args.iter().map(String::as_str));
        assert_eq!(
            String::from_utf8_lossy(&ok(&all).stdout),
            html,
            "{name}: -o -"
        );
    }
}

/// Inputs of two dialects: each analysed by its own (they were once
/// grouped together: the dialects are zero-sized statics), one page.
#[test]
fn inputs_of_two_dialects_make_one_page() {
    let dir = tempfile::tempdir().expect("tmp");
    let args = [corpus("posix/pool.trace"), corpus("xray/mt/mt.fdr.xray")];
    let path = write_page(dir.path(), "both.html", &args);
    let html = std::fs::read_to_string(&path).expect("page");
    assert!(html.contains("<article class=\"tk-report\" id=\"r0\" data-dialect=\"posix\">"));
    assert!(html.contains("<article class=\"tk-report\" id=\"r1\" data-dialect=\"xray\">"));
    let o = ok(&["report", &args[0], &args[1]]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("1506 events") && text.contains("872 records"),
        "{text}"
    );
    // One JSON document for both.
    let dialects: Vec<String> = json_reports(&[&args[0], &args[1]])
        .into_iter()
        .map(|r| r.dialect)
        .collect();
    assert_eq!(dialects, ["posix", "xray"]);
}

#[test]
fn html_usage_errors_exit_2() {
    let pool = corpus("posix/pool.trace");
    let o = tracekit(&["report", "--html", &pool]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-o FILE"));
    let o = tracekit(&["report", "--html", "--json", "-o", "-", &pool]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn html_pages_render_in_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, args, selectors) in pages() {
        let path = write_page(dir.path(), name, &args);
        let Some(mut page) = common::chromium::check_page(&path, selectors) else {
            return;
        };
        if name.starts_with("trace2") {
            // The commands by total time: clone first, with its count.
            let first = page.eval(
                "[...document.querySelector('#r0-commands tbody tr').cells].slice(0, 3).map(c => c.textContent)",
            );
            assert_eq!(first, serde_json::json!(["clone", "", "4"]), "{name}");
            // Every finished command in the histogram (19 processes).
            let counted = page.eval(
                "[...document.querySelectorAll('#r0-command_durations rect.bar title')].map(t => +t.textContent.split(': ')[1]).reduce((a, b) => a + b, 0)",
            );
            assert_eq!(counted, 19.0, "{name}");
            // Session 1's tree: clone, upload-pack started by it.
            let tree = page.eval(
                "[...document.querySelectorAll('#r0-session_1_processes .tk-tree .n')].map(n => n.textContent)",
            );
            let tree: Vec<String> = serde_json::from_value(tree).expect("names");
            assert_eq!(
                tree.first().map(String::as_str),
                Some("git clone"),
                "{tree:?}"
            );
            assert!(tree.iter().any(|n| n == "git upload-pack"), "{tree:?}");
            let nested = page.eval(
                "document.querySelector('#r0-session_1_processes details.tk-tree details.tk-tree > summary .n').textContent",
            );
            assert_eq!(nested, "git upload-pack", "{name}");
        } else if name.starts_with("build") {
            // The critical path is highlighted: hiredis.c's compile, the
            // archive, the link.
            let hl = page.eval(
                "[...document.querySelectorAll('#r0-gantt g')].filter(g => g.querySelector('rect.span.hl')).map(g => g.querySelector('title').textContent)",
            );
            let hl: Vec<String> = serde_json::from_value(hl).expect("titles");
            for want in ["hiredis.c", "libhiredis.a", "hiredis-test"] {
                assert!(hl.iter().any(|t| t.contains(want)), "{want}: {hl:?}");
            }
            let path = page.eval(
                "[...document.querySelectorAll('#r0-critical_path > .tk-scroll tbody tr')].map(r => r.cells[2].textContent)",
            );
            assert_eq!(
                path,
                serde_json::json!(["hiredis.c → hiredis.o", "libhiredis.a", "hiredis-test"]),
                "{name}"
            );
            // Two job slots (make -j2) and the lane of make itself.
            let lanes = page.eval(
                "[...document.querySelectorAll('#r0-gantt text.lane')].map(t => t.firstChild.textContent)",
            );
            let lanes: Vec<String> = serde_json::from_value(lanes).expect("lanes");
            assert_eq!(
                lanes.first().map(String::as_str),
                Some("build tool"),
                "{lanes:?}"
            );
            assert!(lanes.iter().any(|l| l == "slot 2"), "{lanes:?}");
            let slowest =
                page.eval("document.querySelector('#r0-slowest_units tbody tr td').textContent");
            assert!(
                slowest.as_str().is_some_and(|s| s.ends_with("/hiredis.c")),
                "{slowest}"
            );
        } else if name.starts_with("ninja") {
            // The critical path over build.ninja's graph, highlighted on
            // the last run's lanes (two: ninja -j2).
            let path = page.eval(
                "[...document.querySelectorAll('#r0-critical_path > .tk-scroll tbody tr')].map(r => r.cells[4].textContent)",
            );
            assert_eq!(
                path,
                serde_json::json!([
                    "CMakeFiles/expat.dir/lib/xmlparse.c.o",
                    "libexpat.so.1.8.10",
                    "libexpat.so.1, libexpat.so",
                    "xmlwf/xmlwf"
                ]),
                "{name}"
            );
            let hl = page.eval(
                "[...document.querySelectorAll('#r0-gantt g')].filter(g => g.querySelector('rect.span.hl')).map(g => g.querySelector('title').textContent)",
            );
            let hl: Vec<String> = serde_json::from_value(hl).expect("titles");
            assert_eq!(hl.len(), 4, "{hl:?}");
            assert!(hl.iter().any(|t| t.contains("xmlparse.c.o")), "{hl:?}");
            let lanes = page.eval(
                "[...document.querySelectorAll('#r0-gantt text.lane')].map(t => t.firstChild.textContent)",
            );
            assert_eq!(lanes, serde_json::json!(["lane 1", "lane 2"]), "{name}");
        } else if name.starts_with("posix") {
            // A text column sorts ascending on the first click.
            page.click("#r0-event_types th[data-key=event]");
            let first =
                page.eval("document.querySelector('#r0-event_types tbody tr td').textContent");
            assert_eq!(first, "cache_hit", "{name}: sorted by name");
            let sort = page.eval(
                "document.querySelector('#r0-event_types th[data-key=event]').getAttribute('aria-sort')",
            );
            assert_eq!(sort, "ascending");
        } else {
            // A number column sorts descending on the first click.
            page.click("#r0-functions th[data-key=calls]");
            let calls = page.eval(
                "[...document.querySelectorAll('#r0-functions tbody tr')].map(r => +r.cells[3].dataset.v)",
            );
            let calls: Vec<f64> = serde_json::from_value(calls).expect("calls");
            assert!(
                calls.len() == 4 && calls.windows(2).all(|w| w[0] >= w[1]),
                "{calls:?}"
            );
            // Clicking a frame zooms it to the whole width.
            page.click("#r0-flame g[data-d='2']");
            let w = page.eval(
                "+document.querySelector(\"#r0-flame g[data-d='2'] rect\").getAttribute('width')",
            );
            assert_eq!(w, 960.0, "{name}: zoomed frame width");
            // Dark mode is the page's, not the browser's default.
            let light = page.eval("getComputedStyle(document.body).backgroundColor");
            page.call(
                "Emulation.setEmulatedMedia",
                serde_json::json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
            );
            let dark = page.eval("getComputedStyle(document.body).backgroundColor");
            assert_ne!(light, dark, "{name}: no dark colours");
        }
        assert!(
            page.log.console_errors.is_empty(),
            "{:?}",
            page.log.console_errors
        );
        assert!(page.log.requests.is_empty(), "{:?}", page.log.requests);
    }
}

/// The browser checks see what they must: a console error, a request to
/// another address, a blank page.
#[test]
fn chromium_checks_catch_errors_requests_and_blank_pages() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("bad.html");
    std::fs::write(
        &path,
        "<!DOCTYPE html><html><body style=\"background:#fff\"><img src=\"http://127.0.0.1:9/x.png\" alt=\"\">\
         <script>console.error('broken')</script></body></html>",
    )
    .expect("page");
    let Some(mut page) = common::chromium::open(&path) else {
        return;
    };
    assert!(
        page.log.console_errors.iter().any(|e| e.contains("broken")),
        "{:?}",
        page.log.console_errors
    );
    assert!(
        page.log
            .requests
            .iter()
            .any(|r| r.starts_with("http://127.0.0.1:9/")),
        "{:?}",
        page.log.requests
    );
    let (share, _) = common::chromium::non_background(&page.screenshot());
    assert!(share < 0.02, "a blank page counted as drawn: {share}");
}
