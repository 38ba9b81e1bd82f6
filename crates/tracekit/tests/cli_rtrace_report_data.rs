//! The memory report as data: `tracekit report --json` (`tracekit.report/1`)
//! and `--html` on a corpus recording, and the text as it always was.
//!
//! `tests/corpus/rtrace/recording/phases.tkmem` is `record mem` of
//! `phases.c` (next to it): its figures below follow from the program's
//! source, not from our output. Libc's frames are named on the machine
//! that reads the file, so nothing here depends on them.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tracekit_report::{Body, Document, Report, Section, Table, Value};

const REC: &str = "tests/corpus/rtrace/recording/phases.tkmem";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs tracekit in the repository's root (the text names the input as
/// given), which must succeed.
fn ok(args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("tracekit");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn section<'a>(r: &'a Report, id: &str) -> &'a Section {
    r.find(id)
        .unwrap_or_else(|| panic!("{}: no section {id}", r.title))
}

fn table<'a>(r: &'a Report, id: &str) -> &'a Table {
    match &section(r, id).body {
        Body::Table(t) => t,
        b => panic!("{id}: not a table: {b:?}"),
    }
}

fn cell<'a>(t: &'a Table, row: usize, key: &str) -> &'a Value {
    let c = t.column(key).unwrap_or_else(|| panic!("no column {key}"));
    &t.rows[row][c]
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v:?}"))
}

fn item<'a>(r: &'a Report, id: &str, key: &str) -> &'a Value {
    match &section(r, id).body {
        Body::Summary { items } => {
            &items
                .iter()
                .find(|i| i.key == key)
                .unwrap_or_else(|| panic!("{id}: no item {key}"))
                .value
        }
        b => panic!("{id}: not a summary: {b:?}"),
    }
}

/// A flame graph's whole weight: its stacks and the ones left out.
fn flame_total(r: &Report, id: &str) -> f64 {
    match &section(r, id).body {
        Body::Flame(f) => {
            f.stacks.iter().map(|s| s.weight).sum::<f64>()
                + f.more.as_ref().map_or(0.0, |m| m.weight)
        }
        b => panic!("{id}: not a flame: {b:?}"),
    }
}

fn document() -> Document {
    let o = ok(&["report", "--json", REC]);
    tracekit_report::json::parse(&o.stdout).expect("tracekit.report/1")
}

#[test]
fn text_is_as_before() {
    // Written by the text renderer before the report was data.
    for (args, expected) in [
        (
            vec!["rtrace", "report", "--no-resolve", REC],
            "phases.no-resolve.txt",
        ),
        (
            vec![
                "rtrace",
                "report",
                "--no-resolve",
                "tests/corpus/rtrace/recording/phases.tkmem#10659-0",
            ],
            "phases-child.no-resolve.txt",
        ),
    ] {
        let got = ok(&args).stdout;
        let want = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/expected/rtrace")
                .join(expected),
        )
        .expect("expected text");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{expected}"
        );
    }
}

#[test]
fn json_holds_what_the_program_did() {
    let d = document();
    assert_eq!(d.schema, "tracekit.report/1");
    // The recording, then each process image.
    assert_eq!(d.reports.len(), 3);
    assert!(d.reports.iter().all(|r| r.dialect == "rtrace"));
    let procs = table(&d.reports[0], "processes");
    assert_eq!(procs.rows.len(), 2);
    assert_eq!(num(cell(procs, 0, "pid")), 10657.0);
    assert_eq!(num(cell(procs, 1, "ppid")), 10657.0);
    assert_eq!(
        cell(procs, 1, "end"),
        &Value::Text("the process exited with status 3".into())
    );

    // The parent: 200 blocks of 1000+i bytes held then freed, 50
    // temporaries of 64+i bytes, 10 leaks of 24 bytes, one of 100000.
    let p = &d.reports[1];
    assert_eq!(num(item(p, "image", "pid")), 10657.0);
    assert_eq!(num(item(p, "summary", "calls")), 511.0);
    assert_eq!(item(p, "summary", "attached"), &Value::Bool(false));
    let res = table(p, "resources");
    let allocated = 200.0 * 1000.0 + 199.0 * 200.0 / 2.0 + 50.0 * 64.0 + 49.0 * 50.0 / 2.0;
    let allocated = allocated + 240.0 + 100_000.0;
    assert_eq!(num(cell(res, 0, "allocations")), 261.0);
    assert_eq!(num(cell(res, 0, "allocated_bytes")), allocated);
    assert_eq!(num(cell(res, 0, "temporary")), 50.0);
    assert_eq!(num(cell(res, 0, "leaked_blocks")), 11.0);
    assert_eq!(num(cell(res, 0, "leaked_bytes")), 100_240.0);
    // At the peak: the 200 blocks and the last temporary (64+49).
    let peak = 200.0 * 1000.0 + 199.0 * 200.0 / 2.0 + 113.0;
    assert_eq!(num(cell(res, 0, "peak_bytes")), peak);

    // Each flame graph adds up to its resource's figure.
    assert_eq!(flame_total(p, "memory-flame-allocations"), 261.0);
    assert_eq!(flame_total(p, "memory-flame-temporary"), 50.0);
    assert_eq!(flame_total(p, "memory-flame-leaked"), 100_240.0);
    assert_eq!(flame_total(p, "memory-flame-allocated"), allocated);
    assert_eq!(flame_total(p, "memory-flame-peak"), peak);

    // Consumption over time: up to the peak, down to what leaked.
    match &section(p, "usage").body {
        Body::Series(s) => {
            let v = &s.lines[0].values;
            assert_eq!(v.len(), s.x.len());
            assert_eq!(v.iter().cloned().fold(0.0, f64::max), peak);
            assert_eq!(v.last(), Some(&100_240.0));
            assert!(s.x.windows(2).all(|w| w[0] <= w[1]), "{:?}", s.x);
        }
        b => panic!("usage: {b:?}"),
    }

    // The leak view: the 100000-byte block first, its stack ending at
    // the place that allocated it; the backtraces the text lists.
    let leaks = table(p, "memory-leaked");
    assert_eq!(leaks.rows.len(), 2);
    assert_eq!(num(cell(leaks, 0, "leaked")), 100_000.0);
    assert_eq!(num(cell(leaks, 1, "leaked")), 240.0);
    match (cell(leaks, 0, "stack"), cell(leaks, 0, "function")) {
        (Value::List(frames), Value::Text(f)) => assert_eq!(frames.last(), Some(f)),
        other => panic!("{other:?}"),
    }
    assert_eq!(table(p, "memory-leaked-backtraces").rows.len(), 2);
    let sites = table(p, "leak_sites");
    let leaked: f64 = (0..sites.rows.len())
        .map(|i| num(cell(sites, i, "leaked")))
        .sum();
    assert_eq!(leaked, 100_240.0);

    // The child: 30 blocks of 500 bytes and 3 of 24, all left at _exit.
    let c = &d.reports[2];
    let res = table(c, "resources");
    assert_eq!(num(cell(res, 0, "allocations")), 33.0);
    assert_eq!(num(cell(res, 0, "leaked_bytes")), 15_072.0);
    assert_eq!(flame_total(c, "memory-flame-temporary"), 0.0);
}

#[test]
fn top_limits_the_views_and_counts_the_rest() {
    let o = ok(&["report", "--json", "--top", "1", REC]);
    let d = tracekit_report::json::parse(&o.stdout).expect("json");
    let t = table(&d.reports[1], "memory-allocations");
    assert_eq!(t.rows.len(), 1);
    let more = t.more.as_ref().expect("more");
    // grow's 200 calls shown; the temporaries, small and big leaks not.
    assert_eq!(num(cell(t, 0, "allocations")), 200.0);
    assert_eq!(more.rows, 3);
    let c = t.column("allocations").unwrap();
    assert_eq!(num(&more.totals[c]), 61.0);
}

#[test]
fn html_page_renders_in_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    let page = dir.path().join("mem.html");
    ok(&["report", "--html", "-o", page.to_str().unwrap(), REC]);
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(html.contains("default-src 'none'"));
    for bad in ["http:", "https:", "url(", "@import", "src="] {
        assert!(!html.contains(bad), "{bad}");
    }
    // Views the page draws another way stay in JSON only.
    for id in [
        "memory-peak-backtraces",
        "top_sites",
        "memory-flame-allocated",
    ] {
        assert!(!html.contains(&format!("id=\"r1-{id}\"")), "{id}");
    }
    assert!(html.len() < 400_000, "{} bytes", html.len());
    let selectors = [
        "article[data-dialect=rtrace]",
        "#r0-processes table.tk-table tbody tr",
        "#r1-image dl.tk-summary div[data-key=end]",
        "#r1-summary dl.tk-summary div[data-key=calls]",
        "#r1-resources table.tk-table th[data-key=leaked_bytes]",
        "#r1-usage svg.tk-series-chart path",
        "#r1-memory-flame-allocations svg.tk-flame rect",
        "#r1-memory-flame-temporary svg.tk-flame rect",
        "#r1-memory-flame-peak svg.tk-flame rect",
        "#r1-memory-flame-leaked svg.tk-flame rect",
        "#r1-memory-peak table.tk-table tbody tr .tk-stack",
        "#r1-memory-leaked table.tk-table th[data-key=leaked]",
        "#r1-leak_sites .tk-stack",
        "#r2-leak_sites table.tk-table tbody tr",
    ];
    let Some(mut p) = common::chromium::check_page(&page, &selectors) else {
        return;
    };
    let pids = p.eval(
        "[...document.querySelectorAll('#r0-processes tbody tr')].map(r => r.cells[0].textContent)",
    );
    assert_eq!(pids, serde_json::json!(["10657", "10659"]));
    // The leak view's first place leaked the 100000-byte block.
    let first = p.eval(
        "+document.querySelector('#r1-memory-leaked tbody tr td[data-v=\"100000\"]').dataset.v",
    );
    assert_eq!(first, 100000.0);
    assert!(
        p.log.console_errors.is_empty(),
        "{:?}",
        p.log.console_errors
    );
}

/// The corpus recording is a version 1 file (written before `aptr` code
/// 12): this version still reads it, and `info` names the file's own
/// version, not the one it writes.
#[test]
fn a_version_1_recording_reads_and_says_so() {
    let bytes = std::fs::read(root().join(REC)).unwrap();
    assert_eq!(
        bytes[8..12],
        1u32.to_le_bytes(),
        "the corpus file is version 1"
    );
    let info = String::from_utf8(ok(&["info", REC]).stdout).unwrap();
    assert!(
        info.contains("(.tkmem version 1), 2 process image(s)"),
        "{info}"
    );
    // A file with a head word changed: refused, with what `report` said.
    let dir = tempfile::tempdir().unwrap();
    let refused = |at: usize, word: u32| -> String {
        let path = dir.path().join(format!("changed-{at}.tkmem"));
        let mut b = bytes.clone();
        b[at..at + 4].copy_from_slice(&word.to_le_bytes());
        std::fs::write(&path, b).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_tracekit"))
            .args(["report".as_ref(), path.as_os_str()])
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    // A later version's file, saying which this reads.
    let err = refused(8, 99);
    assert!(
        err.contains("version 99: this tracekit reads versions 1 to 3"),
        "{err}"
    );
    // A flag its version does not have (version 3's in a version 1 file).
    let err = refused(12, 1);
    assert!(err.contains("version 1 with flags 0x1"), "{err}");
}
