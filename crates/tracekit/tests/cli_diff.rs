//! `tracekit diff BEFORE AFTER` on corpus pairs of every dialect: the
//! figures are checked against the inputs themselves (the events, exits
//! and process times they carry), against llvm-xray's `graph-diff` and
//! against `report --diff`; the pages in headless Chromium.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;
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

/// `tracekit diff --json ARGS`: the one report.
fn diff_json(args: &[&str]) -> Report {
    let mut all = vec!["diff", "--json", "--top", "1000"];
    all.extend(args);
    let o = ok(&all);
    let mut d: Document = serde_json::from_slice(&o.stdout).expect("tracekit.report/1");
    assert_eq!(d.schema, "tracekit.report/1");
    assert_eq!(d.reports.len(), 1);
    d.reports.remove(0)
}

fn table<'a>(r: &'a Report, id: &str) -> &'a Table {
    match &r.find(id).unwrap_or_else(|| panic!("no section {id}")).body {
        Body::Table(t) => t,
        b => panic!("{id}: {b:?}"),
    }
}

fn item(r: &Report, key: &str) -> Value {
    match &r.find("totals").expect("totals").body {
        Body::Summary { items } => items
            .iter()
            .find(|i| i.key == key)
            .unwrap_or_else(|| panic!("no item {key}"))
            .value
            .clone(),
        b => panic!("{b:?}"),
    }
}

/// The rows of a table as maps by column key.
fn rows(t: &Table) -> Vec<BTreeMap<String, Value>> {
    t.rows
        .iter()
        .map(|r| {
            t.columns
                .iter()
                .zip(r)
                .map(|(c, v)| (c.key.clone(), v.clone()))
                .collect()
        })
        .collect()
}

fn row_by(t: &Table, key: &str, value: &str) -> BTreeMap<String, Value> {
    rows(t)
        .into_iter()
        .find(|r| r.get(key) == Some(&Value::Text(value.into())))
        .unwrap_or_else(|| panic!("no row {key}={value}"))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v:?}"))
}

// ------------------------------------------------------------------ POSIX

/// Event counts per type name, from `posix dump` (tracekit's reader of
/// the log, independent of the analysis).
fn dump_counts(log: &str) -> BTreeMap<String, u64> {
    let o = ok(&["posix", "dump", "--json", log]);
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Ok(v) = serde_json::from_str::<Json>(line) else {
            continue;
        };
        if let Some(n) = v["event"].as_str().or(v["name"].as_str()) {
            *m.entry(n.to_string()).or_default() += 1;
        }
    }
    m
}

#[test]
fn posix_logs_per_event_type() {
    let (a, b) = (
        corpus("posix/pool.trace"),
        corpus("posix/pool-no-cache-hit.trace"),
    );
    let r = diff_json(&[&a, &b]);
    assert_eq!(r.dialect, "posix");
    assert_eq!(item(&r, "events_before"), Value::UInt(1506));
    assert_eq!(item(&r, "events_after"), Value::UInt(1168));
    assert_eq!(item(&r, "events_delta"), Value::Int(-338));
    let t = table(&r, "event_types");
    // The filtered type is gone and ranks first (its count changed most).
    let first = &rows(t)[0];
    assert_eq!(first["event"], Value::Text("cache_hit".into()));
    assert_eq!(first["presence"], Value::Text("removed".into()));
    assert_eq!(first["events_after"], Value::UInt(0));
    // Every count equals what the logs hold.
    let (ca, cb) = (dump_counts(&a), dump_counts(&b));
    assert!(!ca.is_empty(), "posix dump --json gave no events");
    for row in rows(t) {
        let Value::Text(name) = &row["event"] else {
            panic!()
        };
        assert_eq!(
            num(&row["events_before"]) as u64,
            ca.get(name).copied().unwrap_or(0),
            "{name}"
        );
        assert_eq!(
            num(&row["events_after"]) as u64,
            cb.get(name).copied().unwrap_or(0),
            "{name}"
        );
    }
    // Rates are events over each log's span.
    let req = row_by(t, "event", "request");
    let span_b = num(&item(&r, "span_before"));
    assert!((num(&req["rate_before"]) - 450.0 / span_b).abs() < 1e-6);
}

// ------------------------------------------------------------------ XRay

/// llvm-xray 14's `graph-diff -v sum` vertex labels: function id → the
/// relative change of the function's total time, as it prints it.
fn graph_diff_vertices(dot: &str) -> BTreeMap<i64, String> {
    let mut m = BTreeMap::new();
    for line in dot.lines() {
        // F4 [label="{#1|127.88%}" color="#276419"]
        if let Some(rest) = line.split("label=\"{#").nth(1) {
            let mut parts = rest.split(['|', '}']);
            let id: i64 = parts.next().and_then(|s| s.parse().ok()).expect("id");
            let pct = parts.next().expect("percent").to_string();
            m.insert(id, pct);
        }
    }
    m
}

#[test]
fn xray_functions_equal_llvm_xray_graph_diff() {
    let r = diff_json(&[
        "-m",
        &corpus("xray/recursion/recursion"),
        &corpus("xray/recursion/recursion.fdr.xray"),
        &corpus("xray/recursion/recursion.basic.xray"),
    ]);
    assert_eq!(r.dialect, "xray");
    // `llvm-xray graph-diff -m recursion -e sum -c sum -v sum -b sum
    // recursion.fdr.xray recursion.basic.xray` (examples/commands.txt).
    let dot = std::fs::read_to_string(corpus("xray/examples/graph-diff-sum.dot")).unwrap();
    let want = graph_diff_vertices(&dot);
    assert_eq!(want.len(), 4, "{dot}");
    let t = table(&r, "functions");
    let got: BTreeMap<i64, String> = rows(t)
        .iter()
        .map(|row| {
            let id = num(&row["id"]) as i64;
            let rel = num(&row["sum_ratio"]) - 1.0;
            (id, format!("{:.2}%", rel * 100.0))
        })
        .collect();
    assert_eq!(got, want);
    // Ranked by |change of total time|; named through the binary.
    let all = rows(t);
    assert_eq!(all[0]["function"], Value::Text("deep".into()));
    for w in all.windows(2) {
        assert!(num(&w[0]["impact"]) >= num(&w[1]["impact"]));
    }
    // fib: 177 calls on each side, each longer in the basic log (its
    // runtime writes every record as it comes): slower beyond the spread.
    let fib = row_by(t, "function", "fib");
    assert_eq!(
        (fib["calls_before"].clone(), fib["calls_after"].clone()),
        (Value::UInt(177), Value::UInt(177))
    );
    assert!(num(&fib["p_value"]) < 1e-6, "{fib:?}");
    assert_eq!(fib["significance"], Value::Text("slower".into()));
}

// ------------------------------------------------------------------ Trace2

/// Each finished process's elapsed µs per `cmd_name`, read from an EVENT
/// file (or every file of a directory) as git wrote it.
fn exits(path: &Path) -> BTreeMap<String, Vec<i64>> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    } else {
        vec![path.to_path_buf()]
    };
    let mut name: BTreeMap<String, String> = BTreeMap::new();
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap_or_default().lines() {
            let Ok(e) = serde_json::from_str::<Json>(line) else {
                continue;
            };
            let sid = e["sid"].as_str().unwrap_or_default().to_string();
            match e["event"].as_str() {
                Some("cmd_name") => {
                    name.insert(sid, e["name"].as_str().unwrap().to_string());
                }
                Some("exit") => {
                    if let Some(n) = name.get(&sid) {
                        let us = (e["t_abs"].as_f64().unwrap() * 1e6).round() as i64;
                        out.entry(n.clone()).or_default().push(us);
                    }
                }
                _ => {}
            }
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
    }
    out
}

fn nearest_rank(v: &[i64], q: f64) -> i64 {
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

#[test]
fn trace2_commands_from_the_exits_git_wrote() {
    let (a, b) = (
        corpus("trace2/01-init-add-commit/event.jsonl"),
        corpus("trace2-git2.39/01-init-add-commit/event.jsonl"),
    );
    let r = diff_json(&[&a, &b]);
    assert_eq!(r.dialect, "trace2");
    let (ea, eb) = (exits(Path::new(&a)), exits(Path::new(&b)));
    let t = table(&r, "commands");
    for (cmd, runs) in &ea {
        let row = row_by(t, "command", cmd);
        for (q, key) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
            assert_eq!(
                num(&row[&format!("{key}_before")]) as i64,
                nearest_rank(runs, q),
                "{cmd} {key}"
            );
            if let Some(after) = eb.get(cmd) {
                assert_eq!(
                    num(&row[&format!("{key}_after")]) as i64,
                    nearest_rank(after, q)
                );
            }
        }
        assert_eq!(
            num(&row["total_before"]) as i64,
            runs.iter().sum::<i64>(),
            "{cmd}"
        );
    }
    // commit ran 4 times on each side: [8640, 8984, 9939, 16598] and
    // [16264, 17499, 22034, 79182] µs. SciPy 1.10.1's
    // mannwhitneyu(before, after, method="exact") gives p =
    // 0.05714285714285714: not beyond the spread at 0.05.
    let commit = row_by(t, "command", "commit");
    assert_eq!(commit["count_before"], Value::UInt(4));
    assert!((num(&commit["p_value"]) - 0.05714285714285714).abs() < 1e-12);
    assert_eq!(commit["significance"], Value::Text("within spread".into()));
    // git 2.39 runs `maintenance` after commit; 2.47's trace has none.
    let m = row_by(t, "command", "maintenance");
    assert_eq!(m["presence"], Value::Text("added".into()));
    assert_eq!(item(&r, "commands_added"), Value::UInt(1));
    // One run against one: never significant.
    let init = row_by(t, "command", "init");
    assert_eq!(init["significance"], Value::Text("too few samples".into()));
    // Regions: the ones that got slower first.
    let regions = rows(table(&r, "regions"));
    assert_eq!(regions[0]["label"], Value::Text("update".into()));
    for w in regions.windows(2) {
        assert!(num(&w[0]["total_delta"]) >= num(&w[1]["total_delta"]));
    }
}

#[test]
fn trace2_directories() {
    let dir = "trace2/13-directory-target";
    let (a, b) = (
        corpus(&format!("{dir}/dir-event")),
        corpus(&format!("{dir}/maxfiles-event")),
    );
    let r = diff_json(&[&a, &b]);
    let (ea, eb) = (exits(Path::new(&a)), exits(Path::new(&b)));
    assert!(ea.contains_key("clone") && eb.contains_key("version"));
    let t = table(&r, "commands");
    for (cmd, runs) in &ea {
        let row = row_by(t, "command", cmd);
        let want = if eb.contains_key(cmd) {
            "both"
        } else {
            "removed"
        };
        assert_eq!(row["presence"], Value::Text(want.into()), "{cmd}");
        assert_eq!(num(&row["count_before"]) as usize, runs.len(), "{cmd}");
    }
    let version = row_by(t, "command", "version");
    assert_eq!(version["presence"], Value::Text("added".into()));
    assert_eq!(num(&version["count_after"]) as usize, eb["version"].len());
}

// ------------------------------------------------------------------ memory

#[test]
fn memory_diff_is_report_diff() {
    let dir = "rtrace/upstream";
    let (a, b) = (
        corpus(&format!("{dir}/context.txt")),
        corpus(&format!("{dir}/context.txt..lc")),
    );
    // The text is `report --diff`'s, byte for byte.
    let text = ok(&["diff", &a, &b]).stdout;
    assert_eq!(text, ok(&["report", "--diff", &a, &b]).stdout);
    assert!(String::from_utf8_lossy(&text).contains("allocations -29"));
    let r = diff_json(&[&a, &b]);
    assert_eq!(r.dialect, "rtrace");
    let legacy: Json =
        serde_json::from_slice(&ok(&["report", "--diff", "--json", &a, &b]).stdout).unwrap();
    let t = table(&r, "totals");
    let mem = row_by(t, "resource", "memory");
    for key in [
        "allocations",
        "allocated",
        "peak",
        "leaked",
        "leaked_blocks",
        "temporary",
    ] {
        assert_eq!(
            num(&mem[&format!("{key}_delta")]) as i64,
            legacy["totals"][0][key].as_i64().unwrap(),
            "{key}"
        );
    }
    // `--filter-leaks` kept exactly the leaks: what was never freed is
    // the same on both sides, every freed block is gone.
    assert_eq!(mem["leaked_before"], mem["leaked_after"]);
    assert_eq!(mem["leaked_blocks_after"], Value::UInt(29));
    assert_eq!(mem["temporary_after"], Value::UInt(0));
    // The places, as report --diff ranks them.
    let places = rows(table(&r, "allocations-memory"));
    let want = &legacy["views"]["memory"]["allocations"];
    assert_eq!(
        places[0]["function"],
        Value::Text(want[0]["function"].as_str().unwrap().into())
    );
}

// ------------------------------------------------------------------ builds

/// tk_end_us − tk_start_us of the compiler driver compiling `file`.
fn compile_us(trace: &str, file: &str) -> u64 {
    for line in std::fs::read_to_string(trace).unwrap().lines() {
        let v: Json = serde_json::from_str(line).unwrap();
        let args: Vec<&str> = v["args"]
            .as_array()
            .map(|a| a.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        if args.first() == Some(&"cc") && args.contains(&"-c") && args.contains(&file) {
            return v["tk_end_us"].as_u64().unwrap() - v["tk_start_us"].as_u64().unwrap();
        }
    }
    panic!("no compile of {file} in {trace}");
}

#[test]
fn build_traces_per_unit_and_parallelism() {
    let (a, b) = (
        corpus("buildtrace/recorded/hiredis-0.14.1-make-j2.trace"),
        corpus("buildtrace/recorded/hiredis-0.14.1-make-j1.trace"),
    );
    let r = diff_json(&[&a, &b]);
    assert_eq!(r.dialect, "build");
    let t = table(&r, "units");
    for file in ["hiredis.c", "sds.c", "net.c", "test.c"] {
        let row = row_by(t, "unit", &format!("{file} → {}", file.replace(".c", ".o")));
        assert_eq!(
            num(&row["time_before"]) as u64,
            compile_us(&a, file),
            "{file}"
        );
        assert_eq!(
            num(&row["time_after"]) as u64,
            compile_us(&b, file),
            "{file}"
        );
    }
    // -j2 ran up to 3 jobs at once (make's $(shell) beside two compiles);
    // -j1 one.
    assert_eq!(item(&r, "peak_jobs_after"), Value::UInt(1));
    assert!(num(&item(&r, "parallelism_before")) > 1.5);
    assert!(num(&item(&r, "parallelism_after")) <= 1.0);
    // Both critical paths end in the test program, through the archive.
    let cp = rows(table(&r, "critical_path"));
    for side in ["before", "after"] {
        let names: Vec<&Value> = cp
            .iter()
            .filter(|x| x["side"] == Value::Text(side.into()))
            .map(|x| &x["unit"])
            .collect();
        assert_eq!(
            names[names.len() - 2..],
            [
                &Value::Text("libhiredis.a".into()),
                &Value::Text("hiredis-test".into())
            ],
            "{side}"
        );
    }
    // The .pc lines name another prefix: three units each way.
    assert_eq!(item(&r, "units_added"), Value::UInt(3));
    assert_eq!(item(&r, "units_removed"), Value::UInt(3));
}

#[test]
fn ninja_logs_as_report_diff() {
    let root = corpus("buildtrace/logs/expat-2.5.0");
    let (a, b) = (format!("{root}/run1.ninja_log"), format!("{root}/build"));
    let r = diff_json(&[&a, &b]);
    assert_eq!(r.dialect, "ninja");
    let first = &rows(table(&r, "units"))[0];
    assert_eq!(
        first["unit"],
        Value::Text("CMakeFiles/expat.dir/lib/xmlparse.c.o".into())
    );
    // 16808 - 1 → 23677 - 17 ms, as report --diff says.
    assert_eq!(
        (first["time_before"].clone(), first["time_after"].clone()),
        (Value::UInt(16807), Value::UInt(23660))
    );
    // The build directory has build.ninja: its critical path (the one
    // `report` finds, 24353 ms); the lone log has none.
    assert_eq!(item(&r, "critical_path_after"), Value::UInt(24353));
    assert_eq!(item(&r, "critical_path_before"), Value::Null);
}

// ------------------------------------------------------------------ CLI

#[test]
fn mismatched_dialects_and_usage_exit_2() {
    let pool = corpus("posix/pool.trace");
    let xray = corpus("xray/mt/mt.fdr.xray");
    let o = tracekit(&["diff", &pool, &xray]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("POSIX trace log") && e.contains("LLVM XRay"),
        "{e}"
    );
    assert!(o.stdout.is_empty());
    let o = tracekit(&["diff", "--html", &pool, &pool]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-o FILE"));
    let o = tracekit(&["diff", &pool]);
    assert_eq!(o.status.code(), Some(2));
}

fn pages() -> Vec<(&'static str, Vec<String>, &'static [&'static str])> {
    vec![
        (
            "diff-posix.html",
            vec![
                corpus("posix/pool.trace"),
                corpus("posix/pool-no-cache-hit.trace"),
            ],
            &[
                "article[data-dialect=posix]",
                "#r0-totals dl.tk-summary div[data-key=events_delta]",
                "#r0-event_types table.tk-table tbody tr",
                "#r0-event_types th[data-key=rate_ratio]",
            ],
        ),
        (
            "diff-xray.html",
            vec![
                "-m".into(),
                corpus("xray/recursion/recursion"),
                corpus("xray/recursion/recursion.fdr.xray"),
                corpus("xray/recursion/recursion.basic.xray"),
            ],
            &[
                "article[data-dialect=xray]",
                "#r0-functions table.tk-table th[data-key=significance]",
                "#r0-functions table.tk-table tbody tr",
            ],
        ),
        (
            "diff-trace2.html",
            vec![
                corpus("trace2/13-directory-target/dir-event"),
                corpus("trace2/13-directory-target/maxfiles-event"),
            ],
            &[
                "article[data-dialect=trace2]",
                "#r0-commands table.tk-table tbody tr",
                "#r0-regions table.tk-table",
            ],
        ),
        (
            "diff-rtrace.html",
            vec![
                corpus("rtrace/upstream/context.txt"),
                corpus("rtrace/upstream/context.txt..lc"),
            ],
            &[
                "article[data-dialect=rtrace]",
                "#r0-totals table.tk-table tbody tr",
                "#r0-allocations-memory table.tk-table tbody tr",
            ],
        ),
        (
            "diff-build.html",
            vec![
                corpus("buildtrace/recorded/hiredis-0.14.1-make-j2.trace"),
                corpus("buildtrace/recorded/hiredis-0.14.1-make-j1.trace"),
            ],
            &[
                "article[data-dialect=build]",
                "#r0-units table.tk-table tbody tr",
                "#r0-critical_path table.tk-table tbody tr",
            ],
        ),
    ]
}

#[test]
fn html_pages_render_in_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, args, selectors) in pages() {
        let path = dir.path().join(name);
        let mut all = vec!["diff", "--html", "-o", path.to_str().unwrap()];
        all.extend(args.iter().map(String::as_str));
        ok(&all);
        let html = std::fs::read_to_string(&path).expect("page");
        for bad in ["http:", "https:", "url(", "@import", "src="] {
            assert!(!html.contains(bad), "{name}: {bad}");
        }
        // `-o -` writes the same page to standard output.
        let mut out = vec!["diff", "--html", "-o", "-"];
        out.extend(args.iter().map(String::as_str));
        assert_eq!(String::from_utf8_lossy(&ok(&out).stdout), html, "{name}");
        if name == "diff-rtrace.html" {
            // `report --diff --html` is the same page.
            let mut alias = vec!["report", "--diff", "--html", "-o", "-"];
            alias.extend(args.iter().map(String::as_str));
            assert_eq!(String::from_utf8_lossy(&ok(&alias).stdout), html);
        }
        if common::chromium::check_page(&path, selectors).is_none() {
            eprintln!("chromium is not installed: the pages were not opened");
            return;
        }
    }
}
