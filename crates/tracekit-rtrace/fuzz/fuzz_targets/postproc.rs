//! Any bytes through the text reader (round trip) and the post-processor
//! with option sets chosen by the first byte: errors are fine, panics not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_rtrace::postproc::{self, Options, SortOrder};
use tracekit_rtrace::Reader;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, text)) = data.split_first() else {
        return;
    };
    let mut reader = Reader::new(text);
    let mut out = Vec::new();
    while let Ok(Some(rec)) = reader.next_record() {
        let _ = rec.write(&mut out);
    }
    let opts = Options {
        filter_leaks: sel & 1 != 0,
        compress: sel & 2 != 0,
        sort: (sel & 2 != 0 && sel & 4 != 0).then_some(SortOrder::Count),
        context: (sel & 8 != 0).then_some(u32::from(sel >> 4)),
        resource: (sel & 16 != 0).then_some(3),
        backtrace_depth: (sel & 32 != 0).then_some(2),
        ..Default::default()
    };
    let _ = postproc::run(text, &opts, Vec::new());
    let _ = tracekit_rtrace::report::analyse(text, 5, false);
});
