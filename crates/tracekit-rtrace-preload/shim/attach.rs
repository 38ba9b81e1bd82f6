//! Recording a process that is already running (`record mem -p PID`).
//!
//! The recorder (`tracekit_rtrace::recording::attach`) stops one thread of
//! the process with ptrace, makes it call `dlopen` on this library and
//! then [`tracekit_rtrace_attach`] with the settings the environment
//! carries when the shim is preloaded. A library loaded late interposes
//! nothing (the program's references to `malloc` are bound already), so
//! the attach call rewrites the GOT slots (`R_X86_64_JUMP_SLOT` and
//! `R_X86_64_GLOB_DAT` relocations) of every loaded object that name a
//! function the shim hooks, keeping their old values. The real functions
//! are then the global scope's (`dlsym(RTLD_DEFAULT)`), not the next
//! definition after ours. [`tracekit_rtrace_detach`], called the same way
//! when the recorder stops, puts the old values back and stops recording:
//! the library stays loaded but does nothing.
//!
//! Objects loaded after the attach call bind to the real functions: what
//! they allocate is not recorded.

use core::ffi::{c_char, c_int, c_void, CStr};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::imp;
use crate::libc;

/// Set by the attach call, before anything reads the settings.
static ATTACHED: AtomicBool = AtomicBool::new(false);

const CONFIG_CAP: usize = 8192;
/// The attach call's settings: `NAME=VALUE` lines, written once before
/// [`ATTACHED`] is set and never changed afterwards.
static mut CONFIG: [u8; CONFIG_CAP] = [0; CONFIG_CAP];
static CONFIG_LEN: AtomicUsize = AtomicUsize::new(0);

/// Whether the shim was loaded by the attach call (not preloaded).
#[inline(always)]
pub fn attached() -> bool {
    ATTACHED.load(Ordering::Relaxed)
}

/// The attach call's value of the variable `name` (what `getenv` gives
/// when the shim is preloaded).
pub fn setting(name: &CStr) -> Option<&'static [u8]> {
    let len = CONFIG_LEN.load(Ordering::Acquire);
    // SAFETY: CONFIG is written only before ATTACHED/CONFIG_LEN are
    // published, never afterwards.
    let config: &'static [u8] =
        unsafe { core::slice::from_raw_parts(core::ptr::addr_of!(CONFIG).cast::<u8>(), len) };
    let name = name.to_bytes();
    config.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(name)?;
        rest.strip_prefix(b"=")
    })
}

/// Where a GOT slot was rewritten, and what it held.
struct Patch {
    slot: AtomicUsize,
    old: AtomicUsize,
    /// In a RELRO range (read-only once relocated).
    relro: AtomicBool,
}
const PATCHES_N: usize = 4096;
#[allow(clippy::declare_interior_mutable_const)]
const NO_PATCH: Patch = Patch {
    slot: AtomicUsize::new(0),
    old: AtomicUsize::new(0),
    relro: AtomicBool::new(false),
};
static PATCHES: [Patch; PATCHES_N] = [NO_PATCH; PATCHES_N];
static PATCHED: AtomicUsize = AtomicUsize::new(0);

/// The functions the shim defines: a rewritten slot points to ours (the
/// shim's own references to these names lead to the global definitions,
/// so ours are looked up in the shim's handle).
const HOOKS: [&CStr; 43] = [
    c"malloc",
    c"calloc",
    c"realloc",
    c"reallocarray",
    c"free",
    c"posix_memalign",
    c"aligned_alloc",
    c"memalign",
    c"valloc",
    c"pvalloc",
    c"open",
    c"open64",
    c"openat",
    c"openat64",
    c"creat",
    c"creat64",
    c"close",
    c"dup",
    c"dup2",
    c"dup3",
    c"pipe",
    c"pipe2",
    c"socket",
    c"accept",
    c"accept4",
    c"fopen",
    c"fopen64",
    c"fdopen",
    c"fclose",
    c"eventfd",
    c"timerfd_create",
    c"memfd_create",
    c"execve",
    c"execvpe",
    c"execv",
    c"execvp",
    c"execl",
    c"execle",
    c"execlp",
    c"dlclose",
    c"_exit",
    c"_Exit",
    c"exit",
];

/// Called by the recorder in the target (see the module documentation)
/// with its settings, `NAME=VALUE` lines, and the handle `dlopen` gave
/// for this library. Returns the number of GOT slots
/// rewritten, or -1 if already attached (or the settings too long), -2 if
/// recording could not start (the stream is not there).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tracekit_rtrace_attach(
    config: *const c_char,
    handle: *mut c_void,
) -> c_int {
    if config.is_null() || handle.is_null() || attached() {
        return -1;
    }
    // SAFETY: the recorder passes a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(config) }.to_bytes();
    if bytes.len() > CONFIG_CAP {
        return -1;
    }
    // SAFETY: written once, before ATTACHED is set (nothing reads it
    // before).
    unsafe {
        core::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            core::ptr::addr_of_mut!(CONFIG).cast::<u8>(),
            bytes.len(),
        )
    };
    CONFIG_LEN.store(bytes.len(), Ordering::Release);
    ATTACHED.store(true, Ordering::Release);
    if !imp::start_late() {
        return -2;
    }
    let mut walk = Walk {
        own: tracekit_rtrace_attach as *const () as usize,
        hooks: [(b"", 0); HOOKS.len()],
    };
    for (name, hook) in HOOKS.iter().zip(walk.hooks.iter_mut()) {
        // SAFETY: dlsym in the library's own handle finds its definitions.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) } as usize;
        *hook = (name.to_bytes(), p);
    }
    // SAFETY: the callback reads the loaded objects' program headers and
    // dynamic sections, as the loader laid them out.
    unsafe { dl_iterate_phdr(patch_object, (&mut walk as *mut Walk).cast()) };
    PATCHED.load(Ordering::Acquire).min(PATCHES_N) as c_int
}

/// Called by the recorder in the target when it stops recording: the
/// rewritten GOT slots get their old values back, every thread's events
/// are sent and nothing more is recorded. Returns the slots restored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tracekit_rtrace_detach() -> c_int {
    if !attached() {
        return -1;
    }
    let n = PATCHED.swap(0, Ordering::AcqRel).min(PATCHES_N);
    for p in PATCHES[..n].iter().rev() {
        let slot = p.slot.load(Ordering::Relaxed);
        // SAFETY: a GOT slot we rewrote; the old value goes back.
        unsafe {
            write_slot(
                slot,
                p.old.load(Ordering::Relaxed),
                p.relro.load(Ordering::Relaxed),
            )
        };
    }
    imp::stop_late();
    n as c_int
}

struct Walk {
    own: usize,
    hooks: [(&'static [u8], usize); HOOKS.len()],
}

#[repr(C)]
struct DlPhdrInfo {
    addr: usize,
    name: *const c_char,
    phdr: *const Phdr,
    phnum: u16,
}

#[repr(C)]
struct Phdr {
    p_type: u32,
    p_flags: u32,
    p_offset: u64,
    p_vaddr: u64,
    p_paddr: u64,
    p_filesz: u64,
    p_memsz: u64,
    p_align: u64,
}

#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}

#[repr(C)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

#[repr(C)]
struct Rela {
    offset: u64,
    info: u64,
    addend: i64,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_STRSZ: i64 = 10;
const DT_JMPREL: i64 = 23;
const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;
const SYS_MPROTECT: core::ffi::c_long = 10;

#[link(name = "c")]
unsafe extern "C" {
    fn dl_iterate_phdr(
        cb: unsafe extern "C" fn(*mut DlPhdrInfo, usize, *mut c_void) -> c_int,
        data: *mut c_void,
    ) -> c_int;
}

/// One loaded object: rewrites its GOT slots naming a hooked function.
unsafe extern "C" fn patch_object(info: *mut DlPhdrInfo, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our Walk.
    let (info, walk) = unsafe { (&*info, &*(data as *const Walk)) };
    let base = info.addr;
    // SAFETY: the program headers of a loaded object.
    let phdrs = unsafe { core::slice::from_raw_parts(info.phdr, info.phnum as usize) };
    // Not ourselves (our slots lead to the real functions through dlsym
    // anyway), not the dynamic loader (it allocates with its own malloc).
    let own = phdrs.iter().any(|p| {
        p.p_type == PT_LOAD
            && (base + p.p_vaddr as usize..base + (p.p_vaddr + p.p_memsz) as usize)
                .contains(&walk.own)
    });
    let name: &[u8] = if info.name.is_null() {
        b""
    } else {
        // SAFETY: the loader's names are NUL-terminated.
        unsafe { CStr::from_ptr(info.name) }.to_bytes()
    };
    if own || name.windows(6).any(|w| w == b"/ld-li") || name.starts_with(b"linux-vdso") {
        return 0;
    }
    let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else {
        return 0;
    };
    let relro = phdrs.iter().find(|p| p.p_type == PT_GNU_RELRO).map(|p| {
        (
            base + p.p_vaddr as usize,
            base + (p.p_vaddr + p.p_memsz) as usize,
        )
    });
    // The loader relocates the dynamic section's addresses in place, except
    // where it is read-only: an address below the base is not relocated.
    let at = |v: u64| -> usize {
        let v = v as usize;
        if v < base {
            v + base
        } else {
            v
        }
    };
    let (mut symtab, mut strtab, mut strsz) = (0usize, 0usize, 0usize);
    let (mut jmprel, mut pltrelsz, mut rela, mut relasz) = (0usize, 0usize, 0usize, 0usize);
    let mut d = (base + dynamic.p_vaddr as usize) as *const Dyn;
    // SAFETY: the dynamic section ends with DT_NULL.
    unsafe {
        while (*d).tag != DT_NULL {
            let v = (*d).val;
            match (*d).tag {
                DT_SYMTAB => symtab = at(v),
                DT_STRTAB => strtab = at(v),
                DT_STRSZ => strsz = v as usize,
                DT_JMPREL => jmprel = at(v),
                DT_PLTRELSZ => pltrelsz = v as usize,
                DT_RELA => rela = at(v),
                DT_RELASZ => relasz = v as usize,
                _ => {}
            }
            d = d.add(1);
        }
    }
    if symtab == 0 || strtab == 0 {
        return 0;
    }
    for (table, size) in [(jmprel, pltrelsz), (rela, relasz)] {
        if table == 0 {
            continue;
        }
        let n = size / core::mem::size_of::<Rela>();
        // SAFETY: the object's relocation table, as its dynamic section
        // says.
        let relocs = unsafe { core::slice::from_raw_parts(table as *const Rela, n) };
        for r in relocs {
            let kind = (r.info & 0xffff_ffff) as u32;
            if kind != R_X86_64_JUMP_SLOT && kind != R_X86_64_GLOB_DAT {
                continue;
            }
            let index = (r.info >> 32) as usize;
            // SAFETY: the relocation's symbol, in the object's table.
            let sym = unsafe { &*(symtab as *const Sym).add(index) };
            if sym.name as usize >= strsz {
                continue;
            }
            // SAFETY: a NUL-terminated name in the string table.
            let name =
                unsafe { CStr::from_ptr((strtab + sym.name as usize) as *const c_char) }.to_bytes();
            let Some(&(_, hook)) = walk.hooks.iter().find(|(n, h)| *n == name && *h != 0) else {
                continue;
            };
            let slot = base + r.offset as usize;
            let i = PATCHED.load(Ordering::Relaxed);
            if i >= PATCHES_N {
                return 1;
            }
            // SAFETY: a GOT slot of this object, holding a code address.
            let old = unsafe { (*(slot as *const AtomicUsize)).load(Ordering::Acquire) };
            if old == hook {
                continue;
            }
            PATCHES[i].slot.store(slot, Ordering::Relaxed);
            let in_relro = relro.is_some_and(|(lo, hi)| slot >= lo && slot < hi);
            PATCHES[i].old.store(old, Ordering::Relaxed);
            PATCHES[i].relro.store(in_relro, Ordering::Relaxed);
            PATCHED.store(i + 1, Ordering::Release);
            // SAFETY: as above; RELRO pages are made writable for the write.
            unsafe { write_slot(slot, hook, in_relro) };
        }
    }
    0
}

/// Stores `value` into the GOT slot at `slot`; a slot in a RELRO range
/// is written between two `mprotect` calls (writable, then read-only
/// again).
unsafe fn write_slot(slot: usize, value: usize, relro: bool) {
    let page = slot & !4095;
    if relro {
        // SAFETY: changes the protection of one page of a loaded object.
        let ok = unsafe {
            libc::syscall(
                SYS_MPROTECT,
                page,
                4096usize,
                (libc::PROT_READ | libc::PROT_WRITE) as core::ffi::c_long,
            )
        } == 0;
        if !ok {
            return;
        }
    }
    // SAFETY: an aligned GOT slot, writable now.
    unsafe { (*(slot as *const AtomicUsize)).store(value, Ordering::Release) };
    if relro {
        // SAFETY: the RELRO page goes back to read-only.
        unsafe {
            libc::syscall(
                SYS_MPROTECT,
                page,
                4096usize,
                libc::PROT_READ as core::ffi::c_long,
            )
        };
    }
}
