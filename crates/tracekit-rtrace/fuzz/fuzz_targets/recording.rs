//! Any bytes through the recorder-output decoder, and as a recording's
//! manifest (`recording.json`): errors are fine, panics not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tracekit_rtrace::recording::decode(data, Vec::new());
    let dir = std::path::Path::new("/nonexistent/recording");
    if let Ok(r) = tracekit_rtrace::recording::set::Recording::from_manifest(dir, data) {
        assert!(r.images.iter().all(|i| i.path.parent() == Some(dir)));
    }
});
