//! Trace2 as Chrome Trace Event JSON (Perfetto UI, chrome://tracing): the
//! timeline mapping ([`crate::timeline`]) into the Chrome sink.

use std::io::{self, Write};

use tracekit_core::Warnings;
use tracekit_export::chrome_sink::ChromeSink;

use crate::reader::Format;
use crate::timeline::{map_bytes, map_mmap, MapStats};

/// Converts a whole input. Records that do not parse are counted in
/// `warnings` with their line number, and skipped.
pub fn convert_bytes<W: Write>(
    data: &[u8],
    format: Format,
    out: W,
    warnings: &mut Warnings,
) -> io::Result<(W, MapStats)> {
    let (sink, stats) = map_bytes(data, format, "-", ChromeSink::new(out)?, warnings)?;
    Ok((sink.into_inner()?, stats))
}

/// [`convert_bytes`] on a memory map, handing pages back to the kernel
/// once converted so that resident memory stays small.
pub fn convert_mmap<W: Write>(
    map: &memmap2::Mmap,
    format: Format,
    out: W,
    warnings: &mut Warnings,
) -> io::Result<(W, MapStats)> {
    let (sink, stats) = map_mmap(map, format, "-", ChromeSink::new(out)?, warnings)?;
    Ok((sink.into_inner()?, stats))
}
