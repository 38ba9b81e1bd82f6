//! Each thread names the backtraces it has sent by number, so an
//! allocation record carries 4 bytes instead of its frames and the
//! recorder formats each backtrace once (heaptrack's trace tree does the
//! same for its output). The table is per thread (no lock, no sharing) in
//! the shim's own memory; numbers come from one process-wide counter, so
//! they are unique within the image. A full table starts over (its
//! backtraces are defined again when next used).

use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use alloc::boxed::Box;

const SLOTS: usize = 1024;
const PROBES: usize = 8;
const STORE: usize = 16 * 1024;

static NEXT_ID: AtomicU32 = AtomicU32::new(1);
/// Bumped in a fork child: the tables it inherited describe what the
/// parent's image was told.
static EPOCH: AtomicU64 = AtomicU64::new(0);

pub struct StackTable {
    epoch: u64,
    used: usize,
    hash: [u64; SLOTS],
    id: [u32; SLOTS],
    at: [u32; SLOTS],
    len: [u8; SLOTS],
    store: [u64; STORE],
}

fn hash(frames: &[u64]) -> u64 {
    let mut h: u64 = frames.len() as u64;
    for &f in frames {
        h = (h.rotate_left(5) ^ f).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h | 1
}

impl StackTable {
    fn clear(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.used = 0;
        self.hash.fill(0);
    }
}

/// The number of the backtrace `frames` (not empty, at most 255 frames)
/// for the thread owning `table`, and whether it is new (the caller then
/// sends its definition before the record that uses it). `None` if no
/// memory could be had.
pub fn intern(table: &AtomicPtr<StackTable>, frames: &[u64]) -> Option<(u32, bool)> {
    let mut t = table.load(Ordering::Relaxed);
    if t.is_null() {
        // SAFETY: a zeroed StackTable is valid (all integers); allocated
        // from the shim's own allocator.
        let b: Box<StackTable> = unsafe { Box::new_zeroed().assume_init() };
        t = Box::into_raw(b);
        table.store(t, Ordering::Relaxed);
    }
    // SAFETY: the table belongs to this thread (the guard keeps a signal
    // handler on it out of the shim).
    let t = unsafe { &mut *t };
    let epoch = EPOCH.load(Ordering::Relaxed);
    if t.epoch != epoch {
        t.clear(epoch);
    }
    let h = hash(frames);
    let home = (h >> 54) as usize % SLOTS;
    let mut free = None;
    for k in 0..PROBES {
        let i = (home + k) % SLOTS;
        let hi = t.hash[i];
        if hi == 0 {
            free.get_or_insert(i);
            break;
        }
        if hi == h && t.len[i] as usize == frames.len() {
            let at = t.at[i] as usize;
            if &t.store[at..at + frames.len()] == frames {
                return Some((t.id[i], false));
            }
        }
    }
    if t.used + frames.len() > STORE {
        t.clear(epoch);
        free = Some(home);
    }
    // No free slot among the probes: the home slot is reused.
    let i = free.unwrap_or(home);
    let at = t.used;
    t.store[at..at + frames.len()].copy_from_slice(frames);
    t.used += frames.len();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    t.hash[i] = h;
    t.id[i] = id;
    t.at[i] = at as u32;
    t.len[i] = frames.len() as u8;
    Some((id, true))
}

/// In a fork child: every table starts over.
pub fn after_fork_child() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}
