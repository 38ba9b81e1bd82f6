//! Splitting an input into records and recognising its format.
//!
//! EVENT has one record per line. PERF and NORMAL records continue on the
//! following lines when a message contains a newline; a continuation line
//! is one that does not start with the format's prefix. Records are
//! returned as slices of the input (a PERF/NORMAL record with
//! continuations is one contiguous slice, `\n` included), so nothing is
//! copied.

use std::io::BufRead;

use tracekit_core::{Position, Warnings};

use crate::event::Event;
use crate::event_fmt::ParseError;
use crate::{event_fmt, normal, perf};

/// The three trace2 formats, with their brief variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Event,
    Perf { brief: bool },
    Normal { brief: bool },
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Event => "EVENT",
            Format::Perf { brief: false } => "PERF",
            Format::Perf { brief: true } => "PERF (brief)",
            Format::Normal { brief: false } => "NORMAL",
            Format::Normal { brief: true } => "NORMAL (brief)",
        }
    }

    fn starts_record(self, line: &[u8]) -> bool {
        match self {
            Format::Event => true,
            Format::Perf { brief } => perf::starts_record(line, brief),
            Format::Normal { brief } => normal::starts_record(line, brief),
        }
    }

    /// Parses one record of this format.
    pub fn parse(self, record: &[u8]) -> Result<Event<'_>, ParseError> {
        match self {
            Format::Event => event_fmt::parse(record),
            Format::Perf { brief } => perf::parse(record, brief),
            Format::Normal { brief } => normal::parse(record, brief),
        }
    }
}

/// Recognises the format from the first non-empty line of `head`.
pub fn detect(head: &[u8]) -> Option<Format> {
    let line = head
        .split(|&c| c == b'\n')
        .find(|l| !l.iter().all(|c| c.is_ascii_whitespace()))?;
    let trimmed = &line[line.iter().take_while(|c| c.is_ascii_whitespace()).count()..];
    if trimmed.starts_with(b"{") {
        return memchr::memmem::find(trimmed, b"\"event\"").map(|_| Format::Event);
    }
    if perf::starts_record(line, false) {
        // Both have the time prefix; PERF's depth column tells them apart.
        let rest = &line[16..];
        if let Some(i) = memchr::memmem::find(rest, b" | d") {
            let after = &rest[i + 4..];
            if after.first().is_some_and(u8::is_ascii_digit) {
                return Some(Format::Perf { brief: false });
            }
        }
        return Some(Format::Normal { brief: false });
    }
    if perf::is_brief_line(line) {
        return Some(Format::Perf { brief: true });
    }
    // A brief NORMAL stream starts like any git process: with `version`.
    if line.starts_with(b"version ") {
        return Some(Format::Normal { brief: true });
    }
    None
}

/// Is `head` (the start of an EVENT input) the brief variant
/// (`GIT_TRACE2_EVENT_BRIEF`)? Brief EVENT records have no `file`/`line`;
/// full ones always have both, starting with the first record.
pub fn event_is_brief(head: &[u8]) -> bool {
    let Some(line) = head
        .split(|&c| c == b'\n')
        .find(|l| !l.iter().all(|c| c.is_ascii_whitespace()))
    else {
        return false;
    };
    memchr::memmem::find(line, b"\"file\":").is_none()
}

/// A record: its first line's 1-based number and its bytes (without the
/// final newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub line: u64,
    pub bytes: &'a [u8],
    /// The record's last line had no newline: the input was cut short.
    pub unterminated: bool,
}

/// Iterates over the records of an in-memory (or memory-mapped) input.
pub struct RecordIter<'a> {
    data: &'a [u8],
    pos: usize,
    line: u64,
    format: Format,
}

impl<'a> RecordIter<'a> {
    pub fn new(data: &'a [u8], format: Format) -> Self {
        RecordIter {
            data,
            pos: 0,
            line: 0,
            format,
        }
    }

    /// Bytes consumed so far (for progress).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        loop {
            if self.pos >= self.data.len() {
                return None;
            }
            let start = self.pos;
            self.line += 1;
            let first_line = self.line;
            let mut end = match memchr::memchr(b'\n', &self.data[start..]) {
                Some(i) => start + i,
                None => self.data.len(),
            };
            self.pos = (end + 1).min(self.data.len());
            if end == start {
                continue; // a blank line outside any record
            }
            if self.format != Format::Event {
                // Absorb continuation lines.
                while self.pos < self.data.len() {
                    let next_end = match memchr::memchr(b'\n', &self.data[self.pos..]) {
                        Some(i) => self.pos + i,
                        None => self.data.len(),
                    };
                    if self.format.starts_record(&self.data[self.pos..next_end]) {
                        break;
                    }
                    self.line += 1;
                    end = next_end;
                    self.pos = (next_end + 1).min(self.data.len());
                }
            }
            let bytes = &self.data[start..end];
            let unterminated = end == self.data.len() && !self.data.ends_with(b"\n");
            return Some(Record {
                line: first_line,
                bytes,
                unterminated,
            });
        }
    }
}

/// Reads records from a stream (standard input, a socket) with memory
/// bounded by the longest record, calling `f` for each. Returns the number
/// of bytes read.
pub fn for_each_record<R: BufRead, E>(
    mut input: R,
    format: Format,
    mut f: impl FnMut(Record<'_>) -> Result<(), E>,
) -> Result<u64, E>
where
    E: From<std::io::Error>,
{
    let mut pending: Vec<u8> = Vec::new();
    let mut pending_line = 0u64;
    let mut line_buf: Vec<u8> = Vec::new();
    let mut line_no = 0u64;
    let mut total = 0u64;
    loop {
        line_buf.clear();
        let n = input.read_until(b'\n', &mut line_buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        line_no += 1;
        let terminated = line_buf.last() == Some(&b'\n');
        let line = if terminated {
            &line_buf[..n - 1]
        } else {
            &line_buf[..]
        };
        let starts = format.starts_record(line) || pending.is_empty();
        if starts {
            if !pending.is_empty() {
                let rec_end = pending.len() - 1; // drop the stored '\n'
                f(Record {
                    line: pending_line,
                    bytes: &pending[..rec_end],
                    unterminated: false,
                })?;
                pending.clear();
            }
            if line.is_empty() {
                continue;
            }
            pending_line = line_no;
        }
        pending.extend_from_slice(line);
        pending.push(b'\n');
        if !terminated {
            let rec_end = pending.len() - 1;
            f(Record {
                line: pending_line,
                bytes: &pending[..rec_end],
                unterminated: true,
            })?;
            pending.clear();
        }
        if format == Format::Event && !pending.is_empty() {
            let rec_end = pending.len() - 1;
            f(Record {
                line: pending_line,
                bytes: &pending[..rec_end],
                unterminated: false,
            })?;
            pending.clear();
        }
    }
    if !pending.is_empty() {
        let rec_end = pending.len() - 1;
        f(Record {
            line: pending_line,
            bytes: &pending[..rec_end],
            unterminated: false,
        })?;
    }
    Ok(total)
}

impl<'a> Record<'a> {
    /// The warning for this record when it did not parse; a record cut off
    /// by the end of the input says so (the usual cause).
    pub fn error_message(&self, e: &ParseError) -> String {
        if self.unterminated {
            format!("record cut short (no newline at end of input): {e}")
        } else {
            e.to_string()
        }
    }

    /// The record's event, or `None` with a warning at its line.
    pub fn parse_or_warn(&self, format: Format, warnings: &mut Warnings) -> Option<Event<'a>> {
        match format.parse(self.bytes) {
            Ok(ev) => Some(ev),
            Err(e) => {
                self.warn(&e, warnings);
                None
            }
        }
    }

    /// Warns at this record's line that it did not parse.
    pub fn warn(&self, e: &ParseError, warnings: &mut Warnings) {
        warnings.push(Position::Line(self.line), self.error_message(e));
    }
}

/// Calls `f` with every record of an in-memory input, and hands the bytes
/// read back to `consumed` every 8 MiB (mapped pages count as resident:
/// see [`release_pages`]), so memory stays small on large files.
pub fn for_each_in<'a, E>(
    data: &'a [u8],
    format: Format,
    consumed: impl Fn(std::ops::Range<usize>),
    mut f: impl FnMut(Record<'a>) -> Result<(), E>,
) -> Result<(), E> {
    const STEP: usize = 8 << 20;
    let mut records = RecordIter::new(data, format);
    let mut done = 0;
    while let Some(rec) = records.next() {
        f(rec)?;
        if records.position() - done >= STEP {
            consumed(done..records.position());
            done = records.position();
        }
    }
    Ok(())
}

/// Gives the whole pages of `range` of a read-only file map back to the
/// kernel, so a reader going through a large file keeps a small resident
/// size (the pages are read again from the file if touched).
pub fn release_pages(map: &memmap2::Mmap, range: std::ops::Range<usize>) {
    const PAGE: usize = 4096;
    let start = range.start.div_ceil(PAGE) * PAGE;
    let end = range.end.min(map.len()) / PAGE * PAGE;
    if end > start {
        // SAFETY: the map is a read-only file mapping; dropping its pages
        // only makes the kernel read them again from the file when touched:
        // the content seen stays the same, no memory is freed under a live
        // reference.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }
}

/// Events per batch from the parse thread of [`for_each_event_parsed_ahead`].
const PARSED_BATCH: usize = 1024;

/// A batch of parsed events and the bytes of the map read up to its end
/// (released once the batch is handled).
struct ParsedBatch<'a> {
    /// Each event with the line its record starts at.
    events: Vec<(u64, Event<'a>)>,
    release: Option<std::ops::Range<usize>>,
}

/// Calls `one` with the event of every record of the file map `map` and
/// the line the record starts at, in order, warning (in `warnings`, at the record's line) at each record
/// that does not parse. The records are parsed on a thread of their own,
/// ahead of `one`, in batches of events that borrow the map (parsing is a
/// third to a half of the work of building tables, so the two halves
/// share the machine's cores); pages are given back to the kernel behind
/// `one`, and `read` learns how many bytes are done (a progress bar).
/// An error of `one` stops the parse and is returned.
///
/// (The report's whole-input path, `report::whole_input`, parses on two
/// threads of its own into the report's compact items instead.)
pub fn for_each_event_parsed_ahead<E>(
    map: &memmap2::Mmap,
    format: Format,
    warnings: &mut Warnings,
    mut read: impl FnMut(usize),
    mut one: impl FnMut(&Event<'_>, u64) -> Result<(), E>,
) -> Result<(), E> {
    let bytes: &[u8] = map;
    let parsed = std::thread::scope(|scope| -> Result<Warnings, E> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<ParsedBatch<'_>>(4);
        let parser = scope.spawn(move || {
            // Records that do not parse, at their lines, in order.
            let mut warnings = Warnings::default();
            let released = std::cell::Cell::new(None);
            let new_batch = || Vec::with_capacity(PARSED_BATCH);
            let mut events = new_batch();
            // Err: the consumer stopped (its error is returned).
            let _ = for_each_in(
                bytes,
                format,
                |range| released.set(Some(range)),
                |rec| -> Result<(), ()> {
                    if let Some(ev) = rec.parse_or_warn(format, &mut warnings) {
                        events.push((rec.line, ev));
                    }
                    if events.len() == PARSED_BATCH {
                        let events = std::mem::replace(&mut events, new_batch());
                        let release = released.take();
                        tx.send(ParsedBatch { events, release }).map_err(drop)?;
                    }
                    Ok(())
                },
            );
            let release = released.take();
            let _ = tx.send(ParsedBatch { events, release });
            warnings
        });
        for batch in rx {
            for (line, ev) in &batch.events {
                one(ev, *line)?;
            }
            if let Some(range) = batch.release {
                read(range.end);
                release_pages(map, range);
            }
        }
        Ok(match parser.join() {
            Ok(parsed) => parsed,
            // The parser only parses and sends; a panic there is a bug
            // that must not pass as a clean read.
            Err(panic) => std::panic::resume_unwind(panic),
        })
    })?;
    warnings.extend(parsed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parse thread hands every event over in order, across batches;
    /// a record that does not parse is a warning at its line; an error of
    /// the consumer stops the parse and comes back.
    #[test]
    fn parsed_ahead_in_order_with_warnings_and_early_stop() {
        use std::io::Write;
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let lines = 2 * PARSED_BATCH + 77;
        for i in 1..=lines {
            if i == 1500 {
                writeln!(file, "{{\"event\":\"start\",").unwrap();
            } else {
                writeln!(
                    file,
                    "{{\"event\":\"data\",\"sid\":\"s\",\"thread\":\"main\",\"time\":\"2024-01-01T00:00:00.000000Z\",\"file\":\"f.c\",\"line\":{i},\"repo\":1,\"t_abs\":0.1,\"t_rel\":0.1,\"nesting\":1,\"category\":\"c\",\"key\":\"k\",\"value\":\"v\"}}"
                )
                .unwrap();
            }
        }
        file.flush().unwrap();
        // SAFETY: the temporary file is not changed while mapped.
        let map = unsafe { memmap2::Mmap::map(file.as_file()).unwrap() };
        let mut seen = Vec::new();
        let mut warnings = Warnings::default();
        let mut done = 0;
        for_each_event_parsed_ahead(
            &map,
            Format::Event,
            &mut warnings,
            |n| done = n,
            |ev, line| -> Result<(), ()> {
                // The record's own line (its `line` field says the same).
                assert_eq!(ev.line, Some(line as i64));
                seen.push(ev.line);
                Ok(())
            },
        )
        .unwrap();
        let expected: Vec<Option<i64>> = (1..=lines as i64)
            .filter(|&i| i != 1500)
            .map(Some)
            .collect();
        assert_eq!(seen, expected);
        assert_eq!(warnings.total(), 1);
        assert_eq!(warnings.kept()[0].position, Position::Line(1500));
        assert!(done <= map.len());

        let mut handled = 0;
        let stopped = for_each_event_parsed_ahead(
            &map,
            Format::Event,
            &mut Warnings::default(),
            |_| {},
            |_, _| {
                handled += 1;
                if handled == 10 {
                    Err("stop")
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(stopped, Err("stop"));
        assert_eq!(handled, 10);
    }

    #[test]
    fn joins_continuation_lines() {
        let data = b"19:30:18.513860 usage.c:83                        error Your local changes:\n\tbig.txt\nPlease commit.\n19:30:18.513913 git.c:752                         exit elapsed:0.002173 code:1\n";
        let f = detect(data).unwrap();
        assert_eq!(f, Format::Normal { brief: false });
        let recs: Vec<_> = RecordIter::new(data, f).collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].line, 4);
        assert!(recs[0].bytes.ends_with(b"Please commit."));
        let mut streamed = Vec::new();
        for_each_record::<_, std::io::Error>(&data[..], f, |r| {
            streamed.push((r.line, r.bytes.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(streamed.len(), 2);
        assert_eq!(streamed[0].1, recs[0].bytes);
        assert_eq!(streamed[1].0, 4);
    }

    #[test]
    fn blank_lines_outside_records_are_skipped_alike() {
        // Found by fuzzing: the slice and stream readers disagreed.
        for format in [
            Format::Event,
            Format::Perf { brief: false },
            Format::Normal { brief: true },
        ] {
            for data in [&b"\n\n\n\n"[..], b"\n", b"\n\nx\n\n", b"x\n\ny"] {
                let slice: Vec<Vec<u8>> = RecordIter::new(data, format)
                    .map(|r| r.bytes.to_vec())
                    .collect();
                let mut stream = Vec::new();
                for_each_record::<_, std::io::Error>(data, format, |r| {
                    stream.push(r.bytes.to_vec());
                    Ok(())
                })
                .unwrap();
                assert_eq!(
                    slice,
                    stream,
                    "{format:?} {:?}",
                    String::from_utf8_lossy(data)
                );
            }
        }
    }

    #[test]
    fn cut_records_are_flagged() {
        let data = b"{\"event\":\"version\"}\n{\"event\":\"st";
        let recs: Vec<_> = RecordIter::new(data, Format::Event).collect();
        assert_eq!(recs.len(), 2);
        assert!(!recs[0].unterminated);
        assert!(recs[1].unterminated);
    }
}
