//! Backtraces from the DWARF call-frame information (`.eh_frame` through
//! `.eh_frame_hdr`) of every loaded object, taken inside the malloc hooks.
//!
//! The unwinding itself is framehop's (`UnwinderX86_64`, with gimli
//! parsing the CFI and a per-thread cache of per-address unwind rules).
//! What no crate does safely inside a malloc hook is written here:
//! * the module table comes from `/proc/self/maps` read with raw system
//!   calls and the ELF program headers already in memory (no
//!   `dl_iterate_phdr`: it takes the loader's lock, which a fork child or
//!   a signal handler may find held), and the unwind sections are used in
//!   place (nothing is copied);
//! * the table is an immutable snapshot behind an atomic pointer, rebuilt
//!   when a return address falls outside every known object (a library
//!   `dlopen`ed since: `dlopen` itself is not hooked, because glibc finds
//!   the caller's RUNPATH from its return address) and after `dlclose`;
//!   `dlclose` waits until no thread is unwinding with module memory that
//!   may go away, and threads that start meanwhile keep the first frame
//!   only (nobody waits inside malloc);
//! * stack reads are bounds-checked against the thread's stack (and the
//!   signal stack a handler runs on);
//! * signal frames: glibc's `__restore_rt` describes its frame with CFI
//!   expressions that read memory, which framehop does not evaluate; like
//!   libgcc and libunwind, the trampoline is recognised by its code and
//!   the interrupted registers are read from the `ucontext`;
//! * every return address must lie in a known object's code, so a frame
//!   that framehop could only guess (its frame-pointer fallback for code
//!   without CFI) ends the backtrace unless it lands in real code.
//!
//! Memory the unwinder keeps comes from the shim's own allocator
//! (`arena`), never from the hooked functions.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::ffi::{c_int, c_long, c_void};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{
    ExplicitModuleSectionInfo, FrameAddress, MayAllocateDuringUnwind, Module, Unwinder,
};

use crate::libc;

type Unw = UnwinderX86_64<&'static [u8], MayAllocateDuringUnwind>;
pub type Cache = CacheX86_64<MayAllocateDuringUnwind>;

/// Per-thread unwinding state, part of the shim's per-thread slot.
pub struct ThreadUnwind {
    /// The thread's caches (created on its first backtrace).
    local: AtomicPtr<Local>,
    /// Set while the thread reads module memory (see `dlclose`).
    pub busy: AtomicBool,
}

impl ThreadUnwind {
    pub const fn new() -> ThreadUnwind {
        ThreadUnwind {
            local: AtomicPtr::new(null_mut()),
            busy: AtomicBool::new(false),
        }
    }
}

/// What one thread keeps between backtraces.
struct Local {
    /// framehop's per-address unwind rules.
    cache: Cache,
    /// Return addresses checked against the snapshot `seen_for`: in a
    /// known object's code and not the signal trampoline (direct-mapped).
    seen: [u64; SEEN],
    seen_for: usize,
    /// The last backtrace of this thread, to reuse its outer part.
    last: Prefix,
    /// Whole backtraces by their innermost return address (direct
    /// mapped), with their numbers: a call from the same place under the
    /// same callers is answered with one load per outer frame.
    quick: Box<[Prefix; QUICK]>,
}

const QUICK: usize = 16;

fn quick_slot(ret: u64) -> usize {
    ((ret ^ (ret >> 7) ^ (ret >> 17)) as usize) % QUICK
}

const SEEN: usize = 512;
const MAX_FRAMES: usize = 64;

/// A thread's last backtrace with the registers after each frame: frame
/// `i`'s return address `ret[i]` was read at `sp[i] - 8`, and `sp[i]`,
/// `bp[i]` are the stack pointer and frame pointer of the function it
/// returns into. A new backtrace that reaches a frame with the same
/// return address, stack pointer and frame pointer continues, above it,
/// with the same frames if the return addresses are still in their
/// slots: the unwind from there depends only on those registers and on
/// the callers' frames, whose return addresses and saved registers are
/// written when they are called. So a loop allocating under the same
/// callers unwinds its own frames only and checks the rest with one load
/// per frame.
struct Prefix {
    n: usize,
    /// Its number in the thread's backtrace table (0: not known).
    id: u32,
    /// Cut by the depth limit (more frames may lie above).
    cut: bool,
    /// The snapshot it was taken with.
    snap: usize,
    ret: [u64; MAX_FRAMES],
    sp: [u64; MAX_FRAMES],
    bp: [u64; MAX_FRAMES],
}

impl Prefix {
    /// The frame with these values, if the last backtrace has it.
    #[inline(always)]
    fn find(&self, ret: u64, sp: u64, bp: u64) -> Option<usize> {
        (0..self.n).find(|&k| self.sp[k] == sp && self.ret[k] == ret && self.bp[k] == bp)
    }

    /// Are the return addresses above frame `k` still in their slots?
    #[inline(always)]
    fn still_there(&self, k: usize, stack: &Stack) -> bool {
        (k + 1..self.n).all(|m| stack.read(self.sp[m].wrapping_sub(8)) == Ok(self.ret[m]))
    }
}

impl Local {
    /// Is `ra` a return address of known code, not a signal frame?
    #[inline(always)]
    fn checked(&self, ra: u64) -> bool {
        self.seen[(ra as usize ^ (ra as usize >> 9)) % SEEN] == ra
    }

    fn note_checked(&mut self, ra: u64) {
        self.seen[(ra as usize ^ (ra as usize >> 9)) % SEEN] = ra;
    }
}

/// The loaded objects as the unwinder knows them.
struct Snapshot {
    generation: u64,
    unwinder: Unw,
    /// Executable address ranges of the objects, sorted.
    code: Vec<(u64, u64)>,
}

static SNAPSHOT: AtomicPtr<Snapshot> = AtomicPtr::new(null_mut());
/// Bumped by `dlclose`: the snapshot must be rebuilt before its module
/// memory is read again.
static GENERATION: AtomicU64 = AtomicU64::new(1);
/// `dlclose` calls in progress.
static UNLOADING: AtomicU32 = AtomicU32::new(0);
/// One thread rebuilds at a time; the others keep the first frame.
static REBUILDING: AtomicBool = AtomicBool::new(false);
/// Code pages found in no object after a rebuild (JIT code, a wrong
/// guess), with when (ns): they cause no new rebuild for a while.
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
static UNKNOWN_PAGE: [AtomicU64; 256] = [ZERO; 256];
static UNKNOWN_AT: [AtomicU64; 256] = [ZERO; 256];
const UNKNOWN_FOR_NS: u64 = 1_000_000_000;

fn unknown_slot(pc: u64) -> usize {
    ((pc >> 12).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

/// Was `pc` looked for after a recent rebuild and not found?
fn recently_unknown(pc: u64, now: u64) -> bool {
    let i = unknown_slot(pc);
    UNKNOWN_PAGE[i].load(Ordering::Relaxed) == pc >> 12
        && now.wrapping_sub(UNKNOWN_AT[i].load(Ordering::Relaxed)) < UNKNOWN_FOR_NS
}

fn note_unknown(pc: u64, now: u64) {
    let i = unknown_slot(pc);
    UNKNOWN_PAGE[i].store(pc >> 12, Ordering::Relaxed);
    UNKNOWN_AT[i].store(now, Ordering::Relaxed);
}
/// Backtraces cut short because module memory was being unloaded or
/// the table rebuilt by another thread (only the first frame kept).
pub static SHORTENED: AtomicU64 = AtomicU64::new(0);

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// ---------------------------------------------------------------------
// The module table

/// Reads `/proc/self/maps` into a fresh mapping (raw system calls).
/// Returns the mapping and the length read; the caller unmaps `CAP`.
const MAPS_CAP: usize = 4 << 20;
unsafe fn read_maps() -> Option<(*mut u8, usize)> {
    // SAFETY: a private anonymous mapping and a descriptor of our own,
    // closed before returning.
    unsafe {
        let p = libc::mmap(
            null_mut(),
            MAPS_CAP,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        let fd = libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD as c_long,
            c"/proc/self/maps".as_ptr(),
            (libc::O_RDONLY | libc::O_CLOEXEC) as c_long,
        );
        if fd < 0 {
            libc::munmap(p, MAPS_CAP);
            return None;
        }
        let mut len = 0usize;
        while len < MAPS_CAP {
            let n = libc::syscall(
                libc::SYS_read,
                fd,
                (p as *mut u8).add(len),
                (MAPS_CAP - len) as c_long,
            );
            if n <= 0 {
                break;
            }
            len += n as usize;
        }
        libc::syscall(libc::SYS_close, fd);
        Some((p as *mut u8, len))
    }
}

/// The bounds of the stack `sp` lies on: the mapping that holds it, from
/// `/proc/self/maps` read with raw system calls. (`pthread_getattr_np`
/// cannot be used: glibc allocates inside it while holding the thread's
/// lock, so a hooked `malloc` calling it again deadlocks, as every Rust
/// program does at thread start.) The main thread's `[stack]` grows down,
/// so its low end is the stack limit below its top.
///
/// # Safety
/// Reads `/proc/self/maps` into a private mapping it unmaps.
pub unsafe fn stack_of(sp: u64) -> Option<(u64, u64)> {
    // SAFETY: our own mapping, `len` bytes of it written by read().
    let (p, len) = unsafe { read_maps()? };
    let text = unsafe { core::slice::from_raw_parts(p, len) };
    let mut found = None;
    for line in text.split(|&b| b == b'\n') {
        let Some(m) = parse_line(line) else { continue };
        if sp >= m.start && sp < m.end {
            let lo = if m.path == b"[stack]" {
                m.end.saturating_sub(stack_limit()).min(m.start)
            } else {
                m.start
            };
            found = Some((lo, m.end));
            break;
        }
    }
    // SAFETY: the mapping read_maps made.
    unsafe { libc::munmap(p as *mut c_void, MAPS_CAP) };
    found
}

/// RLIMIT_STACK's soft limit, at most 1 GiB (also when unlimited).
fn stack_limit() -> u64 {
    let mut lim = [0u64; 2];
    // SAFETY: prlimit64(0, RLIMIT_STACK, NULL, &lim) only writes `lim`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0 as c_long,
            libc::RLIMIT_STACK as c_long,
            null_mut::<c_void>(),
            lim.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return 8 << 20;
    }
    lim[0].min(1 << 30)
}

/// One line of the maps.
#[derive(Clone, Copy)]
struct Mapping<'a> {
    start: u64,
    end: u64,
    readable: bool,
    exec: bool,
    offset: u64,
    inode: u64,
    path: &'a [u8],
}

fn hex(s: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | d as u64;
    }
    Some(v)
}

fn dec(s: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    if s.is_empty() {
        return None;
    }
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(v)
}

fn parse_line(line: &[u8]) -> Option<Mapping<'_>> {
    let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = hex(fields.next()?)?;
    let _dev = fields.next()?;
    let inode = dec(fields.next()?)?;
    // The path is the rest of the line (it may contain spaces).
    let path_at = {
        let mut seen = 0;
        let mut at = line.len();
        let mut i = 0;
        let mut in_field = false;
        while i < line.len() {
            let space = line[i] == b' ';
            if !space && !in_field {
                seen += 1;
                if seen == 6 {
                    at = i;
                    break;
                }
            }
            in_field = !space;
            i += 1;
        }
        at
    };
    let dash = range.iter().position(|&b| b == b'-')?;
    Some(Mapping {
        start: hex(&range[..dash])?,
        end: hex(&range[dash + 1..])?,
        readable: perms.first() == Some(&b'r'),
        exec: perms.get(2) == Some(&b'x'),
        offset,
        inode,
        path: &line[path_at..],
    })
}

fn same_object(a: &Mapping<'_>, b: &Mapping<'_>) -> bool {
    a.inode == b.inode && a.path == b.path
}

/// Reads a little-endian integer of `N` bytes at `at` (inside a mapping
/// the caller checked).
unsafe fn rd<const N: usize>(at: u64) -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: the caller checked that `at..at+N` is mapped and readable.
    unsafe { core::ptr::copy_nonoverlapping(at as *const u8, b.as_mut_ptr(), N) };
    u64::from_le_bytes(b)
}

const PT_LOAD: u32 = 1;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const PF_X: u32 = 1;

/// The unwind module of the object whose first mapping is `maps[i]`
/// (offset 0), from the ELF and program headers in memory.
unsafe fn module_at(maps: &[Mapping<'_>], i: usize) -> Option<(Module<&'static [u8]>, u64, u64)> {
    let first = maps[i];
    let start = first.start;
    let len = first.end - first.start;
    if len < 64 {
        return None;
    }
    // SAFETY (all reads below): inside readable mappings of this object,
    // checked before each read.
    unsafe {
        if rd::<4>(start) != 0x464c_457f || rd::<1>(start + 4) != 2 || rd::<1>(start + 5) != 1 {
            return None;
        }
        let e_type = rd::<2>(start + 16);
        let phoff = rd::<8>(start + 32);
        let phentsize = rd::<2>(start + 54);
        let phnum = rd::<2>(start + 56);
        if phentsize != 56 || phoff.checked_add(phnum * 56)? > len {
            return None;
        }
        let mut first_load: Option<u64> = None;
        let mut code = (u64::MAX, 0u64);
        let mut eh_hdr: Option<(u64, u64)> = None;
        for k in 0..phnum {
            let ph = start + phoff + k * 56;
            let p_type = rd::<4>(ph) as u32;
            let p_flags = rd::<4>(ph + 4) as u32;
            let p_offset = rd::<8>(ph + 8);
            let p_vaddr = rd::<8>(ph + 16);
            let p_memsz = rd::<8>(ph + 40);
            match p_type {
                PT_LOAD => {
                    if p_offset == 0 && first_load.is_none() {
                        first_load = Some(p_vaddr);
                    }
                    if p_flags & PF_X != 0 {
                        code.0 = code.0.min(p_vaddr);
                        code.1 = code.1.max(p_vaddr.checked_add(p_memsz)?);
                    }
                }
                PT_GNU_EH_FRAME => eh_hdr = Some((p_vaddr, p_memsz)),
                _ => {}
            }
        }
        let bias = match e_type {
            2 => 0,
            3 => start.checked_sub(first_load? & !4095)?,
            _ => return None,
        };
        if code.0 >= code.1 {
            return None;
        }
        let (hdr_svma, hdr_len) = eh_hdr?;
        let code_avma = (code.0.checked_add(bias)?, code.1.checked_add(bias)?);
        let hdr_avma = hdr_svma.checked_add(bias)?;
        // The code and the header must lie in mappings of this object
        // (a data file mapped by the program is not a loaded object).
        let inside = |a: u64, n: u64, want_exec: bool| -> Option<u64> {
            maps.iter()
                .filter(|m| same_object(m, &first) && m.readable && (!want_exec || m.exec))
                .find(|m| a >= m.start && a.checked_add(n).is_some_and(|e| e <= m.end))
                .map(|m| m.end)
        };
        inside(code_avma.0, 1, true)?;
        inside(hdr_avma, hdr_len.max(8), false)?;
        // .eh_frame_hdr: version 1, then the encoded pointer to .eh_frame.
        if rd::<1>(hdr_avma) != 1 {
            return None;
        }
        let enc = rd::<1>(hdr_avma + 1) as u8;
        let field = hdr_avma + 4;
        let value = match enc & 0x0f {
            0x0b => rd::<4>(field) as u32 as i32 as i64 as u64, // sdata4
            0x03 => rd::<4>(field),                             // udata4
            0x04 | 0x0c => rd::<8>(field),                      // (s|u)data8
            _ => return None,
        };
        let eh_frame_avma = match enc & 0x70 {
            0x10 => field.wrapping_add(value), // pcrel
            0x00 => value,                     // absolute
            _ => return None,
        };
        let eh_frame_end = inside(eh_frame_avma, 8, false)?;
        let hdr: &'static [u8] =
            core::slice::from_raw_parts(hdr_avma as *const u8, hdr_len as usize);
        let eh_frame: &'static [u8] = core::slice::from_raw_parts(
            eh_frame_avma as *const u8,
            (eh_frame_end - eh_frame_avma) as usize,
        );
        let eh_frame_svma = eh_frame_avma - bias;
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: Some(code.0..code.1),
            text: None,
            stubs_svma: None,
            stub_helper_svma: None,
            got_svma: None,
            unwind_info: None,
            eh_frame_svma: Some(eh_frame_svma..eh_frame_svma + eh_frame.len() as u64),
            eh_frame: Some(eh_frame),
            eh_frame_hdr_svma: Some(hdr_svma..hdr_svma + hdr_len),
            eh_frame_hdr: Some(hdr),
            debug_frame: None,
            text_segment_svma: None,
            text_segment: None,
        };
        Some((
            Module::new(String::new(), code_avma.0..code_avma.1, bias, info),
            code_avma.0,
            code_avma.1,
        ))
    }
}

/// Builds a snapshot of the loaded objects.
unsafe fn build(generation: u64) -> Option<Box<Snapshot>> {
    // SAFETY: reading our own maps.
    let (buf, len) = unsafe { read_maps()? };
    // SAFETY: `len` bytes were read into the mapping.
    let text = unsafe { core::slice::from_raw_parts(buf, len) };
    let mut maps: Vec<Mapping<'_>> = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        if let Some(m) = parse_line(line) {
            maps.push(m);
        }
    }
    let mut unwinder = Unw::new();
    let mut code = Vec::new();
    for i in 0..maps.len() {
        let m = &maps[i];
        let is_object =
            m.offset == 0 && m.readable && (m.path.first() == Some(&b'/') || m.path == b"[vdso]");
        if !is_object {
            continue;
        }
        // Only the first offset-0 mapping of an object starts it.
        if i > 0 && same_object(&maps[i - 1], m) && maps[i - 1].offset == 0 {
            continue;
        }
        // SAFETY: `maps` is this process's current map list.
        if let Some((module, lo, hi)) = unsafe { module_at(&maps, i) } {
            if code.iter().any(|&(a, b)| lo < b && a < hi) {
                continue;
            }
            unwinder.add_module(module);
            code.push((lo, hi));
        }
    }
    drop(maps);
    // The trace needs the maps of every object a frame may point into,
    // also of those unloaded later: each new table's maps go out too.
    crate::imp::maps_changed(text);
    // SAFETY: the mapping made by read_maps.
    unsafe { libc::munmap(buf.cast(), MAPS_CAP) };
    code.sort_unstable();
    Some(Box::new(Snapshot {
        generation,
        unwinder,
        code,
    }))
}

/// Replaces the snapshot (the caller holds `REBUILDING`). The old one is
/// freed once no thread can still be using it; if one stays inside the
/// unwinder too long (stopped by a debugger, say), it is left allocated.
unsafe fn rebuild(me: &ThreadUnwind) -> bool {
    let generation = GENERATION.load(Ordering::Acquire);
    // SAFETY: building from our own maps.
    let Some(new) = (unsafe { build(generation) }) else {
        return false;
    };
    let old = SNAPSHOT.swap(Box::into_raw(new), Ordering::AcqRel);
    if !old.is_null() {
        let mut all_idle = true;
        crate::imp::each_thread(&mut |t: &ThreadUnwind| {
            if core::ptr::eq(t, me) {
                return;
            }
            let mut spins = 0u32;
            while t.busy.load(Ordering::SeqCst) {
                spins += 1;
                if spins > 1 << 22 {
                    all_idle = false;
                    return;
                }
                core::hint::spin_loop();
            }
        });
        if all_idle {
            // SAFETY: no thread holds the old snapshot any more.
            drop(unsafe { Box::from_raw(old) });
        }
    }
    true
}

/// Where a return address is known code.
fn known(s: &Snapshot, pc: u64) -> bool {
    let i = s.code.partition_point(|&(lo, _)| lo <= pc);
    i > 0 && pc < s.code[i - 1].1
}

/// glibc's x86_64 signal return trampoline: `mov $15, %rax; syscall`.
const RESTORE_RT: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];
/// Offsets in the `ucontext_t` the kernel puts at the trampoline's stack
/// pointer: `uc_mcontext.gregs` at 40, then REG_RBP 10, REG_RSP 15,
/// REG_RIP 16 (8 bytes each).
const UC_GREGS: u64 = 40;
const REG_RBP: u64 = 10;
const REG_RSP: u64 = 15;
const REG_RIP: u64 = 16;

/// The readable stack: the thread's stack above the caller's frame, and
/// the signal stack when a handler runs on it.
struct Stack {
    ranges: [(u64, u64); 2],
}

impl Stack {
    fn read(&self, addr: u64) -> Result<u64, ()> {
        if addr & 7 != 0 {
            return Err(());
        }
        for &(lo, hi) in &self.ranges {
            if addr >= lo && addr.checked_add(8).is_some_and(|e| e <= hi) {
                // SAFETY: inside a mapped stack range, above the live
                // frames of the hook.
                return Ok(unsafe { *(addr as *const u64) });
            }
        }
        Err(())
    }
}

/// The alternate signal stack of this thread, if one is set up.
fn sigaltstack() -> Option<(u64, u64)> {
    #[repr(C)]
    struct StackT {
        sp: *mut c_void,
        flags: c_int,
        size: usize,
    }
    let mut ss = StackT {
        sp: null_mut(),
        flags: 0,
        size: 0,
    };
    // SAFETY: sigaltstack(NULL, &ss) only reads the current setting.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sigaltstack,
            null_mut::<c_void>(),
            &mut ss as *mut StackT,
        )
    };
    const SS_DISABLE: c_int = 2;
    if rc != 0 || ss.flags & SS_DISABLE != 0 || ss.sp.is_null() {
        return None;
    }
    Some((ss.sp as u64, ss.sp as u64 + ss.size as u64))
}

/// The caller's backtrace into `out` (at most `depth` entries): its
/// return address, then the return addresses found by unwinding. `sp` is
/// the caller's stack pointer (just above the return address into it),
/// `bp` its frame pointer register, `thread_stack` the thread's stack
/// bounds.
///
/// # Safety
/// `sp - 8` holds the return address into the caller; `out` has room for
/// `depth` entries.
pub unsafe fn backtrace(
    me: &ThreadUnwind,
    sp: u64,
    bp: u64,
    thread_stack: (u64, u64),
    depth: usize,
    out: *mut u64,
) -> usize {
    if depth == 0 {
        return 0;
    }
    // SAFETY: the trampoline's return address slot.
    let ret = unsafe { *((sp - 8) as *const u64) };
    // SAFETY: room for `depth` entries.
    unsafe { out.write(ret) };
    if depth == 1 {
        return 1;
    }
    let first = if sp >= thread_stack.0 && sp < thread_stack.1 {
        (sp, thread_stack.1)
    } else {
        // A handler on the signal stack (or a stack we do not know).
        match sigaltstack() {
            Some((lo, hi)) if sp >= lo && sp < hi => (sp, hi),
            _ => return 1,
        }
    };
    let stack = Stack {
        ranges: [first, thread_stack],
    };
    me.busy.store(true, Ordering::SeqCst);
    // SAFETY: `busy` is set, so module memory stays mapped (dlclose waits).
    let n = unsafe { walk(me, ret, sp, bp, &stack, depth, out) };
    me.busy.store(false, Ordering::Release);
    n
}

#[allow(clippy::too_many_arguments)]
unsafe fn walk(
    me: &ThreadUnwind,
    ret: u64,
    sp: u64,
    bp: u64,
    stack: &Stack,
    depth: usize,
    out: *mut u64,
) -> usize {
    if UNLOADING.load(Ordering::SeqCst) != 0 {
        SHORTENED.fetch_add(1, Ordering::Relaxed);
        return 1;
    }
    let mut snap = SNAPSHOT.load(Ordering::Acquire);
    let mut rebuilt = false;
    // SAFETY: a published snapshot stays allocated while `busy` is set.
    if snap.is_null() || unsafe { (*snap).generation } != GENERATION.load(Ordering::Acquire) {
        // SAFETY: see `refresh`.
        match unsafe { refresh(me) } {
            Some(s) => {
                snap = s;
                rebuilt = true;
            }
            None => {
                SHORTENED.fetch_add(1, Ordering::Relaxed);
                return 1;
            }
        }
    }
    let mut local = me.local.load(Ordering::Relaxed);
    if local.is_null() {
        local = Box::into_raw(Box::new(Local {
            cache: Cache::new(),
            seen: [0; SEEN],
            seen_for: 0,
            // SAFETY: a zeroed Prefix is valid (integers and a bool) and
            // empty (n = 0).
            quick: unsafe { Box::new_zeroed().assume_init() },
            last: Prefix {
                n: 0,
                id: 0,
                cut: false,
                snap: 0,
                ret: [0; MAX_FRAMES],
                sp: [0; MAX_FRAMES],
                bp: [0; MAX_FRAMES],
            },
        }));
        me.local.store(local, Ordering::Relaxed);
    }
    // SAFETY: the thread's own caches, used by this thread only (the guard
    // keeps a signal handler on this thread out of the shim).
    let local = unsafe { &mut *local };
    if local.seen_for != snap as usize {
        local.seen = [0; SEEN];
        local.seen_for = snap as usize;
    }
    if local.last.snap != snap as usize {
        local.last.n = 0;
    }
    let depth = depth.min(MAX_FRAMES);
    let mut regs = UnwindRegsX86_64::new(ret, sp, bp);
    let mut read = |a: u64| stack.read(a);
    let mut addr = FrameAddress::from_return_address(ret);
    // Registers after each frame of this backtrace (see `Prefix`).
    // (Left uninitialised: entries below `n` are written before they are
    // read; clearing 1 KiB per backtrace was a tenth of its cost.)
    let mut cur_sp = [core::mem::MaybeUninit::<u64>::uninit(); MAX_FRAMES];
    let mut cur_bp = [core::mem::MaybeUninit::<u64>::uninit(); MAX_FRAMES];
    cur_sp[0].write(sp);
    cur_bp[0].write(bp);
    let mut n = 1;
    // Stopped by the stack's end or an unknown frame (not by the depth).
    let mut ended = false;
    let mut signal = false;
    let mut reuse_from = 0;
    loop {
        if n >= depth {
            break;
        }
        // The outer frames of the last backtrace, if this one joins it.
        if !signal && n > reuse_from {
            // SAFETY: entries below n were written.
            let (r, s_, b_) = unsafe {
                (
                    *out.add(n - 1),
                    cur_sp[n - 1].assume_init(),
                    cur_bp[n - 1].assume_init(),
                )
            };
            if let Some(k) = local.last.find(r, s_, b_) {
                if local.last.still_there(k, stack) {
                    let take = (local.last.n - k - 1).min(depth - n);
                    for m in 0..take {
                        // SAFETY: n + m < depth.
                        unsafe { out.add(n + m).write(local.last.ret[k + 1 + m]) };
                        cur_sp[n + m].write(local.last.sp[k + 1 + m]);
                        cur_bp[n + m].write(local.last.bp[k + 1 + m]);
                    }
                    n += take;
                    reuse_from = n;
                    if !local.last.cut || n >= depth || take < local.last.n - k - 1 {
                        ended = !local.last.cut && n < depth;
                        break;
                    }
                    // The last backtrace was cut by the depth limit: go on
                    // unwinding from its outermost frame.
                    // SAFETY: n - 1 < n entries written.
                    let r = unsafe { *out.add(n - 1) };
                    // SAFETY: entries below n were written.
                    let (s_, b_) =
                        unsafe { (cur_sp[n - 1].assume_init(), cur_bp[n - 1].assume_init()) };
                    regs = UnwindRegsX86_64::new(r, s_, b_);
                    addr = FrameAddress::from_return_address(r);
                }
            }
        }
        let Some(a) = addr else {
            ended = true;
            break;
        };
        // Most return addresses were checked before: skip to the unwind.
        let seen = matches!(a, FrameAddress::ReturnAddress(ra) if local.checked(ra.get()));
        if !seen {
            let pc = a.address_for_lookup();
            // SAFETY: see above.
            if !known(unsafe { &*snap }, pc) {
                ended = true;
                // A library loaded since the snapshot? Rebuild, unless this
                // page was looked for recently.
                let now = mono_ns();
                if rebuilt || recently_unknown(pc, now) {
                    break;
                }
                // SAFETY: see `refresh`.
                match unsafe { refresh(me) } {
                    Some(s) => {
                        snap = s;
                        rebuilt = true;
                        local.seen = [0; SEEN];
                        local.seen_for = snap as usize;
                        local.last.n = 0;
                    }
                    None => break,
                }
                // SAFETY: the new snapshot.
                if !known(unsafe { &*snap }, pc) {
                    note_unknown(pc, now);
                    break;
                }
                ended = false;
            }
            if let FrameAddress::ReturnAddress(ra) = a {
                // SAFETY: the 9 bytes at `ra` lie in a known object's code.
                let code = if known(unsafe { &*snap }, ra.get() + 8) {
                    // SAFETY: as said.
                    unsafe { core::ptr::read_unaligned(ra.get() as *const [u8; 9]) }
                } else {
                    [0; 9]
                };
                if code == RESTORE_RT {
                    // A signal frame: the interrupted registers.
                    let uc = regs.sp() + UC_GREGS;
                    let (Ok(ip), Ok(rsp), Ok(rbp)) = (
                        read(uc + 8 * REG_RIP),
                        read(uc + 8 * REG_RSP),
                        read(uc + 8 * REG_RBP),
                    ) else {
                        ended = true;
                        break;
                    };
                    regs = UnwindRegsX86_64::new(ip, rsp, rbp);
                    // The interrupted instruction, written one byte on: the
                    // resolver looks up address - 1, as for return addresses.
                    // SAFETY: n < depth.
                    unsafe { out.add(n).write(ip + 1) };
                    n += 1;
                    signal = true;
                    addr = Some(FrameAddress::InstructionPointer(ip));
                    continue;
                }
                local.note_checked(ra.get());
            }
        }
        // SAFETY: the snapshot stays valid while `busy` is set.
        let unwinder = unsafe { &(*snap).unwinder };
        match unwinder.unwind_frame(a, &mut regs, &mut local.cache, &mut read) {
            Ok(Some(ra)) => {
                // SAFETY: n < depth.
                unsafe { out.add(n).write(ra) };
                cur_sp[n].write(regs.sp());
                cur_bp[n].write(regs.bp());
                n += 1;
                addr = FrameAddress::from_return_address(ra);
            }
            _ => {
                ended = true;
                break;
            }
        }
    }
    // A last frame outside every object was a guess: drop it.
    if n > 1 {
        // SAFETY: entries below n were written.
        let last = unsafe { *out.add(n - 1) };
        // SAFETY: see above.
        if !local.checked(last) && !known(unsafe { &*snap }, last.wrapping_sub(1)) {
            n -= 1;
            ended = true;
        }
    }
    // Keep this backtrace for the next one (not across a signal frame,
    // whose registers do not follow from the slots).
    let last = &mut local.last;
    if signal {
        last.n = 0;
    } else {
        // SAFETY: n entries written.
        last.ret[..n].copy_from_slice(unsafe { core::slice::from_raw_parts(out, n) });
        for i in 0..n {
            // SAFETY: entries below n were written.
            unsafe {
                last.sp[i] = cur_sp[i].assume_init();
                last.bp[i] = cur_bp[i].assume_init();
            }
        }
        last.n = n;
        last.id = 0;
        last.cut = !ended;
        last.snap = snap as usize;
    }
    n
}

/// The number of the caller's backtrace if it is one this thread has
/// numbered before and it is still on the stack (see `Local::quick`): the
/// same innermost return address, stack and frame pointer, and every outer
/// return address still in its slot. Reads the stack only.
///
/// # Safety
/// As [`backtrace`].
pub unsafe fn quick_id(
    me: &ThreadUnwind,
    sp: u64,
    bp: u64,
    thread_stack: (u64, u64),
) -> Option<u32> {
    let local = me.local.load(Ordering::Relaxed);
    if local.is_null() || sp < thread_stack.0 || sp >= thread_stack.1 {
        return None;
    }
    // SAFETY: this thread's caches; the trampoline's return address slot.
    let (local, ret) = unsafe { (&*local, *((sp - 8) as *const u64)) };
    let e = &local.quick[quick_slot(ret)];
    let n = e.n;
    if e.id == 0 || n == 0 || e.ret[0] != ret || e.sp[0] != sp || e.bp[0] != bp {
        return None;
    }
    // The slots lie between this frame and the top of the stack (stack
    // pointers grow outwards, and each was checked when it was read):
    // one bounds check for all.
    if n > 1 && (e.sp[1] < sp + 8 || e.sp[n - 1] > thread_stack.1) {
        return None;
    }
    for m in 1..n {
        // SAFETY: inside [sp, stack top), 8-byte aligned (see above).
        if unsafe { *((e.sp[m] - 8) as *const u64) } != e.ret[m] {
            return None;
        }
    }
    Some(e.id)
}

/// The backtrace `frames` (the last one [`backtrace`] wrote) got the
/// number `id`: keep it for [`quick_id`].
pub fn remember(me: &ThreadUnwind, frames: &[u64], id: u32) {
    let local = me.local.load(Ordering::Relaxed);
    if local.is_null() {
        return;
    }
    // SAFETY: this thread's caches.
    let local = unsafe { &mut *local };
    let last = &mut local.last;
    // (A backtrace cut short, or across a signal frame, was not kept.)
    if last.n == 0 || last.ret[..last.n] != *frames {
        return;
    }
    // `quick_id` relies on slots that grow outwards, 8-byte aligned.
    let sps = &last.sp[..last.n];
    if sps.iter().any(|s| s & 7 != 0) || sps.windows(2).any(|w| w[0] >= w[1]) {
        return;
    }
    last.id = id;
    let e = &mut local.quick[quick_slot(last.ret[0])];
    let n = last.n;
    e.n = n;
    e.id = id;
    e.cut = last.cut;
    e.snap = last.snap;
    e.ret[..n].copy_from_slice(&last.ret[..n]);
    e.sp[..n].copy_from_slice(&last.sp[..n]);
    e.bp[..n].copy_from_slice(&last.bp[..n]);
}

/// Forgets this thread's backtraces (a fork child: their numbers belong
/// to the parent's image).
pub fn forget(me: &ThreadUnwind) {
    let local = me.local.load(Ordering::Relaxed);
    if local.is_null() {
        return;
    }
    // SAFETY: only the forking thread exists in the child.
    let local = unsafe { &mut *local };
    local.last.n = 0;
    for e in local.quick.iter_mut() {
        e.n = 0;
        e.id = 0;
    }
}

/// Rebuilds the snapshot if no other thread is doing it; `None` if one is
/// (the caller keeps what it has).
unsafe fn refresh(me: &ThreadUnwind) -> Option<*mut Snapshot> {
    if REBUILDING
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return None;
    }
    // SAFETY: we hold REBUILDING.
    let ok = unsafe { rebuild(me) };
    REBUILDING.store(false, Ordering::Release);
    ok.then(|| SNAPSHOT.load(Ordering::Acquire))
}

/// Before the real `dlclose`: no thread may read module memory until the
/// snapshot is rebuilt. Waits (bounded) for threads inside the unwinder.
pub fn before_dlclose(me: Option<&ThreadUnwind>) {
    UNLOADING.fetch_add(1, Ordering::SeqCst);
    crate::imp::each_thread(&mut |t: &ThreadUnwind| {
        if me.is_some_and(|m| core::ptr::eq(t, m)) {
            return;
        }
        let mut spins = 0u32;
        while t.busy.load(Ordering::SeqCst) && spins < 1 << 24 {
            spins += 1;
            core::hint::spin_loop();
        }
    });
}

/// After the real `dlclose`.
pub fn after_dlclose() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    UNLOADING.fetch_sub(1, Ordering::SeqCst);
}

/// In a fork child: only this thread exists; a rebuild another thread had
/// started is abandoned (the published snapshot is whole).
pub fn after_fork_child() {
    REBUILDING.store(false, Ordering::Release);
    UNLOADING.store(0, Ordering::SeqCst);
}
