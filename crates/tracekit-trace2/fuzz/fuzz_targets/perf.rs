//! Any bytes read as the PERF format (both variants where there is a
//! brief one): no panic, and every record that parses writes back to
//! something that parses to the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_trace2::convert::{write_same_format, Converter};
use tracekit_trace2::reader::{detect, for_each_record, Format, RecordIter};

fuzz_target!(|data: &[u8]| {
    let _ = detect(data);
    for brief in [false, true] {
        let _ = brief;
        let format = Format::Perf { brief };
        let mut conv = Converter::new(Format::Perf { brief: false });
        let mut sink = Vec::new();
        let mut n = 0usize;
        for rec in RecordIter::new(data, format) {
            n += 1;
            let Ok(ev) = format.parse(rec.bytes) else { continue };
            conv.write(&ev, &mut sink);
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
        // The streaming reader sees the same records.
        let mut m = 0usize;
        let _ = for_each_record::<_, std::io::Error>(data, format, |_| {
            m += 1;
            Ok(())
        });
        assert_eq!(n, m, "slice and stream readers disagree");
        if format == Format::Event {
            break;
        }
    }
});
