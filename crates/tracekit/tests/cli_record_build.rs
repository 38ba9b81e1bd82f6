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

/// `--compile-db` as a Bear user types it, and what goes wrong: a bad
/// configuration stops before the build runs; an unreadable database to
/// append to is an error after it (the build's own status wins when it
/// failed; the old file stays as it was); `--append` to standard output is
/// a usage error.
#[test]
fn compile_db_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.c"), "int a;\n").unwrap();
    std::fs::write(
        dir.join("bad.json"),
        r#"{"output": {"format": {"command_as_array": "yes"}}}"#,
    )
    .unwrap();
    let run = |args: &[&str]| {
        tracekit()
            .current_dir(dir)
            .args(["record", "build", "-o", "b.trace"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--config", "bad.json", "--", "sh", "-c", "touch ran"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json: output.format.command_as_array: not true or false"),
        "{err}"
    );
    assert!(!dir.join("ran").exists(), "the build ran");

    std::fs::write(dir.join("compile_commands.json"), "[{\"file\": 1}]").unwrap();
    for (cmd, status) in [("cc -c a.c", 0), ("cc -c a.c; exit 3", 3)] {
        let out = run(&["--compile-db", "--append", "--", "sh", "-c", cmd]);
        assert_eq!(out.status.code(), Some(status), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("compile_commands.json:entry 1: \"file\" is not a string"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("compile_commands.json")).unwrap(),
            "[{\"file\": 1}]"
        );
        assert!(dir.join("b.trace").exists());
    }

    let out = run(&["--compile-db", "-", "--append", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));

    // `--append` alone implies the default database file; the build's
    // output and the database's summary stay apart.
    std::fs::remove_file(dir.join("compile_commands.json")).unwrap();
    let out = run(&["--append", "--", "sh", "-c", "cc -c a.c && echo built"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "built\n");
    let db: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("compile_commands.json")).unwrap())
            .unwrap();
    assert_eq!(db.as_array().unwrap().len(), 1, "{db}");
}

/// Whether this machine lets us mount a file system in a private mount
/// namespace (`unshare -rm`: as root, or through an unprivileged user
/// namespace). CI runs as root on Debian, where it must work.
fn private_mounts() -> bool {
    let ok = Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "unshare -rm cannot mount a tmpfs here (CI runs as root and needs it)"
        );
        eprintln!("unshare -rm cannot mount a tmpfs here: the full-file-system part did not run");
    }
    ok
}

/// A trace that cannot be written: the build's exit status is tracekit's
/// (0 and 3 alike), the message says the path and the OS reason, and what
/// is left is either nothing or a trace marked truncated that `info` and
/// `report` read with a warning (`report` exits 1); `--compile-db` leaves
/// no `.tmp` behind.
#[test]
fn a_full_disk_keeps_the_builds_status_and_says_why() {
    // /dev/full: every write fails with ENOSPC; the device stays as it is.
    for (cmd, status) in [("true", 0), ("exit 3", 3)] {
        let out = tracekit()
            .args(["record", "build", "-o", "/dev/full", "--", "sh", "-c", cmd])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{cmd}: {err}");
        assert!(
            err.contains("/dev/full") && err.contains("No space left on device"),
            "{err}"
        );
    }
    if !private_mounts() {
        return;
    }
    // A 16 KiB tmpfs that the trace (some 300 processes) overflows, in a
    // private mount namespace; what is left there is copied out.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.c"), "int a;\n").unwrap();
    std::fs::create_dir(dir.join("mnt")).unwrap();
    for status in [0, 3] {
        let script = format!(
            "mount -t tmpfs -o size=16k tmpfs mnt || exit 99; \
             env -i PATH=/usr/bin:/bin \"$TK\" record build -o mnt/b.trace --compile-db mnt/cdb.json \
               -- sh -c 'cc -c a.c; for i in $(seq 300); do /bin/true $i; done; exit {status}' \
               >out 2>err; echo $? >status; ls -A mnt >left; \
             rm -f b.trace; if [ -e mnt/b.trace ]; then cp mnt/b.trace b.trace; fi"
        );
        let out = Command::new("unshare")
            .args(["-rm", "sh", "-c", &script])
            .current_dir(dir)
            .env("TK", env!("CARGO_BIN_EXE_tracekit"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let err = read("err");
        assert_eq!(read("status").trim(), status.to_string(), "{err}");
        assert!(
            err.contains("mnt/b.trace") && err.contains("No space left on device"),
            "{err}"
        );
        assert!(
            err.contains("mnt/cdb.json") && !read("left").contains(".tmp"),
            "{err}\nleft: {}",
            read("left")
        );
        let trace = dir.join("b.trace");
        if !trace.exists() {
            assert!(!read("left").contains("b.trace"));
            continue;
        }
        for verb in ["info", "report"] {
            let out = tracekit().arg(verb).arg(&trace).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("warning"), "{verb}: {err}");
            assert!(err.contains("truncated"), "{verb}: {err}");
            if verb == "report" {
                assert_eq!(out.status.code(), Some(1), "{verb}: {err}");
            }
        }
    }
}

/// A trace cut in the middle of a record (a recorder that died, a copy
/// that stopped): `report` reads what is there, warns, and exits 1.
#[test]
fn report_on_a_cut_trace_exits_1() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus/buildtrace/recorded/hello-make-j2.trace");
    let full = std::fs::read(corpus).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join("cut.trace");
    std::fs::write(&cut, &full[..full.len() - 40]).unwrap();
    let out = tracekit().arg("report").arg(&cut).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("truncated record"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Build trace:"));
    assert_eq!(out.status.code(), Some(1), "{err}");
}
