//! `tracekit record mem` on real programs (small C programs built here, a
//! shell): a recording of several processes is one `.tkmem` file (or with
//! `--format text` one directory) that `report`, `convert`, `info` and
//! `rtrace postproc` take whole; a child's exit
//! status is seen; `-q` is quiet; `free(NULL)` is not an unknown block;
//! stacks are whole by default; and the counts agree with heaptrack's on
//! the same program (when heaptrack is installed), but for what heaptrack
//! itself adds to the process (docs/memory-recording.md).
//!
//! Needs `cc` (gcc); the comparison needs `heaptrack` and
//! `heaptrack_print` (Debian package heaptrack; CI installs it).

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod common;
use common::ok;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn build(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    common::cc(dir, name, src, flags, &[])
}

fn json(out: std::io::Result<Output>) -> Value {
    serde_json::from_slice(&ok(out).stdout).unwrap()
}

trait FirstLine {
    /// The output, keeping only its first line (`info --json` writes one
    /// JSON object per line: the file's first).
    fn output_lines(&mut self) -> std::io::Result<Output>;
}

impl FirstLine for Command {
    fn output_lines(&mut self) -> std::io::Result<Output> {
        let mut out = self.output()?;
        if let Some(nl) = out.stdout.iter().position(|&b| b == b'\n') {
            out.stdout.truncate(nl);
        }
        Ok(out)
    }
}

/// A parent that starts itself again as a child (fork + exec), which
/// returns 7 from `main`; the parent checks that status and exits 0.
const FAMILY: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char *p = malloc(100);
    memset(p, 1, 100);
    if (argc > 1) return 7;           /* the child: returns from main */
    pid_t c = fork();
    if (c == 0) {
        execl(argv[0], argv[0], "child", (char *)0);
        _exit(127);
    }
    int st = 0;
    waitpid(c, &st, 0);
    free(p);
    return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : 1;
}
"#;

/// Everything `record mem` writes goes into one file, which the readers
/// take as a whole, and whose images are named `FILE#<pid>-<n>`; the
/// child's trace says the status its parent saw.
#[test]
fn a_recording_of_several_processes_is_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "family", FAMILY, &["-O1", "-g"]);
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = tracekit()
        .current_dir(&work)
        .args(["record", "mem", "--addresses", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let left: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Named after the command's pid, private.
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].starts_with("tracekit-mem.") && left[0].ends_with(".tkmem"),
        "{left:?}"
    );
    let file = work.join(&left[0]);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let info = json(
        tracekit()
            .args(["info", "--json"])
            .arg(&file)
            .output_lines(),
    );
    assert_eq!(info["dialect"], "rtrace", "{info}");
    assert_eq!(
        info["format"], "tracekit memory recording (.tkmem)",
        "{info}"
    );
    assert_eq!(info["details"]["images"], 3, "{info}");
    assert_eq!(info["details"]["finished"], true, "{info}");
    let root = info["details"]["pid"].as_i64().unwrap();
    assert_eq!(left[0], format!("tracekit-mem.{root}.tkmem"));
    let rep = json(
        tracekit()
            .args(["rtrace", "report", "--json", "--no-resolve"])
            .arg(&file)
            .output(),
    );
    let procs = rep["processes"].as_array().unwrap();
    // The command (pid P, its image 0), the fork child (pid C, image 0)
    // and the program it execs (pid C, image 1).
    assert_eq!(procs.len(), 3, "{rep:#}");
    assert_eq!(procs[0]["pid"], root);
    assert_eq!(procs[0]["end"], "the process exited with status 0");
    let child = procs
        .iter()
        .find(|i| i["pid"] != root && i["image"] == 1)
        .unwrap_or_else(|| panic!("{rep:#}"));
    assert_eq!(child["ppid"], root);
    assert_eq!(child["end"], "the process exited with status 7");
    // One image: FILE#<pid>-<n>.
    let name = format!("{}#{}-1", file.display(), child["pid"]);
    let trace = String::from_utf8(ok(tracekit().args(["rtrace", "decode", &name]).output()).stdout)
        .unwrap();
    assert!(trace.starts_with("version=2.0, arch="), "{trace}");
    assert!(
        trace.ends_with("## tracekit: the process exited with status 7\n"),
        "{trace}"
    );
    let one = json(
        tracekit()
            .args(["rtrace", "report", "--json", &name])
            .output(),
    );
    assert_eq!(one["resources"][0]["allocations"], 1, "{one}");
    let dir = file;
    // report: the processes, then each one's report.
    let text =
        String::from_utf8(ok(tracekit().args(["report"]).arg(&dir).output()).stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "tracekit memory recording {}: 3 process image(s)\n",
            dir.display()
        )),
        "{text}"
    );
    assert_eq!(text.matches("==== pid ").count(), 3, "{text}");
    assert!(text.contains("the process exited with status 7"), "{text}");
    let rep = json(
        tracekit()
            .args(["rtrace", "report", "--json", "--no-resolve"])
            .arg(&dir)
            .output(),
    );
    let procs = rep["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 3);
    // The command and the program the child execs allocate; the fork
    // child execs at once.
    let allocs: Vec<u64> = procs
        .iter()
        .map(|p| p["report"]["resources"][0]["allocations"].as_u64().unwrap())
        .collect();
    assert_eq!(allocs.iter().filter(|&&a| a == 1).count(), 2, "{allocs:?}");

    // postproc: each image's sp-rtrace output, to standard output in turn
    // or one file each in a directory.
    let pp = ok(tracekit()
        .args(["rtrace", "postproc", "-l"])
        .arg(&dir)
        .output())
    .stdout;
    let pp = String::from_utf8(pp).unwrap();
    assert_eq!(pp.matches("version=2.0, arch=").count(), 3, "{pp}");
    let conv = tmp.path().join("conv");
    ok(tracekit()
        .arg("convert")
        .arg(&dir)
        .args(["--to", "sp-rtrace", "-o"])
        .arg(&conv)
        .output());
    assert_eq!(std::fs::read_dir(&conv).unwrap().count(), 3);
    // A timeline with every process (they share the recorder's clock).
    let chrome = ok(tracekit()
        .arg("convert")
        .arg(&dir)
        .args(["--to", "chrome"])
        .output())
    .stdout;
    let v: Value = serde_json::from_slice(&chrome).unwrap();
    let events = v
        .as_array()
        .or_else(|| v["traceEvents"].as_array())
        .unwrap();
    let mut pids: Vec<i64> = events.iter().filter_map(|e| e["pid"].as_i64()).collect();
    pids.sort();
    pids.dedup();
    assert!(pids.len() >= 2, "{pids:?}");
    // info says what the file is, then lists each trace.
    let info = String::from_utf8(ok(tracekit().arg("info").arg(&dir).output()).stdout).unwrap();
    assert!(
        info.contains("tracekit memory recording (.tkmem version 3), 3 process image(s)"),
        "{info}"
    );
    assert_eq!(
        info.matches(": sp-rtrace text, version 2.0").count(),
        3,
        "{info}"
    );

    // Recording again into the same file replaces it.
    let again = work.join("again.tkmem");
    for _ in 0..2 {
        ok(tracekit()
            .args(["-q", "record", "mem", "-o"])
            .arg(&again)
            .arg("--")
            .arg(&exe)
            .output());
        let info = json(
            tracekit()
                .args(["info", "--json"])
                .arg(&again)
                .output_lines(),
        );
        assert_eq!(info["details"]["images"], 3, "{info}");
    }
    // A directory is not a .tkmem file.
    let out = tracekit()
        .args(["record", "mem", "-o"])
        .arg(&work)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a directory"));
}

/// `--format text`: everything goes into one directory of sp-rtrace text
/// traces and a manifest (nothing is scattered beside it), which the
/// readers take as a whole.
#[test]
fn a_text_recording_of_several_processes_is_one_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "family", FAMILY, &["-O1", "-g"]);
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = tracekit()
        .current_dir(&work)
        .args(["record", "mem", "--format", "text", "-o", "fam.mem", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let left: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["fam.mem"], "{err}");
    let dir = work.join("fam.mem");
    assert!(dir.is_dir());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("recording.json")).unwrap()).unwrap();
    let images = manifest["images"].as_array().unwrap();
    assert_eq!(images.len(), 3, "{manifest:#}");
    let root = manifest["pid"].as_i64().unwrap();
    assert_eq!(images[0]["pid"], root);
    let child = images
        .iter()
        .find(|i| i["pid"] != root && i["image"] == 1)
        .unwrap_or_else(|| panic!("{manifest:#}"));
    assert_eq!(child["end"]["status"], 7);
    let trace = std::fs::read_to_string(dir.join(child["file"].as_str().unwrap())).unwrap();
    assert!(
        trace.ends_with("## tracekit: the process exited with status 7\n"),
        "{trace}"
    );
    let text =
        String::from_utf8(ok(tracekit().args(["report"]).arg(&dir).output()).stdout).unwrap();
    assert_eq!(text.matches("==== pid ").count(), 3, "{text}");
    // Recording again into the same directory replaces the traces.
    ok(tracekit()
        .current_dir(&work)
        .args(["record", "mem", "--format", "text", "-o", "fam.mem", "--"])
        .arg(&exe)
        .output());
    let n = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(n, 4, "3 traces and the manifest");
    // A file or a foreign directory is not overwritten.
    std::fs::write(work.join("notes"), "x").unwrap();
    let out = tracekit()
        .current_dir(&work)
        .args(["record", "mem", "--format", "text", "-o", "notes", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes"));
}

/// `-q`: no summary lines on standard error (the program's own output is
/// its own).
#[test]
fn quiet_recording_says_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tracekit()
        .current_dir(tmp.path())
        .args(["-q", "record", "mem", "-o", "sh.mem", "--", "/bin/sh", "-c"])
        .arg("ls / > /dev/null")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(tmp.path().join("sh.mem").is_file());
    // `-o -`: the .tkmem file to standard output (a reader takes it from
    // standard input), nothing else written.
    let out = ok(tracekit()
        .current_dir(tmp.path())
        .args([
            "-q",
            "record",
            "mem",
            "--addresses",
            "-o",
            "-",
            "--",
            "/bin/sh",
            "-c",
        ])
        .arg("ls / > /dev/null")
        .output());
    assert!(out.stdout.starts_with(b"TKMEM\r\n\x1a"));
    let mut decode = tracekit()
        .args(["rtrace", "decode", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    decode.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let text = ok(decode.wait_with_output()).stdout;
    let text = String::from_utf8_lossy(&text);
    assert_eq!(text.matches("version=2.0, arch=").count(), 2, "{text}");
    // With --format text, the traces one after another.
    let out = ok(tracekit()
        .current_dir(tmp.path())
        .args([
            "-q", "record", "mem", "--format", "text", "-o", "-", "--", "/bin/sh", "-c",
        ])
        .arg("ls / > /dev/null")
        .output());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("version=2.0, arch=").count(), 2, "{text}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    // A command that cannot run leaves no empty recording behind.
    let out = tracekit()
        .current_dir(tmp.path())
        .args([
            "-q",
            "record",
            "mem",
            "-o",
            "none.mem",
            "--",
            "./no-such-program",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!tmp.path().join("none.mem").exists());
    // Nor does a static program, which nothing can be preloaded into.
    let st = build(
        tmp.path(),
        "static",
        "int main(void) { return 0; }\n",
        &["-static"],
    );
    let out = tracekit()
        .current_dir(tmp.path())
        .args(["-q", "record", "mem", "-o", "static.mem", "--"])
        .arg(&st)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no recording"));
    assert!(!tmp.path().join("static.mem").exists());
}

/// Allocates `N` temporary blocks with a `free(NULL)` between each
/// allocation and its release, and calls `free(NULL)` 5 more times (the
/// pointer is volatile: the compiler cannot drop the calls).
const NULL_FREES: &str = r#"
#include <stdlib.h>
void *volatile nothing = 0;
int main(void) {
    for (int i = 0; i < 20; i++) {
        void *p = malloc(32 + i);
        free(nothing);
        free(p);
    }
    for (int i = 0; i < 5; i++) free(nothing);
    return 0;
}
"#;

#[test]
fn free_of_null_is_counted_apart() {
    let tmp = tempfile::tempdir().unwrap();
    // -O0: gcc drops a malloc whose block is only freed.
    let exe = build(tmp.path(), "nulls", NULL_FREES, &["-O0"]);
    let rec = tmp.path().join("nulls.mem");
    ok(tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .output());
    let rep = json(
        tracekit()
            .args(["rtrace", "report", "--json", "--no-resolve"])
            .arg(&rec)
            .output(),
    );
    let mem = &rep["processes"][0]["report"]["resources"][0];
    assert_eq!(mem["null_frees"], 25, "{mem}");
    assert_eq!(mem["unmatched_frees"], 0, "{mem}");
    // free(NULL) does nothing: the blocks are still freed by the next call
    // that does something (heaptrack counts them so, it never sees it).
    assert!(mem["temporary"].as_u64().unwrap() >= 20, "{mem}");
    let text = String::from_utf8(
        ok(tracekit()
            .args(["rtrace", "report", "--no-resolve"])
            .arg(&rec)
            .output())
        .stdout,
    )
    .unwrap();
    assert!(
        text.contains("(0 of unknown blocks, 25 free(NULL))"),
        "{text}"
    );
}

/// A 40-frame recursion that allocates 64 bytes at the bottom (no frame
/// pointers); with an argument, 30 frames and 32 bytes.
const DEEP: &str = r#"
#include <stdlib.h>
void *volatile sink;
int size = 64;
__attribute__((noinline)) void down(int n) {
    if (n == 0) { sink = malloc(size); return; }
    down(n - 1);
    __asm__ volatile("" ::: "memory");
}
int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1) size = 32;
    down(argc > 1 ? 30 : 40);
    return 0;
}
"#;

/// Stacks are whole by default (up to the 64-frame limit), not cut at 10
/// frames short of `main`; the report says the depth.
#[test]
fn whole_stacks_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(
        tmp.path(),
        "deep",
        DEEP,
        &["-O2", "-g", "-fomit-frame-pointer"],
    );
    let rec = tmp.path().join("deep.mem");
    ok(tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .output());
    let text = String::from_utf8(ok(tracekit().arg("report").arg(&rec).output()).stdout).unwrap();
    assert!(text.contains("\n  backtrace depth 64\n"), "{text}");
    let rep = json(
        tracekit()
            .args(["rtrace", "report", "--json"])
            .arg(&rec)
            .output(),
    );
    let leaks = &rep["processes"][0]["report"]["leaks"];
    let frames = leaks
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["bytes"] == 64)
        .map(|l| l["frames"].as_array().unwrap().clone())
        .unwrap_or_else(|| panic!("{leaks:#}"));
    let names: Vec<&str> = frames
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert!(names.len() >= 42, "{names:?}");
    assert_eq!(
        names.iter().filter(|n| **n == "down").count(),
        41,
        "{names:?}"
    );
    assert!(names.contains(&"main"), "{names:?}");
    // A recursive call repeats a return address: not an inlined frame.
    assert!(frames.iter().all(|f| f["inlined"] == false), "{frames:?}");

    // --diff with a shallower run: the recursion's frames are listed, each
    // once, none said to be inlined (they used to be: the same address
    // twice in a row was taken for inlining).
    let base = tmp.path().join("deep30.mem");
    ok(tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(&base)
        .arg("--")
        .arg(&exe)
        .arg("30")
        .output());
    let text = String::from_utf8(
        ok(tracekit()
            .args(["report", "--diff"])
            .arg(&base)
            .arg(&rec)
            .output())
        .stdout,
    )
    .unwrap();
    assert!(text.contains("        down at "), "{text}");
    assert!(!text.contains("(inlined)"), "{text}");
}

/// Exercises what heaptrack and we might count differently: malloc,
/// calloc, realloc chains (and `realloc(NULL, n)`), posix_memalign,
/// aligned_alloc, strdup, reallocarray (which calls realloc inside
/// glibc), temporaries with `free(NULL)` between, leaks, and
/// `realloc(p, 0)` (which frees p and returns NULL).
const COUNTS: &str = r#"
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
void *volatile nothing = 0;
static void *keep[100];
__attribute__((noinline)) void *mk(size_t n) { return malloc(n); }
int main(void) {
    for (int i = 0; i < 50; i++) { void *p = mk(16 + i); free(nothing); free(p); }
    for (int i = 0; i < 30; i++) keep[i] = mk(100 + i);
    for (int i = 0; i < 30; i += 3) { free(keep[i]); keep[i] = 0; }
    void *r = realloc(NULL, 10);
    for (int i = 1; i <= 8; i++) r = realloc(r, 10 << i);
    free(r);
    void *c = calloc(7, 9); free(c);
    void *a = 0;
    if (posix_memalign(&a, 64, 640) == 0) keep[40] = a;
    keep[41] = aligned_alloc(128, 256);
    keep[42] = strdup("counted by both");
    keep[43] = reallocarray(NULL, 12, 10);
    void *z = malloc(24);
    z = realloc(z, 0);
    (void)z;
    for (int i = 0; i < 5; i++) free(nothing);
    return 0;
}
"#;

/// heaptrack_print's totals of a heaptrack data file, and the same over
/// the allocations made under `_dl_init` (the constructors of the
/// libraries heaptrack loads into the process, libstdc++'s emergency
/// exception pool above all: calls, leaked bytes).
fn heaptrack_totals(file: &Path, dir: &Path) -> HeaptrackTotals {
    let text = ok(Command::new("heaptrack_print")
        .arg("-f")
        .arg(file)
        .args(["-p", "0", "-a", "0", "-T", "0", "-l", "0"])
        .output())
    .stdout;
    let text = String::from_utf8_lossy(&text).to_string();
    let num = |key: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_else(|| panic!("{key} in {text}"))
            .parse()
            .unwrap()
    };
    let calls = num("calls to allocation functions: ");
    let temporary = num("temporary memory allocations: ");
    let under_dl_init = |cost: &str| -> (i64, i64) {
        let stacks = dir.join(format!("stacks.{cost}"));
        ok(Command::new("heaptrack_print")
            .arg("-f")
            .arg(file)
            .args(["-p", "0", "-a", "0", "-T", "0", "-l", "0", "-F"])
            .arg(&stacks)
            .args(["--flamegraph-cost-type", cost])
            .output());
        let mut all = 0;
        let mut init = 0;
        for l in std::fs::read_to_string(&stacks).unwrap().lines() {
            let v: i64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            all += v;
            if l.contains("_dl_init") {
                init += v;
            }
        }
        (all, init)
    };
    let (all_calls, init_calls) = under_dl_init("allocations");
    assert_eq!(all_calls, calls);
    let (leaked, init_leaked) = under_dl_init("leaked");
    let (peak, init_peak) = under_dl_init("peak");
    HeaptrackTotals {
        calls,
        init_calls,
        temporary,
        leaked,
        init_leaked,
        peak,
        init_peak,
    }
}

/// heaptrack_print's totals, and the part of each made under `_dl_init`.
struct HeaptrackTotals {
    calls: i64,
    init_calls: i64,
    temporary: i64,
    leaked: i64,
    init_leaked: i64,
    peak: i64,
    init_peak: i64,
}

/// The same program under heaptrack and under `record mem`: the same
/// calls to allocation functions, temporaries, leaks and peak, once what
/// heaptrack adds itself is taken out (the allocations of the libraries
/// it loads into the process, made by their constructors) and the one
/// documented difference (heaptrack records no release for a `realloc(p,
/// 0)` that returns NULL: p stays leaked for it).
#[test]
fn counts_agree_with_heaptrack_on_the_same_program() {
    if Command::new("heaptrack").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "heaptrack is missing (apt-get install heaptrack)"
        );
        eprintln!("heaptrack is not installed: this test did not run");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // -O0: gcc drops a malloc whose block is only freed.
    let exe = build(tmp.path(), "counts", COUNTS, &["-O0", "-g"]);
    ok(Command::new("heaptrack")
        .arg("-o")
        .arg(tmp.path().join("ht"))
        .arg(&exe)
        .output());
    let ht_file = tmp.path().join("ht.zst");
    let ht = heaptrack_totals(&ht_file, tmp.path());

    let rec = tmp.path().join("counts.mem");
    ok(tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .output());
    let rep = json(
        tracekit()
            .args(["rtrace", "report", "--json", "--no-resolve"])
            .arg(&rec)
            .output(),
    );
    let mem = &rep["processes"][0]["report"]["resources"][0];
    let ours = |k: &str| mem[k].as_i64().unwrap();
    // 50 + 30 + 9 (realloc chain) + calloc + posix_memalign +
    // aligned_alloc + strdup + reallocarray + malloc(24) = 95 calls of the
    // program (reallocarray once, not also as the realloc it makes).
    assert_eq!(ours("allocations"), 95, "{mem}");
    assert_eq!(ours("allocations"), ht.calls - ht.init_calls, "{mem}");
    assert_eq!(ours("null_frees"), 55, "{mem}");
    // realloc(z, 0) right after z's malloc frees it: a temporary block to
    // us, never freed to heaptrack (it records nothing for a realloc that
    // returns NULL), which then counts its 24 bytes as leaked.
    assert_eq!(ours("temporary"), ht.temporary + 1, "{mem}");
    assert_eq!(
        ours("leaked_bytes") + 24,
        ht.leaked - ht.init_leaked,
        "{mem}"
    );
    // The peak is reached after the libraries' constructors ran: what
    // they allocated is live then (heaptrack frees it at exit).
    assert_eq!(ours("peak_bytes") + ht.init_peak, ht.peak, "{mem}");
}

/// Every reader takes the default `.tkmem` recording as it is: the
/// conversions to heaptrack (which heaptrack_print reads: the same calls,
/// leaks and temporaries as our report), to Chrome's and Perfetto's
/// timelines, to Parquet and the flame graphs, `tracekit sql`, `rtrace
/// postproc -l` and `info`, all with the counts of the report. Its heap
/// blocks freed soon after have no address (null in `sql`), so its
/// sp-rtrace text is refused, saying why; a recording with `--addresses`
/// converts, and reads as the default one does.
#[test]
fn every_reader_takes_a_tkmem_file() {
    let tmp = tempfile::tempdir().unwrap();
    // -O0: gcc drops a malloc whose block is only freed.
    let exe = build(tmp.path(), "counts", COUNTS, &["-O0", "-g"]);
    let rec = tmp.path().join("counts.tkmem");
    ok(tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .output());
    assert!(std::fs::read(&rec).unwrap().starts_with(b"TKMEM\r\n\x1a"));
    let rep = json(
        tracekit()
            .args(["rtrace", "report", "--json", "--no-resolve"])
            .arg(&rec)
            .output(),
    );
    let mem = &rep["processes"][0]["report"]["resources"][0];
    let ours = |k: &str| mem[k].as_i64().unwrap();
    assert_eq!(ours("allocations"), 95, "{mem}");

    // sql: one row per allocation call.
    let rows = ok(tracekit()
        .args([
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n, sum(CASE WHEN leaked THEN size ELSE 0 END) AS leaked \
             FROM rtrace_allocations WHERE resource = 'memory'",
        ])
        .arg(&rec)
        .output())
    .stdout;
    let rows = String::from_utf8(rows).unwrap();
    assert_eq!(
        rows.lines().nth(1),
        Some(format!("95,{}", ours("leaked_bytes")).as_str()),
        "{rows}"
    );
    // Blocks freed soon after are named by number: no address; every
    // leaked block has one.
    let nulls = ok(tracekit()
        .args([
            "sql",
            "--format",
            "csv",
            "SELECT count(*) FILTER (WHERE address IS NULL), \
             count(*) FILTER (WHERE address IS NULL AND leaked) \
             FROM rtrace_allocations WHERE resource = 'memory'",
        ])
        .arg(&rec)
        .output())
    .stdout;
    let nulls = String::from_utf8(nulls).unwrap();
    let nulls: Vec<i64> = nulls
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(nulls[0] > 0 && nulls[1] == 0, "{nulls:?}");
    let info = String::from_utf8(ok(tracekit().arg("info").arg(&rec).output()).stdout).unwrap();
    assert!(info.contains("named by number"), "{info}");

    // postproc -l: the leaks, as the text trace's.
    let leaks = String::from_utf8(
        ok(tracekit()
            .args(["rtrace", "postproc", "-l"])
            .arg(&rec)
            .output())
        .stdout,
    )
    .unwrap();
    assert!(
        leaks.contains(&format!(
            "with total size of {} bytes",
            ours("leaked_bytes")
        )),
        "{leaks}"
    );

    // heaptrack's file, read by heaptrack_print where it is installed.
    let ht = tmp.path().join("counts.heaptrack.zst");
    ok(tracekit()
        .arg("convert")
        .arg(&rec)
        .args(["--to", "heaptrack", "-o"])
        .arg(&ht)
        .output());
    assert!(std::fs::metadata(&ht).unwrap().len() > 0);
    if Command::new("heaptrack_print")
        .arg("--version")
        .output()
        .is_ok()
    {
        let totals = heaptrack_totals(&ht, tmp.path());
        assert_eq!(totals.calls, ours("allocations"));
        assert_eq!(totals.leaked, ours("leaked_bytes"));
        assert_eq!(totals.peak, ours("peak_bytes"));
    }

    // The timelines: the program's calls on its process track.
    let chrome: Value = serde_json::from_slice(
        &ok(tracekit()
            .arg("convert")
            .arg(&rec)
            .args(["--to", "chrome"])
            .output())
        .stdout,
    )
    .unwrap();
    let events = chrome
        .as_array()
        .or_else(|| chrome["traceEvents"].as_array())
        .unwrap();
    // Every block never freed is an instant of the leaks track.
    let leaks = events.iter().filter(|e| e["cat"] == "leak").count();
    assert_eq!(leaks as i64, ours("leaked_blocks"), "{chrome}");
    assert!(leaks > 0);
    // Its sp-rtrace text would need every address: refused, saying how.
    let text = tmp.path().join("counts.rtrace");
    let refused = tracekit()
        .arg("convert")
        .arg(&rec)
        .args(["--to", "sp-rtrace", "-o"])
        .arg(&text)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("record mem --addresses"), "{why}");
    let refused = tracekit()
        .args(["rtrace", "decode"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(!refused.status.success() && refused.stdout.is_empty());
    // With --addresses: Perfetto's timeline, byte for byte what the
    // recording's sp-rtrace text gives.
    let rec_all = tmp.path().join("counts-all.tkmem");
    ok(tracekit()
        .args(["-q", "record", "mem", "--addresses", "-o"])
        .arg(&rec_all)
        .arg("--")
        .arg(&exe)
        .output());
    ok(tracekit()
        .arg("convert")
        .arg(&rec_all)
        .args(["--to", "sp-rtrace", "-o"])
        .arg(&text)
        .output());
    let perfetto = |input: &Path| {
        let out = tmp.path().join("out.pftrace");
        ok(tracekit()
            .arg("convert")
            .arg(input)
            .args(["--to", "perfetto", "-o"])
            .arg(&out)
            .output());
        std::fs::read(&out).unwrap()
    };
    assert!(!perfetto(&rec).is_empty());
    let pf = perfetto(&rec_all);
    assert!(pf == perfetto(&text), "the timelines differ");
    let pq = tmp.path().join("counts.parquet");
    ok(tracekit()
        .arg("convert")
        .arg(&rec)
        .args(["--to", "parquet", "-o"])
        .arg(&pq)
        .output());
    let rows = ok(tracekit()
        .args([
            "sql",
            "--format",
            "csv",
            "SELECT count(*) FROM rtrace_allocations WHERE resource = 'memory'",
        ])
        .arg(&pq)
        .output())
    .stdout;
    assert_eq!(String::from_utf8_lossy(&rows).lines().nth(1), Some("95"));

    // Flame graphs and folded stacks.
    let folded = String::from_utf8(
        ok(tracekit()
            .arg("convert")
            .arg(&rec)
            .args(["--to", "folded-count"])
            .output())
        .stdout,
    )
    .unwrap();
    let calls: i64 = folded
        .lines()
        .filter_map(|l| l.rsplit(' ').next()?.parse::<i64>().ok())
        .sum();
    assert_eq!(calls, 95, "{folded}");
    let svg = ok(tracekit()
        .arg("convert")
        .arg(&rec)
        .args(["--to", "flamegraph-bytes"])
        .output())
    .stdout;
    assert!(String::from_utf8_lossy(&svg).contains("<svg"));

    // report --diff of the other run's sp-rtrace text with the default
    // recording: nothing changed (the two read alike).
    let diff = json(
        tracekit()
            .args(["report", "--json", "--diff"])
            .arg(&text)
            .arg(&rec)
            .output(),
    );
    let totals = &diff["totals"][0];
    assert_eq!(totals["resource"], "memory", "{diff}");
    for k in ["allocations", "allocated", "leaked", "peak", "temporary"] {
        assert_eq!(totals[k], 0, "{k}: {diff}");
    }
}

/// Allocates 20,000 blocks (far more than the shim's batch holds, far
/// fewer than fill a thread's buffer in the recorder), then sleeps.
const QUIET_AFTER: &str = r#"
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    static void *p[20000];
    for (int i = 0; i < 20000; i++) p[i] = malloc(16 + i % 64);
    sleep(6);
    for (int i = 0; i < 20000; i++) free(p[i]);
    return 0;
}
"#;

/// What a program recorded reaches the file within seconds of being
/// recorded, not only when the recorder's buffer for its thread fills or
/// the program ends: a recorder killed meanwhile loses at most that.
#[test]
fn a_quiet_programs_events_reach_the_file_while_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(tmp.path(), "quiet_after", QUIET_AFTER, &["-O0"]);
    let rec = tmp.path().join("quiet.tkmem");
    let mut child = tracekit()
        .args(["-q", "record", "mem", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&exe)
        .spawn()
        .unwrap();
    // The allocations take milliseconds; the buffer is written 2 s after
    // its first record (checked 4 times a second).
    std::thread::sleep(std::time::Duration::from_millis(4000));
    let info = json(tracekit().args(["info", "--json"]).arg(&rec).output_lines());
    let events = info["events"].as_u64().unwrap();
    assert!(
        events >= 10_000,
        "while the program sleeps, its allocations are in the file: {info}"
    );
    assert_eq!(info["details"]["finished"], false, "{info}");
    assert!(child.wait().unwrap().success());
    let info = json(tracekit().args(["info", "--json"]).arg(&rec).output_lines());
    assert_eq!(info["details"]["finished"], true, "{info}");
    assert!(info["events"].as_u64().unwrap() >= 40_000, "{info}");
}
