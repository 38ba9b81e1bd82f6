//! Allocators' own entry points: mimalloc's `mi_` API (a program calling
//! `mi_malloc` and the like rather than `malloc`), and jemalloc built
//! with the `_rjem_` prefix (as Rust's tikv-jemallocator builds it) when
//! it is a shared library. An allocator that replaces `malloc` itself
//! (`-ljemalloc`, `-ltcmalloc`, mimalloc's override) needs nothing here:
//! the `malloc` family's hooks find it as the next definition.
//!
//! Each hook calls the allocator with this thread's guard set, so that
//! the allocator's own nested calls (a `_rjem_` or `mi_` function reaching
//! `malloc` or another hooked entry point through the PLT) pass through:
//! one allocation is recorded once, under the function the program
//! called. Their real functions are looked up on first use only (a
//! program without these allocators never calls them, and a failed
//! `dlsym` would allocate its error message).

use core::ffi::{c_char, c_int, c_void, CStr};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::imp::{
    die, inside, real, record_in, recording_slot, release_slot, resolve, take_seq, trampoline, Slot,
};
use crate::wire::*;

// Function ids (index into `wire::FUNCTIONS`).
const F_MI_MALLOC: u8 = 32;
const F_MI_CALLOC: u8 = 33;
const F_MI_ZALLOC: u8 = 34;
const F_MI_REALLOC: u8 = 35;
const F_MI_REALLOCF: u8 = 36;
const F_MI_FREE: u8 = 37;
const F_MI_MALLOC_ALIGNED: u8 = 38;
const F_MI_ZALLOC_ALIGNED: u8 = 39;
const F_MI_CALLOC_ALIGNED: u8 = 40;
const F_MI_STRDUP: u8 = 41;
const F_MI_STRNDUP: u8 = 42;
const F_MI_MALLOCN: u8 = 43;
const F_MI_REALLOCN: u8 = 44;
const F_MI_FREE_SIZE: u8 = 45;
const F_RJEM_MALLOC: u8 = 46;
const F_RJEM_CALLOC: u8 = 47;
const F_RJEM_REALLOC: u8 = 48;
const F_RJEM_FREE: u8 = 49;
const F_RJEM_MALLOCX: u8 = 50;
const F_RJEM_RALLOCX: u8 = 51;
const F_RJEM_SDALLOCX: u8 = 52;
const F_RJEM_DALLOCX: u8 = 53;
const F_RJEM_POSIX_MEMALIGN: u8 = 54;
const F_RJEM_ALIGNED_ALLOC: u8 = 55;
const _: () = assert!(
    is(F_MI_MALLOC, "mi_malloc")
        && is(F_MI_FREE_SIZE, "mi_free_size")
        && is(F_RJEM_MALLOC, "_rjem_malloc")
        && is(F_RJEM_ALIGNED_ALLOC, "_rjem_aligned_alloc")
);

/// Whether function id `f` is `name` in `wire::FUNCTIONS` (checked when
/// compiling).
pub(crate) const fn is(f: u8, name: &str) -> bool {
    let (a, b) = (FUNCTIONS[f as usize].as_bytes(), name.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut k = 0;
    while k < a.len() {
        if a[k] != b[k] {
            return false;
        }
        k += 1;
    }
    true
}

type P = *mut c_void;

#[inline(always)]
fn alloc(slot: Option<&'static Slot>, func: u8, size: usize, p: P, sp: usize, fp: usize) {
    if let (Some(s), false) = (slot, p.is_null()) {
        record_in(
            s,
            KIND_ALLOC,
            RES_MEMORY,
            func,
            size as u64,
            p as u64,
            take_seq(),
            sp,
            fp,
            true,
        );
    }
}

/// A release: numbered before the call (see the crate documentation).
#[inline(always)]
fn release(func: u8, p: P, call: impl FnOnce()) {
    let slot = release_slot(MODULE_MEMORY);
    let seq = if slot.is_some() { take_seq() } else { 0 };
    inside(slot, call);
    if let Some(s) = slot {
        record_in(
            s, KIND_FREE, RES_MEMORY, func, 0, p as u64, seq, 0, 0, false,
        );
    }
}

/// A reallocation: `p` is released when the call succeeds (or, with
/// `frees_on_failure`, whatever it returns: `mi_reallocf`), the result
/// is allocated.
#[inline(always)]
fn reallocation(
    func: u8,
    p: P,
    size: usize,
    frees_on_failure: bool,
    sp: usize,
    fp: usize,
    call: impl FnOnce() -> P,
) -> P {
    let rel = release_slot(MODULE_MEMORY);
    let free_seq = (rel.is_some() && !p.is_null()).then(take_seq);
    let q = inside(rel, call);
    if let (Some(s), Some(seq)) = (rel, free_seq) {
        if !q.is_null() || frees_on_failure {
            record_in(
                s, KIND_FREE, RES_MEMORY, func, 0, p as u64, seq, 0, 0, false,
            );
        } else {
            record_in(s, KIND_VOID, 0, 0, 0, 0, seq, 0, 0, false);
        }
    }
    alloc(recording_slot(MODULE_MEMORY), func, size, q, sp, fp);
    q
}

/// The length of the string at `p` with its NUL (0 for null).
fn c_len(p: P) -> usize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the allocator returned a NUL-terminated copy.
    unsafe { CStr::from_ptr(p as *const c_char) }.count_bytes() + 1
}

macro_rules! slot {
    ($($s:ident),*) => { $(static $s: AtomicUsize = AtomicUsize::new(0);)* };
}
slot!(
    R_MI_MALLOC,
    R_MI_CALLOC,
    R_MI_ZALLOC,
    R_MI_REALLOC,
    R_MI_REALLOCF,
    R_MI_FREE,
    R_MI_MALLOC_ALIGNED,
    R_MI_ZALLOC_ALIGNED,
    R_MI_CALLOC_ALIGNED,
    R_MI_STRDUP,
    R_MI_STRNDUP,
    R_MI_MALLOCN,
    R_MI_REALLOCN,
    R_MI_FREE_SIZE,
    R_RJEM_MALLOC,
    R_RJEM_CALLOC,
    R_RJEM_REALLOC,
    R_RJEM_FREE,
    R_RJEM_MALLOCX,
    R_RJEM_RALLOCX,
    R_RJEM_SDALLOCX,
    R_RJEM_DALLOCX,
    R_RJEM_POSIX_MEMALIGN,
    R_RJEM_ALIGNED_ALLOC
);

/// `name(size) -> block` (`size` bytes).
macro_rules! sized {
    ($name:ident, $hook:ident, $slot:ident, $c:literal, $func:expr) => {
        trampoline!($name => $hook, "rsi", "rdx", (size: usize) -> P);
        unsafe extern "C" fn $hook(size: usize, sp: usize, fp: usize) -> P {
            let on = recording_slot(MODULE_MEMORY);
            let f = real!($slot, $c, unsafe extern "C" fn(usize) -> P);
            // SAFETY: the allocator's function with the caller's argument.
            let p = inside(on, || unsafe { f(size) });
            alloc(on, $func, size, p, sp, fp);
            p
        }
    };
}

/// `name(a, b) -> block` of `size(a, b)` bytes.
macro_rules! two {
    ($name:ident, $hook:ident, $slot:ident, $c:literal, $func:expr, |$a:ident, $b:ident| $size:expr) => {
        trampoline!($name => $hook, "rdx", "rcx", ($a: usize, $b: usize) -> P);
        unsafe extern "C" fn $hook($a: usize, $b: usize, sp: usize, fp: usize) -> P {
            let on = recording_slot(MODULE_MEMORY);
            let f = real!($slot, $c, unsafe extern "C" fn(usize, usize) -> P);
            // SAFETY: the allocator's function with the caller's arguments.
            let p = inside(on, || unsafe { f($a, $b) });
            alloc(on, $func, $size, p, sp, fp);
            p
        }
    };
}

/// `name(block)`, `name(block, x)`, `name(block, x, y)`: releases.
macro_rules! release_fn {
    ($name:ident, $slot:ident, $c:literal, $func:expr, ($($arg:ident : $ty:ty),*)) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(p: P $(, $arg: $ty)*) {
            let f = real!($slot, $c, unsafe extern "C" fn(P $(, $ty)*));
            // SAFETY: the allocator's function with the caller's arguments.
            release($func, p, || unsafe { f(p $(, $arg)*) });
        }
    };
}

// mimalloc
sized!(
    mi_malloc,
    h_mi_malloc,
    R_MI_MALLOC,
    c"mi_malloc",
    F_MI_MALLOC
);
sized!(
    mi_zalloc,
    h_mi_zalloc,
    R_MI_ZALLOC,
    c"mi_zalloc",
    F_MI_ZALLOC
);
two!(
    mi_calloc,
    h_mi_calloc,
    R_MI_CALLOC,
    c"mi_calloc",
    F_MI_CALLOC,
    |n, size| n.wrapping_mul(size)
);
two!(
    mi_mallocn,
    h_mi_mallocn,
    R_MI_MALLOCN,
    c"mi_mallocn",
    F_MI_MALLOCN,
    |n, size| n.wrapping_mul(size)
);
two!(
    mi_malloc_aligned,
    h_mi_malloc_aligned,
    R_MI_MALLOC_ALIGNED,
    c"mi_malloc_aligned",
    F_MI_MALLOC_ALIGNED,
    |size, _align| size
);
two!(
    mi_zalloc_aligned,
    h_mi_zalloc_aligned,
    R_MI_ZALLOC_ALIGNED,
    c"mi_zalloc_aligned",
    F_MI_ZALLOC_ALIGNED,
    |size, _align| size
);
release_fn!(mi_free, R_MI_FREE, c"mi_free", F_MI_FREE, ());
release_fn!(mi_free_size, R_MI_FREE_SIZE, c"mi_free_size", F_MI_FREE_SIZE, (size: usize));

trampoline!(mi_calloc_aligned => h_mi_calloc_aligned, "rcx", "r8", (n: usize, size: usize, align: usize) -> P);
unsafe extern "C" fn h_mi_calloc_aligned(
    n: usize,
    size: usize,
    align: usize,
    sp: usize,
    fp: usize,
) -> P {
    let on = recording_slot(MODULE_MEMORY);
    let f = real!(
        R_MI_CALLOC_ALIGNED,
        c"mi_calloc_aligned",
        unsafe extern "C" fn(usize, usize, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    let p = inside(on, || unsafe { f(n, size, align) });
    alloc(on, F_MI_CALLOC_ALIGNED, n.wrapping_mul(size), p, sp, fp);
    p
}

trampoline!(mi_strdup => h_mi_strdup, "rsi", "rdx", (s: *const c_char) -> P);
unsafe extern "C" fn h_mi_strdup(s: *const c_char, sp: usize, fp: usize) -> P {
    let on = recording_slot(MODULE_MEMORY);
    let f = real!(
        R_MI_STRDUP,
        c"mi_strdup",
        unsafe extern "C" fn(*const c_char) -> P
    );
    // SAFETY: the allocator's function with the caller's argument.
    let p = inside(on, || unsafe { f(s) });
    alloc(on, F_MI_STRDUP, c_len(p), p, sp, fp);
    p
}

trampoline!(mi_strndup => h_mi_strndup, "rdx", "rcx", (s: *const c_char, n: usize) -> P);
unsafe extern "C" fn h_mi_strndup(s: *const c_char, n: usize, sp: usize, fp: usize) -> P {
    let on = recording_slot(MODULE_MEMORY);
    let f = real!(
        R_MI_STRNDUP,
        c"mi_strndup",
        unsafe extern "C" fn(*const c_char, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    let p = inside(on, || unsafe { f(s, n) });
    alloc(on, F_MI_STRNDUP, c_len(p), p, sp, fp);
    p
}

trampoline!(mi_realloc => h_mi_realloc, "rdx", "rcx", (p: P, size: usize) -> P);
unsafe extern "C" fn h_mi_realloc(p: P, size: usize, sp: usize, fp: usize) -> P {
    let f = real!(
        R_MI_REALLOC,
        c"mi_realloc",
        unsafe extern "C" fn(P, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    reallocation(F_MI_REALLOC, p, size, false, sp, fp, || unsafe {
        f(p, size)
    })
}

trampoline!(mi_reallocf => h_mi_reallocf, "rdx", "rcx", (p: P, size: usize) -> P);
unsafe extern "C" fn h_mi_reallocf(p: P, size: usize, sp: usize, fp: usize) -> P {
    let f = real!(
        R_MI_REALLOCF,
        c"mi_reallocf",
        unsafe extern "C" fn(P, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    reallocation(F_MI_REALLOCF, p, size, true, sp, fp, || unsafe {
        f(p, size)
    })
}

trampoline!(mi_reallocn => h_mi_reallocn, "rcx", "r8", (p: P, n: usize, size: usize) -> P);
unsafe extern "C" fn h_mi_reallocn(p: P, n: usize, size: usize, sp: usize, fp: usize) -> P {
    let f = real!(
        R_MI_REALLOCN,
        c"mi_reallocn",
        unsafe extern "C" fn(P, usize, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    reallocation(
        F_MI_REALLOCN,
        p,
        n.wrapping_mul(size),
        false,
        sp,
        fp,
        || unsafe { f(p, n, size) },
    )
}

// jemalloc with the `_rjem_` prefix
sized!(
    _rjem_malloc,
    h_rjem_malloc,
    R_RJEM_MALLOC,
    c"_rjem_malloc",
    F_RJEM_MALLOC
);
two!(
    _rjem_calloc,
    h_rjem_calloc,
    R_RJEM_CALLOC,
    c"_rjem_calloc",
    F_RJEM_CALLOC,
    |n, size| n.wrapping_mul(size)
);
// mallocx(size, int flags): the flags pass through in their register.
two!(
    _rjem_mallocx,
    h_rjem_mallocx,
    R_RJEM_MALLOCX,
    c"_rjem_mallocx",
    F_RJEM_MALLOCX,
    |size, _flags| size
);
two!(
    _rjem_aligned_alloc,
    h_rjem_aligned_alloc,
    R_RJEM_ALIGNED_ALLOC,
    c"_rjem_aligned_alloc",
    F_RJEM_ALIGNED_ALLOC,
    |_align, size| size
);
release_fn!(_rjem_free, R_RJEM_FREE, c"_rjem_free", F_RJEM_FREE, ());
release_fn!(_rjem_dallocx, R_RJEM_DALLOCX, c"_rjem_dallocx", F_RJEM_DALLOCX, (flags: c_int));
release_fn!(_rjem_sdallocx, R_RJEM_SDALLOCX, c"_rjem_sdallocx", F_RJEM_SDALLOCX, (size: usize, flags: c_int));

trampoline!(_rjem_realloc => h_rjem_realloc, "rdx", "rcx", (p: P, size: usize) -> P);
unsafe extern "C" fn h_rjem_realloc(p: P, size: usize, sp: usize, fp: usize) -> P {
    let f = real!(
        R_RJEM_REALLOC,
        c"_rjem_realloc",
        unsafe extern "C" fn(P, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    reallocation(F_RJEM_REALLOC, p, size, false, sp, fp, || unsafe {
        f(p, size)
    })
}

trampoline!(_rjem_rallocx => h_rjem_rallocx, "rcx", "r8", (p: P, size: usize, flags: usize) -> P);
unsafe extern "C" fn h_rjem_rallocx(p: P, size: usize, flags: usize, sp: usize, fp: usize) -> P {
    let f = real!(
        R_RJEM_RALLOCX,
        c"_rjem_rallocx",
        unsafe extern "C" fn(P, usize, usize) -> P
    );
    // SAFETY: the allocator's function with the caller's arguments.
    reallocation(F_RJEM_RALLOCX, p, size, false, sp, fp, || unsafe {
        f(p, size, flags)
    })
}

trampoline!(_rjem_posix_memalign => h_rjem_posix_memalign, "rcx", "r8", (out: *mut P, align: usize, size: usize) -> c_int);
unsafe extern "C" fn h_rjem_posix_memalign(
    out: *mut P,
    align: usize,
    size: usize,
    sp: usize,
    fp: usize,
) -> c_int {
    let on = recording_slot(MODULE_MEMORY);
    let f = real!(
        R_RJEM_POSIX_MEMALIGN,
        c"_rjem_posix_memalign",
        unsafe extern "C" fn(*mut P, usize, usize) -> c_int
    );
    // SAFETY: the allocator's function with the caller's arguments.
    let rc = inside(on, || unsafe { f(out, align, size) });
    if rc == 0 && !out.is_null() {
        // SAFETY: on success the allocator stored the block there.
        alloc(on, F_RJEM_POSIX_MEMALIGN, size, unsafe { *out }, sp, fp);
    }
    rc
}
