//! Any bytes as a sequence of stream events from the preload shim (each
//! prefixed by a one-byte length): reassembled records, each decoded, or
//! counted losses; never a panic or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_kwinject::record::{events, preload};

fuzz_target!(|data: &[u8]| {
    let mut w = tracekit_core::Warnings::default();
    let mut r = preload::reassembler();
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let n = (n as usize).min(tail.len());
        preload::take_fragment(&mut r, 0, 0, &tail[..n], &mut w);
        rest = &tail[n..];
    }
    for c in r.take_complete() {
        let _ = events::decode_one(&c.record);
    }
    let _ = r.incomplete();
});
