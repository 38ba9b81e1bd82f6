//! Post-processor options the upstream corpus has no expected output for
//! (sort orders, depth trimming, resource/index/call-address filters) and
//! the leak-matching rules, checked against our own expected files in
//! `tests/expected/` (re-bless with `TRACEKIT_BLESS=1` after reviewing),
//! plus properties that hold whatever the expected text.

use std::path::PathBuf;

use tracekit_rtrace::postproc::{self, CallAddress, Options, SortOrder};

mod common;
use common::upstream;

fn run(input: &[u8], opts: &Options) -> String {
    let mut out = Vec::new();
    postproc::run(input, opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn check(name: &str, got: &str) {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/expected")).join(name);
    if std::env::var_os("TRACEKIT_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with TRACEKIT_BLESS=1", path.display()));
    assert_eq!(got, want, "{name}");
}

fn summaries(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# allocation summary: "))
        .map(|l| {
            let n: Vec<u64> = l
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            (n[0], n[1])
        })
        .collect()
}

fn leaks_compressed(sort: Option<SortOrder>) -> Options {
    Options {
        filter_leaks: true,
        compress: true,
        sort,
        ..Default::default()
    }
}

#[test]
fn sort_orders() {
    let input = upstream("context.txt");
    for (name, sort) in [
        ("context.lc.size.txt", SortOrder::Size),
        ("context.lc.count-asc.txt", SortOrder::CountAsc),
        ("context.lc.count.txt", SortOrder::Count),
    ] {
        let out = run(&input, &leaks_compressed(Some(sort)));
        let s = summaries(&out);
        assert_eq!(s.len(), 7);
        let sorted = match sort {
            SortOrder::Size => s.windows(2).all(|w| w[0].1 >= w[1].1),
            SortOrder::SizeAsc => s.windows(2).all(|w| w[0].1 <= w[1].1),
            SortOrder::Count => s.windows(2).all(|w| w[0].0 >= w[1].0),
            SortOrder::CountAsc => s.windows(2).all(|w| w[0].0 <= w[1].0),
        };
        assert!(sorted, "{name}: {s:?}");
        check(name, &out);
    }
}

#[test]
fn backtrace_depth_trims_and_regroups() {
    let out = run(
        &upstream("context.txt"),
        &Options {
            backtrace_depth: Some(1),
            ..leaks_compressed(None)
        },
    );
    assert!(out.contains(", backtrace depth=1, "));
    // One frame per group; groups with the same first frame merge.
    let s = summaries(&out);
    assert!(s.len() < 7, "{s:?}");
    assert_eq!(s.iter().map(|x| x.0).sum::<u64>(), 29);
    check("context.b1.lc.txt", &out);
}

#[test]
fn resource_filter() {
    // <2> = address: only the shmat/shmdt calls stay, and the registry
    // keeps the one type, so the `<type>` tags disappear (as upstream).
    let out = run(
        &upstream("sample.txt"),
        &Options {
            resource: Some(2),
            ..Default::default()
        },
    );
    assert!(out.contains("<1> : address (shared memory attachments)\n"));
    assert!(!out.contains("segment"));
    assert!(out.contains("2. [14:54:26.319] shmat(1024) = 0xb7700000\n"));
    check("sample.R2.txt", &out);
}

#[test]
fn include_wins_over_exclude_and_reads_c_numbers() {
    let include = postproc::parse_index_list("1\n0x2\n03\njunk\n 10 \n");
    assert_eq!(include.len(), 4);
    let out = run(
        &upstream("context.txt"),
        &Options {
            include: Some(include),
            exclude: Some(postproc::parse_index_list("1\n")),
            ..Default::default()
        },
    );
    let indices: Vec<&str> = out
        .lines()
        .filter(|l| l.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .map(|l| l.split('.').next().unwrap())
        .collect();
    assert_eq!(indices, ["1", "2", "3", "10"]);
    let out = run(
        &upstream("context.txt"),
        &Options {
            exclude: Some(postproc::parse_index_list("1\n2\n")),
            ..Default::default()
        },
    );
    assert!(!out.contains("\n1. ") && !out.contains("\n2. @2"));
    assert!(out.contains("\n3. @3"));
}

#[test]
fn call_address_filter() {
    // alloc_context_test is a non-PIE executable: absolute addresses.
    let ca = CallAddress::parse("alloc_context_test:8048650+10").unwrap();
    let out = run(
        &upstream("context.txt"),
        &Options {
            call_address: Some(ca),
            ..Default::default()
        },
    );
    let calls = out
        .lines()
        .filter(|l| l.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .count();
    assert!(calls > 0);
    // Every kept call has a frame in [0x8048650, 0x8048660).
    for block in out.split("\n\n").filter(|b| b.contains(") = 0x")) {
        assert!(
            block.lines().any(|l| l
                .strip_prefix("\t0x")
                .and_then(|a| u64::from_str_radix(a.split(' ').next().unwrap(), 16).ok())
                .is_some_and(|a| (0x8048650..0x8048660).contains(&a))),
            "{block}"
        );
    }
    check("context.call-address.txt", &out);
}

/// Leak matching (spec 6.1): refcounted types count references; a reused
/// id of a plain type leaves the older record as a leak; frees of unknown
/// ids vanish.
const LEAK_RULES: &str = "version=2.0, arch=x86_64, timestamp=2024.1.2 03:04:05, process=t, pid=1, backtrace depth=2, origin=test, 
<1> : memory (memory allocation in bytes)
<2> : gobject (GObject instance) [refcount]
1. [00:00:01.000] malloc<memory>(10) = 0x10
\t0x1

2. [00:00:01.000] malloc<memory>(20) = 0x10
\t0x2

3. [00:00:01.001] g_object_newv<gobject>(40) = 0x20
\t0x3

4. [00:00:01.001] g_object_ref<gobject>(40) = 0x20
\t0x4

5. [00:00:01.002] g_object_unref<gobject>(0x20)

6. [00:00:01.002] free<memory>(0x10)

7. [00:00:01.003] free<memory>(0x99)

8. [00:00:01.004] g_object_newv<gobject>(8) = 0x30
\t0x3

9. [00:00:01.004] g_object_unref<gobject>(0x30)

## a permanent comment
";

#[test]
fn leak_rules() {
    let out = run(
        LEAK_RULES.as_bytes(),
        &Options {
            filter_leaks: true,
            ..Default::default()
        },
    );
    // 1 (0x10 reused by 2, which was freed) and 3 (two refs, one unref).
    let calls: Vec<&str> = out
        .lines()
        .filter(|l| l.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .collect();
    assert_eq!(
        calls,
        [
            "1. [00:00:01.000] malloc<memory>(10) = 0x10",
            "3. [00:00:01.001] g_object_newv<gobject>(40) = 0x20"
        ]
    );
    assert!(out.ends_with(
        "## a permanent comment\n# Resource - memory (memory allocation in bytes):\n# 1 block(s) leaked with total size of 10 bytes\n# Resource - gobject (GObject instance):\n# 1 block(s) leaked with total size of 40 bytes\n"
    ));
    check("leak-rules.l.txt", &out);
    // The report agrees.
    let rep = tracekit_rtrace::report::analyse(LEAK_RULES.as_bytes(), 10, false).unwrap();
    let mem = &rep.resources[0];
    assert_eq!((mem.leaked_blocks, mem.leaked_bytes), (1, 10));
    let gob = &rep.resources[1];
    assert_eq!((gob.leaked_blocks, gob.leaked_bytes), (1, 40));
}

/// A text trace's ids are written as they were, whatever their bits (only
/// a `.tkmem` recording names blocks by number, `Call::by_number`): an
/// id with bit 63 set goes through, and so does its leak.
#[test]
fn ids_with_the_top_bit_set_are_addresses_in_a_text_trace() {
    let text = b"version=2.0, arch=x86_64, timestamp=2024.01.01 00:00:00, process=/bin/x, pid=1\n\
<1> : memory (memory allocation in bytes)\n\
1. malloc(16) = 0x8000000000000010\n\
2. malloc(8) = 0xffffffffffff0000\n\
3. free(0x8000000000000010)\n";
    let all = run(text, &Options::default());
    assert!(
        all.contains("1. malloc(16) = 0x8000000000000010\n"),
        "{all}"
    );
    assert!(all.contains("3. free(0x8000000000000010)\n"), "{all}");
    let leaks = run(
        text,
        &Options {
            filter_leaks: true,
            ..Options::default()
        },
    );
    assert!(
        leaks.contains("2. malloc(8) = 0xffffffffffff0000\n"),
        "{leaks}"
    );
    assert!(!leaks.contains("0x8000000000000010"), "{leaks}");
}
