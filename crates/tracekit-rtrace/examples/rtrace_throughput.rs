//! Throughput of the text reader, the post-processor and the report on a
//! trace file, and of warm address resolution:
//!
//!   cargo run --release -p tracekit-rtrace --example rtrace_throughput -- TRACE [-l|-lc|report|read]
//!
//! `report` of a `.tkmem` recording analyses every image as `tracekit
//! report` does, symbols resolved (bench/rtrace-report.sh times it against
//! heaptrack_print); `report OUT` writes the images' text reports to the
//! file OUT, `report OUT json` their JSON (to compare a change's output).
//!
//! Prints MB/s per CPU-second of the chosen pass (bench/rtrace.sh times
//! the CLI instead).

use std::io::BufReader;
use std::time::Instant;

use tracekit_rtrace::postproc::{self, Options};

/// The first bytes of the file at `path`.
fn head(path: &str) -> Vec<u8> {
    use std::io::Read;
    let mut b = Vec::new();
    std::fs::File::open(path)
        .expect("open")
        .take(16)
        .read_to_end(&mut b)
        .expect("read");
    b
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!(
            "usage: rtrace_throughput TRACE [read|plain|-l|-lc|report [OUT [json]]|resolve|decode]"
        );
        std::process::exit(2);
    };
    let mode = args.get(2).map(String::as_str).unwrap_or("plain");
    let size = std::fs::metadata(path).expect("trace").len() as f64;
    let open = || BufReader::with_capacity(1 << 20, std::fs::File::open(path).expect("open"));
    let t = Instant::now();
    match mode {
        "read" => {
            let mut r = tracekit_rtrace::Reader::new(open());
            let mut n = 0u64;
            while r.next_record().expect("read").is_some() {
                n += 1;
            }
            eprintln!("{n} records");
        }
        "decode" => {
            // TRACE is a recorder file (.tkrt)
            let out = std::io::BufWriter::with_capacity(1 << 16, std::io::sink());
            let (_, stats) =
                tracekit_rtrace::recording::decode_file(std::path::Path::new(path), out)
                    .expect("decode");
            eprintln!("{} events", stats.events);
        }
        "report" if tracekit_rtrace::recording::packed::sniff(&head(path)) => {
            // A .tkmem recording: every image analysed as `tracekit report`
            // does (symbols resolved), its text written to nowhere.
            let file =
                tracekit_rtrace::recording::packed::PackedFile::open(path.as_ref()).expect("open");
            let sym = tracekit_rtrace::report::Symbolise::system();
            let mut out: Box<dyn std::io::Write> = match args.get(3) {
                Some(p) => Box::new(std::fs::File::create(p).expect("create OUT")),
                None => Box::new(std::io::sink()),
            };
            let json = args.get(4).is_some_and(|a| a == "json");
            let mut calls = 0;
            for k in 0..file.images.len() {
                let items = tracekit_rtrace::ItemStream(Box::new(
                    tracekit_rtrace::recording::Events::packed(&file, k).expect("image"),
                ));
                let rep = tracekit_rtrace::report::analyse_with(items, 20, &sym).expect("report");
                if json {
                    serde_json::to_writer_pretty(&mut out, &rep.to_json(path)).expect("write");
                } else {
                    rep.write_text(&mut out, path).expect("write");
                }
                calls += rep.calls;
            }
            eprintln!("{} images, {calls} calls", file.images.len());
        }
        "report" => {
            let rep = tracekit_rtrace::report::analyse(open(), 20, false).expect("report");
            eprintln!("{} calls", rep.calls);
        }
        "resolve" => {
            // Warm resolution: every frame address of the trace, twice.
            let mut res = tracekit_rtrace::resolve::Resolver::new(None);
            let mut addrs = Vec::new();
            let mut r = tracekit_rtrace::Reader::new(open());
            while let Some(rec) = r.next_record().expect("read") {
                match rec {
                    tracekit_rtrace::Record::Map(m) => res.add_map(&m),
                    tracekit_rtrace::Record::Frame(f) => addrs.push(f.addr),
                    _ => {}
                }
            }
            for &a in &addrs {
                res.resolve(a);
            }
            let t = Instant::now();
            for &a in &addrs {
                std::hint::black_box(res.resolve(a));
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "resolve warm: {} addresses in {s:.3} s = {:.1} M addresses/s",
                addrs.len(),
                addrs.len() as f64 / s / 1e6
            );
            return;
        }
        opts => {
            let o = Options {
                filter_leaks: opts.starts_with('-') && opts.contains('l'),
                compress: opts.starts_with('-') && opts.contains('c'),
                ..Default::default()
            };
            postproc::run(open(), &o, std::io::sink()).expect("postproc");
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "{mode}: {:.0} MB in {s:.2} s = {:.0} MB/s",
        size / 1e6,
        size / 1e6 / s
    );
}
