//! Every repository path that `tracekit --help` (and every subcommand's
//! `--help`), README.md and ARCHITECTURE.md name exists: a user who copies
//! an example gets a file, not "No such file or directory".
//!
//! A path is a token starting with `examples/`, `tests/`, `docs/`, `bench/`
//! or `crates/`; a `<placeholder>` or `*` in it stands for any name, and
//! then at least one file or directory must match.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run tracekit");
    assert!(
        o.status.success(),
        "tracekit {} --help: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The subcommands a help text lists under `Commands:` (but `help`).
fn subcommands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_end() == "Commands:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        // "  name  about", with continuation lines indented further.
        if line.starts_with("  ") && !line.starts_with("   ") {
            if let Some(name) = line.split_whitespace().next() {
                if name != "help" {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// Every help text: the top level's and each subcommand's, recursively.
fn all_help() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        for sub in subcommands(&text) {
            let mut p = path.clone();
            p.push(sub);
            todo.push(p);
        }
        out.push((format!("tracekit {} --help", args.join(" ")), text));
    }
    out
}

/// The path-like tokens of `text` under `examples/`, `tests/`, `docs/`,
/// `bench/` or `crates/`.
fn paths(text: &str) -> Vec<String> {
    let re = regex::Regex::new(
        r"(?:^|[\s`'(\[=:])((?:examples|tests|docs|bench|crates)/[A-Za-z0-9_.+/<>*-]*)",
    )
    .unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        for c in re.captures_iter(line) {
            out.push(c[1].trim_end_matches(['.', ',', ':', ';']).to_string());
        }
    }
    out
}

/// Whether `pattern` (segments with `<...>` or `*` for any name) names
/// something under `root`.
fn exists(root: &Path, pattern: &str) -> bool {
    let segs: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let mut here = vec![root.to_path_buf()];
    for seg in segs {
        let wild = seg.contains('<') || seg.contains('*');
        let re = wild.then(|| {
            let mut r = String::from("^");
            let mut rest = seg;
            while !rest.is_empty() {
                if let Some(s) = rest.strip_prefix('*') {
                    r.push_str(".*");
                    rest = s;
                } else if rest.starts_with('<') {
                    let end = rest.find('>').map_or(rest.len(), |i| i + 1);
                    r.push_str(".+");
                    rest = &rest[end..];
                } else {
                    let ch = rest.chars().next().unwrap();
                    r.push_str(&regex::escape(&ch.to_string()));
                    rest = &rest[ch.len_utf8()..];
                }
            }
            r.push('$');
            regex::Regex::new(&r).unwrap()
        });
        let mut next = Vec::new();
        for dir in &here {
            match &re {
                None => {
                    let p = dir.join(seg);
                    if p.exists() {
                        next.push(p);
                    }
                }
                Some(re) => {
                    let Ok(entries) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    for e in entries.flatten() {
                        if re.is_match(&e.file_name().to_string_lossy()) {
                            next.push(e.path());
                        }
                    }
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        here = next;
    }
    true
}

#[test]
fn every_path_in_help_and_docs_exists() {
    let root = root();
    let mut sources = all_help();
    assert!(
        sources.len() > 20,
        "found only {} help texts: the Commands: parser is broken",
        sources.len()
    );
    for doc in ["README.md", "ARCHITECTURE.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        sources.push((doc.to_string(), text));
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for (source, text) in &sources {
        for p in paths(text) {
            checked += 1;
            if !exists(&root, &p) {
                missing.push(format!("{source}: {p}"));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} paths found: the extraction is broken"
    );
    assert!(
        missing.is_empty(),
        "paths that do not exist in the repository:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_extraction_finds_paths_and_placeholders() {
    let t = "  tracekit info examples/trace2/event.jsonl\nsee `crates/tracekit-<dialect>/src/timeline.rs`, (docs/sql.md).";
    assert_eq!(
        paths(t),
        [
            "examples/trace2/event.jsonl",
            "crates/tracekit-<dialect>/src/timeline.rs",
            "docs/sql.md"
        ]
    );
    let root = root();
    assert!(!exists(&root, "examples/trace2/event.jsonl"));
    assert!(exists(&root, "examples/trace2/clone.event.jsonl"));
    assert!(exists(&root, "crates/tracekit-<dialect>/src/timeline.rs"));
    assert!(!exists(&root, "crates/tracekit-<dialect>/src/nothing.rs"));
}
