//! The LD_PRELOAD recorder behind `tracekit record mem`.
//!
//! The recorder itself (`shim/`) is a `no_std`, `panic=abort` shared
//! library that `build.rs` compiles with its own rustc invocation: it must
//! have no thread-local storage (that would enlarge every thread's DTV, an
//! allocation of the traced program) and must not use an allocator, so it
//! cannot share the workspace's std/unwind settings. This crate embeds the
//! finished library ([`SHIM`]) for the CLI to write out and preload, and
//! exports the event layout ([`wire`]) for the decoder.
//!
//! What the shim does, and the rules that keep the traced program
//! unchanged:
//! * interposes the malloc family and the descriptor functions
//!   (open/openat/creat/close/dup*/pipe*/socket/accept*/fopen/fdopen/
//!   fclose/eventfd/timerfd_create/memfd_create), takes the caller's return
//!   address plus a frame-pointer backtrace, and appends a fixed-layout
//!   event to a per-thread buffer written to
//!   `$TRACEKIT_RTRACE_DIR/<pid>-<n>.tkrt` in whole chunks;
//! * nothing allocates through the hooked functions: buffers come from
//!   `mmap`, paths are built on the stack;
//! * a per-thread guard turns every call made while recording (by us, by
//!   libc on our behalf, by a signal handler interrupting us) into a plain
//!   pass-through;
//! * until `dlsym` has found the real functions, allocations come from a
//!   static bootstrap arena (dlsym itself may call calloc);
//! * it starts from an ELF constructor, so every process image gets a file
//!   (`<pid>-<n>`, n counting the images of one pid);
//! * after `fork` the child drops the parent's unwritten events and records
//!   into its own file; before `execve`/`execv`/`execvp`/`execvpe`/`execl`/
//!   `execle`/`execlp`, `_exit`/`_Exit` and at exit every buffer is written
//!   out and the memory maps are appended (a process killed by a signal
//!   loses what its buffers held);
//! * every event takes a number from one process-wide counter (allocations
//!   after the real call returned, releases before it), so the decoder can
//!   restore a causal total order.
//!
//! x86_64 Linux only (the trampolines read the return address and the
//! frame pointer in assembly); elsewhere [`SHIM`] is empty.

pub mod wire;

/// The recorder shared library (empty where it is not supported).
pub static SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtracekit_rtrace_shim.so"));
