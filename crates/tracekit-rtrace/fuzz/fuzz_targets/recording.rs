//! Any bytes through the recorder-output decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tracekit_rtrace::recording::decode(data, Vec::new());
});
