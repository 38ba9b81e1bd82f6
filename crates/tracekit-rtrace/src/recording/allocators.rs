//! Allocations LD_PRELOAD cannot see: an executable that defines allocator
//! functions itself (a statically linked jemalloc, tcmalloc or mimalloc,
//! Rust's tikv-jemallocator or mimalloc crates, a program's own `malloc`).
//! Its calls to them are bound inside the executable at link time, never
//! through the dynamic linker, so the recorder's shim never sees them (and
//! the C library's own calls to `malloc` go to the executable's definition
//! when it exports one). The recorder checks each image's executable when
//! its header arrives and marks the header ([`MODULE_HIDDEN_ALLOCATOR`]);
//! the trace and the report then say that allocations are missing, instead
//! of showing an empty or partial recording silently.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use object::{Object, ObjectSymbol, SymbolKind};
use tracekit_rtrace_preload::wire::{HEADER_FIXED, MODULE_HIDDEN_ALLOCATOR};

/// Entry points of allocators: one of them defined by the executable
/// itself means its allocations go around the shim. (`malloc` and the
/// like: the allocator replaces the C library's; `_rjem_`: tikv-jemallocator;
/// `je_`: jemalloc built with that prefix, as Redis does; `mi_`: mimalloc;
/// `tc_`: tcmalloc.)
pub const ENTRY_POINTS: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "free",
    "_rjem_malloc",
    "_rjem_mallocx",
    "je_malloc",
    "je_mallocx",
    "mi_malloc",
    "mi_malloc_aligned",
    "tc_malloc",
];

/// The allocator entry points `exe` defines itself (in its symbol table or
/// its dynamic symbol table), in [`ENTRY_POINTS`] order; empty when it
/// defines none, or cannot be read (a stripped executable without a
/// symbol table that does not export them shows nothing either).
pub fn defined_entry_points(exe: &Path) -> Vec<&'static str> {
    let Ok(file) = std::fs::File::open(exe) else {
        return Vec::new();
    };
    // Mapped, not read piecewise: the names of a large executable's symbol
    // table (640,000 in a debug build of tracekit) are slices of it, and
    // the recorder's reader thread is not held up (it was 10 s with a read
    // per name).
    // SAFETY: a read-only private mapping; a file changed while mapped
    // gives wrong answers, never unsafety in the parser (it bounds-checks
    // every read of the slice).
    let Ok(data) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return Vec::new();
    };
    let Ok(obj) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let mut found = vec![false; ENTRY_POINTS.len()];
    for sym in obj.symbols().chain(obj.dynamic_symbols()) {
        let Ok(name) = sym.name_bytes() else {
            continue;
        };
        let Some(i) = ENTRY_POINTS.iter().position(|n| n.as_bytes() == name) else {
            continue;
        };
        if sym.is_definition() && sym.kind() == SymbolKind::Text {
            found[i] = true;
        }
    }
    ENTRY_POINTS
        .iter()
        .zip(found)
        .filter_map(|(n, f)| f.then_some(*n))
        .collect()
}

/// The shim's header record with [`MODULE_HIDDEN_ALLOCATOR`] set when the
/// image's executable defines allocator entry points (each executable is
/// read once per process: its answer is kept by path).
pub(crate) fn mark_header(record: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    static SEEN: Mutex<Option<HashMap<Vec<u8>, bool>>> = Mutex::new(None);
    if record.len() < HEADER_FIXED {
        return record.into();
    }
    let path = &record[HEADER_FIXED..];
    let hidden = {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        let seen = seen.get_or_insert_with(HashMap::new);
        match seen.get(path) {
            Some(h) => *h,
            None => {
                use std::os::unix::ffi::OsStrExt;
                let exe = Path::new(std::ffi::OsStr::from_bytes(path));
                let h = !defined_entry_points(exe).is_empty();
                seen.insert(path.to_vec(), h);
                h
            }
        }
    };
    if !hidden {
        return record.into();
    }
    let mut r = record.to_vec();
    let m = u32::from_le_bytes([r[28], r[29], r[30], r[31]]) | MODULE_HIDDEN_ALLOCATOR;
    r[28..32].copy_from_slice(&m.to_le_bytes());
    r.into()
}
