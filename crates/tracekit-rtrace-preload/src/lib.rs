//! The LD_PRELOAD recorder behind `tracekit record mem`.
//!
//! The recorder itself (`shim/`) is a `no_std`, `panic=abort` shared
//! library, a package of its own that `build.rs` builds with its own cargo
//! call (its own lock file; it depends on framehop and gimli compiled
//! without std): it must have no thread-local storage (that would enlarge
//! every thread's DTV, an allocation of the traced program) and must not
//! allocate through the functions it hooks, so it cannot share the
//! workspace's std/unwind settings. This crate embeds the finished library
//! ([`SHIM`]) for the CLI to write out and preload, and exports the layouts
//! ([`wire`]) for the recorder.
//!
//! Events travel through a tracekit POSIX trace stream: the recorder
//! (`tracekit_rtrace::recording::capture`, the stream's controller)
//! creates an UNTIL_FULL stream for all processes in `/dev/shm`, registers
//! the event types `tracekit.rtrace.event` and `tracekit.rtrace.meta`,
//! starts it and names it in `$TRACEKIT_RTRACE_STREAM`; it reads the
//! stream on a thread while the command runs. The shim maps the stream
//! once per process image (raw `openat`/`lseek`/`mmap`/`close`: no hook, no
//! descriptor left open) and writes into it with `tracekit_posix::producer`
//! (`consts.rs` and `producer.rs` compiled in from their source), without
//! a system call.
//!
//! What the shim does, and the rules that keep the traced program
//! unchanged:
//! * interposes the malloc family and the descriptor functions
//!   (open/openat/creat/close/dup*/pipe*/socket/accept*/fopen/fdopen/
//!   fclose/eventfd/timerfd_create/memfd_create), allocators' own entry
//!   points (`shim/apis.rs`: mimalloc's `mi_malloc`..., jemalloc's
//!   `_rjem_malloc`...; the allocator runs with the guard set, so its
//!   nested calls are not recorded twice), and for allocations takes
//!   a backtrace by unwinding the DWARF call-frame information
//!   (`.eh_frame_hdr`/`.eh_frame`) of the loaded objects (`shim/unwind.rs`:
//!   framehop with a per-thread rule cache; module tables from
//!   `/proc/self/maps` and the ELF headers in memory; signal frames through
//!   glibc's `__restore_rt`; `dlopen`ed objects found when a return address
//!   falls outside the known ones, `dlclose` waited for; the outer part of
//!   the thread's last backtrace reused where it is provably still on the
//!   stack). Code without frame pointers unwinds completely; frame pointers
//!   are never trusted on their own (a guessed frame must land in known
//!   code);
//! * appends fixed-length records to its thread's batch ([`wire`]: an
//!   allocation names its backtrace by a number, defined once per thread by
//!   a `KIND_STACK` record before its first use, `shim/stacks.rs`); a full
//!   batch (4 KiB, about 100 records) becomes one `tracekit.rtrace.event`
//!   stream event. Batching keeps the reader's per-event work off the
//!   allocation path;
//! * the batches live in the image's *spill file* (`$TRACEKIT_RTRACE_SPILL`
//!   plus the image's nonce, in `/dev/shm`, a shared mapping; a batch's
//!   length is published after each whole record): what a process killed by
//!   SIGKILL, a fault or `abort()` recorded but had not sent is read there
//!   by the recorder after it is gone. The spill header also says how the
//!   image ended as the shim saw it (exec, `exit`/`_exit` status, exit
//!   handlers ran, or nothing: killed); the status of an `exit` the hooks
//!   cannot see (returning from `main` calls it inside the C library)
//!   comes from an `on_exit` handler the constructor registers;
//! * the per-image metadata — the header (pid, parent, start time, depth,
//!   modules, nonce, executable) and `/proc/self/maps` — goes out as
//!   `tracekit.rtrace.meta` records in fragments ([`wire::META_HEAD`]) that
//!   the recorder reassembles. The maps are sent when the image starts,
//!   whenever the unwinder rebuilds its module table (so objects unloaded
//!   later keep their map lines) and when it exits or execs;
//! * a full stream suspends itself until the recorder has drained it: the
//!   shim then waits (yield, then naps of 50 µs doubling to 800 µs) and
//!   writes again, so nothing is lost while the recorder lives. Only if
//!   the recorder makes no progress for 10 s does the shim give the event
//!   up (and stop waiting from then on); the stream counts it, and the gap
//!   in the event numbers is reported per process in the trace and on
//!   stderr;
//! * nothing allocates through the hooked functions: batches live in the
//!   spill file (or private mappings), what the unwinder keeps comes from
//!   the shim's own allocator over anonymous mappings (`shim/arena.rs`),
//!   strings are built on the stack;
//! * a per-thread guard turns every call made while recording (by us, by
//!   libc on our behalf, by a signal handler interrupting us) into a plain
//!   pass-through, so no lock of the shim is ever taken twice on a thread;
//!   a fork child resets what threads that do not exist there may have held.
//!   The memory hooks also hold it while the allocator runs, so what the
//!   allocator calls through the PLT (another hooked entry point, `open`,
//!   `mmap`; a signal handler that allocates meanwhile) passes through: one
//!   call of the program is one record;
//! * until `dlsym` has found the real functions, allocations come from a
//!   static bootstrap arena (dlsym itself may call calloc);
//! * it starts from an ELF constructor, so every process image gets a
//!   header (the recorder numbers the images of one pid: `<pid>-<n>`);
//! * after `fork` the child leaves the parent's batches alone (the parent
//!   sends them; they are in the parent's spill file) and starts its own
//!   spill file, header and maps; before `execve`/`execv`/`execvp`/
//!   `execvpe`/`execl`/`execle`/`execlp`, `_exit`/`_Exit` and at exit every
//!   thread's batch is sent and the maps follow;
//! * every event takes a number from one process-wide counter (allocations
//!   after the real call returned, releases before it), so the decoder can
//!   restore a causal total order (and drop a record that arrived twice, by
//!   the stream and from the spill file);
//! * timestamps: CLOCK_MONOTONIC milliseconds; where the stream's clock is
//!   the TSC, a thread reads the clock every ~50 ms and extrapolates with
//!   the TSC in between;
//! * with the `pages` module, anonymous `mmap`/`mmap64`, `munmap` and
//!   `mremap` are recorded as resource type `RES_PAGES` (`shim/pages.rs`);
//!   the shim's own mappings are raw system calls;
//! * `errno` is preserved around everything the shim does;
//! * with a toggle signal (`toggle=N` in `$TRACEKIT_RTRACE_MODULES`, and
//!   `paused` to start paused), a handler that only flips an atomic turns
//!   the recording of allocations off and on; releases are recorded
//!   throughout. It is installed only if the signal has the default
//!   disposition when the image starts; the header says which.
//!
//! x86_64 Linux only (the trampolines pass the caller's stack and frame
//! pointer registers in assembly); elsewhere [`SHIM`] is empty.

pub mod wire;

/// The recorder shared library (empty where it is not supported).
pub static SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtracekit_rtrace_shim.so"));
