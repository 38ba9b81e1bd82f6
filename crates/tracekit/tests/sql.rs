//! `tracekit sql` and `convert --to parquet` against tracekit's own reports
//! on the corpus, and the Parquet files read by an independent engine
//! (DuckDB, through `tests/duckdb_check.py`).
//!
//! Each question is asked three ways and must get one answer: the library
//! report (XRay `account -d`, the Trace2 report's per-command statistics,
//! the build's slowest compile units, the sp-rtrace report's leaks by
//! backtrace), `tracekit sql` on the trace itself, and `tracekit sql` on
//! the Parquet directory; DuckDB reads that directory too.
//!
//! Without the `duckdb` Python package the DuckDB comparison cannot run:
//! the test says so and passes, unless `CI` or `TRACEKIT_REQUIRE_DUCKDB` is
//! set (CI installs the package), where it fails.
//!
//! The SQL engine is the `sql` cargo feature: without it (`cargo test
//! --no-default-features -p tracekit`) only the Parquet tests run, and
//! `tracekit sql` must say how to get the engine.
#![cfg_attr(not(feature = "sql"), allow(dead_code, unused_imports))]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus(rel: &str) -> PathBuf {
    root().join("tests/corpus").join(rel)
}

fn tracekit(args: &[&OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .output()
        .expect("run tracekit")
}

/// Runs a query, returns its rows (JSON objects; nulls are absent keys).
fn sql(query: &str, inputs: &[&Path], extra: &[&str]) -> Vec<Value> {
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["sql".as_ref(), "--format".as_ref(), "json".as_ref()];
    args.extend(extra.iter().map(OsStr::new));
    args.push(OsStr::new(query));
    args.extend(inputs.iter().map(|p| p.as_os_str()));
    let o = tracekit(&args);
    assert!(
        o.status.success(),
        "tracekit sql {query:?} {inputs:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

/// Converts `inputs` to Parquet in a fresh directory.
fn to_parquet(inputs: &[&Path], extra: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args: Vec<&OsStr> = vec![OsStr::new("convert")];
    args.extend(inputs.iter().map(|p| p.as_os_str()));
    args.extend([OsStr::new("--to"), OsStr::new("parquet"), OsStr::new("-o")]);
    args.push(dir.path().as_os_str());
    args.extend(extra.iter().map(OsStr::new));
    let o = tracekit(&args);
    assert!(
        o.status.success(),
        "convert {inputs:?} --to parquet: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    dir
}

/// Whether `python3 -c "import MODULES"` works (and `extra`, another
/// check). When it does not: a failure if any of `required_by` is set in
/// the environment, else a note that `what` did not run.
fn python_has(modules: &str, extra: bool, required_by: &[&str], what: &str) -> bool {
    let ok = extra
        && Command::new("python3")
            .args(["-c", &format!("import {modules}")])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        let required = required_by.iter().any(|v| std::env::var_os(v).is_some());
        assert!(!required, "{what} needs python3 with {modules} (PyPI)");
        eprintln!("{what} did not run: it needs python3 with {modules} (PyPI)");
    }
    ok
}

fn duckdb_available() -> bool {
    python_has(
        "duckdb",
        true,
        &["CI", "TRACEKIT_REQUIRE_DUCKDB"],
        "the DuckDB comparison",
    )
}

/// The same query run by DuckDB over the Parquet directory `dir` (each
/// table a view over `dir/<table>/*.parquet`), rows as JSON objects.
fn duckdb(query: &str, dir: &Path) -> Vec<Value> {
    let o = Command::new("python3")
        .arg(root().join("crates/tracekit/tests/duckdb_check.py"))
        .arg(dir)
        .arg(query)
        .output()
        .expect("run python3");
    assert!(
        o.status.success(),
        "duckdb {query:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

fn int(v: &Value, k: &str) -> Option<i64> {
    match v.get(k)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn text(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Rows keyed by their `key` columns, with `vals` as integers: what is
/// compared between engines (order-free).
fn keyed(
    rows: &[Value],
    keys: &[&str],
    vals: &[&str],
) -> BTreeMap<Vec<Option<String>>, Vec<Option<i64>>> {
    rows.iter()
        .map(|r| {
            (
                keys.iter().map(|k| text(r, k)).collect(),
                vals.iter().map(|k| int(r, k)).collect(),
            )
        })
        .collect()
}

/// Asks `query` of the trace (in place), of its Parquet directory, and of
/// DuckDB over that directory; all three must agree. Returns the rows.
fn three_ways(
    query: &str,
    inputs: &[&Path],
    extra: &[&str],
    keys: &[&str],
    vals: &[&str],
) -> Vec<Value> {
    let raw = sql(query, inputs, extra);
    let pq = to_parquet(inputs, extra);
    let from_pq = sql(query, &[pq.path()], &[]);
    assert_eq!(
        keyed(&raw, keys, vals),
        keyed(&from_pq, keys, vals),
        "{query}: the trace and its Parquet tables differ"
    );
    if duckdb_available() {
        let d = duckdb(query, pq.path());
        assert_eq!(
            keyed(&raw, keys, vals),
            keyed(&d, keys, vals),
            "{query}: DuckDB reads other answers from the Parquet tables"
        );
    }
    raw
}

// ---------------------------------------------------------------- XRay

const XRAY_ACCOUNT: &str = "SELECT function_id, count(*) AS calls, sum(dur_tsc) AS total_tsc, \
     max(dur_tsc) AS max_tsc FROM xray_calls GROUP BY function_id ORDER BY function_id";

fn xray_traces() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for prog in ["mt", "tailcall", "recursion", "args"] {
        let dir = corpus(&format!("xray/{prog}"));
        let bin = dir.join(prog);
        for kind in ["basic", "fdr", "fdr-rdtsc"] {
            let t = dir.join(format!("{prog}.{kind}.xray"));
            if t.exists() && bin.exists() {
                out.push((t, bin.clone()));
            }
        }
    }
    assert!(out.len() >= 8, "the XRay corpus is missing: {out:?}");
    out
}

#[test]
#[cfg(feature = "sql")]
fn xray_calls_match_account_totals_and_counts_per_function() {
    use tracekit_xray::commands::{account_rows, AccountArgs};
    for (trace, bin) in xray_traces() {
        let data = std::fs::read(&trace).expect("read trace");
        let t = tracekit_xray::trace::Trace::open(&data).expect("open trace");
        let freq = match t.header.cycle_frequency {
            0 => 1e9,
            f => f as f64,
        };
        let args = AccountArgs {
            deduce_sibling_calls: true,
            ..Default::default()
        };
        let (rows, _, _) =
            account_rows(&t, &tracekit_xray::names::FunctionNames::none(), &args).expect("account");
        let m = bin.to_string_lossy().into_owned();
        let got = three_ways(
            XRAY_ACCOUNT,
            &[&trace],
            &["-m", &m],
            &["function_id"],
            &["calls", "total_tsc", "max_tsc"],
        );
        assert_eq!(got.len(), rows.len(), "{}: functions", trace.display());
        let by_id: BTreeMap<i64, &Value> = got
            .iter()
            .map(|r| (int(r, "function_id").expect("id"), r))
            .collect();
        for row in &rows {
            let r = by_id
                .get(&i64::from(row.func_id))
                .unwrap_or_else(|| panic!("{}: function {} missing", trace.display(), row.func_id));
            assert_eq!(
                int(r, "calls"),
                Some(row.count as i64),
                "{}: count",
                trace.display()
            );
            let sum = int(r, "total_tsc").expect("sum") as f64 / freq;
            let max = int(r, "max_tsc").expect("max") as f64 / freq;
            assert!(
                (sum - row.sum).abs() <= 1e-9 * row.sum.abs().max(1e-9),
                "{}: function {} sum {sum} vs account {}",
                trace.display(),
                row.func_id,
                row.sum
            );
            assert!(
                (max - row.max).abs() <= 1e-9 * row.max.abs().max(1e-9),
                "{}: function {} max {max} vs account {}",
                trace.display(),
                row.func_id,
                row.max
            );
        }
    }
}

#[test]
#[cfg(feature = "sql")]
fn xray_function_names_come_from_the_binary() {
    let dir = corpus("xray/mt");
    let rows = sql(
        "SELECT DISTINCT function FROM xray_calls ORDER BY function",
        &[&dir.join("mt.fdr.xray")],
        &["-m", &dir.join("mt").to_string_lossy()],
    );
    let names: Vec<String> = rows.iter().filter_map(|r| text(r, "function")).collect();
    assert_eq!(names, ["leaf", "middle", "top", "worker"]);
}

// ---------------------------------------------------------------- Trace2

/// Nearest-rank p50 (as the report computes it) in plain SQL, so that
/// DuckDB and DataFusion answer the same thing.
const TRACE2_COMMANDS: &str = "WITH r AS (SELECT command, mode, elapsed_ns, \
     row_number() OVER (PARTITION BY command, mode ORDER BY elapsed_ns) AS k, \
     count(elapsed_ns) OVER (PARTITION BY command, mode) AS n FROM trace2_processes) \
     SELECT command, coalesce(mode, '') AS mode, count(*) AS count, \
     max(elapsed_ns) / 1000 AS max_us, \
     max(CASE WHEN elapsed_ns IS NOT NULL AND k = CAST(ceil(n * 0.5) AS BIGINT) THEN elapsed_ns END) / 1000 AS p50_us \
     FROM r GROUP BY command, mode ORDER BY command, mode";

#[test]
#[cfg(feature = "sql")]
fn trace2_per_command_count_p50_max_match_the_report() {
    let mut checked = 0;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus("trace2"))
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("event.jsonl").exists())
        .collect();
    dirs.sort();
    for d in dirs {
        let input = d.join("event.jsonl");
        let o = tracekit(&["report".as_ref(), "--json".as_ref(), input.as_os_str()]);
        let rep: Value = serde_json::from_slice(&o.stdout).expect("report JSON");
        let got = three_ways(
            TRACE2_COMMANDS,
            &[&input],
            &[],
            &["command", "mode"],
            &["count", "p50_us", "max_us"],
        );
        let want: CommandStats = rep["commands"]
            .as_array()
            .expect("commands")
            .iter()
            .map(|c| {
                let us = |k: &str| c[k].as_f64().map(|s| (s * 1e6).round() as i64);
                (
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["mode"].as_str().unwrap_or_default().to_string(),
                    ),
                    (c["count"].as_i64().unwrap_or(-1), us("p50_s"), us("max_s")),
                )
            })
            .collect();
        let have: CommandStats = got
            .iter()
            .map(|r| {
                (
                    (
                        text(r, "command").unwrap_or_default(),
                        text(r, "mode").unwrap_or_default(),
                    ),
                    (
                        int(r, "count").unwrap_or(-1),
                        int(r, "p50_us"),
                        int(r, "max_us"),
                    ),
                )
            })
            .collect();
        assert_eq!(have, want, "{}", input.display());
        checked += want.len();
    }
    assert!(checked >= 10, "only {checked} commands compared");
}

// ---------------------------------------------------------------- builds

const SLOWEST_UNITS: &str = "SELECT record, source, dur_ns / 1000 AS dur_us FROM build_processes \
     WHERE is_compile ORDER BY dur_ns DESC, record LIMIT 10";

/// 24-maintenance-detach: each daemonised child (a process forked under
/// its parent's SID) is a row of its own, in the tables streamed from the
/// trace and in the Parquet files: `trace2_processes` (`fork` 1, no pid)
/// and the timeline's `processes` (a track of its own).
#[test]
fn trace2_daemonised_child_is_a_row_of_its_own() {
    let input = corpus("trace2/24-maintenance-detach/event.jsonl");
    let dir = to_parquet(&[&input], &[]);
    for source in [input.as_path(), dir.path()] {
        let rows = sql(
            "SELECT sid, fork, pid, elapsed_ns FROM trace2_processes \
             WHERE command = 'maintenance' ORDER BY sid, fork",
            &[source],
            &[],
        );
        assert_eq!(rows.len(), 6, "{source:?}");
        for pair in rows.chunks(2) {
            assert_eq!(text(&pair[0], "sid"), text(&pair[1], "sid"), "{source:?}");
            assert_eq!(
                (int(&pair[0], "fork"), int(&pair[1], "fork")),
                (Some(0), Some(1))
            );
            assert!(int(&pair[0], "pid").is_some() && int(&pair[1], "pid").is_none());
        }
        // exit t_abs of the three processes forked under a SID.
        let forked: Vec<Option<i64>> = rows
            .iter()
            .skip(1)
            .step_by(2)
            .map(|r| int(r, "elapsed_ns"))
            .collect();
        assert_eq!(
            forked,
            [Some(407_004_000), Some(34_334_000), Some(30_641_000)]
        );
        let all = sql("SELECT count(*) AS n FROM trace2_processes", &[source], &[]);
        assert_eq!(int(&all[0], "n"), Some(21), "{source:?}");
        let tracks = sql(
            "SELECT count(DISTINCT pid) AS n, count(*) AS m FROM processes",
            &[source],
            &[],
        );
        assert_eq!(
            (int(&tracks[0], "n"), int(&tracks[0], "m")),
            (Some(21), Some(21))
        );
        let named = sql(
            "SELECT count(*) AS n FROM processes WHERE name = 'git maintenance (fork 1)'",
            &[source],
            &[],
        );
        assert_eq!(int(&named[0], "n"), Some(3), "{source:?}");
    }
}

#[test]
#[cfg(feature = "sql")]
fn build_slowest_compile_units_match_the_report() {
    let input = corpus("buildtrace/recorded/hello-make-j2.trace");
    let o = tracekit(&["report".as_ref(), "--json".as_ref(), input.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rep: Value = serde_json::from_slice(&o.stdout).expect("report JSON");
    let want: Vec<(i64, String, i64)> = rep["slowest_compile_units"]
        .as_array()
        .expect("slowest")
        .iter()
        .take(10)
        .map(|u| {
            (
                u["index"].as_i64().unwrap_or(-1),
                u["file"].as_str().unwrap_or_default().to_string(),
                u["duration_us"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert!(!want.is_empty(), "the build has compile units");
    let got = three_ways(
        SLOWEST_UNITS,
        &[&input],
        &[],
        &["record", "source"],
        &["dur_us"],
    );
    // Equal durations may be listed in either order: compare as sets.
    let mut have: Vec<(i64, String, i64)> = got
        .iter()
        .map(|r| {
            (
                int(r, "record").unwrap_or(-1),
                text(r, "source").unwrap_or_default(),
                int(r, "dur_us").unwrap_or(-1),
            )
        })
        .collect();
    let mut want = want;
    have.sort();
    want.sort();
    assert_eq!(have, want);
}

// ---------------------------------------------------------------- sp-rtrace

const LEAKS: &str = "WITH bt AS (SELECT backtrace_id, \
     string_agg(CAST(address AS VARCHAR), ',' ORDER BY frame) AS frames \
     FROM rtrace_backtraces GROUP BY backtrace_id) \
     SELECT a.resource, coalesce(bt.frames, '') AS frames, count(*) AS blocks, sum(a.size) AS bytes \
     FROM rtrace_allocations a LEFT JOIN bt ON a.backtrace_id = bt.backtrace_id \
     WHERE a.leaked GROUP BY a.resource, bt.frames ORDER BY bytes DESC, frames";

#[test]
#[cfg(feature = "sql")]
fn rtrace_leaks_by_backtrace_match_the_report() {
    let mut checked = 0;
    for rel in ["rtrace/upstream/sample.txt", "rtrace/upstream/context.txt"] {
        let input = corpus(rel);
        let f = std::fs::File::open(&input).expect("open");
        let rep = tracekit_rtrace::report::analyse(std::io::BufReader::new(f), usize::MAX, false)
            .expect("report");
        let mut want: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
        for t in &rep.traces {
            if t.cost.leaked_blocks == 0 {
                continue;
            }
            let frames: Vec<String> = t.frames.iter().map(|f| f.0.to_string()).collect();
            let e = want
                .entry((rep.resources[t.resource].name.clone(), frames.join(",")))
                .or_default();
            e.0 += t.cost.leaked_blocks;
            e.1 += t.cost.leaked;
        }
        let got = three_ways(
            LEAKS,
            &[&input],
            &[],
            &["resource", "frames"],
            &["blocks", "bytes"],
        );
        let have: BTreeMap<(String, String), (i64, i64)> = got
            .iter()
            .map(|r| {
                (
                    (
                        text(r, "resource").unwrap_or_default(),
                        text(r, "frames").unwrap_or_default(),
                    ),
                    (
                        int(r, "blocks").unwrap_or(-1),
                        int(r, "bytes").unwrap_or(-1),
                    ),
                )
            })
            .collect();
        assert_eq!(have, want, "{}", input.display());
        checked += want.len();
    }
    assert!(checked > 0, "no leaks compared");
}

// ---------------------------------------------------------------- generic

/// One corpus trace of every dialect (Trace2 first).
fn one_trace_per_dialect() -> [PathBuf; 4] {
    [
        corpus("trace2/01-init-add-commit/event.jsonl"),
        corpus("buildtrace/recorded/hello-make-j2.trace"),
        corpus("rtrace/upstream/sample.txt"),
        corpus("xray/mt/mt.fdr.xray"),
    ]
}

#[test]
#[cfg(feature = "sql")]
fn every_dialect_fills_the_generic_tables_and_sources_concatenate() {
    let inputs = one_trace_per_dialect();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let q = "SELECT dialect, count(DISTINCT file) AS files, \
             (SELECT count(*) FROM slices s WHERE s.dialect = p.dialect) AS slices \
             FROM processes p GROUP BY dialect ORDER BY dialect";
    let rows = sql(q, &refs, &[]);
    let dialects: Vec<String> = rows.iter().filter_map(|r| text(r, "dialect")).collect();
    assert_eq!(dialects, ["kwinject", "rtrace", "trace2"], "{rows:?}");
    let pq = to_parquet(&refs, &[]);
    let both = sql(
        "SELECT dialect, count(*) AS n FROM slices GROUP BY dialect ORDER BY dialect",
        &[pq.path(), &inputs[0]],
        &[],
    );
    let only_raw = sql(
        "SELECT dialect, count(*) AS n FROM slices GROUP BY dialect ORDER BY dialect",
        &refs,
        &[],
    );
    // The Parquet directory plus the first trace again: trace2 counted twice.
    for r in &only_raw {
        let d = text(r, "dialect").unwrap_or_default();
        let n = int(r, "n").unwrap_or(0);
        let b = both
            .iter()
            .find(|x| text(x, "dialect").as_deref() == Some(d.as_str()))
            .and_then(|x| int(x, "n"))
            .unwrap_or(-1);
        assert_eq!(b, if d == "trace2" { 2 * n } else { n }, "{d}");
    }
}

/// Whether Spark (the `pyspark` package and a Java runtime) is here. CI
/// does not install it (half a gigabyte); `TRACEKIT_REQUIRE_SPARK=1` makes
/// its absence a failure.
fn spark_available() -> bool {
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    python_has(
        "pyspark, duckdb",
        java,
        &["TRACEKIT_REQUIRE_SPARK"],
        "the Spark comparison (with java)",
    )
}

/// Spark reads Parquet with its own decoders: every table of every dialect
/// must read there, with the same counts, distinct counts and integer sums
/// per column as DuckDB sees (Spark 4.3 cannot read an unsigned column
/// written BYTE_STREAM_SPLIT, for one).
#[test]
fn every_table_reads_the_same_in_spark_and_duckdb() {
    if !spark_available() {
        return;
    }
    let inputs = one_trace_per_dialect();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let pq = to_parquet(&refs, &[]);
    let o = Command::new("python3")
        .arg(root().join("crates/tracekit/tests/spark_check.py"))
        .arg(pq.path())
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "spark_check.py: {stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains(" 0 differences"), "{stdout}");
}

#[test]
#[cfg(feature = "sql")]
fn slices_nest_and_anchored_times_are_timestamps() {
    let input = corpus("trace2/01-init-add-commit/event.jsonl");
    // Every slice with a parent lies inside it, one level deeper.
    let bad = sql(
        "SELECT count(*) AS n FROM slices c JOIN slices p ON c.file = p.file AND c.parent_slice_id = p.slice_id \
         WHERE c.depth <> p.depth + 1 OR c.start_ns < p.start_ns OR c.start_ns + c.dur_ns > p.start_ns + p.dur_ns",
        &[&input],
        &[],
    );
    assert_eq!(int(&bad[0], "n"), Some(0));
    // Trace2 is anchored to Unix time: start_time is set; XRay is not: null.
    let t = sql(
        "SELECT count(start_time) AS anchored, count(*) AS n FROM slices",
        &[&input],
        &[],
    );
    assert_eq!(int(&t[0], "anchored"), int(&t[0], "n"));
    let x = corpus("xray/mt");
    let t = sql(
        "SELECT count(start_time) AS anchored, count(*) AS n FROM slices",
        &[&x.join("mt.fdr.xray")],
        &["-m", &x.join("mt").to_string_lossy()],
    );
    assert_eq!(int(&t[0], "anchored"), Some(0));
    assert!(int(&t[0], "n").unwrap_or(0) > 0);
}

#[test]
#[cfg(feature = "sql")]
fn schema_lists_every_table_and_bad_sql_is_an_error() {
    let o = tracekit(&["sql".as_ref(), "--schema".as_ref()]);
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    for t in [
        "slices:",
        "xray_calls:",
        "trace2_processes:",
        "rtrace_backtraces:",
    ] {
        assert!(s.contains(t), "{t} missing from --schema");
    }
    let input = corpus("trace2/01-init-add-commit/event.jsonl");
    let o = tracekit(&[
        "sql".as_ref(),
        "SELECT nope FROM slices".as_ref(),
        input.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("tracekit: sql: "));
    let o = tracekit(&[
        "sql".as_ref(),
        "--format".as_ref(),
        "xml".as_ref(),
        "SELECT 1".as_ref(),
        input.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
#[cfg(feature = "sql")]
fn csv_and_table_formats() {
    let input = corpus("trace2/01-init-add-commit/event.jsonl");
    let o = tracekit(&[
        "sql".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
        "SELECT command, count(*) AS n FROM trace2_processes GROUP BY command ORDER BY command"
            .as_ref(),
        input.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("command,n\n"), "{out}");
    let o = tracekit(&[
        "sql".as_ref(),
        "SELECT count(*) AS n FROM trace2_processes".as_ref(),
        input.as_os_str(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("| n "), "{out}");
}

/// (command, verb) -> (count, p50, max) of the Trace2 report.
type CommandStats = BTreeMap<(String, String), (i64, Option<i64>, Option<i64>)>;

#[test]
#[cfg(feature = "sql")]
fn bad_inputs_are_named_and_unreadable_records_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    // No known format: refused before the query runs, naming the file,
    // even when the query reads no table.
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"\x00\x01 this is no trace of any dialect\n").expect("write");
    for q in ["SELECT 1 AS one", "SELECT count(*) AS n FROM slices"] {
        let o = tracekit(&["sql".as_ref(), q.as_ref(), junk.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{q}: {err}");
        assert!(
            err.starts_with("tracekit: ") && err.contains("junk.bin"),
            "{q}: {err}"
        );
    }
    let missing = dir.path().join("missing.jsonl");
    let o = tracekit(&["sql".as_ref(), "SELECT 1".as_ref(), missing.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.jsonl"));
    // A Trace2 file with a broken line: the rows that could be read are
    // answered, the line is named on stderr, and the exit code is 1.
    let good = std::fs::read(corpus("trace2/01-init-add-commit/event.jsonl")).expect("read");
    let mut bad = good.clone();
    bad.extend_from_slice(b"{\"event\":\"exit\",\"sid\":\"x\",broken\n");
    let broken = dir.path().join("broken.event.jsonl");
    std::fs::write(&broken, &bad).expect("write");
    let q = "SELECT count(*) AS n FROM trace2_processes";
    let o = tracekit(&[
        "sql".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
        q.as_ref(),
        broken.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("broken.event.jsonl"), "{err}");
    let whole = sql(q, &[&corpus("trace2/01-init-add-commit/event.jsonl")], &[]);
    let n = int(&whole[0], "n").expect("n");
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("n\n{n}\n"));
}

#[test]
#[cfg(not(feature = "sql"))]
fn without_the_sql_feature_sql_says_how_to_get_it_and_parquet_still_works() {
    let [t2, ..] = one_trace_per_dialect();
    for args in [
        vec![OsStr::new("sql"), OsStr::new("SELECT 1"), t2.as_os_str()],
        vec![OsStr::new("sql"), OsStr::new("--schema")],
        vec![OsStr::new("sql")],
    ] {
        let o = tracekit(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "cargo install --path crates/tracekit --no-default-features --features sql"
            ),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let inputs = one_trace_per_dialect();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let pq = to_parquet(&refs, &[]);
    for table in ["slices", "processes", "trace2_processes", "xray_calls"] {
        let n = std::fs::read_dir(pq.path().join(table))
            .map(|d| d.count())
            .unwrap_or(0);
        assert!(n > 0, "no {table} Parquet file");
    }
}

// ---------------------------------------------------------------- safety

/// Runs `tracekit ARGS` with extra environment.
fn tracekit_env(args: &[&OsStr], env: &[(&str, &OsStr)]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tracekit"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run tracekit")
}

#[test]
fn sql_only_reads_and_refuses_the_rest_with_exit_2() {
    let input = corpus("trace2/01-init-add-commit/event.jsonl");
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("copied.csv");
    let refused = [
        (
            format!(
                "COPY (SELECT 1 AS a) TO '{}' STORED AS CSV",
                target.display()
            ),
            "COPY",
        ),
        (
            "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION '/etc/passwd'".to_string(),
            "CREATE EXTERNAL TABLE",
        ),
        (
            "INSERT INTO slices SELECT * FROM slices".to_string(),
            "INSERT INTO",
        ),
        ("DROP VIEW slices".to_string(), "DROP VIEW"),
        ("SET datafusion.execution.batch_size = 1".to_string(), "SET"),
    ];
    for (q, kind) in &refused {
        let o = tracekit(&["sql".as_ref(), q.as_ref(), input.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{q}: {err}");
        assert!(
            err.starts_with(&format!("tracekit: sql: {kind}: refused: ")),
            "{q}: {err}"
        );
        assert!(o.stdout.is_empty(), "{q}");
        assert!(!target.exists(), "{q} wrote {}", target.display());
    }
    for q in [
        "SELECT count(*) AS n FROM slices",
        "WITH p AS (SELECT pid FROM processes) SELECT count(*) AS n FROM p",
        "EXPLAIN SELECT count(*) FROM slices",
        "SHOW TABLES",
        "DESCRIBE slices",
    ] {
        let o = tracekit(&["sql".as_ref(), q.as_ref(), input.as_os_str()]);
        assert!(
            o.status.success(),
            "{q}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stdout.is_empty(), "{q}");
    }
}

#[test]
fn sql_memory_is_bounded_sorts_spill_privately_the_rest_fails_with_a_hint() {
    let input = corpus("trace2/01-init-add-commit/event.jsonl");
    // What cannot spill (a cross join's build side) fails, with the hint.
    let o = tracekit(&[
        "sql".as_ref(),
        "--memory-limit".as_ref(),
        "1M".as_ref(),
        "SELECT max(a.value + b.value) AS m FROM generate_series(1, 200000) a \
         CROSS JOIN generate_series(1, 3) b"
            .as_ref(),
        input.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("tracekit: sql: Resources exhausted: "),
        "{err}"
    );
    assert!(
        err.contains("\nhint: ") && err.contains("--memory-limit"),
        "{err}"
    );
    // A sort of 300 000 rows under 4 MiB spills, answers right, and leaves
    // nothing in the temporary directory.
    let tmp = tempfile::tempdir().expect("tempdir");
    let q = "SELECT count(*) AS n, sum(x) AS s FROM (SELECT value AS x, \
             row_number() OVER (ORDER BY value DESC) AS r FROM generate_series(1, 300000)) \
             WHERE r <= 3";
    let run = |sql: &str| {
        tracekit_env(
            &[
                "sql".as_ref(),
                "--format".as_ref(),
                "csv".as_ref(),
                "--memory-limit".as_ref(),
                "4M".as_ref(),
                sql.as_ref(),
                input.as_os_str(),
            ],
            &[("TMPDIR", tmp.path().as_os_str())],
        )
    };
    let o = run(q);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n,s\n3,899997\n");
    let o = run(&format!("EXPLAIN ANALYZE {q}"));
    let plan = String::from_utf8_lossy(&o.stdout);
    let spills: u64 = plan
        .split("spill_count=")
        .skip(1)
        .filter_map(|s| {
            s.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum();
    assert!(spills > 0, "{plan}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("read tmp")
        .map(|e| e.map(|e| e.path()))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // A size that is not one is a usage error.
    let o = tracekit(&[
        "sql".as_ref(),
        "--memory-limit".as_ref(),
        "12X".as_ref(),
        "SELECT 1".as_ref(),
        input.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"12X\" is not a memory size"));
}

#[cfg(unix)]
#[test]
fn parquet_output_is_private_and_honours_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let input = corpus("trace2/01-init-add-commit/event.jsonl");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    for (file_mode, want_file, want_dir) in [(None, 0o600, 0o700), (Some("640"), 0o640, 0o750)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("tables");
        let mut args: Vec<&OsStr> = vec!["convert".as_ref(), input.as_os_str()];
        args.extend(["--to", "parquet", "-o"].map(OsStr::new));
        args.push(out.as_os_str());
        if let Some(m) = file_mode {
            args.extend(["--file-mode", m].map(OsStr::new));
        }
        let o = tracekit(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(mode(&out), want_dir, "{}", out.display());
        let mut files = 0;
        for table in std::fs::read_dir(&out).expect("read out") {
            let table = table.expect("entry").path();
            assert_eq!(mode(&table), want_dir, "{}", table.display());
            for f in std::fs::read_dir(&table).expect("read table") {
                let f = f.expect("entry").path();
                assert_eq!(mode(&f), want_file, "{}", f.display());
                files += 1;
            }
        }
        assert!(files >= 6, "{files} tables");
    }
}

#[test]
fn damaged_parquet_is_named_never_a_panic() {
    // The committed samples (tests/corpus/parquet/README.md): a damaged
    // embedded Arrow schema is not read at all; a page that panics the
    // parquet crate's decoder fails the query naming the file.
    let o = tracekit(&[
        "sql".as_ref(),
        "--format".as_ref(),
        "csv".as_ref(),
        "SELECT count(*) AS n FROM processes".as_ref(),
        corpus("parquet/damaged-arrow-schema").as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n\n6\n");
    let o = tracekit(&[
        "sql".as_ref(),
        "SELECT sum(pid) FROM threads".as_ref(),
        corpus("parquet/damaged-page").as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("tracekit: sql: ")
            && err.contains("damaged-page/threads/event.jsonl.parquet: damaged Parquet file: "),
        "{err}"
    );
    // A table written here from a corpus trace, one bit flipped at a time
    // at 16 places across the file: an answer or an error naming the file.
    let pq = to_parquet(&[&corpus("trace2/01-init-add-commit/event.jsonl")], &[]);
    let written = std::fs::read_dir(pq.path().join("slices"))
        .expect("slices")
        .next()
        .expect("a file")
        .expect("entry")
        .path();
    let original = std::fs::read(&written).expect("read");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("slices")).expect("mkdir");
    let copy = dir.path().join("slices/flipped.parquet");
    let mut named = 0;
    for i in 0..16 {
        let pos = i * original.len() / 16 + 3;
        let mut bytes = original.clone();
        bytes[pos] ^= 1 << (i % 8);
        std::fs::write(&copy, &bytes).expect("write");
        let o = tracekit(&[
            "sql".as_ref(),
            "SELECT * FROM slices".as_ref(),
            dir.path().as_os_str(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        match o.status.code() {
            Some(0) => {}
            Some(1) => {
                assert!(
                    err.starts_with("tracekit: sql: ") && err.contains("slices/flipped.parquet: "),
                    "byte {pos}: {err}"
                );
                named += 1;
            }
            other => panic!("byte {pos}: exit {other:?}: {err}"),
        }
        assert!(!err.contains("panicked"), "byte {pos}: {err}");
    }
    assert!(named > 0);
}
