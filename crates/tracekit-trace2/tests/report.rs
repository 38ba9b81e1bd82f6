//! `report` and `chrome` on the real corpus: outputs compared with blessed
//! expected files (TRACEKIT_BLESS=1 rewrites them), plus assertions on
//! facts checked by hand against the raw events.

use std::path::{Path, PathBuf};

use tracekit_core::Warnings;
use tracekit_export::chrome_sink::ChromeSink;
use tracekit_trace2::reader::detect;
use tracekit_trace2::report::{report_bytes, write_text, ProcessReport, Report, ReportBuilder};
use tracekit_trace2::timeline::{MapStats, Trace2Timeline};
use tracekit_trace2::{Format, RecordIter};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/trace2");
const EXPECTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/expected");

fn corpus(rel: &str) -> PathBuf {
    Path::new(CORPUS).join(rel)
}

fn cases() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(CORPUS)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("event.jsonl").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Reports on files (a directory stands for its files in name order).
fn report(rels: &[&str], top: usize) -> (Report, Warnings) {
    let mut files = Vec::new();
    for rel in rels {
        let p = corpus(rel);
        if p.is_dir() {
            let mut fs: Vec<_> = std::fs::read_dir(&p)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            fs.sort();
            files.extend(fs);
        } else {
            files.push(p);
        }
    }
    let mut builder = ReportBuilder::new(top);
    let mut warnings = Warnings::default();
    for f in files {
        let data = std::fs::read(&f).unwrap();
        let format = detect(&data).unwrap_or(Format::Event);
        let name = f.strip_prefix(CORPUS).unwrap().display().to_string();
        let src = builder.source(&name);
        report_bytes(&data, format, src, &mut builder, &mut warnings);
    }
    (builder.finish(), warnings)
}

fn check(name: &str, actual: &[u8]) {
    let path = Path::new(EXPECTED).join(name);
    if std::env::var_os("TRACEKIT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with TRACEKIT_BLESS=1", path.display()));
    if expected != actual {
        let got = path.with_extension("actual");
        std::fs::write(&got, actual).unwrap();
        panic!(
            "{} differs from the expected output (actual written to {})",
            name,
            got.display()
        );
    }
}

fn text_of(r: &Report) -> Vec<u8> {
    let mut out = Vec::new();
    write_text(r, &mut out, 1000).unwrap();
    out
}

#[test]
fn corpus_reports_match_expected() {
    for case in cases() {
        let (r, w) = report(&[&format!("{case}/event.jsonl")], 1000);
        assert!(w.is_empty(), "{case}: {:?}", w.kept());
        check(&format!("report/{case}.txt"), &text_of(&r));
        let json = serde_json::to_vec_pretty(&r).unwrap();
        check(&format!("report/{case}.json"), &json);
    }
}

#[test]
fn directory_target_is_stitched_by_sid() {
    let (r, w) = report(&["13-directory-target/dir-event"], 1000);
    assert!(w.is_empty());
    check("report/13-dir-event.txt", &text_of(&r));
    // Six files, six processes; the clone's children are linked by SID.
    assert_eq!(r.processes, 6);
    assert_eq!(r.sources.len(), 6);
}

#[test]
fn perf_and_normal_inputs_report() {
    for case in ["04-clone-local", "17-signal-exec"] {
        for (fmt, file) in [("perf", "perf.log"), ("normal", "normal.log")] {
            let (r, w) = report(&[&format!("{case}/{file}")], 1000);
            assert!(w.is_empty(), "{case}/{file}: {:?}", w.kept());
            check(&format!("report/{case}.{fmt}.txt"), &text_of(&r));
            // Same processes as the EVENT capture of the same run.
            let (e, _) = report(&[&format!("{case}/event.jsonl")], 1000);
            assert_eq!(r.processes, e.processes, "{case}/{file}");
        }
    }
}

fn all_processes(r: &Report) -> Vec<&ProcessReport> {
    fn walk<'a>(p: &'a ProcessReport, out: &mut Vec<&'a ProcessReport>) {
        out.push(p);
        for c in &p.children {
            if let Some(cp) = &c.process {
                walk(cp, out);
            }
        }
        for e in p.exec.iter().chain(&p.forked).chain(&p.descendants) {
            walk(e, out);
        }
    }
    let mut out = Vec::new();
    for s in &r.sessions_shown {
        for p in &s.processes {
            walk(p, &mut out);
        }
    }
    out
}

#[test]
fn case04_clone_has_its_transport_children() {
    let (r, _) = report(&["04-clone-local/event.jsonl"], 1000);
    let clones: Vec<&ProcessReport> = r
        .sessions_shown
        .iter()
        .flat_map(|s| &s.processes)
        .filter(|p| p.cmd_name.as_deref() == Some("clone"))
        .collect();
    assert!(!clones.is_empty());
    for c in &clones {
        assert_eq!(c.end, "exit");
        assert_eq!(c.exit_code, Some(0));
        let upload = c
            .children
            .iter()
            .find(|ch| ch.class.as_deref() == Some("transport/file"))
            .expect("clone runs upload-pack");
        let up = upload.process.as_ref().expect("upload-pack was traced");
        assert_eq!(up.cmd_name.as_deref(), Some("upload-pack"));
        // upload-pack runs pack-objects.
        assert!(up.children.iter().any(|ch| ch
            .process
            .as_ref()
            .and_then(|p| p.cmd_name.as_deref())
            == Some("pack-objects")));
        // The parent's view of the child's time includes process start-up.
        assert!(upload.elapsed_s.unwrap() >= up.elapsed_s.unwrap());
    }
    let clone = r.commands.iter().find(|c| c.name == "clone").unwrap();
    assert_eq!(clone.count as usize, clones.len());
    assert!(
        clone.p50_s <= clone.p90_s
            && clone.p90_s <= clone.p99_s
            && clone.p99_s <= clone.max_s
            && clone.p50_s.is_some()
    );
}

#[test]
fn case17_signal_and_exec() {
    let (r, _) = report(&["17-signal-exec/event.jsonl"], 1000);
    let procs = all_processes(&r);
    let ls = procs
        .iter()
        .find(|p| p.cmd_name.as_deref() == Some("ls-files"))
        .unwrap();
    assert_eq!(ls.end, "signal");
    assert_eq!(ls.signal, Some(13));
    assert_eq!(ls.exit_code, None);
    assert_eq!(ls.elapsed_s, Some(0.006488));
    // git-shell exec()s upload-pack: same pid, SID one level down.
    let shell = procs
        .iter()
        .find(|p| p.argv.first().map(String::as_str) == Some("git-shell"))
        .unwrap();
    assert_eq!(shell.end, "exec");
    assert_eq!(shell.exec.len(), 1);
    assert_eq!(shell.exec[0].cmd_name.as_deref(), Some("upload-pack"));
    assert_eq!(shell.exec[0].pid, shell.pid);
    assert_eq!(r.unfinished_processes, 0);
    let text = String::from_utf8(text_of(&r)).unwrap();
    assert!(text.contains("ls-files  signal 13  0.006488s"), "{text}");
}

/// 24-maintenance-detach: `git maintenance run --auto --detach` forks
/// (daemonize()); parent and child write under one SID. Each is a process
/// of its own, nothing is lost, and what the child does (gc and its six
/// children, in the commit session) is under the child. Figures read from
/// event.jsonl by hand: the parents' `exit` t_abs 0.019051 (line 41),
/// 0.033976 (218: the `src` session's child wrote all its records before
/// its parent's `exit`, so "the process that ended first" is the child
/// there), 0.014745 (306); the processes after them 0.407004 (169),
/// 0.034334 (220), 0.030641 (312).
#[test]
fn case24_a_detached_child_is_a_process_of_its_own() {
    for file in ["event.jsonl", "perf.log"] {
        let (r, w) = report(&[&format!("24-maintenance-detach/{file}")], 1000);
        assert!(w.is_empty(), "{file}");
        // 18 `version` records, and 3 processes forked under a SID.
        assert_eq!(r.processes, 21, "{file}");
        assert_eq!(r.sessions, 3, "{file}");
        assert_eq!(r.unfinished_processes, 0, "{file}");
        assert_eq!(r.anomalies.unmatched_region_leave, 0, "{file}");
        assert_eq!(r.anomalies.unclosed_regions, 0, "{file}");
        let procs = all_processes(&r);
        assert_eq!(procs.len(), 21, "{file}");
        let parents: Vec<&&ProcessReport> = procs
            .iter()
            .filter(|p| p.cmd_name.as_deref() == Some("maintenance") && p.fork == 0)
            .collect();
        assert_eq!(parents.len(), 3, "{file}");
        let elapsed: Vec<(Option<f64>, Option<f64>)> = parents
            .iter()
            .map(|p| {
                assert_eq!(p.forked.len(), 1, "{file}");
                let f = &p.forked[0];
                assert_eq!((f.fork, &f.sid, f.end), (1, &p.sid, "exit"), "{file}");
                assert_eq!(f.cmd_name.as_deref(), Some("maintenance"));
                (p.elapsed_s, f.elapsed_s)
            })
            .collect();
        assert_eq!(
            elapsed,
            [
                (Some(0.019051), Some(0.407004)),
                (Some(0.033976), Some(0.034334)),
                (Some(0.014745), Some(0.030641))
            ],
            "{file}"
        );
        // The commit session's child runs gc; gc's children are its own.
        let child = &parents[0].forked[0];
        assert!(parents[0].children.is_empty(), "{file}");
        assert_eq!(child.children.len(), 1, "{file}");
        let gc = child.children[0].process.as_ref().expect("gc was traced");
        assert_eq!(gc.cmd_name.as_deref(), Some("gc"));
        assert_eq!(gc.children.len(), 6);
        assert!(gc.children.iter().all(|c| c.process.is_some()), "{file}");
        // The region the child inherited is left in the child.
        let regions: Vec<(&str, u64)> = child.threads[0]
            .regions
            .iter()
            .map(|n| (n.label.as_str(), n.count))
            .collect();
        assert_eq!(regions, [("gc", 1), ("detach", 1)], "{file}");
        if file == "event.jsonl" {
            // The SID's pid is the parent's, not the child's.
            assert!(parents
                .iter()
                .all(|p| p.pid.is_some() && p.forked[0].pid.is_none()));
            let text = String::from_utf8(text_of(&r)).unwrap();
            assert_eq!(
                text.matches("forked (went on under this SID after this process exited):")
                    .count(),
                3
            );
            assert!(text.contains("maintenance  exit 0  0.407004s  [20261129T000527.438418Z-H0a7c9cdf-P00004c40 fork 1]"), "{text}");
        }
    }
}

#[test]
fn case23_crash_shows_no_exit() {
    let (r, _) = report(&["23-crash/event.jsonl"], 1000);
    assert!(r.unfinished_processes >= 1);
    let procs = all_processes(&r);
    let crashed: Vec<_> = procs.iter().filter(|p| p.end == "none").collect();
    assert_eq!(crashed.len() as u64, r.unfinished_processes);
    for p in &crashed {
        assert_eq!(p.exit_code, None);
        assert_eq!(p.elapsed_s, None);
    }
    // The shell alias whose git grandchild crashed: the parent saw 139.
    assert!(procs
        .iter()
        .flat_map(|p| &p.children)
        .any(|c| c.exit_code == Some(139)));
    let text = String::from_utf8(text_of(&r)).unwrap();
    assert!(text.contains("NO EXIT"));
}

#[test]
fn top_limits_detail_but_not_aggregates() {
    let (all, _) = report(&["05-fetch/event.jsonl"], 1000);
    let (two, _) = report(&["05-fetch/event.jsonl"], 2);
    assert_eq!(two.sessions_shown.len(), 2);
    assert_eq!(all.sessions_shown.len() as u64, all.sessions);
    assert_eq!(
        serde_json::to_value(&all.commands).unwrap(),
        serde_json::to_value(&two.commands).unwrap()
    );
    // The two shown are the two slowest.
    let mut el: Vec<f64> = all
        .sessions_shown
        .iter()
        .map(|s| s.elapsed_s.unwrap_or(0.0))
        .collect();
    el.sort_by(|a, b| b.total_cmp(a));
    for s in &two.sessions_shown {
        assert!(s.elapsed_s.unwrap() >= el[1]);
    }
}

/// Every corpus EVENT file, concatenated and repeated past the threshold
/// where parsing goes parallel: the result equals the sequential one.
#[test]
fn parallel_parse_equals_sequential() {
    let mut one = Vec::new();
    for case in cases() {
        one.extend_from_slice(&std::fs::read(corpus(&format!("{case}/event.jsonl"))).unwrap());
    }
    let mut data = Vec::new();
    while data.len() < 5 << 20 {
        data.extend_from_slice(&one);
    }
    // A corrupt line in the second half, to check line numbers.
    let bad_line = data.iter().filter(|&&c| c == b'\n').count() as u64 + 1;
    data.extend_from_slice(b"{\"event\":\"exit\",\"sid\":\"x\",\"t_abs\":oops}\n");
    let mut seq = ReportBuilder::new(5);
    for rec in RecordIter::new(&data, Format::Event) {
        if let Ok(ev) = Format::Event.parse(rec.bytes) {
            seq.add(&ev, 0);
        }
    }
    let mut par = ReportBuilder::new(5);
    let mut w = Warnings::default();
    report_bytes(&data, Format::Event, 0, &mut par, &mut w);
    assert_eq!(w.total(), 1);
    assert_eq!(
        w.kept()[0].position,
        tracekit_core::Position::Line(bad_line)
    );
    let (a, b) = (seq.finish(), par.finish());
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::to_value(&b).unwrap()
    );
}

#[test]
fn truncated_and_corrupt_input_warns_and_keeps_the_rest() {
    let data = std::fs::read(corpus("08-errors/event.jsonl")).unwrap();
    let mut cut = data[..data.len() - 40].to_vec();
    cut.splice(0..0, b"not json\n".iter().copied());
    let mut b = ReportBuilder::new(1000);
    let mut w = Warnings::default();
    report_bytes(&cut, Format::Event, 0, &mut b, &mut w);
    assert_eq!(w.total(), 2);
    assert_eq!(w.kept()[0].position, tracekit_core::Position::Line(1));
    assert!(w.kept()[1].message.contains("cut short"), "{:?}", w.kept());
    let r = b.finish();
    // The last process lost its atexit: exit was seen, so it still has a
    // code and a time.
    let (full, _) = report(&["08-errors/event.jsonl"], 1000);
    assert_eq!(r.processes, full.processes);
}

// ---------------------------------------------------------------------------
// Chrome export.

fn chrome(data: &[u8]) -> (serde_json::Value, MapStats) {
    let format = detect(data).unwrap();
    let mut tl = Trace2Timeline::new(ChromeSink::new(Vec::new()).unwrap(), "-");
    for rec in RecordIter::new(data, format) {
        tl.add(&format.parse(rec.bytes).unwrap()).unwrap();
    }
    let (sink, stats) = tl.finish().unwrap();
    let out = sink.into_inner().unwrap();
    (serde_json::from_slice(&out).expect("valid JSON"), stats)
}

#[test]
fn chrome_export_of_every_corpus_case_is_balanced() {
    for case in cases() {
        let data = std::fs::read(corpus(&format!("{case}/event.jsonl"))).unwrap();
        let (v, stats) = chrome(&data);
        let evs = v["traceEvents"].as_array().unwrap();
        let count = |kind: &str| data_count(&data, kind);
        // B/E balanced per (pid, tid), never negative.
        let mut depth: std::collections::HashMap<(i64, i64), i64> = Default::default();
        let mut b = 0;
        for e in evs {
            let key = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
            match e["ph"].as_str().unwrap() {
                "B" => {
                    b += 1;
                    *depth.entry(key).or_default() += 1
                }
                "E" => {
                    let d = depth.entry(key).or_default();
                    *d -= 1;
                    assert!(*d >= 0, "{case}: E without B");
                }
                _ => {}
            }
            assert!(e["ts"].as_f64().unwrap_or(0.0) >= 0.0);
        }
        assert!(depth.values().all(|&d| d == 0), "{case}: unbalanced");
        assert_properly_nested(evs, &case);
        // Regions and one process slice per process are B/E pairs; a
        // process forked under its parent's SID has a slice of its own and
        // re-opens the regions it inherited.
        let forks = forks_in(&data);
        assert_eq!(stats.forks, forks, "{case}");
        let inherited = evs
            .iter()
            .filter(|e| e["ph"] == "B" && e["args"]["inherited"] == true)
            .count() as u64;
        assert_eq!(
            b,
            count("region_enter") + count("version") + forks + inherited,
            "{case}"
        );
        assert_eq!(stats.region_slices, count("region_leave"), "{case}");
        assert_eq!(stats.unmatched_leaves, 0, "{case}");
        let ph = |p: &str| evs.iter().filter(|e| e["ph"] == p).count() as u64;
        assert_eq!(ph("C"), count("counter"), "{case}");
        assert_eq!(
            ph("i"),
            count("data")
                + count("data_json")
                + count("error")
                + count("exit")
                + count("signal")
                + count("exec"),
            "{case}"
        );
        // One process slice per process (forks included), and one child
        // slice per child_start.
        let procs = count("version") + forks;
        let all = slices(evs);
        assert_eq!(
            all.iter().filter(|e| e["cat"] == "process").count() as u64,
            procs,
            "{case}"
        );
        assert_eq!(
            all.iter().filter(|e| e["cat"] == "child").count() as u64,
            count("child_start"),
            "{case}"
        );
        // A child slice whose pid is a traced git process (the SID's P) has
        // a flow to that process's slice. (A git run by a shell or a hook
        // has another pid: its flow end has no start, and viewers ignore it.)
        let flows = |ph: &str| -> Vec<(i64, i64, u64, f64)> {
            evs.iter()
                .filter(|e| e["ph"] == ph)
                .map(|e| {
                    let (pid, tid) = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
                    (
                        pid,
                        tid,
                        e["id"].as_u64().unwrap(),
                        e["ts"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        let (starts, ends) = (flows("s"), flows("f"));
        assert_eq!(ends.len() as u64, stats.flows, "{case}");
        let traced: std::collections::HashSet<i64> = all
            .iter()
            .filter(|e| e["cat"] == "process")
            .map(|e| e["pid"].as_i64().unwrap())
            .collect();
        let mut linked = 0;
        for c in all.iter().filter(|e| e["cat"] == "child") {
            let Some(child_pid) = c["args"]["pid"].as_i64() else {
                continue;
            };
            if !traced.contains(&child_pid) {
                continue;
            }
            let (pid, tid) = (c["pid"].as_i64().unwrap(), c["tid"].as_i64().unwrap());
            let ts = c["ts"].as_f64().unwrap();
            let mut from_slice = starts
                .iter()
                .filter(|s| s.0 == pid && s.1 == tid && s.3 == ts)
                .peekable();
            assert!(
                from_slice.peek().is_some(),
                "{case}: no flow from child slice {c}"
            );
            assert!(
                from_slice.any(|s| ends
                    .iter()
                    .any(|e| e.0 == child_pid && e.1 == 1 && e.2 == s.2)),
                "{case}: no flow from {c} reaches process {child_pid}"
            );
            linked += 1;
        }
        if case.starts_with("04-") {
            assert!(linked >= 10, "{case}: only {linked} children linked");
        }
        let names = evs
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .count() as u64;
        assert_eq!(names, procs, "{case}");
    }
}

/// Records that start another process under a SID whose process wrote
/// `atexit`/`signal` (a child forked by `daemonize()`), counted from the
/// raw records.
fn forks_in(data: &[u8]) -> u64 {
    let mut ended = std::collections::HashSet::new();
    let mut forks = 0;
    for rec in RecordIter::new(data, Format::Event) {
        let Ok(ev) = Format::Event.parse(rec.bytes) else {
            continue;
        };
        let sid = ev.sid.as_deref().unwrap_or_default().to_vec();
        if ended.remove(&sid) {
            forks += 1;
        }
        if matches!(
            ev.body,
            tracekit_trace2::Body::AtExit { .. } | tracekit_trace2::Body::Signal { .. }
        ) {
            ended.insert(sid);
        }
    }
    forks
}

fn data_count(data: &[u8], kind: &str) -> u64 {
    let needle = format!("{{\"event\":\"{kind}\"");
    data.split(|&c| c == b'\n')
        .filter(|l| l.starts_with(needle.as_bytes()))
        .count() as u64
}

#[test]
fn chrome_export_of_case04_links_processes_and_times() {
    let data = std::fs::read(corpus("04-clone-local/event.jsonl")).unwrap();
    let (v, _) = chrome(&data);
    check(
        "chrome/04-clone-local.json",
        serde_json::to_string_pretty(&v).unwrap().as_bytes(),
    );
    let evs = slices(v["traceEvents"].as_array().unwrap());
    // The upload-pack child slice of the first clone lies within the
    // clone's process slice.
    let procs: Vec<_> = evs.iter().filter(|e| e["cat"] == "process").collect();
    let clone = procs.iter().find(|e| e["name"] == "clone").unwrap();
    let (cs, cd) = (
        clone["ts"].as_f64().unwrap(),
        clone["dur"].as_f64().unwrap(),
    );
    let child = evs
        .iter()
        .find(|e| {
            e["cat"] == "child"
                && e["pid"] == clone["pid"]
                && e["args"]["class"] == "transport/file"
        })
        .unwrap();
    let (ts, dur) = (
        child["ts"].as_f64().unwrap(),
        child["dur"].as_f64().unwrap(),
    );
    assert!(ts >= cs && ts + dur <= cs + cd);
    // The SID's P component is the pid.
    assert_eq!(clone["pid"].as_i64().unwrap() >> 32, 0);
}

/// A `region_leave` shallower than every region open on its thread (found
/// by fuzzing: the leave closed the deeper region, then "closed" a region
/// that was not there, an `E` with no `B`): the deeper region stays open
/// until its process ends, the leave is drawn as an instant.
#[test]
fn a_leave_with_no_region_at_its_nesting_closes_nothing_it_has_not_opened() {
    let sid = "20240101T120000.000000Z-H0a7c9cdf-P00001234";
    let rec = |event: &str, us: u32, rest: &str| {
        format!(
            "{{\"event\":\"{event}\",\"sid\":\"{sid}\",\"thread\":\"th01:unknown\",\"time\":\"2024-01-01T12:00:00.{us:06}Z\",\"file\":\"x.c\",\"line\":1{rest}}}\n"
        )
    };
    let data = [
        rec("version", 1, ",\"evt\":\"4\",\"exe\":\"2.47.3\""),
        rec(
            "region_enter",
            2,
            ",\"nesting\":3,\"category\":\"c\",\"label\":\"deep\"",
        ),
        rec(
            "region_leave",
            3,
            ",\"t_rel\":0.000001,\"nesting\":1,\"category\":\"c\",\"label\":\"shallow\"",
        ),
        rec("atexit", 4, ",\"t_abs\":0.000004,\"code\":0"),
    ]
    .concat();
    let (v, stats) = chrome(data.as_bytes());
    let evs = v["traceEvents"].as_array().unwrap();
    let ph = |p: &str| evs.iter().filter(|e| e["ph"] == p).count();
    // The process slice and the deep region, each begun and ended once.
    assert_eq!((ph("B"), ph("E")), (2, 2));
    assert_eq!(stats.unmatched_leaves, 1);
    assert_eq!(stats.closed_at_end, 1);
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "i" && e["name"] == "shallow" && e["args"]["no_region_enter"] == true));
}

#[test]
fn chrome_export_of_perf_and_brief_inputs() {
    for rel in [
        "04-clone-local/perf.log",
        "12-brief/event.jsonl",
        "23-crash/normal.log",
    ] {
        let data = std::fs::read(corpus(rel)).unwrap();
        let (v, stats) = chrome(&data);
        assert!(!v["traceEvents"].as_array().unwrap().is_empty(), "{rel}");
        assert_eq!(stats.unmatched_leaves, 0, "{rel}");
    }
}

/// Lines cut at arbitrary places (as a killed writer or a torn copy
/// leaves them): no panic, every unreadable line is a warning, the Chrome
/// output stays valid JSON.
#[test]
fn cut_lines_never_panic() {
    for case in cases() {
        let data = std::fs::read(corpus(&format!("{case}/event.jsonl"))).unwrap();
        let mut mangled = Vec::new();
        let mut cut = 0usize;
        for (i, line) in data.split(|&c| c == b'\n').enumerate() {
            if i % 3 == 1 && !line.is_empty() {
                let at = (i * 7919) % line.len();
                mangled.extend_from_slice(&line[..at]);
                cut += 1;
            } else {
                mangled.extend_from_slice(line);
            }
            mangled.push(b'\n');
        }
        let mut b = ReportBuilder::new(10);
        let mut w = Warnings::default();
        report_bytes(&mangled, Format::Event, 0, &mut b, &mut w);
        let r = b.finish();
        assert!(w.total() > 0 && w.total() <= cut as u64, "{case}");
        let mut text = Vec::new();
        write_text(&r, &mut text, 10).unwrap();
        let mut w2 = Warnings::default();
        let (out, _) =
            tracekit_trace2::chrome::convert_bytes(&mangled, Format::Event, Vec::new(), &mut w2)
                .unwrap();
        assert_eq!(w.total(), w2.total(), "{case}");
        serde_json::from_slice::<serde_json::Value>(&out).expect("valid JSON");
    }
}

/// Figures recomputed by hand from the raw events (python over
/// 05-fetch/event.jsonl): the four `fetch` exits are 0.006619, 0.008757,
/// 0.008993 and 0.024806 s; their four `fetch/fetch-one` regions sum to
/// 0.044076 s.
#[test]
fn case05_fetch_figures_checked_by_hand() {
    let (r, _) = report(&["05-fetch/event.jsonl"], 0);
    assert!(r.sessions_shown.is_empty());
    let f = r
        .commands
        .iter()
        .find(|c| c.name == "fetch" && c.mode.is_none())
        .unwrap();
    assert_eq!(f.count, 4);
    assert_eq!(f.p50_s, Some(0.008757));
    assert_eq!(f.p90_s, Some(0.024806));
    assert_eq!(f.max_s, Some(0.024806));
    assert!((f.total_s - 0.049175).abs() < 1e-9);
    let one = f
        .top_regions
        .iter()
        .find(|r| r.category == "fetch" && r.label == "fetch-one")
        .unwrap();
    assert_eq!(one.count, 4);
    assert!((one.total_s - 0.044076).abs() < 1e-9);
}

/// Streaming (standard input) gives the same report as a mapped file.
#[test]
fn streamed_records_equal_mapped_input() {
    let data = std::fs::read(corpus("09-hooks/event.jsonl")).unwrap();
    let mut streamed = ReportBuilder::new(100);
    tracekit_trace2::reader::for_each_record::<_, std::io::Error>(
        &data[..],
        Format::Event,
        |rec| {
            streamed.add_record(rec.bytes, Format::Event, 0).unwrap();
            Ok(())
        },
    )
    .unwrap();
    let mut mapped = ReportBuilder::new(100);
    let mut w = Warnings::default();
    report_bytes(&data, Format::Event, 0, &mut mapped, &mut w);
    assert_eq!(
        serde_json::to_value(streamed.finish()).unwrap(),
        serde_json::to_value(mapped.finish()).unwrap()
    );
}

/// Slices on one track (B/E pairs and X events) must nest: viewers drop or
/// misplace partially overlapping slices.
/// The slices of a Chrome trace: `X` events, and `B`/`E` pairs per thread
/// as one object each (`dur` from the pair, the end's args merged in).
fn slices(evs: &[serde_json::Value]) -> Vec<serde_json::Value> {
    use std::collections::HashMap;
    let mut open: HashMap<(i64, i64), Vec<serde_json::Value>> = HashMap::new();
    let mut out = Vec::new();
    for e in evs {
        let key = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
        match e["ph"].as_str().unwrap() {
            "B" => open.entry(key).or_default().push(e.clone()),
            "E" => {
                let mut b = open.get_mut(&key).unwrap().pop().unwrap();
                let dur = e["ts"].as_f64().unwrap() - b["ts"].as_f64().unwrap();
                b["dur"] = dur.into();
                if let Some(args) = e["args"].as_object() {
                    for (k, v) in args {
                        b["args"][k] = v.clone();
                    }
                }
                out.push(b);
            }
            "X" => out.push(e.clone()),
            _ => {}
        }
    }
    out
}

fn assert_properly_nested(evs: &[serde_json::Value], case: &str) {
    use std::collections::HashMap;
    /// start, end, name
    type Span = (f64, f64, String);
    let mut open: HashMap<(i64, i64), Vec<f64>> = HashMap::new();
    let mut spans: HashMap<(i64, i64), Vec<Span>> = HashMap::new();
    for e in evs {
        let key = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
        let ts = e["ts"].as_f64().unwrap_or(0.0);
        match e["ph"].as_str().unwrap() {
            "B" => open.entry(key).or_default().push(ts),
            "E" => {
                let start = open.get_mut(&key).unwrap().pop().unwrap();
                spans
                    .entry(key)
                    .or_default()
                    .push((start, ts, "region".into()));
            }
            "X" => {
                let d = e["dur"].as_f64().unwrap();
                let name = e["name"].as_str().unwrap().to_string();
                spans.entry(key).or_default().push((ts, ts + d, name));
            }
            _ => {}
        }
    }
    for (key, mut v) in spans {
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<Span> = Vec::new();
        for s in v {
            while stack.last().is_some_and(|t| t.1 <= s.0) {
                stack.pop();
            }
            if let Some(t) = stack.last() {
                assert!(
                    s.1 <= t.1,
                    "{case}: {key:?}: {} [{}, {}] overlaps {} [{}, {}]",
                    s.2,
                    s.0,
                    s.1,
                    t.2,
                    t.0,
                    t.1
                );
            }
            stack.push(s);
        }
    }
}
