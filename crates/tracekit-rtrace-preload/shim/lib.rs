//! The recorder shared library (see the crate documentation in
//! `src/lib.rs`). Built by `build.rs` as a `no_std`, `panic=abort` cdylib.

#![no_std]
#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

// Shared with the recorder, which uses the parts the shim does not.
#[allow(dead_code)]
#[path = "../src/wire.rs"]
mod wire;

// The stream layout and its no_std writer, compiled from tracekit-posix's
// source (they need only `core`; the shim uses part of them).
#[allow(dead_code)]
#[path = "../../tracekit-posix/src/consts.rs"]
mod consts;
#[allow(dead_code)]
#[path = "../../tracekit-posix/src/producer.rs"]
mod producer;

extern crate alloc;

mod libc;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod apis;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod arena;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod attach;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod pages;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod stacks;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod unwind;

/// What the unwinder keeps lives in memory the shim maps itself.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[global_allocator]
static ALLOC: arena::ShimAlloc = arena::ShimAlloc;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // Nothing here panics on purpose; if it did, stopping is the only safe
    // answer inside someone else's process.
    // SAFETY: abort never returns.
    unsafe { libc::abort() }
}

/// The precompiled `core` refers to the unwinding personality even when
/// this library is built with `panic=abort`; nothing here unwinds.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
