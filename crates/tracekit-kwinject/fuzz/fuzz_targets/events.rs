//! Any bytes as one record of the preload shim: an event or an error,
//! never a panic or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tracekit_kwinject::record::events::decode_one(data);
});
