//! Backtraces of the LD_PRELOAD recorder on code without frame pointers:
//! small C programs compiled here with `cc -O2` (and, for comparison, with
//! `-fno-omit-frame-pointer`) whose allocations go through static
//! functions, a shared library, a `dlopen`ed plugin (loaded, closed and
//! loaded again), a thread, deep recursion, signal handlers (on the
//! thread's stack and on an alternate signal stack) and a fork child. Each
//! allocation has a size of its own; its frames, resolved here from the
//! trace's memory maps and the objects' symbol tables, must name the
//! functions of the source in order.
//!
//! Needs a C compiler as `cc` (CI installs gcc).

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};
use tracekit_rtrace::recording::capture::{Capture, Image};

const LIB: &str = r#"
#include <stdlib.h>
volatile int lib_sink;
__attribute__((noinline)) static void *lib_leaf(size_t n) {
    void *p = malloc(n);
    lib_sink++;
    return p;
}
__attribute__((noinline)) void *lib_entry(size_t n) {
    void *p = lib_leaf(n);
    lib_sink++;
    return p;
}
"#;

const PLUGIN: &str = r#"
#include <stdlib.h>
volatile int plug_sink;
__attribute__((noinline)) static void *plug_leaf(size_t n) {
    void *p = malloc(n);
    plug_sink++;
    return p;
}
__attribute__((noinline)) void *plug_entry(size_t n) {
    void *p = plug_leaf(n);
    plug_sink++;
    return p;
}
"#;

const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *lib_entry(size_t);
static volatile int sink;
static void *volatile keep;

__attribute__((noinline)) static void *two(size_t n) {
    void *p = lib_entry(n);
    sink++;
    return p;
}
__attribute__((noinline)) static void *one(size_t n) {
    void *p = two(n);
    sink++;
    return p;
}
__attribute__((noinline)) static void *recurse(int depth, size_t n) {
    void *p = depth > 0 ? recurse(depth - 1, n) : malloc(n);
    sink++;
    return p;
}
__attribute__((noinline)) static void *leaf(size_t n) {
    void *p = malloc(n);
    sink++;
    return p;
}
__attribute__((noinline)) static void *via_a(size_t n) {
    void *p = leaf(n);
    sink++;
    return p;
}
__attribute__((noinline)) static void *via_b(size_t n) {
    void *p = leaf(n);
    sink += 2;
    return p;
}
static void on_usr1(int sig) {
    (void)sig;
    keep = malloc(3003);
    sink++;
}
static void on_usr2(int sig) {
    (void)sig;
    keep = malloc(3503);
    sink++;
}
__attribute__((noinline)) static void raise_here(int sig) {
    raise(sig);
    sink++;
}
static void *thread_main(void *arg) {
    (void)arg;
    keep = one(4004);
    sink++;
    return NULL;
}
__attribute__((noinline)) static void plugin_round(const char *path, size_t n) {
    void *h = dlopen(path, RTLD_NOW);
    if (!h) _exit(3);
    void *(*entry)(size_t) = (void *(*)(size_t))dlsym(h, "plug_entry");
    keep = entry(n);
    sink++;
    dlclose(h);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    keep = one(1001);
    keep = recurse(20, 2002);
    /* The same function, the same stack pointer, other callers. */
    for (int i = 0; i < 4; i++) {
        keep = via_a(7000 + 2 * i);
        keep = via_b(7001 + 2 * i);
    }
    signal(SIGUSR1, on_usr1);
    raise_here(SIGUSR1);
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = malloc(1 << 16);
    ss.ss_size = 1 << 16;
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    raise_here(SIGUSR2);
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    plugin_round(argv[1], 5005);
    plugin_round(argv[1], 5006);
    pid_t child = fork();
    if (child == 0) {
        keep = one(6006);
        _exit(0);
    }
    waitpid(child, NULL, 0);
    return 0;
}
"#;

fn cc(args: &[&str], out: &Path, src: &Path) {
    let status = Command::new("cc")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(src)
        .status()
        .expect("a C compiler (cc) is needed for this test");
    assert!(status.success(), "cc {args:?} {}", src.display());
}

/// Builds the library, the plugin and the program with `flags`.
fn build(dir: &Path, flags: &[&str]) -> (PathBuf, PathBuf) {
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let lib_c = write("deep.c", LIB);
    let plugin_c = write("plugin.c", PLUGIN);
    let prog_c = write("prog.c", PROGRAM);
    let lib = dir.join("libdeep.so");
    let plugin = dir.join("libplugin.so");
    let prog = dir.join("prog");
    let shared: Vec<&str> = flags.iter().copied().chain(["-fPIC", "-shared"]).collect();
    cc(&shared, &lib, &lib_c);
    cc(&shared, &plugin, &plugin_c);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let ldir = format!("-L{}", dir.display());
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["-pthread", &ldir, &rpath]);
    let status = Command::new("cc")
        .args(&args)
        .arg("-o")
        .arg(&prog)
        .arg(&prog_c)
        .args(["-ldeep", "-ldl"])
        .status()
        .unwrap();
    assert!(status.success());
    (prog, plugin)
}

fn record(dir: &Path, exe: &Path, args: &[&Path]) -> (ExitStatus, Vec<Image>) {
    let so = dir.join("libtracekit_rtrace_shim.so");
    std::fs::write(&so, tracekit_rtrace_preload::SHIM).unwrap();
    let rec = dir.join("rec");
    std::fs::create_dir(&rec).unwrap();
    let capture = Capture::start(&rec, 64).unwrap();
    let status = Command::new(exe)
        .args(args)
        .env("LD_PRELOAD", &so)
        .envs(capture.env("memory"))
        .status()
        .unwrap();
    let (images, _) = capture.finish().unwrap();
    (status, images)
}

/// An object's function symbols and where its code is mapped.
struct Object_ {
    start: u64,
    end: u64,
    bias: u64,
    symbols: Vec<(u64, u64, String)>,
}

fn load_object(path: &str, start: u64, end: u64) -> Option<Object_> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&data[..]).ok()?;
    let code = file.segments().find(|s| match s.flags() {
        SegmentFlags::Elf { p_flags } => p_flags & 1 != 0,
        _ => false,
    })?;
    let bias = start.checked_sub(code.address() & !0xfff)?;
    let mut symbols: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    symbols.sort();
    Some(Object_ {
        start,
        end,
        bias,
        symbols,
    })
}

/// The function names of the frames of each call, by size, from the
/// decoded text (`: path => 0xa-0xb` maps, then calls and their frames).
fn stacks(text: &str) -> HashMap<u64, Vec<String>> {
    let mut objects: Vec<Object_> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(": ") else {
            continue;
        };
        let Some((path, range)) = rest.rsplit_once(" => ") else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let a = u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap();
        let b = u64::from_str_radix(b.trim_start_matches("0x"), 16).unwrap();
        if let Some(o) = load_object(path, a, b) {
            objects.push(o);
        }
    }
    let name = |addr: u64| -> String {
        let pc = addr - 1;
        for o in &objects {
            if pc >= o.start && pc < o.end {
                let rel = pc - o.bias;
                let i = o.symbols.partition_point(|s| s.0 <= rel);
                if i > 0 && rel < o.symbols[i - 1].0 + o.symbols[i - 1].1 {
                    // GCC's clones (recurse.constprop.0) are the function.
                    let n = &o.symbols[i - 1].2;
                    return n.split('.').next().unwrap_or(n).to_string();
                }
                return "?".into();
            }
        }
        "??".into()
    };
    let mut out = HashMap::new();
    let mut current: Option<(u64, Vec<String>)> = None;
    for line in text.lines() {
        if let Some(frame) = line.strip_prefix("\t0x") {
            if let Some((_, frames)) = current.as_mut() {
                let addr = frame.split_whitespace().next().unwrap();
                frames.push(name(u64::from_str_radix(addr, 16).unwrap()));
            }
            continue;
        }
        if let Some((size, frames)) = current.take() {
            out.entry(size).or_insert(frames);
        }
        // `N. [time] malloc(SIZE) = 0x...`
        if let Some(open) = line.find("alloc(") {
            if line.contains(") = 0x") {
                let size = &line[open + 6..line[open..].find(')').unwrap() + open];
                if let Ok(size) = size.parse() {
                    current = Some((size, Vec::new()));
                }
            }
        }
    }
    if let Some((size, frames)) = current.take() {
        out.entry(size).or_insert(frames);
    }
    out
}

fn decoded(image: &Image) -> String {
    let mut text = Vec::new();
    tracekit_rtrace::recording::decode_file(&image.path, &mut text).unwrap();
    String::from_utf8(text).unwrap()
}

/// `want` appears in `frames` in this order (other frames may lie between).
fn in_order(frames: &[String], want: &[&str]) -> bool {
    let mut it = frames.iter();
    want.iter().all(|w| it.any(|f| f == w))
}

fn check(flags: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let (prog, plugin) = build(tmp.path(), flags);
    let (status, images) = record(tmp.path(), &prog, &[&plugin]);
    assert!(status.success(), "{status:?}");
    assert_eq!(images.len(), 2, "the program and its fork child");
    let main = stacks(&decoded(&images[0]));
    let child = stacks(&decoded(&images[1]));
    let get = |m: &HashMap<u64, Vec<String>>, size: u64| -> Vec<String> {
        m.get(&size)
            .unwrap_or_else(|| panic!("no allocation of {size} bytes ({flags:?})"))
            .clone()
    };

    // Static functions, a shared library, main: every frame, in order,
    // down to the C library's start code.
    let s = get(&main, 1001);
    assert_eq!(
        &s[..5],
        ["lib_leaf", "lib_entry", "two", "one", "main"],
        "{flags:?}: {s:?}"
    );
    assert!(in_order(&s, &["main", "__libc_start_main"]), "{s:?}");

    // Recursion: 21 frames of `recurse`, then main.
    let s = get(&main, 2002);
    assert_eq!(
        s.iter().take_while(|f| *f == "recurse").count(),
        21,
        "{flags:?}: {s:?}"
    );
    assert_eq!(s[21], "main", "{s:?}");

    // Callers that alternate under the same innermost frame (the unwinder
    // reuses the outer part of the last backtrace only where it is still
    // on the stack).
    for i in 0..4 {
        for (size, via) in [(7000 + 2 * i, "via_a"), (7001 + 2 * i, "via_b")] {
            let s = get(&main, size);
            assert_eq!(&s[..3], ["leaf", via, "main"], "{flags:?} {size}: {s:?}");
        }
    }

    // A handler on the thread's stack and one on the signal stack: through
    // the signal frame to the code that raised the signal.
    for size in [3003, 3503] {
        let s = get(&main, size);
        let handler = if size == 3003 { "on_usr1" } else { "on_usr2" };
        assert_eq!(s[0], handler, "{flags:?}: {s:?}");
        assert!(
            in_order(&s, &[handler, "raise", "raise_here", "main"]),
            "{flags:?}: {s:?}"
        );
    }

    // A thread: down to the thread's start.
    let s = get(&main, 4004);
    assert_eq!(
        &s[..5],
        ["lib_leaf", "lib_entry", "two", "one", "thread_main"],
        "{flags:?}: {s:?}"
    );
    // start_thread and clone3: local symbols of the C library, which
    // Debian strips, so only their presence is checked.
    assert!(s.len() >= 7, "{flags:?}: {s:?}");

    // A plugin loaded, closed and loaded again.
    for size in [5005, 5006] {
        let s = get(&main, size);
        assert_eq!(
            &s[..4],
            ["plug_leaf", "plug_entry", "plugin_round", "main"],
            "{flags:?} {size}: {s:?}"
        );
    }

    // The fork child.
    let s = get(&child, 6006);
    assert_eq!(
        &s[..5],
        ["lib_leaf", "lib_entry", "two", "one", "main"],
        "{flags:?}: {s:?}"
    );
}

#[test]
fn full_stacks_without_frame_pointers() {
    check(&["-O2", "-fomit-frame-pointer"]);
}

#[test]
fn full_stacks_with_frame_pointers() {
    check(&["-O2", "-fno-omit-frame-pointer"]);
}
