//! Any bytes read as the EVENT format: see common.rs for what is checked.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use tracekit_trace2::reader::Format;

fuzz_target!(|data: &[u8]| {
    common::check(data, Format::Event);
});
