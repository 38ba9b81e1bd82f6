//! The interposed functions and the recording machinery (see the crate
//! documentation for the rules they follow).

use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use core::ptr::{self, null_mut};
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

use crate::libc;
use crate::wire::*;

const MAX_DEPTH: usize = 64;
const BUF_CAP: usize = 256 * 1024;
const CHUNK_HEAD: usize = 8;

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
const DISABLED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static OUT_FD: AtomicI32 = AtomicI32::new(-1);
static SEQ: AtomicU64 = AtomicU64::new(0);
static DEPTH: AtomicUsize = AtomicUsize::new(10);
static MODULES: AtomicU32 = AtomicU32::new(MODULE_MEMORY);
static BUFFERS: AtomicPtr<Buf> = AtomicPtr::new(null_mut());
/// The output directory, NUL-terminated (copied from the environment).
static mut OUT_DIR: [u8; 1024] = [0; 1024];

/// Per-thread state without thread-local storage: a TLS segment in this
/// library would enlarge every thread's DTV (an allocation the traced
/// program makes) and so change what it allocates. Threads are told apart
/// by `pthread_self()`, the address of their descriptor; a reused
/// descriptor is a reused stack, so the cached bounds stay right.
struct Slot {
    key: AtomicUsize,
    guard: AtomicBool,
    buf: AtomicPtr<Buf>,
    lo: AtomicUsize,
    hi: AtomicUsize,
}

const SLOTS_N: usize = 16384;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    key: AtomicUsize::new(0),
    guard: AtomicBool::new(false),
    buf: AtomicPtr::new(null_mut()),
    lo: AtomicUsize::new(0),
    hi: AtomicUsize::new(0),
};
static SLOTS: [Slot; SLOTS_N] = [EMPTY_SLOT; SLOTS_N];
/// Threads that found no free slot (they are not recorded).
static NO_SLOT: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
fn slot() -> Option<&'static Slot> {
    // SAFETY: pthread_self only reads the thread pointer.
    let me = unsafe { libc::pthread_self() } as usize;
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

unsafe fn resolve(slot: &AtomicUsize, name: &CStr) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p != 0 {
        return p;
    }
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the
    // definition after ours (libc's).
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
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

fn die(msg: &str) -> ! {
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

/// Whether recording is on for `module`, initialising on first use.
/// `false` inside our own code (guard), during initialisation, or when
/// disabled.
#[inline(always)]
fn enabled(module: u32) -> bool {
    let state = STATE.load(Ordering::Acquire);
    if state != READY && !init_slow() {
        return false;
    }
    MODULES.load(Ordering::Relaxed) & module != 0 && !guarded()
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
    let Some(dir) = (unsafe { getenv(c"TRACEKIT_RTRACE_DIR") }) else {
        return false;
    };
    if dir.is_empty() || dir.len() >= 1000 {
        return false;
    }
    // SAFETY: single-threaded initialisation owns OUT_DIR.
    unsafe {
        let out = &mut *ptr::addr_of_mut!(OUT_DIR);
        out[..dir.len()].copy_from_slice(dir);
        out[dir.len()] = 0;
    }
    // SAFETY: reading the environment.
    if let Some(d) = unsafe { getenv(c"TRACEKIT_RTRACE_DEPTH") }.and_then(parse_usize) {
        DEPTH.store(d.min(MAX_DEPTH), Ordering::Relaxed);
    }
    // SAFETY: reading the environment.
    if let Some(m) = unsafe { getenv(c"TRACEKIT_RTRACE_MODULES") } {
        let mut mask = 0;
        for part in m.split(|&b| b == b',') {
            match part {
                b"memory" => mask |= MODULE_MEMORY,
                b"file" => mask |= MODULE_FILE,
                _ => {}
            }
        }
        MODULES.store(mask, Ordering::Relaxed);
    }
    // SAFETY: opening our file and registering the fork handler.
    unsafe {
        if !open_output() {
            return false;
        }
        libc::pthread_atfork(None, None, Some(after_fork_child));
    }
    true
}

/// Creates `<dir>/<pid>-<n>.tkrt` (first free n) and writes the header.
unsafe fn open_output() -> bool {
    // SAFETY: getpid/getppid cannot fail.
    let (pid, ppid) = unsafe { (libc::getpid(), libc::getppid()) };
    let mut path = [0u8; 1100];
    // SAFETY: OUT_DIR is written once during initialisation.
    let dir = unsafe { &*ptr::addr_of!(OUT_DIR) };
    let dir_len = dir.iter().position(|&b| b == 0).unwrap_or(0);
    path[..dir_len].copy_from_slice(&dir[..dir_len]);
    let mut len = dir_len;
    path[len] = b'/';
    len += 1;
    len += write_dec(&mut path[len..], pid as u64);
    path[len] = b'-';
    len += 1;
    for n in 0..10_000u64 {
        let l = len + write_dec(&mut path[len..], n);
        path[l..l + 6].copy_from_slice(b".tkrt\0");
        let open: OpenFn = real!(R_OPEN, c"open", OpenFn);
        // SAFETY: NUL-terminated path.
        let fd = unsafe {
            open(
                path.as_ptr().cast(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_APPEND | libc::O_CLOEXEC,
                0o644,
            )
        };
        if fd >= 0 {
            // Keep our descriptor out of the program's way (low numbers
            // are what programs expect to get back from open()).
            // SAFETY: fcntl/close on our own descriptor.
            let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 700) };
            let fd = if high >= 0 {
                // SAFETY: our own descriptor.
                unsafe { libc::syscall(libc::SYS_close, fd as core::ffi::c_long) };
                high
            } else {
                fd
            };
            OUT_FD.store(fd, Ordering::Release);
            // SAFETY: header write on our descriptor.
            unsafe { write_header(fd, pid as u32, ppid as u32) };
            return true;
        }
        // SAFETY: errno location is thread-local and valid.
        if unsafe { *libc::__errno_location() } != libc::EEXIST {
            return false;
        }
    }
    false
}

fn write_dec(out: &mut [u8], mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        out[i] = tmp[n - 1 - i];
    }
    n
}

unsafe fn write_header(fd: c_int, pid: u32, ppid: u32) {
    let mut buf = [0u8; CHUNK_HEAD + HEADER_FIXED + 4096];
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    let p = &mut buf[CHUNK_HEAD..];
    p[0..4].copy_from_slice(&pid.to_le_bytes());
    p[4..8].copy_from_slice(&ppid.to_le_bytes());
    p[8..16].copy_from_slice(&(ts.tv_sec as u64).to_le_bytes());
    p[16..24].copy_from_slice(&(now_ms() as u64).to_le_bytes());
    p[24..28].copy_from_slice(&(DEPTH.load(Ordering::Relaxed) as u32).to_le_bytes());
    p[28..32].copy_from_slice(&MODULES.load(Ordering::Relaxed).to_le_bytes());
    // SAFETY: readlink into our buffer, bounded by its length.
    let n = unsafe {
        libc::readlink(
            c"/proc/self/exe".as_ptr(),
            p[HEADER_FIXED..].as_mut_ptr().cast(),
            4096,
        )
    };
    let n = n.max(0) as usize;
    let payload = HEADER_FIXED + n;
    buf[0..4].copy_from_slice(&TAG_HEADER);
    buf[4..8].copy_from_slice(&(payload as u32).to_le_bytes());
    // SAFETY: writing our buffer to our descriptor.
    unsafe { write_all(fd, &buf[..CHUNK_HEAD + payload]) };
}

unsafe fn write_all(fd: c_int, mut data: &[u8]) {
    while !data.is_empty() {
        // SAFETY: write(2) of a valid buffer.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            // SAFETY: errno location is valid.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return;
        }
        data = &data[n as usize..];
    }
}

extern "C" fn after_fork_child() {
    // The child starts its own file and numbering; the parent's unwritten
    // events stay the parent's.
    SEQ.store(0, Ordering::Relaxed);
    let mut b = BUFFERS.load(Ordering::Acquire);
    while !b.is_null() {
        // SAFETY: buffers are never freed; only this thread exists now.
        unsafe {
            (*b).len = CHUNK_HEAD;
            (*b).lock.store(OPEN, Ordering::Release);
            b = (*b).next;
        }
    }
    set_guard(true);
    // SAFETY: our own descriptor; a new file for the child.
    unsafe {
        let old = OUT_FD.swap(-1, Ordering::AcqRel);
        if old >= 0 {
            libc::syscall(libc::SYS_close, old as core::ffi::c_long);
        }
        if !open_output() {
            STATE.store(DISABLED, Ordering::Release);
        }
    }
    set_guard(false);
}

// ---------------------------------------------------------------------
// Per-thread buffers

const OPEN: u32 = 0;
const BUSY: u32 = 1;
const CLOSED: u32 = 2;
const FLUSHING: u32 = 3;

#[repr(C)]
struct Buf {
    next: *mut Buf,
    lock: AtomicU32,
    len: usize,
    data: [u8; BUF_CAP],
}

unsafe fn my_buf() -> *mut Buf {
    let Some(slot) = slot() else {
        return null_mut();
    };
    let b = slot.buf.load(Ordering::Relaxed);
    if !b.is_null() {
        return b;
    }
    // SAFETY: anonymous private mapping, not the hooked allocator.
    let p = unsafe {
        libc::mmap(
            null_mut(),
            core::mem::size_of::<Buf>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return null_mut();
    }
    let b = p as *mut Buf;
    // SAFETY: fresh zeroed mapping of the right size; publish with a CAS.
    unsafe {
        (*b).len = CHUNK_HEAD;
        let mut head = BUFFERS.load(Ordering::Acquire);
        loop {
            (*b).next = head;
            match BUFFERS.compare_exchange_weak(head, b, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
    }
    slot.buf.store(b, Ordering::Relaxed);
    b
}

/// Writes the buffered events as one chunk; the caller holds the lock.
unsafe fn flush_locked(b: *mut Buf) {
    // SAFETY: the caller owns the buffer through its lock.
    unsafe {
        let len = (*b).len;
        if len > CHUNK_HEAD {
            let data = &mut (*b).data;
            data[0..4].copy_from_slice(&TAG_EVENTS);
            data[4..8].copy_from_slice(&((len - CHUNK_HEAD) as u32).to_le_bytes());
            write_all(OUT_FD.load(Ordering::Acquire), &data[..len]);
        }
        (*b).len = CHUNK_HEAD;
    }
}

unsafe fn append(event: &[u8]) {
    // SAFETY: buffer from our own mapping.
    let b = unsafe { my_buf() };
    if b.is_null() {
        // SAFETY: direct write of one event.
        unsafe { write_single(event) };
        return;
    }
    // SAFETY: the lock serialises us with the exit/exec flusher.
    unsafe {
        loop {
            match (*b)
                .lock
                .compare_exchange(OPEN, BUSY, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(CLOSED) => {
                    write_single(event);
                    return;
                }
                Err(_) => core::hint::spin_loop(),
            }
        }
        if (*b).len + event.len() > BUF_CAP {
            flush_locked(b);
        }
        let len = (*b).len;
        (&mut (*b).data)[len..len + event.len()].copy_from_slice(event);
        (*b).len = len + event.len();
        (*b).lock.store(OPEN, Ordering::Release);
    }
}

unsafe fn write_single(event: &[u8]) {
    let mut chunk = [0u8; CHUNK_HEAD + EVENT_FIXED + 8 * MAX_DEPTH];
    chunk[0..4].copy_from_slice(&TAG_EVENTS);
    chunk[4..8].copy_from_slice(&(event.len() as u32).to_le_bytes());
    chunk[CHUNK_HEAD..CHUNK_HEAD + event.len()].copy_from_slice(event);
    // SAFETY: our descriptor, our buffer.
    unsafe {
        write_all(
            OUT_FD.load(Ordering::Acquire),
            &chunk[..CHUNK_HEAD + event.len()],
        )
    };
}

/// Writes every thread's buffer; `close` makes later events unbuffered
/// (process exit), otherwise buffering resumes (exec that may fail).
unsafe fn flush_all(close: bool) {
    let mut b = BUFFERS.load(Ordering::Acquire);
    while !b.is_null() {
        // SAFETY: buffers are never freed.
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

/// Appends /proc/self/maps as one chunk (the decoder keeps the last).
unsafe fn write_maps() {
    const CAP: usize = 4 << 20;
    // SAFETY: private anonymous mapping for the copy, freed below; the
    // file is read with raw syscalls.
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
            let mut len = CHUNK_HEAD;
            while len < CAP {
                let n = libc::read(fd, buf[len..].as_mut_ptr().cast(), CAP - len);
                if n <= 0 {
                    break;
                }
                len += n as usize;
            }
            libc::syscall(libc::SYS_close, fd as core::ffi::c_long);
            buf[0..4].copy_from_slice(&TAG_MAPS);
            buf[4..8].copy_from_slice(&((len - CHUNK_HEAD) as u32).to_le_bytes());
            write_all(OUT_FD.load(Ordering::Acquire), &buf[..len]);
        }
        libc::munmap(p, CAP);
    }
}

/// Everything written, maps appended: before the image goes away.
unsafe fn finish(close: bool) {
    if STATE.load(Ordering::Acquire) != READY {
        return;
    }
    set_guard(true);
    // SAFETY: flushing our buffers to our descriptor.
    unsafe {
        flush_all(close);
        write_maps();
    }
    set_guard(false);
}

extern "C" fn at_exit() {
    // SAFETY: runs from the ELF destructors at exit.
    unsafe { finish(true) };
}

#[used]
#[unsafe(link_section = ".fini_array")]
static FINI: extern "C" fn() = at_exit;

extern "C" fn at_load() {
    // Start eagerly so that an image that never allocates still gets its
    // (empty) trace; hooks called earlier have initialised already.
    if STATE.load(Ordering::Acquire) == UNINIT {
        init_slow();
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = at_load;

// ---------------------------------------------------------------------
// Events

fn now_ms() -> u32 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer (vDSO, no allocation).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ((ts.tv_sec as u64 % 86_400) * 1000 + ts.tv_nsec as u64 / 1_000_000) as u32
}

#[inline(always)]
fn take_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

fn stack_bounds() -> (usize, usize) {
    let Some(slot) = slot() else {
        return (1, 1);
    };
    let lo = slot.lo.load(Ordering::Relaxed);
    if lo != 0 {
        return (lo, slot.hi.load(Ordering::Relaxed));
    }
    let mut bounds = (1, 1);
    // SAFETY: pthread_getattr_np fills `attr`, which we destroy; the
    // allocations it may make pass through (the guard is set).
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
            let mut addr: *mut c_void = null_mut();
            let mut size: usize = 0;
            if libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0 {
                bounds = (addr as usize, addr as usize + size);
            }
            libc::pthread_attr_destroy(&mut attr);
        }
    }
    slot.hi.store(bounds.1, Ordering::Relaxed);
    slot.lo.store(bounds.0, Ordering::Relaxed);
    bounds
}

/// Return addresses: the caller's, then the frame-pointer chain.
#[inline(always)]
unsafe fn walk(ret: usize, mut fp: usize, depth: usize, out: &mut [u64; MAX_DEPTH]) -> usize {
    if depth == 0 {
        return 0;
    }
    out[0] = ret as u64;
    let mut n = 1;
    let here = &n as *const usize as usize;
    let (lo, hi) = stack_bounds();
    // Only walk when we are on the thread's own stack (not a signal
    // stack) and the chain stays inside it, going up.
    if here < lo || here >= hi {
        return n;
    }
    while n < depth {
        if fp < here || fp & 7 != 0 || fp + 16 > hi {
            break;
        }
        // SAFETY: fp is inside [here, hi), the mapped part of our stack.
        let (next, r) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if r < 4096 {
            break;
        }
        out[n] = r as u64;
        n += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    n
}

#[inline(always)]
fn record(
    kind: u8,
    res: u8,
    func: u8,
    size: u64,
    id: u64,
    seq: u64,
    ret: usize,
    fp: usize,
    bt: bool,
) {
    set_guard(true);
    let mut frames = [0u64; MAX_DEPTH];
    let n = if bt {
        // SAFETY: bounded walk over our own stack.
        unsafe { walk(ret, fp, DEPTH.load(Ordering::Relaxed), &mut frames) }
    } else {
        0
    };
    let mut ev = [0u8; EVENT_FIXED + 8 * MAX_DEPTH];
    ev[0] = kind;
    ev[1] = res;
    ev[2] = func;
    ev[3] = n as u8;
    ev[4..8].copy_from_slice(&now_ms().to_le_bytes());
    ev[8..16].copy_from_slice(&seq.to_le_bytes());
    ev[16..24].copy_from_slice(&size.to_le_bytes());
    ev[24..32].copy_from_slice(&id.to_le_bytes());
    for (i, f) in frames[..n].iter().enumerate() {
        ev[EVENT_FIXED + 8 * i..EVENT_FIXED + 8 * i + 8].copy_from_slice(&f.to_le_bytes());
    }
    // SAFETY: appending our event.
    unsafe { append(&ev[..EVENT_FIXED + 8 * n]) };
    set_guard(false);
}

fn void(seq: u64) {
    record(KIND_VOID, 0, 0, 0, 0, seq, 0, 0, false);
}

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
                concat!("mov ", $ret_reg, ", [rsp]"),
                concat!("mov ", $fp_reg, ", rbp"),
                "jmp {hook}",
                hook = sym $hook,
            )
        }
    };
}

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

unsafe extern "C" fn h_malloc(size: usize, ret: usize, fp: usize) -> *mut c_void {
    let on = enabled(MODULE_MEMORY);
    let p = real_malloc_or_arena(size);
    if on && !p.is_null() {
        record(
            KIND_ALLOC,
            RES_MEMORY,
            F_MALLOC,
            size as u64,
            p as u64,
            take_seq(),
            ret,
            fp,
            true,
        );
    }
    p
}

unsafe extern "C" fn h_calloc(n: usize, size: usize, ret: usize, fp: usize) -> *mut c_void {
    if R_CALLOC.load(Ordering::Acquire) == 0 && guarded() {
        // Arena memory is zeroed and never reused.
        return arena_alloc(n.saturating_mul(size));
    }
    let on = enabled(MODULE_MEMORY);
    let f = real!(R_CALLOC, c"calloc", CallocFn);
    // SAFETY: the real calloc.
    let p = unsafe { f(n, size) };
    if on && !p.is_null() {
        let total = n.wrapping_mul(size) as u64;
        record(
            KIND_ALLOC,
            RES_MEMORY,
            F_CALLOC,
            total,
            p as u64,
            take_seq(),
            ret,
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
    ret: usize,
    fp: usize,
    call: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let on = enabled(MODULE_MEMORY);
    let free_seq = (on && !p.is_null()).then(take_seq);
    let q = call();
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
            ret,
            fp,
            true,
        );
    }
    q
}

unsafe extern "C" fn h_realloc(p: *mut c_void, size: usize, ret: usize, fp: usize) -> *mut c_void {
    if in_arena(p) {
        let q = real_malloc_or_arena(size);
        if !q.is_null() {
            let avail = arena_base() + ARENA - p as usize;
            // SAFETY: both blocks are valid for the copied length.
            unsafe { ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, size.min(avail)) };
        }
        return q;
    }
    realloc_common(p, size, F_REALLOC, ret, fp, || {
        let f = real!(R_REALLOC, c"realloc", ReallocFn);
        // SAFETY: the real realloc.
        unsafe { f(p, size) }
    })
}

unsafe extern "C" fn h_reallocarray(
    p: *mut c_void,
    n: usize,
    size: usize,
    ret: usize,
    fp: usize,
) -> *mut c_void {
    realloc_common(p, n.wrapping_mul(size), F_REALLOCARRAY, ret, fp, || {
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
    let on = enabled(MODULE_MEMORY);
    let seq = if on { take_seq() } else { 0 };
    let f = real!(R_FREE, c"free", FreeFn);
    // SAFETY: the real free.
    unsafe { f(p) };
    if on {
        record(KIND_FREE, RES_MEMORY, F_FREE, 0, p as u64, seq, 0, 0, false);
    }
}

unsafe extern "C" fn h_posix_memalign(
    out: *mut *mut c_void,
    align: usize,
    size: usize,
    ret: usize,
    fp: usize,
) -> c_int {
    let on = enabled(MODULE_MEMORY);
    let f = real!(R_POSIX_MEMALIGN, c"posix_memalign", PosixMemalignFn);
    // SAFETY: the real posix_memalign.
    let rc = unsafe { f(out, align, size) };
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
            ret,
            fp,
            true,
        );
    }
    rc
}

macro_rules! aligned_hook {
    ($hook:ident, $slot:ident, $name:literal, $func:expr) => {
        unsafe extern "C" fn $hook(
            align: usize,
            size: usize,
            ret: usize,
            fp: usize,
        ) -> *mut c_void {
            let on = enabled(MODULE_MEMORY);
            let f = real!($slot, $name, AlignedFn);
            // SAFETY: the real function.
            let p = unsafe { f(align, size) };
            if on && !p.is_null() {
                record(
                    KIND_ALLOC,
                    RES_MEMORY,
                    $func,
                    size as u64,
                    p as u64,
                    take_seq(),
                    ret,
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
        unsafe extern "C" fn $hook(size: usize, ret: usize, fp: usize) -> *mut c_void {
            let on = enabled(MODULE_MEMORY);
            let f = real!($slot, $name, MallocFn);
            // SAFETY: the real function.
            let p = unsafe { f(size) };
            if on && !p.is_null() {
                record(
                    KIND_ALLOC,
                    RES_MEMORY,
                    $func,
                    size as u64,
                    p as u64,
                    take_seq(),
                    ret,
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
fn fd_alloc(fd: c_int, func: u8, ret: usize, fp: usize) {
    if fd >= 0 {
        record(
            KIND_ALLOC,
            RES_FD,
            func,
            1,
            fd as u64,
            take_seq(),
            ret,
            fp,
            true,
        );
    }
}

macro_rules! fd_hook {
    ($hook:ident, $slot:ident, $name:literal, $ty:ty, $func:expr, ($($arg:ident : $aty:ty),*)) => {
        unsafe extern "C" fn $hook($($arg: $aty,)* ret: usize, fp: usize) -> c_int {
            let on = enabled(MODULE_FILE);
            let f = real!($slot, $name, $ty);
            // SAFETY: the real function with the caller's arguments.
            let fd = unsafe { f($($arg),*) };
            if on {
                fd_alloc(fd, $func, ret, fp);
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
    if fd >= 0 && fd == OUT_FD.load(Ordering::Acquire) {
        // The recorder's own file: a program closing "all" descriptors
        // must not end the recording. Report success.
        return 0;
    }
    let on = enabled(MODULE_FILE);
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
    ret: usize,
    fp: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let on = enabled(MODULE_FILE) && old != new;
    let seq = if on { take_seq() } else { 0 };
    let rc = call();
    if on {
        if rc >= 0 {
            // The target was implicitly closed (if it was open).
            record(KIND_FREE, RES_FD, func, 0, new as u64, seq, 0, 0, false);
            fd_alloc(rc, func, ret, fp);
        } else {
            void(seq);
        }
    }
    rc
}

unsafe extern "C" fn h_dup2(old: c_int, new: c_int, ret: usize, fp: usize) -> c_int {
    dup_common(old, new, F_DUP2, ret, fp, || {
        let f = real!(R_DUP2, c"dup2", Dup2Fn);
        // SAFETY: the real dup2.
        unsafe { f(old, new) }
    })
}

unsafe extern "C" fn h_dup3(old: c_int, new: c_int, flags: c_int, ret: usize, fp: usize) -> c_int {
    dup_common(old, new, F_DUP3, ret, fp, || {
        let f = real!(R_DUP3, c"dup3", Dup3Fn);
        // SAFETY: the real dup3.
        unsafe { f(old, new, flags) }
    })
}

unsafe extern "C" fn h_pipe(fds: *mut c_int, ret: usize, fp: usize) -> c_int {
    let on = enabled(MODULE_FILE);
    let f = real!(R_PIPE, c"pipe", PipeFn);
    // SAFETY: the real pipe.
    let rc = unsafe { f(fds) };
    if on && rc == 0 {
        // SAFETY: on success both slots hold descriptors.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        fd_alloc(a, F_PIPE, ret, fp);
        fd_alloc(b, F_PIPE, ret, fp);
    }
    rc
}

unsafe extern "C" fn h_pipe2(fds: *mut c_int, flags: c_int, ret: usize, fp: usize) -> c_int {
    let on = enabled(MODULE_FILE);
    let f = real!(R_PIPE2, c"pipe2", Pipe2Fn);
    // SAFETY: the real pipe2.
    let rc = unsafe { f(fds, flags) };
    if on && rc == 0 {
        // SAFETY: on success both slots hold descriptors.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        fd_alloc(a, F_PIPE2, ret, fp);
        fd_alloc(b, F_PIPE2, ret, fp);
    }
    rc
}

macro_rules! fopen_hook {
    ($hook:ident, $slot:ident, $name:literal, $func:expr) => {
        unsafe extern "C" fn $hook(
            path: *const c_char,
            mode: *const c_char,
            ret: usize,
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
                    ret,
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

unsafe extern "C" fn h_fdopen(
    fd: c_int,
    mode: *const c_char,
    ret: usize,
    fp: usize,
) -> *mut c_void {
    let on = enabled(MODULE_FILE);
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
            record(
                KIND_ALLOC,
                RES_FP,
                F_FDOPEN,
                1,
                stream as u64,
                take_seq(),
                ret,
                fp,
                true,
            );
        }
    }
    stream
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fclose(stream: *mut c_void) -> c_int {
    let on = enabled(MODULE_FILE);
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
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECVE, c"execve", ExecveFn);
    // SAFETY: the real execve.
    unsafe { f(path, argv, envp) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECVPE, c"execvpe", ExecveFn);
    // SAFETY: the real execvpe.
    unsafe { f(file, argv, envp) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECV, c"execv", ExecvFn);
    // SAFETY: the real execv.
    unsafe { f(path, argv) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: flushing our own buffers.
    unsafe { finish(false) };
    let f = real!(R_EXECVP, c"execvp", ExecvFn);
    // SAFETY: the real execvp.
    unsafe { f(file, argv) }
}

// execl, execle and execlp are variadic and reach execve inside libc
// without going through our hook: write everything out first, then jump
// to the real function with the caller's registers and stack untouched.
macro_rules! flush_then_jump {
    ($name:ident => $prep:ident, $slot:ident, $cname:literal) => {
        extern "C" fn $prep() -> usize {
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    // SAFETY: flushing our own buffers.
    unsafe { finish(true) };
    let f = real!(R_EXIT, c"_exit", ExitFn);
    // SAFETY: the real _exit.
    unsafe { f(status) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    // SAFETY: flushing our own buffers.
    unsafe { finish(true) };
    let f = real!(R_EXIT2, c"_Exit", ExitFn);
    // SAFETY: the real _Exit.
    unsafe { f(status) }
}
