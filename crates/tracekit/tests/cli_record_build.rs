//! `tracekit record build` as a user runs it: the build's exit status and
//! output come through unchanged, and a recorder killed mid-build does not
//! take the build down with it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn wait_for(path: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn exit_status_and_output_pass_through() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("b.trace");
    let out = tracekit()
        .args(["record", "build", "-o"])
        .arg(&trace)
        .args([
            "--",
            "sh",
            "-c",
            "echo to-stdout; echo to-stderr >&2; /bin/true; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "to-stdout\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("to-stderr\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = tracekit()
        .arg("info")
        .arg("--json")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(info.status.success());
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["processes"], 2, "{v}");
}

/// SIGKILL the recorder while the build waits, then let the build go on:
/// it starts more (shimmed) programs, finishes its work and exits with its
/// own status. This process becomes the build's reaper (a subreaper) to see
/// that status.
#[test]
fn build_outlives_a_killed_recorder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) }, 0);
    let script = "echo $$ > root.pid.tmp && mv root.pid.tmp root.pid; \
                  while [ ! -e go ]; do sleep 0.01; done; \
                  /bin/true; sh -c 'exit 7'; echo $? > inner; \
                  for i in 1 2 3 4 5 6 7 8 9 10; do /bin/echo $i; done > out; exit 3";
    let mut recorder = tracekit()
        .current_dir(dir)
        .args(["record", "build", "-o", "b.trace", "--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&dir.join("root.pid"), "the build to start");
    let root: i32 = std::fs::read_to_string(dir.join("root.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    recorder.kill().unwrap();
    let killed = recorder.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(libc::SIGKILL)
    );
    std::fs::write(dir.join("go"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let mut status = 0;
        // SAFETY: waitpid on our (adopted) child with a valid out-pointer.
        let r = unsafe { libc::waitpid(root, &mut status, libc::WNOHANG) };
        assert!(r >= 0, "the build was not reparented to us");
        if r == root {
            break status;
        }
        assert!(Instant::now() < deadline, "the build did not finish");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 3);
    assert_eq!(std::fs::read_to_string(dir.join("inner")).unwrap(), "7\n");
    let expect: String = (1..=10).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(dir.join("out")).unwrap(), expect);
}
