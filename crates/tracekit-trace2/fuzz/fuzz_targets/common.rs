//! The check every trace2 fuzz target runs, for its own format: no panic;
//! every record that parses writes back to something that parses and
//! writes the same; the slice and stream readers see the same records.

use tracekit_trace2::convert::{write_same_format, Converter};
use tracekit_trace2::reader::{detect, for_each_record, Format, RecordIter};

pub fn check(data: &[u8], format: Format) {
    let _ = detect(data);
    let mut conv = Converter::new(Format::Perf { brief: false });
    let mut sink = Vec::new();
    let mut n = 0usize;
    for rec in RecordIter::new(data, format) {
        n += 1;
        let Ok(ev) = format.parse(rec.bytes) else { continue };
        let _ = conv.write(&ev, &mut sink);
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
}
