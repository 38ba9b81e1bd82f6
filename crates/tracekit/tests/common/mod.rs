//! Helpers of the CLI tests that drive `tracekit trace2 listen` with real
//! git (trace2_listen.rs, otlp.rs): a scratch HOME with a repository, the
//! listener as a child process, and the check for an optional Python
//! module; a POSIX trace log made with the library (the CLI tests of
//! every dialect).

// Each test binary uses a part of this module.
#![allow(dead_code)]

pub mod chromium;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// How many git processes run at once.
pub const CONCURRENT: usize = 50;

/// Whether `python3` can import `module` (from the PyPI package
/// `package`). When it cannot, the caller skips its test, unless CI or
/// TRACEKIT_REQUIRE_OTLP is set: then the missing package fails it.
pub fn python_module(module: &str, package: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let required =
            std::env::var_os("CI").is_some() || std::env::var_os("TRACEKIT_REQUIRE_OTLP").is_some();
        assert!(
            !required,
            "the {package} Python package is missing (python3 -m pip install {package})"
        );
        eprintln!("{package} (PyPI) is not installed: this test did not run");
    }
    ok
}

/// `tracekit trace2 listen` running as a child process.
pub struct Listener {
    child: Child,
    stderr: BufReader<std::process::ChildStderr>,
    first_line: String,
}

impl Listener {
    /// Starts the listener and waits until it says it is listening.
    pub fn start(args: &[&str]) -> Listener {
        Listener::spawn(Command::new(env!("CARGO_BIN_EXE_tracekit")), args)
    }

    /// Starts the listener with RLIMIT_NOFILE (soft and hard) set to
    /// `fd_limit`.
    pub fn start_with_fd_limit(args: &[&str], fd_limit: u64) -> Listener {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracekit"));
        let limit = libc::rlimit {
            rlim_cur: fd_limit as libc::rlim_t,
            rlim_max: fd_limit as libc::rlim_t,
        };
        // SAFETY: only setrlimit (async-signal-safe) runs between fork
        // and exec; `limit` is a plain value copied into the closure.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        Listener::spawn(cmd, args)
    }

    /// Runs `cmd trace2 listen ARGS` (`cmd` may carry global options) and
    /// waits until it says it is listening.
    pub fn spawn(mut cmd: Command, args: &[&str]) -> Listener {
        let mut child = cmd
            .args(["trace2", "listen"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut first_line = String::new();
        stderr.read_line(&mut first_line).unwrap();
        assert!(first_line.contains("listening on"), "{first_line}");
        Listener {
            child,
            stderr,
            first_line,
        }
    }

    /// Peak resident memory so far (kB).
    pub fn peak_rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    /// Sends `signal`, waits for a successful exit; returns (stdout,
    /// stderr).
    pub fn stop(mut self, signal: i32) -> (String, String) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain kill(2) on the pid of our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}: {}{rest}", self.first_line);
        (stdout, rest)
    }

    /// SIGTERM, wait; (the `--json` summary, stderr).
    pub fn stop_json(self) -> (serde_json::Value, String) {
        let (stdout, stderr) = self.stop(libc::SIGTERM);
        let summary = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("summary {stdout:?}: {e}\n{stderr}"));
        (summary, stderr)
    }
}

/// A temporary HOME (`home`) with a small committed repository (`repo`).
pub struct Scratch {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Scratch {
    pub fn new() -> Scratch {
        let tmp = tempfile::tempdir().unwrap();
        // As git resolves it (the worktree it reports).
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("home")).unwrap();
        let scratch = Scratch { _tmp: tmp, root };
        let repo = scratch.path("repo");
        std::fs::create_dir(&repo).unwrap();
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        for args in [
            &["init", "-q"][..],
            &["add", "a.txt"],
            &["commit", "-q", "-m", "first"],
        ] {
            let status = scratch.git(&repo).args(args).status().unwrap();
            assert!(status.success(), "git {args:?}");
        }
        scratch
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// git with a clean environment: no inherited GIT_* variables or
    /// config, fixed identity.
    pub fn git(&self, dir: &Path) -> Command {
        let mut cmd = Command::new("git");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                cmd.env_remove(key);
            }
        }
        cmd.current_dir(dir)
            .env("HOME", self.root.join("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("LANG", "C")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// Runs [`CONCURRENT`] git commands at once in `repo`, cycling through
    /// `commands`, with `GIT_TRACE2_EVENT_NESTING=100` and `trace_env`.
    pub fn run_concurrent_gits(&self, commands: &[&[&str]], trace_env: &[(&str, String)]) {
        let repo = self.path("repo");
        let children: Vec<Child> = (0..CONCURRENT)
            .map(|i| {
                let mut cmd = self.git(&repo);
                cmd.args(commands[i % commands.len()])
                    .env("GIT_TRACE2_EVENT_NESTING", "100");
                for (key, value) in trace_env {
                    cmd.env(key, value);
                }
                cmd.spawn().unwrap()
            })
            .collect();
        for mut child in children {
            child.wait().unwrap();
        }
    }
}

/// A POSIX trace log of `events` events, written with tracekit's own
/// POSIX trace library (log policy UNTIL_FULL, 1 MiB).
pub fn posix_log(path: &Path, events: u32) {
    use std::os::fd::AsRawFd;
    use tracekit_posix::consts::*;
    use tracekit_posix::{api, traced, TraceAttr};
    let f = std::fs::File::create(path).unwrap();
    let mut a = TraceAttr::default();
    assert!(a.set_log_policy(POSIX_TRACE_UNTIL_FULL));
    a.stream_size = 1 << 20;
    a.log_size = 1 << 20;
    let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(b"tracekit-test").unwrap();
    api::start(trid).unwrap();
    for i in 0..events {
        traced::trace_event(id, &i.to_le_bytes());
    }
    api::shutdown(trid).unwrap();
}

/// Compiles the C source `src` into `dir/name` with `cc BEFORE -o EXE
/// SOURCE AFTER` (libraries go after the source); fails the test with the
/// compiler's message.
pub fn cc(dir: &Path, name: &str, src: &str, before: &[&str], after: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).expect("write the C source");
    let exe = dir.join(name);
    let out = Command::new("cc")
        .args(before)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .args(after)
        .output()
        .expect("a C compiler (cc) is needed for this test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The output of a command that must succeed (its stderr otherwise).
pub fn ok(out: std::io::Result<std::process::Output>) -> std::process::Output {
    let out = out.expect("run a command");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
