//! Compiles the shim (`shim/lib.rs`) as a standalone `no_std`,
//! `panic=abort` shared library with its own rustc call: the workspace's
//! std would put an allocator, thread-locals and Rust's runtime start-up
//! into every process of the build, and the shim must stay cheap to load.
//! `src/lib.rs` embeds the result.

use std::env;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let so = out.join("libtracekit_preload.so");
    println!("cargo:rerun-if-changed=shim");
    println!("cargo:rerun-if-changed=../tracekit-posix/src/producer.rs");
    println!("cargo:rerun-if-changed=../tracekit-posix/src/consts.rs");
    let target = env::var("TARGET").unwrap_or_default();
    if !(target.contains("linux-gnu")) {
        // Not supported here: an empty library tells the CLI so.
        std::fs::write(&so, b"").expect("write placeholder");
        return;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
    // Loading the library is paid in every process of the build, and each
    // mapped segment, and each page of it written, costs page faults: no C
    // start files (their _init/_fini and TM-clone stubs are unused here), no
    // RELRO (an mprotect, and a segment split off the data), and, with lld,
    // read-only data in the text segment and the data segment on a page of
    // its own: two segments, one writable page (about 20 µs less per process
    // on a 2-vCPU VM). No loop turned into a call of libc's strlen, memcpy
    // or bcmp: in a fork child each libc function used for the first time
    // faults its page in. Other linkers get the flags they understand, or none.
    let layouts: [&[&str]; 3] = [
        &[
            "-Cllvm-args=-disable-loop-idiom-all",
            "-Clink-arg=-nostartfiles",
            "-Clink-arg=-Wl,-z,norelro",
            "-Clink-arg=-Wl,--no-rosegment",
            "-Clink-arg=-Wl,-z,separate-loadable-segments",
        ],
        &[
            "-Cllvm-args=-disable-loop-idiom-all",
            "-Clink-arg=-nostartfiles",
            "-Clink-arg=-Wl,-z,norelro",
            "-Clink-arg=-Wl,-z,noseparate-code",
        ],
        &[],
    ];
    for (i, layout) in layouts.iter().enumerate() {
        let last = i + 1 == layouts.len();
        let mut cmd = Command::new(&rustc);
        cmd.args([
            "--edition=2021",
            "--crate-type=cdylib",
            "--crate-name=tracekit_preload",
            "-C",
            "panic=abort",
            "-C",
            "opt-level=2",
            "-C",
            "strip=symbols",
            "--cfg",
            "tracekit_nolibc",
            "--target",
            &target,
        ])
        .args(*layout)
        .arg("-o")
        .arg(&so)
        .arg(manifest.join("shim/lib.rs"));
        if !last {
            cmd.stderr(std::process::Stdio::null());
        }
        // Cargo's stdin may carry other build scripts' probes: read nothing.
        cmd.stdin(Stdio::null());
        let status = cmd.status().expect("run rustc for the preload shim");
        if status.success() {
            return;
        }
        assert!(!last, "building the preload shim failed");
    }
}
