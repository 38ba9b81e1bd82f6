//! llvm-xray's own test suite (LLVM 14.0.6, `llvm/test/tools/llvm-xray/`,
//! in `tests/corpus/xray-llvm-tests/`) run against `tracekit xray`: each
//! test's RUN lines are executed with `llvm-xray` standing for
//! `tracekit xray`, and their output is checked against the test's CHECK
//! lines by `filecheck` (FileCheck's subset these tests use).
//!
//! What the runner changes, and only this: the tool (`llvm-xray` is
//! `tracekit xray`) and its name where a CHECK line quotes it in a message
//! (`llvm-xray: ` is `tracekit: `); `yaml2obj IN -o OUT` copies the object
//! yaml2obj 14 made of IN, kept beside it (`Inputs/<stem>.so`); `%python
//! -c 'json.dump(..., sort_keys=True, indent=2)'` is done here.
//!
//! Cross-checks (not run by default): `TRACEKIT_LLVM_SUITE_TOOL=llvm-xray-14`
//! runs the suite against llvm-xray itself; `TRACEKIT_FILECHECK=FileCheck-14`
//! uses the real FileCheck instead of ours.

mod filecheck;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/xray-llvm-tests")
}

/// Tests that cannot apply to tracekit, with the reason. (None so far.)
const NOT_APPLICABLE: &[(&str, &str)] = &[];

/// The tool under test: tracekit (default) or an llvm-xray binary.
fn tool() -> Option<String> {
    std::env::var("TRACEKIT_LLVM_SUITE_TOOL")
        .ok()
        .filter(|s| !s.is_empty())
}

/// A test's RUN lines, continuation lines joined.
fn run_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let Some(at) = line.find("RUN:") else {
            continue;
        };
        let body = line[at + 4..].trim();
        let (body, more) = match body.strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (body, false),
        };
        let c = cur.get_or_insert_with(String::new);
        if !c.is_empty() {
            c.push(' ');
        }
        c.push_str(body);
        if !more {
            out.extend(cur.take());
        }
    }
    out.extend(cur);
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Pipe,
    And,
    ErrToOut,
}

/// Splits a RUN line into words and the shell operators the suite uses.
fn tokens(line: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => i += 1,
            b'|' => {
                out.push(Tok::Pipe);
                i += 1;
            }
            b'&' if b.get(i + 1) == Some(&b'&') => {
                out.push(Tok::And);
                i += 2;
            }
            b'2' if line[i..].starts_with("2>&1") => {
                out.push(Tok::ErrToOut);
                i += 4;
            }
            _ => {
                let mut w = String::new();
                while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'|') {
                    match b[i] {
                        q @ (b'\'' | b'"') => {
                            let end = line[i + 1..]
                                .find(q as char)
                                .ok_or_else(|| format!("unclosed quote in {line:?}"))?;
                            w.push_str(&line[i + 1..i + 1 + end]);
                            i += end + 2;
                        }
                        _ => {
                            let c = line[i..].chars().next().unwrap_or(' ');
                            w.push(c);
                            i += c.len_utf8();
                        }
                    }
                }
                out.push(Tok::Word(w));
            }
        }
    }
    Ok(out)
}

struct Ctx<'a> {
    test: &'a Path,
    tmp: PathBuf,
    cwd: PathBuf,
}

impl Ctx<'_> {
    fn subst(&self, w: &str) -> String {
        let dir = self.test.parent().unwrap_or(Path::new("."));
        w.replace("%errc_ENOENT", "'No such file or directory'")
            .replace("%s", &self.test.display().to_string())
            .replace("%S", &dir.display().to_string())
            .replace("%t", &self.tmp.display().to_string())
    }
}

/// The result of one command: exit success, stdout.
struct Ran {
    ok: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn run_command(
    ctx: &Ctx<'_>,
    words: &[String],
    err_to_out: bool,
    stdin: &[u8],
) -> Result<Ran, String> {
    let (negate, words) = match words.first().map(String::as_str) {
        Some("not") => (true, &words[1..]),
        _ => (false, words),
    };
    let Some(name) = words.first() else {
        return Err("empty command".into());
    };
    let args = &words[1..];
    let mut r = match name.as_str() {
        "llvm-xray" => {
            let mut cmd = match tool() {
                Some(t) => Command::new(t),
                None => {
                    let mut c = Command::new(env!("CARGO_BIN_EXE_tracekit"));
                    c.arg("xray");
                    c
                }
            };
            cmd.args(args).current_dir(&ctx.cwd);
            spawn(cmd, stdin)?
        }
        "FileCheck" => filecheck_command(ctx, args, stdin)?,
        "yaml2obj" => {
            // yaml2obj IN -o OUT: the object yaml2obj 14 made of IN.
            let input = args.first().ok_or("yaml2obj without input")?;
            let out = args
                .iter()
                .position(|a| a == "-o")
                .and_then(|i| args.get(i + 1))
                .ok_or("yaml2obj without -o")?;
            let stem = Path::new(input)
                .file_stem()
                .ok_or("yaml2obj input without a name")?;
            let dir = ctx.test.parent().unwrap_or(Path::new("."));
            let made = dir.join("Inputs").join(stem).with_extension("so");
            std::fs::copy(&made, out).map_err(|e| format!("{}: {e}", made.display()))?;
            Ran {
                ok: true,
                stdout: Vec::new(),
                stderr: Vec::new(),
            }
        }
        "%python" => {
            // Only the suite's one use: re-indent JSON with sorted keys.
            let script = args.get(1).map(String::as_str).unwrap_or("");
            if !(args.first().map(String::as_str) == Some("-c")
                && script.contains("sort_keys=True, indent=2"))
            {
                return Err(format!("unsupported python use: {args:?}"));
            }
            match serde_json::from_slice::<serde_json::Value>(stdin) {
                Ok(v) => {
                    let mut out = String::new();
                    python_json(&v, 0, &mut out);
                    Ran {
                        ok: true,
                        stdout: out.into_bytes(),
                        stderr: Vec::new(),
                    }
                }
                Err(e) => Ran {
                    ok: false,
                    stdout: Vec::new(),
                    stderr: format!("json: {e}").into_bytes(),
                },
            }
        }
        other => return Err(format!("command {other:?} is not supported by the runner")),
    };
    if err_to_out {
        let e = std::mem::take(&mut r.stderr);
        r.stdout.extend_from_slice(&e);
    }
    if negate {
        r.ok = !r.ok;
    }
    Ok(r)
}

fn spawn(mut cmd: Command, stdin: &[u8]) -> Result<Ran, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(stdin);
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok(Ran {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

fn filecheck_command(ctx: &Ctx<'_>, args: &[String], stdin: &[u8]) -> Result<Ran, String> {
    // The check file is the one argument that names an existing file.
    let (file_at, file) = args
        .iter()
        .enumerate()
        .find(|(_, a)| !a.starts_with('-') && Path::new(a).is_file())
        .ok_or_else(|| format!("FileCheck without a check file: {args:?}"))?;
    let mut text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    if tool().is_none() {
        text = text.replace("llvm-xray: ", "tracekit: ");
    }
    let rest: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != file_at)
        .map(|(_, a)| a.clone())
        .collect();
    if let Ok(real) = std::env::var("TRACEKIT_FILECHECK") {
        let checks = ctx.tmp.with_extension("checks");
        std::fs::write(&checks, &text).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(real);
        cmd.arg(&checks).args(&rest);
        return spawn(cmd, stdin);
    }
    let opts = filecheck::Options::parse(&rest)?;
    let input = String::from_utf8_lossy(stdin);
    Ok(match filecheck::check(&text, &input, &opts) {
        Ok(()) => Ran {
            ok: true,
            stdout: Vec::new(),
            stderr: Vec::new(),
        },
        Err(why) => Ran {
            ok: false,
            stdout: Vec::new(),
            stderr: format!("{why}\n--- input ---\n{input}").into_bytes(),
        },
    })
}

/// Python's `json.dump(v, sort_keys=True, indent=2)`.
fn python_json(v: &serde_json::Value, depth: usize, out: &mut String) {
    use serde_json::Value;
    let pad = |d: usize| "  ".repeat(d);
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => python_string(s, out),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Array(a) => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                python_json(x, depth + 1, out);
                out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push(']');
        }
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                python_string(k, out);
                out.push_str(": ");
                python_json(&m[*k], depth + 1, out);
                out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push('}');
        }
    }
}

fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut b = [0u16; 2];
                for u in c.encode_utf16(&mut b) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Runs one RUN line; Err: why it failed.
fn run_line(ctx: &Ctx<'_>, line: &str) -> Result<(), String> {
    let toks = tokens(&ctx.subst(line))?;
    for chain in toks.split(|t| *t == Tok::And) {
        let mut input = Vec::new();
        for stage in chain.split(|t| *t == Tok::Pipe) {
            let err_to_out = stage.contains(&Tok::ErrToOut);
            let words: Vec<String> = stage
                .iter()
                .filter_map(|t| match t {
                    Tok::Word(w) => Some(w.clone()),
                    _ => None,
                })
                .collect();
            let r = run_command(ctx, &words, err_to_out, &input)?;
            if !r.ok {
                return Err(format!(
                    "`{}` failed\nstderr:\n{}\nstdout:\n{}",
                    words.join(" "),
                    String::from_utf8_lossy(&r.stderr),
                    String::from_utf8_lossy(&r.stdout)
                ));
            }
            input = r.stdout;
        }
    }
    Ok(())
}

fn tests(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for arch in ["X86", "AArch64", "ARM"] {
        let Ok(rd) = std::fs::read_dir(dir.join(arch)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn llvm_xray_14_test_suite_passes() {
    run_suite(&suite(), 45, "llvm-xray 14 tests", "t");
}

/// Tests llvm-xray gained after LLVM 14 (`after-14/`, from llvm-project's
/// main branch) whose behaviour llvm-xray 14 already has: they pass with
/// `TRACEKIT_LLVM_SUITE_TOOL=llvm-xray-14` too.
#[test]
fn llvm_xray_tests_after_14_pass() {
    run_suite(
        &suite().join("after-14"),
        1,
        "llvm-xray tests after 14",
        "a",
    );
}

/// Runs every test under `dir` (`expected` of them) and fails listing the
/// ones that fail.
fn run_suite(dir: &Path, expected: usize, what: &str, tmp_prefix: &str) {
    let all = tests(dir);
    assert_eq!(all.len(), expected, "{what}: {} found", all.len());
    let tmp_root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llvm-xray-suite");
    std::fs::create_dir_all(&tmp_root).expect("temp dir");
    let mut failed = Vec::new();
    let mut passed = 0;
    for (n, test) in all.iter().enumerate() {
        let name = test
            .strip_prefix(suite())
            .unwrap_or(test)
            .display()
            .to_string();
        if NOT_APPLICABLE.iter().any(|(t, _)| *t == name) {
            continue;
        }
        let text = std::fs::read_to_string(test).expect("read test");
        let ctx = Ctx {
            test,
            tmp: tmp_root.join(format!("{tmp_prefix}{n}")),
            cwd: tmp_root.clone(),
        };
        let lines = run_lines(&text);
        assert!(!lines.is_empty(), "{name}: no RUN lines");
        match lines
            .iter()
            .try_for_each(|l| run_line(&ctx, l).map_err(|e| format!("RUN: {l}\n{e}")))
        {
            Ok(()) => passed += 1,
            Err(e) => failed.push(format!("== {name}\n{e}")),
        }
    }
    eprintln!(
        "{what}: {passed} pass, {} fail, {} not applicable",
        failed.len(),
        NOT_APPLICABLE.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn run_lines_join_continuations_and_tokens_split_operators() {
    let t = "#RUN: llvm-xray graph %s -o - \\\n#RUN:    | FileCheck %s -check-prefix=EMPTY\n; RUN: not llvm-xray x 2>&1 | FileCheck '-DA=b c'\n";
    let l = run_lines(t);
    assert_eq!(l.len(), 2);
    assert_eq!(
        l[0],
        "llvm-xray graph %s -o - | FileCheck %s -check-prefix=EMPTY"
    );
    let toks = tokens(&l[1]).unwrap();
    assert_eq!(toks[3], Tok::ErrToOut);
    assert_eq!(toks[4], Tok::Pipe);
    assert_eq!(toks[6], Tok::Word("-DA=b c".into()));
}
