//! The Trace2 forwarder on the corpus (real git output, tests/corpus/trace2):
//! every process with a `start` becomes one process span with
//! trace2receiver's ids and names, regions/children/threads become spans,
//! errors/signals/data events; sessions are complete when every process
//! ended; memory stays bounded on a process with many regions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use prost::Message;
use serde_json::Value;
use tracekit_otlp::batch::Piece;
use tracekit_otlp::ids;
use tracekit_otlp::proto::{any_value, ExportTraceServiceRequest, Span};
use tracekit_otlp::sink::PieceOutput;
use tracekit_otlp::trace2::filter::FilterConfig;
use tracekit_otlp::trace2::{ForwardStats, Forwarder, ForwarderConfig};

#[derive(Default)]
struct Collect(Vec<Piece>);

impl PieceOutput for Collect {
    fn put(&mut self, piece: Piece) -> std::io::Result<()> {
        self.0.push(piece);
        Ok(())
    }
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/trace2")
}

/// (resource attributes, span) of every span sent, and the session counts.
type Sent = Vec<(BTreeMap<String, String>, Span)>;

fn decode(pieces: &[Piece]) -> (Sent, u64) {
    let mut out = Vec::new();
    for p in pieces {
        let req = ExportTraceServiceRequest::decode(&p.bytes[..]).expect("decodes");
        for rs in req.resource_spans {
            let res: BTreeMap<String, String> = rs
                .resource
                .unwrap_or_default()
                .attributes
                .into_iter()
                .map(|kv| (kv.key, text(&kv.value)))
                .collect();
            for ss in rs.scope_spans {
                for s in ss.spans {
                    out.push((res.clone(), s));
                }
            }
        }
    }
    (out, pieces.iter().map(|p| p.sessions).sum())
}

fn text(v: &Option<tracekit_otlp::proto::AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        other => format!("{other:?}"),
    }
}

fn attr(s: &Span, key: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(&kv.value))
}

fn forward(lines: &str, config: ForwarderConfig) -> (Sent, u64, ForwardStats) {
    let mut f = Forwarder::new(config, Collect::default());
    let now = Instant::now();
    for line in lines.lines() {
        f.line(line.as_bytes(), None, None, now);
    }
    let (out, stats) = f.finish();
    let (spans, sessions) = decode(&out.0);
    (spans, sessions, stats)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn every_corpus_process_becomes_its_spans() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .map(|e| e.path().join("event.jsonl"))
        .filter(|p| p.exists())
        .collect();
    cases.sort();
    assert!(cases.len() >= 15);
    for case in cases {
        let text = std::fs::read_to_string(&case).unwrap();
        let (spans, sessions, stats) = forward(&text, ForwarderConfig::default());
        let name = case.display();
        // What the input says, per SID.
        let mut started: BTreeSet<String> = BTreeSet::new();
        let mut count: BTreeMap<(String, &str), usize> = BTreeMap::new();
        let mut threads: BTreeSet<(String, String)> = BTreeSet::new();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let sid = v["sid"].as_str().unwrap().to_string();
            let event = v["event"].as_str().unwrap();
            if event == "start" {
                started.insert(sid.clone());
            }
            let thread = v["thread"].as_str().unwrap_or("main").to_string();
            if thread != "main" && threads.insert((sid.clone(), thread)) {
                // A thread's span, declared by thread_start or not (git
                // does not write it below the nesting limit).
                *count.entry((sid.clone(), "thread")).or_default() += 1;
            }
            let kind = match event {
                "region_enter" => "region",
                "child_start" => "child",
                "error" => "error",
                "signal" => "signal",
                "data" | "data_json" => "data",
                _ => continue,
            };
            *count.entry((sid, kind)).or_default() += 1;
        }
        assert_eq!(stats.lines_unparsed, 0, "{name}");
        let sids: BTreeSet<String> = started
            .iter()
            .map(|s| s.split('/').next().unwrap().to_string())
            .collect();
        assert_eq!(sessions as usize, sids.len(), "{name}: sessions");
        for sid in &started {
            let of: Vec<&Span> = spans
                .iter()
                .filter(|(r, _)| r["trace2.cmd.sid"] == *sid)
                .map(|(_, s)| s)
                .collect();
            let procs: Vec<&&Span> = of.iter().filter(|s| s.kind == 2).collect();
            assert_eq!(procs.len(), 1, "{name}: {sid}");
            let p = procs[0];
            let (own, parent) = ids::trace2_process_ids(sid.as_bytes());
            assert_eq!(hex(&p.span_id), hex(&own));
            assert_eq!(
                p.parent_span_id,
                parent.map(|x| x.to_vec()).unwrap_or_default()
            );
            assert_eq!(p.trace_id, ids::trace2_trace_id(sid.as_bytes()).to_vec());
            assert!(p.end_time_unix_nano >= p.start_time_unix_nano);
            let n = |k: &str| count.get(&(sid.clone(), k)).copied().unwrap_or(0);
            let typed = |t: &str| {
                of.iter()
                    .filter(|s| attr(s, "trace2.span.type").as_deref() == Some(t))
                    .count()
            };
            assert_eq!(typed("region"), n("region"), "{name}: {sid} regions");
            assert_eq!(typed("child"), n("child"), "{name}: {sid} children");
            assert_eq!(typed("thread"), n("thread"), "{name}: {sid} threads");
            let events = |e: &str| {
                of.iter()
                    .flat_map(|s| &s.events)
                    .filter(|ev| ev.name.starts_with(e))
                    .count()
            };
            assert_eq!(events("error"), n("error"), "{name}: {sid} errors");
            assert_eq!(events("signal"), n("signal"), "{name}: {sid} signals");
            assert_eq!(events("data"), n("data"), "{name}: {sid} data");
            if n("signal") > 0 {
                let code: i64 = attr(p, "trace2.cmd.exit_code").unwrap().parse().unwrap();
                assert!(code > 128, "{name}: {sid}: exit code {code} after a signal");
            }
            // Every span's parent is in the trace.
            for s in &of {
                if s.kind != 2 {
                    assert!(
                        spans.iter().any(|(_, o)| o.span_id == s.parent_span_id),
                        "{name}: {} has no parent",
                        s.name
                    );
                }
            }
        }
    }
}

#[test]
fn a_process_without_atexit_is_closed_and_says_how() {
    let text = std::fs::read_to_string(corpus().join("23-crash/event.jsonl")).unwrap();
    let (spans, _, stats) = forward(&text, ForwarderConfig::default());
    let crashed: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.kind == 2 && attr(s, "tracekit.process.end").is_some())
        .collect();
    assert!(!crashed.is_empty());
    for s in crashed {
        assert_eq!(attr(s, "trace2.cmd.exit_code").as_deref(), Some("-1"));
    }
    assert!(stats.ended_by_shutdown > 0);
}

#[test]
fn filters_and_detail_levels() {
    let text = std::fs::read_to_string(corpus().join("05-fetch/event.jsonl")).unwrap();
    let config: FilterConfig =
        serde_json::from_str(r#"{"keep": ["fetch"], "detail": "dl:summary"}"#).unwrap();
    let (spans, sessions, stats) = forward(
        &text,
        ForwarderConfig {
            rules: config.compile().unwrap(),
            ..ForwarderConfig::default()
        },
    );
    // `git fetch` and `git fetch --tags origin`; pull, ls-remote and
    // remote update are dropped.
    assert_eq!(sessions, 2);
    assert!(stats.sessions_filtered >= 3);
    // dl:summary: process spans only, the fetches and their children.
    assert!(spans.iter().all(|(_, s)| s.kind == 2));
    let tops: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(tops.len(), 2);
    assert!(spans.len() > 2);
    for top in tops {
        assert_eq!(top.name, "git:fetch");
        assert!(attr(top, "trace2.process.data").is_none());
    }
}

#[test]
fn a_child_ended_by_its_parents_child_exit_completes_the_session() {
    // Datagrams: no connection to close. The child never says atexit (it
    // crashed); the parent's child_exit ends it.
    let parent = "20240101T000000.000000Z-H00000001-P00000100";
    let child = format!("{parent}/20240101T000000.100000Z-H00000001-P00000101");
    let lines = [
        format!(
            r#"{{"event":"version","sid":"{parent}","thread":"main","time":"2024-01-01T00:00:00.000000Z","file":"x.c","line":1,"evt":"3","exe":"2.47.3"}}"#
        ),
        format!(
            r#"{{"event":"start","sid":"{parent}","thread":"main","time":"2024-01-01T00:00:00.000010Z","file":"x.c","line":1,"t_abs":0.0,"argv":["git","fetch"]}}"#
        ),
        format!(
            r#"{{"event":"child_start","sid":"{parent}","thread":"main","time":"2024-01-01T00:00:00.050000Z","file":"x.c","line":1,"child_id":0,"child_class":"?","use_shell":false,"argv":["git","index-pack"]}}"#
        ),
        format!(
            r#"{{"event":"version","sid":"{child}","thread":"main","time":"2024-01-01T00:00:00.100000Z","file":"x.c","line":1,"evt":"3","exe":"2.47.3"}}"#
        ),
        format!(
            r#"{{"event":"start","sid":"{child}","thread":"main","time":"2024-01-01T00:00:00.100010Z","file":"x.c","line":1,"t_abs":0.0,"argv":["git","index-pack"]}}"#
        ),
        format!(
            r#"{{"event":"child_exit","sid":"{parent}","thread":"main","time":"2024-01-01T00:00:00.200000Z","file":"x.c","line":1,"child_id":0,"pid":257,"code":-1,"t_rel":0.15}}"#
        ),
    ];
    let mut f = Forwarder::new(
        ForwarderConfig {
            settle: Duration::from_millis(10),
            ..ForwarderConfig::default()
        },
        Collect::default(),
    );
    let t0 = Instant::now();
    for l in &lines {
        f.line(l.as_bytes(), None, None, t0);
    }
    // The parent is still running: nothing is due.
    assert!(f.tick(t0 + Duration::from_secs(1)).is_some());
    assert_eq!(f.open_sessions(), 1);
    let exit = format!(
        r#"{{"event":"atexit","sid":"{parent}","thread":"main","time":"2024-01-01T00:00:00.300000Z","file":"x.c","line":1,"t_abs":0.3,"code":0}}"#
    );
    f.line(exit.as_bytes(), None, None, t0 + Duration::from_secs(1));
    f.tick(t0 + Duration::from_secs(2));
    assert_eq!(f.open_sessions(), 0, "sent once every process ended");
    let (out, stats) = f.finish();
    assert_eq!(stats.ended_by_parent, 1);
    let (spans, sessions) = decode(&out.0);
    assert_eq!(sessions, 1);
    assert_eq!(spans.iter().filter(|(_, s)| s.kind == 2).count(), 2);
    let child_span = spans
        .iter()
        .find(|(r, _)| r["trace2.cmd.sid"] == child)
        .unwrap();
    assert_eq!(
        attr(&child_span.1, "tracekit.process.end").as_deref(),
        Some("parent's child_exit without atexit")
    );
}

#[test]
fn a_long_process_is_sent_ahead_in_parts_and_memory_stays_bounded() {
    let sid = "20240101T000000.000000Z-H00000001-P00000200";
    let mut f = Forwarder::new(
        ForwarderConfig {
            max_buffered_spans: 1000,
            ..ForwarderConfig::default()
        },
        Collect::default(),
    );
    let t0 = Instant::now();
    let head = [
        format!(
            r#"{{"event":"version","sid":"{sid}","thread":"main","time":"2024-01-01T00:00:00.000000Z","file":"x.c","line":1,"evt":"3","exe":"2.47.3"}}"#
        ),
        format!(
            r#"{{"event":"start","sid":"{sid}","thread":"main","time":"2024-01-01T00:00:00.000010Z","file":"x.c","line":1,"t_abs":0.0,"argv":["git","fsck"]}}"#
        ),
        format!(
            r#"{{"event":"cmd_name","sid":"{sid}","thread":"main","time":"2024-01-01T00:00:00.000020Z","file":"x.c","line":1,"name":"fsck","hierarchy":"fsck"}}"#
        ),
    ];
    for l in &head {
        f.line(l.as_bytes(), None, None, t0);
    }
    for i in 0..10_000u64 {
        let t = format!(
            "2024-01-01T00:00:{:02}.{:06}Z",
            1 + i / 1_000_000,
            i % 1_000_000
        );
        let enter = format!(
            r#"{{"event":"region_enter","sid":"{sid}","thread":"main","time":"{t}","file":"x.c","line":1,"nesting":1,"category":"c","label":"l"}}"#
        );
        let leave = format!(
            r#"{{"event":"region_leave","sid":"{sid}","thread":"main","time":"{t}","file":"x.c","line":1,"t_rel":0.0,"nesting":1,"category":"c","label":"l"}}"#
        );
        f.line(enter.as_bytes(), None, None, t0);
        f.line(leave.as_bytes(), None, None, t0);
    }
    let (out, stats) = f.finish();
    assert!(stats.parts_sent_ahead >= 9, "{}", stats.parts_sent_ahead);
    assert!(out.0.iter().all(|p| p.spans <= 1001));
    let (spans, sessions) = decode(&out.0);
    assert_eq!(sessions, 1, "counted once, at its end");
    assert_eq!(spans.len(), 10_001);
}

#[test]
fn garbage_lines_are_counted_not_fatal() {
    let lines = "not json\n{\"event\":\"version\"}\n{}\n\u{0}\u{1}\n{\"event\":\"start\",\"sid\":\"x\",\"argv\":[]}\n";
    let (spans, _, stats) = forward(lines, ForwarderConfig::default());
    assert!(stats.lines_unparsed + stats.lines_without_sid >= 3);
    assert!(spans.is_empty());
}

#[test]
fn a_silent_crashed_process_is_sent_after_the_session_timeout() {
    // A datagram client (no connection to close) that crashed: no atexit,
    // no parent to say child_exit. Only the time-out ends it.
    let sid = "20240101T000000.000000Z-H00000001-P00000300";
    let lines = [
        format!(
            r#"{{"event":"version","sid":"{sid}","thread":"main","time":"2024-01-01T00:00:00.000000Z","file":"x.c","line":1,"evt":"3","exe":"2.47.3"}}"#
        ),
        format!(
            r#"{{"event":"start","sid":"{sid}","thread":"main","time":"2024-01-01T00:00:00.000010Z","file":"x.c","line":1,"t_abs":0.0,"argv":["git","gc"]}}"#
        ),
        format!(
            r#"{{"event":"region_enter","sid":"{sid}","thread":"main","time":"2024-01-01T00:00:00.100000Z","file":"x.c","line":1,"nesting":1,"category":"gc","label":"repack"}}"#
        ),
    ];
    let timeout = Duration::from_secs(60);
    let mut f = Forwarder::new(
        ForwarderConfig {
            session_timeout: timeout,
            settle: Duration::from_millis(10),
            ..ForwarderConfig::default()
        },
        Collect::default(),
    );
    let t0 = Instant::now();
    for l in &lines {
        f.line(l.as_bytes(), None, None, t0);
    }
    // Still running as far as anyone knows; the next wake-up is the
    // time-out.
    let next = f.tick(t0 + timeout - Duration::from_secs(1));
    assert_eq!(next, Some(t0 + timeout));
    assert_eq!(f.open_sessions(), 1);
    f.tick(t0 + timeout);
    assert_eq!(f.open_sessions(), 0, "sent at the time-out");
    let (out, stats) = f.finish();
    assert_eq!(stats.ended_by_timeout, 1);
    assert_eq!(stats.sessions_open_at_stop, 0);
    let (spans, sessions) = decode(&out.0);
    assert_eq!(sessions, 1);
    let p = spans.iter().map(|(_, s)| s).find(|s| s.kind == 2).unwrap();
    assert_eq!(
        attr(p, "tracekit.process.end").as_deref(),
        Some("timed out without atexit")
    );
    assert_eq!(attr(p, "trace2.cmd.exit_code").as_deref(), Some("-1"));
    // The region left open is closed with its process.
    assert_eq!(
        spans
            .iter()
            .filter(|(_, s)| attr(s, "trace2.span.type").as_deref() == Some("region"))
            .count(),
        1
    );
}
