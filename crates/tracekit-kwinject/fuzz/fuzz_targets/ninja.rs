//! Any bytes as a `.ninja_log`, a `build.ninja` (its includes read from
//! the same bytes), `ninja -t deps` and `ninja -t graph` text, then the
//! analysis, its report (as data, rendered as text) and the diff of the
//! log with itself. Errors are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_kwinject::ninja::{self, manifest, tools, GraphSource, NinjaBuild, NinjaDiff};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let open = |_: &str| Some(text.to_string());
    let edges = manifest::read_manifest(&text, "build.ninja", &open)
        .map(|m| m.edges)
        .unwrap_or_default();
    let mut graph = tools::read_graph(&text).unwrap_or_default();
    graph.extend(edges);
    let deps = tools::read_deps(&text).unwrap_or_default();
    // The log: the bytes themselves, and the bytes behind a header.
    let mut with_header = b"# ninja log v5\n".to_vec();
    with_header.extend_from_slice(data);
    for bytes in [data, &with_header[..]] {
        let Ok(log) = ninja::read_log(bytes) else { continue };
        let b = NinjaBuild::new(log, "/w/b", GraphSource::ToolGraph, graph.clone(), &deps);
        let _ = NinjaDiff::new(&b.targets, &b.targets);
        let _ = b.wall_us();
        let opts = ninja::report::Options { top: 5, gantt_spans: 50 };
        let r = ninja::report::to_report(&b, "fuzz", &opts);
        let _ = tracekit_report::text::write(&mut Vec::new(), &[r]);
    }
});
