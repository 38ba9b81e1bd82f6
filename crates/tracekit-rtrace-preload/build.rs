//! Compiles the recorder shim (`shim/lib.rs`) as a standalone `no_std`,
//! `panic=abort` shared library with its own rustc call: the workspace's
//! unwinding std would bring thread-local storage and an allocator into a
//! library that must have neither. `src/lib.rs` embeds the result.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let so = out.join("libtracekit_rtrace_shim.so");
    println!("cargo:rerun-if-changed=shim");
    println!("cargo:rerun-if-changed=src/wire.rs");
    println!("cargo:rerun-if-changed=../tracekit-posix/src/producer.rs");
    println!("cargo:rerun-if-changed=../tracekit-posix/src/consts.rs");
    let target = env::var("TARGET").unwrap_or_default();
    if !(target.starts_with("x86_64-") && target.contains("linux-gnu")) {
        // Not supported here: an empty library tells the CLI so.
        std::fs::write(&so, b"").expect("write placeholder");
        return;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let status = Command::new(rustc)
        .args([
            "--edition=2021",
            "--crate-type=cdylib",
            "--crate-name=tracekit_rtrace_shim",
            "-C",
            "panic=abort",
            "-C",
            "opt-level=3",
            "-C",
            "debuginfo=1",
            "-C",
            "force-frame-pointers=yes",
            "--target",
            &target,
            "-o",
        ])
        .arg(&so)
        .arg(manifest.join("shim/lib.rs"))
        .status()
        .expect("run rustc for the recorder shim");
    assert!(status.success(), "building the recorder shim failed");
}
