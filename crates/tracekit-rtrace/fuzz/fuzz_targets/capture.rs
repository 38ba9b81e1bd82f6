//! The recorder's stream splitter and then the decoder, on arbitrary
//! stream events: no panic, whatever a traced process writes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_rtrace::recording::capture;

fuzz_target!(|data: &[u8]| {
    // Events: [type selector, pid, thread, length] then `length` bytes.
    let mut events = Vec::new();
    let mut rest = data;
    while rest.len() >= 4 {
        let (head, tail) = rest.split_at(4);
        let len = (head[3] as usize * 8).min(tail.len());
        let id = 1024 + u32::from(head[0] % 3);
        events.push((
            id,
            i32::from(head[1] % 4),
            u64::from(head[2] % 3),
            &tail[..len],
        ));
        rest = &tail[len..];
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    if let Ok((images, _)) = capture::split(dir.path(), 1024, 1025, events) {
        for image in images {
            let _ = tracekit_rtrace::recording::decode_file(&image.path, std::io::sink());
        }
    }
});
