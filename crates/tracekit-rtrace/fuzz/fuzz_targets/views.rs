//! Any bytes through the report's views (text, JSON, the report model
//! drawn as JSON and HTML, folded stacks, a diff against itself) and the
//! heaptrack writer: errors are fine, panics not. The bytes also follow a
//! header line and the marker comments' prefix (`## tracekit-marker: `),
//! so that the marker parser and the report's markers section see them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_rtrace::report::{self, Metric, Symbolise};

fuzz_target!(|data: &[u8]| {
    let mut marked = b"version=2.0, arch=x86_64, pid=1, \n<1> : memory (memory allocation in bytes)\n1. [00:00:00.001] malloc(8) = 0x10\n## tracekit-marker: ".to_vec();
    marked.extend_from_slice(data);
    for input in [data, &marked[..]] {
        views(input);
    }
    let _ = tracekit_rtrace::heaptrack::convert(data, Vec::new(), &Symbolise::none());
});

fn views(data: &[u8]) {
    if let Ok(rep) = report::analyse(data, 5, false) {
        let _ = rep.write_text(Vec::new(), "fuzz");
        let _ = rep.to_json("fuzz");
        let page = [rep.to_report("fuzz")];
        let _ = tracekit_report::json::write(&mut Vec::<u8>::new(), &page);
        let _ = tracekit_report::html::write(&mut Vec::<u8>::new(), &page);
        for m in Metric::VIEWS {
            let _ = rep.folded(m);
        }
        let _ = rep.write_timeline_svg(Vec::new());
        let d = report::diff(&rep, &rep, 5);
        assert!(d.traces.is_empty(), "a trace differs from itself");
        let _ = d.write_text(Vec::new(), "a", "b");
    }
}
