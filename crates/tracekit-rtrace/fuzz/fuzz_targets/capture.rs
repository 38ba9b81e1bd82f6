//! The recorder's stream splitter and then the decoders, on arbitrary
//! stream events, into raw recordings and a `.tkmem` file at once: no
//! panic, whatever a traced process writes.
#![no_main]

use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use tracekit_rtrace::recording::capture;
use tracekit_rtrace::recording::packed::{Finish, PackedFile, RecordingHead, Writer};
use tracekit_rtrace::recording::Decoder;

/// The `.tkmem` writer's output, kept to read back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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
    let shared = Shared::default();
    let out: Box<dyn std::io::Write + Send> = Box::new(shared.clone());
    let writer = Writer::new(out, &RecordingHead::default()).expect("a writer into memory");
    let Ok((images, _, writer)) = capture::split_both(dir.path(), writer, 1024, 1025, events)
    else {
        return;
    };
    for image in &images {
        let _ = tracekit_rtrace::recording::decode_file(&image.path, std::io::sink());
    }
    if writer.finish(&Finish::default()).is_err() {
        return;
    }
    let bytes = shared.0.lock().map(|b| b.clone()).unwrap_or_default();
    let file = PackedFile::from_bytes(bytes).expect("the writer's own file reads");
    assert!(file.damage.is_none(), "{:?}", file.damage);
    for k in 0..file.images.len() {
        if let Ok(d) = Decoder::packed(&file, k) {
            let _ = d.write_to(std::io::sink());
        }
    }
});
