//! The conformance suite: one C program per "shall" of the TRC, TEF, TRL
//! and TRI options (`tests/conformance/*.c`), each compiled with `cc`
//! against `include/trace.h` and the library, run, and reported as
//! `N passed, N failed, N skipped`. A program exits 0 when the sentence it
//! checks holds, 77 when it cannot be checked on this machine.
//!
//! Each program starts with a comment naming what it checks:
//! `shall:` (the requirement, paraphrased), `where:` (the page and section
//! of the standard), `option:` (TRC, TEF, TRL or TRI) and, where tracekit
//! deliberately differs, `deviation:`. `docs/posix-conformance.md` must
//! have a row for every program and none for a program that does not exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest a program may run (they take milliseconds; a hang is a failure).
const TIME_LIMIT: Duration = Duration::from_secs(120);

struct Test {
    name: String,
    source: PathBuf,
    option: String,
    shall: String,
    deviation: Option<String>,
}

enum Outcome {
    Pass,
    Skip(String),
    Fail(String),
}

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tests() -> Vec<Test> {
    let dir = here().join("tests/conformance");
    let mut v: Vec<Test> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .map(|source| {
            let text = std::fs::read_to_string(&source).unwrap();
            let field = |key: &str| header_field(&text, key);
            let name = source.file_stem().unwrap().to_string_lossy().into_owned();
            let option = field("option:").unwrap_or_else(|| panic!("{name}: no option: line"));
            let shall = field("shall:").unwrap_or_else(|| panic!("{name}: no shall: line"));
            assert!(field("where:").is_some(), "{name}: no where: line");
            assert!(
                ["TRC", "TEF", "TRL", "TRI"].contains(&option.as_str()),
                "{name}: option {option}"
            );
            Test {
                name,
                source,
                option,
                shall,
                deviation: field("deviation:"),
            }
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

const KEYS: [&str; 4] = ["shall:", "where:", "option:", "deviation:"];

/// A field of a program's header comment: from the line starting with
/// `key` up to the next key or the end of the comment.
fn header_field(text: &str, key: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim();
        let end = l.ends_with("*/");
        let l = l.strip_suffix("*/").unwrap_or(l);
        let l = l.trim_start_matches("/*").trim_start_matches('*').trim();
        if let Some(k) = KEYS.iter().find(|k| l.starts_with(**k)) {
            inside = *k == key;
            if inside {
                out = Some(l[k.len()..].trim().to_string());
            }
        } else if inside && !l.is_empty() {
            let o = out.as_mut().unwrap();
            o.push(' ');
            o.push_str(l);
        }
        if end {
            break;
        }
    }
    out
}

fn lib_dir() -> PathBuf {
    // `cargo test` builds the cdylib next to the test binary.
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    assert!(
        dir.join("libtracekit_posix_c.so").exists(),
        "libtracekit_posix_c.so not built in {}",
        dir.display()
    );
    dir
}

fn compile(t: &Test, out: &Path) -> Result<PathBuf, String> {
    let exe = out.join(&t.name);
    let lib = lib_dir();
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-std=c11",
            "-D_GNU_SOURCE",
            "-O1",
            "-g",
            "-Wall",
            "-Werror",
            "-o",
        ])
        .arg(&exe)
        .arg(&t.source)
        .arg("-I")
        .arg(here().join("../../include"))
        .arg("-I")
        .arg(here().join("tests/conformance"))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ltracekit_posix_c", "-lpthread"])
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "does not compile:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(exe)
}

fn run(t: &Test, work: &Path) -> Outcome {
    let exe = match compile(t, work) {
        Ok(e) => e,
        Err(e) => return Outcome::Fail(e),
    };
    let tmp = work.join(format!("{}.d", t.name));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = Command::new(&exe)
        .env("TK_TMPDIR", &tmp)
        .env("LD_LIBRARY_PATH", lib_dir())
        .current_dir(&tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match status.and_then(|s| s.code()) {
        _ if status.is_none() => Outcome::Fail(format!("no result after {TIME_LIMIT:?}\n{text}")),
        Some(0) => Outcome::Pass,
        Some(77) => Outcome::Skip(text.trim().to_string()),
        other => Outcome::Fail(format!("exit {other:?}\n{text}")),
    }
}

/// The test names listed in the first column of the docs table.
fn documented() -> BTreeSet<String> {
    let doc = here().join("../../docs/posix-conformance.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn conformance_suite() {
    let tests = tests();
    assert!(!tests.is_empty());
    let names: BTreeSet<String> = tests.iter().map(|t| t.name.clone()).collect();
    let doc = documented();
    let undocumented: Vec<&String> = names.difference(&doc).collect();
    let stale: Vec<&String> = doc.difference(&names).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "docs/posix-conformance.md: no row for {undocumented:?}; rows without a test: {stale:?}"
    );
    let work = tempfile::tempdir().unwrap();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..tests.len()).map(|_| None).collect());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(t) = tests.get(i) else { break };
                let o = run(t, work.path());
                results.lock().unwrap()[i] = Some(o);
            });
        }
    });
    let results = results.into_inner().unwrap();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for (t, r) in tests.iter().zip(results) {
        let dev = if t.deviation.is_some() {
            " [deviation]"
        } else {
            ""
        };
        match r.unwrap() {
            Outcome::Pass => {
                passed += 1;
                println!("pass {:<44} {} {}{dev}", t.name, t.option, t.shall);
            }
            Outcome::Skip(why) => {
                skipped += 1;
                println!("skip {:<44} {} {} ({why})", t.name, t.option, t.shall);
            }
            Outcome::Fail(why) => {
                failed += 1;
                println!("FAIL {:<44} {} {}{dev}", t.name, t.option, t.shall);
                failures.push(format!("{}: {why}", t.name));
            }
        }
    }
    for f in &failures {
        println!("\n--- {f}");
    }
    println!("\nconformance: {passed} passed, {failed} failed, {skipped} skipped");
    assert_eq!(failed, 0, "conformance failures:\n{}", failures.join("\n"));
}
