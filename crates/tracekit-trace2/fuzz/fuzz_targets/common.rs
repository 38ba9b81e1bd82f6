//! The check every trace2 fuzz target runs, for its own format: no panic;
//! every record that parses writes back to something that parses and
//! writes the same; the slice and stream readers see the same records;
//! the report and the timeline take any sequence of records (SIDs reused
//! after their end, stray leaves and exits), the timeline keeping the
//! model's rules (tracks declared before use, slices balanced per track).

use std::collections::HashMap;
use std::io;

use tracekit_core::timeline::{Event as TEvent, Sink, TraceInfo};
use tracekit_trace2::convert::{write_same_format, Converter};
use tracekit_trace2::reader::{detect, for_each_record, Format, RecordIter};
use tracekit_trace2::report::ReportBuilder;
use tracekit_trace2::timeline::Trace2Timeline;

/// Checks the model's rules: every event on a declared track, no `End`
/// without its `Begin`, nothing open when a track is done.
#[derive(Default)]
struct Checked {
    open: HashMap<u64, i64>,
}

impl Sink for Checked {
    fn start(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
        Ok(())
    }

    fn event(&mut self, e: &TEvent<'_>) -> io::Result<()> {
        match e {
            TEvent::Track(t) => {
                self.open.entry(t.id).or_insert(0);
            }
            TEvent::Begin { track, .. } => *self.open.get_mut(track).expect("declared") += 1,
            TEvent::End { track, .. } => {
                let d = self.open.get_mut(track).expect("declared");
                *d -= 1;
                assert!(*d >= 0, "End without Begin on track {track}");
            }
            TEvent::TrackDone { track } => {
                let d = self.open.remove(track).expect("declared");
                assert_eq!(d, 0, "track {track} done with slices open");
            }
            TEvent::Complete { track, .. }
            | TEvent::Instant { track, .. }
            | TEvent::Counter { track, .. }
            | TEvent::TrackName { track, .. }
            | TEvent::TrackOrigin { track, .. } => {
                assert!(self.open.contains_key(track), "undeclared track {track}")
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        assert!(self.open.is_empty(), "tracks never done: {:?}", self.open);
        Ok(())
    }
}

pub fn check(data: &[u8], format: Format) {
    let _ = detect(data);
    let mut conv = Converter::new(Format::Perf { brief: false });
    let mut sink = Vec::new();
    let mut report = ReportBuilder::new(2);
    let mut timeline = Trace2Timeline::new(Checked::default(), "fuzz");
    let mut n = 0usize;
    for rec in RecordIter::new(data, format) {
        n += 1;
        let Ok(ev) = format.parse(rec.bytes) else { continue };
        let _ = conv.write(&ev, &mut sink);
        report.add(&ev, 0);
        timeline
            .add_at(&ev, tracekit_core::Position::Line(rec.line))
            .expect("the checking sink does not fail");
        let mut out = Vec::new();
        write_same_format(&ev, format, &mut out);
        let line = out.strip_suffix(b"\n").unwrap_or(&out);
        if !line.is_empty() && !line.contains(&b'\n') {
            if let Ok(again) = format.parse(line) {
                let mut out2 = Vec::new();
                write_same_format(&again, format, &mut out2);
                assert_eq!(out, out2, "write/parse/write is not stable");
            }
        }
    }
    let mut m = 0usize;
    let _ = for_each_record::<_, std::io::Error>(data, format, |_| {
        m += 1;
        Ok(())
    });
    assert_eq!(n, m, "slice and stream readers disagree");
    let mut text = Vec::new();
    tracekit_trace2::report::write_text(&report.finish(), &mut text, 2).expect("to memory");
    timeline.finish().expect("the checking sink does not fail");
}
