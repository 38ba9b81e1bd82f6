//! Function ids to names and source positions: the instrumentation map
//! gives the function's address, the binary's symbol table (else DWARF)
//! its name, demangled, and DWARF's line table its file and line, the way
//! llvm-xray's symbolizer reports them. Names are made once per id.

use std::borrow::Cow;
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use tracekit_core::{Error, Result};

use crate::instr_map::InstrMap;

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// Symbols and debug info of one binary.
struct Binary {
    /// (address, size, name) of text symbols, sorted by address.
    symbols: Vec<(u64, u64, String)>,
    dwarf: Option<addr2line::Context<Reader>>,
}

impl Binary {
    fn parse(bytes: &[u8]) -> Result<Binary> {
        let file = object::File::parse(bytes)
            .map_err(|e| Error::Other(format!("cannot read the binary: {e}")))?;
        // The symbol table, else the dynamic one (stripped shared
        // objects), as LLVM's symbolizer reads them. Mach-O names carry a
        // leading underscore the symbolizer drops.
        let macho = file.format() == object::BinaryFormat::MachO;
        let collect = |syms: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| {
            syms.filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
                .filter_map(|s| {
                    let name = s.name().ok()?;
                    let name = match name.strip_prefix('_') {
                        Some(n) if macho => n,
                        _ => name,
                    };
                    Some((s.address(), s.size(), name.to_string()))
                })
                .filter(|(_, _, n)| !n.is_empty())
                .collect::<Vec<_>>()
        };
        let mut symbols = collect(&mut file.symbols());
        if symbols.is_empty() {
            symbols = collect(&mut file.dynamic_symbols());
        }
        symbols.sort_by_key(|s| s.0);
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> std::result::Result<Reader, gimli::Error> {
            let data: Cow<[u8]> = file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or(Cow::Borrowed(&[]));
            Ok(gimli::EndianRcSlice::new(Rc::from(&*data), endian))
        };
        let dwarf = if file.section_by_name(".debug_info").is_some() {
            gimli::Dwarf::load(load)
                .ok()
                .and_then(|d| addr2line::Context::from_dwarf(d).ok())
        } else {
            None
        };
        Ok(Binary { symbols, dwarf })
    }

    fn symbol_at(&self, addr: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.0 <= addr);
        let (start, size, name) = self.symbols.get(i.checked_sub(1)?)?;
        (addr == *start || addr < start.saturating_add((*size).max(1))).then_some(name.as_str())
    }

    fn dwarf_name(&self, addr: u64) -> Option<String> {
        let ctx = self.dwarf.as_ref()?;
        let mut frames = ctx.find_frames(addr).skip_all_loads().ok()?;
        let mut last = None;
        while let Ok(Some(f)) = frames.next() {
            if let Some(func) = f.function {
                if let Ok(n) = func.raw_name() {
                    last = Some(n.into_owned());
                }
            }
        }
        last
    }

    fn location(&self, addr: u64) -> Option<(String, u32, u32)> {
        let ctx = self.dwarf.as_ref()?;
        let loc = ctx.find_location(addr).ok()??;
        Some((
            loc.file.unwrap_or("<invalid>").to_string(),
            loc.line.unwrap_or(0),
            loc.column.unwrap_or(0),
        ))
    }
}

/// The system's text for an I/O error ("No such file or directory"),
/// without Rust's " (os error N)".
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(at) if s.ends_with(')') => s[..at].to_string(),
        _ => s,
    }
}

/// Demangles Itanium C++ and Rust symbols; other names pass through.
pub fn demangle(name: &str) -> String {
    if name.starts_with("_R") {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            return format!("{d:#}");
        }
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return d;
            }
        }
    }
    name.to_string()
}

/// Names function ids like llvm-xray's `FuncIdConversionHelper`.
pub struct FunctionNames {
    map: Option<InstrMap>,
    binary: Option<Binary>,
    demangle: bool,
    names: RefCell<NameCache>,
}

/// Names already made, by id: a table for the small ids maps use, a hash
/// map for the rest (callers ask once per record, so this is hot).
#[derive(Default)]
struct NameCache {
    dense: Vec<Option<Rc<str>>>,
    sparse: rustc_hash::FxHashMap<i32, Rc<str>>,
}

impl NameCache {
    /// Ids below this are kept in the table (at most 16 MiB of slots).
    const DENSE: usize = 1 << 20;

    #[inline]
    fn get(&self, id: i32) -> Option<&Rc<str>> {
        match usize::try_from(id) {
            Ok(i) if i < Self::DENSE => self.dense.get(i)?.as_ref(),
            _ => self.sparse.get(&id),
        }
    }

    fn insert(&mut self, id: i32, name: Rc<str>) {
        match usize::try_from(id) {
            Ok(i) if i < Self::DENSE => {
                if i >= self.dense.len() {
                    self.dense.resize(i + 1, None);
                }
                self.dense[i] = Some(name);
            }
            _ => {
                self.sparse.insert(id, name);
            }
        }
    }
}

impl Default for FunctionNames {
    fn default() -> Self {
        Self::none()
    }
}

impl FunctionNames {
    /// No instrumentation map: ids stay numbers.
    pub fn none() -> FunctionNames {
        FunctionNames {
            map: None,
            binary: None,
            demangle: true,
            names: RefCell::default(),
        }
    }

    /// Loads an instrumented ELF binary (map, symbols, DWARF) or a YAML map.
    /// Errors say, as llvm-xray does, "Cannot extract instrumentation map
    /// from 'FILE'." and on the next line why.
    pub fn load(path: &Path, demangle: bool) -> Result<FunctionNames> {
        let cannot = |why: String| {
            Error::Other(format!(
                "Cannot extract instrumentation map from '{}'.\n{why}",
                path.display()
            ))
        };
        let bytes = std::fs::read(path).map_err(|e| cannot(io_reason(&e)))?;
        Self::from_bytes(&bytes, demangle).map_err(|e| cannot(e.in_file(path).to_string()))
    }

    pub fn from_bytes(bytes: &[u8], demangle: bool) -> Result<FunctionNames> {
        let map = InstrMap::parse(bytes)?;
        let binary = if !crate::instr_map::looks_like_yaml_map(bytes) {
            Some(Binary::parse(bytes)?)
        } else {
            None
        };
        Ok(FunctionNames {
            map: Some(map),
            binary,
            demangle,
            names: RefCell::default(),
        })
    }

    pub fn map(&self) -> Option<&InstrMap> {
        self.map.as_ref()
    }

    /// The function's name; `#id` when the map does not know the id,
    /// `@(hexaddr)` when the binary cannot name the address.
    #[inline]
    pub fn symbol_or_number(&self, id: i32) -> Rc<str> {
        if let Some(n) = self.names.borrow().get(id) {
            return n.clone();
        }
        let name = self.make_name(id);
        self.names.borrow_mut().insert(id, name.clone());
        name
    }

    #[cold]
    fn make_name(&self, id: i32) -> Rc<str> {
        match self.map.as_ref().and_then(|m| m.function_address(id)) {
            None => Rc::from(format!("#{id}")),
            Some(addr) => {
                let raw = self.binary.as_ref().and_then(|b| {
                    b.symbol_at(addr)
                        .map(str::to_string)
                        .or_else(|| b.dwarf_name(addr))
                });
                match raw {
                    Some(r) if self.demangle => Rc::from(demangle(&r)),
                    Some(r) => Rc::from(r),
                    None => Rc::from(format!("@({addr:x})")),
                }
            }
        }
    }

    /// `file:line:column` of the function's entry, `(unknown)` for an id
    /// the map does not have, `<invalid>:0:0` where nothing is known.
    pub fn file_line_column(&self, id: i32) -> String {
        let Some(addr) = self.map.as_ref().and_then(|m| m.function_address(id)) else {
            return "(unknown)".into();
        };
        // A YAML map: llvm-xray's symbolizer, given the map's file, finds
        // no object there and answers with empty line info.
        let Some(b) = self.binary.as_ref() else {
            return "<invalid>:0:0".into();
        };
        let (file, line, col) = b
            .location(addr)
            .unwrap_or_else(|| ("<invalid>".into(), 0, 0));
        let base = Path::new(&file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(file);
        format!("{base}:{line}:{col}")
    }
}
