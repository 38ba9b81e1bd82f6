//! Markers from the program (`include/tracekit/mem.h`): a small C program
//! built here names phases and asks for snapshots; run plain it behaves
//! the same (the weak functions are null, the calls skipped), and under
//! `tracekit record mem` its markers are in the recording (`.tkmem` and
//! `--format text`), the report (text, JSON, HTML), the timeline
//! conversion and `tracekit sql`.
//!
//! Needs `cc` (gcc).

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod common;
use common::ok;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tracekit_report::{Body, Table, Value};

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include")
}

fn build(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let include = include_dir();
    let mut before = flags.to_vec();
    before.extend(["-I", include.to_str().expect("utf8 path")]);
    common::cc(dir, name, src, &before, &[])
}

fn stdout(out: std::io::Result<Output>) -> String {
    String::from_utf8(ok(out).stdout).unwrap()
}

/// Two phases and two snapshots: at the first, blocks of 1000 and 500
/// bytes are live; at the second only the 500 (and stdio's buffer, if
/// printf made it by then: it has not, the program prints at the end).
/// The third marker's name is 400 bytes long: cut to 255.
const PHASES: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracekit/mem.h>

static char *load(size_t n) {
    char *p = malloc(n);
    memset(p, 1, n);
    return p;
}

int main(void) {
    tracekit_mark("load");
    char *a = load(1000);
    char *b = load(500);
    tracekit_snapshot("loaded");
    free(a);
    char name[401];
    memset(name, 'x', 400);
    name[400] = 0;
    tracekit_mark(name);
    tracekit_snapshot("after \"free\"");
    printf("marked %d %p\n", b[0], (void *)tracekit_mem_mark);
    return 3;
}
"#;

fn table<'a>(r: &'a tracekit_report::Report, id: &str) -> &'a Table {
    match &r.find(id).unwrap_or_else(|| panic!("no section {id}")).body {
        Body::Table(t) => t,
        b => panic!("{id}: not a table: {b:?}"),
    }
}

fn cell<'a>(t: &'a Table, row: usize, key: &str) -> &'a Value {
    &t.rows[row][t.column(key).unwrap_or_else(|| panic!("no column {key}"))]
}

#[test]
fn markers_reach_the_recording_report_timeline_and_sql() {
    let tmp = tempfile::tempdir().unwrap();
    // -O0: the allocations stay as written; -no-pie and -z now as well
    // as the default PIE with lazy binding.
    for (k, flags) in [
        &["-O0", "-g"][..],
        &["-O0", "-g", "-no-pie", "-Wl,-z,now"][..],
    ]
    .into_iter()
    .enumerate()
    {
        let exe = build(tmp.path(), &format!("phases{k}"), PHASES, flags);

        // Plain: the weak functions are null, the calls skipped.
        let plain = Command::new(&exe).output().unwrap();
        assert_eq!(plain.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&plain.stdout), "marked 1 (nil)\n");

        // Recorded: the same status; the functions are the recorder's.
        let rec = tmp.path().join(format!("phases{k}.tkmem"));
        // Every address: its sp-rtrace text is read below.
        let recorded = tracekit()
            .args(["-q", "record", "mem", "--addresses", "-o"])
            .arg(&rec)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        assert_eq!(
            recorded.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&recorded.stderr)
        );
        let out = String::from_utf8_lossy(&recorded.stdout);
        assert!(out.starts_with("marked 1 0x"), "{out}");

        // The text of the recording: a comment per marker, in place.
        let text = stdout(tracekit().args(["rtrace", "decode"]).arg(&rec).output());
        let marks: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("## tracekit-marker: "))
            .collect();
        assert_eq!(marks.len(), 4, "{text}");
        assert!(marks[0].contains(" mark thread="), "{}", marks[0]);
        assert!(
            marks[0].contains(" name=\"load\" frames=0x"),
            "{}",
            marks[0]
        );
        assert!(marks[1].contains(" snapshot "), "{}", marks[1]);
        assert!(
            marks[2].contains(&format!("name=\"{}\" length=400 ", "x".repeat(255))),
            "{}",
            marks[2]
        );
        assert!(
            marks[3].contains(r#"name="after \"free\"""#),
            "{}",
            marks[3]
        );
        // In number order among the calls: load's two mallocs come
        // between the first two markers.
        let at = |needle: &str| text.find(needle).unwrap();
        let mallocs: Vec<usize> = text.match_indices("] malloc(").map(|m| m.0).collect();
        assert!(at("name=\"load\"") < mallocs[0]);
        assert!(mallocs[1] < at("name=\"loaded\""));

        // The report: the markers, and the live memory at each snapshot.
        let report = stdout(tracekit().arg("report").arg(&rec).output());
        // The same from the decoded text (the text reader's items) as from
        // the recording's (made without the text).
        let decoded = tmp.path().join(format!("phases{k}.rtrace"));
        std::fs::write(&decoded, &text).unwrap();
        let of_text = stdout(
            tracekit()
                .args(["rtrace", "report", "--no-resolve"])
                .arg(&decoded)
                .output(),
        );
        let of_rec = stdout(
            tracekit()
                .args(["rtrace", "report", "--no-resolve"])
                .arg(&rec)
                .output(),
        );
        // (The recording's report starts with its processes' table.)
        let body = |r: &str| r.find("\n  process ").map(|i| r[i..].to_string());
        assert_eq!(body(&of_text), body(&of_rec));
        assert!(of_text.contains("markers: 4 (2 snapshot(s))"), "{of_text}");
        assert!(report.contains("markers: 4 (2 snapshot(s))"), "{report}");
        assert!(report.contains("mark      \"load\" at main"), "{report}");
        assert!(
            report.contains("snapshot  \"loaded\" at main (")
                && report.contains(
                    "      live: 1.5 KiB in 2 block(s)\n        1000 B in 1 block(s) from load ("
                ),
            "{report}"
        );
        assert!(report.contains("(name cut: 400 bytes)"), "{report}");
        assert!(
            report.contains("      live: 500 B in 1 block(s)\n"),
            "{report}"
        );

        let json = ok(tracekit().args(["report", "--json"]).arg(&rec).output()).stdout;
        let doc = tracekit_report::json::parse(&json).expect("tracekit.report/1");
        let image = &doc.reports[1];
        let t = table(image, "markers");
        assert_eq!(t.rows.len(), 4);
        let kinds: Vec<&Value> = (0..4).map(|r| cell(t, r, "kind")).collect();
        assert_eq!(
            kinds,
            ["mark", "snapshot", "mark", "snapshot"]
                .map(|k| Value::Text(k.into()))
                .iter()
                .collect::<Vec<_>>()
        );
        assert_eq!(cell(t, 1, "live_bytes").as_f64(), Some(1500.0));
        assert_eq!(cell(t, 1, "live_blocks").as_f64(), Some(2.0));
        assert_eq!(cell(t, 3, "live_bytes").as_f64(), Some(500.0));
        assert!(cell(t, 0, "live_bytes").is_null());
        assert_eq!(cell(t, 2, "name_length").as_f64(), Some(400.0));
        assert!(cell(t, 0, "name_length").is_null());
        let sites = table(image, "snapshot_sites");
        assert_eq!(sites.rows.len(), 3);
        assert_eq!(cell(sites, 0, "bytes").as_f64(), Some(1000.0));
        assert_eq!(cell(sites, 1, "bytes").as_f64(), Some(500.0));
        assert_eq!(cell(sites, 2, "bytes").as_f64(), Some(500.0));

        let page = tmp.path().join(format!("phases{k}.html"));
        ok(tracekit()
            .args(["report", "--html", "-o"])
            .arg(&page)
            .arg(&rec)
            .output());
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            html.contains("Live at each snapshot"),
            "page without the markers"
        );

        // The timeline: instants on the thread's track.
        let chrome = stdout(
            tracekit()
                .arg("convert")
                .arg(&rec)
                .args(["--to", "chrome", "-o", "-"])
                .output(),
        );
        let v: serde_json::Value = serde_json::from_str(&chrome).unwrap();
        let events = v["traceEvents"].as_array().or(v.as_array()).unwrap();
        let instants: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["ph"] == "i" && (e["cat"] == "mark" || e["cat"] == "snapshot"))
            .collect();
        assert_eq!(instants.len(), 4, "{chrome}");
        assert_eq!(instants[1]["name"], "loaded");
        assert_eq!(instants[1]["args"]["memory_in_use"], 1500);
        assert_eq!(instants[0]["tid"], instants[0]["pid"]); // the main thread

        // sql: the generic instants table.
        let rows = stdout(
            tracekit()
                .args([
                    "sql",
                    "--format",
                    "csv",
                    "SELECT name, category, tid = pid AS main_thread FROM instants \
                     WHERE category IN ('mark', 'snapshot') ORDER BY ts_ns, name",
                ])
                .arg(&rec)
                .output(),
        );
        let rows: Vec<&str> = rows.lines().collect();
        assert_eq!(rows.len(), 5, "{rows:?}");
        assert!(rows.contains(&"load,mark,true"), "{rows:?}");
        assert!(
            rows.contains(&format!("{},mark,true", "x".repeat(255)).as_str()),
            "{rows:?}"
        );
        assert!(rows.contains(&"loaded,snapshot,true"), "{rows:?}");
        assert!(
            rows.contains(&"\"after \"\"free\"\"\",snapshot,true"),
            "{rows:?}"
        );
    }
}

/// A text recording carries the same markers (as comments), and reading
/// it gives the same report section as the `.tkmem` file.
#[test]
fn text_recordings_carry_the_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "phases", PHASES, &["-O0", "-g"]);
    let dir = tmp.path().join("rec");
    let recorded = tracekit()
        .args(["-q", "record", "mem", "--format", "text", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(recorded.status.code(), Some(3));
    let trace = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "rtrace"))
        .unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(text.matches("\n## tracekit-marker: ").count(), 4, "{text}");
    let report = stdout(tracekit().arg("report").arg(&trace).output());
    assert!(report.contains("markers: 4 (2 snapshot(s))"), "{report}");
    assert!(
        report.contains("      live: 1.5 KiB in 2 block(s)\n"),
        "{report}"
    );
    // sp-rtrace's post-processor keeps permanent comments: so does ours.
    let post = stdout(tracekit().args(["rtrace", "postproc"]).arg(&trace).output());
    assert_eq!(post.matches("## tracekit-marker: ").count(), 4, "{post}");
}
