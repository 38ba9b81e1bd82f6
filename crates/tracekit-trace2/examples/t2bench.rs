//! Times the hot paths on a large file without the CLI:
//! `cargo run --release -p tracekit-trace2 --example t2bench -- FILE [parse|perf|normal|event|report|timeline]`.
use std::io::Write;
use std::time::Instant;

use tracekit_core::timeline::{Event as TEvent, Sink, TraceInfo};
use tracekit_trace2::convert::Converter;
use tracekit_trace2::reader::{detect, Format, RecordIter};
use tracekit_trace2::report::ReportBuilder;
use tracekit_trace2::timeline::Trace2Timeline;

/// Counts the timeline's events (the mapping's own cost, no output).
#[derive(Default)]
struct Count(u64);

impl Sink for Count {
    fn start(&mut self, _: &TraceInfo<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn event(&mut self, _: &TEvent<'_>) -> std::io::Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: t2bench FILE [parse|perf|normal|event|report|timeline]");
        std::process::exit(2);
    };
    let mode = args.get(2).map(String::as_str).unwrap_or("parse");
    let data = std::fs::read(path).expect("read");
    let format = detect(&data).expect("trace2 format");
    let t = Instant::now();
    let mut n = 0u64;
    let mut bad = 0u64;
    let target = match mode {
        "perf" => Some(Format::Perf { brief: false }),
        "normal" => Some(Format::Normal { brief: false }),
        "event" => Some(Format::Event),
        _ => None,
    };
    let mut conv = target.map(Converter::new);
    let mut report = (mode == "report").then(|| ReportBuilder::new(10));
    let mut timeline = (mode == "timeline").then(|| Trace2Timeline::new(Count::default(), "bench"));
    let mut out = Vec::with_capacity(1 << 20);
    let mut sink = std::io::sink();
    for rec in RecordIter::new(&data, format) {
        match format.parse(rec.bytes) {
            Ok(ev) => {
                n += 1;
                if let Some(c) = conv.as_mut() {
                    if c.write(&ev, &mut out).is_err() {
                        bad += 1;
                    }
                    if out.len() > 1 << 20 {
                        sink.write_all(&out).ok();
                        out.clear();
                    }
                }
                if let Some(r) = report.as_mut() {
                    r.add(&ev, 0);
                }
                if let Some(tl) = timeline.as_mut() {
                    tl.add(&ev).expect("counting");
                }
            }
            Err(_) => bad += 1,
        }
    }
    if let Some(r) = report {
        std::hint::black_box(r.finish());
    }
    if let Some(tl) = timeline {
        std::hint::black_box(tl.finish().expect("counting").0 .0);
    }
    let s = t.elapsed().as_secs_f64();
    let mib = data.len() as f64 / (1 << 20) as f64;
    println!(
        "{mode}: {n} records ({bad} bad) in {s:.3} s = {:.0} MiB/s",
        mib / s
    );
}
