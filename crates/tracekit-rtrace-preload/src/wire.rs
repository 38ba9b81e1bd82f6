//! Layout of the recorder's output, shared by the shim (compiled on its
//! own, see build.rs) and the decoder.

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
