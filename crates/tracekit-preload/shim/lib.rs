//! The preload shim (see the crate documentation in `src/lib.rs`). Built by
//! `build.rs` as a `no_std`, `panic=abort` cdylib. The record layout is the
//! one of `tracekit_kwinject::record::events`; records travel as events of a
//! POSIX trace stream, written with `tracekit_posix::producer` (compiled
//! into this library from its source: it needs only `core`).

#![no_std]
#![allow(non_camel_case_types, static_mut_refs, clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int, c_void};
use core::ptr::{null, null_mut};
use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering::Acquire, Ordering::Relaxed,
    Ordering::Release,
};

#[allow(dead_code)]
#[path = "../../tracekit-posix/src/consts.rs"]
mod consts;
#[allow(dead_code)]
#[path = "../../tracekit-posix/src/producer.rs"]
mod producer;

use producer::{OpaqueHeader, Outcome};

type pid_t = i32;

#[repr(C)]
struct Dl_info {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

extern "C" {
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn lseek(fd: c_int, off: i64, whence: c_int) -> i64;
    fn close(fd: c_int) -> c_int;
    fn getauxval(t: u64) -> u64;
    fn dlsym(h: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dladdr(addr: *const c_void, info: *mut Dl_info) -> c_int;
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn abort() -> !;
    fn __errno_location() -> *mut c_int;
    static environ: *const *const c_char;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // Nothing here panics on purpose; inside someone else's process,
    // stopping is the only safe answer.
    // SAFETY: abort never returns.
    unsafe { abort() }
}

/// The precompiled `core` refers to the unwinding personality even with
/// `panic=abort`; nothing here unwinds, so it is never called.
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}

/// What the hooks' usual paths need from the kernel, without libc: in a
/// fork child each libc function used for the first time costs a page
/// fault (a child does not inherit its parent's page tables of file
/// mappings), and a direct call leaves `errno` alone.
#[cfg(target_arch = "x86_64")]
mod sys {
    use core::arch::asm;

    #[inline(always)]
    unsafe fn syscall2(n: usize, a: usize, b: usize) -> isize {
        let r: isize;
        // SAFETY: the caller passes a system call and arguments valid for it.
        unsafe {
            asm!("syscall", inlateout("rax") n as isize => r, in("rdi") a, in("rsi") b,
                 lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        r
    }

    pub fn getpid() -> i32 {
        // SAFETY: getpid(2) takes no arguments and cannot fail.
        unsafe { syscall2(39, 0, 0) as i32 }
    }

    pub fn getppid() -> i32 {
        // SAFETY: getppid(2) takes no arguments and cannot fail.
        unsafe { syscall2(110, 0, 0) as i32 }
    }

    /// getcwd(2) into `buf`: the path's length with its NUL, or `-errno`.
    pub unsafe fn getcwd(buf: *mut u8, size: usize) -> isize {
        // SAFETY: the caller passes `size` writable bytes at `buf`.
        unsafe { syscall2(79, buf as usize, size) }
    }

    /// glibc's `pthread_self()` on x86-64: the thread's control block,
    /// which points to itself at `%fs:0x10`.
    pub fn thread_self() -> u64 {
        let t: u64;
        // SAFETY: reads one word of the thread's own control block.
        unsafe {
            asm!("mov {}, qword ptr fs:[0x10]", out(reg) t, options(nostack, readonly, preserves_flags));
        }
        t
    }

    /// Copies `n` bytes (no call to libc's `memcpy`).
    #[inline(always)]
    pub unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
        // SAFETY: the caller passes `n` readable bytes at `src` and `n`
        // writable ones at `dst`, not overlapping; the direction flag is
        // clear by the ABI.
        unsafe {
            asm!("rep movsb", inout("rcx") n => _, inout("rsi") src => _, inout("rdi") dst => _,
                 options(nostack, preserves_flags));
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod sys {
    extern "C" {
        fn pthread_self() -> u64;
        #[link_name = "getpid"]
        fn c_getpid() -> i32;
        #[link_name = "getppid"]
        fn c_getppid() -> i32;
        #[link_name = "getcwd"]
        fn c_getcwd(buf: *mut u8, size: usize) -> *mut u8;
        fn __errno_location() -> *mut i32;
    }

    pub fn getpid() -> i32 {
        // SAFETY: no preconditions.
        unsafe { c_getpid() }
    }

    pub fn getppid() -> i32 {
        // SAFETY: no preconditions.
        unsafe { c_getppid() }
    }

    pub unsafe fn getcwd(buf: *mut u8, size: usize) -> isize {
        // SAFETY: the caller passes `size` writable bytes at `buf`.
        unsafe {
            let e = *__errno_location();
            let r = if c_getcwd(buf, size).is_null() {
                -(*__errno_location() as isize)
            } else {
                let mut n = 0;
                while *buf.add(n) != 0 {
                    n += 1;
                }
                n as isize + 1
            };
            *__errno_location() = e;
            r
        }
    }

    pub fn thread_self() -> u64 {
        // SAFETY: no preconditions.
        unsafe { pthread_self() }
    }

    pub unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
        // SAFETY: as the caller guarantees.
        unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
    }
}

const O_RDWR: c_int = 0o2;
const SEEK_END: c_int = 2;
const PROT_READ_WRITE: c_int = 3;
const MAP_SHARED: c_int = 1;
const O_CLOEXEC: c_int = 0o2000000;
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
const AT_EXECFN: u64 = 31;

const MAGIC: u32 = 0x544B_5231;
const HEADER: usize = 32;
const KIND_EXEC: u32 = 1;
const KIND_FORK: u32 = 2;
const KIND_REAPED: u32 = 3;
const KIND_EXEC_CALLED: u32 = 4;
const KIND_EXEC_FAILED: u32 = 5;
const KIND_EXEC_REPLACES: u32 = 6;

const OUT_VAR: &[u8] = b"TRACEKIT_PRELOAD_OUT=";
/// The user event type the recorder registers in the stream.
const EVENT_NAME: &[u8] = b"tracekit.build";
/// Each event carries `pid, serial, offset, total` (u32 each) before its
/// piece of the record.
const FRAGMENT_HEADER: usize = 16;

const PRELOAD_VAR: &[u8] = b"LD_PRELOAD=";
const PATH_MAX: usize = 4096;

/// The longest stream path the shim takes (the recorder's are short paths
/// in `/dev/shm`): the library's writable data stays within one page, and
/// each page of it costs every process a fault.
const OUT_MAX: usize = 256;
/// `TRACEKIT_PRELOAD_OUT=<stream file>`, NUL-terminated; empty when this
/// process is not recorded.
static mut OUT_ENTRY: [u8; OUT_VAR.len() + OUT_MAX + 1] = [0; OUT_VAR.len() + OUT_MAX + 1];
static mut OUT_LEN: usize = 0;
/// This library's own path (for putting `LD_PRELOAD` back), found on first
/// need: the dynamic linker's name of our object, which lives as long as
/// the process (a preloaded library is never unloaded). 0: not looked up
/// yet; 1: looked up, unknown.
static LIB: AtomicUsize = AtomicUsize::new(0);
/// The mapped stream (null: not mapped) and our event type in it. A
/// process whose exec its caller reported maps the stream only when it
/// first needs it (fork, wait, exec): most processes of a build never do.
static STREAM: AtomicPtr<OpaqueHeader> = AtomicPtr::new(null_mut());
static EVENT_ID: AtomicU32 = AtomicU32::new(0);
/// Mapping was tried and failed (not a stream of ours): not tried again.
static MAP_FAILED: AtomicBool = AtomicBool::new(false);
/// The mark the caller's exec hook put on the variable (`@PID.HASH@`:
/// "I reported the exec of HASH(path) by PID"), 0 when there was none.
static mut MARK: (pid_t, u32) = (0, 0);

unsafe fn strlen(s: *const c_char) -> usize {
    let mut n = 0;
    while *s.add(n) != 0 {
        n += 1;
    }
    n
}

unsafe fn bytes<'a>(s: *const c_char) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    core::slice::from_raw_parts(s.cast(), strlen(s))
}

/// The stream, if this process has it mapped.
fn stream() -> Option<&'static OpaqueHeader> {
    // SAFETY: only ever set to a mapped, validated stream header that is
    // never unmapped.
    unsafe { STREAM.load(Acquire).as_ref() }
}

/// The stream, mapped now if this process is recorded and has not mapped
/// it yet.
unsafe fn ensure_stream() -> Option<&'static OpaqueHeader> {
    if let Some(h) = stream() {
        return Some(h);
    }
    if !propagate() || MAP_FAILED.load(Relaxed) {
        return None;
    }
    map_stream(sys::getpid());
    let h = stream();
    if h.is_none() {
        MAP_FAILED.store(true, Relaxed);
    }
    h
}

/// The recorder's variable was given: keep it (and us) in the environment
/// of the programs this one starts.
unsafe fn propagate() -> bool {
    OUT_LEN > 0
}

unsafe fn out_path() -> *const c_char {
    OUT_ENTRY.as_ptr().add(OUT_VAR.len()).cast()
}

/// Maps the stream named by the variable; stays inactive if it is not a
/// stream for all processes with our event type registered.
unsafe fn map_stream(pid: pid_t) {
    let errno = *__errno_location();
    map_stream_as(pid);
    *__errno_location() = errno;
}

unsafe fn map_stream_as(pid: pid_t) {
    let fd = open(out_path(), O_RDWR | O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let len = lseek(fd, 0, SEEK_END);
    if len < producer::header_size() as i64 {
        close(fd);
        return;
    }
    let len = len as usize;
    let m = mmap(null_mut(), len, PROT_READ_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if m as isize == -1 {
        return;
    }
    let h = &*(m as *const OpaqueHeader);
    let who = h.traced_pid.load(Relaxed);
    let id = if producer::is_valid(h, len) && (who == -1 || who == pid) {
        producer::lookup(h, EVENT_NAME)
    } else {
        None
    };
    match id {
        Some(id) if h.max_data_size as usize > FRAGMENT_HEADER => {
            EVENT_ID.store(id, Relaxed);
            // Two threads may map at once: the first mapping wins, the
            // other is given back.
            let won = STREAM
                .compare_exchange(null_mut(), m.cast(), Release, Acquire)
                .is_ok();
            if !won {
                munmap(m, len);
            }
        }
        _ => {
            munmap(m, len);
        }
    }
}

/// Bytes of a fragment staged on the stack (header included): a record is
/// streamed through this buffer, never built whole. Frames of a page or
/// more get stack probes that touch (and fault in) every page of them in
/// every process, and each stack page a fork child writes first costs it
/// a copy, so frames stay small: this is the recorder's event size (its
/// 512-byte slots hold 464 bytes of data).
const STAGE: usize = 512;

/// Streams one record of a known length into the stream as events of at
/// most max-data-size bytes, each behind a fragment header; no system call
/// (the clock is the vDSO's or the TSC). A fragment the stream refuses
/// (full) is counted lost by the stream; the rest of the record is not
/// sent then, and the recorder reports the incomplete record.
struct Fragments {
    stream: *const OpaqueHeader,
    pid: pid_t,
    serial: u32,
    total: usize,
    /// Record bytes already sent in earlier fragments.
    sent: usize,
    /// Record bytes staged after the header.
    staged: usize,
    /// Record bytes per fragment.
    room: usize,
    clock: u32,
    /// The stream time every fragment carries, when the caller gave one.
    stamp: Option<u64>,
    thread: u64,
    refused: bool,
    /// Fragment header then up to `room` record bytes; only
    /// `[..FRAGMENT_HEADER + staged]` is ever initialised and read.
    stage: core::mem::MaybeUninit<[u8; STAGE]>,
}

impl Fragments {
    /// `None` when not recording.
    unsafe fn new(pid: pid_t, total: usize) -> Option<Fragments> {
        Self::stamped(pid, total, None)
    }

    /// With `stamp`, every fragment carries that stream time instead of
    /// the time it is written.
    unsafe fn stamped(pid: pid_t, total: usize, stamp: Option<u64>) -> Option<Fragments> {
        let h = stream()?;
        let room = (h.max_data_size as usize - FRAGMENT_HEADER).min(STAGE - FRAGMENT_HEADER);
        let clock = clock_kind(h);
        Some(Fragments {
            stream: h,
            pid,
            total,
            sent: 0,
            staged: 0,
            room,
            // The record's identity with pid and thread: its start time
            // (no counter in our memory, whose page every fork would
            // make parent and child copy on their next record).
            serial: stamp.unwrap_or_else(|| producer::raw_now(clock)) as u32,
            clock,
            stamp,
            thread: sys::thread_self(),
            refused: false,
            stage: core::mem::MaybeUninit::uninit(),
        })
    }

    fn base(&mut self) -> *mut u8 {
        self.stage.as_mut_ptr().cast()
    }

    /// Appends record bytes (never more than `total` in all).
    unsafe fn put(&mut self, mut s: &[u8]) {
        while !s.is_empty() && !self.refused {
            let n = (self.room - self.staged).min(s.len());
            // SAFETY: FRAGMENT_HEADER + staged + n <= FRAGMENT_HEADER + room <= STAGE.
            sys::copy(
                s.as_ptr(),
                self.base().add(FRAGMENT_HEADER + self.staged),
                n,
            );
            self.staged += n;
            s = &s[n..];
            if self.staged == self.room {
                self.flush();
            }
        }
    }

    /// A string and its NUL.
    unsafe fn put_str(&mut self, s: &[u8]) {
        self.put(s);
        self.put(&[0]);
    }

    /// Sends what is staged as one event.
    unsafe fn flush(&mut self) {
        if self.staged == 0 || self.refused {
            return;
        }
        let mut head = [0u8; FRAGMENT_HEADER];
        head[0..4].copy_from_slice(&self.pid.to_ne_bytes());
        head[4..8].copy_from_slice(&self.serial.to_ne_bytes());
        head[8..12].copy_from_slice(&(self.sent as u32).to_ne_bytes());
        head[12..16].copy_from_slice(&(self.total as u32).to_ne_bytes());
        let base = self.base();
        core::ptr::copy_nonoverlapping(head.as_ptr(), base, FRAGMENT_HEADER);
        // SAFETY: the first FRAGMENT_HEADER + staged bytes were written above and in put().
        let event = core::slice::from_raw_parts(base, FRAGMENT_HEADER + self.staged);
        let ticks = self.stamp.unwrap_or_else(|| producer::raw_now(self.clock));
        let out = producer::write_event(
            &*self.stream,
            EVENT_ID.load(Relaxed),
            &[event],
            self.pid,
            self.thread,
            ticks,
        );
        self.sent += self.staged;
        self.staged = 0;
        self.refused = out != Outcome::Written;
    }
}

/// The raw clock of the stream (the first word of its calibration).
fn clock_kind(h: &OpaqueHeader) -> u32 {
    u32::from_ne_bytes([
        h.calibration.0[0],
        h.calibration.0[1],
        h.calibration.0[2],
        h.calibration.0[3],
    ])
}

/// Writes one small record, at stream time `stamp` if given (no libc
/// call: `errno` stays as it was).
unsafe fn emit(pid: pid_t, rec: &[u8], stamp: Option<u64>) {
    if let Some(mut f) = Fragments::stamped(pid, rec.len(), stamp) {
        f.put(rec);
        f.flush();
    }
}

fn header(buf: &mut [u8], len: usize, kind: u32, pid: i32, other: i32, count: u32, t: u64) {
    buf[0..4].copy_from_slice(&MAGIC.to_ne_bytes());
    buf[4..8].copy_from_slice(&(len as u32).to_ne_bytes());
    buf[8..12].copy_from_slice(&kind.to_ne_bytes());
    buf[12..16].copy_from_slice(&pid.to_ne_bytes());
    buf[16..20].copy_from_slice(&other.to_ne_bytes());
    buf[20..24].copy_from_slice(&count.to_ne_bytes());
    buf[24..32].copy_from_slice(&t.to_ne_bytes());
}

/// A record without payload, sent by process `me` (at stream time `stamp`
/// if given). Records carry no time of their own: the recorder takes the
/// stream time of their first piece (reading the clock here would cost a
/// fork child a page fault on the vDSO).
unsafe fn emit_small(me: pid_t, kind: u32, pid: i32, other: i32, stamp: Option<u64>) {
    let mut rec = [0u8; HEADER];
    header(&mut rec, HEADER, kind, pid, other, 0, 0);
    emit(me, &rec, stamp);
}

/// Runs first in every process that loads the shim. A process its
/// caller's exec hook already reported (the mark on our variable names
/// this pid and this program) does nothing more: it maps the stream only
/// if it comes to fork, wait or exec. Any other exec (`posix_spawn`,
/// `system`, `popen`, `execl*`, `fexecve`, a program not linked with the
/// shim calling `execve`) is reported here.
unsafe extern "C" fn init(argc: c_int, argv: *const *const c_char, envp: *const *const c_char) {
    find_out(envp);
    if propagate() {
        let pid = sys::getpid();
        let exe = bytes(execfn(envp));
        let (marked_pid, marked_exe) = MARK;
        if (marked_pid != pid || marked_exe != path_hash(exe)) && ensure_stream().is_some() {
            // The mark names us but another program: the caller's
            // reported exec became this one (glibc's `execvp` runs a
            // script without `#!` through /bin/sh), which replaces it.
            let kind = if marked_pid == pid {
                KIND_EXEC_REPLACES
            } else {
                KIND_EXEC
            };
            report_exec(kind, pid, exe, argc.max(0) as usize, argv, envp);
        }
    }
}

/// `AT_EXECFN`, the path this program was started by, read from the
/// auxiliary vector that follows the environment the loader passes to
/// constructors (on the initial stack); libc's `getauxval` if not there.
unsafe fn execfn(envp: *const *const c_char) -> *const c_char {
    if !envp.is_null() {
        let mut p = envp;
        while !(*p).is_null() {
            p = p.add(1);
        }
        let mut aux = p.add(1).cast::<u64>();
        while *aux != 0 {
            if *aux == AT_EXECFN {
                return *aux.add(1) as *const c_char;
            }
            aux = aux.add(2);
        }
    }
    getauxval(AT_EXECFN) as *const c_char
}

#[used]
#[link_section = ".init_array"]
static INIT: unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) = init;

/// FNV-1a of a path: the mark's way of naming the program an exec started.
fn path_hash(p: &[u8]) -> u32 {
    p.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}

/// Finds our variable, and takes the caller's mark (`@PID.HASH@`) off
/// its value in place, so this program and those it starts see the plain
/// stream path (and a mark never outlives the exec it was made for).
unsafe fn find_out(envp: *const *const c_char) {
    if envp.is_null() {
        return;
    }
    let mut i = 0;
    while !(*envp.add(i)).is_null() {
        let e = *envp.add(i);
        if let Some(value) = after_prefix(e, OUT_VAR) {
            if *value as u8 == b'@' {
                if let Some((pid, hash, path)) = parse_mark(value) {
                    MARK = (pid, hash);
                    // SAFETY: the environment strings are this process's
                    // own writable memory; the path moves left within its string.
                    let dst = value as *mut u8;
                    let mut k = 0;
                    loop {
                        let b = *path.add(k) as u8;
                        *dst.add(k) = b;
                        if b == 0 {
                            break;
                        }
                        k += 1;
                    }
                }
            }
            let e = bytes(e);
            if e.len() > OUT_VAR.len() && e.len() - OUT_VAR.len() <= OUT_MAX {
                sys::copy(e.as_ptr(), OUT_ENTRY.as_mut_ptr(), e.len());
                OUT_ENTRY[e.len()] = 0;
                OUT_LEN = e.len();
            }
            return;
        }
        i += 1;
    }
}

/// Reads `@PID.HASH@` (decimal pid, 8 hex digits) at the start of C
/// string `v`: the pid, the hash and where the path starts.
unsafe fn parse_mark(v: *const c_char) -> Option<(pid_t, u32, *const c_char)> {
    let at = |i: usize| *v.add(i) as u8;
    let mut i = 1;
    let mut pid: i32 = 0;
    while at(i).is_ascii_digit() && i < 11 {
        pid = pid.checked_mul(10)?.checked_add((at(i) - b'0') as i32)?;
        i += 1;
    }
    if i == 1 || at(i) != b'.' {
        return None;
    }
    i += 1;
    let mut hash = 0u32;
    for _ in 0..8 {
        let d = match at(i) {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        hash = hash << 4 | d as u32;
        i += 1;
    }
    if at(i) != b'@' {
        return None;
    }
    Some((pid, hash, v.add(i + 1)))
}

/// This library's path as the dynamic linker named it, looked up once.
unsafe fn lib() -> &'static [u8] {
    let mut at = LIB.load(Relaxed);
    if at == 0 {
        let mut info = Dl_info {
            dli_fname: null(),
            dli_fbase: null_mut(),
            dli_sname: null(),
            dli_saddr: null_mut(),
        };
        at = 1;
        if dladdr(init as *const c_void, &mut info) != 0 {
            let f = bytes(info.dli_fname);
            if f.starts_with(b"/") && f.len() < PATH_MAX {
                at = info.dli_fname as usize;
            }
        }
        LIB.store(at, Relaxed);
    }
    if at == 1 {
        &[]
    } else {
        bytes(at as *const c_char)
    }
}

const ERANGE: c_int = 34;

/// Sends an exec record of kind `kind` for process `pid` (the caller's
/// working directory). The working directory is read into a small buffer;
/// only a path longer than that takes the PATH_MAX one, in a frame of its
/// own.
unsafe fn report_exec(
    kind: u32,
    pid: pid_t,
    exe: &[u8],
    argc: usize,
    argv: *const *const c_char,
    envp: *const *const c_char,
) {
    if !report_exec_in::<512>(kind, pid, exe, argc, argv, envp) {
        report_exec_long_cwd(kind, pid, exe, argc, argv, envp);
    }
}

#[inline(never)]
unsafe fn report_exec_long_cwd(
    kind: u32,
    pid: pid_t,
    exe: &[u8],
    argc: usize,
    argv: *const *const c_char,
    envp: *const *const c_char,
) {
    report_exec_in::<PATH_MAX>(kind, pid, exe, argc, argv, envp);
}

/// [`report_exec`] with an `N`-byte buffer for the working directory;
/// false (nothing sent) when it is too long for that buffer (and `N` is
/// not already PATH_MAX). An unreadable directory is sent empty.
#[inline(always)]
unsafe fn report_exec_in<const N: usize>(
    kind: u32,
    pid: pid_t,
    exe: &[u8],
    argc: usize,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> bool {
    let mut cwd = core::mem::MaybeUninit::<[u8; N]>::uninit();
    let n = sys::getcwd(cwd.as_mut_ptr().cast(), N);
    if n == -(ERANGE as isize) && N < PATH_MAX {
        return false;
    }
    let cwd = if n > 0 {
        core::slice::from_raw_parts(cwd.as_ptr().cast::<u8>(), n as usize - 1)
    } else {
        &[][..]
    };
    send_exec(kind, pid, cwd, exe, argc, argv, envp);
    true
}

/// Streams the exec record (the layout of `events.rs`) straight from the
/// strings of the exec: no copy of the whole record.
#[inline(never)]
unsafe fn send_exec(
    kind: u32,
    pid: pid_t,
    cwd: &[u8],
    exe: &[u8],
    argc: usize,
    argv: *const *const c_char,
    envp: *const *const c_char,
) {
    let argc = if argv.is_null() { 0 } else { argc };
    let mut envc = 0;
    let mut len = HEADER + 4 + cwd.len() + 1 + exe.len() + 1;
    for i in 0..argc {
        len += bytes(*argv.add(i)).len() + 1;
    }
    if !envp.is_null() {
        while !(*envp.add(envc)).is_null() {
            len += bytes(*envp.add(envc)).len() + 1;
            envc += 1;
        }
    }
    let Some(mut out) = Fragments::new(pid, len) else {
        return;
    };
    let mut head = [0u8; HEADER + 4];
    header(&mut head, len, kind, pid, sys::getppid(), argc as u32, 0);
    head[HEADER..].copy_from_slice(&(envc as u32).to_ne_bytes());
    // Exactly the bytes counted in `len`, in the same order.
    out.put(&head);
    out.put_str(cwd);
    out.put_str(exe);
    for i in 0..argc {
        out.put_str(bytes(*argv.add(i)));
    }
    for i in 0..envc {
        out.put_str(bytes(*envp.add(i)));
    }
    out.flush();
}

/// The libc functions the hooks call on to, by name.
const NEXT_NAMES: [&[u8]; 7] = [
    b"execve\0",
    b"execvpe\0",
    b"fork\0",
    b"posix_spawn\0",
    b"posix_spawnp\0",
    b"wait4\0",
    b"waitpid\0",
];
/// Their addresses (0: not looked up yet; 1: not found).
static NEXT: [AtomicUsize; NEXT_NAMES.len()] = [const { AtomicUsize::new(0) }; NEXT_NAMES.len()];

/// Looks all of [`NEXT_NAMES`] up at once, on the first call of any hook:
/// a fork child then inherits them resolved. (`dlsym` itself is cheap, but
/// in a fork child it writes to the loader's pages, and copying those costs
/// a dozen page faults per child.)
#[cold]
unsafe fn resolve_next() {
    for (name, slot) in NEXT_NAMES.iter().zip(NEXT.iter()) {
        if slot.load(Relaxed) == 0 {
            let f = dlsym(RTLD_NEXT, name.as_ptr().cast()) as usize;
            slot.store(if f == 0 { 1 } else { f }, Relaxed);
        }
    }
    if propagate() {
        lib();
    }
}

/// The next definition of a hooked function.
macro_rules! real {
    ($name:literal, $ty:ty) => {{
        const I: usize = {
            let mut i = 0;
            while !eq_name(NEXT_NAMES[i], $name) {
                i += 1;
            }
            i
        };
        let mut f = NEXT[I].load(Relaxed);
        if f == 0 {
            resolve_next();
            f = NEXT[I].load(Relaxed);
        }
        if f <= 1 {
            abort();
        }
        core::mem::transmute::<usize, $ty>(f)
    }};
}

/// `with_nul` is `name` plus a NUL (for the compile-time index in `real!`).
const fn eq_name(with_nul: &[u8], name: &str) -> bool {
    let name = name.as_bytes();
    if with_nul.len() != name.len() + 1 {
        return false;
    }
    let mut i = 0;
    while i < name.len() {
        if with_nul[i] != name[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[no_mangle]
pub unsafe extern "C" fn fork() -> pid_t {
    let real = real!("fork", unsafe extern "C" fn() -> pid_t);
    // The parent reports the fork, stamped with a time taken before it:
    // the recorder, which orders records by time, sees it before anything
    // the child reports, and the child pays nothing (every page a fork
    // child touches first costs it a page fault).
    // (A process that has not mapped the stream yet maps it now, so the
    // child inherits it.)
    let before = ensure_stream().map(|h| producer::raw_now(clock_kind(h)));
    let r = real();
    if let (true, Some(stamp)) = (r > 0, before) {
        let me = sys::getpid();
        emit_small(me, KIND_FORK, r, me, Some(stamp));
    }
    r
}

unsafe fn reaped(pid: pid_t, status: c_int) {
    // Exited or killed (not stopped or continued).
    let exited = status & 0x7f == 0;
    let signalled = ((status & 0x7f) + 1) as i8 >> 1 > 0;
    if pid > 0 && (exited || signalled) && ensure_stream().is_some() {
        emit_small(sys::getpid(), KIND_REAPED, pid, status, None);
    }
}

#[no_mangle]
pub unsafe extern "C" fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t {
    let real = real!(
        "waitpid",
        unsafe extern "C" fn(pid_t, *mut c_int, c_int) -> pid_t
    );
    let mut st = 0;
    let r = real(pid, &mut st, options);
    if r > 0 {
        if !status.is_null() {
            *status = st;
        }
        reaped(r, st);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn wait4(
    pid: pid_t,
    status: *mut c_int,
    options: c_int,
    rusage: *mut c_void,
) -> pid_t {
    let real = real!(
        "wait4",
        unsafe extern "C" fn(pid_t, *mut c_int, c_int, *mut c_void) -> pid_t
    );
    let mut st = 0;
    let r = real(pid, &mut st, options, rusage);
    if r > 0 {
        if !status.is_null() {
            *status = st;
        }
        reaped(r, st);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn wait3(status: *mut c_int, options: c_int, rusage: *mut c_void) -> pid_t {
    let real = real!(
        "wait4",
        unsafe extern "C" fn(pid_t, *mut c_int, c_int, *mut c_void) -> pid_t
    );
    let mut st = 0;
    let r = real(-1, &mut st, options, rusage);
    if r > 0 {
        if !status.is_null() {
            *status = st;
        }
        reaped(r, st);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn wait(status: *mut c_int) -> pid_t {
    let real = real!(
        "waitpid",
        unsafe extern "C" fn(pid_t, *mut c_int, c_int) -> pid_t
    );
    let mut st = 0;
    let r = real(-1, &mut st, 0);
    if r > 0 {
        if !status.is_null() {
            *status = st;
        }
        reaped(r, st);
    }
    r
}

/// Largest environment the shim rebuilds (on the stack: this may run in a
/// vfork child, which must not touch the heap or map memory).
const MAX_ENV: usize = 2048;

/// Calls `f` with an environment that still carries the recorder's
/// variables: `envp` itself when it has them (the usual case: checked
/// without touching more stack), else a copy with them added.
unsafe fn with_env<R>(envp: *const *const c_char, f: impl FnOnce(*const *const c_char) -> R) -> R {
    if !propagate() || envp.is_null() || env_is_complete(envp) {
        return f(envp);
    }
    with_fixed_env(envp, f)
}

/// Has `envp` our `TRACEKIT_PRELOAD_OUT` and our library in `LD_PRELOAD`?
/// (Too large an environment, or an unknown library path, counts as
/// complete: it is passed on as it is.)
unsafe fn env_is_complete(envp: *const *const c_char) -> bool {
    let lib = lib();
    if lib.is_empty() {
        return true;
    }
    let mut has_out = false;
    let mut preload_ok = false;
    let mut n = 0;
    while !(*envp.add(n)).is_null() {
        let e = *envp.add(n);
        if after_prefix(e, OUT_VAR).is_some() {
            has_out = true;
        } else if let Some(list) = after_prefix(e, PRELOAD_VAR) {
            preload_ok = list_has(list, lib);
        }
        n += 1;
    }
    (has_out && preload_ok) || n + 2 >= MAX_ENV
}

// The checks below run on every exec, often in a fork child, where each
// first use of a libc function (strlen, memcmp) faults its page in; so they
// walk the C strings byte by byte themselves.

/// The rest of C string `s` after `prefix`, if it starts with it.
unsafe fn after_prefix(s: *const c_char, prefix: &[u8]) -> Option<*const c_char> {
    for (i, &b) in prefix.iter().enumerate() {
        if *s.add(i) as u8 != b {
            return None;
        }
    }
    Some(s.add(prefix.len()))
}

/// Is `item` one of the entries of the `:`- or space-separated C string `list`?
unsafe fn list_has(list: *const c_char, item: &[u8]) -> bool {
    let mut at = list;
    loop {
        let mut i = 0;
        while i < item.len() && *at.add(i) as u8 == item[i] {
            i += 1;
        }
        let end = *at.add(i) as u8;
        if i == item.len() && matches!(end, 0 | b':' | b' ') {
            return true;
        }
        // Skip to the next entry.
        let mut j = i;
        loop {
            match *at.add(j) as u8 {
                0 => return false,
                b':' | b' ' => break,
                _ => j += 1,
            }
        }
        at = at.add(j + 1);
    }
}

/// The copy: on the stack (this may run in a vfork child, which must not
/// touch the heap or map memory), in a frame of its own so the hooks'
/// usual path does not pay for its size.
#[inline(never)]
unsafe fn with_fixed_env<R>(
    envp: *const *const c_char,
    f: impl FnOnce(*const *const c_char) -> R,
) -> R {
    let lib = lib();
    let mut preload_at = None;
    let mut n = 0;
    while !(*envp.add(n)).is_null() {
        if bytes(*envp.add(n)).starts_with(PRELOAD_VAR) {
            preload_at = Some(n);
        }
        n += 1;
    }
    let preload_ok = preload_at.is_some_and(|i| {
        bytes(*envp.add(i))[PRELOAD_VAR.len()..]
            .split(|&c| c == b':' || c == b' ')
            .any(|p| p == lib)
    });
    let mut new_env: [*const c_char; MAX_ENV] = [null(); MAX_ENV];
    let mut preload = [0u8; PRELOAD_VAR.len() + 2 * PATH_MAX + 2];
    let mut m = 0;
    for i in 0..n {
        let e = *envp.add(i);
        if Some(i) == preload_at || bytes(e).starts_with(OUT_VAR) {
            continue;
        }
        new_env[m] = e;
        m += 1;
    }
    // LD_PRELOAD=<us>[:<what the build had>]
    let mut at = 0;
    for part in [PRELOAD_VAR, lib] {
        preload[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    if let Some(i) = preload_at {
        let old = &bytes(*envp.add(i))[PRELOAD_VAR.len()..];
        if !old.is_empty() && !preload_ok && at + 1 + old.len() < preload.len() {
            preload[at] = b':';
            preload[at + 1..at + 1 + old.len()].copy_from_slice(old);
            at += 1 + old.len();
        } else if preload_ok {
            at = 0;
            let whole = bytes(*envp.add(i));
            if whole.len() < preload.len() {
                preload[..whole.len()].copy_from_slice(whole);
                at = whole.len();
            }
        }
    }
    preload[at] = 0;
    new_env[m] = preload.as_ptr().cast();
    new_env[m + 1] = OUT_ENTRY.as_ptr().cast();
    f(new_env.as_ptr())
}

/// The longest environment an exec hook passes on marked (a stack array
/// of this many pointers; a longer one goes unmarked, and the new program
/// reports itself).
const MARK_ENV: usize = 256;
/// Room for the marked variable: `TRACEKIT_PRELOAD_OUT=@PID.HASH@PATH`.
const MARK_ENTRY: usize = 512;

/// An exec of `path` (`exec` makes the call with the environment it is
/// given). When this process records, the exec is reported here, before
/// the call, and the new program learns so from a mark on our variable
/// (`@PID.HASH@` before the stream path: this pid, a hash of `path`); a
/// call that returns has failed and is reported as such, which cancels the
/// record. The caller usually has the stream mapped already (a fork child
/// inherits its parent's), so the new program, which most often never
/// forks, maps nothing. Where marking is not possible the environment is
/// passed on as `with_env` does, and the new program reports itself.
unsafe fn exec_reported(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    exec: impl Fn(*const *const c_char) -> c_int,
) -> c_int {
    if path.is_null()
        || envp.is_null()
        || !propagate()
        || OUT_LEN + 24 > MARK_ENTRY
        || !env_is_complete(envp)
        || ensure_stream().is_none()
    {
        return with_env(envp, exec);
    }
    marked_exec(path, argv, envp, exec)
}

#[inline(never)]
unsafe fn marked_exec(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    exec: impl Fn(*const *const c_char) -> c_int,
) -> c_int {
    let mut env = core::mem::MaybeUninit::<[*const c_char; MARK_ENV]>::uninit();
    let env = env.as_mut_ptr().cast::<*const c_char>();
    let mut n = 0;
    let mut i = 0;
    while !(*envp.add(i)).is_null() {
        let e = *envp.add(i);
        i += 1;
        if after_prefix(e, OUT_VAR).is_some() {
            continue;
        }
        if n + 2 >= MARK_ENV {
            return exec(envp);
        }
        *env.add(n) = e;
        n += 1;
    }
    let pid = sys::getpid();
    let exe = bytes(path);
    let mut entry = core::mem::MaybeUninit::<[u8; MARK_ENTRY]>::uninit();
    let entry = entry.as_mut_ptr().cast::<u8>();
    let mut at = 0;
    let mut put = |b: &[u8]| {
        sys::copy(b.as_ptr(), entry.add(at), b.len());
        at += b.len();
    };
    put(OUT_VAR);
    put(b"@");
    let mut digits = [0u8; 10];
    let mut k = digits.len();
    let mut v = pid.max(0) as u32;
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[k..]);
    put(b".");
    let hash = path_hash(exe);
    let mut hex = [0u8; 8];
    for (j, h) in hex.iter_mut().enumerate() {
        *h = b"0123456789abcdef"[(hash >> (28 - 4 * j)) as usize & 15];
    }
    put(&hex);
    put(b"@");
    put(&OUT_ENTRY[OUT_VAR.len()..OUT_LEN + 1]);
    *env.add(n) = entry.cast();
    *env.add(n + 1) = null();
    let mut argc = 0;
    if !argv.is_null() {
        while !(*argv.add(argc)).is_null() {
            argc += 1;
        }
    }
    report_exec(KIND_EXEC_CALLED, pid, exe, argc, argv, env);
    let r = exec(env);
    emit_small(pid, KIND_EXEC_FAILED, pid, *__errno_location(), None);
    r
}

/// Does C string `s` name a path (hold a `/`), so `execvp` searches nothing?
unsafe fn has_slash(s: *const c_char) -> bool {
    !s.is_null() && bytes(s).contains(&b'/')
}

#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!(
        "execve",
        unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
    );
    exec_reported(path, argv, envp, |e| real(path, argv, e))
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!(
        "execvpe",
        unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
    );
    if has_slash(file) {
        exec_reported(file, argv, envp, |e| real(file, argv, e))
    } else {
        // Which directory of PATH it ends up in is known only to the new
        // program, which reports itself.
        with_env(envp, |e| real(file, argv, e))
    }
}

type SpawnFn = unsafe extern "C" fn(
    *mut pid_t,
    *const c_char,
    *const c_void,
    *const c_void,
    *const *const c_char,
    *const *const c_char,
) -> c_int;

#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: *const c_char,
    actions: *const c_void,
    attr: *const c_void,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!("posix_spawn", SpawnFn);
    with_env(envp, |e| real(pid, path, actions, attr, argv, e))
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: *const c_char,
    actions: *const c_void,
    attr: *const c_void,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!("posix_spawnp", SpawnFn);
    with_env(envp, |e| real(pid, file, actions, attr, argv, e))
}

/// `execv` and `execvp` use `environ`; glibc's own calls to `execve` from
/// them do not pass through the hook above, so they are hooked themselves.
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    execve(path, argv, environ)
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    execvpe(file, argv, environ)
}
