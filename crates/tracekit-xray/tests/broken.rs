//! The deliberately broken and inconsistent files of the corpus: each gives
//! a clear error (with the byte offset) or warnings plus the records that
//! could be read, never a panic. The expected summaries are ours, in
//! tests/expected/broken/ (TRACEKIT_BLESS=1 rewrites them).

use std::fmt::Write as _;
use std::path::Path;

use tracekit_xray::commands::{self, AccountArgs};
use tracekit_xray::names::FunctionNames;
use tracekit_xray::Trace;

fn summary(path: &Path) -> String {
    let data = std::fs::read(path).unwrap();
    let mut s = String::new();
    let trace = match Trace::open(&data) {
        Ok(t) => t,
        Err(e) => {
            writeln!(s, "open: error: {e}").unwrap();
            return s;
        }
    };
    writeln!(
        s,
        "open: {:?} v{}, {} blocks",
        trace.header.kind,
        trace.header.version,
        trace.blocks.len()
    )
    .unwrap();
    let mut n = 0;
    let mut records = trace.records();
    for r in records.by_ref() {
        match r {
            Ok(_) => n += 1,
            Err(e) => {
                writeln!(s, "records: error after {n} records: {e}").unwrap();
                break;
            }
        }
    }
    writeln!(s, "records: {n}").unwrap();
    for w in trace
        .warnings
        .kept()
        .iter()
        .chain(records.warnings().kept())
    {
        match w.position {
            tracekit_core::Position::Unknown => writeln!(s, "warning: {}", w.message).unwrap(),
            p => writeln!(s, "warning: {p}: {}", w.message).unwrap(),
        }
    }
    let mut sorted = 0;
    for r in trace.sorted_records() {
        if r.is_err() {
            break;
        }
        sorted += 1;
    }
    writeln!(s, "sorted: {sorted}").unwrap();
    let mut out = Vec::new();
    match commands::account(
        &trace,
        &FunctionNames::none(),
        &AccountArgs::default(),
        &mut out,
    ) {
        Ok(w) => {
            write!(s, "account:\n{}", String::from_utf8_lossy(&out)).unwrap();
            for w in w.kept() {
                writeln!(s, "account warning: {}", w.message).unwrap();
            }
        }
        Err(e) => writeln!(s, "account: error: {e}").unwrap(),
    }
    s
}

#[test]
fn broken_files_give_errors_or_warnings() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/xray/synthetic"
    ));
    let expected_dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/expected/broken"
    ));
    let bless = std::env::var_os("TRACEKIT_BLESS").is_some();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.ends_with(".xray") && (n.starts_with("broken-") || n.starts_with("inconsistent-"))
        })
        .collect();
    names.sort();
    assert!(names.len() >= 9, "broken samples missing");
    for p in names {
        let got = summary(&p);
        let want_path =
            expected_dir.join(format!("{}.txt", p.file_stem().unwrap().to_string_lossy()));
        if bless {
            std::fs::create_dir_all(expected_dir).unwrap();
            std::fs::write(&want_path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&want_path)
            .unwrap_or_else(|_| panic!("{} missing (TRACEKIT_BLESS=1)", want_path.display()));
        assert_eq!(got, want, "{}", p.display());
    }
}

/// Truncating a real trace at every offset never panics, and a cut inside
/// a block is an error naming an offset or a warning.
#[test]
fn truncated_traces_never_panic() {
    let p = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/xray/events/events.fdr.xray"
    ));
    let data = std::fs::read(p).unwrap();
    for cut in (0..data.len()).step_by(7) {
        let Ok(t) = Trace::open(&data[..cut]) else {
            assert!(cut < 32);
            continue;
        };
        for r in t.records() {
            if let Err(e) = r {
                assert!(e.to_string().contains("byte offset"), "{e}");
                break;
            }
        }
        for r in t.sorted_records() {
            if r.is_err() {
                break;
            }
        }
    }
}
