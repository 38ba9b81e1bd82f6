//! Damaged logs: every truncation and many byte flips of a real log open
//! with an error or read with warnings, never a panic. A cut log never
//! reads more events than were written. The format carries no checksums,
//! so a flipped record length or block fill can make the rest of that one
//! block parse at other boundaries: a flip may add at most one block's
//! worth of (header-sized) records, never more.

use std::os::fd::AsRawFd;

use tracekit_posix::api;
use tracekit_posix::consts::*;
use tracekit_posix::{traced, LogReader, TraceAttr};

fn sample_log() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.trace");
    let f = std::fs::File::create(&path).unwrap();
    let mut a = TraceAttr::default();
    a.set_log_policy(POSIX_TRACE_LOOP);
    a.log_size = 16 << 10; // small: several blocks, wrapped
    let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
    let id = traced::eventid_open(b"corrupt").unwrap();
    api::start(trid).unwrap();
    for i in 0u32..3000 {
        traced::trace_event(id, &i.to_le_bytes()[..(i % 5) as usize]);
    }
    api::shutdown(trid).unwrap();
    std::fs::read(&path).unwrap()
}

fn read_all(bytes: Vec<u8>) -> Option<(usize, usize)> {
    let mut r = LogReader::from_bytes(bytes).ok()?;
    let (mut ok, mut bad) = (0, 0);
    while let Some(e) = r.next_event() {
        match e {
            Ok(_) => ok += 1,
            Err(_) => bad += 1,
        }
    }
    Some((ok, bad))
}

#[test]
fn truncations_and_flips_never_panic() {
    let log = sample_log();
    let (total, bad) = read_all(log.clone()).unwrap();
    let block_size = LogReader::from_bytes(log.clone()).unwrap().meta.block_size as usize;
    let one_block_of_records = block_size / tracekit_posix::log::RECORD_HEADER;
    assert_eq!(bad, 0);
    assert!(total > 100);
    let step = (log.len() / 300).max(1);
    for cut in (0..log.len()).step_by(step) {
        if let Some((n, _)) = read_all(log[..cut].to_vec()) {
            assert!(n <= total);
        }
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut b = log.clone();
        let at = (seed % b.len() as u64) as usize;
        b[at] ^= (seed >> 32) as u8 | 1;
        if let Some((n, _)) = read_all(b) {
            assert!(
                n <= total + one_block_of_records,
                "flip at byte {at}: {n} events read, {total} written"
            );
        }
    }
}

#[test]
fn a_log_without_shutdown_reads_up_to_its_last_flush_with_a_warning() {
    let log = sample_log();
    let mut b = log.clone();
    b[24] = 0; // clear the "complete" flag
    let r = LogReader::from_bytes(b).unwrap();
    assert!(r
        .warnings
        .kept()
        .iter()
        .any(|w| w.message.contains("not shut down cleanly")));
    let e = LogReader::from_bytes(b"TKPXLOG\0short".to_vec())
        .err()
        .unwrap();
    assert!(e.to_string().contains("truncated header"), "{e}");
    let e = LogReader::from_bytes(b"something else".to_vec())
        .err()
        .unwrap();
    assert!(e.to_string().contains("byte offset 0"), "{e}");
}
