//! Bytes as a Parquet file of one of tracekit's tables, read the way
//! `tracekit sql` reads one (`tracekit_parquet::read::check`): the footer
//! through `read::sanitize` (checked against the table's column kinds),
//! the statistics of every column, every page of every column. Errors are
//! fine.
//!
//! The input is a whole file (when it starts with `PAR1`) or edits to one
//! of the tables tracekit wrote from the corpus (`tests/corpus/parquet`):
//! starting from a real file reaches the pages, which random bytes never do.
//!
//! Panics in the footer, schema and statistics paths are bugs: `sanitize`
//! must keep them from happening. The parquet crate's page decoders still
//! panic on some damaged pages (59.3.2: byte-stream-split and dictionary
//! indexes past their data, bit widths over 64, delta overflows, a
//! dictionary page missing); `tracekit sql` catches those and names the file
//! (`crates/tracekit-sql/src/guard.rs`), so a panic there is allowed, by
//! the source file it happens in. Anywhere else a panic aborts.
#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use tracekit_parquet::{read, Table};

/// Tables as tracekit writes them, with the table each one is.
const WRITTEN: [(&[u8], Table); 3] = [
    (
        include_bytes!("../../../../tests/corpus/parquet/written/threads/event.jsonl.parquet"),
        Table::Threads,
    ),
    (
        include_bytes!("../../../../tests/corpus/parquet/written/slices/event.jsonl.parquet"),
        Table::Slices,
    ),
    (
        include_bytes!(
            "../../../../tests/corpus/parquet/written/trace2_processes/event.jsonl.parquet"
        ),
        Table::Trace2Processes,
    ),
];

/// Source files of the page decoders (parquet and arrow-buffer crates)
/// whose panics on damaged pages `tracekit sql` turns into errors.
fn in_page_decoder(file: &str) -> bool {
    const PARQUET: &[&str] = &[
        "/src/encodings/",
        "/src/util/bit_util.rs",
        "/src/arrow/decoder/",
        "/src/arrow/array_reader/",
        "/src/arrow/record_reader/",
        "/src/column/reader",
    ];
    (file.contains("/parquet-") && PARQUET.iter().any(|p| file.contains(p)))
        || (file.contains("/arrow-buffer-") && file.contains("/src/util/"))
}

/// Lets the page decoders' panics unwind to `catch_unwind` (as in
/// `tracekit sql`); every other panic goes to libFuzzer's hook, which aborts.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let fuzzer = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.location().is_some_and(|l| in_page_decoder(l.file())) {
                fuzzer(info);
            }
        }));
    });
}

/// One of [`WRITTEN`] changed by `edits`: 4 bytes each, an operation, a
/// 16-bit position (modulo the length) and a value.
fn edited(which: u8, edits: &[u8]) -> (Vec<u8>, Table) {
    let (base, table) = WRITTEN[usize::from(which) % WRITTEN.len()];
    let mut file = base.to_vec();
    for e in edits.chunks_exact(4) {
        if file.is_empty() {
            break;
        }
        let pos = usize::from(u16::from_le_bytes([e[1], e[2]])) % file.len();
        match e[0] % 8 {
            0..=4 => file[pos] ^= e[3].max(1),
            5 => file[pos] = e[3],
            6 => file.insert(pos, e[3]),
            _ => {
                file.remove(pos);
            }
        }
    }
    (file, table)
}

fuzz_target!(|data: &[u8]| {
    install_hook();
    let (file, table) = if data.starts_with(b"PAR1") {
        let t = Table::ALL[usize::from(data.get(4).copied().unwrap_or(0)) % Table::ALL.len()];
        (data.to_vec(), Some(t))
    } else {
        match data.split_first() {
            Some((&which, edits)) => {
                let (f, t) = edited(which, edits);
                (f, Some(t))
            }
            None => return,
        }
    };
    let bytes = bytes::Bytes::from(file);
    let _ = std::panic::catch_unwind(|| read::check(bytes, table));
});
