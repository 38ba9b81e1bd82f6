//! The LD_PRELOAD recorder behind `tracekit record mem`.
//!
//! The recorder itself (`shim/`) is a `no_std`, `panic=abort` shared
//! library that `build.rs` compiles with its own rustc invocation: it must
//! have no thread-local storage (that would enlarge every thread's DTV, an
//! allocation of the traced program) and must not use an allocator, so it
//! cannot share the workspace's std/unwind settings. This crate embeds the
//! finished library ([`SHIM`]) for the CLI to write out and preload, and
//! exports the event layout ([`wire`]) for the recorder.
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
//!   fclose/eventfd/timerfd_create/memfd_create), takes the caller's return
//!   address plus a frame-pointer backtrace, and appends a fixed-layout
//!   event ([`wire::EVENT_FIXED`] bytes plus 8 per frame) to its thread's
//!   batch; a full batch (the stream's max data size, 4 KiB: about 36
//!   events at depth 10; one event of the deepest backtrace always fits)
//!   becomes one `tracekit.rtrace.event` stream event. Batching keeps the
//!   reader's per-event work off the allocation path;
//! * the per-image metadata — the header (pid, parent, start time, depth,
//!   modules, executable) and `/proc/self/maps` — goes out as
//!   `tracekit.rtrace.meta` records in fragments ([`wire::META_HEAD`]) that
//!   the recorder reassembles. The maps are sent when the image starts and
//!   again when it exits or execs (the recorder keeps the last), so a
//!   process killed by a signal still gets the maps of its start;
//! * a full stream suspends itself until the recorder has drained it: the
//!   shim then waits (yield, then 50 µs naps) and writes again, so nothing
//!   is lost while the recorder lives. Only if the recorder makes no
//!   progress for 10 s does the shim give the event up (and stop waiting
//!   from then on); the stream counts it, and the gap in the event numbers
//!   is reported per process in the trace and on stderr;
//! * nothing allocates through the hooked functions: batches come from
//!   `mmap`, strings are built on the stack;
//! * a per-thread guard turns every call made while recording (by us, by
//!   libc on our behalf, by a signal handler interrupting us) into a plain
//!   pass-through;
//! * until `dlsym` has found the real functions, allocations come from a
//!   static bootstrap arena (dlsym itself may call calloc);
//! * it starts from an ELF constructor, so every process image gets a
//!   header (the recorder numbers the images of one pid: `<pid>-<n>`);
//! * after `fork` the child drops the parent's unsent batches (the parent
//!   sends them) and sends its own header and maps; before `execve`/`execv`/
//!   `execvp`/`execvpe`/`execl`/`execle`/`execlp`, `_exit`/`_Exit` and at
//!   exit every thread's batch is sent and the maps follow. A process
//!   killed by a signal loses at most the batch each thread was filling;
//!   a writer killed inside a stream write loses that one stream event,
//!   one batch (the reader skips its slot after 100 ms);
//! * every event takes a number from one process-wide counter (allocations
//!   after the real call returned, releases before it), so the decoder can
//!   restore a causal total order;
//! * timestamps: CLOCK_MONOTONIC milliseconds; where the stream's clock is
//!   the TSC, a thread reads the clock every ~50 ms and extrapolates with
//!   the TSC in between;
//! * `errno` is preserved around everything the shim does.
//!
//! x86_64 Linux only (the trampolines read the return address and the
//! frame pointer in assembly); elsewhere [`SHIM`] is empty.

pub mod wire;

/// The recorder shared library (empty where it is not supported).
pub static SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtracekit_rtrace_shim.so"));
