//! The interposed functions and the recording machinery (see the crate
//! documentation for the rules they follow).

use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use core::ptr::{self, null_mut};
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

use crate::consts;
use crate::libc;
use crate::producer::{self, OpaqueHeader, Outcome};
use crate::wire::*;
use crate::{arena, stacks, unwind};

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
const DISABLED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static SEQ: AtomicU64 = AtomicU64::new(0);
static DEPTH: AtomicUsize = AtomicUsize::new(10);
static MODULES: AtomicU32 = AtomicU32::new(MODULE_MEMORY);
/// Recording paused (`record mem --toggle-signal`): allocations are not
/// recorded, releases still are. Flipped by the toggle signal's handler
/// (an atomic store is all it does: async-signal-safe).
static PAUSED: AtomicBool = AtomicBool::new(false);
/// The mapped stream (set once at initialisation, kept across fork; a new
/// image maps it again) and our two event types in it.
static STREAM: AtomicPtr<OpaqueHeader> = AtomicPtr::new(null_mut());
static EVENT_ID: AtomicU32 = AtomicU32::new(0);
static META_ID: AtomicU32 = AtomicU32::new(0);
/// The stream's raw clock kind (its calibration), for the slot timestamps
/// the consumer merges its lanes by.
static CLOCK_KIND: AtomicU32 = AtomicU32::new(0);
/// `getpid()` cached (glibc makes it a system call): set at
/// initialisation and in the fork child.
static PID: AtomicI32 = AtomicI32::new(0);
/// Numbers this image's metadata records (fragment reassembly key).
static META_SERIAL: AtomicU32 = AtomicU32::new(0);
/// Set when a wait for the reader timed out: the recorder is gone or
/// stuck, so later events no longer wait (they are lost and counted).
static READER_GONE: AtomicBool = AtomicBool::new(false);
/// Bytes of events a thread gathers before writing them as one stream
/// event: the stream's max data size, at most [`BATCH_CAP`].
static BATCH_LIMIT: AtomicUsize = AtomicUsize::new(0);
static BATCHES: AtomicPtr<Batch> = AtomicPtr::new(null_mut());
/// This image's spill file mapping (see `wire::SPILL_MAGIC`): batches live
/// there, where the recorder can read them after a crash. Null: batches
/// come from private mappings (no spill file could be made).
static SPILL: AtomicPtr<u8> = AtomicPtr::new(null_mut());
/// Batches the spill file has room for.
const SPILL_BATCHES: usize = SLOTS_N;
const SPILL_LEN: usize = SPILL_HEADER + SPILL_BATCHES * SPILL_BATCH;
/// Names this image's spill file and travels in its header.
static NONCE: AtomicU64 = AtomicU64::new(0);
/// TSC calibration for [`now_ms`]: a (TSC, CLOCK_MONOTONIC ns) pair taken
/// at initialisation, the measured ns per tick (32.32 fixed point, 0 until
/// measured) and the ticks after which a thread reads the clock again.
static CAL_TSC: AtomicU64 = AtomicU64::new(0);
static CAL_NS: AtomicU64 = AtomicU64::new(0);
static TSC_RATE: AtomicU64 = AtomicU64::new(0);
static TSC_REANCHOR: AtomicU64 = AtomicU64::new(0);

/// Per-thread state without thread-local storage: a TLS segment in this
/// library would enlarge every thread's DTV (an allocation the traced
/// program makes) and so change what it allocates. Threads are told apart
/// by `pthread_self()`, the address of their descriptor; a reused
/// descriptor is a reused stack, so the cached bounds stay right.
pub(crate) struct Slot {
    key: AtomicUsize,
    pub(crate) guard: AtomicBool,
    batch: AtomicPtr<Batch>,
    /// The thread's last clock reading and the TSC then (see `now_ms`).
    anchor_tsc: AtomicU64,
    anchor_ns: AtomicU64,
    lo: AtomicUsize,
    hi: AtomicUsize,
    /// The unwinder's per-thread state (rule cache, busy flag).
    unw: unwind::ThreadUnwind,
    /// The backtraces this thread has defined.
    stacks: AtomicPtr<stacks::StackTable>,
}

const SLOTS_N: usize = 16384;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    key: AtomicUsize::new(0),
    guard: AtomicBool::new(false),
    batch: AtomicPtr::new(null_mut()),
    anchor_tsc: AtomicU64::new(0),
    anchor_ns: AtomicU64::new(0),
    lo: AtomicUsize::new(0),
    hi: AtomicUsize::new(0),
    unw: unwind::ThreadUnwind::new(),
    stacks: AtomicPtr::new(null_mut()),
};
static SLOTS: [Slot; SLOTS_N] = [EMPTY_SLOT; SLOTS_N];
/// Threads that found no free slot (they are not recorded).
static NO_SLOT: AtomicU64 = AtomicU64::new(0);

/// `pthread_self()` without the call: glibc keeps the thread descriptor's
/// own address at `%fs:0x10` (its `header.self`), which is what
/// `pthread_self` returns.
#[inline(always)]
fn thread_self() -> usize {
    let v: usize;
    // SAFETY: reads one word of the thread control block, set up by the
    // dynamic loader before any code of ours runs.
    unsafe {
        core::arch::asm!("mov {}, qword ptr fs:[0x10]", out(reg) v, options(nostack, readonly, preserves_flags))
    };
    v
}

#[inline(always)]
fn slot() -> Option<&'static Slot> {
    let me = thread_self();
    let start = (me >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 14);
    for probe in 0..64 {
        let s = &SLOTS[(start + probe) & (SLOTS_N - 1)];
        let k = s.key.load(Ordering::Acquire);
        if k == me {
            return Some(s);
        }
        if k == 0 {
            match s
                .key
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(s),
                Err(k) if k == me => return Some(s),
                Err(_) => {}
            }
        }
    }
    NO_SLOT.fetch_add(1, Ordering::Relaxed);
    None
}

/// Inside our own code on this thread? (No slot: behave as if, so that
/// nothing is recorded.)
#[inline(always)]
fn guarded() -> bool {
    match slot() {
        Some(s) => s.guard.load(Ordering::Relaxed),
        None => true,
    }
}

/// Visits the unwinding state of every thread that has a slot.
pub fn each_thread(f: &mut dyn FnMut(&unwind::ThreadUnwind)) {
    for s in SLOTS.iter() {
        if s.key.load(Ordering::Acquire) != 0 {
            f(&s.unw);
        }
    }
}

fn set_guard(on: bool) {
    if let Some(s) = slot() {
        s.guard.store(on, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------
// Real functions

macro_rules! real_fns {
    ($($slot:ident $name:literal : $ty:ty;)*) => {
        $(static $slot: AtomicUsize = AtomicUsize::new(0);)*
        /// Resolves every real function once, at initialisation.
        unsafe fn resolve_all() {
            $(resolve(&$slot, $name);)*
        }
    };
}

real_fns! {
    R_MALLOC c"malloc": MallocFn;
    R_CALLOC c"calloc": CallocFn;
    R_REALLOC c"realloc": ReallocFn;
    R_REALLOCARRAY c"reallocarray": ReallocarrayFn;
    R_FREE c"free": FreeFn;
    R_POSIX_MEMALIGN c"posix_memalign": PosixMemalignFn;
    R_ALIGNED_ALLOC c"aligned_alloc": AlignedFn;
    R_MEMALIGN c"memalign": AlignedFn;
    R_VALLOC c"valloc": MallocFn;
    R_PVALLOC c"pvalloc": MallocFn;
    R_OPEN c"open": OpenFn;
    R_OPEN64 c"open64": OpenFn;
    R_OPENAT c"openat": OpenatFn;
    R_OPENAT64 c"openat64": OpenatFn;
    R_CREAT c"creat": CreatFn;
    R_CREAT64 c"creat64": CreatFn;
    R_CLOSE c"close": IntFn;
    R_DUP c"dup": IntFn;
    R_DUP2 c"dup2": Dup2Fn;
    R_DUP3 c"dup3": Dup3Fn;
    R_PIPE c"pipe": PipeFn;
    R_PIPE2 c"pipe2": Pipe2Fn;
    R_SOCKET c"socket": SocketFn;
    R_ACCEPT c"accept": AcceptFn;
    R_ACCEPT4 c"accept4": Accept4Fn;
    R_FOPEN c"fopen": FopenFn;
    R_FOPEN64 c"fopen64": FopenFn;
    R_FDOPEN c"fdopen": FdopenFn;
    R_FCLOSE c"fclose": FcloseFn;
    R_EVENTFD c"eventfd": EventfdFn;
    R_TIMERFD c"timerfd_create": Dup2Fn;
    R_MEMFD c"memfd_create": MemfdFn;
    R_EXECVE c"execve": ExecveFn;
    R_EXECV c"execv": ExecvFn;
    R_EXECVP c"execvp": ExecvFn;
    R_EXECVPE c"execvpe": ExecveFn;
    R_EXECL c"execl": ExecvFn;
    R_EXECLE c"execle": ExecvFn;
    R_EXECLP c"execlp": ExecvFn;
    R_EXIT c"_exit": ExitFn;
    R_EXIT2 c"_Exit": ExitFn;
    R_DLCLOSE c"dlclose": DlcloseFn;
    R_EXIT3 c"exit": ExitFn;
}

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type ReallocarrayFn = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type PosixMemalignFn = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;
type AlignedFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;
type CreatFn = unsafe extern "C" fn(*const c_char, c_uint) -> c_int;
type IntFn = unsafe extern "C" fn(c_int) -> c_int;
type Dup2Fn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type Dup3Fn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type PipeFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type Pipe2Fn = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type SocketFn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type AcceptFn = unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int;
type Accept4Fn = unsafe extern "C" fn(c_int, *mut c_void, *mut c_void, c_int) -> c_int;
type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut c_void;
type FdopenFn = unsafe extern "C" fn(c_int, *const c_char) -> *mut c_void;
type FcloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type EventfdFn = unsafe extern "C" fn(c_uint, c_int) -> c_int;
type MemfdFn = unsafe extern "C" fn(*const c_char, c_uint) -> c_int;
type ExecveFn =
    unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type ExecvFn = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;
type ExitFn = unsafe extern "C" fn(c_int) -> !;
type DlcloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;

pub(crate) unsafe fn resolve(slot: &AtomicUsize, name: &CStr) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p != 0 {
        return p;
    }
    // Loaded late by `record mem -p` (see `attach`), the shim is no
    // interposer: the global scope's definition is the real one.
    let handle = if crate::attach::attached() {
        core::ptr::null_mut()
    } else {
        libc::RTLD_NEXT
    };
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the
    // definition after ours (libc's).
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) } as usize;
    slot.store(p, Ordering::Release);
    p
}

/// The real function in `slot`, resolving it on first use. A missing
/// symbol is fatal only when it is actually called.
macro_rules! real {
    ($slot:ident, $name:literal, $ty:ty) => {{
        let mut p = $slot.load(Ordering::Acquire);
        if p == 0 {
            // SAFETY: see `resolve`.
            p = unsafe { resolve(&$slot, $name) };
            if p == 0 {
                die(concat!(
                    "tracekit preload: no next definition of ",
                    stringify!($slot),
                    "\n"
                ));
            }
        }
        // SAFETY: dlsym returned the next definition of this C function,
        // whose prototype is `$ty`.
        unsafe { core::mem::transmute::<usize, $ty>(p) }
    }};
}

pub(crate) use real;

pub(crate) fn die(msg: &str) -> ! {
    // SAFETY: write(2) of a valid buffer, then abort.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

// ---------------------------------------------------------------------
// Bootstrap arena: serves allocations made while dlsym looks up malloc.

const ARENA: usize = 64 * 1024;
static mut ARENA_MEM: [u8; ARENA] = [0; ARENA];
static ARENA_USED: AtomicUsize = AtomicUsize::new(0);

fn arena_base() -> usize {
    ptr::addr_of!(ARENA_MEM) as usize
}

fn in_arena(p: *mut c_void) -> bool {
    let a = p as usize;
    a >= arena_base() && a < arena_base() + ARENA
}

fn arena_alloc(size: usize) -> *mut c_void {
    let size = (size + 15) & !15;
    let off = ARENA_USED.fetch_add(size, Ordering::Relaxed);
    if off + size > ARENA {
        return null_mut();
    }
    (arena_base() + off) as *mut c_void
}

// ---------------------------------------------------------------------
// Initialisation

/// Whether recording is on for `module` (see [`recording_slot`]).
#[inline(always)]
fn enabled(module: u32) -> bool {
    recording_slot(module).is_some()
}

/// This thread's slot when recording is on for `module`, initialising on
/// first use; `None` inside our own code (guard), during initialisation,
/// when disabled, or without a slot. The hottest hooks keep the slot so
/// that the event's record does not look it up a second time
/// ([`record_in`]).
#[inline(always)]
pub(crate) fn recording_slot(module: u32) -> Option<&'static Slot> {
    if PAUSED.load(Ordering::Relaxed) {
        // Still initialise: the image gets its header.
        let _ = STATE.load(Ordering::Acquire) == READY || init_slow();
        return None;
    }
    release_slot(module)
}

/// [`recording_slot`] for a release: releases are recorded while
/// recording is paused too (a block allocated while recording and freed
/// while paused is not a leak).
#[inline(always)]
pub(crate) fn release_slot(module: u32) -> Option<&'static Slot> {
    let state = STATE.load(Ordering::Acquire);
    if state != READY && !init_slow() {
        return None;
    }
    if MODULES.load(Ordering::Relaxed) & module == 0 {
        return None;
    }
    let s = slot()?;
    (!s.guard.load(Ordering::Relaxed)).then_some(s)
}

/// Whether a release of `module` is recorded (see [`release_slot`]).
#[inline(always)]
fn release_enabled(module: u32) -> bool {
    release_slot(module).is_some()
}

/// Runs the allocator (the real function a hook calls) with this thread's
/// guard set when recording (`slot`; otherwise the guard is left as it
/// is: it may be an outer one), so that what the allocator calls through
/// the PLT passes through: an override layer's `malloc` calling
/// `mi_malloc`, `mi_realloc` freeing with `mi_free`, glibc's
/// `reallocarray` calling `realloc`, an allocator's own `open` or `mmap`.
/// One call of the program is one record, under the function it called.
#[inline(always)]
pub(crate) fn inside<T>(slot: Option<&Slot>, f: impl FnOnce() -> T) -> T {
    if let Some(s) = slot {
        s.guard.store(true, Ordering::Relaxed);
    }
    let r = f();
    if let Some(s) = slot {
        s.guard.store(false, Ordering::Relaxed);
    }
    r
}

/// The toggle signal's handler: flips [`PAUSED`], nothing else.
extern "C" fn on_toggle(_sig: c_int) {
    PAUSED.fetch_xor(true, Ordering::Relaxed);
}

/// Installs the toggle signal's handler unless the signal already has a
/// disposition (a handler, or ignored): the program's own use of the
/// signal wins. Returns whether it was installed.
unsafe fn install_toggle(sig: c_int) -> bool {
    let mut old = libc::sigaction_t::default();
    // SAFETY: querying the current disposition into our own struct.
    if unsafe { libc::sigaction(sig, ptr::null(), &mut old) } != 0
        || old.sa_handler != libc::SIG_DFL
    {
        return false;
    }
    let act = libc::sigaction_t {
        sa_handler: on_toggle as extern "C" fn(c_int) as usize,
        sa_flags: libc::SA_RESTART,
        ..Default::default()
    };
    // SAFETY: a valid struct; the handler only flips an atomic.
    unsafe { libc::sigaction(sig, &act, ptr::null_mut()) == 0 }
}

#[cold]
fn init_slow() -> bool {
    match STATE.compare_exchange(UNINIT, INITIALIZING, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            set_guard(true);
            // SAFETY: runs once, before any recording.
            let ok = unsafe { initialise() };
            set_guard(false);
            STATE.store(if ok { READY } else { DISABLED }, Ordering::Release);
            ok
        }
        Err(READY) => true,
        Err(DISABLED) => false,
        Err(_) => {
            if guarded() {
                // Re-entered from our own initialisation.
                return false;
            }
            // Another thread initialises: wait for it.
            loop {
                match STATE.load(Ordering::Acquire) {
                    READY => return true,
                    DISABLED => return false,
                    _ => core::hint::spin_loop(),
                }
            }
        }
    }
}

unsafe fn getenv(name: &CStr) -> Option<&'static [u8]> {
    if crate::attach::attached() {
        // Attached: the recorder's settings came with the attach call.
        return crate::attach::setting(name);
    }
    // SAFETY: getenv with a NUL-terminated name; the result lives as long
    // as the environment entry (we copy what we keep).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        None
    } else {
        // SAFETY: getenv returns a NUL-terminated string.
        Some(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

fn parse_usize(s: &[u8]) -> Option<usize> {
    let mut v: usize = 0;
    if s.is_empty() {
        return None;
    }
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as usize)?;
    }
    Some(v)
}

unsafe fn initialise() -> bool {
    // SAFETY: resolving symbols; allocations dlsym makes meanwhile come
    // from the bootstrap arena (the guard is set).
    unsafe { resolve_all() };
    // SAFETY: reading the environment.
    if let Some(d) = unsafe { getenv(DEPTH_ENV_C) }.and_then(parse_usize) {
        DEPTH.store(d.min(MAX_DEPTH), Ordering::Relaxed);
    }
    // SAFETY: reading the environment.
    if let Some(m) = unsafe { getenv(MODULES_ENV_C) } {
        let mut mask = 0;
        let mut toggle = 0;
        let mut paused = false;
        for part in m.split(|&b| b == b',') {
            match part {
                b"memory" => mask |= MODULE_MEMORY,
                b"file" => mask |= MODULE_FILE,
                b"pages" => mask |= MODULE_PAGES,
                b"attached" => mask |= MODULE_ATTACHED,
                b"paused" => paused = true,
                _ => {
                    if let Some(n) = part.strip_prefix(b"toggle=").and_then(parse_usize) {
                        toggle = n.min(255) as u32;
                    }
                }
            }
        }
        if toggle > 0 {
            mask |= toggle << MODULE_TOGGLE_SHIFT;
            // SAFETY: sigaction with our own structs.
            if unsafe { install_toggle(toggle as c_int) } {
                if paused {
                    mask |= MODULE_STARTED_PAUSED;
                    PAUSED.store(true, Ordering::Relaxed);
                }
            } else {
                mask |= MODULE_TOGGLE_REFUSED;
            }
        }
        MODULES.store(mask, Ordering::Relaxed);
    }
    // SAFETY: getpid cannot fail.
    PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    // SAFETY: mapping the recorder's stream, then registering the fork
    // handler.
    unsafe {
        if !map_stream() {
            return false;
        }
        libc::pthread_atfork(None, None, Some(after_fork_child));
        map_spill();
        send_header();
        // Maps now too: a process that dies by a signal still gets the
        // maps of its start (the recorder keeps the last snapshot).
        send_maps();
    }
    true
}

/// Maps the stream named by `$TRACEKIT_RTRACE_STREAM` (raw system calls:
/// no hook, no descriptor left open for the program to see). Fails unless
/// it is a valid stream for all processes with both our event types
/// registered.
unsafe fn map_stream() -> bool {
    use core::ffi::c_long;
    // SAFETY: reading the environment.
    let Some(path) = (unsafe { getenv(STREAM_ENV_C) }) else {
        return false;
    };
    let mut buf = [0u8; 4096];
    if path.is_empty() || path.len() >= buf.len() {
        return false;
    }
    buf[..path.len()].copy_from_slice(path);
    // SAFETY: NUL-terminated path; our own descriptor, closed below; the
    // mapping is checked before it is used.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD as c_long,
            buf.as_ptr(),
            (libc::O_RDWR | libc::O_CLOEXEC) as c_long,
        );
        if fd < 0 {
            return false;
        }
        let len = libc::syscall(libc::SYS_lseek, fd, 0 as c_long, libc::SEEK_END as c_long);
        let ok_len = len >= producer::header_size() as c_long;
        let m = if ok_len {
            libc::mmap(
                null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd as c_int,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::syscall(libc::SYS_close, fd);
        if m == libc::MAP_FAILED {
            return false;
        }
        let len = len as usize;
        let h = &*(m as *const OpaqueHeader);
        let who = h.traced_pid.load(Ordering::Relaxed);
        let ids = if producer::is_valid(h, len) && who == -1 {
            producer::lookup(h, STREAM_EVENT).zip(producer::lookup(h, STREAM_META))
        } else {
            None
        };
        let Some((event_id, meta_id)) = ids else {
            libc::munmap(m, len);
            return false;
        };
        let room = h.max_data_size as usize;
        if room <= META_HEAD + 64 || room < STACK_HEAD + ALLOC_LEN {
            libc::munmap(m, len);
            return false;
        }
        // Never write a record the stream would truncate: fewer frames.
        let fit = (room - STACK_HEAD - ALLOC_LEN) / 8;
        if DEPTH.load(Ordering::Relaxed) > fit {
            DEPTH.store(fit, Ordering::Relaxed);
        }
        BATCH_LIMIT.store(room.min(BATCH_CAP), Ordering::Relaxed);
        let c = &h.calibration.0;
        let kind = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        CLOCK_KIND.store(kind, Ordering::Relaxed);
        if kind == producer::CLOCK_TSC {
            CAL_NS.store(mono_ns(), Ordering::Relaxed);
            CAL_TSC.store(producer::raw_now(kind), Ordering::Relaxed);
        }
        EVENT_ID.store(event_id, Ordering::Relaxed);
        META_ID.store(meta_id, Ordering::Relaxed);
        STREAM.store(m as *mut OpaqueHeader, Ordering::Release);
    }
    true
}

/// Writes one stream event with the concatenation of `parts`. A full
/// stream (UNTIL_FULL suspends itself until the recorder has drained it
/// and restarts it) is waited for, then the write retried; only if the
/// recorder makes no progress for [`WAIT_LIMIT_NS`] is the event given up
/// (the stream counts it lost, the decoder sees the gap in the numbers).
/// No system call unless waiting; errno preserved.
#[inline(always)]
fn send(id: u32, parts: &[&[u8]]) -> bool {
    // SAFETY: pthread_self only reads the thread pointer.
    send_as(id, parts, unsafe { libc::pthread_self() } as u64)
}

/// [`send`] on behalf of `thread` (a batch written out by another thread
/// at exit keeps its owner).
#[inline(always)]
fn send_as(id: u32, parts: &[&[u8]], thread: u64) -> bool {
    let h = STREAM.load(Ordering::Acquire);
    if h.is_null() {
        return false;
    }
    // SAFETY: STREAM is a valid stream mapping, never unmapped.
    let h = unsafe { &*h };
    let pid = PID.load(Ordering::Relaxed);
    // The clock is read once the slot is reserved (Stamp::Now): what keeps
    // a lane shared by several threads in time order.
    let stamp = producer::Stamp::Now(CLOCK_KIND.load(Ordering::Relaxed));
    // SAFETY: `h` is a valid stream mapping (checked by map_stream).
    match unsafe { producer::write_event(h, id, parts, pid, thread, stamp) } {
        Outcome::Written => true,
        // Not admitted: the stream is not running. The recorder never
        // filters or stops it before shutting it down, so this is a stream
        // suspended because it was full: wait like for room.
        Outcome::NotAdmitted | Outcome::Lost { .. } => send_after_wait(h, id, parts, pid, thread),
    }
}

const WAIT_LIMIT_NS: u64 = 10_000_000_000;

#[cold]
#[inline(never)]
fn send_after_wait(h: &OpaqueHeader, id: u32, parts: &[&[u8]], pid: i32, thread: u64) -> bool {
    use core::ffi::c_long;
    // SAFETY: errno location is valid; restored below.
    let errno = unsafe { *libc::__errno_location() };
    let running = consts::POSIX_TRACE_RUNNING as u32;
    // The limit counts from the reader's last progress, not from the start
    // of the wait: a writer that keeps losing the race for room while the
    // recorder drains normally must not give up.
    let mut start = mono_ns();
    let mut drained = consumed(h);
    let mut written = false;
    let mut spins = 0u32;
    while !READER_GONE.load(Ordering::Relaxed) {
        if h.shutdown.load(Ordering::Acquire) != 0 {
            // The recorder has finished: nothing to wait for.
            break;
        }
        if h.running.0.load(Ordering::Acquire) == running {
            let stamp = producer::Stamp::Now(CLOCK_KIND.load(Ordering::Relaxed));
            // SAFETY: as in `send`.
            if let Outcome::Written =
                unsafe { producer::write_event(h, id, parts, pid, thread, stamp) }
            {
                written = true;
                break;
            }
        }
        let now = consumed(h);
        if now != drained {
            drained = now;
            start = mono_ns();
        } else if mono_ns().wrapping_sub(start) > WAIT_LIMIT_NS {
            READER_GONE.store(true, Ordering::Relaxed);
            break;
        }
        spins += 1;
        if spins < 4 {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::syscall(libc::SYS_sched_yield) };
        } else {
            // The reader needs the CPU more than we do: naps of 50 µs,
            // doubling up to 800 µs. A full stream stays suspended until
            // the recorder has drained all of it (milliseconds); waking
            // every 50 µs in every waiting thread took CPU from the
            // recorder on a loaded machine and prolonged the wait.
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000 << (spins - 4).min(4),
            };
            // SAFETY: valid timespec; no remainder pointer.
            unsafe {
                libc::syscall(
                    libc::SYS_nanosleep,
                    &ts as *const libc::timespec,
                    null_mut::<c_void>() as c_long,
                )
            };
        }
    }
    // SAFETY: restore errno for the caller.
    unsafe { *libc::__errno_location() = errno };
    written
}

/// How many slots the reader has finished with, over all lanes: changes
/// whenever the recorder makes progress.
fn consumed(h: &OpaqueHeader) -> u64 {
    let lanes = (h.lanes as usize).min(producer::MAX_LANES);
    h.lane[..lanes].iter().fold(0u64, |sum, l| {
        sum.wrapping_add(l.head.0.load(Ordering::Acquire))
    })
}

/// Sends one metadata record (`kind`, `data`) in pieces that fit the
/// stream's events, each behind the fragment header of `wire::META_HEAD`.
fn send_meta(kind: u32, data: &[u8]) {
    let h = STREAM.load(Ordering::Acquire);
    if h.is_null() {
        return;
    }
    // SAFETY: a valid stream mapping.
    let room = unsafe { (*h).max_data_size } as usize - META_HEAD;
    let serial = META_SERIAL.fetch_add(1, Ordering::Relaxed);
    let id = META_ID.load(Ordering::Relaxed);
    let mut off = 0;
    loop {
        let n = (data.len() - off).min(room);
        let mut head = [0u8; META_HEAD];
        head[0..4].copy_from_slice(&kind.to_ne_bytes());
        head[4..8].copy_from_slice(&serial.to_ne_bytes());
        head[8..12].copy_from_slice(&(off as u32).to_ne_bytes());
        head[12..16].copy_from_slice(&(data.len() as u32).to_ne_bytes());
        if !send(id, &[&head, &data[off..off + n]]) {
            // The rest is useless without this piece; the recorder
            // reports the incomplete record.
            return;
        }
        off += n;
        if off >= data.len() {
            return;
        }
    }
}

/// Creates this image's spill file (`$TRACEKIT_RTRACE_SPILL.<nonce>`,
/// raw system calls, no descriptor left open) and maps it; batches are
/// then carved from it. Without it, batches are private memory and a
/// killed process loses what it had not sent.
unsafe fn map_spill() {
    use core::ffi::c_long;
    // A new image (or a fork child): forget the batches of the last one.
    SPILL.store(null_mut(), Ordering::Release);
    // SAFETY: clock_gettime into a valid timespec.
    let nonce = mono_ns().wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (PID.load(Ordering::Relaxed) as u64).rotate_left(32);
    NONCE.store(nonce, Ordering::Relaxed);
    // SAFETY: reading the environment.
    let Some(prefix) = (unsafe { getenv(SPILL_ENV_C) }) else {
        return;
    };
    let mut path = [0u8; 4096];
    if prefix.is_empty() || prefix.len() + 18 >= path.len() {
        return;
    }
    path[..prefix.len()].copy_from_slice(prefix);
    path[prefix.len()] = b'.';
    for i in 0..16 {
        let d = (nonce >> (60 - 4 * i)) & 0xf;
        path[prefix.len() + 1 + i] = b"0123456789abcdef"[d as usize];
    }
    // SAFETY: NUL-terminated path; our own descriptor, closed below.
    unsafe {
        const O_CREAT: c_long = 0o100;
        const O_EXCL: c_long = 0o200;
        let fd = libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD as c_long,
            path.as_ptr(),
            (libc::O_RDWR | libc::O_CLOEXEC) as c_long | O_CREAT | O_EXCL,
            0o600 as c_long,
        );
        if fd < 0 {
            return;
        }
        let ok = libc::syscall(libc::SYS_ftruncate, fd, SPILL_LEN as c_long) == 0;
        let m = if ok {
            libc::mmap(
                null_mut(),
                SPILL_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd as c_int,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::syscall(libc::SYS_close, fd);
        if m == libc::MAP_FAILED {
            return;
        }
        let h = m as *mut u8;
        h.add(8)
            .cast::<u32>()
            .write(PID.load(Ordering::Relaxed) as u32);
        h.add(16).cast::<u64>().write(nonce);
        h.add(4).cast::<u32>().write(SPILL_VERSION);
        (*spill_word(h, 0)).store(SPILL_MAGIC, Ordering::Release);
        SPILL.store(h, Ordering::Release);
    }
}

/// The u32 at `at` in the spill header, as an atomic.
fn spill_word(h: *mut u8, at: usize) -> *const AtomicU32 {
    h.wrapping_add(at).cast::<AtomicU32>()
}

/// Notes how the image ends in its spill header (`END_*`, status). An
/// `exit` status is not replaced by the exit handlers' plainer "exited".
fn note_end(end: u32, status: i32) {
    let h = SPILL.load(Ordering::Acquire);
    if h.is_null() {
        return;
    }
    // SAFETY: the spill header is mapped for the life of the image.
    unsafe {
        let cur = (*spill_word(h, 28)).load(Ordering::Relaxed);
        if end == END_EXITED && cur == END_EXIT {
            return;
        }
        (*spill_word(h, 32)).store(status as u32, Ordering::Relaxed);
        (*spill_word(h, 28)).store(end, Ordering::Release);
    }
}

/// Before an exec: the image ends by it, unless this is a vfork child
/// (it shares our memory, and the image that ends is its own).
fn note_exec() {
    // SAFETY: getpid cannot fail.
    if unsafe { libc::getpid() } == PID.load(Ordering::Relaxed) {
        note_end(END_EXEC, 0);
    }
}

/// [`note_end`] `to` if the image's end is `from`.
fn note_end_if(from: u32, to: u32) {
    let h = SPILL.load(Ordering::Acquire);
    // SAFETY: the spill header is mapped for the life of the image.
    if !h.is_null() && unsafe { (*spill_word(h, 28)).load(Ordering::Relaxed) } == from {
        note_end(to, 0);
    }
}

/// The header record: what the recorder writes as this image's header
/// chunk, and the start of a new image of this pid.
unsafe fn send_header() {
    let mut buf = [0u8; HEADER_FIXED + 4096];
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer; getppid cannot fail.
    let ppid = unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
        libc::getppid()
    };
    let pid = PID.load(Ordering::Relaxed);
    buf[0..4].copy_from_slice(&(pid as u32).to_le_bytes());
    buf[4..8].copy_from_slice(&(ppid as u32).to_le_bytes());
    buf[8..16].copy_from_slice(&(ts.tv_sec as u64).to_le_bytes());
    buf[16..24].copy_from_slice(&(now_ms() as u64).to_le_bytes());
    buf[24..28].copy_from_slice(&(DEPTH.load(Ordering::Relaxed) as u32).to_le_bytes());
    buf[28..32].copy_from_slice(&MODULES.load(Ordering::Relaxed).to_le_bytes());
    buf[32..40].copy_from_slice(&NONCE.load(Ordering::Relaxed).to_le_bytes());
    // SAFETY: readlink into our buffer, bounded by its length.
    let n = unsafe {
        libc::readlink(
            c"/proc/self/exe".as_ptr(),
            buf[HEADER_FIXED..].as_mut_ptr().cast(),
            4096,
        )
    };
    let n = n.max(0) as usize;
    send_meta(META_HEADER, &buf[..HEADER_FIXED + n]);
}

/// Sends /proc/self/maps (the recorder keeps the last snapshot).
unsafe fn send_maps() {
    const CAP: usize = 4 << 20;
    // SAFETY: private anonymous mapping for the copy, freed below; the
    // file is read with raw system calls.
    unsafe {
        let p = libc::mmap(
            null_mut(),
            CAP,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return;
        }
        let buf = core::slice::from_raw_parts_mut(p as *mut u8, CAP);
        let fd = libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD as core::ffi::c_long,
            c"/proc/self/maps".as_ptr(),
            (libc::O_RDONLY | libc::O_CLOEXEC) as core::ffi::c_long,
        ) as c_int;
        if fd >= 0 {
            let mut len = 0;
            while len < CAP {
                let n = libc::read(fd, buf[len..].as_mut_ptr().cast(), CAP - len);
                if n <= 0 {
                    break;
                }
                len += n as usize;
            }
            libc::syscall(libc::SYS_close, fd as core::ffi::c_long);
            send_meta(META_MAPS, &buf[..len]);
        }
        libc::munmap(p, CAP);
    }
}

/// The unwinder read a new map list (see `unwind`): the recorder gets it.
pub fn maps_changed(text: &[u8]) {
    send_meta(META_MAPS, text);
}

extern "C" fn after_fork_child() {
    // Locks and flags held by threads that do not exist in the child.
    arena::after_fork_child();
    unwind::after_fork_child();
    stacks::after_fork_child();
    // SAFETY: pthread_self only reads the thread pointer.
    let me = unsafe { libc::pthread_self() } as usize;
    for s in SLOTS.iter() {
        let k = s.key.load(Ordering::Relaxed);
        if k != 0 && k != me {
            // A new thread may get this descriptor again.
            s.guard.store(false, Ordering::Relaxed);
            s.unw.busy.store(false, Ordering::Relaxed);
            unwind::forget(&s.unw);
            s.anchor_tsc.store(0, Ordering::Relaxed);
        }
    }
    // Backtrace numbers belong to the parent's image.
    for s in SLOTS.iter() {
        if s.key.load(Ordering::Relaxed) == me {
            unwind::forget(&s.unw);
        }
    }
    // The child is a new image of a new pid: its own numbering, header
    // and maps. (The stream mapping is shared with the parent.)
    SEQ.store(0, Ordering::Relaxed);
    META_SERIAL.store(0, Ordering::Relaxed);
    // The parent's unsent events stay the parent's (it sends them, and
    // its spill file is shared with us: never touch it). The child's
    // threads take new batches from a spill file of its own.
    BATCHES.store(null_mut(), Ordering::Release);
    for s in SLOTS.iter() {
        s.batch.store(null_mut(), Ordering::Relaxed);
    }
    let inherited = SPILL.swap(null_mut(), Ordering::AcqRel);
    if !inherited.is_null() {
        // SAFETY: the parent's spill mapping, no longer referenced here.
        unsafe { libc::munmap(inherited.cast(), SPILL_LEN) };
    }
    // SAFETY: getpid cannot fail.
    PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    // The child starts in its parent's toggle state: its header says so.
    if MODULES.load(Ordering::Relaxed) & MODULE_TOGGLE_MASK != 0 {
        if PAUSED.load(Ordering::Relaxed) {
            MODULES.fetch_or(MODULE_STARTED_PAUSED, Ordering::Relaxed);
        } else {
            MODULES.fetch_and(!MODULE_STARTED_PAUSED, Ordering::Relaxed);
        }
    }
    set_guard(true);
    // SAFETY: metadata of the new process.
    unsafe {
        let errno = *libc::__errno_location();
        map_spill();
        send_header();
        send_maps();
        *libc::__errno_location() = errno;
    }
    set_guard(false);
}

/// Before the image goes away (exit, exec, _exit): every thread's batch
/// written, then the final maps. `close` makes later events unbatched
/// (process exit), otherwise batching resumes (an exec that may fail).
unsafe fn finish(close: bool) {
    if STATE.load(Ordering::Acquire) != READY {
        return;
    }
    set_guard(true);
    // SAFETY: sending our events and metadata; errno restored for the
    // caller.
    unsafe {
        let errno = *libc::__errno_location();
        flush_all(close);
        send_maps();
        *libc::__errno_location() = errno;
    }
    set_guard(false);
}

extern "C" fn at_exit() {
    note_end(END_EXITED, 0);
    // SAFETY: runs from the ELF destructors at exit.
    unsafe { finish(true) };
}

// ---------------------------------------------------------------------
// Per-thread batches: a thread gathers its events and writes them as one
// stream event of up to the stream's max data size, which keeps the
// reader's per-event work off the allocation path. A process killed by a
// signal loses at most the batch each thread was filling.

/// The recorder's stream takes events of this size; another stream's
/// larger max data size is used only up to this.
const BATCH_CAP: usize = STREAM_MAX_DATA;

const OPEN: u32 = 0;
const BUSY: u32 = 1;
const CLOSED: u32 = 2;
const FLUSHING: u32 = 3;

/// The layout of `wire::SPILL_BATCH` (the recorder reads `owner`, `len`
/// and `data` of a spill file after the process is gone).
#[repr(C)]
struct Batch {
    next: *mut Batch,
    lock: AtomicU32,
    _pad: u32,
    /// The owning thread (`pthread_self`), sent as the event's thread.
    owner: u64,
    /// Bytes of whole records in `data` (stored after they are written).
    len: AtomicUsize,
    data: [u8; BATCH_CAP],
}
const _: () = assert!(core::mem::size_of::<Batch>() == SPILL_BATCH);

unsafe fn my_batch(slot: &Slot) -> *mut Batch {
    let b = slot.batch.load(Ordering::Relaxed);
    if !b.is_null() {
        return b;
    }
    let p = spill_batch();
    let p = if !p.is_null() {
        p
    } else {
        // SAFETY: anonymous private mapping, not the hooked allocator.
        let p = unsafe {
            libc::mmap(
                null_mut(),
                core::mem::size_of::<Batch>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return null_mut();
        }
        p
    };
    let b = p as *mut Batch;
    // SAFETY: fresh zeroed mapping of the right size; published with a CAS.
    unsafe {
        (*b).owner = libc::pthread_self() as u64;
        let mut head = BATCHES.load(Ordering::Acquire);
        loop {
            (*b).next = head;
            match BATCHES.compare_exchange_weak(head, b, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
    }
    slot.batch.store(b, Ordering::Relaxed);
    b
}

/// The next batch of the spill file (null: none, or no room).
fn spill_batch() -> *mut c_void {
    let h = SPILL.load(Ordering::Acquire);
    if h.is_null() {
        return null_mut();
    }
    // SAFETY: the spill header is mapped; the count is only ever raised.
    let count = unsafe { &*spill_word(h, 24) };
    let i = count.fetch_add(1, Ordering::AcqRel) as usize;
    if i >= SPILL_BATCHES {
        count.fetch_sub(1, Ordering::AcqRel);
        return null_mut();
    }
    h.wrapping_add(SPILL_HEADER + i * SPILL_BATCH).cast()
}

/// Writes the batch as one stream event; the caller holds its lock. The
/// length is cleared after the write: a process killed in between leaves
/// the records in the spill file too, and the recorder drops the copies
/// by their numbers.
unsafe fn flush_locked(b: *mut Batch) {
    // SAFETY: the caller owns the batch through its lock.
    unsafe {
        let len = (*b).len.load(Ordering::Relaxed);
        if len > 0 {
            send_as(
                EVENT_ID.load(Ordering::Relaxed),
                &[&(&(*b).data)[..len]],
                (*b).owner,
            );
        }
        (*b).len.store(0, Ordering::Release);
    }
}

/// Adds one event (its fixed part and its frames) to the batch of the
/// thread of `slot`. (Inlined: a call per event was a tenth of the
/// hook's instructions.)
#[inline(always)]
unsafe fn append(slot: &Slot, fixed: &[u8], frames: &[u8]) {
    let total = fixed.len() + frames.len();
    // SAFETY: this thread's batch.
    let batched = unsafe {
        append_with(slot, total, |dst| {
            dst[..fixed.len()].copy_from_slice(fixed);
            dst[fixed.len()..].copy_from_slice(frames);
        })
    };
    if !batched {
        send(EVENT_ID.load(Ordering::Relaxed), &[fixed, frames]);
    }
}

/// An allocation, release or void record as little-endian words (see
/// `wire`): `words[0]` holds kind, res, func and the timestamp.
#[derive(Clone, Copy)]
struct Words<const N: usize>([u64; N]);

impl<const N: usize> Words<N> {
    /// The record's bytes (for the unbatched paths).
    #[inline(always)]
    fn bytes(&self) -> [u8; 40] {
        let mut b = [0u8; 40];
        for (k, w) in self.0.iter().enumerate() {
            b[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }
}

/// Adds one allocation, release or void record, written as whole words
/// straight into the batch: building it on the stack first and copying it
/// stalled every event on store forwarding (byte stores read back as one
/// 16-byte load) and was the hook's most expensive instruction.
#[inline(always)]
unsafe fn append_words<const N: usize>(slot: &Slot, w: Words<N>) {
    // SAFETY: this thread's batch.
    let batched = unsafe {
        append_with(slot, 8 * N, |dst| {
            let at = dst.as_mut_ptr();
            for (k, v) in w.0.iter().enumerate() {
                // SAFETY: `dst` is 8 * N bytes long.
                ptr::write_unaligned(at.add(8 * k).cast::<u64>(), v.to_le());
            }
        })
    };
    if !batched {
        let bytes = w.bytes();
        send(EVENT_ID.load(Ordering::Relaxed), &[&bytes[..8 * N]]);
    }
}

/// Reserves `total` bytes in the batch of the thread of `slot`, lets
/// `write` fill them, and publishes them. `false`: there is no batch (none
/// could be mapped, or it was closed at exit): the caller sends the
/// record unbatched.
#[inline(always)]
unsafe fn append_with(slot: &Slot, total: usize, write: impl FnOnce(&mut [u8])) -> bool {
    // SAFETY: batch from our own mapping.
    let b = unsafe { my_batch(slot) };
    if b.is_null() {
        return false;
    }
    // SAFETY: the lock serialises us with the exit/exec flusher.
    unsafe {
        loop {
            match (*b)
                .lock
                .compare_exchange(OPEN, BUSY, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(CLOSED) => return false,
                Err(_) => core::hint::spin_loop(),
            }
        }
        if (*b).len.load(Ordering::Relaxed) + total > BATCH_LIMIT.load(Ordering::Relaxed) {
            flush_locked(b);
        }
        let len = (*b).len.load(Ordering::Relaxed);
        write(&mut (&mut (*b).data)[len..len + total]);
        // Published after the bytes: a crash never exposes half a record.
        (*b).len.store(len + total, Ordering::Release);
        (*b).lock.store(OPEN, Ordering::Release);
    }
    true
}

/// Writes every thread's batch; `close` makes later events unbatched.
unsafe fn flush_all(close: bool) {
    let mut b = BATCHES.load(Ordering::Acquire);
    while !b.is_null() {
        // SAFETY: batches are never freed.
        unsafe {
            let mut spins = 0u32;
            let acquired = loop {
                match (*b).lock.compare_exchange(
                    OPEN,
                    FLUSHING,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break true,
                    Err(CLOSED) => break false,
                    Err(_) => {
                        // A thread stopped inside append (e.g. we are in a
                        // signal handler that interrupted it): skip it
                        // rather than hang.
                        spins += 1;
                        if spins > 10_000_000 {
                            break false;
                        }
                        core::hint::spin_loop();
                    }
                }
            };
            if acquired {
                flush_locked(b);
                (*b).lock
                    .store(if close { CLOSED } else { OPEN }, Ordering::Release);
            }
            b = (*b).next;
        }
    }
}

#[used]
#[unsafe(link_section = ".fini_array")]
static FINI: extern "C" fn() = at_exit;

/// Run by `exit` (glibc's `on_exit` handlers get the status), whichever
/// way it is reached: from `main` returning (inside the C library, where
/// the `exit` hook does not see it) or from a call. Registered first, it
/// runs after the program's own exit handlers and the destructors: the
/// image's end is noted with its status (the spill header, which the
/// recorder reads after the process is gone). A fork child inherits it.
extern "C" fn exit_status(status: c_int, _arg: *mut c_void) {
    note_end(END_EXIT, status);
}

extern "C" fn at_load() {
    // Loaded by `dlopen` from `record mem -p` (no stream in the
    // environment): the attach call starts recording (see `attach`).
    // SAFETY: reading the environment.
    if !crate::attach::attached() && unsafe { getenv(STREAM_ENV_C) }.is_none() {
        return;
    }
    // Start eagerly so that an image that never allocates still gets its
    // (empty) trace; hooks called earlier have initialised already.
    if STATE.load(Ordering::Acquire) == UNINIT {
        init_slow();
    }
    if STATE.load(Ordering::Acquire) == READY {
        // From the constructor (never from inside a hook, which could be
        // called with the exit handlers' lock held). The first 32 handlers
        // live in the C library's static table: no allocation.
        set_guard(true);
        // SAFETY: registering a handler with a null argument.
        unsafe { libc::on_exit(Some(exit_status), null_mut()) };
        set_guard(false);
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = at_load;

/// Attached (`attach`): starts recording as the constructor does when
/// preloaded. True if recording.
pub(crate) fn start_late() -> bool {
    at_load();
    STATE.load(Ordering::Acquire) == READY
}

/// Attached, on the recorder's detach: every batch written, then nothing
/// more is recorded (the shim stays loaded, inert).
pub(crate) fn stop_late() {
    // SAFETY: sending our events and metadata, as at exit.
    unsafe { finish(false) };
    STATE.store(DISABLED, Ordering::Release);
    set_guard(true);
    // SAFETY: what threads appended meanwhile.
    unsafe { flush_all(false) };
    set_guard(false);
}
// ---------------------------------------------------------------------
// Events

/// CLOCK_MONOTONIC in nanoseconds (vDSO, no allocation).
fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn ms_of_day(ns: u64) -> u32 {
    (ns / 1_000_000 % 86_400_000) as u32
}

/// The event timestamp: CLOCK_MONOTONIC milliseconds modulo 24 h. Reading
/// the clock is a good part of an event's cost, so where the stream's
/// clock is the TSC (tracekit-posix checked it is constant and
/// non-stop), each thread reads the clock only every ~50 ms and
/// extrapolates with the TSC in between, at a rate measured once over the
/// first 20 ms of the image.
fn now_ms() -> u32 {
    match slot() {
        Some(s) => now_ms_in(s),
        None => now_ms_slow(),
    }
}

/// [`now_ms`] for the thread of `s`.
#[inline(always)]
fn now_ms_in(s: &Slot) -> u32 {
    let rate = TSC_RATE.load(Ordering::Relaxed);
    if rate == 0 {
        return now_ms_slow();
    }
    let t = producer::raw_now(producer::CLOCK_TSC);
    let base = s.anchor_tsc.load(Ordering::Relaxed);
    let dt = t.wrapping_sub(base);
    if base != 0 && dt < TSC_REANCHOR.load(Ordering::Relaxed) {
        let ns = s.anchor_ns.load(Ordering::Relaxed) + ((dt as u128 * rate as u128) >> 32) as u64;
        return ms_of_day(ns);
    }
    let ns = mono_ns();
    s.anchor_ns.store(ns, Ordering::Relaxed);
    s.anchor_tsc
        .store(producer::raw_now(producer::CLOCK_TSC), Ordering::Relaxed);
    ms_of_day(ns)
}

#[cold]
fn now_ms_slow() -> u32 {
    let ns = mono_ns();
    if CLOCK_KIND.load(Ordering::Relaxed) == producer::CLOCK_TSC {
        let t = producer::raw_now(producer::CLOCK_TSC);
        let (t0, ns0) = (
            CAL_TSC.load(Ordering::Relaxed),
            CAL_NS.load(Ordering::Relaxed),
        );
        if t0 != 0 && ns > ns0 + 20_000_000 && t > t0 {
            // ns per tick, 32.32 fixed point.
            let rate = (((ns - ns0) as u128) << 32) / (t - t0) as u128;
            if rate > 0 && rate < (1u128 << 40) {
                // Re-anchor each thread after ~50 ms of ticks.
                let ticks = (50_000_000u128 << 32) / rate;
                TSC_REANCHOR.store(ticks as u64, Ordering::Relaxed);
                TSC_RATE.store(rate as u64, Ordering::Relaxed);
            }
        }
    }
    ms_of_day(ns)
}

#[inline(always)]
pub(crate) fn take_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// The bounds of this thread's stack, found once per thread (see
/// `unwind::stack_of`); `sp` is a stack pointer of this thread.
#[inline(always)]
fn stack_bounds(slot: &Slot, sp: usize) -> (usize, usize) {
    let lo = slot.lo.load(Ordering::Relaxed);
    if lo != 0 {
        return (lo, slot.hi.load(Ordering::Relaxed));
    }
    // SAFETY: raw system calls into a mapping of its own.
    let bounds = match unsafe { unwind::stack_of(sp as u64) } {
        Some((lo, hi)) => (lo as usize, hi as usize),
        None => (1, 1),
    };
    slot.hi.store(bounds.1, Ordering::Relaxed);
    slot.lo.store(bounds.0, Ordering::Relaxed);
    bounds
}

/// Return addresses: the caller's, then those the unwinder finds from
/// the call-frame information (see `unwind`). `sp` is the caller's stack
/// pointer, `fp` its frame pointer register.
#[inline(always)]
unsafe fn walk(slot: &Slot, sp: usize, fp: usize, depth: usize, out: *mut u64) -> usize {
    let (lo, hi) = stack_bounds(slot, sp);
    // SAFETY: `sp` comes from the trampoline; `out` has room for
    // MAX_DEPTH entries.
    unsafe {
        unwind::backtrace(
            &slot.unw,
            sp as u64,
            fp as u64,
            (lo as u64, hi as u64),
            depth.min(MAX_DEPTH),
            out,
        )
    }
}

#[inline(always)]
fn record(
    kind: u8,
    res: u8,
    func: u8,
    size: u64,
    id: u64,
    seq: u64,
    sp: usize,
    fp: usize,
    bt: bool,
) {
    // One look-up of this thread's slot for the whole event. (No slot:
    // `enabled` said no, so there is nothing to record.)
    let Some(slot) = slot() else {
        return;
    };
    record_in(slot, kind, res, func, size, id, seq, sp, fp, bt);
}

/// [`record`] into the thread's slot `slot`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn record_in(
    slot: &Slot,
    kind: u8,
    res: u8,
    func: u8,
    size: u64,
    id: u64,
    seq: u64,
    sp: usize,
    fp: usize,
    bt: bool,
) {
    slot.guard.store(true, Ordering::Relaxed);
    let ts = now_ms_in(slot);
    let head = kind as u64 | (res as u64) << 8 | (func as u64) << 16 | (ts as u64) << 32;
    // SAFETY: our own batch.
    unsafe {
        match kind {
            KIND_ALLOC => {
                let stack = if bt { backtrace_id(slot, sp, fp) } else { 0 };
                append_words(slot, Words([head, seq, size, id, stack as u64]));
            }
            KIND_FREE => append_words(slot, Words([head, seq, id])),
            _ => append_words(slot, Words([head, seq])),
        }
    }
    slot.guard.store(false, Ordering::Relaxed);
}

/// The caller's backtrace as the number of its definition, sending the
/// definition first when this thread has not used it before (0: none).
#[inline(always)]
fn backtrace_id(slot: &Slot, sp: usize, fp: usize) -> u32 {
    let (lo, hi) = stack_bounds(slot, sp);
    // SAFETY: `sp` comes from the trampoline.
    if let Some(id) =
        unsafe { unwind::quick_id(&slot.unw, sp as u64, fp as u64, (lo as u64, hi as u64)) }
    {
        return id;
    }
    // Left uninitialised: only the frames walked are read.
    let mut frames = core::mem::MaybeUninit::<[u64; MAX_DEPTH]>::uninit();
    // SAFETY: bounded walk over our own stack into our array.
    let n = unsafe {
        walk(
            slot,
            sp,
            fp,
            DEPTH.load(Ordering::Relaxed),
            frames.as_mut_ptr().cast(),
        )
    };
    if n == 0 {
        return 0;
    }
    // SAFETY: walk initialised the first n entries of `frames`.
    let frames = unsafe { core::slice::from_raw_parts(frames.as_ptr().cast::<u64>(), n) };
    let Some((id, new)) = stacks::intern(&slot.stacks, frames) else {
        return 0;
    };
    unwind::remember(&slot.unw, frames, id);
    if new {
        let mut head = [0u8; STACK_HEAD];
        head[0] = KIND_STACK;
        head[1] = n as u8;
        head[4..8].copy_from_slice(&id.to_le_bytes());
        // Frames are little-endian u64s already on x86_64.
        // SAFETY: the n frames as bytes.
        let bytes = unsafe { core::slice::from_raw_parts(frames.as_ptr().cast::<u8>(), 8 * n) };
        // SAFETY: our own batch.
        unsafe { append(slot, &head, bytes) };
    }
    id
}

fn void(seq: u64) {
    record(KIND_VOID, 0, 0, 0, 0, seq, 0, 0, false);
}

// ---------------------------------------------------------------------
// Markers from the program (`include/tracekit/mem.h`): the program's weak
// references to these two functions bind to our definitions when we are
// preloaded; without us they are null and the program skips the calls.

trampoline!(tracekit_mem_mark => h_mark, "rsi", "rdx", (name: *const c_char) -> ());
trampoline!(tracekit_mem_snapshot => h_snapshot, "rsi", "rdx", (name: *const c_char) -> ());

unsafe extern "C" fn h_mark(name: *const c_char, sp: usize, fp: usize) {
    // SAFETY: the program's C string (or null), and the caller's frame.
    unsafe { mark(MARK_MARK, name, sp, fp) }
}

unsafe extern "C" fn h_snapshot(name: *const c_char, sp: usize, fp: usize) {
    // SAFETY: as for `h_mark`.
    unsafe { mark(MARK_SNAPSHOT, name, sp, fp) }
}

/// Records a marker (see `wire::KIND_MARK`). Recorded while recording is
/// paused too (a marker is no allocation); not from inside our own code.
/// The name is copied into the record (at most `MARK_NAME_MAX` bytes, cut
/// at a UTF-8 character boundary; its whole length is kept). The thread's
/// id is one `gettid` system call: markers are rare calls the program
/// makes on purpose, not a hooked function's events.
unsafe fn mark(kind: u8, name: *const c_char, sp: usize, fp: usize) {
    let Some(slot) = release_slot(u32::MAX) else {
        return;
    };
    // SAFETY: errno is this thread's.
    let errno = unsafe { *libc::__errno_location() };
    slot.guard.store(true, Ordering::Relaxed);
    let seq = take_seq();
    let ts = now_ms_in(slot);
    // SAFETY: raw system call without arguments; it cannot fail.
    let tid = unsafe { libc::syscall(SYS_GETTID) } as u32;
    // The name's whole length (saturating) and the bytes kept.
    let mut full: usize = 0;
    if !name.is_null() {
        // SAFETY: a C string, as the header's contract says.
        while unsafe { *name.add(full) } != 0 {
            full += 1;
            if full == u32::MAX as usize {
                break;
            }
        }
    }
    let mut n = full.min(MARK_NAME_MAX);
    if n < full {
        // Cut at a character boundary: not inside a UTF-8 sequence.
        // SAFETY: `n < full`, so byte n is part of the string.
        while n > 0 && unsafe { *name.add(n) } as u8 & 0xC0 == 0x80 {
            n -= 1;
        }
    }
    let stack = backtrace_id(slot, sp, fp);
    let mut rec = [0u8; MARK_HEAD + MARK_NAME_MAX + 1];
    rec[0] = KIND_MARK;
    rec[1] = kind;
    rec[2] = n as u8;
    rec[4..8].copy_from_slice(&ts.to_le_bytes());
    rec[8..16].copy_from_slice(&seq.to_le_bytes());
    rec[16..20].copy_from_slice(&tid.to_le_bytes());
    rec[20..24].copy_from_slice(&stack.to_le_bytes());
    rec[24..28].copy_from_slice(&(full as u32).to_le_bytes());
    for (k, b) in rec[MARK_HEAD..MARK_HEAD + n].iter_mut().enumerate() {
        // SAFETY: k < n ≤ the string's length.
        *b = unsafe { *name.add(k) } as u8;
    }
    let len = record_len(&rec).unwrap_or(MARK_HEAD);
    // SAFETY: our own batch.
    unsafe { append(slot, &rec[..len], &[]) };
    slot.guard.store(false, Ordering::Relaxed);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// `gettid` on x86_64.
const SYS_GETTID: core::ffi::c_long = 186;

// Function ids (index into FUNCTIONS).
const F_MALLOC: u8 = 0;
const F_CALLOC: u8 = 1;
const F_REALLOC: u8 = 2;
const F_REALLOCARRAY: u8 = 3;
const F_FREE: u8 = 4;
const F_POSIX_MEMALIGN: u8 = 5;
const F_ALIGNED_ALLOC: u8 = 6;
const F_MEMALIGN: u8 = 7;
const F_VALLOC: u8 = 8;
const F_PVALLOC: u8 = 9;
const F_OPEN: u8 = 10;
const F_OPENAT: u8 = 11;
const F_CREAT: u8 = 12;
const F_CLOSE: u8 = 13;
const F_DUP: u8 = 14;
const F_DUP2: u8 = 15;
const F_DUP3: u8 = 16;
const F_PIPE: u8 = 17;
const F_PIPE2: u8 = 18;
const F_SOCKET: u8 = 19;
const F_ACCEPT: u8 = 20;
const F_ACCEPT4: u8 = 21;
const F_FOPEN: u8 = 22;
const F_FDOPEN: u8 = 23;
const F_FCLOSE: u8 = 24;
const F_EVENTFD: u8 = 25;
const F_TIMERFD: u8 = 26;
const F_MEMFD: u8 = 27;
const F_OPEN64: u8 = 28;
const F_OPENAT64: u8 = 29;
const F_CREAT64: u8 = 30;
const F_FOPEN64: u8 = 31;

// ---------------------------------------------------------------------
// Trampolines: pass the caller's return address and frame pointer to the
// hook in the two argument registers after the real arguments.

macro_rules! trampoline {
    ($name:ident => $hook:ident, $ret_reg:literal, $fp_reg:literal, ($($arg:ident : $ty:ty),*) -> $rt:ty) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $rt {
            core::arch::naked_asm!(
                concat!("lea ", $ret_reg, ", [rsp + 8]"),
                concat!("mov ", $fp_reg, ", rbp"),
                "jmp {hook}",
                hook = sym $hook,
            )
        }
    };
}

pub(crate) use trampoline;

trampoline!(malloc => h_malloc, "rsi", "rdx", (size: usize) -> *mut c_void);
trampoline!(calloc => h_calloc, "rdx", "rcx", (n: usize, size: usize) -> *mut c_void);
trampoline!(realloc => h_realloc, "rdx", "rcx", (p: *mut c_void, size: usize) -> *mut c_void);
trampoline!(reallocarray => h_reallocarray, "rcx", "r8", (p: *mut c_void, n: usize, size: usize) -> *mut c_void);
trampoline!(posix_memalign => h_posix_memalign, "rcx", "r8", (out: *mut *mut c_void, align: usize, size: usize) -> c_int);
trampoline!(aligned_alloc => h_aligned_alloc, "rdx", "rcx", (align: usize, size: usize) -> *mut c_void);
trampoline!(memalign => h_memalign, "rdx", "rcx", (align: usize, size: usize) -> *mut c_void);
trampoline!(valloc => h_valloc, "rsi", "rdx", (size: usize) -> *mut c_void);
trampoline!(pvalloc => h_pvalloc, "rsi", "rdx", (size: usize) -> *mut c_void);
trampoline!(open => h_open, "rcx", "r8", (path: *const c_char, flags: c_int, mode: c_uint) -> c_int);
trampoline!(open64 => h_open64, "rcx", "r8", (path: *const c_char, flags: c_int, mode: c_uint) -> c_int);
trampoline!(openat => h_openat, "r8", "r9", (dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int);
trampoline!(openat64 => h_openat64, "r8", "r9", (dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int);
trampoline!(creat => h_creat, "rdx", "rcx", (path: *const c_char, mode: c_uint) -> c_int);
trampoline!(creat64 => h_creat64, "rdx", "rcx", (path: *const c_char, mode: c_uint) -> c_int);
trampoline!(dup => h_dup, "rsi", "rdx", (fd: c_int) -> c_int);
trampoline!(dup2 => h_dup2, "rdx", "rcx", (old: c_int, new: c_int) -> c_int);
trampoline!(dup3 => h_dup3, "rcx", "r8", (old: c_int, new: c_int, flags: c_int) -> c_int);
trampoline!(pipe => h_pipe, "rsi", "rdx", (fds: *mut c_int) -> c_int);
trampoline!(pipe2 => h_pipe2, "rdx", "rcx", (fds: *mut c_int, flags: c_int) -> c_int);
trampoline!(socket => h_socket, "rcx", "r8", (domain: c_int, ty: c_int, proto: c_int) -> c_int);
trampoline!(accept => h_accept, "rcx", "r8", (fd: c_int, addr: *mut c_void, len: *mut c_void) -> c_int);
trampoline!(accept4 => h_accept4, "r8", "r9", (fd: c_int, addr: *mut c_void, len: *mut c_void, flags: c_int) -> c_int);
trampoline!(fopen => h_fopen, "rdx", "rcx", (path: *const c_char, mode: *const c_char) -> *mut c_void);
trampoline!(fopen64 => h_fopen64, "rdx", "rcx", (path: *const c_char, mode: *const c_char) -> *mut c_void);
trampoline!(fdopen => h_fdopen, "rdx", "rcx", (fd: c_int, mode: *const c_char) -> *mut c_void);
trampoline!(eventfd => h_eventfd, "rdx", "rcx", (init: c_uint, flags: c_int) -> c_int);
trampoline!(timerfd_create => h_timerfd, "rdx", "rcx", (clock: c_int, flags: c_int) -> c_int);
trampoline!(memfd_create => h_memfd, "rdx", "rcx", (name: *const c_char, flags: c_uint) -> c_int);

// ---------------------------------------------------------------------
// Memory hooks

/// malloc while dlsym is still looking malloc up: the bootstrap arena.
#[inline(always)]
fn real_malloc_or_arena(size: usize) -> *mut c_void {
    if R_MALLOC.load(Ordering::Acquire) == 0 && guarded() {
        return arena_alloc(size);
    }
    let f = real!(R_MALLOC, c"malloc", MallocFn);
    // SAFETY: the real malloc.
    unsafe { f(size) }
}

unsafe extern "C" fn h_malloc(size: usize, sp: usize, fp: usize) -> *mut c_void {
    let on = recording_slot(MODULE_MEMORY);
    let p = inside(on, || real_malloc_or_arena(size));
    if let (Some(slot), false) = (on, p.is_null()) {
        record_in(
            slot,
            KIND_ALLOC,
            RES_MEMORY,
            F_MALLOC,
            size as u64,
            p as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
    p
}

unsafe extern "C" fn h_calloc(n: usize, size: usize, sp: usize, fp: usize) -> *mut c_void {
    if R_CALLOC.load(Ordering::Acquire) == 0 && guarded() {
        // Arena memory is zeroed and never reused.
        return arena_alloc(n.saturating_mul(size));
    }
    let on = recording_slot(MODULE_MEMORY);
    let f = real!(R_CALLOC, c"calloc", CallocFn);
    // SAFETY: the real calloc.
    let p = inside(on, || unsafe { f(n, size) });
    if let (Some(slot), false) = (on, p.is_null()) {
        let total = n.wrapping_mul(size) as u64;
        record_in(
            slot,
            KIND_ALLOC,
            RES_MEMORY,
            F_CALLOC,
            total,
            p as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
    p
}

fn realloc_common(
    p: *mut c_void,
    size: usize,
    func: u8,
    sp: usize,
    fp: usize,
    call: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let on = enabled(MODULE_MEMORY);
    let rel = release_slot(MODULE_MEMORY);
    let free_seq = (rel.is_some() && !p.is_null()).then(take_seq);
    let q = inside(rel, call);
    if let Some(seq) = free_seq {
        if !q.is_null() || size == 0 {
            record(KIND_FREE, RES_MEMORY, func, 0, p as u64, seq, 0, 0, false);
        } else {
            void(seq);
        }
    }
    if on && !q.is_null() {
        record(
            KIND_ALLOC,
            RES_MEMORY,
            func,
            size as u64,
            q as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
    q
}

unsafe extern "C" fn h_realloc(p: *mut c_void, size: usize, sp: usize, fp: usize) -> *mut c_void {
    if in_arena(p) {
        let q = real_malloc_or_arena(size);
        if !q.is_null() {
            let avail = arena_base() + ARENA - p as usize;
            // SAFETY: both blocks are valid for the copied length.
            unsafe { ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, size.min(avail)) };
        }
        return q;
    }
    realloc_common(p, size, F_REALLOC, sp, fp, || {
        let f = real!(R_REALLOC, c"realloc", ReallocFn);
        // SAFETY: the real realloc.
        unsafe { f(p, size) }
    })
}

unsafe extern "C" fn h_reallocarray(
    p: *mut c_void,
    n: usize,
    size: usize,
    sp: usize,
    fp: usize,
) -> *mut c_void {
    // glibc's reallocarray calls realloc through the PLT, that is our
    // hook: that inner call is the C library's, not the program's, and
    // passes through (`realloc_common` runs it guarded) so that the block
    // is recorded once.
    realloc_common(p, n.wrapping_mul(size), F_REALLOCARRAY, sp, fp, || {
        let f = real!(R_REALLOCARRAY, c"reallocarray", ReallocarrayFn);
        // SAFETY: the real reallocarray.
        unsafe { f(p, n, size) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if in_arena(p) {
        return;
    }
    let on = release_slot(MODULE_MEMORY);
    let seq = if on.is_some() { take_seq() } else { 0 };
    let f = real!(R_FREE, c"free", FreeFn);
    // SAFETY: the real free.
    inside(on, || unsafe { f(p) });
    if let Some(slot) = on {
        record_in(
            slot, KIND_FREE, RES_MEMORY, F_FREE, 0, p as u64, seq, 0, 0, false,
        );
    }
}

unsafe extern "C" fn h_posix_memalign(
    out: *mut *mut c_void,
    align: usize,
    size: usize,
    sp: usize,
    fp: usize,
) -> c_int {
    let slot = recording_slot(MODULE_MEMORY);
    let on = slot.is_some();
    let f = real!(R_POSIX_MEMALIGN, c"posix_memalign", PosixMemalignFn);
    // SAFETY: the real posix_memalign.
    let rc = inside(slot, || unsafe { f(out, align, size) });
    if on && rc == 0 && !out.is_null() {
        // SAFETY: on success the real function stored the pointer.
        let p = unsafe { *out };
        record(
            KIND_ALLOC,
            RES_MEMORY,
            F_POSIX_MEMALIGN,
            size as u64,
            p as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
    rc
}

macro_rules! aligned_hook {
    ($hook:ident, $slot:ident, $name:literal, $func:expr) => {
        unsafe extern "C" fn $hook(align: usize, size: usize, sp: usize, fp: usize) -> *mut c_void {
            let slot = recording_slot(MODULE_MEMORY);
            let on = slot.is_some();
            let f = real!($slot, $name, AlignedFn);
            // SAFETY: the real function.
            let p = inside(slot, || unsafe { f(align, size) });
            if on && !p.is_null() {
                record(
                    KIND_ALLOC,
                    RES_MEMORY,
                    $func,
                    size as u64,
                    p as u64,
                    take_seq(),
                    sp,
                    fp,
                    true,
                );
            }
            p
        }
    };
}
aligned_hook!(
    h_aligned_alloc,
    R_ALIGNED_ALLOC,
    c"aligned_alloc",
    F_ALIGNED_ALLOC
);
aligned_hook!(h_memalign, R_MEMALIGN, c"memalign", F_MEMALIGN);

macro_rules! page_hook {
    ($hook:ident, $slot:ident, $name:literal, $func:expr) => {
        unsafe extern "C" fn $hook(size: usize, sp: usize, fp: usize) -> *mut c_void {
            let slot = recording_slot(MODULE_MEMORY);
            let on = slot.is_some();
            let f = real!($slot, $name, MallocFn);
            // SAFETY: the real function.
            let p = inside(slot, || unsafe { f(size) });
            if on && !p.is_null() {
                record(
                    KIND_ALLOC,
                    RES_MEMORY,
                    $func,
                    size as u64,
                    p as u64,
                    take_seq(),
                    sp,
                    fp,
                    true,
                );
            }
            p
        }
    };
}
page_hook!(h_valloc, R_VALLOC, c"valloc", F_VALLOC);
page_hook!(h_pvalloc, R_PVALLOC, c"pvalloc", F_PVALLOC);

// ---------------------------------------------------------------------
// File-descriptor hooks

#[inline(always)]
fn fd_alloc(fd: c_int, func: u8, sp: usize, fp: usize) {
    if fd >= 0 {
        record(
            KIND_ALLOC,
            RES_FD,
            func,
            1,
            fd as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
}

macro_rules! fd_hook {
    ($hook:ident, $slot:ident, $name:literal, $ty:ty, $func:expr, ($($arg:ident : $aty:ty),*)) => {
        unsafe extern "C" fn $hook($($arg: $aty,)* sp: usize, fp: usize) -> c_int {
            let on = enabled(MODULE_FILE);
            let f = real!($slot, $name, $ty);
            // SAFETY: the real function with the caller's arguments.
            let fd = unsafe { f($($arg),*) };
            if on {
                fd_alloc(fd, $func, sp, fp);
            }
            fd
        }
    };
}

fd_hook!(h_open, R_OPEN, c"open", OpenFn, F_OPEN, (path: *const c_char, flags: c_int, mode: c_uint));
fd_hook!(h_open64, R_OPEN64, c"open64", OpenFn, F_OPEN64, (path: *const c_char, flags: c_int, mode: c_uint));
fd_hook!(h_openat, R_OPENAT, c"openat", OpenatFn, F_OPENAT, (dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint));
fd_hook!(h_openat64, R_OPENAT64, c"openat64", OpenatFn, F_OPENAT64, (dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint));
fd_hook!(h_creat, R_CREAT, c"creat", CreatFn, F_CREAT, (path: *const c_char, mode: c_uint));
fd_hook!(h_creat64, R_CREAT64, c"creat64", CreatFn, F_CREAT64, (path: *const c_char, mode: c_uint));
fd_hook!(h_dup, R_DUP, c"dup", IntFn, F_DUP, (fd: c_int));
fd_hook!(h_socket, R_SOCKET, c"socket", SocketFn, F_SOCKET, (domain: c_int, ty: c_int, proto: c_int));
fd_hook!(h_accept, R_ACCEPT, c"accept", AcceptFn, F_ACCEPT, (fd: c_int, addr: *mut c_void, len: *mut c_void));
fd_hook!(h_accept4, R_ACCEPT4, c"accept4", Accept4Fn, F_ACCEPT4, (fd: c_int, addr: *mut c_void, len: *mut c_void, flags: c_int));
fd_hook!(h_eventfd, R_EVENTFD, c"eventfd", EventfdFn, F_EVENTFD, (init: c_uint, flags: c_int));
fd_hook!(h_timerfd, R_TIMERFD, c"timerfd_create", Dup2Fn, F_TIMERFD, (clock: c_int, flags: c_int));
fd_hook!(h_memfd, R_MEMFD, c"memfd_create", MemfdFn, F_MEMFD, (name: *const c_char, flags: c_uint));

#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let f = real!(R_CLOSE, c"close", IntFn);
    let on = release_enabled(MODULE_FILE);
    let seq = if on { take_seq() } else { 0 };
    // SAFETY: the real close.
    let rc = unsafe { f(fd) };
    if on {
        // SAFETY: errno location is valid.
        let err = unsafe { *libc::__errno_location() };
        if rc == 0 || err != libc::EBADF {
            // Linux releases the descriptor even when close reports EINTR/EIO.
            record(KIND_FREE, RES_FD, F_CLOSE, 0, fd as u64, seq, 0, 0, false);
        } else {
            void(seq);
        }
        // SAFETY: restore errno for the caller.
        unsafe { *libc::__errno_location() = err };
    }
    rc
}

fn dup_common(
    old: c_int,
    new: c_int,
    func: u8,
    sp: usize,
    fp: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let on = release_enabled(MODULE_FILE) && old != new;
    let seq = if on { take_seq() } else { 0 };
    let rc = call();
    if on {
        if rc >= 0 {
            // The target was implicitly closed (if it was open).
            record(KIND_FREE, RES_FD, func, 0, new as u64, seq, 0, 0, false);
            if enabled(MODULE_FILE) {
                fd_alloc(rc, func, sp, fp);
            }
        } else {
            void(seq);
        }
    }
    rc
}

unsafe extern "C" fn h_dup2(old: c_int, new: c_int, sp: usize, fp: usize) -> c_int {
    dup_common(old, new, F_DUP2, sp, fp, || {
        let f = real!(R_DUP2, c"dup2", Dup2Fn);
        // SAFETY: the real dup2.
        unsafe { f(old, new) }
    })
}

unsafe extern "C" fn h_dup3(old: c_int, new: c_int, flags: c_int, sp: usize, fp: usize) -> c_int {
    dup_common(old, new, F_DUP3, sp, fp, || {
        let f = real!(R_DUP3, c"dup3", Dup3Fn);
        // SAFETY: the real dup3.
        unsafe { f(old, new, flags) }
    })
}

unsafe extern "C" fn h_pipe(fds: *mut c_int, sp: usize, fp: usize) -> c_int {
    let on = enabled(MODULE_FILE);
    let f = real!(R_PIPE, c"pipe", PipeFn);
    // SAFETY: the real pipe.
    let rc = unsafe { f(fds) };
    if on && rc == 0 {
        // SAFETY: on success both slots hold descriptors.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        fd_alloc(a, F_PIPE, sp, fp);
        fd_alloc(b, F_PIPE, sp, fp);
    }
    rc
}

unsafe extern "C" fn h_pipe2(fds: *mut c_int, flags: c_int, sp: usize, fp: usize) -> c_int {
    let on = enabled(MODULE_FILE);
    let f = real!(R_PIPE2, c"pipe2", Pipe2Fn);
    // SAFETY: the real pipe2.
    let rc = unsafe { f(fds, flags) };
    if on && rc == 0 {
        // SAFETY: on success both slots hold descriptors.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        fd_alloc(a, F_PIPE2, sp, fp);
        fd_alloc(b, F_PIPE2, sp, fp);
    }
    rc
}

macro_rules! fopen_hook {
    ($hook:ident, $slot:ident, $name:literal, $func:expr) => {
        unsafe extern "C" fn $hook(
            path: *const c_char,
            mode: *const c_char,
            sp: usize,
            fp: usize,
        ) -> *mut c_void {
            let on = enabled(MODULE_FILE);
            let f = real!($slot, $name, FopenFn);
            // SAFETY: the real function.
            let stream = unsafe { f(path, mode) };
            if on && !stream.is_null() {
                record(
                    KIND_ALLOC,
                    RES_FP,
                    $func,
                    1,
                    stream as u64,
                    take_seq(),
                    sp,
                    fp,
                    true,
                );
            }
            stream
        }
    };
}
fopen_hook!(h_fopen, R_FOPEN, c"fopen", F_FOPEN);
fopen_hook!(h_fopen64, R_FOPEN64, c"fopen64", F_FOPEN64);

unsafe extern "C" fn h_fdopen(fd: c_int, mode: *const c_char, sp: usize, fp: usize) -> *mut c_void {
    let on = release_enabled(MODULE_FILE);
    let seq = if on { take_seq() } else { 0 };
    let f = real!(R_FDOPEN, c"fdopen", FdopenFn);
    // SAFETY: the real fdopen.
    let stream = unsafe { f(fd, mode) };
    if on {
        if stream.is_null() {
            void(seq);
        } else {
            // Ownership of the descriptor moves to the stream.
            record(KIND_FREE, RES_FD, F_FDOPEN, 0, fd as u64, seq, 0, 0, false);
        }
    }
    if on && !stream.is_null() && enabled(MODULE_FILE) {
        record(
            KIND_ALLOC,
            RES_FP,
            F_FDOPEN,
            1,
            stream as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
    stream
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fclose(stream: *mut c_void) -> c_int {
    let on = release_enabled(MODULE_FILE);
    let seq = if on { take_seq() } else { 0 };
    let f = real!(R_FCLOSE, c"fclose", FcloseFn);
    // SAFETY: the real fclose.
    let rc = unsafe { f(stream) };
    if on {
        // The stream is gone whatever fclose returns.
        record(
            KIND_FREE,
            RES_FP,
            F_FCLOSE,
            0,
            stream as u64,
            seq,
            0,
            0,
            false,
        );
    }
    rc
}

// ---------------------------------------------------------------------
// Process-image boundaries: write everything out first.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    note_exec();
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECVE, c"execve", ExecveFn);
    // SAFETY: the real execve.
    let rc = unsafe { f(path, argv, envp) };
    // Still here: the exec failed.
    note_end_if(END_EXEC, END_NONE);
    rc
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    note_exec();
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECVPE, c"execvpe", ExecveFn);
    // SAFETY: the real execvpe.
    let rc = unsafe { f(file, argv, envp) };
    // Still here: the exec failed.
    note_end_if(END_EXEC, END_NONE);
    rc
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    note_exec();
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECV, c"execv", ExecvFn);
    // SAFETY: the real execv.
    let rc = unsafe { f(path, argv) };
    // Still here: the exec failed.
    note_end_if(END_EXEC, END_NONE);
    rc
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    note_exec();
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECVP, c"execvp", ExecvFn);
    // SAFETY: the real execvp.
    let rc = unsafe { f(file, argv) };
    // Still here: the exec failed.
    note_end_if(END_EXEC, END_NONE);
    rc
}

// execl, execle and execlp are variadic and reach execve inside libc
// without going through our hook: write everything out first, then jump
// to the real function with the caller's registers and stack untouched.
macro_rules! flush_then_jump {
    ($name:ident => $prep:ident, $slot:ident, $cname:literal) => {
        extern "C" fn $prep() -> usize {
            // (If the exec fails, the exit that follows says so.)
            note_exec();
            // SAFETY: flushing our own buffers.
            unsafe { finish(false) };
            let f: ExecvFn = real!($slot, $cname, ExecvFn);
            f as usize
        }

        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                // Seven pushes keep the stack 16-byte aligned for the call.
                "push rdi",
                "push rsi",
                "push rdx",
                "push rcx",
                "push r8",
                "push r9",
                "push rax",
                "call {prep}",
                "mov r11, rax",
                "pop rax",
                "pop r9",
                "pop r8",
                "pop rcx",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                "jmp r11",
                prep = sym $prep,
            )
        }
    };
}
flush_then_jump!(execl => prep_execl, R_EXECL, c"execl");
flush_then_jump!(execle => prep_execle, R_EXECLE, c"execle");
flush_then_jump!(execlp => prep_execlp, R_EXECLP, c"execlp");

/// `dlclose` may unmap an object whose unwind tables a thread is reading:
/// the unwinder stops using module memory around the call (see `unwind`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    let f = real!(R_DLCLOSE, c"dlclose", DlcloseFn);
    unwind::before_dlclose(slot().map(|s| &s.unw));
    // SAFETY: the real dlclose.
    let rc = unsafe { f(handle) };
    unwind::after_dlclose();
    rc
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    note_end(END_EXIT, status);
    // SAFETY: flushing our own buffers.
    unsafe { finish(true) };
    let f = real!(R_EXIT, c"_exit", ExitFn);
    // SAFETY: the real _exit.
    unsafe { f(status) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    note_end(END_EXIT, status);
    // SAFETY: flushing our own buffers.
    unsafe { finish(true) };
    let f = real!(R_EXIT2, c"_Exit", ExitFn);
    // SAFETY: the real _Exit.
    unsafe { f(status) }
}

/// `exit` with its status (returning from `main` reaches exit inside the C
/// library, without this hook: the exit handlers note that case).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn exit(status: c_int) -> ! {
    note_end(END_EXIT, status);
    let f = real!(R_EXIT3, c"exit", ExitFn);
    // SAFETY: the real exit.
    unsafe { f(status) }
}
