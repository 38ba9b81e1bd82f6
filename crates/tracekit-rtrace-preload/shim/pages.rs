//! The `pages` module: anonymous memory mappings the program makes
//! (`mmap`/`mmap64` with `MAP_ANONYMOUS`, `munmap`, `mremap`), recorded as
//! their own resource type ([`RES_PAGES`], bytes) beside the heap. The C
//! library's own mappings (malloc's large blocks and arenas, thread
//! stacks, the dynamic loader's) are made through its internal `__mmap`
//! and are not seen; an allocator that calls `mmap` through the PLT is,
//! except while it serves a call the shim hooks (`malloc`, `mi_malloc`,
//! ...: the guard is set then).
//!
//! A mapping is a block named by its start address. The shim keeps the
//! starts of the anonymous mappings it recorded in a fixed table, so that
//! `munmap` and `mremap` are recorded only for those (a file mapping's
//! unmap is not a release of pages). An `munmap` starting at a recorded
//! mapping's start releases the whole mapping in the recording, even
//! when it unmaps only part of it; one that starts inside a mapping is
//! not recorded. A `MAP_FIXED` mapping at a recorded start releases the
//! old one first.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::imp::{die, real, record_in, recording_slot, release_slot, resolve, take_seq, Slot};
use crate::libc;
use crate::wire::*;

const F_MMAP: u8 = 56;
const F_MMAP64: u8 = 57;
const F_MUNMAP: u8 = 58;
const F_MREMAP: u8 = 59;
const _: () = assert!(
    crate::apis::is(F_MMAP, "mmap")
        && crate::apis::is(F_MMAP64, "mmap64")
        && crate::apis::is(F_MUNMAP, "munmap")
        && crate::apis::is(F_MREMAP, "mremap")
);

const MAP_FIXED: c_int = 0x10;
const MAP_ANONYMOUS: c_int = 0x20;

type P = *mut c_void;
type MmapFn = unsafe extern "C" fn(P, usize, c_int, c_int, c_int, i64) -> P;
type MunmapFn = unsafe extern "C" fn(P, usize) -> c_int;
type MremapFn = unsafe extern "C" fn(P, usize, usize, c_int, ...) -> P;

static R_MMAP: AtomicUsize = AtomicUsize::new(0);
static R_MMAP64: AtomicUsize = AtomicUsize::new(0);
static R_MUNMAP: AtomicUsize = AtomicUsize::new(0);
static R_MREMAP: AtomicUsize = AtomicUsize::new(0);

// ---------------------------------------------------------------------
// The starts of the recorded anonymous mappings: open addressing over
// atomics (0 empty, 1 a removed entry), bounded probes. A mapping that
// finds no room is not recorded at all (neither its mapping nor its
// unmapping).

const TABLE: usize = 1 << 16;
const PROBES: usize = 512;
const EMPTY: usize = 0;
const REMOVED: usize = 1;
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicUsize = AtomicUsize::new(0);
static STARTS: [AtomicUsize; TABLE] = [ZERO; TABLE];

fn home(k: usize) -> usize {
    ((k >> 12).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 16)) & (TABLE - 1)
}

fn insert(k: usize) -> bool {
    let h = home(k);
    for i in 0..PROBES {
        let e = &STARTS[(h + i) & (TABLE - 1)];
        let v = e.load(Ordering::Acquire);
        if v == k {
            return true;
        }
        if (v == EMPTY || v == REMOVED)
            && e.compare_exchange(v, k, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return true;
        }
    }
    false
}

fn remove(k: usize) -> bool {
    let h = home(k);
    for i in 0..PROBES {
        let e = &STARTS[(h + i) & (TABLE - 1)];
        let v = e.load(Ordering::Acquire);
        if v == EMPTY {
            return false;
        }
        if v == k {
            return e
                .compare_exchange(k, REMOVED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        }
    }
    false
}

// ---------------------------------------------------------------------
// Trampolines: mmap takes all six argument registers, so the caller's
// stack and frame pointers cannot follow in registers: the trampoline
// spills the arguments and both pointers to its stack and passes the
// hook their address.

#[repr(C)]
struct Regs {
    arg: [usize; 6],
    sp: usize,
    fp: usize,
}

macro_rules! spill_trampoline {
    ($name:ident => $hook:ident) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "lea rax, [rsp + 8]",
                "push rbp",
                "push rax",
                "push r9",
                "push r8",
                "push rcx",
                "push rdx",
                "push rsi",
                "push rdi",
                "mov rdi, rsp",
                // Eight pushes left the stack as at entry (8 mod 16).
                "sub rsp, 8",
                "call {hook}",
                "add rsp, 64",
                "pop rbp",
                "ret",
                hook = sym $hook,
            )
        }
    };
}

spill_trampoline!(mmap => h_mmap);
spill_trampoline!(mmap64 => h_mmap64);
spill_trampoline!(mremap => h_mremap);

#[inline(always)]
fn release(s: &'static Slot, func: u8, p: usize, seq: u64) {
    record_in(s, KIND_FREE, RES_PAGES, func, 0, p as u64, seq, 0, 0, false);
}

#[inline(always)]
fn void(s: &'static Slot, seq: u64) {
    record_in(s, KIND_VOID, 0, 0, 0, 0, seq, 0, 0, false);
}

fn mmap_common(r: &Regs, func: u8, f: MmapFn) -> P {
    let [addr, len, prot, flags, fd, off] = r.arg;
    let (prot, flags, fd) = (prot as c_int, flags as c_int, fd as c_int);
    let anon = flags & MAP_ANONYMOUS != 0;
    // A fixed mapping over a recorded one replaces it.
    let rel = if flags & MAP_FIXED != 0 {
        release_slot(MODULE_PAGES).filter(|_| remove(addr))
    } else {
        None
    };
    let seq = rel.map(|_| take_seq());
    let on = if anon {
        recording_slot(MODULE_PAGES)
    } else {
        None
    };
    // SAFETY: the real mmap with the caller's arguments.
    let p = unsafe { f(addr as P, len, prot, flags, fd, off as i64) };
    if let (Some(s), Some(seq)) = (rel, seq) {
        if p != libc::MAP_FAILED {
            release(s, func, addr, seq);
        } else {
            insert(addr);
            void(s, seq);
        }
    }
    if let (Some(s), false) = (on, p == libc::MAP_FAILED) {
        if insert(p as usize) {
            record_in(
                s,
                KIND_ALLOC,
                RES_PAGES,
                func,
                len as u64,
                p as u64,
                take_seq(),
                r.sp,
                r.fp,
                true,
            );
        }
    }
    p
}

unsafe extern "C" fn h_mmap(r: &Regs) -> P {
    let f = real!(R_MMAP, c"mmap", MmapFn);
    mmap_common(r, F_MMAP, f)
}

unsafe extern "C" fn h_mmap64(r: &Regs) -> P {
    let f = real!(R_MMAP64, c"mmap64", MmapFn);
    mmap_common(r, F_MMAP64, f)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn munmap(addr: P, len: usize) -> c_int {
    let f = real!(R_MUNMAP, c"munmap", MunmapFn);
    let rel = release_slot(MODULE_PAGES).filter(|_| remove(addr as usize));
    let seq = rel.map(|_| take_seq());
    // SAFETY: the real munmap.
    let rc = unsafe { f(addr, len) };
    if let (Some(s), Some(seq)) = (rel, seq) {
        if rc == 0 {
            release(s, F_MUNMAP, addr as usize, seq);
        } else {
            insert(addr as usize);
            void(s, seq);
        }
    }
    rc
}

unsafe extern "C" fn h_mremap(r: &Regs) -> P {
    let f = real!(R_MREMAP, c"mremap", MremapFn);
    let [old, old_len, new_len, flags, new_addr, _] = r.arg;
    let rel = release_slot(MODULE_PAGES).filter(|_| remove(old));
    let seq = rel.map(|_| take_seq());
    // SAFETY: the real mremap with the caller's arguments (the fifth is
    // read only with MREMAP_FIXED).
    let p = unsafe { f(old as P, old_len, new_len, flags as c_int, new_addr) };
    if let (Some(s), Some(seq)) = (rel, seq) {
        if p == libc::MAP_FAILED {
            insert(old);
            void(s, seq);
        } else {
            release(s, F_MREMAP, old, seq);
            if let Some(s) = recording_slot(MODULE_PAGES) {
                if insert(p as usize) {
                    record_in(
                        s,
                        KIND_ALLOC,
                        RES_PAGES,
                        F_MREMAP,
                        new_len as u64,
                        p as u64,
                        take_seq(),
                        r.sp,
                        r.fp,
                        true,
                    );
                }
            }
        }
    }
    p
}
