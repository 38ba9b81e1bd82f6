//! Any bytes as a preload events file: decoded records or a counted loss.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut w = tracekit_core::Warnings::default();
    let _ = tracekit_kwinject::record::events::decode(data, &mut w);
});
