//! The POSIX trace engine: the Trace (TRC), Trace Event Filter (TEF), Trace
//! Log (TRL) and Trace Inherit (TRI) options of IEEE Std 1003.1, for Linux,
//! where libc never shipped them.
//!
//! # Roles and modules
//! - **Traced process** ([`traced`]): [`traced::eventid_open`] maps a name
//!   to an event type id; [`traced::trace_event`] records an event into
//!   every stream tracing this process. This is the hot path.
//! - **Controller and analyzer** ([`api`]): attributes ([`TraceAttr`]),
//!   [`api::create`] (with or without log), start/stop/clear/shutdown,
//!   filters ([`EventSet`]), status, the getnext functions, and
//!   [`api::open`] for a pre-recorded log. Functions return `Err(errno)`
//!   where the standard says the C function returns that error number.
//! - **Streams** ([`shm`]): a stream is a shared mapping (memfd or
//!   `/dev/shm` file) holding a header, the event-type table and one
//!   lock-free ring of fixed-size slots per *lane* (threads writing at once
//!   use different lanes); see that module for the protocol.
//! - **Logs** ([`log`]): the versioned, self-describing trace log format
//!   (`docs/posix-trace-log.md`) and its zero-copy reader.
//!
//! # Writing from a preload shim or a malloc hook
//! A controller (another process, e.g. `tracekit posix record`) creates a
//! stream with [`api::create`] for [`api::POSIX_TRACE_ALLPROC`] or a pid,
//! gets its path with [`api::stream_path`] and puts it in the environment
//! variable [`traced::STREAM_ENV`] (`TRACEKIT_POSIX_STREAM`) of the program
//! it starts. In the traced program:
//!
//! ```no_run
//! use tracekit_posix::traced;
//! // Once, from the shim's constructor (it would otherwise happen lazily
//! // on the first event):
//! traced::attach_from_env();
//! // Once per event type (takes a process-local lock; do it at init):
//! let malloc_id = traced::eventid_open(b"malloc").unwrap();
//! // In the hook: no allocation, no lock, no system call.
//! let payload = [0u8; 16];
//! if traced::is_enabled(malloc_id) {
//!     traced::trace_event(malloc_id, &payload);
//! }
//! ```
//!
//! Attaching (`attach_from_env`, `eventid_open`) is init-time work: the
//! first attachment registers a `pthread_atfork` handler (glibc allocates
//! for that) and `eventid_open` takes a process-local lock and scans
//! `/dev/shm`. Call both from the shim's constructor, not from inside a
//! hooked `malloc`; after that the event path below is hook-safe.
//!
//! [`traced::trace_event_at`] never allocates, never locks and never
//! enters the kernel (the exceptions: a writer that finds a
//! `POSIX_TRACE_FLUSH` stream full wakes the flusher and waits on a
//! `futex` for room; a writer whose lane-mate is preempted in the middle
//! of its event yields, then sleeps, and looks at `/proc/PID/stat` every
//! 100 ms, until that event is written, see `producer`), so it is
//! async-signal-safe and fork-safe. Children keep writing after `fork` only if the stream's
//! inheritance is `POSIX_TRACE_INHERITED`. Programs started with `exec`
//! attach again only through the environment variable, and only when the
//! stream's traced pid is theirs or the stream is for all processes.
//!
//! # Fork, exec and process exit
//! - **Controller.** The standard shuts down (as `posix_trace_shutdown`)
//!   the streams a process created when it exits, execs or is terminated,
//!   and its logs are then complete. `exit` does it from an `atexit`
//!   handler; the C library's wrappers of the exec family and of `_exit`
//!   do it right before those calls ([`exec`]; an exec that fails gives
//!   the streams back). A fatal signal runs no code of the controller:
//!   each stream with a log or a `/dev/shm` name has a *keeper* process,
//!   forked at creation, that notices the controller's image is gone (end
//!   of file on a close-on-exec pipe) and finishes the shutdown: stops the
//!   stream, copies what it still holds into the log from where the
//!   controller's last flush left it, marks the log complete, tells
//!   writers the stream is gone and unlinks the name. A stream without log
//!   or name is a memfd that the kernel frees with its last mapping. See
//!   `api`'s `keeper` module.
//! - **Child of a controller** (`fork`): a `trid` is invalid there
//!   (`EINVAL`), and the child does not keep keepers waiting.
//! - **Traced process.** Its event-type table is process memory, so it
//!   does not survive exec (the standard: the new image does not inherit
//!   the name-to-id mapping). The new image is traced into the same stream
//!   again, as the standard says, once it calls `eventid_open`: a stream
//!   created for its pid is found again in `/dev/shm`, one named in
//!   [`traced::STREAM_ENV`] through the inherited environment, an
//!   inherited one (`POSIX_TRACE_INHERITED`) through the descriptor the
//!   exec wrapper passes open ([`traced::INHERIT_ENV`]). After `fork` (and
//!   `posix_spawn`, through its wrapper) the child writes into a parent's
//!   stream only under `POSIX_TRACE_INHERITED`.
//!
//! # Order and loss
//! A log holds its events oldest first. The system events the controller
//! causes (START, STOP, FILTER, FLUSH_START, FLUSH_STOP, ERROR) are written
//! into a ring of their own and merged with the writers' rings by time, so
//! each stands where it happened; those reading produces (OVERFLOW, RESUME,
//! UNTIL_FULL's automatic STOP) stand between the last event before and
//! the first after. Slots are handed back to writers only once their
//! events are in the log file, so a controller killed mid-flush loses
//! nothing. Every loss is counted (`lost_events`, the log header, the
//! overrun status).
//!
//! # Deviations from the standard, decided and documented
//! (`docs/posix-conformance.md` lists each with the test that shows it.)
//! - The getnext functions read streams **without** log only; a stream with
//!   log is drained by its flusher thread into the log (`EINVAL` otherwise).
//! - A writer that finds a `POSIX_TRACE_FLUSH` stream full waits (a futex,
//!   the only system call of the write path) for the flush to free room,
//!   instead of losing the event; it gives up, counted, after 2 s without
//!   progress.
//! - `POSIX_TRACE_OVERFLOW` carries the time of the first event after the
//!   loss (the lost one's time is gone with it).
//! - `{TRACE_SYS_MAX}` counts streams and logs per process, not system-wide.
//! - `timedgetnext_event` on a log behaves like `getnext_event`.
//! - A controller killed by a signal has its streams shut down shortly
//!   *after* (by the keeper). If the keeper cannot be forked (`fork`
//!   fails), the stream works without one and a killed controller leaves
//!   the log up to its last flush, not marked complete, and the
//!   `/dev/shm` name behind. A keeper that is itself killed (e.g. `kill -9`
//!   of the whole session) has the same effect.
//! - The exec, `posix_spawn` and `_exit` wrappers work for programs linked
//!   with the C library before libc; an exec the library does not see
//!   (a raw system call) is handled by the keeper, as a kill is.
//! - `stream-min-size` sizes each lane: one writing thread has exactly
//!   that room; several threads (in different lanes) together have up to
//!   lanes times as much (4 to 16 lanes, one per CPU). Memory is reserved
//!   for every lane but only touched as lanes fill. A stream is *full*
//!   (and, under UNTIL_FULL, suspends itself) when one lane is. Events are
//!   reported in timestamp order across lanes and processes:
//!   `trace_event` reads the clock once its slot is reserved and the
//!   lane's previous slot written (waiting for its writer as long as that
//!   process runs), and the reader looks again at lanes that were empty,
//!   so the merge is exact. (A `no_std` writer that
//!   passes a time read earlier, as the preload shims do, can land behind
//!   an event newer by at most the delay between the two.)
//! - `controller::record` with `inherit` (`tracekit posix record
//!   --inherit`) keeps the stream open until every process that inherited
//!   it has exited, not only the program (see `controller`'s reaper);
//!   with `stop_at_exit` it shuts down at the program's exit and counts
//!   what is written afterwards in the log's header.
//! - Named streams (created for another pid or for all processes) keep
//!   their `/dev/shm` name while the controller lives, because processes
//!   attach to them by name at any time, not only right after creation.

pub mod analysis;
pub mod api;
pub mod attr;
pub mod clock;
pub mod consts;
pub mod controller;
pub mod eventset;
pub mod exec;
pub mod fragments;
pub mod log;
pub mod producer;
pub mod report;
pub mod shm;
pub mod timeline;
pub mod traced;

pub use api::{Errno, ReadEvent, TraceId, Wait};
pub use attr::TraceAttr;
pub use eventset::EventSet;
pub use log::{EventInfo, LogReader, Status};

// `producer` describes the header with opaque blocks for the attributes
// and the calibration; they must have the real types' size and alignment.
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<TraceAttr>() == producer::ATTR_SIZE);
    assert!(size_of::<clock::Calibration>() == producer::CALIBRATION_SIZE);
    assert!(align_of::<TraceAttr>() == 8 && align_of::<clock::Calibration>() == 8);
    assert!(size_of::<shm::StreamHeader>() == size_of::<producer::OpaqueHeader>());
};
