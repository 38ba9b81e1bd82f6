//! The LD_PRELOAD recorder on a small C program with known memory and
//! descriptor leaks, threads, a signal handler that allocates, fork and
//! exec: exact counts, and (when valgrind is installed) the same
//! "in use at exit" totals as memcheck.
//!
//! Needs a C compiler as `cc` (CI installs gcc).

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use tracekit_rtrace::postproc::{self, Options};
use tracekit_rtrace::recording::capture::{Capture, CaptureStats, Image, STREAM_SIZE};
use tracekit_rtrace::recording::DecodeStats;
use tracekit_rtrace::report;

const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile void *sink;

static void on_signal(int sig) {
    (void)sig;
    void *p = malloc(33);   /* allocation inside a signal handler: freed */
    free(p);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) free(malloc(16 + i % 64));
    sink = malloc(7);       /* leak: 2 threads x 7 bytes */
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) return 0; /* the exec'd image */
    signal(SIGUSR1, on_signal);
    /* memory leaks from main: 10 + 20 + 100 + 64 + 48 + 128 = 370 bytes in 6 blocks */
    sink = malloc(10);
    sink = malloc(20);
    sink = calloc(4, 25);
    void *a = NULL;
    if (posix_memalign(&a, 64, 64) == 0) sink = a;
    void *r = malloc(16);
    r = realloc(r, 48);      /* realloc chain: one live block of 48 */
    sink = r;
    sink = aligned_alloc(64, 128);
    /* freed */
    for (int i = 0; i < 100; i++) free(malloc(i + 1));
    free(calloc(3, 3));
    free(realloc(NULL, 5));
    free(NULL);
    raise(SIGUSR1);

    /* descriptors: leaked open, leaked pipe (2), leaked dup, leaked socket = 5 fds */
    int fd = open("/dev/null", O_RDONLY);
    int p[2];
    if (pipe(p) != 0) return 1;
    int d = dup(fd);
    (void)d;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    (void)s;
    int e = eventfd(0, 0);
    close(e);
    /* fdopen moves a pipe end to a FILE*, fclose releases it */
    int q[2];
    if (pipe(q) != 0) return 1;
    FILE *f = fdopen(q[0], "r");
    fclose(f);
    close(q[1]);
    /* one leaked FILE* (its memory is a malloc inside fopen) */
    FILE *g = fopen("/dev/null", "r");
    (void)g;

    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);

    pid_t child = fork();
    if (child == 0) {
        sink = malloc(5);   /* the child's own leak */
        _exit(0);
    }
    waitpid(child, NULL, 0);
    pid_t ex = fork();
    if (ex == 0) {
        sink = malloc(4321);  /* buffered when execl replaces the image */
        execl(argv[0], argv[0], "exec", (char *)NULL);
        _exit(127);
    }
    waitpid(ex, NULL, 0);
    return 0;
}
"#;

fn shim(dir: &Path) -> PathBuf {
    let p = dir.join("libtracekit_rtrace_shim.so");
    std::fs::write(&p, tracekit_rtrace_preload::SHIM).unwrap();
    p
}

fn build(dir: &Path, name: &str, src: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(name);
    let status = Command::new("cc")
        .args(["-O0", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(&exe)
        .arg(&c)
        .status()
        .expect("a C compiler (cc) is needed for this test");
    assert!(status.success());
    exe
}

/// Runs `exe args` with the shim writing into a stream of `stream_size`
/// bytes per lane (depth 10, `modules`), the image files going to
/// `dir/rec`.
fn record(
    dir: &Path,
    exe: &Path,
    args: &[&str],
    modules: &str,
    stream_size: u64,
) -> (ExitStatus, Vec<Image>, CaptureStats) {
    let so = shim(dir);
    let rec = dir.join("rec");
    std::fs::create_dir(&rec).unwrap();
    // The recorder's side: a POSIX trace stream, read while the program runs.
    let capture = Capture::start_sized(&rec, 10, stream_size).unwrap();
    let status = Command::new(exe)
        .args(args)
        .env("LD_PRELOAD", &so)
        .envs(capture.env(modules))
        .status()
        .unwrap();
    let (images, stats) = capture.finish().unwrap();
    (status, images, stats)
}

struct Recorded {
    text: String,
    report: report::Report,
    stats: DecodeStats,
}

fn decode(path: &Path) -> Recorded {
    let mut text = Vec::new();
    let (_, stats) = tracekit_rtrace::recording::decode_file(path, &mut text).unwrap();
    let report = report::analyse(&text[..], 100, false).unwrap();
    Recorded {
        text: String::from_utf8(text).unwrap(),
        report,
        stats,
    }
}

fn leaks(r: &Recorded, resource: &str) -> (u64, i64) {
    let s = r
        .report
        .resources
        .iter()
        .find(|s| s.name == resource)
        .unwrap_or_else(|| panic!("no {resource} in {:?}", r.report.resources));
    (s.leaked_blocks, s.leaked_bytes)
}

#[test]
fn records_known_leaks_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "leaky", PROGRAM);
    let (status, images, stats) = record(tmp.path(), &exe, &[], "memory,file", STREAM_SIZE);
    assert!(status.success(), "the traced program failed: {status:?}");
    assert_eq!(
        (
            stats.orphan_events,
            stats.damaged_events,
            stats.incomplete_meta
        ),
        (0, 0, 0),
        "{stats:?}"
    );

    let mut files: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("rec"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut listed: Vec<PathBuf> = images.iter().map(|i| i.path.clone()).collect();
    listed.sort();
    assert_eq!(files, listed);
    // main (pid P, image 0), the first fork child (its own file), the
    // second child before exec (image 0) and its exec'd image (image 1).
    assert_eq!(files.len(), 4, "{files:?}");
    let image1: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with("-1.tkrt"))
        .collect();
    assert_eq!(image1.len(), 1, "{files:?}");
    let exe_name = exe.display().to_string();
    let decoded: Vec<(PathBuf, Recorded)> = files.iter().map(|f| (f.clone(), decode(f))).collect();
    let main = decoded
        .iter()
        .map(|(_, r)| r)
        .find(|r| {
            r.report
                .resources
                .iter()
                .any(|s| s.name == "fd" && s.allocs > 5)
        })
        .expect("main image");

    // Leaks whose innermost frame is in the program itself: exactly what
    // the source leaks.
    let own_sites: (u64, i64) = main
        .report
        .leaks
        .iter()
        .filter(|s| s.resource == "memory")
        .filter(|s| {
            let first = s.frames.first().map(|f| f.0).unwrap_or(0);
            main.text.lines().any(|l| {
                l.starts_with(": ")
                    && l.contains(&exe_name)
                    && l.rsplit_once(" => ")
                        .and_then(|(_, r)| r.split_once('-'))
                        .is_some_and(|(a, b)| {
                            let a = u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap();
                            let b = u64::from_str_radix(b.trim_start_matches("0x"), 16).unwrap();
                            a <= first && first < b
                        })
            })
        })
        .fold((0, 0), |acc, s| (acc.0 + s.blocks, acc.1 + s.bytes));
    assert_eq!(own_sites, (6 + 2, 370 + 14), "{:#?}", main.report.leaks);
    // open + 2 pipe ends + dup + socket; eventfd and the fdopen'ed pipe
    // were released.
    assert_eq!(leaks(main, "fd").0, 5);
    assert_eq!(leaks(main, "fp").0, 1);
    // The signal handler's allocation was recorded and freed.
    assert!(main.text.contains("malloc<memory>(33) = 0x"));
    // The fork child's own file has its leak.
    let child = decoded
        .iter()
        .map(|(_, r)| r)
        .find(|r| r.text.contains("malloc<memory>(5) = 0x"))
        .expect("child recording");
    assert!(leaks(child, "memory").0 >= 1);
    // Events made just before execl (variadic, reaching execve inside
    // libc) replaced the image belong to the pre-exec image.
    assert!(
        decoded
            .iter()
            .any(|(_, r)| r.text.contains("malloc<memory>(4321) = 0x")),
        "the pre-exec image lost its events"
    );

    // The text is valid for the post-processor (round trip through -l).
    let mut out = Vec::new();
    postproc::run(
        main.text.as_bytes(),
        &Options {
            filter_leaks: true,
            ..Default::default()
        },
        &mut out,
    )
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    let (blocks, bytes) = leaks(main, "memory");
    assert!(out.contains(&format!(
        "# {blocks} block(s) leaked with total size of {bytes} bytes"
    )));

    // Same totals as memcheck's "in use at exit" when valgrind is here.
    if let Ok(vg) = Command::new("valgrind")
        .args(["--run-libc-freeres=no", "--trace-children=no"])
        .arg(&exe)
        .output()
    {
        let log = String::from_utf8_lossy(&vg.stderr);
        // ==pid==     in use at exit: 1,234 bytes in 12 blocks
        // (memcheck follows the fork child too; the parent exits last.)
        let line = log
            .lines()
            .rfind(|l| l.contains("in use at exit:"))
            .expect("memcheck summary");
        let nums: Vec<i64> = line
            .split("in use at exit:")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .filter_map(|w| w.replace(',', "").parse().ok())
            .collect();
        assert_eq!(
            (blocks as i64, bytes),
            (nums[1], nums[0]),
            "memcheck: {line}"
        );
    } else {
        eprintln!("valgrind not installed: memcheck comparison skipped");
    }
}

const STORM: &str = r#"
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 50000; i++) {
        char *volatile p = malloc(8 + i % 200);
        free(p);
    }
    char *volatile leak = malloc(3);   /* leak: one per thread */
    (void)leak;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) {
        /* 1000 leaks, then a death that runs no exit code */
        for (int i = 0; i < 1000; i++) sink = malloc(64);
        if (strcmp(argv[1], "kill") == 0) raise(SIGKILL);
        if (strcmp(argv[1], "segv") == 0) *(volatile int *)0 = 1;
        if (strcmp(argv[1], "abort") == 0) abort();
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
"#;

/// A stream far too small for four threads allocating flat out: it fills
/// again and again, the shim waits for the reader instead of dropping, and
/// every event arrives.
#[test]
fn a_full_stream_makes_writers_wait_not_lose() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "storm", STORM);
    // 64 KiB per lane: 15 batches of 4 KiB.
    let (status, images, stats) = record(tmp.path(), &exe, &[], "memory", 64 << 10);
    assert!(status.success(), "{status:?}");
    assert!(
        stats.refused_writes > 0,
        "the stream never filled: {stats:?}"
    );
    assert_eq!(images.len(), 1);
    let Recorded {
        report, stats: d, ..
    } = decode(&images[0].path);
    assert_eq!(d.lost, 0, "{stats:?}");
    let mem = report
        .resources
        .iter()
        .find(|s| s.name == "memory")
        .unwrap();
    // 4 x 50,000 pairs plus one leak per thread (and whatever libc and
    // pthread_create allocate on their own).
    assert!(mem.allocs >= 200_004, "{}", mem.allocs);
    assert!(mem.leaked_blocks >= 4);
    let own: u64 = report
        .leaks
        .iter()
        .filter(|l| l.bytes == 3 * l.blocks as i64)
        .map(|l| l.blocks)
        .sum();
    assert_eq!(own, 4, "{:#?}", report.leaks);
}

/// A process that dies without exiting (SIGKILL as the out-of-memory
/// killer sends it, a segmentation fault, abort): every event it recorded
/// reaches the trace (read from its spill file after it is gone), the
/// trace says how it ended, and the recorder does not hang on it.
#[test]
fn a_crash_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "storm", STORM);
    for (how, signal) in [("kill", 9), ("segv", 11), ("abort", 6)] {
        let dir = tmp.path().join(how);
        std::fs::create_dir(&dir).unwrap();
        let (status, images, stats) = record(&dir, &exe, &[how], "memory", STREAM_SIZE);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(signal), "{how}: {status:?}");
        assert_eq!(images.len(), 1, "{how}");
        assert!(stats.spilled_events > 0, "{how}: {stats:?}");
        let Recorded { text, stats: d, .. } = decode(&images[0].path);
        let exe_name = exe.display().to_string();
        assert!(
            text.lines()
                .any(|l| l.starts_with(": ") && l.contains(&exe_name)),
            "{how}: no maps of the program: {text}"
        );
        assert_eq!(text.matches("malloc(64) = 0x").count(), 1000, "{how}");
        assert_eq!((d.lost, d.unknown_backtraces), (0, 0), "{how}");
        // The shim saw no exit; the recorder, which waited for the
        // command, knows the signal.
        assert!(
            text.contains("\n## tracekit: the process ended without exiting"),
            "{how}: {}",
            &text[text.len().saturating_sub(300)..]
        );
        tracekit_rtrace::recording::capture::note_end(
            &images[0],
            tracekit_rtrace::recording::capture::ImageEnd::Signal(signal),
        )
        .unwrap();
        let Recorded { text, .. } = decode(&images[0].path);
        assert!(
            text.contains(&format!(
                "\n## tracekit: the process was killed by signal {signal} ("
            )),
            "{how}"
        );
    }
}

/// Recorded once into both layouts from the same stream — the raw image
/// files and the `.tkmem` file (`record mem`'s default) — real programs
/// (threads, a signal handler, fork and exec, descriptors; a process
/// killed with its last events in its spill file) read back the same:
/// the sp-rtrace text byte for byte, and the items the reports take.
#[test]
fn a_tkmem_recording_reads_back_as_the_raw_one() {
    use tracekit_rtrace::reader::{Assembler, Items, Reader};
    use tracekit_rtrace::recording::capture::ImageEnd;
    use tracekit_rtrace::recording::packed::{PackedFile, RecordingHead, Writer};
    use tracekit_rtrace::recording::{Decoder, Events};
    let tmp = tempfile::tempdir().unwrap();
    let leaky = build(tmp.path(), "leaky", PROGRAM);
    let storm = build(tmp.path(), "storm", STORM);
    let so = shim(tmp.path());
    // Every address kept (the text is the same), and not (the report is).
    for (name, exe, args, modules, transient_addresses) in [
        ("leaky", &leaky, &[][..], "memory,file", true),
        ("killed", &storm, &["kill"][..], "memory", true),
        ("leaky-unaddressed", &leaky, &[][..], "memory,file", false),
        ("killed-unaddressed", &storm, &["kill"][..], "memory", false),
    ] {
        let dir = tmp.path().join(format!("{name}.rec"));
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("rec.tkmem");
        let out: Box<dyn std::io::Write + Send> = Box::new(std::fs::File::create(&file).unwrap());
        let head = RecordingHead {
            transient_addresses,
            ..RecordingHead::default()
        };
        let writer = Writer::new(out, &head).unwrap();
        let mut capture = Capture::start_both(&dir, writer, 10, STREAM_SIZE).unwrap();
        let child = Command::new(exe)
            .args(args)
            .env("LD_PRELOAD", &so)
            .envs(capture.env(modules))
            .spawn()
            .unwrap();
        let root = child.id() as i32;
        let status = child.wait_with_output().unwrap().status;
        let (images, stats) = capture.finish_mut_for_tests().unwrap();
        let end = ImageEnd::from_status(status).unwrap();
        if let Some(last) = images.iter().filter(|i| i.pid == root).max_by_key(|i| i.n) {
            tracekit_rtrace::recording::capture::note_end(last, end).unwrap();
        }
        capture
            .finish_packed(&images, &stats, root, Some(end))
            .unwrap();
        let packed = PackedFile::open(&file).unwrap();
        assert!(packed.damage.is_none(), "{name}: {:?}", packed.damage);
        assert_eq!(packed.images.len(), images.len(), "{name}");
        let mut calls = 0;
        let mut by_number = 0;
        for image in &images {
            let k = image.index as usize;
            if !transient_addresses {
                let report = |items: Box<dyn Items>| {
                    let rep = tracekit_rtrace::report::analyse(
                        tracekit_rtrace::reader::ItemStream(items),
                        5,
                        false,
                    )
                    .unwrap();
                    let mut text = Vec::new();
                    rep.write_text(&mut text, "t").unwrap();
                    (text, serde_json::to_string(&rep.to_json("t")).unwrap())
                };
                let raw = report(Box::new(Events::open(&image.path).unwrap()));
                assert!(
                    raw == report(Box::new(Events::packed(&packed, k).unwrap())),
                    "{name}: image {k}: the reports differ"
                );
                let (_, ps) = Decoder::packed(&packed, k)
                    .unwrap()
                    .write_to(std::io::sink())
                    .unwrap();
                calls += ps.allocs + ps.frees;
                let mut events = Events::packed(&packed, k).unwrap();
                while let Some(item) = events.next_item().unwrap() {
                    if let tracekit_rtrace::reader::Item::Call(c) = item {
                        by_number += u64::from(c.call.address().is_none());
                    }
                }
                continue;
            }
            let mut raw = Vec::new();
            let (_, rs) = Decoder::open(&image.path)
                .unwrap()
                .write_to(&mut raw)
                .unwrap();
            let mut text = Vec::new();
            let (_, ps) = Decoder::packed(&packed, k)
                .unwrap()
                .write_to(&mut text)
                .unwrap();
            assert!(
                raw == text,
                "{name}: image {k} ({:?}): the texts differ",
                image.path
            );
            assert_eq!(
                (rs.allocs, rs.frees, rs.lost),
                (ps.allocs, ps.frees, ps.lost)
            );
            calls += rs.allocs + rs.frees;
            let items = |mut i: Box<dyn Items>| {
                let mut v = Vec::new();
                while let Some(item) = i.next_item().unwrap() {
                    v.push(format!("{item:?}"));
                }
                v
            };
            let from_text = items(Box::new(Assembler::new(Reader::new(&raw[..]))));
            assert!(
                from_text == items(Box::new(Events::packed(&packed, k).unwrap())),
                "{name}: image {k}: the items differ"
            );
        }
        assert!(calls >= 1000, "{name}: {calls}");
        // Blocks released by their own thread soon after: named by number
        // (the storm's threads interleave: few or none there).
        if name == "leaky-unaddressed" {
            assert!(by_number >= 100, "{name}: {by_number}");
        }
        if name.starts_with("killed") {
            assert!(stats.spilled_events > 0, "{stats:?}");
        }
    }
}
