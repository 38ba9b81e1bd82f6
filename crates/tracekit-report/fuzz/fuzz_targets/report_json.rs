//! Any bytes given to the report reader (`tracekit_report::json::parse`):
//! an error or a document, which every renderer draws without panicking
//! (whatever its numbers, lane indices, parents or lengths say).
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run report_json`
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = tracekit_report::json::parse(data) {
        let mut out = Vec::new();
        tracekit_report::text::write(&mut out, &doc.reports).expect("text");
        tracekit_report::html::write(&mut out, &doc.reports).expect("html");
        let mut json = Vec::new();
        tracekit_report::json::write(&mut json, &doc.reports).expect("json");
        // What we write, we read back.
        tracekit_report::json::parse(&json).expect("read back");
        std::hint::black_box(out.len());
    }
});
