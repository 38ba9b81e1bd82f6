//! `tracekit report` analyses on the upstream sample: leak totals equal
//! the reference post-processor's leak summary, the text report matches
//! our reviewed expected file, the SVGs are well-formed.

use tracekit_rtrace::report;

mod common;
use common::upstream;

#[test]
fn context_report() {
    let rep = report::analyse(&upstream("context.txt")[..], 20, true).unwrap();
    let mem = &rep.resources[0];
    // sp-rtrace-postproc -l on this file: "29 block(s) leaked with total
    // size of 29039 bytes" (context.txt..lc).
    assert_eq!((mem.leaked_blocks, mem.leaked_bytes), (29, 29039));
    assert_eq!((mem.allocs, mem.frees), (58, 29));
    assert_eq!(rep.leaks.len(), 7);
    assert_eq!(rep.leaks.iter().map(|s| s.blocks).sum::<u64>(), 29);
    assert!(rep.leaks.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    let mut text = Vec::new();
    rep.write_text(&mut text, "context.txt").unwrap();
    let text = String::from_utf8(text).unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/expected/context.report.txt"
    );
    if std::env::var_os("TRACEKIT_BLESS").is_some() {
        std::fs::write(path, &text).unwrap();
    } else {
        assert_eq!(text, std::fs::read_to_string(path).unwrap());
    }
    let json = rep.to_json("context.txt");
    assert_eq!(json["resources"][0]["leaked_bytes"], 29039);

    let mut svg = Vec::new();
    rep.write_timeline_svg(&mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<polyline"));
    let mut flame = Vec::new();
    rep.write_leak_flamegraph(&mut flame).unwrap();
    let flame = String::from_utf8(flame).unwrap();
    assert!(flame.contains("<svg") && flame.contains("Leaked bytes"));
    // The folded stacks carry every leaked byte.
    let folded = String::from_utf8(rep.leak_folded()).unwrap();
    let total: u64 = folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 29039);
}
