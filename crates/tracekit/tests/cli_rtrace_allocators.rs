//! `tracekit record mem` on programs that allocate through other
//! allocators than the C library's (small C programs built here): jemalloc
//! and tcmalloc replacing `malloc` (`-ljemalloc`, `-ltcmalloc`),
//! mimalloc's own `mi_` API, and jemalloc with the `_rjem_` prefix (Rust's
//! tikv-jemallocator's naming; made here from Debian's libjemalloc_pic.a
//! with its public symbols renamed); an executable that links its
//! allocator statically is said to hide its allocations;
//! `--toggle-signal`/`--paused` turn recording on and off; and
//! `--modules pages` records anonymous mappings apart from the heap.
//!
//! Needs `cc`, `objcopy` and the Debian packages libjemalloc-dev,
//! libgoogle-perftools-dev and libmimalloc-dev (CI installs them; without
//! them the tests that need them say so and do not run, but fail under CI).

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod common;
use common::ok;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const LIBDIR: &str = "/usr/lib/x86_64-linux-gnu";

fn tracekit() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tracekit"));
    // The C library's separate debug information (libc6-dbg) is not
    // needed to name `main` and takes a debug build over a second per
    // report: symbol tables and the programs' own DWARF only.
    c.env("TRACEKIT_DEBUG_DIRS", "/nonexistent/tracekit-tests");
    c
}

fn build(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    common::cc(dir, name, src, &["-O0", "-g"], flags)
}

/// Whether `file` (a library or header of the allocator packages) is
/// installed; when it is not, the test does not run (but must under CI).
fn have(file: &str, package: &str) -> bool {
    if Path::new(file).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{file} is missing (apt-get install {package})"
    );
    eprintln!("{package} is not installed: this test did not run");
    false
}

/// Records `exe` (with `args` before `--`) as a text recording; returns
/// its first image's trace text and the recorder's stderr.
fn record_text(dir: &Path, exe: &Path, args: &[&str]) -> (String, String) {
    let rec = dir.join(format!(
        "{}.rec",
        exe.file_name().unwrap().to_string_lossy()
    ));
    let out = ok(tracekit()
        .args(["record", "mem", "--format", "text", "-o"])
        .arg(&rec)
        .args(args)
        .arg("--")
        .arg(exe)
        .output());
    let mut traces: Vec<PathBuf> = std::fs::read_dir(&rec)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtrace"))
        .collect();
    traces.sort();
    assert_eq!(traces.len(), 1, "{traces:?}");
    (
        std::fs::read_to_string(&traces[0]).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How many calls of each function the trace has (`mi_free(0x…)` and
/// `mi_free(0x…)` are one key, `mi_malloc(100)` and `mi_malloc(101)` two).
fn calls(trace: &str) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for line in trace.lines() {
        let Some((idx, rest)) = line.split_once(". [") else {
            continue;
        };
        if !idx.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let call = rest.split_once("] ").unwrap().1;
        let call = call.split(" = ").next().unwrap();
        let key = match call.split_once("(0x") {
            Some((f, _)) => format!("{f}(P)"),
            None => call.to_string(),
        };
        *n.entry(key).or_default() += 1;
    }
    n
}

/// The report (JSON) of a recording's first image.
fn report(rec: &Path) -> Value {
    let out = ok(tracekit()
        .args(["rtrace", "report", "--json"])
        .arg(rec)
        .output());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["processes"][0]["report"].clone()
}

/// Records `exe` into a .tkmem file; returns the report of its first
/// image and the recorder's stderr.
fn record_report(dir: &Path, exe: &Path, args: &[&str]) -> (Value, String) {
    let rec = dir.join(format!(
        "{}.tkmem",
        exe.file_name().unwrap().to_string_lossy()
    ));
    // The command's exit status is the recorder's: not checked here.
    let out = tracekit()
        .args(["record", "mem", "-o"])
        .arg(&rec)
        .args(args)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    (
        report(&rec),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The blocks never freed whose innermost named frame is `main`: (count,
/// bytes).
fn leaks_from_main(rep: &Value) -> (u64, u64) {
    let mut n = (0, 0);
    for l in rep["leaks"].as_array().unwrap() {
        let first = l["frames"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|f| f["function"].as_str());
        if first == Some("main") {
            n.0 += l["blocks"].as_u64().unwrap_or(1);
            n.1 += l["bytes"].as_u64().unwrap();
        }
    }
    n
}

/// Through `malloc`: temporaries, five leaks, calloc and realloc.
const PLAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void *keep[10];
int main(void) {
    for (int i = 0; i < 10; i++) { void *p = malloc(100 + i); memset(p, 1, 10); free(p); }
    for (int i = 0; i < 5; i++) keep[i] = malloc(1000 + i);
    void *c = calloc(3, 8);
    c = realloc(c, 4000);
    free(c);
    puts("done");
    return 3;
}
"#;

/// A program linked with jemalloc or tcmalloc as its `malloc` is recorded
/// whole: the shim's hooks find the allocator as the next definition.
#[test]
fn jemalloc_and_tcmalloc_replacing_malloc_are_recorded() {
    for (lib, package) in [
        ("jemalloc", "libjemalloc-dev"),
        ("tcmalloc", "libgoogle-perftools-dev"),
    ] {
        if !have(&format!("{LIBDIR}/lib{lib}.so"), package) {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let exe = build(
            tmp.path(),
            &format!("plain_{lib}"),
            PLAIN,
            &[&format!("-l{lib}")],
        );
        let rec = tmp.path().join("r.tkmem");
        // Every address: its sp-rtrace text is read below.
        let out = tracekit()
            .args(["-q", "record", "mem", "--addresses", "-o"])
            .arg(&rec)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        // Unchanged: output and exit status.
        assert_eq!(out.status.code(), Some(3), "{lib}");
        assert_eq!(out.stdout, b"done\n", "{lib}");
        let rep = report(&rec);
        let maps = ok(tracekit().args(["rtrace", "decode"]).arg(&rec).output());
        assert!(
            String::from_utf8_lossy(&maps.stdout).contains(&format!("lib{lib}")),
            "{lib} is not mapped"
        );
        let mem = &rep["resources"][0];
        assert!(mem["allocations"].as_u64().unwrap() >= 17, "{lib}: {mem}");
        assert_eq!(mem["unmatched_frees"], 0, "{lib}: {mem}");
        assert!(mem["temporary"].as_u64().unwrap() >= 11, "{lib}: {mem}");
        assert_eq!(leaks_from_main(&rep), (5, 5010), "{lib}: {rep:#}");
    }
}

/// mimalloc's own API: every entry point recorded under its name, once
/// (mimalloc calls its exported functions through the PLT: `mi_realloc`
/// frees through `mi_free`, ...; those inner calls are the allocator's,
/// not the program's), and `malloc`/`free` (mimalloc's override) mix.
const MIMALLOC: &str = r#"
#include <mimalloc.h>
#include <stdlib.h>
#include <string.h>
void *keep[20];
int main(void) {
    for (int i = 0; i < 10; i++) { void *p = mi_malloc(100 + i); memset(p, 1, 10); mi_free(p); }
    for (int i = 0; i < 5; i++) keep[i] = mi_malloc(1000 + i);
    void *c = mi_calloc(3, 8); c = mi_realloc(c, 4000); mi_free(c);
    char *s = mi_strdup("hello"); mi_free(s);
    char *s2 = mi_strndup("hello world", 5); mi_free_size(s2, 6);
    void *z = mi_zalloc(77); free(z);
    void *m = malloc(55); mi_free(m);
    void *n = mi_mallocn(4, 50); n = mi_reallocn(n, 8, 50); n = mi_reallocf(n, 900); mi_free(n);
    keep[6] = mi_malloc_aligned(100, 64);
    keep[7] = mi_zalloc_aligned(200, 128);
    keep[8] = mi_calloc_aligned(3, 10, 256);
    return 0;
}
"#;

#[test]
fn mimalloc_api_is_recorded_once() {
    if !have("/usr/include/mimalloc.h", "libmimalloc-dev") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "mi", MIMALLOC, &["-lmimalloc"]);
    let (trace, _) = record_text(tmp.path(), &exe, &[]);
    let n = calls(&trace);
    let count = |k: &str| n.get(k).copied().unwrap_or(0);
    assert_eq!(count("mi_free(P)"), 14, "{n:?}");
    for k in [
        "mi_calloc(24)",
        "mi_realloc(P)",
        "mi_realloc(4000)",
        "mi_strdup(6)",
        "mi_strndup(6)",
        "mi_free_size(P)",
        "mi_zalloc(77)",
        "free(P)",
        "malloc(55)",
        "mi_mallocn(200)",
        "mi_reallocn(P)",
        "mi_reallocn(400)",
        "mi_reallocf(P)",
        "mi_reallocf(900)",
        "mi_malloc_aligned(100)",
        "mi_zalloc_aligned(200)",
        "mi_calloc_aligned(30)",
    ] {
        assert_eq!(count(k), 1, "{k}: {n:?}");
    }
    assert_eq!(
        n.keys().filter(|k| k.starts_with("mi_malloc(")).count(),
        15,
        "{n:?}"
    );
    // Stacks go through the program: main calls each.
    assert!(trace.contains("mi_strdup(6) = 0x"), "{trace}");
    let (rep, _) = record_report(tmp.path(), &exe, &[]);
    let mem = &rep["resources"][0];
    assert_eq!(mem["unmatched_frees"], 0, "{mem}");
    assert_eq!(mem["leaked_blocks"], 8, "{mem}");
    assert_eq!(leaks_from_main(&rep), (8, 5340), "{rep:#}");
}

/// A `malloc` layer over mimalloc's API, as an allocator built without
/// symbol aliases provides it: its `malloc` calls `mi_malloc` through the
/// PLT, that is the recorder's `mi_malloc` hook.
const WRAP: &str = r#"
#include <mimalloc.h>
#include <stddef.h>
void *malloc(size_t n) { return mi_malloc(n); }
void free(void *p) { mi_free(p); }
void *calloc(size_t a, size_t b) { return mi_calloc(a, b); }
void *realloc(void *p, size_t n) { return mi_realloc(p, n); }
size_t malloc_usable_size(void *p) { return mi_usable_size(p); }
void *memalign(size_t a, size_t n) { return mi_malloc_aligned(n, a); }
void *aligned_alloc(size_t a, size_t n) { return mi_malloc_aligned(n, a); }
int posix_memalign(void **out, size_t a, size_t n) { return mi_posix_memalign(out, a, n); }
"#;

const WRAPPED: &str = r#"
#include <stdlib.h>
void *keep[4];
int main(void) {
    for (int i = 0; i < 10; i++) { void *p = malloc(100 + i); free(p); }
    keep[0] = malloc(1000);
    void *c = calloc(3, 8); c = realloc(c, 4000); free(c);
    return 0;
}
"#;

/// Calls the program makes to `malloc` are recorded once, as `malloc`:
/// the allocator runs with the recorder's guard set, so the `mi_` calls
/// inside it pass through (they used to be recorded as well: every block
/// twice, and its free twice).
#[test]
fn an_allocator_layer_is_recorded_once() {
    if !have("/usr/include/mimalloc.h", "libmimalloc-dev") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("libwrap.so");
    let src = tmp.path().join("wrap.c");
    std::fs::write(&src, WRAP).unwrap();
    ok(Command::new("cc")
        .args(["-O1", "-fPIC", "-shared", "-o"])
        .arg(&lib)
        .arg(&src)
        .arg("-lmimalloc")
        .output());
    let exe = build(
        tmp.path(),
        "wrapped",
        WRAPPED,
        &[
            &format!("-L{}", tmp.path().display()),
            "-lwrap",
            &format!("-Wl,-rpath,{}", tmp.path().display()),
        ],
    );
    let (trace, _) = record_text(tmp.path(), &exe, &[]);
    let n = calls(&trace);
    assert!(n.keys().all(|k| !k.starts_with("mi_")), "{n:?}");
    assert_eq!(n.get("free(P)"), Some(&11), "{n:?}");
    assert_eq!(
        n.keys().filter(|k| k.starts_with("malloc(")).count(),
        11,
        "{n:?}"
    );
    assert_eq!(n.get("realloc(P)"), Some(&1), "{n:?}");
    let (rep, _) = record_report(tmp.path(), &exe, &[]);
    assert_eq!(rep["resources"][0]["unmatched_frees"], 0, "{rep:#}");
    assert_eq!(leaks_from_main(&rep), (1, 1000), "{rep:#}");
}

/// Declarations of jemalloc's API with the `_rjem_` prefix.
const RJEM: &str = r#"
#include <stddef.h>
#include <string.h>
void *_rjem_malloc(size_t); void *_rjem_calloc(size_t, size_t);
void *_rjem_realloc(void *, size_t); void _rjem_free(void *);
void *_rjem_mallocx(size_t, int); void *_rjem_rallocx(void *, size_t, int);
void _rjem_sdallocx(void *, size_t, int); void _rjem_dallocx(void *, int);
int _rjem_posix_memalign(void **, size_t, size_t);
void *_rjem_aligned_alloc(size_t, size_t);
void *keep[10];
int main(void) {
    for (int i = 0; i < 10; i++) { void *p = _rjem_malloc(100 + i); memset(p, 1, 10); _rjem_free(p); }
    for (int i = 0; i < 5; i++) keep[i] = _rjem_malloc(1000 + i);
    void *c = _rjem_calloc(3, 8); c = _rjem_realloc(c, 4000); _rjem_free(c);
    void *x = _rjem_mallocx(64, 6); x = _rjem_rallocx(x, 640, 6); _rjem_sdallocx(x, 640, 6);
    void *y = _rjem_mallocx(48, 0); _rjem_dallocx(y, 0);
    void *a = 0; _rjem_posix_memalign(&a, 64, 200); keep[6] = a;
    keep[7] = _rjem_aligned_alloc(128, 256);
    return 0;
}
"#;

/// Debian's libjemalloc_pic.a with its public symbols renamed `_rjem_*`
/// (what tikv-jemallocator builds), without its C++ operators: the
/// archive, in `dir`.
fn rjem_archive(dir: &Path) -> PathBuf {
    let public = [
        "aligned_alloc",
        "calloc",
        "dallocx",
        "free",
        "mallctl",
        "mallctlbymib",
        "mallctlnametomib",
        "malloc",
        "malloc_stats_print",
        "malloc_usable_size",
        "mallocx",
        "memalign",
        "nallocx",
        "posix_memalign",
        "rallocx",
        "realloc",
        "sallocx",
        "sdallocx",
        "valloc",
        "xallocx",
    ];
    let syms = dir.join("rjem.syms");
    let text: String = public.iter().map(|s| format!("{s} _rjem_{s}\n")).collect();
    std::fs::write(&syms, text).unwrap();
    let a = dir.join("librjem.a");
    ok(Command::new("objcopy")
        .arg(format!("--redefine-syms={}", syms.display()))
        .arg(format!("{LIBDIR}/libjemalloc_pic.a"))
        .arg(&a)
        .output());
    ok(Command::new("ar")
        .arg("d")
        .arg(&a)
        .arg("jemalloc_cpp.pic.o")
        .output());
    a
}

/// jemalloc with the `_rjem_` prefix as a shared library: every entry
/// point recorded, once.
#[test]
fn prefixed_jemalloc_is_recorded() {
    if !have(&format!("{LIBDIR}/libjemalloc_pic.a"), "libjemalloc-dev") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = rjem_archive(tmp.path());
    let so = tmp.path().join("librjem.so");
    ok(Command::new("cc")
        .arg("-shared")
        .arg("-o")
        .arg(&so)
        .arg("-Wl,--whole-archive")
        .arg(&a)
        .args(["-Wl,--no-whole-archive", "-lpthread", "-lm", "-ldl"])
        .output());
    let exe = build(
        tmp.path(),
        "rj",
        RJEM,
        &[
            &format!("-L{}", tmp.path().display()),
            "-lrjem",
            &format!("-Wl,-rpath,{}", tmp.path().display()),
        ],
    );
    let (trace, _) = record_text(tmp.path(), &exe, &[]);
    let n = calls(&trace);
    let count = |k: &str| n.get(k).copied().unwrap_or(0);
    assert_eq!(count("_rjem_free(P)"), 11, "{n:?}");
    assert_eq!(
        n.keys().filter(|k| k.starts_with("_rjem_malloc(")).count(),
        15,
        "{n:?}"
    );
    for k in [
        "_rjem_calloc(24)",
        "_rjem_realloc(P)",
        "_rjem_realloc(4000)",
        "_rjem_mallocx(64)",
        "_rjem_rallocx(P)",
        "_rjem_rallocx(640)",
        "_rjem_sdallocx(P)",
        "_rjem_mallocx(48)",
        "_rjem_dallocx(P)",
        "_rjem_posix_memalign(200)",
        "_rjem_aligned_alloc(256)",
    ] {
        assert_eq!(count(k), 1, "{k}: {n:?}");
    }
    let (rep, _) = record_report(tmp.path(), &exe, &[]);
    assert_eq!(rep["resources"][0]["unmatched_frees"], 0, "{rep:#}");
    assert_eq!(leaks_from_main(&rep), (7, 5466), "{rep:#}");
}

/// An allocator linked into the executable itself cannot be seen: the
/// recorder says so (stderr, even with -q; the trace; the report) rather
/// than showing an empty recording silently.
#[test]
fn statically_linked_allocators_are_said() {
    if !have(&format!("{LIBDIR}/libjemalloc_pic.a"), "libjemalloc-dev") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // jemalloc replacing malloc, linked statically.
    let exe = build(
        tmp.path(),
        "static_je",
        PLAIN,
        &[
            &format!("{LIBDIR}/libjemalloc_pic.a"),
            "-lpthread",
            "-lm",
            "-ldl",
            "-lstdc++",
        ],
    );
    let (rep, err) = record_report(tmp.path(), &exe, &[]);
    assert!(
        err.contains(
            "defines malloc, calloc, realloc, free itself (a statically linked allocator)"
        ),
        "{err}"
    );
    let notes = rep["notes"].to_string();
    assert!(
        notes.contains("the executable defines allocator functions itself"),
        "{notes}"
    );
    // Indeed nothing of the program's own is in it.
    assert_eq!(leaks_from_main(&rep), (0, 0), "{rep:#}");

    // The `_rjem_` flavour (tikv-jemallocator's), linked statically.
    let a = rjem_archive(tmp.path());
    let exe = build(
        tmp.path(),
        "static_rj",
        RJEM,
        &[a.to_str().unwrap(), "-lpthread", "-lm", "-ldl"],
    );
    let out = ok(tracekit()
        .args(["-q", "record", "mem", "--format", "text", "-o"])
        .arg(tmp.path().join("static_rj.rec"))
        .arg("--")
        .arg(&exe)
        .output());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("defines _rjem_malloc, _rjem_mallocx itself"),
        "{err}"
    );
    let text = ok(tracekit()
        .arg("report")
        .arg(tmp.path().join("static_rj.rec"))
        .output());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("warning: the executable defines allocator functions itself"),
        "{text}"
    );

    // A program using the C library's malloc is not said to.
    let exe = build(tmp.path(), "plain", PLAIN, &[]);
    let (rep, err) = record_report(tmp.path(), &exe, &[]);
    assert!(!err.contains("statically linked allocator"), "{err}");
    assert!(!rep["notes"].to_string().contains("allocator"), "{rep:#}");
    assert_eq!(leaks_from_main(&rep), (5, 5010), "{rep:#}");
}

/// The program turns recording off and on itself with `raise` (the
/// signal is handled before `raise` returns): `a` allocated while
/// recording and freed while paused, `b` allocated while paused and freed
/// while recording, `c` allocated while paused and never freed, `d`
/// allocated while recording and never freed.
const TOGGLE: &str = r#"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
void *volatile keep[4];
int main(void) {
    void *a = malloc(111);
    raise(SIGUSR2);
    void *b = malloc(222);
    keep[0] = malloc(333);
    free(a);
    raise(SIGUSR2);
    free(b);
    keep[1] = malloc(444);
    printf("still here\n");
    return 0;
}
"#;

#[test]
fn a_signal_turns_recording_off_and_on() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "toggle", TOGGLE, &[]);
    // Not paused at the start: a and d recorded, a's free too (while
    // paused), b's free counted apart; c unseen.
    let (rep, _) = record_report(tmp.path(), &exe, &["--toggle-signal", "SIGUSR2"]);
    let mem = &rep["resources"][0];
    assert_eq!(mem["paused_frees"], 1, "{mem}");
    assert_eq!(mem["unmatched_frees"], 0, "{mem}");
    assert_eq!(leaks_from_main(&rep), (1, 444), "{rep:#}");
    assert!(
        rep["notes"]
            .to_string()
            .contains("recording turned on and off by signal 12:"),
        "{rep:#}"
    );
    let sizes: Vec<u64> = rep["top_sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap())
        .collect();
    assert!(!sizes.contains(&222) && !sizes.contains(&333), "{sizes:?}");

    // Paused at the start: b and c recorded (c leaked), a's free counted
    // apart, d unseen.
    let out = tracekit()
        .args([
            "-q",
            "record",
            "mem",
            "--toggle-signal",
            "USR2",
            "--paused",
            "-o",
        ])
        .arg(tmp.path().join("p.tkmem"))
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"still here\n");
    let rep = report(&tmp.path().join("p.tkmem"));
    let mem = &rep["resources"][0];
    assert_eq!(mem["paused_frees"], 1, "{mem}");
    assert_eq!(mem["unmatched_frees"], 0, "{mem}");
    assert_eq!(leaks_from_main(&rep), (1, 333), "{rep:#}");
    assert!(
        rep["notes"]
            .to_string()
            .contains("signal 12, started paused"),
        "{rep:#}"
    );
    let text = ok(tracekit()
        .arg("report")
        .arg(tmp.path().join("p.tkmem"))
        .output());
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("1 of blocks allocated while paused"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    // Without the option the signal is the program's (SIGUSR2 kills it).
    let out = tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(tmp.path().join("n.tkmem"))
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128 + 12));
}

/// A signal that already has a disposition when the process starts (here
/// ignored, inherited through exec) is left alone: the program behaves
/// as without the recorder, everything is recorded, and the trace says
/// the signal did not toggle.
#[test]
fn a_signal_in_use_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "toggle", TOGGLE, &[]);
    let rec = tmp.path().join("ign.tkmem");
    let out = ok(tracekit()
        .args(["-q", "record", "mem", "--toggle-signal", "12", "-o"])
        .arg(&rec)
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg(format!("trap '' USR2; exec {}", exe.display()))
        .output());
    assert_eq!(out.stdout, b"still here\n");
    // The shell's image, then the program's.
    let v: Value = serde_json::from_slice(
        &ok(tracekit()
            .args(["rtrace", "report", "--json"])
            .arg(&rec)
            .output())
        .stdout,
    )
    .unwrap();
    let rep = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["report"])
        .find(|r| r["header"].to_string().contains("toggle"))
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(
        rep["notes"]
            .to_string()
            .contains("signal 12 already had a handler (or was ignored)"),
        "{rep:#}"
    );
    assert_eq!(leaks_from_main(rep), (2, 777), "{rep:#}");
    assert_eq!(rep["resources"][0]["paused_frees"], 0, "{rep:#}");
}

#[test]
fn toggle_options_are_checked() {
    for args in [
        &["--paused"][..],
        &["--toggle-signal", "SIGKILL"],
        &["--toggle-signal", "NOPE"],
    ] {
        let out = tracekit()
            .args(["record", "mem"])
            .args(args)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// Anonymous mappings: three made, one unmapped, one moved by `mremap`
/// (2 to 16 pages); a file mapping, and malloc's own large block (made
/// inside the C library), are not pages.
const PAGES: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void) {
    size_t pg = 4096;
    char *a = mmap(0, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *b = mmap(0, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *c = mmap(0, 8 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(a, 1, pg);
    munmap(a, 4 * pg);
    b = mremap(b, 2 * pg, 16 * pg, MREMAP_MAYMOVE);
    int fd = open("/proc/self/exe", O_RDONLY);
    char *f = mmap(0, pg, PROT_READ, MAP_PRIVATE, fd, 0);
    munmap(f, pg);
    close(fd);
    void *big = malloc(1 << 20);
    free(big);
    (void)b; (void)c;
    return 0;
}
"#;

#[test]
fn anonymous_mappings_are_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "pages", PAGES, &[]);
    let (rep, _) = record_report(tmp.path(), &exe, &["--modules", "memory,pages"]);
    let res = rep["resources"].as_array().unwrap();
    let pages = res
        .iter()
        .find(|r| r["name"] == "pages")
        .unwrap_or_else(|| panic!("{rep:#}"));
    assert_eq!(pages["allocations"], 4, "{pages}");
    assert_eq!(pages["allocated_bytes"], 4096 * (4 + 2 + 8 + 16), "{pages}");
    assert_eq!(pages["frees"], 2, "{pages}");
    assert_eq!(pages["unmatched_frees"], 0, "{pages}");
    assert_eq!(pages["leaked_blocks"], 2, "{pages}");
    assert_eq!(pages["leaked_bytes"], 4096 * (8 + 16), "{pages}");
    // malloc's 1 MiB block is the heap's, not pages.
    let mem = res.iter().find(|r| r["name"] == "memory").unwrap();
    assert_eq!(mem["largest"], 1 << 20, "{mem}");
    // Whole stacks through the spilling trampoline: main made them.
    let pages_leaks: Vec<&Value> = rep["leaks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["resource"] == "pages")
        .collect();
    assert_eq!(pages_leaks.len(), 2, "{rep:#}");
    for l in pages_leaks {
        assert_eq!(l["frames"][0]["function"], "main", "{l}");
    }

    // Not asked for: no pages.
    let (rep, _) = record_report(tmp.path(), &exe, &[]);
    let names: Vec<&str> = rep["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["memory"]);
}

/// Started paused, turned on, then forks: the child records from its
/// start (its parent's state) and its trace does not say it started
/// paused; a child forked while paused records nothing of its own.
const FORKS: &str = r#"
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
void *volatile keep[4];
static void child(size_t n) {
    if (fork() == 0) { keep[0] = malloc(n); _exit(0); }
    wait(0);
}
int main(void) {
    child(555);            /* paused: not recorded */
    raise(SIGUSR2);
    child(666);            /* recorded */
    return 0;
}
"#;

#[test]
fn a_fork_child_starts_in_its_parents_state() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "forks", FORKS, &[]);
    let rec = tmp.path().join("forks.tkmem");
    ok(tracekit()
        .args([
            "-q",
            "record",
            "mem",
            "--toggle-signal",
            "SIGUSR2",
            "--paused",
            "-o",
        ])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .output());
    let v: Value = serde_json::from_slice(
        &ok(tracekit()
            .args(["rtrace", "report", "--json"])
            .arg(&rec)
            .output())
        .stdout,
    )
    .unwrap();
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 3, "{v:#}");
    let notes: Vec<String> = procs
        .iter()
        .map(|p| p["report"]["notes"].to_string())
        .collect();
    // The parent and the first child started paused, the second did not.
    assert!(notes[0].contains("signal 12, started paused"), "{notes:?}");
    let leaked: Vec<(u64, u64)> = procs[1..]
        .iter()
        .map(|p| {
            let r = &p["report"]["resources"][0];
            (
                r["leaked_blocks"].as_u64().unwrap(),
                r["leaked_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let first = leaked
        .iter()
        .position(|l| *l == (0, 0))
        .unwrap_or_else(|| panic!("{leaked:?}"));
    let second = 1 - first;
    assert_eq!(leaked[second], (1, 666), "{leaked:?}");
    assert!(notes[1 + first].contains("started paused"), "{notes:?}");
    assert!(
        notes[1 + second].contains("signal 12:") && !notes[1 + second].contains("started paused"),
        "{notes:?}"
    );
}
