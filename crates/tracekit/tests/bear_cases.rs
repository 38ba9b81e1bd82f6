//! Bear 3.1.1's own functional test cases (rizsotto/Bear `test/cases/`),
//! ported as data: tests/corpus/buildtrace/bear-3.1.1-cases/, one directory
//! per case with its inputs, `case.json` (the runs) and the databases real
//! Bear 3.1.1 wrote (`expected-N.json`, made by `make_expected.py` there).
//! tracekit runs in Bear's place (`record build --compile-db` for `bear --
//! CMD`, `build spec` for `bear citnames`) and must write the same
//! databases; each build runs under both recording methods. See the
//! README there for which cases apply and how.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/buildtrace/bear-3.1.1-cases")
}

/// `name` found on `PATH` as lit's `which` finds it: the first executable
/// file, symlinks not resolved.
fn which(name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var("PATH").unwrap_or_default();
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let p = Path::new(dir).join(name);
        if std::fs::metadata(&p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0) {
            return p.display().to_string();
        }
    }
    panic!("{name} is not on PATH (the ported Bear cases need cc, c++, make, sh)");
}

struct Tools {
    vars: BTreeMap<&'static str, String>,
}

impl Tools {
    fn new() -> Tools {
        let mut vars = BTreeMap::new();
        for (k, prog) in [
            ("CC", "cc"),
            ("CXX", "c++"),
            ("TRUE", "true"),
            ("FALSE", "false"),
            ("ECHO", "echo"),
            ("SH", "sh"),
        ] {
            vars.insert(k, which(prog));
        }
        Tools { vars }
    }

    fn subst(&self, text: &str, t: &Path) -> String {
        let mut s = text
            .replace("@T@", &t.display().to_string())
            .replace("@PATH@", &std::env::var("PATH").unwrap_or_default());
        for k in ["CC", "CXX", "TRUE", "SH"] {
            s = s.replace(&format!("@{k}@"), &self.vars[k]);
        }
        s
    }

    /// lit's environment: CC, CXX, ECHO, TRUE, FALSE set.
    fn lit_env(&self) -> Vec<(&'static str, &str)> {
        ["CC", "CXX", "ECHO", "TRUE", "FALSE"]
            .iter()
            .map(|k| (*k, self.vars[k].as_str()))
            .collect()
    }
}

fn copy_inputs(from: &Path, to: &Path, tools: &Tools, t: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        let src = entry.path();
        let dst = to.join(&name);
        if src.is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_inputs(&src, &dst, tools, t);
            continue;
        }
        if name == "case.json" || name.starts_with("expected-") {
            continue;
        }
        let text = std::fs::read_to_string(&src).unwrap();
        std::fs::write(&dst, tools.subst(&text, t)).unwrap();
        if text.starts_with("#!") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

fn status_ok(want: &Value, got: Option<i32>) -> bool {
    match want {
        Value::String(s) if s == "nonzero" => got.is_some_and(|c| c != 0),
        Value::Number(n) => got.map(i64::from) == n.as_i64(),
        Value::Null => got == Some(0),
        _ => panic!("bad status {want}"),
    }
}

/// Runs one case with one recording method; the differences, if any.
fn run_case(dir: &Path, method: &str, tools: &Tools) -> Vec<String> {
    let case: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
    let name = dir
        .strip_prefix(cases_dir())
        .unwrap_or(dir)
        .display()
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    // Real path: the recorder reports the working directory the kernel has.
    let t = tmp.path().canonicalize().unwrap();
    copy_inputs(dir, &t, tools, &t);
    if let Some(setup) = case["setup"].as_str() {
        let ok = Command::new("sh")
            .args(["-c", setup])
            .current_dir(&t)
            .status()
            .unwrap();
        assert!(ok.success(), "{name}: setup");
    }
    let out = t.join("compile_commands.json");
    let mut problems = Vec::new();
    for (i, run) in case["runs"].as_array().unwrap().iter().enumerate() {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracekit"));
        cmd.current_dir(&t);
        if run["clear_env"].as_bool() == Some(true) {
            cmd.env_clear();
        } else {
            cmd.envs(tools.lit_env());
        }
        if let Some(env) = run["env"].as_object() {
            for (k, v) in env {
                cmd.env(k, tools.subst(v.as_str().unwrap(), &t));
            }
        }
        let mut db_args: Vec<String> = Vec::new();
        if run["append"].as_bool() == Some(true) {
            db_args.push("--append".into());
        }
        if let Some(c) = run["config"].as_str() {
            db_args.push("--config".into());
            db_args.push(t.join(c).display().to_string());
        }
        if let Some(args) = run["tracekit"].as_array() {
            cmd.args(args.iter().map(|a| a.as_str().unwrap()));
        } else if let Some(trace) = run["trace"].as_str() {
            if let Some(existing) = run["existing"].as_str() {
                std::fs::copy(t.join(existing), &out).unwrap();
            }
            cmd.args(["build", "spec"])
                .arg(t.join(trace))
                .arg("-o")
                .arg(&out)
                .args(&db_args);
        } else {
            cmd.args(["record", "build", "--method", method, "-o"])
                .arg(t.join("build.trace"))
                .arg("--compile-db")
                .arg(&out)
                .args(&db_args)
                .arg("--");
            for a in run["command"].as_array().unwrap() {
                cmd.arg(tools.subst(a.as_str().unwrap(), &t));
            }
        }
        let output = cmd.output().unwrap();
        let what = format!("{name} [{method}] run {}", i + 1);
        if !status_ok(&run["status"], output.status.code()) {
            problems.push(format!(
                "{what}: exit status {:?}, Bear's was {}; stderr:\n{}",
                output.status.code(),
                run["status"],
                String::from_utf8_lossy(&output.stderr)
            ));
            continue;
        }
        let Some(expect) = run["expect"].as_str() else {
            continue;
        };
        let want_text = std::fs::read_to_string(dir.join(expect)).unwrap();
        let want: Value = serde_json::from_str(&tools.subst(&want_text, &t)).unwrap();
        let got: Value = match std::fs::read_to_string(&out)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str(&s).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!(
                    "{what}: no database ({e}); stderr:\n{}",
                    String::from_utf8_lossy(&output.stderr)
                ));
                continue;
            }
        };
        let (mut got, mut want) = (got, want);
        if case["unordered"].as_bool() == Some(true) {
            for v in [&mut got, &mut want] {
                v.as_array_mut().unwrap().sort_by_key(|e| e.to_string());
            }
        }
        if got != want {
            problems.push(format!(
                "{what}: database differs from Bear's ({expect})\n ours: {}\nBear's: {}",
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(&want).unwrap()
            ));
        }
    }
    problems
}

fn case_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for group in std::fs::read_dir(cases_dir()).unwrap() {
        let group = group.unwrap().path();
        if !group.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&group).unwrap() {
            let case = case.unwrap().path();
            if case.join("case.json").exists() {
                out.push(case);
            }
        }
    }
    out.sort();
    out
}

fn builds(case: &Path) -> bool {
    let text = std::fs::read_to_string(case.join("case.json")).unwrap();
    text.contains("\"command\"")
}

fn run_all(method: &str, filter: impl Fn(&Path) -> bool) {
    let tools = Tools::new();
    let dirs: Vec<PathBuf> = case_dirs().into_iter().filter(|d| filter(d)).collect();
    assert!(!dirs.is_empty());
    let mut problems = Vec::new();
    for d in &dirs {
        problems.extend(run_case(d, method, &tools));
    }
    assert!(
        problems.is_empty(),
        "{} of {} cases differ from Bear 3.1.1:\n\n{}",
        problems.len(),
        dirs.len(),
        problems.join("\n\n")
    );
}

/// Every case that runs a build, recorded with the preload shim (Bear's
/// preload mode).
#[test]
fn bear_cases_with_preload() {
    run_all("preload", builds);
}

/// The same builds followed with ptrace (where Bear's cases also run with
/// `--force-wrapper`, its other interception method).
#[test]
fn bear_cases_with_ptrace() {
    run_all("ptrace", builds);
}

/// The `citnames` cases (Bear's events given as a kwinject trace to `build
/// spec`) and the exit-status cases.
#[test]
fn bear_cases_without_a_build() {
    run_all("preload", |d| !builds(d));
}

/// The corpus holds what the README says: every case has its runs, and
/// every expected file a run that reads it.
#[test]
fn every_case_is_run() {
    let dirs = case_dirs();
    assert!(dirs.len() >= 37, "{} cases", dirs.len());
    for d in dirs {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("case.json")).unwrap()).unwrap();
        let expects: Vec<&str> = case["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["expect"].as_str())
            .collect();
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().file_name().to_string_lossy().to_string();
            if f.starts_with("expected-") {
                assert!(expects.contains(&f.as_str()), "{}: {f} unused", d.display());
            }
        }
        for e in expects {
            assert!(d.join(e).exists(), "{}: {e} missing", d.display());
        }
    }
}
