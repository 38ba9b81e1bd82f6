//! Our outputs against llvm-xray 14's golden outputs in the shared corpus.
//! Every golden file whose command succeeded (rc=0 in GOLDEN_COMMANDS.txt)
//! and that we implement is compared byte for byte (JSON as values).

use std::path::{Path, PathBuf};

use tracekit_xray::Trace;

pub fn corpus() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus/xray"
    ))
    .to_path_buf()
}

/// (output file, command words) of every successful golden command.
pub fn golden_commands() -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for list in ["GOLDEN_COMMANDS.txt", "synthetic/GOLDEN_COMMANDS.txt"] {
        let p = corpus().join(list);
        let text = std::fs::read_to_string(&p).expect("golden command list");
        let dir = p.parent().unwrap().to_path_buf();
        for line in text.lines() {
            let Some((file, rest)) = line.split_once(": rc=") else {
                continue;
            };
            let Some((rc, cmd)) = rest.split_once(" :: ") else {
                continue;
            };
            // Broken inputs: llvm-xray sometimes "succeeds" with empty output
            // (an FDR v6 header); we report them (see tests/broken.rs).
            if rc != "0" || file.starts_with("broken-") {
                continue;
            }
            let file_path = dir.join(file);
            let base = file_path.parent().unwrap().to_path_buf();
            let words = cmd.split_whitespace().map(|w| {
                if w.ends_with(".xray") || (!w.starts_with('-') && base.join(w).is_file()) {
                    base.join(w).display().to_string()
                } else {
                    w.to_string()
                }
            });
            out.push((file_path, words.collect()));
        }
    }
    out
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn fdr_dump_equals_llvm_xray() {
    let mut checked = 0;
    for (golden, words) in golden_commands() {
        if words.get(1).map(String::as_str) != Some("fdr-dump") {
            continue;
        }
        let trace_path = PathBuf::from(words.last().unwrap());
        let data = read(&trace_path);
        let trace = Trace::open(&data).unwrap_or_else(|e| panic!("{}: {e}", trace_path.display()));
        let mut out = Vec::new();
        let verify = words.iter().any(|w| w == "-verify" || w == "--verify");
        tracekit_xray::fdr_dump::write_fdr_dump(&trace, verify, &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", trace_path.display()));
        let want = read(&golden);
        assert!(
            out == want,
            "{}: fdr-dump differs from llvm-xray's",
            golden.display()
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} fdr-dump goldens found");
}
