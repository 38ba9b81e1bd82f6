//! Compiles the C programs in `tests/c/` against `include/trace.h` and the
//! shared library, runs them, and checks the header against the library.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit_posix::api::{self, Wait};
use tracekit_posix::consts::*;
use tracekit_posix::{traced, EventSet, Status, TraceAttr};
use tracekit_posix_c::PosixTraceEventInfo;

fn lib_dir() -> PathBuf {
    // `cargo test` builds the cdylib next to the test binary
    // (target/<profile>/deps) and does not refresh the copy one level up.
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    assert!(
        dir.join("libtracekit_posix_c.so").exists(),
        "libtracekit_posix_c.so not built in {}",
        dir.display()
    );
    dir
}

fn compile(name: &str, out: &Path) -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let include = here.join("../../include");
    let exe = out.join(name);
    let lib = lib_dir();
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
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
        .arg(here.join("tests/c").join(format!("{name}.c")))
        .arg("-I")
        .arg(&include)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ltracekit_posix_c", "-lpthread"])
        .status()
        .expect("run cc");
    assert!(status.success(), "compiling {name}.c failed");
    exe
}

/// A command for a compiled program that loads the freshly built library
/// (cargo's LD_LIBRARY_PATH may name a stale copy first).
fn program(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", lib_dir());
    c
}

fn run(exe: &Path, args: &[&str]) -> String {
    let out = program(exe).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{} failed: {}\n{}",
        exe.display(),
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn header_matches_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&compile("abi", dir.path()), &[]);
    let got: HashMap<&str, i64> = out
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    let ei = std::mem::offset_of!(PosixTraceEventInfo, posix_timestamp);
    let expect: Vec<(&str, i64)> = vec![
        (
            "sizeof(trace_attr_t)",
            tracekit_posix::attr::TRACE_ATTR_T_SIZE as i64,
        ),
        ("_Alignof(trace_attr_t)", 8),
        (
            "sizeof(trace_event_set_t)",
            std::mem::size_of::<EventSet>() as i64,
        ),
        ("sizeof(trace_id_t)", 8),
        ("sizeof(trace_event_id_t)", 4),
        (
            "sizeof(struct posix_trace_status_info)",
            std::mem::size_of::<Status>() as i64,
        ),
        (
            "offsetof(struct posix_trace_status_info, posix_log_full_status)",
            24,
        ),
        (
            "sizeof(struct posix_trace_event_info)",
            std::mem::size_of::<PosixTraceEventInfo>() as i64,
        ),
        (
            "offsetof(struct posix_trace_event_info, posix_pid)",
            std::mem::offset_of!(PosixTraceEventInfo, posix_pid) as i64,
        ),
        (
            "offsetof(struct posix_trace_event_info, posix_prog_address)",
            std::mem::offset_of!(PosixTraceEventInfo, posix_prog_address) as i64,
        ),
        (
            "offsetof(struct posix_trace_event_info, posix_truncation_status)",
            std::mem::offset_of!(PosixTraceEventInfo, posix_truncation_status) as i64,
        ),
        (
            "offsetof(struct posix_trace_event_info, posix_timestamp)",
            ei as i64,
        ),
        (
            "offsetof(struct posix_trace_event_info, posix_thread_id)",
            std::mem::offset_of!(PosixTraceEventInfo, posix_thread_id) as i64,
        ),
        ("_POSIX_TRACE", 200809),
        ("_POSIX_TRACE_EVENT_FILTER", 200809),
        ("_POSIX_TRACE_LOG", 200809),
        ("_POSIX_TRACE_INHERIT", 200809),
        ("TRACE_EVENT_NAME_MAX", TRACE_EVENT_NAME_MAX as i64),
        ("TRACE_NAME_MAX", TRACE_NAME_MAX as i64),
        ("TRACE_SYS_MAX", TRACE_SYS_MAX as i64),
        ("TRACE_USER_EVENT_MAX", TRACE_USER_EVENT_MAX as i64),
        ("POSIX_TRACE_SUSPENDED", POSIX_TRACE_SUSPENDED as i64),
        ("POSIX_TRACE_RUNNING", POSIX_TRACE_RUNNING as i64),
        ("POSIX_TRACE_NOT_FULL", POSIX_TRACE_NOT_FULL as i64),
        ("POSIX_TRACE_FULL", POSIX_TRACE_FULL as i64),
        ("POSIX_TRACE_NO_OVERRUN", POSIX_TRACE_NO_OVERRUN as i64),
        ("POSIX_TRACE_OVERRUN", POSIX_TRACE_OVERRUN as i64),
        ("POSIX_TRACE_NOT_FLUSHING", POSIX_TRACE_NOT_FLUSHING as i64),
        ("POSIX_TRACE_FLUSHING", POSIX_TRACE_FLUSHING as i64),
        ("POSIX_TRACE_LOOP", POSIX_TRACE_LOOP as i64),
        ("POSIX_TRACE_UNTIL_FULL", POSIX_TRACE_UNTIL_FULL as i64),
        ("POSIX_TRACE_FLUSH", POSIX_TRACE_FLUSH as i64),
        ("POSIX_TRACE_APPEND", POSIX_TRACE_APPEND as i64),
        (
            "POSIX_TRACE_CLOSE_FOR_CHILD",
            POSIX_TRACE_CLOSE_FOR_CHILD as i64,
        ),
        ("POSIX_TRACE_INHERITED", POSIX_TRACE_INHERITED as i64),
        (
            "POSIX_TRACE_NOT_TRUNCATED",
            POSIX_TRACE_NOT_TRUNCATED as i64,
        ),
        (
            "POSIX_TRACE_TRUNCATED_RECORD",
            POSIX_TRACE_TRUNCATED_RECORD as i64,
        ),
        (
            "POSIX_TRACE_TRUNCATED_READ",
            POSIX_TRACE_TRUNCATED_READ as i64,
        ),
        ("POSIX_TRACE_WOPID_EVENTS", POSIX_TRACE_WOPID_EVENTS as i64),
        (
            "POSIX_TRACE_SYSTEM_EVENTS",
            POSIX_TRACE_SYSTEM_EVENTS as i64,
        ),
        ("POSIX_TRACE_ALL_EVENTS", POSIX_TRACE_ALL_EVENTS as i64),
        ("POSIX_TRACE_SET_EVENTSET", POSIX_TRACE_SET_EVENTSET as i64),
        ("POSIX_TRACE_ADD_EVENTSET", POSIX_TRACE_ADD_EVENTSET as i64),
        ("POSIX_TRACE_SUB_EVENTSET", POSIX_TRACE_SUB_EVENTSET as i64),
        ("POSIX_TRACE_ERROR", POSIX_TRACE_ERROR as i64),
        ("POSIX_TRACE_START", POSIX_TRACE_START as i64),
        ("POSIX_TRACE_STOP", POSIX_TRACE_STOP as i64),
        ("POSIX_TRACE_OVERFLOW", POSIX_TRACE_OVERFLOW as i64),
        ("POSIX_TRACE_RESUME", POSIX_TRACE_RESUME as i64),
        ("POSIX_TRACE_FILTER", POSIX_TRACE_FILTER as i64),
        ("POSIX_TRACE_FLUSH_START", POSIX_TRACE_FLUSH_START as i64),
        ("POSIX_TRACE_FLUSH_STOP", POSIX_TRACE_FLUSH_STOP as i64),
        (
            "POSIX_TRACE_UNNAMED_USEREVENT",
            POSIX_TRACE_UNNAMED_USEREVENT as i64,
        ),
        (
            "POSIX_TRACE_UNNAMED_USER_EVENT",
            POSIX_TRACE_UNNAMED_USEREVENT as i64,
        ),
    ];
    for (k, v) in &expect {
        assert_eq!(got.get(k), Some(v), "{k}");
    }
    assert_eq!(got.len(), expect.len(), "every printed value is checked");
    assert!(std::mem::size_of::<TraceAttr>() <= tracekit_posix::attr::TRACE_ATTR_T_SIZE);
}

#[test]
fn single_process_program() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(&compile("single", dir.path()), &[]).contains("single ok"));
}

#[test]
fn threaded_program() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(&compile("threads", dir.path()), &[]).contains("threads ok"));
}

#[test]
fn fork_program() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(&compile("fork", dir.path()), &[]).contains("fork ok"));
}

/// A log written by a controller thread, a forked child sharing its lane
/// and an exec'd child, all at once (1 M events): every event, each
/// writer's in order, and no record earlier than the one before it. Before
/// the claim published its holder ahead of the odd sequence word, a writer
/// could take a lane-mate's claim for its own (the holder it read was the
/// previous lap's: itself), stamp without waiting and land before it (a
/// few to 14 out-of-order records per run here, 9 ns to 20 ms back).
#[test]
fn fork_and_exec_writers_log_in_time_order() {
    const PER_WRITER: u32 = 333_334;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("order.trace");
    let exe = compile("order_fork_exec", dir.path());
    let out = run(&exe, &[log.to_str().unwrap(), &PER_WRITER.to_string()]);
    assert!(out.contains("order_fork_exec ok"), "{out}");
    let mut r = tracekit_posix::LogReader::open_path(&log).unwrap();
    assert_eq!(r.meta.events_lost_stream, 0);
    let id = r
        .types
        .iter()
        .find(|(_, n)| n == b"order")
        .map(|(i, _)| *i)
        .unwrap();
    let (mut prev, mut records, mut back) = (i64::MIN, 0u64, Vec::new());
    let mut next = [0u32; 3];
    let mut pids = [0i32; 3];
    while let Some(e) = r.next_event() {
        let e = e.unwrap();
        let ts = e.info.timestamp_ns;
        if ts < prev && back.len() < 10 {
            back.push((records, e.info.pid, prev - ts));
        }
        prev = ts;
        records += 1;
        if e.info.event_id != id {
            continue;
        }
        let tag = u32::from_ne_bytes(e.data[..4].try_into().unwrap()) as usize;
        let seq = u32::from_ne_bytes(e.data[4..8].try_into().unwrap());
        assert_eq!(seq, next[tag], "writer {tag}: event {seq} out of its order");
        next[tag] += 1;
        pids[tag] = e.info.pid;
    }
    assert!(
        back.is_empty(),
        "records older than the one before (record, pid, ns back): {back:?}"
    );
    assert_eq!(next, [PER_WRITER; 3]);
    // Three processes; the forked child in its parent's lane (see the C file).
    assert!(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2]);
    assert_eq!((pids[1] - pids[0]) % 16, 0);
}

/// `tracekit posix record --inherit` of `outlive` (a parent that exits at
/// once, two children that then write `per` events each): the controller's
/// options, its log, and the children's events in it (per child, in order).
fn record_outlive(
    per: u32,
    stop_at_exit: bool,
) -> (std::process::ExitStatus, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("outlive", dir.path());
    let log = dir.path().join("outlive.trace");
    let mut attr = TraceAttr::default();
    attr.set_inheritance(POSIX_TRACE_INHERITED);
    let mut cmd = program(&exe);
    cmd.arg(per.to_string());
    let rec = tracekit_posix::controller::record(
        &mut cmd,
        tracekit_posix::controller::Options {
            attr,
            log: Some(std::fs::File::create(&log).unwrap()),
            filter: Vec::new(),
            inherit: true,
            stop_at_exit,
        },
        |_, _, _| Ok(()),
    )
    .unwrap();
    (rec.status, log, dir)
}

/// Events of each child of `outlive` in a log, checked to be in order.
fn children_events(log: &Path) -> (u64, tracekit_posix::log::LogMeta) {
    let mut r = tracekit_posix::LogReader::open_path(log).unwrap();
    assert!(r.meta.flags & tracekit_posix::log::FLAG_COMPLETE != 0);
    let id = r
        .types
        .iter()
        .find(|(_, n)| n == b"outlive")
        .map(|(i, _)| *i);
    let mut next = [0u32; 2];
    while let Some(e) = r.next_event() {
        let e = e.unwrap();
        if Some(e.info.event_id) == id && e.data.len() == 8 {
            let k = u32::from_ne_bytes(e.data[..4].try_into().unwrap()) as usize;
            let i = u32::from_ne_bytes(e.data[4..].try_into().unwrap());
            assert_eq!(i, next[k], "child {k}: event {i} out of its order");
            next[k] += 1;
        }
    }
    (next.iter().map(|&n| n as u64).sum(), r.meta)
}

/// Children that outlive the traced program keep the stream open: the
/// recording ends when the last process that inherited it has exited, so
/// the log holds all their events (before, it was shut down when the
/// program exited: 0 of them, "0 lost").
#[test]
fn record_inherit_waits_for_children_that_outlive_the_program() {
    const PER: u32 = 100_000;
    let (status, log, _dir) = record_outlive(PER, false);
    assert_eq!(status.code(), Some(3));
    let (children, meta) = children_events(&log);
    assert_eq!(children, 2 * PER as u64);
    assert_eq!(
        (meta.events_lost_stream, meta.events_after_shutdown),
        (0, 0)
    );
}

/// With `stop_at_exit` the recording ends with the program, and every
/// event its children write after the shutdown is counted in the log's
/// header (written by the reaper once they are gone): logged + counted =
/// all of them.
#[test]
fn record_inherit_stop_at_exit_counts_what_is_written_after_shutdown() {
    const PER: u32 = 100_000;
    let (status, log, _dir) = record_outlive(PER, true);
    assert_eq!(status.code(), Some(3));
    // The children go on after `record` returned; the reaper writes the
    // count whenever it changes and last when they are gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let (children, meta) = children_events(&log);
        assert_eq!(meta.events_lost_stream, 0);
        let accounted = children + meta.events_after_shutdown;
        assert!(
            accounted <= 2 * PER as u64,
            "{children} + {}",
            meta.events_after_shutdown
        );
        if accounted == 2 * PER as u64 {
            assert!(meta.events_after_shutdown > 0);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{children} logged + {} after shutdown, of {}",
            meta.events_after_shutdown,
            2 * PER
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn log_written_by_one_process_and_read_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("test.trace");
    let log_s = log.to_str().unwrap();
    assert!(run(&compile("log_write", dir.path()), &[log_s]).contains("log_write ok"));
    assert!(run(&compile("log_read", dir.path()), &[log_s]).contains("log_read ok"));
    // And the Rust reader agrees.
    let mut r = tracekit_posix::LogReader::open_path(&log).unwrap();
    let mut n = 0;
    while let Some(e) = r.next_event() {
        e.unwrap();
        n += 1;
    }
    assert!(n >= 1000);
}

#[test]
fn controller_in_another_process_receives_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let child = compile("traced_child", dir.path());
    let trid = api::create(api::POSIX_TRACE_ALLPROC, None, None).unwrap();
    let path = api::stream_path(trid).unwrap();
    api::start(trid).unwrap();
    let out = program(&child)
        .arg("500")
        .env(traced::STREAM_ENV, &path)
        .output()
        .unwrap();
    assert!(out.status.success());
    // A process that is not told the name is not traced.
    let out2 = program(&child).arg("7").output().unwrap();
    assert!(out2.status.success());
    let mut buf = [0u8; 16];
    let mut seq = Vec::new();
    let mut pids = std::collections::BTreeSet::new();
    while let Some(e) = api::getnext_event(trid, &mut buf, Wait::Never).unwrap() {
        if e.info.event_id >= USER_EVENT_FIRST {
            assert_eq!(
                api::eventid_get_name(trid, e.info.event_id).unwrap(),
                b"child-event"
            );
            seq.push(i32::from_ne_bytes(buf[..4].try_into().unwrap()));
            pids.insert(e.info.pid);
        }
    }
    assert_eq!(seq, (0..500).collect::<Vec<_>>());
    assert_eq!(pids.len(), 1);
    api::shutdown(trid).unwrap();
    assert!(!path.exists(), "shutdown removes the stream file");
}

#[test]
fn process_exit_shuts_the_stream_down_and_completes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("exit.trace");
    run(
        &compile("exit_no_shutdown", dir.path()),
        &[log.to_str().unwrap()],
    );
    let mut r = tracekit_posix::LogReader::open_path(&log).unwrap();
    assert_eq!(r.meta.flags & tracekit_posix::log::FLAG_COMPLETE, 1);
    let mut user = 0;
    while let Some(e) = r.next_event() {
        if e.unwrap().info.event_id >= USER_EVENT_FIRST {
            user += 1;
        }
    }
    assert_eq!(user, 100);
}

#[test]
fn create_for_another_running_process() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("late_traced", dir.path());
    let mut child = program(&exe)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let trid = api::create(child.id() as i32, None, None).unwrap();
    api::start(trid).unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    let mut buf = [0u8; 8];
    let mut n = 0;
    while let Some(e) = api::getnext_event(trid, &mut buf, Wait::Never).unwrap() {
        if e.info.event_id >= USER_EVENT_FIRST {
            assert_eq!(e.info.pid, child.id() as i32);
            n += 1;
        }
    }
    assert_eq!(n, 10);
    api::shutdown(trid).unwrap();
}

/// Waits (bounded, not timed) for the keeper of a controller that is gone
/// to complete `log`, then checks it holds the 100 events in order.
fn check_log_completed_by_keeper(log: &Path) {
    let mut complete = false;
    for _ in 0..1000 {
        if let Ok(r) = tracekit_posix::LogReader::open_path(log) {
            if r.meta.flags & tracekit_posix::log::FLAG_COMPLETE != 0 {
                complete = true;
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(complete, "the log was never marked complete");
    let mut r = tracekit_posix::LogReader::open_path(log).unwrap();
    let mut payloads = Vec::new();
    let mut last_id = 0;
    while let Some(e) = r.next_event() {
        let e = e.unwrap();
        if e.info.event_id >= USER_EVENT_FIRST {
            assert_eq!(r_name(log, e.info.event_id), b"before-exec");
            payloads.push(i32::from_ne_bytes(e.data[..4].try_into().unwrap()));
        }
        last_id = e.info.event_id;
    }
    assert_eq!(payloads, (0..100).collect::<Vec<_>>());
    // The shutdown's flush ends the log.
    assert_eq!(last_id, POSIX_TRACE_FLUSH_STOP);
}

fn r_name(log: &Path, id: u32) -> Vec<u8> {
    let r = tracekit_posix::LogReader::open_path(log).unwrap();
    r.type_name(id).unwrap_or_default().to_vec()
}

/// The named streams a controller with pid `pid` created, left behind.
fn shm_files_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(traced::SHM_PREFIX) && n.contains(&format!(".{pid}.")))
        .collect()
}

fn wait_for_no_shm_files(pid: u32) {
    for _ in 0..1000 {
        if shm_files_of(pid).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("left behind in /dev/shm: {:?}", shm_files_of(pid));
}

#[test]
fn exec_of_the_controller_shuts_its_streams_down() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("controller_gone", dir.path());
    let log = dir.path().join("exec.trace");
    let child = program(&exe)
        .args([log.to_str().unwrap(), "exec"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_log_completed_by_keeper(&log);
    wait_for_no_shm_files(pid);
}

#[test]
fn a_killed_controller_leaves_a_complete_log_and_no_stream_file() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("controller_gone", dir.path());
    let log = dir.path().join("kill.trace");
    let mut child = program(&exe)
        .args([log.to_str().unwrap(), "kill"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    assert!(!shm_files_of(pid).is_empty(), "the named stream exists");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    check_log_completed_by_keeper(&log);
    wait_for_no_shm_files(pid);
}
