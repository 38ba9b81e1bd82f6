//! The few C library bindings the shim needs (x86_64 Linux, glibc). The
//! `libc` crate cannot be used: the shim is compiled by a bare rustc call.

#![allow(non_camel_case_types, non_upper_case_globals)]

use core::ffi::{c_char, c_int, c_long, c_void};

pub type time_t = i64;
pub type pthread_t = usize;

#[repr(C)]
pub struct timespec {
    pub tv_sec: time_t,
    pub tv_nsec: c_long,
}

/// glibc's `struct sigaction` on x86_64.
#[repr(C)]
pub struct sigaction_t {
    pub sa_handler: usize,
    pub sa_mask: [u64; 16],
    pub sa_flags: c_int,
    pub sa_restorer: usize,
}

impl Default for sigaction_t {
    fn default() -> Self {
        sigaction_t {
            sa_handler: 0,
            sa_mask: [0; 16],
            sa_flags: 0,
            sa_restorer: 0,
        }
    }
}

pub const SIG_DFL: usize = 0;
pub const SA_RESTART: c_int = 0x1000_0000;
pub const AT_FDCWD: c_int = -100;
pub const CLOCK_REALTIME: c_int = 0;
pub const CLOCK_MONOTONIC: c_int = 1;
pub const EBADF: c_int = 9;
pub const MAP_SHARED: c_int = 0x01;
pub const MAP_PRIVATE: c_int = 0x02;
pub const MAP_ANONYMOUS: c_int = 0x20;
pub const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
pub const O_RDONLY: c_int = 0;
pub const O_RDWR: c_int = 0o2;
pub const SEEK_END: c_int = 2;
pub const O_CLOEXEC: c_int = 0o2000000;
pub const PROT_READ: c_int = 1;
pub const PROT_WRITE: c_int = 2;
pub const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
pub const SYS_read: c_long = 0;
pub const SYS_mmap: c_long = 9;
pub const SYS_munmap: c_long = 11;
pub const SYS_close: c_long = 3;
pub const SYS_lseek: c_long = 8;
pub const SYS_sched_yield: c_long = 24;
pub const SYS_nanosleep: c_long = 35;
pub const SYS_openat: c_long = 257;
pub const SYS_ftruncate: c_long = 77;
pub const SYS_sigaltstack: c_long = 131;
pub const SYS_prlimit64: c_long = 302;
pub const RLIMIT_STACK: c_int = 3;

#[link(name = "c")]
unsafe extern "C" {
    pub fn __errno_location() -> *mut c_int;
    pub fn abort() -> !;
    // producer.rs declares it with `*mut [i64; 2]`: the same C ABI.
    #[allow(clashing_extern_declarations)]
    pub fn clock_gettime(clock: c_int, ts: *mut timespec) -> c_int;
    pub fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    pub fn getenv(name: *const c_char) -> *mut c_char;
    pub fn getpid() -> c_int;
    pub fn getppid() -> c_int;
    pub fn on_exit(f: Option<extern "C" fn(c_int, *mut c_void)>, arg: *mut c_void) -> c_int;
    pub fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> c_int;
    pub fn pthread_self() -> pthread_t;
    pub fn read(fd: c_int, buf: *mut c_void, n: usize) -> isize;
    pub fn readlink(path: *const c_char, buf: *mut c_char, n: usize) -> isize;
    pub fn sigaction(sig: c_int, act: *const sigaction_t, old: *mut sigaction_t) -> c_int;
    pub fn syscall(num: c_long, ...) -> c_long;
    pub fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
}

/// `mmap(2)` as a raw system call: the shim defines `mmap` itself (the
/// `pages` module's hook), so its own mappings never go through the
/// dynamic symbol. Fails with `MAP_FAILED` and errno, as the C function.
pub unsafe fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    // SAFETY: the caller's arguments, as mmap(2) takes them.
    unsafe {
        syscall(
            SYS_mmap,
            addr,
            len,
            prot as c_long,
            flags as c_long,
            fd as c_long,
            off,
        ) as *mut c_void
    }
}

/// `munmap(2)` as a raw system call (see [`mmap`]).
pub unsafe fn munmap(addr: *mut c_void, len: usize) -> c_int {
    // SAFETY: the caller's arguments, as munmap(2) takes them.
    unsafe { syscall(SYS_munmap, addr, len) as c_int }
}
