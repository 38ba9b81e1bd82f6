//! Builds the recorder shim (`shim/`, a package of its own) as a
//! standalone `no_std`, `panic=abort` shared library with its own cargo
//! call: the workspace's unwinding std would bring thread-local storage
//! and the program's allocator into a library that must have neither, and
//! the shim depends on crates (framehop, gimli) compiled for that setting.
//! `src/lib.rs` embeds the result.

use std::env;
use std::path::PathBuf;
use std::process::{Command, Stdio};

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
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let target_dir = out.join("shim-target");
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--locked",
        "--quiet",
        "--target",
        &target,
    ])
    .arg("--manifest-path")
    .arg(manifest.join("shim/Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir);
    // The outer build's flags are for the workspace (sanitizers, coverage,
    // wrappers); the shim has its own profile.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PROFILE_RELEASE_PANIC",
        "CARGO_PROFILE_RELEASE_LTO",
        "CARGO_PROFILE_RELEASE_DEBUG",
        "CARGO_PROFILE_RELEASE_OPT_LEVEL",
        "CARGO_PROFILE_RELEASE_CODEGEN_UNITS",
    ] {
        cmd.env_remove(var);
    }
    // The build script's stdin is cargo's, which other build scripts' probes
    // may be writing to at the same time; the inner cargo feeds `rustc -`
    // from it when it learns the target's settings, so it must read nothing.
    cmd.stdin(Stdio::null());
    let status = cmd.status().expect("run cargo for the recorder shim");
    assert!(status.success(), "building the recorder shim failed");
    let built = target_dir
        .join(&target)
        .join("release")
        .join("libtracekit_rtrace_shim.so");
    std::fs::copy(&built, &so).expect("copy the recorder shim");
}
