//! `tracekit record mem -p PID` on a running C program built here: what it
//! allocates after the attach is recorded (and nothing before it: frees of
//! blocks allocated before are counted apart), its output and exit status
//! are unchanged, SIGINT detaches and leaves it running; processes that
//! cannot take the recorder are refused with the reason.
//!
//! The programs wait on their standard input between phases, so what
//! happens before and after the attach does not depend on timing. They
//! allow any process to trace them (`PR_SET_PTRACER_ANY`), which Yama's
//! `ptrace_scope=1` needs (tracekit is not their parent). Needs `cc`.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};

use serde_json::Value;

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn build(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    common::cc(dir, name, src, flags, &[])
}

/// Allocates 3 blocks, says `ready`, waits for a line; then allocates 100
/// blocks (1000 + i bytes, each freed by the next-but-three), frees the
/// first 3 and the last 4, says `done 104950`, exits 7.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
static void *volatile early[3];
static void *volatile keep[4];
static void wait_line(void) {
    char c;
    while (read(0, &c, 1) == 1 && c != '\n') {}
}
int main(void) {
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    for (int i = 0; i < 3; i++) early[i] = malloc(50);
    printf("ready\n");
    fflush(stdout);
    wait_line();
    long total = 0;
    for (int i = 0; i < 100; i++) {
        free(keep[i % 4]);
        keep[i % 4] = malloc(1000 + i);
        total += 1000 + i;
    }
    for (int i = 0; i < 3; i++) free(early[i]);
    for (int i = 0; i < 4; i++) free(keep[i]);
    printf("done %ld\n", total);
    return 7;
}
"#;

/// Says `ready`, waits; allocates 10 blocks (kept), says `phase 1`,
/// waits; allocates 10 more, says `phase 2`, exits 5.
const TWO_PHASES: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
static void *volatile keep[20];
static void wait_line(void) {
    char c;
    while (read(0, &c, 1) == 1 && c != '\n') {}
}
int main(void) {
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    printf("ready\n");
    fflush(stdout);
    wait_line();
    for (int i = 0; i < 10; i++) keep[i] = malloc(64);
    printf("phase 1\n");
    fflush(stdout);
    wait_line();
    for (int i = 10; i < 20; i++) keep[i] = malloc(64);
    printf("phase 2\n");
    return 5;
}
"#;

/// A started program: its stdin to write to, its stdout lines.
struct Running {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Running {
    fn start(exe: &Path) -> Running {
        let mut child = Command::new(exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        Running { child, lines }
    }

    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn line(&mut self) -> String {
        self.lines.next().unwrap().unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `record mem -p` and waits until it says it records; its
/// stderr lines so far. (The caller waits for it: [`finish`].)
#[allow(clippy::zombie_processes)]
fn attach(pid: u32, out: &Path) -> (Child, BufReader<ChildStderr>, String) {
    let mut tk = tracekit()
        .args(["record", "mem", "-p", &pid.to_string(), "-o"])
        .arg(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(tk.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let status = tk.wait().unwrap();
            panic!("record mem -p ended ({status}) before recording: {seen}");
        }
        seen.push_str(&line);
        if line.contains("recording process") {
            return (tk, err, seen);
        }
    }
}

fn finish(mut tk: Child, mut err: BufReader<ChildStderr>, mut seen: String) -> String {
    let status = tk.wait().unwrap();
    std::io::Read::read_to_string(&mut err, &mut seen).unwrap();
    assert!(status.success(), "{status}: {seen}");
    seen
}

fn report(path: &Path) -> Value {
    let out = tracekit()
        .args(["report", "--json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The report of the recording's one process image (`tracekit.report/1`:
/// the recording's report, then one per image).
fn image_report(v: &Value) -> &Value {
    assert_eq!(v["schema"], "tracekit.report/1", "{v}");
    let reports = v["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 2, "{v}");
    &reports[1]
}

/// The section `id` of a report, anywhere in its tree.
fn section<'a>(r: &'a Value, id: &str) -> &'a Value {
    fn walk<'a>(s: &'a Value, id: &str) -> Option<&'a Value> {
        s.as_array()?.iter().find_map(|x| {
            if x["id"] == id {
                Some(x)
            } else {
                walk(&x["sections"], id)
            }
        })
    }
    walk(&r["sections"], id).unwrap_or_else(|| panic!("no section {id}: {r}"))
}

/// The value of summary item `key` of section `id`.
fn item<'a>(r: &'a Value, id: &str, key: &str) -> &'a Value {
    let s = section(r, id);
    s["items"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["key"] == key))
        .map(|i| &i["value"])
        .unwrap_or_else(|| panic!("no item {key}: {s}"))
}

#[test]
fn attach_records_what_follows_and_keeps_output_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path(), "prog", PROGRAM, &["-O1"]);
    // The program on its own.
    let mut plain = Running::start(&exe);
    plain.go();
    let plain_rest = plain.line();
    let plain_status = plain.child.wait().unwrap();

    let mut prog = Running::start(&exe);
    let out = dir.path().join("r.tkmem");
    let (tk, err, seen) = attach(prog.pid(), &out);
    prog.go();
    let rest = prog.line();
    assert!(prog.lines.next().is_none());
    let status = prog.child.wait().unwrap();
    let said = finish(tk, err, seen);
    assert_eq!(rest, plain_rest);
    assert_eq!(rest, "done 104950");
    assert_eq!(status.code(), Some(7));
    assert_eq!(status.code(), plain_status.code());
    assert!(said.contains("exited with status 7"), "{said}");

    let v = report(&out);
    let image = image_report(&v);
    assert_eq!(item(image, "summary", "attached"), &Value::Bool(true));
    let mem = &section(image, "resources")["rows"][0];
    // Exactly the 100 blocks of after the attach; the 3 blocks of before
    // are frees of blocks allocated before recording, none leaked.
    assert_eq!(mem["allocations"], 100, "{mem}");
    assert_eq!(mem["allocated_bytes"], 104950, "{mem}");
    assert_eq!(mem["unmatched_frees"], 3, "{mem}");
    assert_eq!(mem["leaked_blocks"], 0, "{mem}");
    let notes = section(image, "recorder_notes").to_string();
    assert!(notes.contains("attached to a running process"), "{notes}");
    assert!(notes.contains("exited with status 7"), "{notes}");

    let text = tracekit().arg("report").arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("frees 107 (3 of blocks allocated before recording, 4 free(NULL))"),
        "{text}"
    );
}

#[test]
fn sigint_detaches_and_leaves_the_program_running() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path(), "phases", TWO_PHASES, &["-O1"]);
    let mut prog = Running::start(&exe);
    let out = dir.path().join("r.tkmem");
    let (tk, err, seen) = attach(prog.pid(), &out);
    prog.go();
    assert_eq!(prog.line(), "phase 1");
    // SAFETY: a signal to the tracekit process this test started.
    assert_eq!(unsafe { libc::kill(tk.id() as i32, libc::SIGINT) }, 0);
    let said = finish(tk, err, seen);
    assert!(said.contains("it runs on"), "{said}");
    // The inert recorder stays loaded: a second attach is refused.
    let pid = prog.pid().to_string();
    let (code, err) = refused(&["record", "mem", "-p", &pid, "--format", "text", "-o", "-"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("being recorded already"), "{err}");
    // Detached: the program goes on as before and ends as it would.
    prog.go();
    assert_eq!(prog.line(), "phase 2");
    assert_eq!(prog.child.wait().unwrap().code(), Some(5));

    let v = report(&out);
    let image = image_report(&v);
    let mem = &section(image, "resources")["rows"][0];
    assert_eq!(mem["allocations"], 10, "{mem}");
    let notes = section(image, "recorder_notes").to_string();
    assert!(notes.contains("tracekit detached"), "{notes}");
}

fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = tracekit().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_static_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path(), "static", PROGRAM, &["-O1", "-static"]);
    let prog = Running::start(&exe);
    let out = dir.path().join("r.tkmem");
    let pid = prog.pid().to_string();
    let (code, err) = refused(&["record", "mem", "-p", &pid, "-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("no C library loaded (statically linked?)"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn another_mount_namespace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path(), "prog", PROGRAM, &["-O1"]);
    // `unshare -m` needs CAP_SYS_ADMIN (root, or a user namespace).
    let mut child = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    if !matches!(lines.next(), Some(Ok(l)) if l == "ready") {
        let _ = child.wait();
        eprintln!("skipped: unshare -m is not permitted here");
        return;
    }
    // unshare execs the program: same pid.
    let pid = child.id().to_string();
    let (code, err) = refused(&["record", "mem", "-p", &pid, "-o", "-"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("in another mount namespace"), "{err}");
}

#[test]
fn usage_errors() {
    let (code, err) = refused(&["record", "mem", "-p", "1", "--", "true"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = refused(&["record", "mem", "-p", "999999999", "-o", "-"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no process 999999999"), "{err}");
}
