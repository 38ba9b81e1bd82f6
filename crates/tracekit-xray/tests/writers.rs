//! Writers: every corpus trace written back as FDR v5 and as basic v3
//! reads identically with our reader (per thread, every field), and the
//! FDR files are accepted by `llvm-xray fdr-dump` when it is installed
//! (its listing must equal ours).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tracekit_xray::{Record, Trace};

mod common;

fn traces() -> Vec<PathBuf> {
    let root = Path::new(common::CORPUS);
    let mut v = Vec::new();
    for dir in ["args", "events", "mt", "recursion", "tailcall", "synthetic"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if n.ends_with(".xray") && !n.starts_with("broken-") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

type Key = (u32, u32);

fn by_thread<'a>(
    it: impl Iterator<Item = tracekit_core::Result<Record<'a>>>,
    functions_only: bool,
) -> BTreeMap<Key, Vec<Record<'a>>> {
    let mut m: BTreeMap<Key, Vec<Record<'a>>> = BTreeMap::new();
    for r in it {
        let r = r.unwrap();
        if functions_only && r.kind.is_event() {
            continue;
        }
        m.entry((r.pid, r.tid)).or_default().push(r);
    }
    m
}

fn llvm_xray() -> Option<&'static str> {
    ["llvm-xray-14", "llvm-xray"].into_iter().find(|t| {
        std::process::Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn fdr_writer_round_trips() {
    let tool = llvm_xray();
    let tmp = std::env::temp_dir().join(format!("tracekit-xray-writer-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut compared_with_llvm = 0;
    for p in traces() {
        let data = std::fs::read(&p).unwrap();
        let trace = Trace::open(&data).unwrap();
        let mut out = Vec::new();
        tracekit_xray::writer::convert_to_fdr(&trace, &mut out).unwrap();
        let back = Trace::open(&out).unwrap();
        assert_eq!(back.header.version, 5);
        let want = by_thread(trace.records(), false);
        let got = by_thread(back.records(), false);
        assert_eq!(got, want, "{}", p.display());
        if let (Some(tool), tracekit_xray::Endian::Little) = (tool, back.header.endian) {
            let f = tmp.join("rt.xray");
            std::fs::write(&f, &out).unwrap();
            let o = std::process::Command::new(tool)
                .args(["fdr-dump", "-verify"])
                .arg(&f)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{}: llvm-xray rejects our FDR: {}",
                p.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            let mut ours = Vec::new();
            tracekit_xray::fdr_dump::write_fdr_dump(&back, true, &mut ours).unwrap();
            assert!(
                ours == o.stdout,
                "{}: llvm-xray reads our FDR differently",
                p.display()
            );
            compared_with_llvm += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if tool.is_none() {
        eprintln!("llvm-xray not installed: FDR output not cross-checked with it");
    } else {
        assert!(compared_with_llvm >= 20);
    }
}

#[test]
fn basic_writer_round_trips() {
    for p in traces() {
        let data = std::fs::read(&p).unwrap();
        let trace = Trace::open(&data).unwrap();
        let mut out = Vec::new();
        tracekit_xray::writer::convert_to_basic(&trace, &mut out).unwrap();
        let back = Trace::open(&out).unwrap();
        // A basic log keeps its version (llvm-xray's `-f raw` copies the
        // header); an FDR log becomes version 3.
        let version = match trace.header.kind {
            tracekit_xray::LogKind::Basic => trace.header.version,
            tracekit_xray::LogKind::Fdr => 3,
        };
        assert_eq!(
            (back.header.version, back.header.kind),
            (version, tracekit_xray::LogKind::Basic)
        );
        let mut want = by_thread(trace.sorted_records(), true);
        // Basic records hold an 8-bit CPU and no typed-event type.
        for v in want.values_mut() {
            for r in v.iter_mut() {
                r.cpu &= 0xff;
                r.record_type = 0;
            }
        }
        let got = by_thread(back.records(), true);
        assert_eq!(got, want, "{}", p.display());
    }
}

/// A thread with many more than 16 buffers (llvm-xray 14 scrambles their
/// order and fails `account`): every call is accounted once, with the
/// duration it was written with.
#[test]
fn many_buffers_per_thread_account_every_call() {
    use tracekit_xray::header::{Endian, FileHeader, LogKind};
    use tracekit_xray::writer::FdrWriter;
    use tracekit_xray::RecordKind;
    let header = FileHeader {
        version: 5,
        kind: LogKind::Fdr,
        constant_tsc: true,
        nonstop_tsc: true,
        cycle_frequency: 1_000_000_000,
        buffer_size: 256,
        endian: Endian::Little,
    };
    let mut w = FdrWriter::new(Vec::new(), &header).unwrap();
    let mut tsc = 1_000_000u64;
    let rec = |kind, func_id, tsc| Record {
        record_type: 0,
        cpu: 0,
        kind,
        func_id,
        tsc,
        tid: 42,
        pid: 7,
        args: Vec::new(),
        data: std::borrow::Cow::Borrowed(&[]),
    };
    for i in 0..500u64 {
        w.record(&rec(RecordKind::Enter, 1, tsc)).unwrap();
        w.record(&rec(RecordKind::Enter, 2, tsc + 10)).unwrap();
        w.record(&rec(RecordKind::Exit, 2, tsc + 10 + i)).unwrap();
        w.record(&rec(RecordKind::Exit, 1, tsc + 100 + i)).unwrap();
        tsc += 1000;
    }
    let (bytes, _) = w.finish().unwrap();
    let trace = Trace::open(&bytes).unwrap();
    assert!(trace.blocks.len() > 16, "{} blocks", trace.blocks.len());
    let args = tracekit_xray::commands::AccountArgs {
        csv: true,
        ..Default::default()
    };
    let (rows, _, warnings) = tracekit_xray::commands::account_rows(
        &trace,
        &tracekit_xray::names::FunctionNames::none(),
        &args,
    )
    .unwrap();
    assert!(warnings.is_empty(), "{:?}", warnings.kept());
    assert_eq!(rows.len(), 2);
    let f1 = rows.iter().find(|r| r.func_id == 1).unwrap();
    let f2 = rows.iter().find(|r| r.func_id == 2).unwrap();
    assert_eq!((f1.count, f2.count), (500, 500));
    // Sums of the written durations: sum(100 + i) and sum(i), in seconds.
    assert!((f1.sum - (500.0 * 100.0 + 124_750.0) / 1e9).abs() < 1e-12);
    assert!((f2.sum - 124_750.0 / 1e9).abs() < 1e-12);
}

/// Found by fuzzing: a big-endian log whose function ids have bit 20 set
/// was written back big-endian, where the first byte of such a function
/// record reads as a metadata record. The writers always write
/// little-endian, and what they write reads back as the same records.
#[test]
fn big_endian_input_with_high_function_ids_round_trips() {
    let data = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/fuzz-big-endian-high-func-id.xray"
    ))
    .expect("fixture");
    let trace = tracekit_xray::trace::Trace::open(&data).expect("header");
    let want: Vec<_> = trace.records().filter_map(Result::ok).collect();
    assert!(want.iter().any(|r| r.func_id >= 1 << 20));
    let mut out = Vec::new();
    tracekit_xray::writer::convert_to_fdr(&trace, &mut out).expect("write");
    let back = tracekit_xray::trace::Trace::open(&out).expect("our header");
    let got: Vec<_> = back
        .records()
        .collect::<Result<Vec<_>, _>>()
        .expect("our FDR output decodes");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.func_id, g.kind, g.tsc), (w.func_id, w.kind, w.tsc));
    }
}
