//! The `tracekit` binary on Git Trace2 input: detection, info, convert,
//! and what bad input does (positioned errors, exit 1, never a panic).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn corpus(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus/trace2")
        .join(case)
}

/// A case of the git 2.39.5 corpus.
fn corpus_2_39(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus/trace2-git2.39")
        .join(case)
}

fn run(args: &[&str]) -> Output {
    tracekit().args(args).output().expect("run tracekit")
}

fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = tracekit()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn info_detects_each_format_from_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, want) in [
        ("event.jsonl", "Git Trace2 EVENT"),
        ("perf.log", "Git Trace2 PERF"),
        ("normal.log", "Git Trace2 NORMAL"),
    ] {
        // A misleading name: detection must look at the content.
        let renamed = dir.path().join(format!("trace-{file}.txt"));
        std::fs::copy(corpus("04-clone-local").join(file), &renamed).expect("copy");
        let out = run(&["info", "--json", renamed.to_str().expect("utf8")]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["format"], want);
        assert_eq!(v["processes"], 19, "{file}");
        assert_eq!(v["producer"], "git 2.47.3");
        assert_eq!(v["details"]["producers"][0], "git 2.47.3");
    }
    let out = run(&[
        "info",
        "--json",
        corpus("04-clone-local/event.jsonl").to_str().expect("utf8"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["events"], 320);
    assert_eq!(v["schema"], "tracekit.info/1");
    assert_eq!(v["dialect"], "trace2");
    assert_eq!(v["details"]["events_by_kind"]["region_enter"], 53);
    assert_eq!(v["version"], "4");
    assert_eq!(v["first_time"], "2026-11-21T19:54:27.895574Z");
}

#[test]
fn info_reads_directory_targets() {
    let out = run(&[
        "info",
        "--json",
        corpus("13-directory-target/dir-event")
            .to_str()
            .expect("utf8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["details"]["files"], 6);
    assert_eq!(v["processes"], 6);
    // The maxFiles sentinel holds a full session plus `too_many_files`.
    let out = run(&[
        "info",
        "--json",
        corpus("13-directory-target/maxfiles-event")
            .to_str()
            .expect("utf8"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["details"]["events_by_kind"]["too_many_files"], 1);
}

#[test]
fn convert_equals_gits_perf_target() {
    let out = tracekit()
        .env("TZ", "UTC")
        .args(["convert", "--to", "trace2-perf"])
        .arg(corpus("20-counters/event.jsonl"))
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = std::fs::read(corpus("20-counters/perf.log")).expect("read");
    // Same number of lines, and the counters (target-emitted, with the
    // PERF target's own file:line) are identical after the time column.
    let got = text(&out.stdout);
    let want = text(&want);
    let counters = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains("| counter "))
            .map(|l| l[16..].to_string())
            .collect()
    };
    assert!(!counters(&want).is_empty());
    assert_eq!(counters(&got), counters(&want));
}

#[test]
fn stdin_and_stdout_with_dash() {
    let data = std::fs::read(corpus("01-init-add-commit/event.jsonl")).expect("read");
    let out = run_stdin(&["convert", "-", "--to", "trace2-event", "-o", "-"], &data);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        out.stdout, data,
        "EVENT -> EVENT through stdin must be identical"
    );
}

#[test]
fn cut_mid_line_is_an_error_with_its_line_and_the_rest_is_kept() {
    let data = std::fs::read(corpus("01-init-add-commit/event.jsonl")).expect("read");
    let lines = data.iter().filter(|&&c| c == b'\n').count();
    let cut = &data[..data.len() - 40];
    let out = run_stdin(&["info", "--json", "-"], cut);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("<stdin>:{lines}: warning: record cut short")),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v["events"],
        lines as u64 - 1,
        "every complete record is still read"
    );
}

#[test]
fn binary_junk_is_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = dir.path().join("junk.bin");
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&junk, bytes).expect("write");
    let out = run(&["info", junk.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("tracekit: ") && err.contains("unknown format (tried:"),
        "{err}"
    );
    // Junk after a valid first line: each bad line is reported, no panic.
    let mut mixed = b"{\"event\":\"version\",\"sid\":\"s\",\"thread\":\"main\",\"evt\":\"4\",\"exe\":\"2.47.3\"}\n".to_vec();
    mixed.extend((0..2000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
    mixed.push(b'\n');
    let out = run_stdin(&["info", "-"], &mixed);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("<stdin>:2: "),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("events:     1"));
}

#[test]
fn deeply_nested_json_is_refused_without_overflow() {
    let mut line = b"{\"event\":\"data_json\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":0.1,\"t_rel\":0.1,\"nesting\":1,\"category\":\"c\",\"key\":\"k\",\"value\":".to_vec();
    line.extend(std::iter::repeat_n(b'[', 1_000_000));
    line.extend(std::iter::repeat_n(b']', 1_000_000));
    line.extend(b"}\n");
    let out = run_stdin(&["info", "-"], &line);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nested deeper than"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_100_mb_line_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big-line.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    f.write_all(b"{\"event\":\"error\",\"sid\":\"s\",\"thread\":\"main\",\"msg\":\"")
        .expect("write");
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&chunk).expect("write");
    }
    f.write_all(b"\",\"fmt\":\"%s\"}\n{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":0.5,\"code\":0}\n")
        .expect("write");
    drop(f);
    let out = run(&["info", "--json", path.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["events"], 2);
}

#[test]
fn unknown_target_says_what_exists() {
    let out = run(&[
        "convert",
        corpus("01-init-add-commit/event.jsonl")
            .to_str()
            .expect("utf8"),
        "--to",
        "yaml",
    ]);
    // A usage error (exit 2) that lists the targets of every input too.
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(
        "converts to chrome, perfetto, parquet, otlp, trace2-event, trace2-perf, trace2-normal"
    ));
}

/// Every file of both git versions' corpora, converted to its own format
/// by the CLI (no variant flag), is byte for byte the input: the records'
/// own file:line (2.39's `tr2_tgt_perf.c:216`) and the brief variant stay.
#[test]
fn convert_to_own_format_is_byte_for_byte_on_both_git_versions() {
    let mut checked = 0;
    for (case, dir) in [
        ("01-init-add-commit", corpus("01-init-add-commit")),
        ("12-brief", corpus("12-brief")),
        ("17-signal-exec", corpus("17-signal-exec")),
        ("01-init-add-commit", corpus_2_39("01-init-add-commit")),
        ("12-brief", corpus_2_39("12-brief")),
        ("17-signal-exec", corpus_2_39("17-signal-exec")),
    ] {
        for (file, to) in [
            ("event.jsonl", "trace2-event"),
            ("perf.log", "trace2-perf"),
            ("normal.log", "trace2-normal"),
        ] {
            let path = dir.join(file);
            let out = run(&["convert", "--to", to, path.to_str().expect("utf8")]);
            assert!(out.status.success(), "{case} {file}: {}", text(&out.stderr));
            let want = std::fs::read(&path).expect("read");
            assert!(out.stdout == want, "{} -> {to} differs", path.display());
            checked += 1;
        }
    }
    assert_eq!(checked, 18);
    // The git 2.39 lines that 2.47 writes one higher.
    let signal = std::fs::read_to_string(corpus_2_39("17-signal-exec/perf.log")).expect("read");
    assert!(signal.contains("tr2_tgt_perf.c:204 "));
    let atexit = std::fs::read_to_string(corpus_2_39("01-init-add-commit/perf.log")).expect("read");
    assert!(atexit.contains("tr2_tgt_perf.c:216 "));
}

/// EVENT from git 2.39 to PERF/NORMAL: signal and atexit get git 2.39's
/// target lines (derived from the `version` record), equal to git's own.
#[test]
fn event_to_perf_and_normal_take_the_producers_target_lines() {
    for (to, file, col) in [
        ("trace2-perf", "perf.log", 16),
        ("trace2-normal", "normal.log", 16),
    ] {
        for dir in [
            corpus("17-signal-exec"),
            corpus("01-init-add-commit"),
            corpus_2_39("17-signal-exec"),
            corpus_2_39("01-init-add-commit"),
        ] {
            let out = tracekit()
                .env("TZ", "UTC")
                .args(["convert", "--to", to])
                .arg(dir.join("event.jsonl"))
                .output()
                .expect("run");
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
            let emitted = |s: &str| -> Vec<String> {
                s.lines()
                    .filter(|l| l.contains("tr2_tgt_"))
                    .map(|l| l[col..].split_whitespace().next().unwrap_or("").to_string())
                    .collect()
            };
            let want = std::fs::read_to_string(dir.join(file)).expect("read");
            let (got, want) = (emitted(&text(&out.stdout)), emitted(&want));
            assert!(want.len() >= 3, "{}: {want:?}", dir.display());
            assert_eq!(got, want, "{} -> {to}", dir.display());
        }
    }
}

/// A version not in the table: the nearest release below, and a warning
/// that says so; exit 0. A git without Trace2: an error naming the field.
#[test]
fn unknown_git_versions_are_said() {
    let data = std::fs::read_to_string(corpus_2_39("17-signal-exec/event.jsonl")).expect("read");
    let newer = data.replace("\"exe\":\"2.39.5\"", "\"exe\":\"2.39.77\"");
    let out = run_stdin(&["convert", "-", "--to", "trace2-perf"], newer.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: git 2.39.77 is not a release known here"),
        "{err}"
    );
    assert!(err.contains("taken from git 2.39.5"), "{err}");
    assert_eq!(err.lines().count(), 1, "said once: {err}");
    assert!(text(&out.stdout).contains("tr2_tgt_perf.c:204 "));

    let old = data.replace("\"exe\":\"2.39.5\"", "\"exe\":\"2.21.0\"");
    let out = run_stdin(&["convert", "-", "--to", "trace2-perf"], old.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("<stdin>:") && err.contains("has no Trace2"),
        "{err}"
    );
    assert!(
        !text(&out.stdout).contains("tr2_tgt_perf.c"),
        "no invented line"
    );
}

/// Brief input converts to the brief variant unless --full is asked for;
/// --full then fails at every record, naming the missing field.
#[test]
fn brief_input_stays_brief_and_full_fails_naming_the_field() {
    for dir in [corpus("12-brief"), corpus_2_39("12-brief")] {
        let event = dir.join("event.jsonl");
        let event = event.to_str().expect("utf8");
        let out = run(&["convert", "--to", "trace2-perf", event]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let first = text(&out.stdout).lines().next().unwrap_or("").to_string();
        assert!(first.starts_with("d0 | main "), "brief PERF: {first}");

        for to in ["trace2-perf", "trace2-normal"] {
            let out = run(&["convert", "--to", to, "--full", event]);
            assert_eq!(out.status.code(), Some(1), "{to}");
            let err = text(&out.stderr);
            assert!(
                err.contains(&format!(
                    "{event}:1: warning: 'version' record has no 'file'"
                )),
                "{err}"
            );
            // Every record is said (the first 100 at their lines) and
            // counted; none is written.
            assert!(
                err.contains(&format!("{event}:2: warning: 'start' record has no 'time'")),
                "{err}"
            );
            assert!(err.contains("records could not be converted to"), "{err}");
            assert!(!text(&out.stdout).contains("00:00:00.000000"));
            assert!(
                out.stdout.is_empty(),
                "nothing written before the failing record"
            );
        }
        // Brief PERF to full NORMAL: the time of day is missing.
        let perf = dir.join("perf.log");
        let out = run(&[
            "convert",
            "--to",
            "trace2-normal",
            "--full",
            perf.to_str().expect("utf8"),
        ]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            text(&out.stderr).contains(":1: warning: 'version' record has no 'time'"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn convert_help_says_what_is_exact_and_what_is_derived() {
    let out = run(&["convert", "--help"]);
    let help = text(&out.stdout);
    for needle in ["exact", "derived", "version", "--full", "made-up"] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}

/// 24-maintenance-detach: `maintenance run --auto --detach` forks and
/// parent and child write under one SID. Every record is converted (git
/// 2.47's `convert` stopped at the child's first target-emitted record,
/// "its process wrote no 'version' record before it", exit 1): one PERF
/// line per EVENT record, NORMAL as many lines as git's own file, the last
/// one the fetch session's child's `atexit`.
#[test]
fn convert_keeps_every_record_of_a_daemonised_session() {
    let dir = corpus("24-maintenance-detach");
    let event = dir.join("event.jsonl");
    let records = std::fs::read_to_string(&event)
        .expect("read")
        .lines()
        .count();
    let git_normal = std::fs::read_to_string(dir.join("normal.log")).expect("read");
    for (to, want) in [
        ("trace2-perf", records),
        ("trace2-normal", git_normal.lines().count()),
    ] {
        let out = tracekit()
            .args(["convert", "--to", to])
            .arg(&event)
            .env("TZ", "UTC")
            .output()
            .expect("run");
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{to}: {}", text(&out.stderr));
        let got = text(&out.stdout);
        assert_eq!(got.lines().count(), want, "{to}");
        let last = got.lines().last().unwrap_or_default();
        assert!(
            last.contains("trace2/tr2_tgt_") && last.ends_with("code:0"),
            "{to}: {last}"
        );
    }
}

/// A synthetic EVENT file with records nothing can place: a region_leave
/// with no region open (line 4), a child_exit with no child_start (5), an
/// atexit of a process that wrote no `version` (6: its PERF/NORMAL line is
/// unknowable). Every converter and the report say so and go on: the
/// records after them (7-9) are in every output.
#[test]
fn unplaceable_records_warn_and_the_rest_is_kept() {
    const P: &str = "20240101T120000.000000Z-H0a7c9cdf-P00001234";
    const Q: &str = "20240101T120000.000000Z-H0a7c9cdf-P00005678";
    let rec = |sid: &str, event: &str, us: u32, file: &str, rest: &str| {
        format!(
            "{{\"event\":\"{event}\",\"sid\":\"{sid}\",\"thread\":\"main\",\"time\":\"2024-01-01T12:00:00.{us:06}Z\",\"file\":\"{file}\",\"line\":1{rest}}}\n"
        )
    };
    let atexit = "trace2/tr2_tgt_event.c";
    let input = [
        rec(P, "version", 10, "common-main.c", ",\"evt\":\"4\",\"exe\":\"2.47.3\""),
        rec(P, "start", 20, "common-main.c", ",\"t_abs\":0.000020,\"argv\":[\"git\",\"status\"]"),
        rec(P, "cmd_name", 30, "git.c", ",\"name\":\"status\",\"hierarchy\":\"status\""),
        rec(P, "region_leave", 40, "x.c", ",\"repo\":1,\"t_rel\":0.000005,\"nesting\":1,\"category\":\"index\",\"label\":\"orphan\""),
        rec(P, "child_exit", 50, "run-command.c", ",\"child_id\":7,\"pid\":4242,\"code\":0,\"t_rel\":0.000010"),
        rec(Q, "atexit", 60, atexit, ",\"t_abs\":0.000060,\"code\":0"),
        rec(P, "data", 70, "x.c", ",\"repo\":1,\"t_abs\":0.000070,\"t_rel\":0.000070,\"nesting\":1,\"category\":\"index\",\"key\":\"after\",\"value\":\"kept\""),
        rec(P, "exit", 80, "git.c", ",\"t_abs\":0.000080,\"code\":0"),
        rec(P, "atexit", 90, atexit, ",\"t_abs\":0.000090,\"code\":0"),
    ]
    .concat();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.event.jsonl");
    std::fs::write(&file, &input).expect("write");
    let name = file.to_str().expect("utf8");

    // trace2-perf/-normal: line 6 cannot be written; the rest is, exit 1.
    for (to, after) in [
        ("trace2-perf", "after:kept"),
        ("trace2-normal", "exit elapsed:0.000080 code:0"),
    ] {
        let out = tracekit()
            .args(["convert", "--to", to, name])
            .env("TZ", "UTC")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "{to}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("{name}:6: warning: 'atexit' record"))
                && err.contains("no 'version'"),
            "{to}: {err}"
        );
        assert!(
            err.contains("1 records could not be converted"),
            "{to}: {err}"
        );
        let got = text(&out.stdout);
        assert!(got.contains(after), "{to}: {got}");
        assert!(
            got.lines().last().unwrap_or_default().contains("atexit"),
            "{to}: {got}"
        );
    }
    // trace2-event: every record keeps its own line, nothing to warn about.
    let out = run(&["convert", "--to", "trace2-event", name]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), input);

    // The timeline (chrome, perfetto, otlp, parquet): lines 4 and 5 are
    // drawn as instants and said; nothing is lost, exit 0.
    let placed = |err: &str, to: &str| {
        assert!(
            err.contains(&format!("{name}:4: warning: 'region_leave' of 'orphan'")),
            "{to}: {err}"
        );
        assert!(
            err.contains(&format!("{name}:5: warning: 'child_exit' of child 7")),
            "{to}: {err}"
        );
        assert!(
            err.contains("2 records did not fit the timeline"),
            "{to}: {err}"
        );
    };
    let out = run(&["convert", "--to", "chrome", name]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    placed(&text(&out.stderr), "chrome");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let evs = v["traceEvents"].as_array().expect("events");
    let instant = |n: &str| evs.iter().find(|e| e["ph"] == "i" && e["name"] == n);
    assert_eq!(
        instant("orphan").expect("region_leave")["args"]["no_region_enter"],
        true
    );
    assert_eq!(
        instant("child_exit").expect("child_exit")["args"]["no_child_start"],
        true
    );
    assert_eq!(instant("after").expect("line 7")["args"]["value"], "kept");
    for to in ["perfetto", "otlp"] {
        let o = dir.path().join(format!("out.{to}"));
        let out = run(&["convert", "--to", to, name, "-o", o.to_str().expect("utf8")]);
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        placed(&text(&out.stderr), to);
        assert!(std::fs::metadata(&o).expect("written").len() > 0, "{to}");
    }
    let pq = dir.path().join("tables");
    let out = run(&[
        "convert",
        "--to",
        "parquet",
        name,
        "-o",
        pq.to_str().expect("utf8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    placed(&text(&out.stderr), "parquet");
    let out = run(&[
        "sql",
        "--format",
        "csv",
        "SELECT name FROM instants ORDER BY ts_ns, name",
        pq.to_str().expect("utf8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let names = text(&out.stdout);
    for n in ["orphan", "child_exit", "after", "exit"] {
        assert!(names.lines().any(|l| l == n), "{n}: {names}");
    }

    // The report: every record in its process, the odd ones counted.
    let out = run(&["report", "--json", name]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["schema"], "tracekit.report/1");
    let sections = r["reports"][0]["sections"].as_array().expect("sections");
    let item = |k: &str| {
        sections[0]["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|i| i["key"] == k)
            .map(|i| i["value"].clone())
    };
    assert_eq!(item("processes"), Some(2.into()));
    assert_eq!(item("unmatched_region_leave"), Some(1.into()));
    assert_eq!(item("unmatched_child_exit"), Some(1.into()));
    let sessions = sections
        .iter()
        .find(|s| s["id"] == "sessions")
        .expect("sessions");
    let session = &sessions["sections"][0]["sections"];
    let of = |id: &str| {
        session
            .as_array()
            .expect("session")
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id}: {session}"))
    };
    // The data item `status` logged, in the session's details.
    let details = of("session_1_details");
    assert!(
        details["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r["kind"] == "data" && r["value"] == "kept"),
        "{details}"
    );
    let tree = of("session_1_processes");
    let status = tree["spans"]
        .as_array()
        .expect("spans")
        .iter()
        .find(|s| s["name"] == "git status")
        .expect("status");
    assert!(
        status["detail"]
            .as_str()
            .expect("detail")
            .contains("exit 0"),
        "{status}"
    );
    assert!(
        text(&out.stderr).contains(
            "warning: 1 region_leave records without region_enter and 1 child_exit records without child_start"
        ),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["report", name]);
    assert!(
        text(&out.stdout).contains("anomalies: 1 region_leave without enter, 0 regions never left, 1 child_exit without child_start"),
        "{}",
        text(&out.stdout)
    );
}

/// 24-maintenance-detach on the timeline: each daemonised child is a
/// process track of its own (a pid of its own: the SID's is its parent's),
/// named after its command, its slice re-opening the region it inherited,
/// and the gc child it ran on its own lane.
#[test]
fn daemonised_child_has_a_track_of_its_own() {
    let event = corpus("24-maintenance-detach").join("event.jsonl");
    let out = tracekit()
        .args(["convert", "--to", "chrome"])
        .arg(&event)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let evs = v["traceEvents"].as_array().expect("events");
    let named = |n: &str| -> Vec<i64> {
        evs.iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == n)
            .map(|e| e["pid"].as_i64().expect("pid"))
            .collect()
    };
    let parents = named("git maintenance");
    let forks = named("git maintenance (fork 1)");
    assert_eq!(parents.len(), 3);
    assert_eq!(forks.len(), 3);
    // The parents have the SIDs' pids (P part), the forks others.
    assert_eq!(parents, [0x4c40, 0x4c94, 0x4cbd]);
    assert!(forks.iter().all(|p| !parents.contains(p)));
    // One process slice each.
    for pid in parents.iter().chain(&forks) {
        let slices = evs
            .iter()
            .filter(|e| e["pid"] == *pid && e["ph"] == "B" && e["cat"] == "process")
            .count();
        assert_eq!(slices, 1, "{pid}");
    }
    // The commit session's fork: the inherited region, then gc on a lane.
    let f = forks[0];
    let inherited: Vec<&str> = evs
        .iter()
        .filter(|e| e["pid"] == f && e["ph"] == "B" && e["args"]["inherited"] == true)
        .map(|e| e["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(inherited, ["detach"]);
    let gc = evs
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "child git gc")
        .expect("the gc child slice");
    assert_eq!(gc["pid"], f);
    assert_eq!(gc["args"]["pid"], 19523);
}

/// `info` counts a process forked under its parent's SID (three in
/// 24-maintenance-detach: 18 `version` records, 21 processes).
#[test]
fn info_counts_daemonised_children() {
    let event = corpus("24-maintenance-detach").join("event.jsonl");
    let out = run(&["info", "--json", event.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["details"]["events_by_kind"]["version"], 18);
    assert_eq!(v["processes"], 21);
    assert_eq!(v["details"]["unfinished_processes"], 0);
}
