//! Address resolution through the trace's memory maps: ELF symbol tables
//! (what `sp-rtrace-postproc -r` does, via `sp-rtrace-resolve -telf`) and
//! DWARF line tables (addr2line) for `func at file:line`.
//!
//! Every module is loaded once; every (map, address) is resolved once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use object::{Object, ObjectKind, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::record::MemoryMap;
use rustc_hash::FxHashMap;

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

struct Module {
    absolute: bool,
    /// Page-aligned address of the first executable segment: a map record
    /// (executable mappings only) starts there, not at the load base. Zero
    /// for the old single-segment objects of the sp-rtrace era.
    exec_base: u64,
    /// Function symbols sorted by start: (start, end, name).
    functions: Vec<(u64, u64, Rc<str>)>,
    dwarf: Option<addr2line::Loader>,
}

/// Resolves addresses; caches modules and answers.
pub struct Resolver {
    maps: Vec<MemoryMap>,
    modules: HashMap<String, Option<Module>>,
    cache: FxHashMap<(usize, u64), Resolved>,
    /// Prefix for module paths (cross resolving, like `--root`).
    root: Option<PathBuf>,
    /// Also read DWARF line tables (file and line).
    pub use_dwarf: bool,
}

impl Resolver {
    pub fn new(root: Option<PathBuf>) -> Self {
        Resolver {
            maps: Vec::new(),
            modules: HashMap::new(),
            cache: FxHashMap::default(),
            root,
            use_dwarf: false,
        }
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
        if !self.modules.contains_key(&path) {
            let file = match &self.root {
                Some(root) => root.join(path.trim_start_matches('/')),
                None => PathBuf::from(&path),
            };
            let m = load_module(&file, self.use_dwarf);
            self.modules.insert(path.clone(), m);
        }
        let r = match self.modules.get(&path).and_then(Option::as_ref) {
            None => Resolved::ModuleOnly {
                module: path,
                loaded: false,
            },
            Some(m) => {
                let rel = if m.absolute {
                    addr
                } else {
                    addr.wrapping_sub(start).wrapping_add(m.exec_base)
                };
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
    if raw.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(raw) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    if raw.starts_with("_R") {
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            return format!("{d:#}()");
        }
    }
    format!("{raw}()")
}

fn load_module(path: &Path, use_dwarf: bool) -> Option<Module> {
    let data = std::fs::read(path).ok()?;
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
    let mut functions = Vec::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() == SymbolKind::Text && !sym.is_undefined() && sym.size() > 0 {
            if let Ok(name) = sym.name() {
                functions.push((sym.address(), sym.address() + sym.size(), Rc::from(name)));
            }
        }
    }
    functions.sort_by_key(|(s, _, _)| *s);
    let dwarf = if use_dwarf {
        addr2line::Loader::new(path).ok()
    } else {
        None
    };
    Some(Module {
        absolute,
        exec_base,
        functions,
        dwarf,
    })
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
