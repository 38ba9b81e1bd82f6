//! Any bytes through the recorder-output decoder, as a `.tkmem` file
//! (as they are, and after the file's magic so the block reader sees
//! them), and as a recording's manifest (`recording.json`): errors are
//! fine, panics not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_rtrace::recording::packed::{self, PackedFile};
use tracekit_rtrace::recording::{Decoder, Events};
use tracekit_rtrace::Items;

fn read_packed(bytes: Vec<u8>) {
    let Ok(file) = PackedFile::from_bytes(bytes) else {
        return;
    };
    for k in 0..file.images.len() {
        if let Ok(d) = Decoder::packed(&file, k) {
            let _ = d.write_to(std::io::sink());
        }
        if let Ok(mut e) = Events::packed(&file, k) {
            while let Ok(Some(_)) = e.next_item() {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = tracekit_rtrace::recording::decode(data, Vec::new());
    read_packed(data.to_vec());
    let mut with_head = Vec::with_capacity(packed::FILE_HEAD + data.len());
    with_head.extend_from_slice(&packed::MAGIC);
    with_head.extend_from_slice(&packed::VERSION.to_le_bytes());
    with_head.extend_from_slice(&[0; 4]);
    with_head.extend_from_slice(data);
    read_packed(with_head);
    // The same bytes as the payloads of blocks that pass the checks, so
    // the block decoders see them: [kind, image, count, length] each.
    let mut file = Vec::new();
    file.extend_from_slice(&packed::MAGIC);
    file.extend_from_slice(&packed::VERSION.to_le_bytes());
    file.extend_from_slice(&[0; 4]);
    let mut rest = data;
    while rest.len() >= 4 {
        let (head, tail) = rest.split_at(4);
        let len = (usize::from(head[3]) * 4).min(tail.len());
        let kind = 1 + head[0] % 8;
        let image = u32::from(head[1] % 4);
        let count = u32::from(head[2]);
        file.extend_from_slice(&packed::stored_block(kind, image, count, u64::from(head[2] % 5), &tail[..len]));
        rest = &tail[len..];
    }
    read_packed(file);
    let dir = std::path::Path::new("/nonexistent/recording");
    if let Ok(r) = tracekit_rtrace::recording::set::Recording::from_manifest(dir, data) {
        assert!(r.images.iter().all(|i| i.path.parent() == Some(dir)));
    }
});
