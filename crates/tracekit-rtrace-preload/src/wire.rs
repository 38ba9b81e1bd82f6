//! The recorder's layouts, shared by the shim (compiled on its own, see
//! build.rs) and the recorder: the events and metadata the shim writes into
//! the POSIX trace stream, and the chunks of the per-image files the
//! recorder splits the stream into (header, events sorted by number, maps)
//! for the decoder.

/// Chunk tags (little-endian u32 of the ASCII text). A recording file (one
/// process image; what `record mem --raw` keeps) is a sequence of chunks
/// `[tag: 4 bytes][payload length: u32 LE][payload]`, the first a
/// `TAG_FILE` chunk whose payload starts with the format version u32
/// ([`RAW_VERSION`]); `docs/formats/rtrace.md` §14 has the whole layout.
pub const TAG_FILE: [u8; 4] = *b"TKRT";
/// The version of the recording file's layout (chunks and records) in
/// its `TAG_FILE` chunk.
pub const RAW_VERSION: u32 = 1;
pub const TAG_HEADER: [u8; 4] = *b"TKHD";
pub const TAG_EVENTS: [u8; 4] = *b"TKEV";
pub const TAG_MAPS: [u8; 4] = *b"TKMP";
/// How the image ended: `END_*` u32, status i32 (the decoder uses the
/// last such chunk).
pub const TAG_END: [u8; 4] = *b"TKEN";
/// Record kinds (the first byte of every record in a batch). Records are
/// little-endian and of fixed length per kind ([`record_len`]):
/// * `KIND_ALLOC`, [`ALLOC_LEN`] bytes: kind, res, func, 0, ts_ms u32,
///   seq u64, size u64, id u64, stack u32 (0: no backtrace), 0 u32;
/// * `KIND_FREE`, [`FREE_LEN`] bytes: kind, res, func, 0, ts_ms u32,
///   seq u64, id u64;
/// * `KIND_VOID`, [`VOID_LEN`] bytes: kind, 0, 0, 0, ts_ms u32, seq u64 (a
///   number that was taken but produced no call: a failed realloc);
/// * `KIND_STACK`, [`STACK_HEAD`] + 8 × n bytes: kind, n (frames), 0, 0,
///   stack u32, then n return addresses u64, innermost first. It defines a
///   backtrace that later allocation records of the same thread name by
///   its number (numbers are unique within a process image; a thread
///   defines each backtrace it uses before its first use).
/// * `KIND_MARK`, [`MARK_HEAD`] + n rounded up to a multiple of 8 bytes:
///   kind, mark kind (`MARK_*`), n (bytes of the name kept, at most
///   [`MARK_NAME_MAX`]), 0, ts_ms u32, seq u64, thread id u32 (the
///   kernel's tid), stack u32 (0: no backtrace), the name's length in the
///   program u32 (saturating; more than n: the name was cut), 0 u32, then
///   the n bytes of the name and zeros to the next multiple of 8. A marker
///   the program asked for (`tracekit_mem_mark`, `tracekit_mem_snapshot`
///   of `include/tracekit/mem.h`); it takes an event number like a call.
pub const KIND_ALLOC: u8 = 1;
pub const KIND_FREE: u8 = 2;
pub const KIND_VOID: u8 = 3;
pub const KIND_STACK: u8 = 4;
pub const KIND_MARK: u8 = 5;
pub const MARK_HEAD: usize = 32;
/// The longest name a marker keeps (bytes); a longer one is cut at a UTF-8
/// character boundary at or below this.
pub const MARK_NAME_MAX: usize = 255;
/// Marker kinds: a named point (a phase), and a snapshot (a point at which
/// the report shows the live heap).
pub const MARK_MARK: u8 = 1;
pub const MARK_SNAPSHOT: u8 = 2;
pub const ALLOC_LEN: usize = 40;
pub const FREE_LEN: usize = 24;
pub const VOID_LEN: usize = 16;
pub const STACK_HEAD: usize = 8;
/// Resource types.
pub const RES_MEMORY: u8 = 0;
pub const RES_FD: u8 = 1;
pub const RES_FP: u8 = 2;
/// Anonymous memory mappings (`mmap`, `munmap`, `mremap`), in bytes.
pub const RES_PAGES: u8 = 3;
/// How many resource types there are.
pub const RES_TYPES: usize = 4;

/// The length of the record at the start of `b`, from its first bytes
/// (`None`: an unknown kind, or too few bytes to tell).
#[inline]
pub fn record_len(b: &[u8]) -> Option<usize> {
    match *b.first()? {
        KIND_ALLOC => Some(ALLOC_LEN),
        KIND_FREE => Some(FREE_LEN),
        KIND_VOID => Some(VOID_LEN),
        KIND_STACK => Some(STACK_HEAD + 8 * *b.get(1)? as usize),
        KIND_MARK => Some(MARK_HEAD + (*b.get(2)? as usize).div_ceil(8) * 8),
        _ => None,
    }
}

/// The event number of an allocation, release, void or marker record.
#[inline]
pub fn record_seq(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[8..16]);
    u64::from_le_bytes(a)
}

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
    // Allocators' own entry points (mimalloc's `mi_` API; jemalloc built
    // with the `_rjem_` prefix, as Rust's tikv-jemallocator does).
    "mi_malloc",
    "mi_calloc",
    "mi_zalloc",
    "mi_realloc",
    "mi_reallocf",
    "mi_free",
    "mi_malloc_aligned",
    "mi_zalloc_aligned",
    "mi_calloc_aligned",
    "mi_strdup",
    "mi_strndup",
    "mi_mallocn",
    "mi_reallocn",
    "mi_free_size",
    "_rjem_malloc",
    "_rjem_calloc",
    "_rjem_realloc",
    "_rjem_free",
    "_rjem_mallocx",
    "_rjem_rallocx",
    "_rjem_sdallocx",
    "_rjem_dallocx",
    "_rjem_posix_memalign",
    "_rjem_aligned_alloc",
    // Anonymous mappings (the `pages` module).
    "mmap",
    "mmap64",
    "munmap",
    "mremap",
];
/// Header chunk payload: pid u32, ppid u32, start time (seconds since
/// the epoch) u64, start monotonic ms u64, backtrace depth u32,
/// modules u32 (bit 0 memory, bit 1 file, and the `MODULE_*` flags below), the image's nonce u64 (names
/// its spill file), then the executable path.
pub const HEADER_FIXED: usize = 40;
pub const MODULE_MEMORY: u32 = 1;
pub const MODULE_FILE: u32 = 2;
/// Anonymous memory mappings made by the program (`pages`).
pub const MODULE_PAGES: u32 = 4;
/// Bits 8-15 of the header's modules word: the signal that turns
/// recording on and off in this image (`record mem --toggle-signal`; 0:
/// none). While recording is paused, allocations are not recorded and
/// releases still are, so a block allocated while recording and freed
/// while paused is not a leak; a release of a block the recording never
/// saw allocated is one allocated while paused.
pub const MODULE_TOGGLE_SHIFT: u32 = 8;
pub const MODULE_TOGGLE_MASK: u32 = 0xff << MODULE_TOGGLE_SHIFT;
/// Header modules bit: the toggle signal already had a handler or was
/// ignored when the image started, so the shim installed none (the
/// signal does not toggle this image).
pub const MODULE_TOGGLE_REFUSED: u32 = 1 << 16;
/// Header modules bit: the image started paused (`--paused`).
pub const MODULE_STARTED_PAUSED: u32 = 1 << 17;
/// Header modules bit, set by the recorder (never the shim): the image's
/// executable defines allocator functions itself (a statically linked
/// allocator: `malloc`, `_rjem_malloc`, `mi_malloc`, ...). Its calls to
/// them do not go through the dynamic linker, so LD_PRELOAD cannot see
/// them: those allocations are missing from the recording.
pub const MODULE_HIDDEN_ALLOCATOR: u32 = 1 << 31;
/// Header flag (with the modules): the shim was loaded into a running
/// process (`record mem -p`), so blocks allocated before it are unknown
/// and their frees are frees of blocks allocated before recording.
pub const MODULE_ATTACHED: u32 = 1 << 18;

use core::ffi::CStr;

/// The environment variable naming the POSIX trace stream (a
/// `tracekit-posix` stream file for all processes) the shim writes into.
pub const STREAM_ENV_C: &CStr = c"TRACEKIT_RTRACE_STREAM";
pub const STREAM_ENV: &str = env_name(STREAM_ENV_C);
/// The environment variable holding the spill files' path prefix (see
/// [`SPILL_MAGIC`]).
pub const SPILL_ENV_C: &CStr = c"TRACEKIT_RTRACE_SPILL";
pub const SPILL_ENV: &str = env_name(SPILL_ENV_C);
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
/// whole records of the layout above, all of one thread in the order it
/// recorded them; the stream's slot header carries the pid and thread.
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
// A backtrace definition of the deepest backtrace and its allocation
// always fit a batch.
const _: () = assert!(STACK_HEAD + 8 * MAX_DEPTH + ALLOC_LEN <= STREAM_MAX_DATA);
// So do a backtrace definition and the longest marker record.
const _: () = assert!(
    STACK_HEAD + 8 * MAX_DEPTH + MARK_HEAD + MARK_NAME_MAX.div_ceil(8) * 8 <= STREAM_MAX_DATA
);

/// A process image's spill file, `<prefix>.<nonce as 16 hex digits>`: a
/// shared mapping that holds the image's per-thread batches while they
/// fill, so that what a killed process recorded but had not yet sent can
/// be read after it is gone. Little-endian. The header (one page):
/// magic u32, version u32, pid u32, 0 u32, nonce u64, batches u32 (how
/// many are in use), end u32 (an `END_*`), status i32 (with `END_EXIT`).
/// Then `batches` batches of [`SPILL_BATCH`] bytes each: 8 bytes the
/// recorder ignores, lock u32, 4 bytes, owner thread u64, len u64 (the
/// bytes of whole records in `data` not yet sent), data.
pub const SPILL_MAGIC: u32 = u32::from_le_bytes(*b"TKSP");
pub const SPILL_VERSION: u32 = 1;
pub const SPILL_HEADER: usize = 4096;
pub const SPILL_BATCH_HEAD: usize = 32;
pub const SPILL_BATCH: usize = SPILL_BATCH_HEAD + STREAM_MAX_DATA;
/// How an image ended, as the shim saw it (`END_NONE`: it saw no end:
/// killed by a signal or crashed).
pub const END_NONE: u32 = 0;
/// Replaced by `exec`.
pub const END_EXEC: u32 = 1;
/// `exit`, `_exit` or `_Exit` with the status.
pub const END_EXIT: u32 = 2;
/// Its exit handlers ran (returned from `main`): status unknown to the shim.
pub const END_EXITED: u32 = 3;
/// Killed by the signal in the status (only the recorder, which waits for
/// the command, writes this).
pub const END_SIGNAL: u32 = 4;
