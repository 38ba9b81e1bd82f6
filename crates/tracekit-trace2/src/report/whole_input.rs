//! Whole inputs: parsing an EVENT/PERF/NORMAL input (EVENT in parallel blocks) into a report.

use super::*;

/// Below this, EVENT input is parsed on the calling thread.
const PARALLEL_MIN: usize = 4 << 20;
/// Bytes per block handed to a parser thread.
const BLOCK: usize = 1 << 20;

/// Parses a whole input and adds its events. Records that do not parse are
/// counted in `warnings` with their line number, and skipped.
pub fn report_bytes(
    data: &[u8],
    format: Format,
    source: SourceId,
    builder: &mut ReportBuilder,
    warnings: &mut Warnings,
) {
    report_bytes_with(data, format, source, builder, warnings, |_| {})
}

/// [`report_bytes`] on a memory map, handing pages back to the kernel as
/// soon as they are parsed so that resident memory stays small whatever
/// the file's size.
pub fn report_mmap(
    map: &memmap2::Mmap,
    format: Format,
    source: SourceId,
    builder: &mut ReportBuilder,
    warnings: &mut Warnings,
) {
    report_bytes_with(map, format, source, builder, warnings, |range| {
        crate::reader::release_pages(map, range)
    })
}

/// A parsed record on its way from a parser thread to the builder.
enum Item<'a> {
    Region(RegionLine<'a>),
    Full(Box<Event<'a>>),
}

/// Parses the records of `data`, pushing items and (line, error) pairs.
fn parse_block<'a>(
    data: &'a [u8],
    format: Format,
    mut item: impl FnMut(Item<'a>),
    mut error: impl FnMut(u64, String),
) {
    for rec in RecordIter::new(data, format) {
        if format == Format::Event {
            if let Some(r) = fast_region(rec.bytes) {
                item(Item::Region(r));
                continue;
            }
        }
        match format.parse(rec.bytes) {
            Ok(ev) => item(Item::Full(Box::new(ev))),
            Err(e) => error(rec.line, rec.error_message(&e)),
        }
    }
}

impl ReportBuilder {
    /// Parses one record (from [`crate::reader::for_each_record`] on a
    /// stream, say) and adds it, using the fast path for EVENT regions.
    pub fn add_record(
        &mut self,
        record: &[u8],
        format: Format,
        source: SourceId,
    ) -> Result<(), crate::event_fmt::ParseError> {
        if format == Format::Event {
            if let Some(r) = fast_region(record) {
                self.add_region(&r, source);
                return Ok(());
            }
        }
        let ev = format.parse(record)?;
        self.add(&ev, source);
        Ok(())
    }

    fn add_item(&mut self, item: &Item<'_>, source: SourceId) {
        match item {
            Item::Region(r) => self.add_region(r, source),
            Item::Full(ev) => self.add(ev, source),
        }
    }
}
fn report_bytes_with(
    data: &[u8],
    format: Format,
    source: SourceId,
    builder: &mut ReportBuilder,
    warnings: &mut Warnings,
    consumed: impl Fn(std::ops::Range<usize>) + Sync,
) {
    if format != Format::Event || data.len() < PARALLEL_MIN {
        let all = for_each_in(data, format, &consumed, |rec| {
            if let Err(e) = builder.add_record(rec.bytes, format, source) {
                rec.warn(&e, warnings);
            }
            Ok::<(), std::convert::Infallible>(())
        });
        let Ok(()) = all;
        return;
    }
    // EVENT: one record per line, so blocks split at newlines parse
    // independently. Two threads parse alternate blocks; this thread adds
    // them in input order, so the result is the same as sequential.
    let mut bounds = vec![0usize];
    let mut pos = 0;
    while pos < data.len() {
        let target = (pos + BLOCK).min(data.len());
        let end = if target == data.len() {
            target
        } else {
            match memchr::memchr(b'\n', &data[target..]) {
                Some(i) => target + i + 1,
                None => data.len(),
            }
        };
        bounds.push(end);
        pos = end;
    }
    let blocks = bounds.len() - 1;
    type Batch<'a> = (Vec<Item<'a>>, Vec<(u64, String)>, u64);
    std::thread::scope(|scope| {
        let mut receivers = Vec::new();
        for w in 0..2usize {
            let (tx, rx) = mpsc::sync_channel::<Batch<'_>>(2);
            receivers.push(rx);
            let bounds = &bounds;
            scope.spawn(move || {
                let mut b = w;
                while b < blocks {
                    let chunk = &data[bounds[b]..bounds[b + 1]];
                    let mut items = Vec::with_capacity(chunk.len() / 200);
                    let mut errors = Vec::new();
                    parse_block(
                        chunk,
                        Format::Event,
                        |item| items.push(item),
                        |line, msg| errors.push((line, msg)),
                    );
                    let lines = memchr::memchr_iter(b'\n', chunk).count() as u64;
                    if tx.send((items, errors, lines)).is_err() {
                        return;
                    }
                    b += 2;
                }
            });
        }
        let mut line_base = 0u64;
        for b in 0..blocks {
            let Ok((items, errors, lines)) = receivers[b % 2].recv() else {
                break;
            };
            for item in &items {
                builder.add_item(item, source);
            }
            for (line, msg) in errors {
                warnings.push(Position::Line(line_base + line), msg);
            }
            line_base += lines;
            drop(items);
            consumed(bounds[b]..bounds[b + 1]);
        }
    });
}
