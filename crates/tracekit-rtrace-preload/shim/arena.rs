//! The shim's own allocator (`#[global_allocator]`): what the unwinder
//! keeps (module tables, per-thread rule caches) lives in memory the shim
//! maps itself, never in the program's heap through the hooked functions.
//!
//! Power-of-two size classes from 16 bytes to 64 KiB carved from 1 MiB
//! anonymous mappings, with one free list per class; larger blocks are
//! mappings of their own. One spin lock guards the lists. It cannot
//! deadlock against a signal handler: the shim's code runs with the
//! thread's guard set, so a handler that interrupts it and allocates goes
//! straight to the real malloc, never here. A fork child may inherit the
//! lock held by a thread that no longer exists: [`after_fork_child`] takes
//! it back and forgets the free lists (a few blocks leaked, never reused
//! half-linked).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use crate::libc;

const MIN_SHIFT: usize = 4;
const MAX_SHIFT: usize = 16;
const CLASSES: usize = MAX_SHIFT - MIN_SHIFT + 1;
const CHUNK: usize = 1 << 20;

pub struct ShimAlloc;

static LOCK: AtomicBool = AtomicBool::new(false);
#[allow(clippy::declare_interior_mutable_const)]
const NO_BLOCK: AtomicPtr<FreeBlock> = AtomicPtr::new(null_mut());
static FREE: [AtomicPtr<FreeBlock>; CLASSES] = [NO_BLOCK; CLASSES];
/// The current chunk: next free byte and its end.
static BUMP: AtomicUsize = AtomicUsize::new(0);
static BUMP_END: AtomicUsize = AtomicUsize::new(0);
/// Bytes mapped by the allocator (for the recorder's own accounting).
pub static MAPPED: AtomicUsize = AtomicUsize::new(0);

struct FreeBlock {
    next: *mut FreeBlock,
}

fn lock() {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
}

fn unlock() {
    LOCK.store(false, Ordering::Release);
}

fn map(len: usize) -> *mut u8 {
    // SAFETY: a private anonymous mapping; failure is checked.
    let p = unsafe {
        libc::mmap(
            null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return null_mut();
    }
    MAPPED.fetch_add(len, Ordering::Relaxed);
    p.cast()
}

/// The size class of a layout (`None`: a mapping of its own).
fn class(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(1 << MIN_SHIFT);
    let shift = usize::BITS as usize - (size - 1).leading_zeros() as usize;
    (shift <= MAX_SHIFT).then(|| shift - MIN_SHIFT)
}

fn big_len(layout: Layout) -> usize {
    (layout.size() + 4095) & !4095
}

/// Carves a block of `1 << shift` bytes (aligned to its size) from the
/// current chunk; the caller holds the lock.
fn carve(shift: usize) -> *mut u8 {
    let size = 1usize << shift;
    let mut at = (BUMP.load(Ordering::Relaxed) + size - 1) & !(size - 1);
    if at == 0 || at + size > BUMP_END.load(Ordering::Relaxed) {
        let chunk = map(CHUNK);
        if chunk.is_null() {
            return null_mut();
        }
        // Chunks are page aligned, so every class up to 64 KiB is
        // aligned to its size from the chunk's start.
        at = chunk as usize;
        BUMP_END.store(at + CHUNK, Ordering::Relaxed);
    }
    BUMP.store(at + size, Ordering::Relaxed);
    at as *mut u8
}

// SAFETY: blocks are handed out once until freed; the free lists are
// touched under the lock only; large blocks are whole mappings.
unsafe impl GlobalAlloc for ShimAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(c) = class(layout) else {
            if layout.align() > 4096 {
                return null_mut();
            }
            return map(big_len(layout));
        };
        lock();
        let head = FREE[c].load(Ordering::Relaxed);
        let p = if head.is_null() {
            carve(c + MIN_SHIFT)
        } else {
            // SAFETY: a block on the free list holds its link.
            FREE[c].store(unsafe { (*head).next }, Ordering::Relaxed);
            head.cast()
        };
        unlock();
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`; the block is then cleared (fresh mappings
        // are zero already, reused blocks are not).
        let p = unsafe { self.alloc(layout) };
        if !p.is_null() && class(layout).is_some() {
            // SAFETY: the block has at least `layout.size()` bytes.
            unsafe { core::ptr::write_bytes(p, 0, layout.size()) };
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let Some(c) = class(layout) else {
            // SAFETY: a mapping of its own, of this length.
            unsafe { libc::munmap(p.cast(), big_len(layout)) };
            MAPPED.fetch_sub(big_len(layout), Ordering::Relaxed);
            return;
        };
        lock();
        let b = p as *mut FreeBlock;
        // SAFETY: the block is ours again and at least 16 bytes.
        unsafe { (*b).next = FREE[c].load(Ordering::Relaxed) };
        FREE[c].store(b, Ordering::Relaxed);
        unlock();
    }
}

/// In a fork child: the lock may have been held by a thread that does not
/// exist here. Take it back and forget the free lists and the chunk.
pub fn after_fork_child() {
    for f in &FREE {
        f.store(null_mut(), Ordering::Relaxed);
    }
    BUMP.store(0, Ordering::Relaxed);
    BUMP_END.store(0, Ordering::Relaxed);
    LOCK.store(false, Ordering::Release);
}
