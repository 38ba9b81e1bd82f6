//! Any bytes, read as each trace2 format: no panic, and whatever parses
//! writes back to something that parses to the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_trace2::convert::{write_same_format, Converter};
use tracekit_trace2::reader::{detect, Format, RecordIter};

fuzz_target!(|data: &[u8]| {
    let _ = detect(data);
    for format in [
        Format::Event,
        Format::Perf { brief: false },
        Format::Perf { brief: true },
        Format::Normal { brief: false },
        Format::Normal { brief: true },
    ] {
        let mut conv = Converter::new(Format::Perf { brief: false });
        let mut sink = Vec::new();
        for rec in RecordIter::new(data, format) {
            let Ok(ev) = format.parse(rec.bytes) else { continue };
            conv.write(&ev, &mut sink);
            let mut out = Vec::new();
            write_same_format(&ev, format, &mut out);
            if format == Format::Event {
                let line = out.strip_suffix(b"\n").unwrap_or(&out);
                let again = format.parse(line).expect("what we write must parse");
                assert_eq!(again, ev, "EVENT write/parse is not stable");
            }
        }
    }
});
