//! A closed standard output (`tracekit ... | head`) ends every verb that
//! prints quietly: exit status 0, nothing on standard error. Each verb runs
//! twice on a corpus input: with its standard output a pipe whose reader is
//! gone before it starts (its first write fails), and with a pipe of one
//! page whose reader takes the first bytes and leaves (a later write
//! fails, as under `| head -c`). Standard error may only say what the
//! same run says with an open standard output (a summary some verbs print
//! there), or nothing.

mod common;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus(p: &str) -> String {
    root().join(p).to_string_lossy().into_owned()
}

/// Runs `tracekit ARGS` with its standard output closed (`early`: before
/// it starts; else after the first bytes of a one-page pipe) and returns
/// its exit status and standard error.
fn run_closed(args: &[String], early: bool) -> (Option<i32>, String) {
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    if !early {
        // One page: the writer blocks after 4 KiB, so what comes after
        // the first bytes meets a closed pipe.
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe {
            libc::fcntl(writer.as_raw_fd(), libc::F_SETPIPE_SZ, 4096);
        }
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracekit"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped());
    let child = if early {
        drop(reader);
        let c = cmd.spawn().expect("run tracekit");
        drop(cmd);
        c
    } else {
        let c = cmd.spawn().expect("run tracekit");
        // The parent's copy of the write end goes with `cmd`.
        drop(cmd);
        let mut first = [0u8; 16];
        let _ = reader.read(&mut first);
        drop(reader);
        c
    };
    let out = child.wait_with_output().expect("wait for tracekit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Standard error of `tracekit ARGS` with its output going to /dev/null.
fn stderr_when_open(args: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run tracekit");
    assert!(
        out.status.success(),
        "tracekit {}: {:?}",
        args.join(" "),
        out
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_printing_verb_ends_quietly_on_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.trace");
    common::posix_log(&log, 3000);
    let log = log.to_string_lossy().into_owned();
    let trace2 = corpus("examples/trace2/clone.event.jsonl");
    let perf = corpus("examples/trace2/clone.perf.log");
    let rtrace = corpus("examples/rtrace/sample.rtrace");
    let build = corpus("examples/build/make-nested.trace");
    let recorded = corpus("tests/corpus/buildtrace/recorded/hello-make-j2.trace");
    let many = corpus("tests/corpus/buildtrace/kwtrace-04-flag-edges.jsonl");
    let xray = corpus("tests/corpus/xray/mt/mt.fdr.xray");
    let xray_map = corpus("tests/corpus/xray/mt/mt.instr_map.yaml");
    let xray_bin = corpus("tests/corpus/xray/mt/mt");
    let cases: Vec<Vec<&str>> = vec![
        vec!["info", &trace2],
        vec!["info", "--json", &trace2],
        vec!["info", &xray],
        vec!["info", "--json", &xray],
        vec!["info", &log],
        vec!["report", &trace2],
        vec!["report", "--json", &trace2],
        vec!["report", &perf],
        vec!["report", &rtrace],
        vec!["report", &build],
        vec!["report", &log],
        vec!["report", "-m", &xray_bin, &xray],
        vec!["convert", &trace2, "--to", "chrome", "-o", "-"],
        vec!["convert", &trace2, "--to", "perfetto", "-o", "-"],
        vec!["convert", &trace2, "--to", "otlp", "-o", "-"],
        vec!["convert", &trace2, "--to", "trace2-perf", "-o", "-"],
        vec!["convert", &perf, "--to", "trace2-normal"],
        vec!["convert", &rtrace, "--to", "sp-rtrace", "-o", "-"],
        vec!["convert", &rtrace, "--to", "flamegraph-bytes", "-o", "-"],
        vec!["convert", &build, "--to", "kwinject", "-o", "-"],
        vec!["convert", &recorded, "--to", "chrome", "-o", "-"],
        vec!["convert", &log, "--to", "text", "-o", "-"],
        vec!["convert", &xray, "-m", &xray_bin, "--to", "yaml", "-o", "-"],
        vec![
            "convert", &xray, "-m", &xray_bin, "--to", "perfetto", "-o", "-",
        ],
        vec!["xray", "account", "-m", &xray_map, &xray],
        vec!["xray", "account", "-m", &xray_map, "--json", &xray],
        vec!["xray", "stack", "-m", &xray_map, &xray],
        vec!["xray", "graph", "-m", &xray_map, &xray],
        vec!["xray", "convert", "-m", &xray_map, "-f", "yaml", &xray],
        vec![
            "xray",
            "convert",
            "-m",
            &xray_map,
            "-f",
            "trace_event",
            &xray,
        ],
        vec!["xray", "fdr-dump", &xray],
        vec!["xray", "extract", &xray_bin],
        vec!["xray", "graph-diff", &xray, &xray],
        vec!["rtrace", "postproc", &rtrace],
        vec!["rtrace", "report", &rtrace],
        vec!["posix", "dump", &log],
        vec![
            "sql",
            "SELECT name, start_ns FROM slices ORDER BY start_ns",
            &trace2,
        ],
        vec!["sql", "--schema"],
        vec!["sql", "--format", "json", "SELECT * FROM slices", &trace2],
        vec!["build", "spec", "-o", "-", &build],
        vec!["build", "spec", "--all-sources", "-o", "-", &many],
    ];
    let mut failed = Vec::new();
    for case in &cases {
        let args: Vec<String> = case.iter().map(|s| s.to_string()).collect();
        let open = stderr_when_open(&args);
        for early in [true, false] {
            let (code, err) = run_closed(&args, early);
            if code != Some(0) || !(err.is_empty() || err == open) {
                failed.push(format!(
                    "tracekit {} ({}): exit {code:?}, stderr {err:?}",
                    case.join(" "),
                    if early {
                        "closed before it started"
                    } else {
                        "closed after the first bytes"
                    }
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
