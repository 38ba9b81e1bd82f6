//! Every trace2 file of the real corpus (git 2.47.3 and git 2.39.5), read
//! and written back in its own format, is byte-identical: through the
//! record writers, and through the [`Converter`] the CLI's `convert` uses
//! (which must keep each record's own `file:line`, atexit included, and
//! the input's variant).

use std::path::{Path, PathBuf};

use tracekit_trace2::convert::{write_same_format, Converter};
use tracekit_trace2::reader::{detect, RecordIter};
use tracekit_trace2::Kind;

fn corpora() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    vec![root.join("trace2"), root.join("trace2-git2.39")]
}

/// Every trace file in the corpus: the three logs of each case and the
/// per-process files of directory targets.
fn trace_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = corpora();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus directory") {
            let p = e.expect("entry").path();
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if p.is_dir() {
                stack.push(p);
            } else if ["event.jsonl", "perf.log", "normal.log"].contains(&name.as_str())
                || name.starts_with("2026")
                || name == "git-trace2-discard"
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn corpus_round_trips_byte_for_byte() {
    round_trip(false);
}

#[test]
fn corpus_round_trips_through_the_converter() {
    round_trip(true);
}

fn round_trip(through_converter: bool) {
    let files = trace_files();
    assert!(
        files
            .iter()
            .filter(|f| f.to_string_lossy().contains("git2.39"))
            .count()
            >= 21,
        "git 2.39 corpus not found or incomplete"
    );
    assert!(
        files.len() > 80,
        "corpus not found or incomplete: {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let data = std::fs::read(path).expect("read");
        if data.is_empty() {
            continue;
        }
        let format =
            detect(&data).unwrap_or_else(|| panic!("{}: format not recognised", path.display()));
        let mut out = Vec::with_capacity(data.len());
        let mut conv = Converter::new(format);
        for rec in RecordIter::new(&data, format) {
            match format.parse(rec.bytes) {
                Ok(ev) => {
                    // The corpus has no printf and no unknown events: a
                    // record parsed as one was misread, even if it
                    // round-trips.
                    if matches!(ev.kind(), Kind::Unknown | Kind::Printf) {
                        failures.push(format!(
                            "{}:{}: read as {:?}",
                            path.display(),
                            rec.line,
                            ev.kind()
                        ));
                    }
                    if !through_converter {
                        write_same_format(&ev, format, &mut out)
                    } else if let Err(e) = conv.write(&ev, &mut out) {
                        failures.push(format!("{}:{}: {e}", path.display(), rec.line));
                        break;
                    }
                }
                Err(e) => {
                    failures.push(format!("{}:{}: {e}", path.display(), rec.line));
                    break;
                }
            }
        }
        if out != data {
            let pos = out
                .iter()
                .zip(&data)
                .position(|(a, b)| a != b)
                .unwrap_or(out.len().min(data.len()));
            let line = data[..pos].iter().filter(|&&c| c == b'\n').count() + 1;
            let ctx = |b: &[u8]| {
                let s = b[..pos]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                let e = b[pos..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |i| pos + i);
                String::from_utf8_lossy(&b[s..e]).into_owned()
            };
            failures.push(format!(
                "{} ({}): differs at line {line}\n  want: {}\n  got:  {}",
                path.display(),
                format.name(),
                ctx(&data),
                ctx(&out)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
