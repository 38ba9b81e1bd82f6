//! Bad input never panics: truncated and corrupted corpus files, garbage,
//! non-UTF-8. Errors name the line; losses are counted as warnings.

use tracekit_rtrace::postproc::{self, Options};
use tracekit_rtrace::recording::wire::{
    ALLOC_LEN, KIND_ALLOC, RAW_VERSION, TAG_EVENTS, TAG_FILE, TAG_HEADER,
};
use tracekit_rtrace::{report, Reader};

mod common;
use common::upstream;

fn all_options() -> Vec<Options> {
    vec![
        Options::default(),
        Options {
            filter_leaks: true,
            ..Default::default()
        },
        Options {
            filter_leaks: true,
            compress: true,
            backtrace_depth: Some(2),
            ..Default::default()
        },
        Options {
            compress: true,
            context: Some(0),
            ..Default::default()
        },
    ]
}

#[test]
fn truncated_files_do_not_panic() {
    for name in ["context.txt", "sample.txt", "context.txt..lcr"] {
        let data = upstream(name);
        for cut in (0..data.len()).step_by(37) {
            let part = &data[..cut];
            for opts in all_options() {
                let r = postproc::run(part, &opts, Vec::new());
                if cut == 0 {
                    let e = r.unwrap_err().to_string();
                    assert!(
                        e.contains(":1:") || e.starts_with("1:") || e.contains("1: "),
                        "{e}"
                    );
                }
            }
            let _ = report::analyse(part, 5, false);
        }
    }
}

#[test]
fn corrupted_bytes_do_not_panic() {
    let data = upstream("context.txt");
    let mut seed = 0x1234_5678_9abc_def0u64;
    for _ in 0..300 {
        let mut d = data.clone();
        for _ in 0..8 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed as usize) % d.len();
            d[at] = (seed >> 32) as u8;
        }
        for opts in all_options() {
            let _ = postproc::run(&d[..], &opts, Vec::new());
        }
        let _ = report::analyse(&d[..], 5, false);
        let mut reader = Reader::new(&d[..]);
        while let Ok(Some(_)) = reader.next_record() {}
    }
}

#[test]
fn garbage_is_an_error_at_line_one() {
    let e = postproc::run(
        &b"\x7fELF\x02\x01binary"[..],
        &Options::default(),
        Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("1") && e.contains("header"), "{e}");
    let e = postproc::run(&b""[..], &Options::default(), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn losses_are_counted() {
    let text = b"version=2.0, arch=x, pid=1, \n\t0x1234\nnot a record\n1. malloc(3) = 0x5\n\t0x1\n\xff\xfe\n\n";
    let stats = postproc::run(&text[..], &Options::default(), Vec::new()).unwrap();
    let messages: Vec<String> = stats
        .warnings
        .kept()
        .iter()
        .map(|w| format!("{}: {}", w.position, w.message))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("2: backtrace frame without")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("3: unrecognised record")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("6: invalid UTF-8")),
        "{messages:?}"
    );
}

#[test]
fn recorder_output_garbage_is_an_error_not_a_panic() {
    let e = tracekit_rtrace::recording::decode(b"not a recording at all", Vec::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("header"), "{e}");
    // A header chunk followed by a truncated event chunk: decoded with the
    // loss counted.
    let mut data = Vec::new();
    data.extend_from_slice(&TAG_HEADER);
    data.extend_from_slice(&41u32.to_le_bytes());
    data.extend_from_slice(&[0u8; 40]);
    data.push(b'x');
    data.extend_from_slice(&TAG_EVENTS);
    data.extend_from_slice(&100u32.to_le_bytes());
    data.extend_from_slice(&[1u8; 40]);
    let (_, stats) = tracekit_rtrace::recording::decode(&data, Vec::new()).unwrap();
    assert_eq!(stats.events, 0);
    assert_eq!(stats.truncated_bytes, 48);
}

/// A raw recording (`record mem --raw`) names its layout version first:
/// another version is a clear error; version 1 decodes, and reading the
/// text through the `Decoder` as a reader gives the same bytes as `decode`.
#[test]
fn raw_recording_version_is_checked_and_reader_equals_decode() {
    let chunk = |out: &mut Vec<u8>, tag: &[u8; 4], payload: &[u8]| {
        out.extend_from_slice(tag);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    };
    let file = |version: u32| {
        let mut data = Vec::new();
        chunk(&mut data, &TAG_FILE, &version.to_le_bytes());
        let mut header = vec![0u8; 40];
        header[24..28].copy_from_slice(&10u32.to_le_bytes());
        header[28..32].copy_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(b"/bin/prog");
        chunk(&mut data, &TAG_HEADER, &header);
        let mut events = Vec::new();
        for seq in 0..3000u64 {
            let mut r = [0u8; ALLOC_LEN];
            r[0] = KIND_ALLOC;
            r[4..8].copy_from_slice(&(1000 + seq as u32).to_le_bytes());
            r[8..16].copy_from_slice(&seq.to_le_bytes());
            r[16..24].copy_from_slice(&(16 + seq).to_le_bytes());
            r[24..32].copy_from_slice(&(0x1000 + 32 * seq).to_le_bytes());
            events.extend_from_slice(&r);
        }
        chunk(&mut data, &TAG_EVENTS, &events);
        data
    };
    let e = tracekit_rtrace::recording::decode(&file(RAW_VERSION + 1), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("version {}", RAW_VERSION + 1)), "{e}");
    let data = file(RAW_VERSION);
    assert!(tracekit_rtrace::recording::sniff(&data));
    let mut text = Vec::new();
    let (info, stats) = tracekit_rtrace::recording::decode(&data, &mut text).unwrap();
    assert_eq!(info.executable, "/bin/prog");
    assert_eq!((stats.allocs, stats.lost), (3000, 0));
    let mut via_reader = Vec::new();
    std::io::Read::read_to_end(
        &mut tracekit_rtrace::recording::Decoder::from_bytes(&data).unwrap(),
        &mut via_reader,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(via_reader).unwrap(),
        String::from_utf8(text).unwrap()
    );
}
