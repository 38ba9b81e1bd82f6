//! What a package installs beside the binary, checked against the binary's
//! own `--help`: a man page per command and subcommand, each naming its
//! subcommands; bash, zsh and fish completions naming every subcommand;
//! and `tracekit --version` with the commit it was built from, or no
//! commit where the source is not a git checkout.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

// The build script's commit lookup, tested directly (its `main` is unused).
#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

fn tracekit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .output()
        .expect("run tracekit")
}

/// The subcommands a `--help` text lists under `Commands:` (not `help`).
fn listed_subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
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
        // A command's line is indented by two spaces; its wrapped
        // description by more.
        if let Some(rest) = line.strip_prefix("  ") {
            if !rest.starts_with(' ') {
                let name = rest.split_whitespace().next().unwrap_or_default();
                if name != "help" {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// Every command path (`[]`, `["info"]`, `["trace2", "listen"]`, ...)
/// with its subcommands, walked through `--help`.
fn command_tree() -> Vec<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let o = tracekit(&args);
        assert!(o.status.success(), "tracekit {args:?}");
        let subs = listed_subcommands(&String::from_utf8_lossy(&o.stdout));
        for s in &subs {
            let mut p = path.clone();
            p.push(s.clone());
            todo.push(p);
        }
        out.push((path, subs));
    }
    out.sort();
    out
}

fn page_name(path: &[String]) -> String {
    let mut name = String::from("tracekit");
    for p in path {
        name.push('-');
        name.push_str(p);
    }
    name + ".1"
}

#[test]
fn the_walk_sees_the_commands_and_xrays_own_subcommands() {
    let tree = command_tree();
    let paths: BTreeSet<String> = tree.iter().map(|(p, _)| p.join(" ")).collect();
    for p in [
        "",
        "info",
        "convert",
        "sql",
        "completions",
        "trace2 listen",
        "xray account",
        "xray graph-diff",
        "record build",
        "posix dump",
    ] {
        assert!(paths.contains(p), "{p:?} not in {paths:?}");
    }
    assert!(!paths.contains("generate"), "the generator is hidden");
}

#[test]
fn every_command_has_a_man_page_naming_its_subcommands() {
    let tree = command_tree();
    let dir = tempfile::tempdir().unwrap();
    let o = tracekit(&["generate", "man", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written: BTreeSet<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = tree.iter().map(|(p, _)| page_name(p)).collect();
    assert_eq!(written, expected);
    for (path, subs) in &tree {
        let name = page_name(path);
        let page = std::fs::read_to_string(dir.path().join(&name)).unwrap();
        // roff escapes dashes.
        let text = page.replace("\\-", "-");
        assert!(
            text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH "),
            "{name}: not a man page"
        );
        let title = name.trim_end_matches(".1");
        assert!(text.contains(&format!(".TH {title} 1")), "{name}: title");
        for s in subs {
            assert!(
                text.contains(&format!("{title}-{s}(1)")),
                "{name} does not name its subcommand {s}"
            );
        }
        // The page has the command's own text, not only its name.
        assert!(
            text.contains(".SH DESCRIPTION") || text.contains(".SH OPTIONS"),
            "{name}"
        );
    }
    // `tracekit xray` takes raw arguments; its pages still have llvm-xray's
    // subcommands and flags, and not tracekit's global flags, which its raw
    // arguments do not take.
    let xray = std::fs::read_to_string(dir.path().join("tracekit-xray-account.1"))
        .unwrap()
        .replace("\\-", "-");
    assert!(xray.contains("--sortorder"), "{xray}");
    assert!(xray.contains("--instr-map"), "{xray}");
    assert!(!xray.contains("--file-mode"), "{xray}");
    let top = std::fs::read_to_string(dir.path().join("tracekit.1")).unwrap();
    assert!(top.replace("\\-", "-").contains("--file-mode"));
}

#[test]
fn completions_name_every_subcommand_in_each_shell() {
    let tree = command_tree();
    let names: BTreeSet<&str> = tree
        .iter()
        .filter_map(|(p, _)| p.last().map(String::as_str))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let o = tracekit(&["generate", "completions", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (shell, file) in [
        ("bash", "tracekit"),
        ("zsh", "_tracekit"),
        ("fish", "tracekit.fish"),
    ] {
        let o = tracekit(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let script = String::from_utf8(o.stdout).unwrap();
        assert!(script.len() > 1000, "{shell}: {script}");
        for n in &names {
            assert!(script.contains(n), "{shell} completion lacks {n}");
        }
        assert!(
            !script.contains("generate"),
            "{shell}: the hidden generator is completed"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(file)).unwrap(),
            script,
            "{file}"
        );
    }
    // The shells' own parsers accept them, where installed.
    for (shell, check) in [("bash", "-n"), ("zsh", "-n"), ("fish", "--no-execute")] {
        if Command::new(shell).arg("--version").output().is_err() {
            eprintln!("{shell} not installed: its syntax check did not run");
            continue;
        }
        let file = dir.path().join(match shell {
            "bash" => "tracekit",
            "zsh" => "_tracekit",
            _ => "tracekit.fish",
        });
        // Run where the file is, with PWD saying so: zsh otherwise finds
        // its directory by reading each parent directory of the test's own
        // (outside the repository, in CI's standalone copy); and without
        // the user's start-up files (zsh -f, fish --no-config).
        let mut cmd = Command::new(shell);
        match shell {
            "zsh" => cmd.arg("-f"),
            "fish" => cmd.arg("--no-config"),
            _ => &mut cmd,
        };
        let o = cmd
            .arg(check)
            .arg(&file)
            .current_dir(dir.path())
            .env("PWD", dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{shell} {check}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = tracekit(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

fn git(dir: &Path, home: &Path, args: &[&str]) -> String {
    // A scratch HOME: no user or system configuration is read.
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_DIR")
        .output()
        .expect("run git");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn has_git() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

#[test]
fn version_names_the_commit_only_in_a_checkout_that_tracks_the_crate() {
    if !has_git() {
        eprintln!("no git: this test did not run");
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir(&home).unwrap();
    // A tarball: no .git anywhere up to the root.
    let tarball = scratch.path().join("tracekit-0.1.0");
    std::fs::create_dir(&tarball).unwrap();
    std::fs::write(tarball.join("build.rs"), "fn main() {}\n").unwrap();
    if !Path::new("/.git").exists() {
        assert_eq!(build_script::commit(&tarball), None);
    }
    // Inside some other repository that does not track the crate (a home
    // directory kept in git): no commit either.
    let other = scratch.path().join("other");
    std::fs::create_dir_all(other.join("src/tracekit")).unwrap();
    git(&other, &home, &["init", "-q"]);
    std::fs::write(other.join("README"), "x\n").unwrap();
    git(&other, &home, &["add", "README"]);
    git(&other, &home, &["commit", "-q", "-m", "x"]);
    std::fs::write(other.join("src/tracekit/build.rs"), "fn main() {}\n").unwrap();
    assert_eq!(build_script::commit(&other.join("src/tracekit")), None);
    // Tracked: that commit, with its date.
    git(&other, &home, &["add", "src/tracekit/build.rs"]);
    git(&other, &home, &["commit", "-q", "-m", "y"]);
    let expected = git(
        &other,
        &home,
        &["log", "-1", "--format=%h %cs", "--abbrev=7"],
    );
    assert_eq!(
        build_script::commit(&other.join("src/tracekit")),
        Some(expected)
    );
}

#[test]
fn version_says_the_version_and_the_commit_built_from() {
    let o = tracekit(&["--version"]);
    assert!(o.status.success());
    let line = String::from_utf8(o.stdout).unwrap();
    let line = line.trim_end();
    let head = format!("tracekit {}", env!("CARGO_PKG_VERSION"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The same lookup the build made (a clean copy without .git: none).
    match build_script::commit(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        Some(c) => {
            assert_eq!(line, format!("{head} ({c})"));
            if has_git() && root.join(".git").exists() {
                let o = Command::new("git")
                    .arg("-C")
                    .arg(&root)
                    .args(["rev-parse", "HEAD"])
                    .output()
                    .unwrap();
                let full = String::from_utf8_lossy(&o.stdout);
                assert!(
                    full.starts_with(c.split(' ').next().unwrap()),
                    "{full} vs {c}"
                );
            }
        }
        None => assert_eq!(line, head),
    }
}
