//! `convert --to`: the targets `--help` lists are the ones that convert,
//! and a target an input cannot take is a usage error (exit 2) that lists
//! all of the input's targets, the ones of every dialect included.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus(p: &str) -> String {
    root().join(p).to_string_lossy().into_owned()
}

fn tracekit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .output()
        .expect("run tracekit")
}

/// `convert --help`'s targets: those of every input, and per dialect
/// (its name as the help says it) its own.
fn help_targets() -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let out = tracekit(&["convert", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut common = Vec::new();
    let mut dialects: Vec<(String, Vec<String>)> = Vec::new();
    let mut section = 0;
    for line in text.lines() {
        if line.starts_with("Targets of every input:") {
            section = 1;
            continue;
        }
        if line.starts_with("Targets of one dialect's input:") {
            section = 2;
            continue;
        }
        if line.trim().is_empty() {
            if section == 2 {
                break;
            }
            continue;
        }
        match section {
            1 if line.starts_with("  ") && !line.starts_with("   ") => {
                common.push(line.split_whitespace().next().unwrap().to_string());
            }
            2 if line.starts_with("  ") && !line.starts_with("   ") => {
                let name = line.trim().trim_end_matches(':').to_string();
                dialects.push((name, Vec::new()));
            }
            2 if line.starts_with("    ") && !line.starts_with("     ") => {
                let t = line.split_whitespace().next().unwrap().to_string();
                dialects.last_mut().unwrap().1.push(t);
            }
            _ => {}
        }
    }
    (common, dialects)
}

/// A corpus input of each dialect, by the name `--help` gives the dialect,
/// with the extra arguments it converts with.
fn inputs(posix_log: String) -> Vec<(&'static str, String, Vec<String>)> {
    vec![
        ("POSIX trace log", posix_log, vec![]),
        (
            "Git Trace2",
            corpus("examples/trace2/clone.event.jsonl"),
            vec![],
        ),
        // A trace with leaks: a leak flame graph of none fails (inferno
        // refuses a graph without samples).
        (
            "sp-rtrace",
            corpus("tests/corpus/rtrace/upstream/context.txt.C1.lc"),
            vec![],
        ),
        (
            "LLVM XRay",
            corpus("tests/corpus/xray/mt/mt.fdr.xray"),
            vec!["-m".into(), corpus("tests/corpus/xray/mt/mt")],
        ),
        (
            "kwinject",
            corpus("tests/corpus/buildtrace/recorded/hello-make-j2.trace"),
            vec![],
        ),
    ]
}

#[test]
fn an_unknown_target_is_a_usage_error_listing_every_target() {
    let trace2 = corpus("examples/trace2/clone.event.jsonl");
    let out = tracekit(&["convert", &trace2, "--to", "no-such-format"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let (common, dialects) = help_targets();
    for t in ["chrome", "perfetto", "otlp", "parquet"] {
        assert!(common.iter().any(|c| c == t), "{t} not in {common:?}");
    }
    assert!(dialects.len() >= 5, "{dialects:?}");
    for t in common.iter().chain(dialects.iter().flat_map(|d| &d.1)) {
        assert!(
            err.contains(&format!(" {t},")) || err.contains(&format!(" {t}]")),
            "{t} missing from: {err}"
        );
    }
}

#[test]
fn a_target_of_another_dialect_lists_the_inputs_targets() {
    let (common, dialects) = help_targets();
    let trace2 = corpus("examples/trace2/clone.event.jsonl");
    let own = &dialects
        .iter()
        .find(|d| d.0.starts_with("Git Trace2"))
        .expect("Git Trace2 in convert --help")
        .1;
    let out = tracekit(&["convert", &trace2, "--to", "heaptrack", "-o", "/dev/null"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let listed = err
        .split(" converts to ")
        .nth(1)
        .and_then(|r| r.split(" (not ").next())
        .unwrap_or_else(|| panic!("no list in {err}"));
    let expected: Vec<&str> = common.iter().chain(own).map(String::as_str).collect();
    assert_eq!(listed.split(", ").collect::<Vec<_>>(), expected, "{err}");
}

#[test]
fn every_listed_target_converts() {
    let (common, dialects) = help_targets();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.trace");
    common::posix_log(&log, 100);
    for (dialect, input, extra) in inputs(log.to_string_lossy().into_owned()) {
        let own = &dialects
            .iter()
            .find(|d| d.0.starts_with(dialect))
            .unwrap_or_else(|| panic!("{dialect} not in convert --help: {dialects:?}"))
            .1;
        for t in common.iter().chain(own) {
            let dest = dir
                .path()
                .join(format!("{}.{t}", dialect.replace(' ', "-")));
            let dest = dest.to_string_lossy().into_owned();
            let mut args = vec!["convert", &input, "--to", t.as_str(), "-o", &dest];
            args.extend(extra.iter().map(String::as_str));
            let out = tracekit(&args);
            assert!(
                out.status.success(),
                "tracekit {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(Path::new(&dest).exists(), "{t}: nothing written to {dest}");
        }
    }
}
