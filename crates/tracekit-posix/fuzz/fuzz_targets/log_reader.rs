//! Any bytes given to the trace log reader: an error or events, no panic.
//! `cargo +nightly fuzz run log_reader` (or RUSTC_BOOTSTRAP=1 cargo fuzz run log_reader)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = tracekit_posix::LogReader::from_bytes(data.to_vec()) {
        let mut n = 0u64;
        while let Some(e) = r.next_event() {
            if let Ok(e) = e {
                n += e.data.len() as u64 + e.info.event_id as u64;
            }
        }
        std::hint::black_box(n);
    }
});
