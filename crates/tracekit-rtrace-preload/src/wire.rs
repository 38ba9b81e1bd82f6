//! The recorder's layouts, shared by the shim (compiled on its own, see
//! build.rs) and the recorder: the events and metadata the shim writes into
//! the POSIX trace stream, and the chunks of the per-image files the
//! recorder splits the stream into (header, events sorted by number, maps)
//! for the decoder.

/// Chunk tags (little-endian u32 of the ASCII text).
pub const TAG_HEADER: [u8; 4] = *b"TKHD";
pub const TAG_EVENTS: [u8; 4] = *b"TKEV";
pub const TAG_MAPS: [u8; 4] = *b"TKMP";
/// Event kinds.
pub const KIND_ALLOC: u8 = 1;
pub const KIND_FREE: u8 = 2;
/// A number that was taken but produced no call (failed realloc).
pub const KIND_VOID: u8 = 3;
/// Resource types.
pub const RES_MEMORY: u8 = 0;
pub const RES_FD: u8 = 1;
pub const RES_FP: u8 = 2;
/// Fixed part of an event: kind, res, func, nframes, ts_ms(u32),
/// seq(u64), size(u64), id(u64).
pub const EVENT_FIXED: usize = 32;
/// Function names, indexed by the event's `func` byte.
pub const FUNCTIONS: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "free",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "open",
    "openat",
    "creat",
    "close",
    "dup",
    "dup2",
    "dup3",
    "pipe",
    "pipe2",
    "socket",
    "accept",
    "accept4",
    "fopen",
    "fdopen",
    "fclose",
    "eventfd",
    "timerfd_create",
    "memfd_create",
    "open64",
    "openat64",
    "creat64",
    "fopen64",
];
/// Header chunk payload: pid u32, ppid u32, start time (seconds since
/// the epoch) u64, start monotonic ms u64, backtrace depth u32,
/// modules u32 (bit 0 memory, bit 1 file), then the executable path.
pub const HEADER_FIXED: usize = 32;
pub const MODULE_MEMORY: u32 = 1;
pub const MODULE_FILE: u32 = 2;

use core::ffi::CStr;

/// The environment variable naming the POSIX trace stream (a
/// `tracekit-posix` stream file for all processes) the shim writes into.
pub const STREAM_ENV_C: &CStr = c"TRACEKIT_RTRACE_STREAM";
pub const STREAM_ENV: &str = env_name(STREAM_ENV_C);
/// The environment variable holding the backtrace depth (frames).
pub const DEPTH_ENV_C: &CStr = c"TRACEKIT_RTRACE_DEPTH";
pub const DEPTH_ENV: &str = env_name(DEPTH_ENV_C);
/// The environment variable listing the modules (`memory,file`).
pub const MODULES_ENV_C: &CStr = c"TRACEKIT_RTRACE_MODULES";
pub const MODULES_ENV: &str = env_name(MODULES_ENV_C);

/// A variable's name as the recorder spells it (the shim's `getenv`
/// needs the C string).
const fn env_name(name: &'static CStr) -> &'static str {
    match core::str::from_utf8(name.to_bytes()) {
        Ok(s) => s,
        Err(_) => panic!("environment variable names are ASCII"),
    }
}

/// The user event type of allocation events: the payload is one or more
/// whole events of the layout above (`EVENT_FIXED + 8 * nframes` bytes
/// each), all of one thread in the order it recorded them; the stream's
/// slot header carries the pid and thread.
pub const STREAM_EVENT: &[u8] = b"tracekit.rtrace.event";
/// The user event type of the per-image metadata (the header and the
/// memory maps), sent in fragments: `META_HEAD` bytes (kind, serial,
/// offset, total: u32 each, native order) before each piece: the header
/// of `tracekit_posix::fragments`.
pub const STREAM_META: &[u8] = b"tracekit.rtrace.meta";
pub const META_HEAD: usize = 16;
/// `kind` of a metadata record: the header chunk's payload (starts an
/// image of the slot's pid), or the text of `/proc/self/maps`.
pub const META_HEADER: u32 = 1;
pub const META_MAPS: u32 = 2;
/// The deepest backtrace the recorder asks for (frames).
pub const MAX_DEPTH: usize = 64;
/// The stream's max data size: the shim gathers a thread's events and
/// writes up to this many bytes of them as one stream event (whole events,
/// concatenated); metadata pieces are this size minus `META_HEAD`.
pub const STREAM_MAX_DATA: usize = 4096;
// One event of the deepest backtrace always fits a batch.
const _: () = assert!(EVENT_FIXED + 8 * MAX_DEPTH <= STREAM_MAX_DATA);
