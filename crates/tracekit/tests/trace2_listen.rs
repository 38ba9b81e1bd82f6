//! `tracekit trace2 listen` driven by real git (2.47 here; any git with
//! af_unix trace2 targets works).
//!
//! One git process cannot write the same format to two targets, so every
//! run sends one format to the listener and another format to a git
//! *directory target* in the same process: the directory target's file
//! names are the ground truth for the session names, and (with
//! `GIT_TRACE2_EVENT_NESTING=100`) EVENT and PERF report the same event
//! sequence per process, NORMAL the same minus regions/data/threads.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Listener, Scratch, CONCURRENT};

/// The git commands run at once: a mix with children, aliases and
/// failures.
const COMMANDS: [&[&str]; 6] = [
    &["status", "--short"],
    &["log", "--oneline", "-1"],
    &["rev-parse", "HEAD"],
    &["-c", "alias.st=status", "st"], // a child git process
    &["checkout", "no-such-branch"],  // fails: error event
    &["version"],
];

/// Every file in `dir`, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

fn text_lines(bytes: &[u8]) -> Vec<&str> {
    std::str::from_utf8(bytes).unwrap().lines().collect()
}

/// `HH:MM:SS.uuuuuu ` starts every non-continuation PERF/NORMAL line.
fn starts_with_time(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 16 && b[2] == b':' && b[5] == b':' && b[8] == b'.' && b[15] == b' '
}

/// Event names of an EVENT file, checking every line carries `sid_last`.
fn event_names(bytes: &[u8], sid_last: &str) -> Vec<String> {
    text_lines(bytes)
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let sid = value["sid"].as_str().unwrap();
            assert!(sid.ends_with(sid_last), "{sid} in file {sid_last}");
            value["event"].as_str().unwrap().to_string()
        })
        .collect()
}

fn perf_names(bytes: &[u8]) -> Vec<String> {
    text_lines(bytes)
        .into_iter()
        .filter(|l| starts_with_time(l))
        .map(|l| l.split(" | ").nth(3).unwrap().trim().to_string())
        .collect()
}

/// NORMAL's words for the events, mapped to the EVENT/PERF names.
fn normal_names(bytes: &[u8]) -> Vec<String> {
    text_lines(bytes)
        .into_iter()
        .filter(|l| starts_with_time(l))
        .map(|l| {
            let word = l.split_whitespace().nth(2).unwrap();
            let word = word.split('[').next().unwrap();
            if word == "worktree" { "def_repo" } else { word }.to_string()
        })
        .collect()
}

fn without_normal_ignored(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|n| {
            !matches!(
                n.as_str(),
                "region_enter"
                    | "region_leave"
                    | "data"
                    | "data_json"
                    | "thread_start"
                    | "thread_exit"
            )
        })
        .cloned()
        .collect()
}

/// The `P<pid>` tail shared by a SID and a PERF/NORMAL connection file.
fn pid_part(name: &str) -> &str {
    &name[name.rfind("-P").unwrap()..]
}

fn summary(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.trim()).unwrap()
}

fn total_lines(dirs: &[PathBuf]) -> u64 {
    dirs.iter()
        .flat_map(|d| files(d).into_values())
        .map(|bytes| bytes.iter().filter(|&&b| b == b'\n').count() as u64)
        .sum()
}

#[test]
fn fifty_concurrent_gits_over_stream_match_the_directory_target() {
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    std::fs::create_dir(s.path("perf-dir")).unwrap();
    let listener = Listener::start(&[
        "--socket",
        sock.to_str().unwrap(),
        "--dir",
        out.to_str().unwrap(),
        "--json",
    ]);
    s.run_concurrent_gits(
        &COMMANDS,
        &[
            (
                "GIT_TRACE2_EVENT",
                format!("af_unix:stream:{}", sock.display()),
            ),
            // The plain form: git tries SOCK_STREAM first.
            ("GIT_TRACE2", format!("af_unix:{}", sock.display())),
            ("GIT_TRACE2_PERF", s.path("perf-dir").display().to_string()),
        ],
    );
    let (stdout, stderr) = listener.stop(libc::SIGTERM);
    assert!(!sock.exists(), "socket file removed");

    let reference = files(&s.path("perf-dir"));
    let events = files(&out.join("event"));
    // Same sessions, named the same as git's own directory target names them.
    assert_eq!(
        events.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>()
    );
    // 50 processes plus the alias children.
    assert!(events.len() > CONCURRENT, "{} sessions", events.len());
    let mut expected_normal = BTreeMap::new();
    for (name, perf) in &reference {
        let names = perf_names(perf);
        assert_eq!(event_names(&events[name], name), names, "{name}");
        assert_eq!(names.first().map(String::as_str), Some("version"));
        expected_normal.insert(pid_part(name).to_string(), without_normal_ignored(&names));
    }
    // NORMAL came over the same socket, one file per connection, named
    // with the process's pid.
    let normal: BTreeMap<String, Vec<String>> = files(&out.join("normal"))
        .iter()
        .map(|(name, bytes)| (pid_part(name).to_string(), normal_names(bytes)))
        .collect();
    assert_eq!(normal, expected_normal);

    let summary = summary(&stdout);
    assert_eq!(summary["partial_lines"], 0, "{stderr}");
    assert_eq!(summary["lines_lost"], 0);
    assert_eq!(summary["connections"], 2 * events.len() as u64);
    assert_eq!(summary["sessions"], 2 * events.len() as u64);
    assert_eq!(
        summary["lines"],
        total_lines(&[out.join("event"), out.join("normal")])
    );
    assert!(stderr.contains(" 0 partial lines"), "{stderr}");
}

#[test]
fn fifty_concurrent_gits_over_dgram_match_the_directory_target() {
    let s = Scratch::new();
    let stream = s.path("t2.sock");
    let dgram = s.path("t2.dgram");
    let out = s.path("out");
    std::fs::create_dir(s.path("perf-dir")).unwrap();
    let listener = Listener::start(&[
        "--socket",
        stream.to_str().unwrap(),
        "--dgram-socket",
        dgram.to_str().unwrap(),
        "--dir",
        out.to_str().unwrap(),
        "--json",
    ]);
    s.run_concurrent_gits(
        &COMMANDS,
        &[
            (
                "GIT_TRACE2_EVENT",
                format!("af_unix:dgram:{}", dgram.display()),
            ),
            // The plain form reaches a datagram socket too: git's STREAM
            // connect fails with EPROTOTYPE and it falls back to DGRAM.
            ("GIT_TRACE2", format!("af_unix:{}", dgram.display())),
            ("GIT_TRACE2_PERF", s.path("perf-dir").display().to_string()),
        ],
    );
    let (stdout, _) = listener.stop(libc::SIGINT);
    assert!(!dgram.exists() && !stream.exists(), "socket files removed");

    let reference = files(&s.path("perf-dir"));
    let events = files(&out.join("event"));
    assert_eq!(
        events.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>()
    );
    let mut normal_events = 0;
    for (name, perf) in &reference {
        let names = perf_names(perf);
        assert_eq!(event_names(&events[name], name), names, "{name}");
        normal_events += without_normal_ignored(&names).len();
    }
    // NORMAL datagrams cannot be attributed: one file, every line there.
    let normal = files(&out.join("normal"));
    assert_eq!(normal.keys().collect::<Vec<_>>(), ["dgram"]);
    assert_eq!(normal_names(&normal["dgram"]).len(), normal_events);

    let summary = summary(&stdout);
    assert_eq!(summary["connections"], 0);
    assert_eq!(summary["partial_lines"], 0);
    assert_eq!(summary["lines_lost"], 0);
    assert_eq!(summary["sessions"], events.len() as u64 + 1);
    assert_eq!(
        summary["lines"],
        total_lines(&[out.join("event"), out.join("normal")])
    );
    // One datagram per event; a multi-line NORMAL message (hints after an
    // error) is one datagram holding several lines.
    let event_lines = total_lines(&[out.join("event")]);
    assert_eq!(summary["datagrams"], event_lines + normal_events as u64);
}

#[test]
fn perf_over_stream_is_one_file_per_process_named_by_pid() {
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    std::fs::create_dir(s.path("event-dir")).unwrap();
    let listener = Listener::start(&[
        "--socket",
        sock.to_str().unwrap(),
        "--dir",
        out.to_str().unwrap(),
    ]);
    s.run_concurrent_gits(
        &COMMANDS,
        &[
            ("GIT_TRACE2_PERF", format!("af_unix:{}", sock.display())),
            (
                "GIT_TRACE2_EVENT",
                s.path("event-dir").display().to_string(),
            ),
        ],
    );
    listener.stop(libc::SIGTERM);

    let expected: BTreeMap<String, Vec<String>> = files(&s.path("event-dir"))
        .iter()
        .map(|(name, bytes)| (pid_part(name).to_string(), event_names(bytes, name)))
        .collect();
    let perf = files(&out.join("perf"));
    let got: BTreeMap<String, Vec<String>> = perf
        .iter()
        .map(|(name, bytes)| (pid_part(name).to_string(), perf_names(bytes)))
        .collect();
    assert_eq!(perf.len(), expected.len(), "one file per process");
    assert_eq!(got, expected);
    assert!(!out.join("event").exists() && !out.join("normal").exists());
}

#[test]
fn clients_that_vanish_mid_line_or_stay_connected_are_written_and_counted() {
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    let listener = Listener::start(&[
        "--socket",
        sock.to_str().unwrap(),
        "--dir",
        out.to_str().unwrap(),
        "--json",
        "--grace",
        "0",
    ]);
    let sid = "20261121T000000.000001Z-H0a7c9cdf-P00000001";
    let whole = format!("{{\"event\":\"version\",\"sid\":\"{sid}\",\"evt\":\"4\"}}\n");
    let cut = format!("{{\"event\":\"start\",\"sid\":\"{sid}\",\"argv\":[\"gi");
    let mut vanishing = UnixStream::connect(&sock).unwrap();
    // The line arrives in pieces, the last one never completes.
    for piece in whole.as_bytes().chunks(5) {
        vanishing.write_all(piece).unwrap();
    }
    vanishing.write_all(cut.as_bytes()).unwrap();
    drop(vanishing);
    let sid2 = "20261121T000000.000002Z-H0a7c9cdf-P00000002";
    let mut staying = UnixStream::connect(&sock).unwrap();
    staying
        .write_all(format!("{{\"event\":\"version\",\"sid\":\"{sid2}\"}}\n{{\"ev").as_bytes())
        .unwrap();
    // `staying` is still connected when the listener is told to stop.
    let (stdout, stderr) = listener.stop(libc::SIGINT);
    drop(staying);

    let events = files(&out.join("event"));
    assert_eq!(events[sid], format!("{whole}{cut}\n").as_bytes());
    assert_eq!(
        events[sid2],
        format!("{{\"event\":\"version\",\"sid\":\"{sid2}\"}}\n{{\"ev\n").as_bytes()
    );
    let summary = summary(&stdout);
    assert_eq!(summary["partial_lines"], 2, "{stderr}");
    assert_eq!(summary["lines"], 4);
    assert_eq!(summary["lines_without_sid"], 1);
    assert!(stderr.contains("2 partial lines"), "{stderr}");
    assert!(stderr.contains("cut short"), "{stderr}");
}

#[test]
fn a_socket_path_that_is_a_regular_file_is_refused() {
    let s = Scratch::new();
    let file = s.path("not-a-socket");
    std::fs::write(&file, "data").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(["trace2", "listen", "--socket"])
        .arg(&file)
        .arg("--dir")
        .arg(s.path("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a socket"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), b"data");
}

#[test]
fn bad_durations_and_compression_are_usage_errors() {
    let s = Scratch::new();
    for args in [
        &["--grace=-1"][..],
        &["--grace", "nan"],
        &["--settle", "1e400"],
        &["--session-timeout", "soon"],
        &["--otlp-compression", "zstd"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_tracekit"))
            .args(["trace2", "listen", "--socket"])
            .arg(s.path("t2.sock"))
            .arg("--dir")
            .arg(s.path("out"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(args[0].trim_end_matches("=-1")), "{stderr}");
        assert!(!s.path("t2.sock").exists(), "{args:?}: nothing bound");
    }
}

#[test]
fn help_teaches_the_git_side() {
    let output = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .args(["trace2", "listen", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "GIT_TRACE2_EVENT=af_unix:stream:",
        "af_unix:dgram:",
        "OUT/event/<SID>",
        "cannot be attributed",
    ] {
        assert!(help.contains(needle), "{needle} missing from --help");
    }
}

#[test]
fn a_low_file_descriptor_limit_delays_clients_but_loses_nothing() {
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    // About a dozen descriptors are the listener's own; the rest allow a
    // handful of connections (a socket and a file each) at a time.
    let listener = Listener::start_with_fd_limit(
        &[
            "--socket",
            sock.to_str().unwrap(),
            "--dir",
            out.to_str().unwrap(),
            "--json",
        ],
        24,
    );
    const CLIENTS: usize = 40;
    let clients: Vec<UnixStream> = (0..CLIENTS)
        .map(|n| {
            let mut client = UnixStream::connect(&sock).unwrap();
            let line = format!(
                "{{\"event\":\"version\",\"sid\":\"20261121T000000.000000Z-H0a7c9cdf-P{n:08x}\"}}\n"
            );
            client.write_all(line.as_bytes()).unwrap();
            client
        })
        .collect();
    drop(clients);
    let (stdout, stderr) = listener.stop(libc::SIGTERM);
    let summary = summary(&stdout);
    assert_eq!(files(&out.join("event")).len(), CLIENTS, "{stderr}");
    assert_eq!(summary["lines"], CLIENTS as u64);
    assert_eq!(summary["connections"], CLIENTS as u64);
    // The receiver caps its open connections below the limit; the others
    // waited in the listen queue.
    assert_eq!(summary["warnings_total"], 0, "{stderr}");
}
