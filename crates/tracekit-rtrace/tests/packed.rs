//! The `.tkmem` recording file (`docs/formats/tkmem.md`) against the raw
//! recordings it replaces: the same stream events split both ways read
//! back as the same sp-rtrace text, byte for byte, and as the same items;
//! a file cut short at any block boundary or inside a block, or damaged
//! anywhere, reads up to the damage with the place said, never a panic.

use std::io::Write;
use std::path::Path;

use tracekit_rtrace::reader::{Assembler, Item, ItemStream, Items, Reader};
use tracekit_rtrace::recording::capture::{self, ImageEnd, PackedWriter};
use tracekit_rtrace::recording::packed::{self, Finish, PackedFile, RecordingHead, Writer};
use tracekit_rtrace::recording::set::Recording;
use tracekit_rtrace::recording::wire::*;
use tracekit_rtrace::recording::{Decoder, Events};

const EVENT: u32 = 1024;
const META: u32 = 1025;

/// A deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn meta(kind: u32, serial: u32, piece: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [kind, serial, 0, piece.len() as u32] {
        v.extend_from_slice(&w.to_ne_bytes());
    }
    v.extend_from_slice(piece);
    v
}

fn header(pid: u32, modules: u32, exe: &str) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_FIXED];
    h[0..4].copy_from_slice(&pid.to_le_bytes());
    h[4..8].copy_from_slice(&1u32.to_le_bytes());
    h[8..16].copy_from_slice(&1_700_000_000u64.to_le_bytes());
    h[24..28].copy_from_slice(&64u32.to_le_bytes());
    h[28..32].copy_from_slice(&modules.to_le_bytes());
    h[32..40].copy_from_slice(&u64::from(pid).to_le_bytes());
    h.extend_from_slice(exe.as_bytes());
    h
}

/// One process image's stream events as the shim would send them: three
/// threads allocating and freeing (also each other's blocks) from a dozen
/// call sites, backtraces defined per thread before their first use and
/// again when a thread's table "starts over", descriptor calls, void
/// numbers, a release numbered before the calls made inside it, a number
/// never sent (lost), a batch sent twice, a backtrace number never
/// defined, and the maps twice.
fn image_events(
    rng: &mut Rng,
    pid: i32,
    exe: &str,
    n: usize,
    shape: Shape,
    out: &mut Vec<(u32, i32, u64, Vec<u8>)>,
) {
    let modules = MODULE_MEMORY | if pid % 2 == 0 { MODULE_FILE } else { 0 };
    out.push((
        META,
        pid,
        1,
        meta(META_HEADER, 0, &header(pid as u32, modules, exe)),
    ));
    let maps = format!(
        "55d000000000-55d000010000 r-xp 00000000 08:01 1 {exe}\n\
         7f0000000000-7f0000200000 r-xp 00000000 08:01 2 /lib/x86_64-linux-gnu/libc.so.6\n\
         7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]\n\
         55d000100000-55d000200000 rw-p 00000000 00:00 0 [heap]\n"
    );
    out.push((META, pid, 1, meta(META_MAPS, 1, maps.as_bytes())));
    let sites: Vec<Vec<u64>> = (0..12)
        .map(|s| {
            let depth = 1 + s % 7;
            (0..depth)
                .map(|d| 0x55d0_0000_1000 + (s as u64 * 0x40 + d as u64) * 0x13)
                .collect()
        })
        .collect();
    let mut seq = 0u64;
    let mut next_stack = 1u32;
    let mut live: Vec<u64> = Vec::new();
    // Per thread: its batch, the stacks it defined (site -> number).
    let mut threads: Vec<(Vec<u8>, Vec<Option<u32>>)> = vec![(Vec::new(), vec![None; 12]); 3];
    let mut heap = 0x55d0_0010_0000u64;
    let mut t = 0;
    for i in 0..n {
        if rng.below(100) >= shape.stay {
            t = rng.below(3) as usize;
        }
        let batch_full = threads[t].0.len() > 3000;
        if batch_full || i == n - 1 {
            for (k, (b, _)) in threads.iter_mut().enumerate() {
                if !b.is_empty() && (k == t || i == n - 1) {
                    out.push((EVENT, pid, k as u64 + 10, std::mem::take(b)));
                }
            }
        }
        let r = rng.below(100);
        let (batch, stacks) = &mut threads[t];
        let ms = (1000 + seq / 7) as u32;
        if r < 3 {
            // A thread's table starts over: its backtraces get new numbers.
            stacks.iter_mut().for_each(|s| *s = None);
        }
        if r == 5 {
            seq += 1; // a number never sent: lost
        }
        if r < 50 || live.is_empty() {
            let site = rng.below(12) as usize;
            let id = if r == 7 {
                999_999 // never defined
            } else {
                match stacks[site] {
                    Some(id) => id,
                    None => {
                        let id = next_stack;
                        next_stack += 1;
                        batch.extend_from_slice(&[KIND_STACK, sites[site].len() as u8, 0, 0]);
                        batch.extend_from_slice(&id.to_le_bytes());
                        for f in &sites[site] {
                            batch.extend_from_slice(&f.to_le_bytes());
                        }
                        stacks[site] = Some(id);
                        id
                    }
                }
            };
            let size = [16u64, 24, 100, 4096, 1 + rng.below(300)][rng.below(5) as usize];
            let addr = if rng.below(3) == 0 && shape.reuse && !live.is_empty() {
                // A block reused (allocated again without a free).
                live[rng.below(live.len() as u64) as usize]
            } else {
                heap += (size + 31) & !15;
                heap
            };
            let (res, func) = if modules & MODULE_FILE != 0 && r.is_multiple_of(9) {
                (RES_FD, 10)
            } else {
                (RES_MEMORY, [0u8, 1, 2, 5][rng.below(4) as usize])
            };
            let mut rec = vec![0u8; ALLOC_LEN];
            rec[0] = KIND_ALLOC;
            rec[1] = res;
            rec[2] = func;
            rec[4..8].copy_from_slice(&ms.to_le_bytes());
            rec[8..16].copy_from_slice(&seq.to_le_bytes());
            rec[16..24].copy_from_slice(&size.to_le_bytes());
            rec[24..32].copy_from_slice(
                &(if res == RES_FD {
                    3 + rng.below(20)
                } else {
                    addr
                })
                .to_le_bytes(),
            );
            rec[32..36].copy_from_slice(&(if site_zero(r) { 0 } else { id }).to_le_bytes());
            batch.extend_from_slice(&rec);
            live.push(addr);
        } else if r < 95 {
            // A release, sometimes of the block just allocated; one in
            // twenty numbered before three allocations made inside it.
            let k = if r < 60 {
                live.len() - 1
            } else {
                rng.below(live.len() as u64) as usize
            };
            let addr = live.swap_remove(k);
            let inner = r.is_multiple_of(20);
            let number = seq;
            if inner {
                seq += 1;
                for _ in 0..3 {
                    let mut rec = vec![0u8; ALLOC_LEN];
                    rec[0] = KIND_ALLOC;
                    rec[2] = 0;
                    rec[4..8].copy_from_slice(&ms.to_le_bytes());
                    rec[8..16].copy_from_slice(&seq.to_le_bytes());
                    rec[16..24].copy_from_slice(&40u64.to_le_bytes());
                    heap += 64;
                    rec[24..32].copy_from_slice(&heap.to_le_bytes());
                    batch.extend_from_slice(&rec);
                    live.push(heap);
                    seq += 1;
                }
                seq -= 1;
            }
            let mut rec = vec![0u8; FREE_LEN];
            rec[0] = KIND_FREE;
            rec[2] = 4;
            rec[4..8].copy_from_slice(&ms.to_le_bytes());
            rec[8..16].copy_from_slice(&number.to_le_bytes());
            rec[16..24].copy_from_slice(&(if r == 90 { 0 } else { addr }).to_le_bytes());
            batch.extend_from_slice(&rec);
        } else {
            // A number taken for nothing (a failed realloc).
            let mut rec = vec![0u8; VOID_LEN];
            rec[0] = KIND_VOID;
            rec[4..8].copy_from_slice(&ms.to_le_bytes());
            rec[8..16].copy_from_slice(&seq.to_le_bytes());
            batch.extend_from_slice(&rec);
        }
        seq += 1;
        if r == 11 {
            // A batch delivered twice (the stream, then a spill file).
            let b = batch.clone();
            if !b.is_empty() {
                out.push((EVENT, pid, t as u64 + 10, b.clone()));
                out.push((EVENT, pid, t as u64 + 10, b));
                batch.clear();
            }
        }
    }
    out.push((META, pid, 1, meta(META_MAPS, 2, maps.as_bytes())));
}

fn site_zero(r: u64) -> bool {
    r == 13
}

/// Three process images: a parent (pid 100) with descriptors, which execs
/// itself (image 1), and a child (pid 101).
fn stream(seed: u64, n: usize) -> Vec<(u32, i32, u64, Vec<u8>)> {
    stream_with(
        seed,
        n,
        Shape {
            reuse: true,
            stay: 0,
        },
    )
}

/// How [`image_events`] makes a stream.
#[derive(Clone, Copy)]
struct Shape {
    /// Blocks allocated again without a release (what a lost or
    /// unrecorded release looks like).
    reuse: bool,
    /// The chance (percent) that an event is of the same thread as the
    /// one before (else a thread drawn at random).
    stay: u64,
}

/// [`stream`] of another shape.
fn stream_with(seed: u64, n: usize, shape: Shape) -> Vec<(u32, i32, u64, Vec<u8>)> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    image_events(&mut rng, 100, "/usr/bin/parent", n, shape, &mut out);
    image_events(
        &mut rng,
        101,
        "/usr/bin/child with space",
        n,
        shape,
        &mut out,
    );
    image_events(
        &mut rng,
        100,
        "/usr/bin/parent-after-exec",
        n,
        shape,
        &mut out,
    );
    out
}

fn writer() -> PackedWriter {
    let out: Box<dyn Write + Send> = Box::new(Vec::<u8>::new());
    Writer::new(
        out,
        &RecordingHead {
            command: vec!["parent".into(), "--flag".into()],
            recorder_pid: Some(1),
            origin: Some("test".into()),
            transient_addresses: true,
        },
    )
    .unwrap()
}

/// Splits `events` both ways: the raw image files in `dir`, and the
/// `.tkmem` file's bytes (every address kept).
fn split_both(dir: &Path, events: &[(u32, i32, u64, Vec<u8>)]) -> (Vec<capture::Image>, Vec<u8>) {
    split_both_with(dir, events, true)
}

/// [`split_both`], the `.tkmem` file with or without the addresses of
/// the heap blocks released within their events block.
fn split_both_with(
    dir: &Path,
    events: &[(u32, i32, u64, Vec<u8>)],
    transient_addresses: bool,
) -> (Vec<capture::Image>, Vec<u8>) {
    let path = dir.join("rec.tkmem");
    let file = std::fs::File::create(&path).unwrap();
    let out: Box<dyn Write + Send> = Box::new(file);
    let w = Writer::new(
        out,
        &RecordingHead {
            command: vec!["parent".into()],
            recorder_pid: Some(1),
            origin: None,
            transient_addresses,
        },
    )
    .unwrap();
    let (images, _, mut w) = capture::split_both(
        dir,
        w,
        EVENT,
        META,
        events.iter().map(|(id, pid, t, d)| (*id, *pid, *t, &d[..])),
    )
    .unwrap();
    // How the command ended, in both.
    let root = images
        .iter()
        .filter(|i| i.pid == 100)
        .max_by_key(|i| i.n)
        .unwrap();
    capture::note_end(root, ImageEnd::Exit(3)).unwrap();
    w.end(root.index, ImageEnd::Exit(3)).unwrap();
    w.finish(&Finish {
        pid: Some(100),
        ..Finish::default()
    })
    .unwrap();
    (images, std::fs::read(&path).unwrap())
}

fn text_of(d: Decoder<'_>) -> (Vec<u8>, tracekit_rtrace::recording::DecodeStats) {
    let mut text = Vec::new();
    let (_, stats) = d.write_to(&mut text).unwrap();
    (text, stats)
}

/// Every item with its line, as the readers see it.
fn items_of(mut items: impl Items) -> Vec<String> {
    let mut v = Vec::new();
    while let Some(item) = items.next_item().unwrap() {
        v.push(match item {
            Item::Call(c) => format!("{c:?}"),
            other => format!("{other:?}"),
        });
    }
    v
}

/// The report's text and JSON.
fn report_of(items: impl tracekit_rtrace::IntoItems) -> String {
    let rep = tracekit_rtrace::report::analyse(items, 5, false).unwrap();
    let mut text = Vec::new();
    rep.write_text(&mut text, "t").unwrap();
    let json = serde_json::to_string_pretty(&rep.to_json("t")).unwrap();
    format!("{}\n{json}", String::from_utf8_lossy(&text))
}

/// The same stream split both ways reads back the same: text byte for
/// byte, items with their line numbers, the decode's counts, and the
/// report.
#[test]
fn a_tkmem_file_reads_back_as_its_raw_recordings() {
    for seed in [1u64, 0x9e37_79b9] {
        let tmp = tempfile::tempdir().unwrap();
        let events = stream(seed, 4000);
        let (images, bytes) = split_both(tmp.path(), &events);
        assert_eq!(images.len(), 3);
        let file = PackedFile::from_bytes(bytes.clone()).unwrap();
        assert!(file.damage.is_none(), "{:?}", file.damage);
        assert_eq!(file.images.len(), 3);
        assert_eq!(file.root_pid(), Some(100));
        let mut saw = (0, 0, 0, 0);
        for image in &images {
            let k = image.index as usize;
            assert_eq!(file.images[k].info.pid, image.pid as u32);
            assert_eq!(file.images[k].n, image.n);
            let (raw, raw_stats) = text_of(Decoder::open(&image.path).unwrap());
            let (packed, packed_stats) = text_of(Decoder::packed(&file, k).unwrap());
            assert!(
                raw == packed,
                "image {k}: the texts differ:\n{}",
                first_difference(&raw, &packed)
            );
            let s = |s: &tracekit_rtrace::recording::DecodeStats| {
                (
                    s.events,
                    s.allocs,
                    s.frees,
                    s.lost,
                    s.duplicates,
                    s.unknown_backtraces,
                )
            };
            assert_eq!(s(&raw_stats), s(&packed_stats), "image {k}");
            saw.0 += raw_stats.lost;
            saw.1 += raw_stats.duplicates;
            saw.2 += raw_stats.unknown_backtraces;
            saw.3 += raw_stats.allocs;
            // Items: from the text, from the raw file, from the .tkmem file.
            let from_text = items_of(Assembler::new(Reader::new(&raw[..])));
            assert_eq!(
                from_text,
                items_of(Events::open(&image.path).unwrap()),
                "image {k}"
            );
            assert_eq!(
                from_text,
                items_of(Events::packed(&file, k).unwrap()),
                "image {k}"
            );
            // The report: from the text's items, from the raw file's and
            // the .tkmem file's calls (given as CallEvents), the same.
            let of_text = report_of(&raw[..]);
            assert!(of_text.contains("\"allocations\": "), "{of_text}");
            assert_eq!(
                of_text,
                report_of(ItemStream(Box::new(Events::open(&image.path).unwrap()))),
                "image {k}"
            );
            assert_eq!(
                of_text,
                report_of(ItemStream(Box::new(Events::packed(&file, k).unwrap()))),
                "image {k}"
            );
        }
        // The stream had every case the comparison is about.
        assert!(
            saw.0 > 0 && saw.1 > 0 && saw.2 > 0 && saw.3 > 1000,
            "{saw:?}"
        );
        // How the command ended, and the recording as a whole.
        let rec = Recording::from_packed(Path::new("rec.tkmem"), file);
        assert_eq!(rec.pid, Some(100));
        assert_eq!((rec.images[0].pid, rec.images[0].n), (100, 0));
        assert_eq!(
            rec.images[1].end.as_deref(),
            Some("the process exited with status 3")
        );
        assert_eq!(
            rec.images[2].executable.as_deref(),
            Some("/usr/bin/child with space")
        );
        assert_eq!(rec.images[1].name(), "rec.tkmem#100-1");
        // Far smaller than the raw files.
        let raw_size: u64 = images
            .iter()
            .map(|i| std::fs::metadata(&i.path).unwrap().len())
            .sum();
        assert!(
            (bytes.len() as u64) * 4 < raw_size,
            "{} vs {raw_size}",
            bytes.len()
        );
    }
}

/// The calls of a source, in order.
fn calls_of(mut items: impl Items) -> Vec<tracekit_rtrace::reader::FullCall> {
    let mut v = Vec::new();
    while let Some(item) = items.next_item().unwrap() {
        if let Item::Call(c) = item {
            v.push(c);
        }
    }
    v
}

/// Without the addresses of the heap blocks released within their events
/// block by their own thread with nothing between (the recorder's
/// default): each of those blocks named by its event number, released by
/// that number, every other call the same, the same report; leaked blocks
/// keep their addresses; the sp-rtrace text, which needs every address,
/// is refused saying why. With releases not recorded (blocks allocated
/// again), the pairs are still the thread's own, but a release of a block
/// whose allocation was not recorded either may then release an older
/// one: the report is not compared.
#[test]
fn transient_heap_blocks_are_named_by_number_and_the_report_is_the_same() {
    use tracekit_rtrace::recording::packed::NOT_KEPT;
    for (seed, reuse) in [(3u64, false), (0x51ed_2701, false), (3, true)] {
        let tmp = tempfile::tempdir().unwrap();
        // Threads taking turns in runs of ten events, on average.
        let events = stream_with(seed, 4000, Shape { reuse, stay: 90 });
        let (images, full) = split_both_with(tmp.path(), &events, true);
        let lean_dir = tempfile::tempdir().unwrap();
        let (_, lean) = split_both_with(lean_dir.path(), &events, false);
        let full = PackedFile::from_bytes(full).unwrap();
        let lean = PackedFile::from_bytes(lean).unwrap();
        assert!(lean.damage.is_none(), "{:?}", lean.damage);
        assert_eq!(lean.flags, packed::FLAG_TRANSIENT_UNADDRESSED);
        assert!(!lean.head.transient_addresses && full.head.transient_addresses);
        let mut named = (0, 0, 0);
        for image in &images {
            let k = image.index as usize;
            let raw = calls_of(Events::open(&image.path).unwrap());
            let cut = calls_of(Events::packed(&lean, k).unwrap());
            assert_eq!(raw.len(), cut.len(), "image {k}");
            // Allocations named by number, by their number.
            let mut by_number = std::collections::HashMap::new();
            for (r, c) in raw.iter().zip(&cut) {
                let id = c.call.id;
                assert_eq!(c.call.by_number, id & NOT_KEPT != 0);
                if c.call.by_number {
                    let mut same = r.clone();
                    (same.call.id, same.call.by_number) = (id, true);
                    assert_eq!(format!("{same:?}"), format!("{c:?}"), "image {k}");
                    if c.call.is_alloc() {
                        assert!(by_number.insert(id, r.call.id).is_none(), "{c:?}");
                        named.0 += 1;
                    } else {
                        // Released by the number its allocation had.
                        assert_eq!(by_number.remove(&id), Some(r.call.id), "{c:?}");
                        named.1 += 1;
                    }
                } else {
                    assert_eq!(format!("{r:?}"), format!("{c:?}"), "image {k}");
                    named.2 += 1;
                }
            }
            // Every block named by number was released (in its block).
            assert!(by_number.is_empty(), "image {k}: {by_number:?}");
            let (of_raw, of_lean) = (
                report_of(ItemStream(Box::new(Events::open(&image.path).unwrap()))),
                report_of(ItemStream(Box::new(Events::packed(&lean, k).unwrap()))),
            );
            assert!(
                reuse || of_raw == of_lean,
                "image {k}: the reports differ:\n{}",
                first_difference(of_raw.as_bytes(), of_lean.as_bytes())
            );
            assert_eq!(
                text_of(Decoder::packed(&full, k).unwrap()).0,
                text_of(Decoder::open(&image.path).unwrap()).0
            );
            // Leaked blocks keep their addresses.
            let mut leaks = 0;
            tracekit_rtrace::allocations::for_each_allocation(
                ItemStream(Box::new(Events::packed(&lean, k).unwrap())),
                |_, _| Ok(()),
                |a| {
                    if a.leaked {
                        assert!(a.address.is_some(), "{a:?}");
                        leaks += 1;
                    }
                    Ok(())
                },
            )
            .unwrap();
            assert!(leaks > 0, "image {k}");
        }
        // Both kinds of names were there to compare.
        assert!(
            named.0 > 300 && named.1 == named.0 && named.2 > 1000,
            "{named:?}"
        );
        let rec = Recording::from_packed(Path::new("lean.tkmem"), lean);
        let err = rec.images[0].text().err().unwrap().to_string();
        assert!(err.contains("--addresses"), "{err}");
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = at.saturating_sub(200);
    format!(
        "raw:    {}\npacked: {}",
        String::from_utf8_lossy(&a[from..(at + 200).min(a.len())]),
        String::from_utf8_lossy(&b[from..(at + 200).min(b.len())])
    )
}

/// Where each block starts (after the file's head).
fn block_starts(bytes: &[u8]) -> Vec<usize> {
    let mut at = packed::FILE_HEAD;
    let mut out = Vec::new();
    while at + packed::BLOCK_HEAD <= bytes.len() {
        out.push(at);
        let stored = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += packed::BLOCK_HEAD + stored;
    }
    out
}

/// Reads every image of a (damaged) file, as text and (`report`) through
/// the report: never a panic; returns the calls read.
fn read_all(file: &PackedFile, report: bool) -> u64 {
    let mut calls = 0;
    for k in 0..file.images.len() {
        let (text, stats) = match Decoder::packed(file, k) {
            Ok(d) => {
                let mut text = Vec::new();
                match d.write_to(&mut text) {
                    Ok((_, s)) => (text, s),
                    Err(_) => continue,
                }
            }
            Err(_) => continue,
        };
        assert_eq!(
            stats.allocs + stats.frees,
            text.split(|&b| b == b'\n')
                .filter(|l| l.windows(2).any(|w| w == b". "))
                .count() as u64
        );
        calls += stats.allocs + stats.frees;
        if !report {
            continue;
        }
        if let Ok(events) = Events::packed(file, k) {
            let _ = tracekit_rtrace::report::analyse(
                tracekit_rtrace::ItemStream(Box::new(events)),
                5,
                false,
            );
        }
    }
    calls
}

/// A recording cut short — where a killed recorder leaves it, at a block
/// boundary, or inside a block — reads up to its last whole block: the
/// blocks before are all there, the place and the bytes not read are
/// said, and the events of a block cut inside are counted.
#[test]
fn a_cut_recording_reads_up_to_its_last_whole_block() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, bytes) = split_both(tmp.path(), &stream(5, 1500));
    let full = read_all(&PackedFile::from_bytes(bytes.clone()).unwrap(), true);
    let starts = block_starts(&bytes);
    assert!(starts.len() > 12, "{}", starts.len());
    let mut last = 0;
    for (i, &at) in starts.iter().enumerate() {
        // At the boundary: whole blocks, nothing damaged (but not finished).
        let file = PackedFile::from_bytes(bytes[..at].to_vec()).unwrap();
        assert!(file.damage.is_none(), "cut at {at}: {:?}", file.damage);
        assert_eq!(file.blocks, i as u64);
        assert!(file.finish.is_none());
        let calls = read_all(&file, i.is_multiple_of(8));
        assert!(calls >= last && calls <= full, "cut at {at}: {calls}");
        last = calls;
        // Inside the block: the same, and the damage said.
        for cut in [at + 1, at + packed::BLOCK_HEAD, at + packed::BLOCK_HEAD + 7] {
            if cut >= bytes.len() {
                continue;
            }
            let file = PackedFile::from_bytes(bytes[..cut].to_vec()).unwrap();
            let d = file
                .damage
                .clone()
                .unwrap_or_else(|| panic!("cut at {cut}"));
            assert_eq!((d.offset, d.bytes), (at as u64, (cut - at) as u64), "{d:?}");
            assert_eq!(file.blocks, i as u64);
            assert_eq!(read_all(&file, false), calls, "cut at {cut}");
            let kind = bytes[at + 2];
            if cut >= at + packed::BLOCK_HEAD && kind == packed::KIND_EVENTS {
                let count = u32::from_le_bytes(bytes[at + 20..at + 24].try_into().unwrap());
                assert_eq!(d.cut_events.map(|c| c.1), Some(count), "{d:?}");
            }
        }
    }
    assert_eq!(last, full);
    // Too short for the head: an error that says so, not a panic.
    for n in [0, 5, packed::FILE_HEAD - 1] {
        let e = PackedFile::from_bytes(bytes[..n].to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("byte offset 0"), "{e}");
    }
}

/// A damaged byte anywhere: the file reads up to the block holding it
/// (checksums), never a panic.
#[test]
fn a_damaged_recording_reads_up_to_the_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, bytes) = split_both(tmp.path(), &stream(9, 1500));
    let starts = block_starts(&bytes);
    // About 150 places, in every kind of block.
    for at in (0..bytes.len()).step_by(bytes.len() / 150) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        match PackedFile::from_bytes(b) {
            Ok(file) => {
                if at >= packed::FILE_HEAD {
                    let block = starts.iter().rev().find(|&&s| s <= at).copied().unwrap();
                    let d = file.damage.clone().unwrap_or_else(|| panic!("byte {at}"));
                    assert!(d.offset <= block as u64, "byte {at}: {d:?}");
                }
                read_all(&file, at.is_multiple_of(10));
            }
            Err(e) => assert!(at < packed::FILE_HEAD, "byte {at}: {e}"),
        }
    }
}

/// The writer alone: an empty recording, a recording of one image without
/// events, and events of an image never started refused.
#[test]
fn small_recordings() {
    let w = writer();
    let out = w.finish(&Finish::default()).unwrap();
    drop(out);
    let mut w = writer();
    let k = w.image(0, &header(7, MODULE_MEMORY, "/bin/true")).unwrap();
    assert!(w.events(k + 1, 0, &[]).is_err());
    w.maps(k, b"00400000-00401000 r-xp 00000000 08:01 1 /bin/true\n")
        .unwrap();
    let mut bytes = Vec::new();
    // Through the set reader: its text is a header and a map line.
    let mut w2 = Writer::new(&mut bytes, &RecordingHead::default()).unwrap();
    let k2 = w2.image(0, &header(7, MODULE_MEMORY, "/bin/true")).unwrap();
    w2.maps(k2, b"00400000-00401000 r-xp 00000000 08:01 1 /bin/true\n")
        .unwrap();
    w2.finish(&Finish::default()).unwrap();
    let file = PackedFile::from_bytes(bytes).unwrap();
    let (text, _) = text_of(Decoder::packed(&file, 0).unwrap());
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.ends_with(": /bin/true => 0x400000-0x401000\n"),
        "{text}"
    );
    assert!(Decoder::packed(&file, 1).is_err());
}

/// A header record too short to be one (damage: the shim's are whole)
/// starts no image: it is counted, its pid's events are orphans, and the
/// file the writer makes reads whole (found by the capture fuzz target).
#[test]
fn a_damaged_header_starts_no_image() {
    let mut ev = vec![0u8; ALLOC_LEN];
    ev[0] = KIND_ALLOC;
    ev[24..32].copy_from_slice(&0x1000u64.to_le_bytes());
    let events = [(META, 0, 0, meta(META_HEADER, 0, &[])), (EVENT, 0, 0, ev)];
    let tmp = tempfile::tempdir().unwrap();
    let (images, stats, w) = capture::split_both(
        tmp.path(),
        writer(),
        EVENT,
        META,
        events.iter().map(|(id, pid, t, d)| (*id, *pid, *t, &d[..])),
    )
    .unwrap();
    assert!(images.is_empty());
    assert_eq!(
        (stats.incomplete_meta, stats.orphan_events),
        (1, 1),
        "{stats:?}"
    );
    let shared = w.finish(&Finish::default()).unwrap();
    drop(shared);
}
