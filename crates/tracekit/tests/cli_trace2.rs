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
        assert_eq!(v["producers"][0], "git 2.47.3");
    }
    let out = run(&[
        "info",
        "--json",
        corpus("04-clone-local/event.jsonl").to_str().expect("utf8"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["events"], 320);
    assert_eq!(v["events_by_kind"]["region_enter"], 53);
    assert_eq!(v["evt_versions"][0], "4");
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
    assert_eq!(v["files"], 6);
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
    assert_eq!(v["events_by_kind"]["too_many_files"], 1);
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
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("targets: trace2-event, trace2-perf, trace2-normal"));
}
