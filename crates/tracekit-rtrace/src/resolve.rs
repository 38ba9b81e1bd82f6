//! Address resolution through the trace's memory maps.
//!
//! Two views share one module cache:
//! * [`Resolver::resolve`]: what `sp-rtrace-postproc -r` prints (ELF
//!   symbol tables, via `sp-rtrace-resolve -telf`), address as recorded;
//! * [`Resolver::symbolise`]: every function of a return address for the
//!   reports: DWARF (file:line and inlined frames, through addr2line)
//!   where the object or its separate debug file has it, `.symtab` and
//!   `.dynsym` otherwise, names demangled (C++, Rust).
//!
//! Separate debug files are found like gdb does: by build id
//! (`<dir>/.build-id/ab/cdef….debug`) under each debug directory, then by
//! `.gnu_debuglink` (beside the object, in its `.debug/`, and under each
//! debug directory), checked by build id or CRC; a dwz supplementary file
//! (`.gnu_debugaltlink`) is loaded too.
//!
//! Every module is loaded once; every (map, address) is resolved once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use object::{Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::record::MemoryMap;
use rustc_hash::FxHashMap;

/// Where separate debug files live on Debian (`-dbgsym`, `libc6-dbg`).
pub const DEFAULT_DEBUG_DIR: &str = "/usr/lib/debug";

/// What a resolved frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// The address is in no memory map.
    Unknown,
    /// In a module whose file is missing or unreadable.
    ModuleOnly { module: String, loaded: bool },
    /// A function, maybe with a source position.
    Function {
        module: String,
        function: String,
        file: Option<String>,
        line: Option<u32>,
    },
}

impl Resolved {
    /// The text the sp-rtrace resolver writes after the address in ELF
    /// mode (`func() from /lib/x.so`, `from /lib/x.so`, `in ??`).
    pub fn elf_text(&self) -> String {
        match self {
            Resolved::Unknown => "in ??".to_string(),
            Resolved::ModuleOnly { module, .. } => format!("from {module}"),
            Resolved::Function {
                module, function, ..
            } => format!("{function} from {module}"),
        }
    }

    /// Function name for reports: `func()` or, failing that, `module+?`.
    pub fn label(&self, addr: u64) -> String {
        match self {
            Resolved::Unknown => format!("0x{addr:x}"),
            Resolved::ModuleOnly { module, .. } => {
                let base = module.rsplit('/').next().unwrap_or(module);
                format!("{base}@0x{addr:x}")
            }
            Resolved::Function { function, .. } => function.clone(),
        }
    }
}

/// One function a return address is in: the innermost inlined one first,
/// the function that holds the code last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFrame {
    /// Demangled name (C++ with its parameters, Rust without the hash),
    /// without the `()` that sp-rtrace's resolver adds to C names.
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl SourceFrame {
    /// `file:line`, `file`, or nothing.
    pub fn position(&self) -> Option<String> {
        match (&self.file, self.line) {
            (Some(f), Some(l)) if l > 0 => Some(format!("{f}:{l}")),
            (Some(f), _) => Some(f.clone()),
            _ => None,
        }
    }
}

/// Everything known about one return address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The map's path (`None`: the address is in no map record).
    pub module: Option<Rc<str>>,
    /// The address in the module's own numbering (what `addr2line -e`
    /// takes) when the module file was read; the recorded address
    /// otherwise.
    pub offset: u64,
    /// Innermost first; empty when no symbol covers the address.
    pub frames: Vec<SourceFrame>,
    /// The module file could not be read.
    pub missing: bool,
}

impl Symbol {
    /// A name for an address no symbol covers: `libx.so+0x1234` (the
    /// module's own address, stable across runs), `libx.so@0x7f…` (the
    /// recorded address, module file missing), or the address.
    pub fn fallback_label(&self) -> String {
        match &self.module {
            Some(m) => {
                let base = m.rsplit('/').next().unwrap_or(m);
                let sep = if self.missing { '@' } else { '+' };
                format!("{base}{sep}0x{:x}", self.offset)
            }
            None => format!("0x{:x}", self.offset),
        }
    }
}

struct Module {
    absolute: bool,
    /// Page-aligned address of the first executable segment: a map record
    /// (executable mappings only) starts there, not at the load base. Zero
    /// for the old single-segment objects of the sp-rtrace era.
    exec_base: u64,
    /// Function symbols of the object, sorted by start: (start, end, name).
    functions: Vec<(u64, u64, Rc<str>)>,
    /// Those of its separate debug file (a stripped object's `.symtab`):
    /// only [`Resolver::symbolise`] uses them, `resolve` stays what
    /// sp-rtrace's ELF resolver finds.
    debug_functions: Vec<(u64, u64, Rc<str>)>,
    dwarf: Option<addr2line::Loader>,
}

/// Resolves addresses; caches modules and answers.
pub struct Resolver {
    maps: Vec<MemoryMap>,
    modules: HashMap<String, Option<Module>>,
    cache: FxHashMap<(usize, u64), Resolved>,
    symbols: FxHashMap<(usize, u64), Rc<Symbol>>,
    /// Prefix for module paths (cross resolving, like `--root`).
    root: Option<PathBuf>,
    /// Also read DWARF line tables (file and line).
    pub use_dwarf: bool,
    /// Where separate debug files are looked for (empty: not at all).
    pub debug_dirs: Vec<PathBuf>,
}

impl Resolver {
    pub fn new(root: Option<PathBuf>) -> Self {
        Resolver {
            maps: Vec::new(),
            modules: HashMap::new(),
            cache: FxHashMap::default(),
            symbols: FxHashMap::default(),
            root,
            use_dwarf: false,
            debug_dirs: Vec::new(),
        }
    }

    /// The resolver of the reports: DWARF on, separate debug files looked
    /// for in `debug_dirs` (under `root` when cross resolving).
    pub fn for_reports(root: Option<PathBuf>, debug_dirs: Vec<PathBuf>) -> Self {
        let mut r = Resolver::new(root);
        r.use_dwarf = true;
        r.debug_dirs = debug_dirs;
        r
    }

    /// Registers a map record; later maps supersede earlier ones that
    /// overlap them.
    pub fn add_map(&mut self, map: &MemoryMap) {
        self.maps.push(map.clone());
    }

    /// How many modules were loaded (successfully or not).
    pub fn modules_loaded(&self) -> usize {
        self.modules.len()
    }

    fn find_map(&self, addr: u64) -> Option<usize> {
        // The reference tests `from <= addr <= to`; the latest map wins.
        self.maps
            .iter()
            .rposition(|m| m.start <= addr && addr <= m.end)
    }

    fn load(&mut self, path: &str) {
        if !self.modules.contains_key(path) {
            let file = match &self.root {
                Some(root) => root.join(path.trim_start_matches('/')),
                None => PathBuf::from(path),
            };
            let m = load_module(&file, self.use_dwarf, &self.debug_dirs);
            self.modules.insert(path.to_string(), m);
        }
    }

    pub fn resolve(&mut self, addr: u64) -> Resolved {
        let Some(mi) = self.find_map(addr) else {
            return Resolved::Unknown;
        };
        if let Some(r) = self.cache.get(&(mi, addr)) {
            return r.clone();
        }
        let map = &self.maps[mi];
        let path = map.path.clone();
        let start = map.start;
        self.load(&path);
        let r = match self.modules.get(&path).and_then(Option::as_ref) {
            None => Resolved::ModuleOnly {
                module: path,
                loaded: false,
            },
            Some(m) => {
                let rel = m.relative(addr, start);
                let function = lookup(&m.functions, rel).map(display_name);
                let (mut file, mut line) = (None, None);
                let mut dwarf_function = None;
                if let Some(ctx) = &m.dwarf {
                    // Return addresses point after the call: ask for the
                    // line of the call instruction.
                    let probe = rel.saturating_sub(1);
                    if let Ok(Some(loc)) = ctx.find_location(probe) {
                        file = loc.file.map(str::to_string);
                        line = loc.line;
                    }
                    if function.is_none() {
                        if let Ok(mut frames) = ctx.find_frames(probe) {
                            if let Ok(Some(f)) = frames.next() {
                                if let Some(name) = f.function {
                                    if let Ok(n) = name.raw_name() {
                                        dwarf_function = Some(display_name(&n));
                                    }
                                }
                            }
                        }
                    }
                }
                match function.or(dwarf_function) {
                    Some(function) => Resolved::Function {
                        module: path,
                        function,
                        file,
                        line,
                    },
                    None => Resolved::ModuleOnly {
                        module: path,
                        loaded: true,
                    },
                }
            }
        };
        self.cache.insert((mi, addr), r.clone());
        r
    }

    /// Every function the return address `addr` is in (inlined ones
    /// first), with source positions where DWARF has them.
    pub fn symbolise(&mut self, addr: u64) -> Rc<Symbol> {
        let Some(mi) = self.find_map(addr) else {
            return Rc::new(Symbol {
                module: None,
                offset: addr,
                frames: Vec::new(),
                missing: false,
            });
        };
        if let Some(r) = self.symbols.get(&(mi, addr)) {
            return r.clone();
        }
        let map = &self.maps[mi];
        let path = map.path.clone();
        let start = map.start;
        self.load(&path);
        let module: Rc<str> = Rc::from(path.as_str());
        let sym = match self.modules.get(&path).and_then(Option::as_ref) {
            None => Symbol {
                module: Some(module),
                offset: addr,
                frames: Vec::new(),
                missing: true,
            },
            Some(m) => {
                let rel = m.relative(addr, start);
                Symbol {
                    module: Some(module),
                    offset: rel,
                    frames: m.frames(rel.saturating_sub(1)),
                    missing: false,
                }
            }
        };
        let sym = Rc::new(sym);
        self.symbols.insert((mi, addr), sym.clone());
        sym
    }
}

impl Module {
    /// The module's own address of `addr`, mapped by a record at `start`.
    fn relative(&self, addr: u64, start: u64) -> u64 {
        if self.absolute {
            addr
        } else {
            addr.wrapping_sub(start).wrapping_add(self.exec_base)
        }
    }

    /// The functions at `probe` (a return address minus one: the call
    /// instruction), innermost first.
    fn frames(&self, probe: u64) -> Vec<SourceFrame> {
        let mut out: Vec<SourceFrame> = Vec::new();
        if let Some(ctx) = &self.dwarf {
            if let Ok(mut frames) = ctx.find_frames(probe) {
                while let Ok(Some(f)) = frames.next() {
                    let function = f
                        .function
                        .as_ref()
                        .and_then(|n| n.raw_name().ok())
                        .map(|n| demangle(&n));
                    let (file, line) = match &f.location {
                        Some(l) => (l.file.map(str::to_string), l.line),
                        None => (None, None),
                    };
                    out.push(SourceFrame {
                        function: function.unwrap_or_default(),
                        file,
                        line,
                    });
                }
            }
        }
        // The outermost frame is the function that holds the code: when
        // DWARF has no name for it (or no DWARF at all), the symbol
        // tables do.
        if out.last().is_none_or(|f| f.function.is_empty()) {
            let name =
                lookup(&self.functions, probe).or_else(|| lookup(&self.debug_functions, probe));
            match (name, out.last_mut()) {
                (Some(n), Some(last)) => last.function = demangle(n),
                (Some(n), None) => out.push(SourceFrame {
                    function: demangle(n),
                    file: None,
                    line: None,
                }),
                (None, _) => {}
            }
        }
        // Inlined frames without a name say nothing useful.
        out.retain(|f| !f.function.is_empty());
        out
    }
}

fn lookup(functions: &[(u64, u64, Rc<str>)], addr: u64) -> Option<&str> {
    let i = functions.partition_point(|(s, _, _)| *s <= addr);
    // A few steps back cover symbols nested in a larger one.
    let hit = (i.saturating_sub(16)..i)
        .rev()
        .find(|&j| addr < functions[j].1)?;
    let start = functions[hit].0;
    // Aliases with the same start: the first in table order wins, as in
    // the reference (the sort above is stable).
    let mut first = hit;
    while first > 0 && functions[first - 1].0 == start && addr < functions[first - 1].1 {
        first -= 1;
    }
    Some(&functions[first].2)
}

/// `_ZN3foo3barEi` → `foo::bar(int)`; a C name gets `()` like the
/// reference resolver prints it.
pub fn display_name(raw: &str) -> String {
    let raw = raw.strip_prefix("IA__").unwrap_or(raw);
    if raw.starts_with("_R") || is_rust_legacy(raw) {
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            return format!("{d:#}()");
        }
    }
    if raw.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(raw) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    format!("{raw}()")
}

/// Rust's legacy mangling is Itanium-shaped: `_ZN…17h<16 hex>E`.
fn is_rust_legacy(raw: &str) -> bool {
    raw.starts_with("_ZN")
        && raw.len() > 20
        && raw.ends_with('E')
        && raw[..raw.len() - 1]
            .rsplit_once("17h")
            .is_some_and(|(_, h)| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A symbol's name for people: C++ (Itanium ABI) and Rust (legacy and v0)
/// names demangled, Rust's without the hash; anything else as it is.
pub fn demangle(raw: &str) -> String {
    if raw.starts_with("_R") || is_rust_legacy(raw) {
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            return format!("{d:#}");
        }
    }
    if raw.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(raw) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    raw.to_string()
}

fn function_symbols<'a>(file: &object::File<'a>) -> Vec<(u64, u64, Rc<str>)> {
    let mut functions = Vec::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() == SymbolKind::Text && !sym.is_undefined() && sym.size() > 0 {
            if let Ok(name) = sym.name() {
                functions.push((sym.address(), sym.address() + sym.size(), Rc::from(name)));
            }
        }
    }
    // Stable: aliases keep table order (the reference takes the first).
    functions.sort_by_key(|(s, _, _)| *s);
    functions
}

fn map_file(path: &Path) -> Option<memmap2::Mmap> {
    let f = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only private mapping of a module file; a file changed
    // while mapped gives wrong names, never unsafety in the parser (it
    // bounds-checks every read of the slice).
    unsafe { memmap2::Mmap::map(&f) }.ok()
}

fn load_module(path: &Path, use_dwarf: bool, debug_dirs: &[PathBuf]) -> Option<Module> {
    let data = map_file(path)?;
    let file = object::File::parse(&*data).ok()?;
    let absolute = file.kind() == ObjectKind::Executable;
    let exec_base = file
        .segments()
        .find(|seg| match seg.flags() {
            object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
            _ => false,
        })
        .map(|seg| seg.address() & !0xfff)
        .unwrap_or(0);
    let functions = function_symbols(&file);
    let has_dwarf = file
        .section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0);
    let has_symtab = file.section_by_name(".symtab").is_some();
    let mut debug_functions = Vec::new();
    let mut dwarf_path = (use_dwarf && has_dwarf).then(|| path.to_path_buf());
    let complete = has_dwarf && has_symtab;
    if !debug_dirs.is_empty() && !complete {
        if let Some(debug) = find_debug_file(&file, path, debug_dirs) {
            if let Some(d) = map_file(&debug) {
                if let Ok(dfile) = object::File::parse(&*d) {
                    if !has_symtab {
                        debug_functions = function_symbols(&dfile);
                    }
                    if dwarf_path.is_none()
                        && use_dwarf
                        && dfile
                            .section_by_name(".debug_info")
                            .is_some_and(|s| s.size() > 0)
                    {
                        dwarf_path = Some(debug);
                    }
                }
            }
        }
    }
    let dwarf = dwarf_path.and_then(|p| load_dwarf(&p, debug_dirs));
    Some(Module {
        absolute,
        exec_base,
        functions,
        debug_functions,
        dwarf,
    })
}

/// DWARF of `path`, with its dwz supplementary file when it names one.
fn load_dwarf(path: &Path, debug_dirs: &[PathBuf]) -> Option<addr2line::Loader> {
    let sup = (|| {
        let data = map_file(path)?;
        let file = object::File::parse(&*data).ok()?;
        let (name, build_id) = file.gnu_debugaltlink().ok()??;
        let name = Path::new(std::str::from_utf8(name).ok()?);
        let mut candidates = Vec::new();
        if name.is_absolute() {
            candidates.push(name.to_path_buf());
        } else if let Some(dir) = path.parent() {
            candidates.push(dir.join(name));
        }
        for dir in debug_dirs {
            candidates.push(build_id_path(dir, build_id));
        }
        candidates
            .into_iter()
            .find(|c| file_build_id(c).as_deref() == Some(build_id))
    })();
    addr2line::Loader::new_with_sup(path, sup).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<dir>/.build-id/ab/cdef….debug`
fn build_id_path(dir: &Path, id: &[u8]) -> PathBuf {
    let h = hex(id);
    let (head, tail) = h.split_at(2.min(h.len()));
    dir.join(".build-id")
        .join(head)
        .join(format!("{tail}.debug"))
}

fn file_build_id(path: &Path) -> Option<Vec<u8>> {
    let data = map_file(path)?;
    let file = object::File::parse(&*data).ok()?;
    file.build_id().ok()?.map(<[u8]>::to_vec)
}

/// The separate debug file of `file` (at `path`): by build id, then by
/// `.gnu_debuglink` (checked by build id, or by CRC when the debug file
/// has no build id).
fn find_debug_file(
    file: &object::File<'_>,
    path: &Path,
    debug_dirs: &[PathBuf],
) -> Option<PathBuf> {
    let build_id = file.build_id().ok().flatten();
    if let Some(id) = build_id {
        for dir in debug_dirs {
            let p = build_id_path(dir, id);
            if p.is_file() && file_build_id(&p).as_deref() == Some(id) {
                return Some(p);
            }
        }
    }
    let (name, crc) = file.gnu_debuglink().ok()??;
    let name = std::str::from_utf8(name).ok()?;
    let own_dir = path.parent().unwrap_or(Path::new("/"));
    let mut candidates = vec![own_dir.join(name), own_dir.join(".debug").join(name)];
    for dir in debug_dirs {
        candidates.push(
            dir.join(own_dir.strip_prefix("/").unwrap_or(own_dir))
                .join(name),
        );
    }
    candidates.into_iter().find(|c| {
        if !c.is_file() || same_file(c, path) {
            return false;
        }
        match (build_id, file_build_id(c)) {
            (Some(id), Some(other)) => id == &other[..],
            _ => map_file(c).is_some_and(|d| crc32fast::hash(&d) == crc),
        }
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_like_the_reference() {
        assert_eq!(display_name("main"), "main()");
        assert_eq!(display_name("_ZN3foo3barEi"), "foo::bar(int)");
        assert_eq!(display_name("IA__g_malloc"), "g_malloc()");
    }

    #[test]
    fn resolves_own_test_binary() {
        // The test executable itself: a real ELF file with symbols.
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let sym = file
            .symbols()
            .find(|s| s.kind() == SymbolKind::Text && s.size() > 16)
            .unwrap();
        let base = 0x5555_0000_0000u64;
        // Like /proc/pid/maps: the executable mapping starts at its
        // segment's page, not at the load base.
        let exec_page = file
            .segments()
            .find(|seg| {
                matches!(seg.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0)
            })
            .map(|seg| seg.address() & !0xfff)
            .unwrap();
        let mut r = Resolver::new(None);
        r.add_map(&MemoryMap {
            path: exe.display().to_string(),
            start: base + exec_page,
            end: base + 0x1000_0000,
        });
        let addr = if file.kind() == ObjectKind::Executable {
            sym.address() + 4
        } else {
            base + sym.address() + 4
        };
        match r.resolve(addr) {
            Resolved::Function { function, .. } => {
                assert_eq!(function, display_name(sym.name().unwrap()))
            }
            other => panic!("unresolved: {other:?}"),
        }
        assert_eq!(r.resolve(1), Resolved::Unknown);
    }
}
