//! OTLP output against a collector built on the official OpenTelemetry
//! protobuf definitions: `tests/otlp_collector.py` (the
//! `opentelemetry-proto` package on PyPI) accepts OTLP/HTTP, decodes every
//! request and writes the spans as JSON lines, which these tests check
//! against the input: the EVENT lines real `git` processes wrote (the
//! receiver's own `--dir` files, lossless and checked against git's
//! directory target by `trace2_listen.rs`), or the other dialects' Chrome
//! conversion.
//!
//! Without the Python package the tests say so and pass, unless `CI` or
//! `TRACEKIT_REQUIRE_OTLP` is set, where they fail
//! (`python3 -m pip install opentelemetry-proto`).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Listener, Scratch, CONCURRENT};
use serde_json::Value;
use tracekit_otlp::ids;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn collector_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_collector.py")
}

fn otlp_proto_available() -> bool {
    common::python_module(
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        "opentelemetry-proto",
    )
}

/// The test collector, restartable on the same port.
struct Collector {
    dir: PathBuf,
    child: Option<Child>,
    port: u16,
}

impl Collector {
    fn start(dir: &Path, fail_first: u32) -> Collector {
        let mut c = Collector {
            dir: dir.to_path_buf(),
            child: None,
            port: 0,
        };
        c.spawn(fail_first);
        c
    }

    fn spawn(&mut self, fail_first: u32) {
        let port_file = self.dir.join("port");
        let _ = std::fs::remove_file(&port_file);
        let child = Command::new("python3")
            .arg(collector_script())
            .arg("serve")
            .arg(&port_file)
            .arg(self.dir.join("spans.jsonl"))
            .args(["--port", &self.port.to_string()])
            .args(["--fail-first", &fail_first.to_string()])
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3");
        let started = Instant::now();
        while !port_file.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "collector did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.port = std::fs::read_to_string(&port_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        self.child = Some(child);
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kills it (an outage: connections are refused from now on).
    fn kill(&mut self) -> String {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        err
    }

    fn spans(&self) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(self.dir.join("spans.jsonl")) else {
            return Vec::new();
        };
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Scratch {
    /// CONCURRENT git commands at once, traced to `sock`: a mix with
    /// children (an alias), threads (grep), errors and a URL with
    /// credentials.
    fn flood(&self, sock: &Path) {
        let commands: [&[&str]; 7] = [
            &["status", "--short"],
            &["log", "--oneline", "-1"],
            &["rev-parse", "HEAD"],
            &["-c", "alias.st=status", "st"],
            &["checkout", "no-such-branch"],
            &["grep", "--threads=2", "-e", "a"],
            &["ls-remote", "https://bob:s3cret@127.0.0.1:9/x.git"],
        ];
        let target = format!("af_unix:stream:{}", sock.display());
        self.run_concurrent_gits(&commands, &[("GIT_TRACE2_EVENT", target)]);
    }
}

/// What the EVENT lines of one process say it should become.
#[derive(Debug, Default)]
struct Expected {
    sid: String,
    argv: Vec<String>,
    name: String,
    exit_code: i64,
    start_ns: u64,
    end_ns: u64,
    regions: usize,
    children: usize,
    threads: usize,
    errors: usize,
    data: usize,
}

fn iso_ns(t: &str) -> u64 {
    let u = tracekit_trace2::time::UnixMicros::parse_iso(t.as_bytes()).unwrap();
    u.0 as u64 * 1000
}

/// Expected process spans from the receiver's EVENT files.
fn expected(event_dir: &Path) -> Vec<Expected> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(event_dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut e = Expected {
            exit_code: -1,
            ..Expected::default()
        };
        let (mut verb, mut mode) = (String::new(), String::new());
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            e.sid = v["sid"].as_str().unwrap().to_string();
            let time = v["time"].as_str().map(iso_ns).unwrap_or(0);
            match v["event"].as_str().unwrap() {
                "version" => e.start_ns = time,
                "start" => {
                    e.argv = v["argv"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_string())
                        .collect()
                }
                // The last one counts, as for trace2receiver.
                "cmd_name" => verb = v["name"].as_str().unwrap().into(),
                "cmd_mode" => mode = v["name"].as_str().unwrap().into(),
                "atexit" => {
                    e.exit_code = v["code"].as_i64().unwrap();
                    e.end_ns = time;
                }
                "signal" => {
                    e.exit_code = 128 + v["signo"].as_i64().unwrap();
                    e.end_ns = time;
                }
                "region_enter" => e.regions += 1,
                "child_start" => e.children += 1,
                "thread_start" => e.threads += 1,
                "error" => e.errors += 1,
                "data" | "data_json" => e.data += 1,
                _ => {}
            }
        }
        if e.argv.is_empty() {
            // Still being written (a wait_for_sessions poll read it
            // before its `start` line): counted, not named yet.
            out.push(e);
            continue;
        }
        let exe = Path::new(&e.argv[0])
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        e.name = match verb.as_str() {
            "" => exe,
            "_run_dashed_" => format!("{exe}:{}", e.argv[1]),
            v => format!("{exe}:{v}"),
        };
        if !mode.is_empty() {
            e.name = format!("{}#{mode}", e.name);
        }
        out.push(e);
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Checks the collector's spans against the EVENT files: one trace per
/// session, one process span per process with trace2receiver's ids, name
/// and attributes, as many region/child/thread spans and error/data events
/// as the EVENT lines have, every parent present. Returns the number of
/// sessions.
fn check_against_events(spans: &[Value], event_dir: &Path) -> usize {
    // A request retried after the collector wrote it but before it
    // answered arrives twice (at-least-once): identical copies collapse.
    let mut by_id: BTreeMap<String, &Value> = BTreeMap::new();
    for s in spans {
        let mut key = s["span_id"].as_str().unwrap().to_string();
        key.push_str(s["trace_id"].as_str().unwrap());
        let mut copy = (*s).clone();
        copy["request"] = Value::Null;
        if let Some(prev) = by_id.get(&key) {
            let mut p = (*prev).clone();
            p["request"] = Value::Null;
            assert_eq!(p, copy, "two different spans with one id");
        }
        by_id.insert(key, s);
    }
    let spans: Vec<&Value> = by_id.values().copied().collect();
    let expected = expected(event_dir);
    let sessions: BTreeSet<String> = expected
        .iter()
        .map(|e| hex(&ids::trace2_trace_id(e.sid.as_bytes())))
        .collect();
    let traces: BTreeSet<String> = spans
        .iter()
        .map(|s| s["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(traces, sessions, "one trace per session");
    let mut span_ids: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for s in &spans {
        span_ids
            .entry(s["trace_id"].as_str().unwrap())
            .or_default()
            .insert(s["span_id"].as_str().unwrap());
    }
    for s in &spans {
        let parent = s["parent_span_id"].as_str().unwrap();
        if s["kind"] != 2 {
            assert!(
                span_ids[s["trace_id"].as_str().unwrap()].contains(parent),
                "{} without its parent",
                s["name"]
            );
        }
    }
    for e in &expected {
        let of_process: Vec<&&Value> = spans
            .iter()
            .filter(|s| s["resource"]["trace2.cmd.sid"] == e.sid.as_str())
            .collect();
        let procs: Vec<&&&Value> = of_process.iter().filter(|s| s["kind"] == 2).collect();
        assert_eq!(procs.len(), 1, "{}: one process span", e.sid);
        let p = procs[0];
        let (own, parent) = ids::trace2_process_ids(e.sid.as_bytes());
        assert_eq!(p["span_id"], hex(&own));
        assert_eq!(
            p["parent_span_id"],
            parent.map(|x| hex(&x)).unwrap_or_default()
        );
        assert_eq!(p["name"], e.name.as_str(), "{}", e.sid);
        assert_eq!(p["resource"]["service.name"], e.name.as_str());
        let a = &p["attributes"];
        assert_eq!(a["trace2.span.type"], "process");
        assert_eq!(a["trace2.cmd.exit_code"], e.exit_code.to_string());
        let argv: Vec<String> =
            serde_json::from_str(a["trace2.cmd.argv"].as_str().unwrap()).unwrap();
        let redacted: Vec<String> = e
            .argv
            .iter()
            .map(|x| x.replace("bob:<REDACTED>@", "<REDACTED>@"))
            .collect();
        assert_eq!(argv, redacted, "{}", e.sid);
        assert_eq!(p["start"], e.start_ns, "{}", e.sid);
        assert_eq!(p["end"], e.end_ns, "{}", e.sid);
        let typed = |t: &str| {
            of_process
                .iter()
                .filter(|s| s["attributes"]["trace2.span.type"] == t)
                .count()
        };
        assert_eq!(typed("region"), e.regions, "{} regions", e.sid);
        assert_eq!(typed("child"), e.children, "{} children", e.sid);
        assert_eq!(typed("thread"), e.threads, "{} threads", e.sid);
        let events = |name: &str| {
            of_process
                .iter()
                .flat_map(|s| s["events"].as_array().unwrap())
                .filter(|ev| ev[0] == name)
                .count()
        };
        assert_eq!(events("error"), e.errors, "{} errors", e.sid);
        assert_eq!(
            events("data") + events("data_json"),
            e.data,
            "{} data",
            e.sid
        );
    }
    // Nothing sent carries the password.
    for s in &spans {
        assert!(!s.to_string().contains("s3cret"), "{s}");
    }
    sessions.len()
}

/// Waits until the collector holds `want` traces.
fn wait_for_traces(c: &Collector, want: usize, limit: Duration) {
    let started = Instant::now();
    loop {
        let traces: BTreeSet<String> = c
            .spans()
            .iter()
            .map(|s| s["trace_id"].as_str().unwrap().to_string())
            .collect();
        if traces.len() >= want || started.elapsed() > limit {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (at most 30 s) until the receiver's files hold `want` sessions.
fn wait_for_sessions(event_dir: &Path, want: usize) -> usize {
    let started = Instant::now();
    loop {
        let n = sessions_in(event_dir);
        if n >= want || started.elapsed() > Duration::from_secs(30) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn sessions_in(event_dir: &Path) -> usize {
    expected(event_dir)
        .iter()
        .map(|e| e.sid.split('/').next().unwrap().to_string())
        .collect::<BTreeSet<_>>()
        .len()
}

#[test]
fn a_collector_outage_in_a_fifty_client_flood_loses_no_session() {
    if !otlp_proto_available() {
        return;
    }
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    let spool = s.path("spool");
    std::fs::create_dir(s.path("collector")).unwrap();
    let mut collector = Collector::start(&s.path("collector"), 0);
    let url = collector.url();
    let listener = Listener::start(&[
        "--socket",
        sock.to_str().unwrap(),
        "--dir",
        out.to_str().unwrap(),
        "--otlp-endpoint",
        &url,
        "--spool",
        spool.to_str().unwrap(),
        "--otlp-retry",
        "1",
        "--settle",
        "0.2",
        "--json",
    ]);
    s.flood(&sock);
    let first_wave = wait_for_sessions(&out.join("event"), CONCURRENT);
    wait_for_traces(&collector, first_wave, Duration::from_secs(30));
    let err = collector.kill();
    assert_eq!(err, "", "the collector refused a request");
    // The collector is away for a whole wave.
    s.flood(&sock);
    std::thread::sleep(Duration::from_secs(2));
    let spooled_now = std::fs::read_dir(&spool).unwrap().count();
    assert!(spooled_now > 0, "nothing was spooled during the outage");
    collector.spawn(0);
    s.flood(&sock);
    // Every flood command is one session; the receiver may still be
    // reading the last ones.
    let all = wait_for_sessions(&out.join("event"), 3 * CONCURRENT);
    assert_eq!(all, 3 * CONCURRENT);
    wait_for_traces(&collector, all, Duration::from_secs(60));
    let peak_kb = listener.peak_rss_kb();
    let (summary, stderr) = listener.stop_json();
    let export = &summary["otlp"]["export"];
    let forward = &summary["otlp"]["forward"];
    assert_eq!(forward["sessions"], all as u64, "{stderr}");
    assert_eq!(export["sessions_sent"], all as u64, "{stderr}");
    assert!(export["sessions_spooled"].as_u64().unwrap() > 0, "{stderr}");
    assert_eq!(export["sessions_replayed"], export["sessions_spooled"]);
    assert_eq!(export["sessions_dropped"], 0);
    assert_eq!(export["spool_pending_sessions"], 0);
    assert!(export["outages"].as_u64().unwrap() >= 1);
    assert_eq!(summary["lines_lost"], 0);
    assert_eq!(forward["lines_unparsed"], 0);
    assert!(stderr.contains("sessions sent"), "{stderr}");
    assert_eq!(
        check_against_events(&collector.spans(), &out.join("event")),
        all
    );
    assert_eq!(
        std::fs::read_dir(&spool).unwrap().count(),
        0,
        "spool emptied"
    );
    eprintln!("receiver peak RSS under the flood: {peak_kb} kB");
    assert!(peak_kb < 256 * 1024, "peak RSS {peak_kb} kB");
}

#[test]
fn sigterm_with_the_collector_away_spools_and_the_next_run_replays() {
    if !otlp_proto_available() {
        return;
    }
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    let spool = s.path("spool");
    std::fs::create_dir(s.path("collector")).unwrap();
    // A port nobody listens on: start the collector and kill it.
    let mut collector = Collector::start(&s.path("collector"), 0);
    collector.kill();
    let url = collector.url();
    let args = |dir: &Path| {
        vec![
            "--socket".to_string(),
            sock.display().to_string(),
            "--dir".into(),
            dir.display().to_string(),
            "--otlp-endpoint".into(),
            url.clone(),
            "--spool".into(),
            spool.display().to_string(),
            "--otlp-retry".into(),
            "1".into(),
            "--shutdown-timeout".into(),
            "1".into(),
            "--json".into(),
        ]
    };
    let a = args(&out);
    let listener = Listener::start(&a.iter().map(String::as_str).collect::<Vec<_>>());
    s.flood(&sock);
    let (summary, stderr) = listener.stop_json();
    let n = sessions_in(&out.join("event"));
    let export = &summary["otlp"]["export"];
    assert_eq!(export["sessions_sent"], 0, "{stderr}");
    assert_eq!(export["sessions_spooled"], n as u64, "{stderr}");
    assert_eq!(export["spool_pending_sessions"], n as u64);
    assert_eq!(export["sessions_dropped"], 0);
    assert!(
        stderr.contains(&format!("{n} sessions waiting in the spool")),
        "{stderr}"
    );
    // The collector is back; a new run replays the spool at start.
    collector.spawn(0);
    let started = Instant::now();
    let a = args(&s.path("out2"));
    let listener = Listener::start(&a.iter().map(String::as_str).collect::<Vec<_>>());
    wait_for_traces(&collector, n, Duration::from_secs(30));
    let round_trip = started.elapsed();
    let (summary, stderr) = listener.stop_json();
    let export = &summary["otlp"]["export"];
    assert_eq!(export["sessions_replayed"], n as u64, "{stderr}");
    assert_eq!(export["spool_pending_sessions"], 0);
    assert_eq!(
        check_against_events(&collector.spans(), &out.join("event")),
        n
    );
    eprintln!("spool replay of {n} sessions at start: {round_trip:?}");
}

#[test]
fn busy_collector_answers_are_retried_and_filters_keep_only_some_commands() {
    if !otlp_proto_available() {
        return;
    }
    let s = Scratch::new();
    let sock = s.path("t2.sock");
    let out = s.path("out");
    std::fs::create_dir(s.path("collector")).unwrap();
    // 503 + Retry-After: 1 twice, then accepted.
    let collector = Collector::start(&s.path("collector"), 2);
    // The repository's path (trace2.repo.set carries the worktree) is
    // redacted by pattern.
    let scratch = format!("{}=<scratch>", regex::escape(s.root.to_str().unwrap()));
    let listener = Listener::start(&[
        "--socket",
        sock.to_str().unwrap(),
        "--dir",
        out.to_str().unwrap(),
        "--otlp-endpoint",
        &collector.url(),
        "--no-spool",
        "--keep",
        "status,checkout",
        "--drop",
        "git:checkout#path",
        "--redact",
        "/home/[^/ ]+=/home/<user>",
        "--redact",
        &scratch,
        "--omit-user",
        "--json",
    ]);
    s.flood(&sock);
    let (summary, stderr) = listener.stop_json();
    let export = &summary["otlp"]["export"];
    let forward = &summary["otlp"]["forward"];
    assert!(export["retries"].as_u64().unwrap() >= 2, "{stderr}");
    assert_eq!(export["sessions_dropped"], 0, "{stderr}");
    let spans = collector.spans();
    // Only `git status` sessions, and the alias session whose child is a
    // status? No: the alias session's top-level command is the alias.
    let names: BTreeSet<&str> = spans
        .iter()
        .filter(|s| s["kind"] == 2)
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["git:status"]), "{stderr}");
    let sent = forward["sessions"].as_u64().unwrap();
    assert_eq!(export["sessions_sent"], sent);
    assert!(forward["sessions_filtered"].as_u64().unwrap() > sent);
    for s in &spans {
        assert!(s["resource"].get("user.name").is_none());
        assert!(s["resource"]["host.name"].is_string());
    }
    // The worktree was there, redacted; the path appears nowhere.
    let root = s.root.to_str().unwrap();
    let repo_sets: Vec<&str> = spans
        .iter()
        .filter_map(|s| s["attributes"]["trace2.repo.set"].as_str())
        .collect();
    assert!(!repo_sets.is_empty(), "{stderr}");
    for set in repo_sets {
        assert!(set.contains("<scratch>/repo"), "{set}");
    }
    for span in &spans {
        assert!(!span.to_string().contains(root), "{span}");
    }
}

/// Converts `input` with extra arguments to OTLP and decodes it.
fn convert_to_otlp(input: &str, extra: &[&str]) -> (Vec<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("t.pb");
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .arg("convert")
        .arg(root().join(input))
        .args(["--to", "otlp", "-o"])
        .arg(&pb)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = Command::new("python3")
        .arg(collector_script())
        .arg("decode")
        .arg(&pb)
        .output()
        .unwrap();
    assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stderr));
    let spans = String::from_utf8(d.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (spans, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Slices (B and X events) and instants of the Chrome conversion.
fn chrome_counts(input: &str, extra: &[&str]) -> (usize, usize) {
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .arg("convert")
        .arg(root().join(input))
        .args(["--to", "chrome"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let count = |ph: &[&str]| {
        events
            .iter()
            .filter(|e| ph.contains(&e["ph"].as_str().unwrap_or("")))
            .count()
    };
    (count(&["B", "X"]), count(&["i", "I"]))
}

/// Every span's parent is in its trace; slices and instants match Chrome's.
fn check_model_output(spans: &[Value], input: &str, extra: &[&str]) {
    let ids: BTreeSet<(&str, &str)> = spans
        .iter()
        .map(|s| {
            (
                s["trace_id"].as_str().unwrap(),
                s["span_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids.len(), spans.len(), "{input}: span ids are unique");
    for s in spans {
        let p = s["parent_span_id"].as_str().unwrap();
        if !p.is_empty() && s["resource"]["tracekit.dialect"] != "trace2" {
            assert!(
                ids.contains(&(s["trace_id"].as_str().unwrap(), p)),
                "{input}: {s}"
            );
        }
    }
    let slices = spans
        .iter()
        .filter(|s| s["attributes"].get("process.pid").is_none())
        .filter(|s| s["attributes"].get("thread.id").is_none())
        .filter(|s| s["attributes"].get("tracekit.lane").is_none())
        .count();
    let (chrome_slices, _) = chrome_counts(input, extra);
    assert_eq!(slices, chrome_slices, "{input}: slices");
}

#[test]
fn convert_to_otlp_for_every_dialect() {
    if !otlp_proto_available() {
        return;
    }
    // Trace2: one trace per session, trace2receiver's process ids.
    let input = "tests/corpus/trace2/05-fetch/event.jsonl";
    let (spans, _) = convert_to_otlp(input, &[]);
    check_model_output(&spans, input, &[]);
    let text = std::fs::read_to_string(root().join(input)).unwrap();
    let sids: BTreeSet<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["sid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let traces: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["trace_id"].as_str().unwrap())
        .collect();
    let sessions: BTreeSet<String> = sids
        .iter()
        .map(|s| hex(&ids::trace2_trace_id(s.as_bytes())))
        .collect();
    assert_eq!(traces, sessions.iter().map(String::as_str).collect());
    for sid in &sids {
        let (own, _) = ids::trace2_process_ids(sid.as_bytes());
        assert!(
            spans
                .iter()
                .any(|s| s["span_id"] == hex(&own) && s["kind"] == 2),
            "{sid}: a process track span with trace2receiver's id"
        );
    }
    // A build: an anchored clock, one trace.
    let input = "tests/corpus/buildtrace/recorded/hello-make-j2.trace";
    let (spans, stderr) = convert_to_otlp(input, &[]);
    assert!(!stderr.contains("anchor"), "{stderr}");
    check_model_output(&spans, input, &[]);
    let traces: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(traces.len(), 1, "{input}");
    // Each process of the build is linked to the one that started it.
    let links: usize = spans
        .iter()
        .map(|s| s["links"].as_array().unwrap().len())
        .sum();
    assert_eq!(links, 13);
}

/// 24-maintenance-detach: `maintenance run --auto --detach` forks and the
/// child writes under its parent's SID. The child is a span of its own
/// (before, it got its parent's span id a second time), a child of its
/// parent's process span, in the session's trace.
#[test]
fn convert_to_otlp_gives_a_daemonised_child_a_span_of_its_own() {
    if !otlp_proto_available() {
        return;
    }
    let input = "tests/corpus/trace2/24-maintenance-detach/event.jsonl";
    let (spans, stderr) = convert_to_otlp(input, &[]);
    assert!(stderr.is_empty(), "{stderr}");
    check_model_output(&spans, input, &[]);
    let ids: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let text = std::fs::read_to_string(root().join(input)).unwrap();
    let sids: BTreeSet<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == "cmd_name" && v["name"] == "maintenance")
        .map(|v| v["sid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sids.len(), 3);
    for sid in &sids {
        let (own, _) = ids::trace2_process_ids(sid.as_bytes());
        let trace = hex(&ids::trace2_trace_id(sid.as_bytes()));
        let parent: Vec<&Value> = spans.iter().filter(|s| s["span_id"] == hex(&own)).collect();
        assert_eq!(parent.len(), 1, "{sid}");
        assert_eq!(parent[0]["name"], "git maintenance", "{sid}");
        let forks: Vec<&Value> = spans
            .iter()
            .filter(|s| s["parent_span_id"] == hex(&own) && s["name"] == "git maintenance (fork 1)")
            .collect();
        assert_eq!(forks.len(), 1, "{sid}");
        assert_eq!(forks[0]["trace_id"], trace, "{sid}");
        assert_eq!(parent[0]["trace_id"], trace, "{sid}");
    }
}

#[test]
fn convert_sends_to_an_endpoint_with_gzip() {
    if !otlp_proto_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("collector")).unwrap();
    let collector = Collector::start(&dir.path().join("collector"), 0);
    let input = "tests/corpus/buildtrace/recorded/hello-make-j2.trace";
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .arg("convert")
        .arg(root().join(input))
        .args([
            "--to",
            "otlp",
            "--otlp-endpoint",
            &collector.url(),
            "--spool",
        ])
        .arg(dir.path().join("spool"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("1 sessions sent"), "{stderr}");
    let spans = collector.spans();
    assert!(spans.iter().all(|s| s["gzip"] == true));
    let (file_spans, _) = convert_to_otlp(input, &[]);
    let strip = |v: &[Value]| -> Vec<Value> {
        let mut v: Vec<Value> = v
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s["request"] = Value::Null;
                s["gzip"] = Value::Null;
                s
            })
            .collect();
        v.sort_by_key(|s| s["span_id"].as_str().unwrap().to_string());
        v
    };
    // The same spans, whether written or sent.
    assert_eq!(strip(&spans), strip(&file_spans));
}

#[test]
fn convert_a_posix_trace_log_to_otlp() {
    use std::os::fd::AsRawFd;
    use tracekit_posix::{api, traced};
    if !otlp_proto_available() {
        return;
    }
    // A log written by the engine in this process, two threads.
    // Inside the repository: the input is named relative to it.
    std::fs::create_dir_all(root().join("target")).expect("target dir");
    let dir = tempfile::tempdir_in(root().join("target")).expect("tempdir");
    let path = dir.path().join("t.ptl");
    let f = std::fs::File::create(&path).expect("log file");
    let trid = api::create(0, None, Some(f.as_raw_fd())).expect("create");
    let a = traced::eventid_open(b"otlp-a").expect("event type");
    api::start(trid).expect("start");
    for i in 0u32..10 {
        traced::trace_event(a, format!("a {i}").as_bytes());
    }
    std::thread::spawn(move || traced::trace_event(a, b"other thread"))
        .join()
        .expect("thread");
    api::flush(trid).expect("flush");
    api::shutdown(trid).expect("shutdown");
    let rel = path
        .strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let (spans, stderr) = convert_to_otlp(&rel, &[]);
    assert!(!stderr.contains("anchor"), "{stderr}");
    check_model_output(&spans, &rel, &[]);
    let events: usize = spans
        .iter()
        .map(|s| s["events"].as_array().unwrap().len())
        .sum();
    assert!(events >= 11, "{events} events");
}

#[test]
fn convert_to_otlp_places_a_relative_clock_at_the_mtime_and_says_so() {
    if !otlp_proto_available() {
        return;
    }
    let rel = "tests/corpus/xray/mt/mt.fdr.xray";
    let input = root().join(rel);
    let bin = root().join("tests/corpus/xray/mt/mt");
    let bin = bin.to_str().unwrap();
    let (spans, stderr) = convert_to_otlp(rel, &["-m", bin]);
    assert!(stderr.contains("no wall-clock anchor"), "{stderr}");
    assert!(!spans.is_empty());
    let anchor = spans[0]["resource"]["tracekit.time.anchor"]
        .as_str()
        .unwrap();
    assert!(anchor.contains("modification time"), "{anchor}");
    let mtime = std::fs::metadata(&input)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let first = spans
        .iter()
        .map(|s| s["start"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(
        first.abs_diff(mtime) < 3_600_000_000_000,
        "{first} vs {mtime}"
    );
    check_model_output(&spans, rel, &["-m", bin]);
}

/// The umask of this process (bits it removes from created files).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
        .unwrap_or(0o022)
}

#[test]
fn the_receivers_socket_files_directories_and_spool_are_private() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    // A collector that is away: every session goes to the spool.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let events = std::fs::read(root().join("tests/corpus/trace2/05-fetch/event.jsonl")).unwrap();
    let umask = umask();
    for (file_mode, file, dir) in [(None, 0o600, 0o700), (Some("640"), 0o640, 0o750)] {
        let (file, dir) = (file & !umask, dir & !umask);
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("t2.sock");
        let out = tmp.path().join("out");
        let spool = tmp.path().join("state/spool");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracekit"));
        cmd.env_remove("TRACEKIT_FILE_MODE");
        if let Some(m) = file_mode {
            cmd.args(["--file-mode", m]);
        }
        let url = format!("http://127.0.0.1:{port}");
        let listener = Listener::spawn(
            cmd,
            &[
                "--socket",
                sock.to_str().unwrap(),
                "--dir",
                out.to_str().unwrap(),
                "--otlp-endpoint",
                &url,
                "--spool",
                spool.to_str().unwrap(),
                "--otlp-retry",
                "0",
                "--shutdown-timeout",
                "0",
                "--json",
            ],
        );
        assert_eq!(mode(&sock), file, "{file_mode:?}: socket");
        let mut client = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        client.write_all(&events).unwrap();
        drop(client);
        std::thread::sleep(Duration::from_millis(300));
        let (summary, stderr) = listener.stop_json();
        let export = &summary["otlp"]["export"];
        assert!(export["sessions_spooled"].as_u64().unwrap() > 0, "{stderr}");
        assert_eq!(export["sessions_dropped"], 0, "{stderr}");
        for d in [&out, &out.join("event"), &tmp.path().join("state"), &spool] {
            assert_eq!(mode(d), dir, "{file_mode:?}: {}", d.display());
        }
        let mut files = 0;
        for d in [out.join("event"), spool.clone()] {
            for e in std::fs::read_dir(&d).unwrap() {
                let path = e.unwrap().path();
                assert_eq!(mode(&path), file, "{file_mode:?}: {}", path.display());
                files += 1;
            }
        }
        assert!(files > 5, "{files} files");
    }
}
