//! `tracekit report` and `tracekit convert --to heaptrack` on memory traces
//! that `tracekit record mem` makes of small programs compiled here: with
//! and without `-g`, without frame pointers, stripped with a separate debug
//! file, C++, a shared library. Every frame gets a name; heaptrack_print
//! (Debian's `heaptrack` package) reads the converted file and finds the
//! same calls, peak and leaks.
//!
//! Needs `cc`, `c++`, `objcopy`, `strip` (gcc, g++, binutils) and, for the
//! heaptrack test, `heaptrack_print` (package heaptrack); libc's frames are
//! named from its separate debug file when `libc6-dbg` is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

const LIB: &str = r#"
#include <stdlib.h>
void *shared_alloc(size_t n) { return malloc(n); }
"#;

/// Known costs: `peak_a` 1000 and `peak_b` 2000 bytes are live at the
/// peak, `peak_c` (500) is allocated after `peak_b`'s block is gone;
/// `make` leaks every fourth of its `N` blocks; 30 temporaries.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
void *shared_alloc(size_t n);
static void *keep[4096];
__attribute__((noinline)) void *make(size_t n) { return malloc(n); }
static inline __attribute__((always_inline)) void *inlined_alloc(size_t n) { return make(n); }
__attribute__((noinline)) void work(int i) {
    void *p = inlined_alloc(100 + i);
    if (i % 4 == 0) keep[i] = p; else free(p);
}
__attribute__((noinline)) void *peak_a(void) { return malloc(1000); }
__attribute__((noinline)) void *peak_b(void) { return malloc(2000); }
__attribute__((noinline)) void *peak_c(void) { return malloc(500); }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 40;
    for (int i = 0; i < n; i++) work(i);
    for (int i = 0; i < n; i += 4) free(keep[i]), keep[i] = 0;
    void *a = peak_a(), *b = peak_b();
    free(b);
    void *c = peak_c();
    free(a); free(c);
    for (int i = 0; i < n; i += 4) keep[i] = make(100 + i);
    char *s = strdup("leaked by strdup");
    void *l = shared_alloc(77);
    (void)s; (void)l;
    return 0;
}
"#;

const CXX: &str = r#"
#include <vector>
#include <cstddef>
#include <cstdlib>
namespace ns {
template <typename T> struct Pool {
    std::vector<T *> blocks;
    __attribute__((noinline)) void grow(std::size_t n) {
        blocks.push_back(static_cast<T *>(std::malloc(n * sizeof(T))));
    }
    __attribute__((noinline)) void renew(std::size_t n) { blocks.push_back(new T[n]); }
};
}
int main() {
    ns::Pool<int> p;
    for (int i = 1; i <= 10; i++) p.grow(i * 10);
    for (int i = 1; i <= 3; i++) p.renew(i);
    p.blocks.clear(); // leaks every block
    return 0;
}
"#;

/// Runs `cmd`, which must succeed; its standard output.
fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (install gcc, g++, binutils, heaptrack)"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Compiles `src` (C, or C++ when `cxx`) into `dir/name` with `flags`,
/// linked with `dir/libshared.so` for C.
fn build(dir: &Path, name: &str, src: &str, cxx: bool, flags: &[&str]) -> PathBuf {
    let ext = if cxx { "cc" } else { "c" };
    let source = dir.join(format!("{name}.{ext}"));
    std::fs::write(&source, src).unwrap();
    let exe = dir.join(name);
    let mut cmd = Command::new(if cxx { "c++" } else { "cc" });
    cmd.args(flags).arg("-o").arg(&exe).arg(&source);
    if !cxx {
        let lib = dir.join("libshared.so");
        if !lib.exists() {
            let lsrc = dir.join("shared.c");
            std::fs::write(&lsrc, LIB).unwrap();
            run(Command::new("cc")
                .args([
                    "-g",
                    "-O1",
                    "-fPIC",
                    "-shared",
                    "-fno-omit-frame-pointer",
                    "-o",
                ])
                .arg(&lib)
                .arg(&lsrc));
        }
        cmd.arg(&lib).arg(format!("-Wl,-rpath,{}", dir.display()));
    }
    run(&mut cmd);
    exe
}

/// The trace of the command's own process in the recording `dir`.
fn command_trace(dir: &Path) -> PathBuf {
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("recording.json")).unwrap()).unwrap();
    dir.join(m["images"][0]["file"].as_str().unwrap())
}

/// Records `exe args` as sp-rtrace text (`--format text`: a directory
/// of text traces; the default `.tkmem` file is read by the same code,
/// `cli_rtrace_record.rs`); returns the trace of its (only) process.
fn record(exe: &Path, args: &[&str]) -> PathBuf {
    let dir = exe.with_extension("mem");
    // A directory of text traces (the default is one .tkmem file).
    run(tracekit()
        .args(["record", "mem", "--format", "text", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(exe)
        .args(args));
    command_trace(&dir)
}

fn report(trace: &Path, extra: &[&str]) -> Value {
    let stdout = run(tracekit()
        .args(["rtrace", "report", "--json", "--top", "1000"])
        .args(extra)
        .arg(trace));
    serde_json::from_slice(&stdout).unwrap()
}

/// Every frame label of every backtrace in the report's views.
fn labels(rep: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for view in rep["views"]["memory"].as_object().unwrap().values() {
        for loc in view.as_array().unwrap() {
            out.push(loc["function"].as_str().unwrap().to_string());
            for bt in loc["backtraces"].as_array().unwrap() {
                for f in bt["frames"].as_array().unwrap() {
                    out.push(f["function"].as_str().unwrap().to_string());
                }
            }
        }
    }
    out
}

fn unnamed(labels: &[String]) -> Vec<&String> {
    labels
        .iter()
        .filter(|l| l.starts_with("0x") || l.contains("@0x") || l.contains("+0x") || l.is_empty())
        .collect()
}

/// The location (place that called the allocation function) named `f`.
fn location<'a>(rep: &'a Value, view: &str, f: &str) -> Option<&'a Value> {
    rep["views"]["memory"][view]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["function"] == f)
}

fn libc_debug_installed() -> bool {
    // The build id of the libc that programs here load.
    let out = Command::new("sh")
        .args([
            "-c",
            "ldd /bin/sh | sed -n 's/.*libc.so.6 => \\([^ ]*\\).*/\\1/p'",
        ])
        .output()
        .unwrap();
    let libc = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let notes = Command::new("readelf").args(["-n", &libc]).output();
    let Ok(notes) = notes else { return false };
    let text = String::from_utf8_lossy(&notes.stdout).to_string();
    let Some(id) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .map(str::to_string)
    else {
        return false;
    };
    Path::new(&format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ))
    .exists()
}

#[test]
fn every_frame_is_named_with_debug_info() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "leaky_g",
        PROGRAM,
        false,
        &["-g", "-O1", "-fno-omit-frame-pointer"],
    );
    let rep = report(&record(&exe, &[]), &[]);
    let all = labels(&rep);
    if libc_debug_installed() {
        assert_eq!(unnamed(&all), Vec::<&String>::new(), "{all:#?}");
        // libc's static functions come from libc6-dbg's debug file.
        assert!(
            all.iter().any(|l| l == "__libc_start_call_main"),
            "{all:#?}"
        );
    }
    // DWARF: file and line, and the inlined function before its caller.
    let make = location(&rep, "allocations", "make").expect("make");
    assert!(
        make["source"].as_str().unwrap().ends_with("leaky_g.c:6"),
        "{make}"
    );
    let frames = &make["backtraces"][0]["frames"];
    let names: Vec<&str> = frames
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert_eq!(
        &names[..4],
        ["make", "inlined_alloc", "work", "main"],
        "{frames}"
    );
    assert_eq!(frames[1]["inlined"], true);
    assert_eq!(frames[0]["address"], frames[0]["address"]);
    assert_eq!(frames[1]["address"], frames[2]["address"]);
    // Counts: 40 calls from `make` in the loop plus 10 re-made blocks.
    assert_eq!(make["cost"]["allocations"], 50);
    assert_eq!(make["cost"]["temporary"], 30);
    let leaked: i64 = (0..40).step_by(4).map(|i| 100 + i).sum();
    assert_eq!(make["cost"]["leaked"], leaked);
    // Peak consumers at the time of the peak: a and b were live, c was not.
    assert_eq!(
        location(&rep, "peak", "peak_a").unwrap()["cost"]["peak"],
        1000
    );
    assert_eq!(
        location(&rep, "peak", "peak_b").unwrap()["cost"]["peak"],
        2000
    );
    assert!(location(&rep, "peak", "peak_c").is_none());
    assert_eq!(
        location(&rep, "largest", "peak_b").unwrap()["cost"]["largest"],
        2000
    );
    // The shared library's function, and libc's strdup (.dynsym at least).
    assert!(
        location(&rep, "leaked", "shared_alloc").is_some(),
        "{all:#?}"
    );
    assert!(all.iter().any(|l| l.contains("strdup")), "{all:#?}");
}

#[test]
fn symbol_tables_name_frames_without_debug_info() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "leaky_nog",
        PROGRAM,
        false,
        &["-O1", "-fno-omit-frame-pointer"],
    );
    let trace = record(&exe, &[]);
    // No debug directory: libc's exported functions from .dynsym only.
    let empty = tmp.path().join("no-debug");
    std::fs::create_dir(&empty).unwrap();
    let rep = report(&trace, &["--debug-dir", empty.to_str().unwrap()]);
    let make = location(&rep, "allocations", "make").expect("make from .symtab");
    assert_eq!(make["source"], Value::Null);
    assert!(location(&rep, "leaked", "shared_alloc").is_some());
    let all = labels(&rep);
    assert!(all.iter().any(|l| l.contains("strdup")), "{all:#?}");
    // What stays unnamed is libc's static code (not in .dynsym), shown by
    // its offset in libc.
    for l in unnamed(&all) {
        assert!(l.starts_with("libc.so.6+0x"), "{l} in {all:#?}");
    }
    // Without frame pointers the recorder's frame-pointer walk stops
    // early; whatever frames it got are named.
    let exe = build(
        tmp.path(),
        "leaky_nofp",
        PROGRAM,
        false,
        &["-O2", "-fomit-frame-pointer"],
    );
    let rep = report(&record(&exe, &[]), &[]);
    let all = labels(&rep);
    if libc_debug_installed() {
        assert_eq!(unnamed(&all), Vec::<&String>::new(), "{all:#?}");
    }
    assert!(all.iter().any(|l| l == "peak_a" || l == "main"), "{all:#?}");
}

#[test]
fn stripped_programs_are_named_from_separate_debug_files() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "leaky_s",
        PROGRAM,
        false,
        &["-g", "-O1", "-fno-omit-frame-pointer", "-Wl,--build-id"],
    );
    let debug = tmp.path().join("leaky_s.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&exe)
        .arg(&debug));
    run(Command::new("strip").arg("--strip-all").arg(&exe));
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", debug.display()))
        .arg(&exe));
    let trace = record(&exe, &[]);
    // Nothing but the stripped file: its own code has no names.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let moved = elsewhere.join("leaky_s.debug");
    std::fs::rename(&debug, &moved).unwrap();
    let rep = report(&trace, &["--debug-dir", elsewhere.to_str().unwrap()]);
    assert!(location(&rep, "allocations", "make").is_none());
    assert!(
        labels(&rep).iter().any(|l| l.starts_with("leaky_s+0x")),
        "{:#?}",
        labels(&rep)
    );

    // By build id under a debug directory.
    let out = Command::new("readelf")
        .arg("-n")
        .arg(&exe)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let id = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("build id")
        .to_string();
    let by_id = tmp.path().join("dbg/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&by_id).unwrap();
    std::fs::copy(&moved, by_id.join(format!("{}.debug", &id[2..]))).unwrap();
    let dbg = tmp.path().join("dbg");
    let rep = report(&trace, &["--debug-dir", dbg.to_str().unwrap()]);
    let make = location(&rep, "allocations", "make").expect("make from the build-id file");
    assert!(make["source"].as_str().unwrap().ends_with("leaky_s.c:6"));

    // By .gnu_debuglink, in the program's .debug directory (checked by
    // build id; the build-id tree is not searched here).
    std::fs::remove_dir_all(&dbg).unwrap();
    let dot_debug = tmp.path().join(".debug");
    std::fs::create_dir(&dot_debug).unwrap();
    std::fs::rename(&moved, dot_debug.join("leaky_s.debug")).unwrap();
    let rep = report(&trace, &["--debug-dir", elsewhere.to_str().unwrap()]);
    let make = location(&rep, "allocations", "make").expect("make from the debuglink file");
    assert!(make["source"].as_str().unwrap().ends_with("leaky_s.c:6"));
}

#[test]
fn cxx_names_are_demangled_and_operator_new_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "pool",
        CXX,
        true,
        &["-g", "-O1", "-fno-omit-frame-pointer"],
    );
    let rep = report(&record(&exe, &[]), &[]);
    let grow = location(&rep, "leaked", "ns::Pool<int>::grow(unsigned long)")
        .unwrap_or_else(|| panic!("{:#?}", labels(&rep)));
    assert_eq!(
        grow["cost"]["leaked"],
        (1..=10).map(|i| i * 10 * 4).sum::<i64>()
    );
    assert_eq!(grow["cost"]["leaked_blocks"], 10);
    let all = labels(&rep);
    assert!(all.iter().all(|l| !l.starts_with("_Z")), "{all:#?}");
    // `new int[n]`: the frame inside operator new is named and kept in the
    // backtrace, but the place is its caller (heaptrack's rule).
    assert!(
        all.iter().any(|l| l.starts_with("operator new")),
        "{all:#?}"
    );
    let leaks = rep["views"]["memory"]["leaked"].as_array().unwrap();
    assert!(leaks
        .iter()
        .all(|l| !l["function"].as_str().unwrap().starts_with("operator new")));
    let renewed: i64 = leaks
        .iter()
        .flat_map(|l| l["backtraces"].as_array().unwrap())
        .filter(|b| {
            b["frames"][0]["function"]
                .as_str()
                .unwrap()
                .starts_with("operator new")
        })
        .map(|b| b["cost"]["leaked_blocks"].as_i64().unwrap())
        .sum();
    assert_eq!(renewed, 3, "{leaks:#?}");
}

#[test]
fn diff_shows_what_grew() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "grow",
        PROGRAM,
        false,
        &["-g", "-O1", "-fno-omit-frame-pointer"],
    );
    let a = record(&exe, &["40"]);
    let b_path = tmp.path().join("grow-b.rtrace");
    std::fs::rename(&a, &b_path).unwrap();
    let a = record(&exe, &["80"]);
    let stdout = run(tracekit()
        .args(["report", "--json", "--diff"])
        .arg(&a)
        .arg(&b_path));
    let d: Value = serde_json::from_slice(&stdout).unwrap();
    // B (40) minus A (80): `make` leaked less and was called 50 times less
    // (n in the first loop, n/4 in the last).
    let make = d["views"]["memory"]["leaked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["function"] == "make")
        .unwrap_or_else(|| panic!("{d:#}"));
    let leaked = |n: i64| -> i64 { (0..n).step_by(4).map(|i| 100 + i).sum() };
    assert_eq!(make["cost"]["leaked"], leaked(40) - leaked(80));
    assert_eq!(make["cost"]["allocations"], -50);
    assert_eq!(d["totals"][0]["allocations"], -50);
    // Unchanged places are not listed.
    assert!(d["views"]["memory"]["leaked"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["function"] != "shared_alloc"));
    // Text form.
    let out = tracekit()
        .args(["rtrace", "report", "--diff"])
        .arg(&a)
        .arg(&b_path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("allocations -50"), "{text}");
}

/// Sums the costs of heaptrack_print's flame graph stack file.
fn heaptrack_sum(file: &Path, cost: &str, dir: &Path) -> i64 {
    let stacks = dir.join(format!("stacks.{cost}"));
    let out = Command::new("heaptrack_print")
        .arg("-f")
        .arg(file)
        .args([
            "--disable-builtin-suppressions",
            "-p",
            "0",
            "-a",
            "0",
            "-T",
            "0",
        ])
        .arg("-F")
        .arg(&stacks)
        .args(["--flamegraph-cost-type", cost])
        .output()
        .expect("heaptrack_print (Debian package heaptrack) is needed for this test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&stacks)
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
        .sum()
}

#[test]
fn heaptrack_print_reads_the_converted_file() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "ht",
        PROGRAM,
        false,
        &["-g", "-O1", "-fno-omit-frame-pointer"],
    );
    let trace = record(&exe, &[]);
    let ours = report(&trace, &[]);
    let mem = &ours["resources"][0];
    assert_eq!(mem["name"], "memory");
    let file = tmp.path().join("ht.heaptrack.zst");
    run(tracekit()
        .arg("convert")
        .arg(&trace)
        .args(["--to", "heaptrack", "-o"])
        .arg(&file));
    assert_eq!(
        &std::fs::read(&file).unwrap()[..4],
        b"\x28\xb5\x2f\xfd",
        "zstd"
    );

    let calls = heaptrack_sum(&file, "allocations", tmp.path());
    let leaked = heaptrack_sum(&file, "leaked", tmp.path());
    let peak = heaptrack_sum(&file, "peak", tmp.path());
    assert_eq!(calls, mem["allocations"].as_i64().unwrap());
    assert_eq!(leaked, mem["leaked_bytes"].as_i64().unwrap());
    assert_eq!(peak, mem["peak_bytes"].as_i64().unwrap());

    // Its own text: totals, and our function names in its leak list.
    let out = Command::new("heaptrack_print")
        .arg("-f")
        .arg(&file)
        .args(["--disable-builtin-suppressions", "-l", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("calls to allocation functions: {calls} (")),
        "{text}"
    );
    assert!(text.contains("\nmake\n  at "), "{text}");
    assert!(text.contains("shared_alloc"), "{text}");
    // heaptrack counts a free as temporary when it matches the previous
    // allocation's (size, backtrace) entry, not its pointer: never fewer
    // than ours.
    let temp: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("temporary memory allocations: "))
        .and_then(|l| l.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        temp >= mem["temporary"].as_i64().unwrap(),
        "{temp} vs {mem}"
    );
}

/// A Rust program (whose runtime calls `pthread_getattr_np` at thread
/// start, which allocates while holding the thread's lock) is recorded to
/// its end, with its own functions in the stacks. It used to deadlock:
/// the recorder asked glibc for the stack's bounds from inside that
/// allocation.
#[test]
fn rust_programs_are_recorded_without_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prog.rs");
    std::fs::write(
        &src,
        r#"
#[inline(never)]
fn fill(n: usize) -> Vec<Vec<u8>> { (0..n).map(|i| vec![i as u8; 64]).collect() }
fn main() {
    let v = fill(500);
    let t = std::thread::spawn(|| fill(200).len());
    println!("{} {}", v.len(), t.join().unwrap());
}
"#,
    )
    .unwrap();
    let exe = dir.path().join("prog");
    run(Command::new("rustc")
        .args(["-O", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&exe));
    let rec = exe.with_extension("mem");
    let mut child = tracekit()
        .args(["record", "mem", "--format", "text", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("record mem of a Rust program did not finish in 60 s (deadlock?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "record mem failed: {status}");
    let rep = report(&command_trace(&rec), &[]);
    let names = labels(&rep);
    assert!(
        names.iter().any(|l| l.contains("prog::fill")),
        "no frame names the program's function: {names:?}"
    );
}

/// `record mem --raw` keeps the binary recording (no text is made while
/// recording); `rtrace decode` turns it into the text trace, and `rtrace
/// report` / `rtrace postproc` read the raw file directly with the same
/// results as from that text.
#[test]
fn raw_recordings_decode_to_the_text_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "raw", PROGRAM, false, &["-g", "-O2"]);
    let rec = tmp.path().join("raw.mem");
    run(tracekit()
        .args(["record", "mem", "--raw", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .arg("40"));
    let raw = command_trace(&rec);
    assert_eq!(raw.extension().unwrap(), "tkrt");
    let bytes = std::fs::read(&raw).unwrap();
    assert!(bytes.starts_with(b"TKRT"), "not a raw recording");
    // Nothing else was left beside it (the scratch directory is gone).
    let left: Vec<_> = std::fs::read_dir(&rec)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tracekit"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let text = tmp.path().join("raw.rtrace");
    let out = tracekit()
        .args(["rtrace", "decode", "-o"])
        .arg(&text)
        .arg(&raw)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "decode: {err}");
    assert!(err.contains("the process exited with status 0"), "{err}");
    let t = std::fs::read_to_string(&text).unwrap();
    assert!(t.starts_with("version=2.0, arch="), "{t}");
    assert!(
        t.contains("## tracekit: the process exited with status 0"),
        "{t}"
    );

    let from_raw = report(&raw, &["--no-resolve"]);
    let from_text = report(&text, &["--no-resolve"]);
    for key in ["resources", "views", "leaks", "calls", "notes", "header"] {
        assert_eq!(from_raw[key], from_text[key], "{key}");
    }
    let leaked = from_text["resources"][0]["leaked_bytes"].as_i64().unwrap();
    let make: i64 = (0..40).step_by(4).map(|i| 100 + i).sum();
    assert!(leaked >= make + 77, "{from_text:#}");

    let postproc = |input: &Path| run(tracekit().args(["rtrace", "postproc", "-lc"]).arg(input));
    assert_eq!(postproc(&raw), postproc(&text));

    // The dialect commands take it too (`tracekit info`).
    let info = |input: &Path| -> Value {
        let stdout = run(tracekit().args(["info", "--json"]).arg(input));
        serde_json::from_slice(&stdout).unwrap()
    };
    let (a, b) = (info(&raw), info(&text));
    assert_eq!(a["details"]["allocations"], b["details"]["allocations"]);
    assert_eq!(a["details"]["frames"], b["details"]["frames"]);
    assert!(a["details"]["allocations"].as_u64().unwrap() >= 40);
}
