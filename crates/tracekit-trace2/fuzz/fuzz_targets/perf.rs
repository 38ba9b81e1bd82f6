//! Any bytes read as the PERF format: see common.rs for what is checked.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use tracekit_trace2::reader::Format;

fuzz_target!(|data: &[u8]| {
    for brief in [false, true] {
        common::check(data, Format::Perf { brief });
    }
});
