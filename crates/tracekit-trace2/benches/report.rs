//! Parsing and report aggregation throughput on EVENT input.
//!
//! Input: `TRACEKIT_BENCH_TRACE2` (e.g. the file from
//! `bench/inputs/trace2/make_big.sh`; its first 64 MiB are used), else
//! every corpus `event.jsonl` concatenated and repeated to about 16 MiB.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tracekit_core::Warnings;
use tracekit_trace2::report::{report_bytes, ReportBuilder};
use tracekit_trace2::{Format, RecordIter};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/trace2");

fn input() -> Vec<u8> {
    if let Ok(path) = std::env::var("TRACEKIT_BENCH_TRACE2") {
        let mut data = std::fs::read(path).expect("TRACEKIT_BENCH_TRACE2 readable");
        if data.len() > 64 << 20 {
            let cut = data[64 << 20..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(data.len(), |i| (64 << 20) + i + 1);
            data.truncate(cut);
        }
        return data;
    }
    let mut one = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(CORPUS)
        .expect("corpus")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for d in dirs {
        if let Ok(b) = std::fs::read(d.join("event.jsonl")) {
            one.extend_from_slice(&b);
        }
    }
    let mut data = Vec::new();
    while data.len() < 16 << 20 {
        data.extend_from_slice(&one);
    }
    data
}

fn bench(c: &mut Criterion) {
    let data = input();
    let mut g = c.benchmark_group("trace2-event");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.sample_size(10);
    g.bench_function("parse", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for rec in RecordIter::new(&data, Format::Event) {
                if Format::Event.parse(rec.bytes).is_ok() {
                    n += 1;
                }
            }
            n
        })
    });
    g.bench_function("parse+report (sequential)", |b| {
        b.iter(|| {
            let mut builder = ReportBuilder::new(20);
            for rec in RecordIter::new(&data, Format::Event) {
                if let Ok(ev) = Format::Event.parse(rec.bytes) {
                    builder.add(&ev, 0);
                }
            }
            builder.finish().events
        })
    });
    g.bench_function("report_bytes (2 parser threads)", |b| {
        b.iter(|| {
            let mut builder = ReportBuilder::new(20);
            let mut w = Warnings::default();
            report_bytes(&data, Format::Event, 0, &mut builder, &mut w);
            builder.finish().events
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
