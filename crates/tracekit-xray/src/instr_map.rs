//! The instrumentation map: sleds from an ELF binary's `xray_instr_map`
//! section (or from `llvm-xray extract`'s YAML), and the function ids the
//! runtime assigns to them.

use std::io::Write;

use object::{Object, ObjectSection};
use tracekit_core::{Error, Position, Result};

/// True when `bytes` starts like a YAML list (after comments and blank
/// lines): `---` or `- `.
pub fn looks_like_yaml_map(bytes: &[u8]) -> bool {
    for line in bytes.split(|&b| b == b'\n').take(256) {
        let t = line.trim_ascii();
        if t.is_empty() || t.starts_with(b"#") || t.starts_with(b"%") {
            continue;
        }
        return t.starts_with(b"---") || t.starts_with(b"- ") || t == b"-" || t == b"[]";
    }
    false
}

/// The values relocations give the words of `xray_instr_map`, by address.
fn relocations(
    file: &object::File<'_>,
    section: &object::Section<'_, '_>,
    base: u64,
    len: u64,
) -> std::collections::HashMap<u64, u64> {
    use object::{ObjectSymbol, ObjectSymbolTable, RelocationKind, RelocationTarget};
    let mut out = std::collections::HashMap::new();
    // llvm-xray applies relocations to ELF files only (Mach-O objects keep
    // their unrelocated zeros).
    if file.format() != object::BinaryFormat::Elf {
        return out;
    }
    let value = |r: &object::Relocation, at: u64, dynamic: bool| -> u64 {
        let symbol = match r.target() {
            RelocationTarget::Symbol(i) => {
                let table = if dynamic {
                    file.dynamic_symbol_table()
                } else {
                    file.symbol_table()
                };
                table
                    .and_then(|t| t.symbol_by_index(i).ok())
                    .map_or(0, |s| s.address())
            }
            RelocationTarget::Section(i) => file.section_by_index(i).map_or(0, |s| s.address()),
            _ => 0,
        };
        let v = symbol.wrapping_add(r.addend() as u64);
        if r.kind() == RelocationKind::Relative && symbol != 0 {
            v.wrapping_sub(at)
        } else {
            v
        }
    };
    if let Some(iter) = file.dynamic_relocations() {
        for (off, r) in iter {
            if off >= base && off < base.saturating_add(len) {
                out.insert(off, value(&r, off, true));
            }
        }
    }
    for (off, r) in section.relocations() {
        let at = base.wrapping_add(off);
        out.entry(at).or_insert_with(|| value(&r, at, false));
    }
    out
}

/// What a sled instruments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SledKind {
    FunctionEnter,
    FunctionExit,
    TailExit,
    LogArgsEnter,
    CustomEvent,
    TypedEvent,
    Unknown(u8),
}

impl SledKind {
    pub fn from_code(c: u8) -> SledKind {
        match c {
            0 => SledKind::FunctionEnter,
            1 => SledKind::FunctionExit,
            2 => SledKind::TailExit,
            3 => SledKind::LogArgsEnter,
            4 => SledKind::CustomEvent,
            5 => SledKind::TypedEvent,
            c => SledKind::Unknown(c),
        }
    }
    /// The name `llvm-xray extract` prints.
    pub fn name(self) -> &'static str {
        match self {
            SledKind::FunctionEnter => "function-enter",
            SledKind::FunctionExit => "function-exit",
            SledKind::TailExit => "tail-exit",
            SledKind::LogArgsEnter => "log-args-enter",
            SledKind::CustomEvent => "custom-event",
            SledKind::TypedEvent => "typed-event",
            SledKind::Unknown(_) => "unknown",
        }
    }
    fn from_name(s: &str) -> Option<SledKind> {
        Some(match s {
            "function-enter" => SledKind::FunctionEnter,
            "function-exit" => SledKind::FunctionExit,
            "tail-exit" => SledKind::TailExit,
            "log-args-enter" => SledKind::LogArgsEnter,
            "custom-event" => SledKind::CustomEvent,
            "typed-event" => SledKind::TypedEvent,
            _ => return None,
        })
    }
}

/// One sled entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sled {
    /// 1-based function id.
    pub id: i32,
    pub address: u64,
    pub function: u64,
    pub kind: SledKind,
    pub always_instrument: bool,
    pub version: u8,
}

/// The sleds and function addresses of one binary.
#[derive(Debug, Clone, Default)]
pub struct InstrMap {
    pub sleds: Vec<Sled>,
    /// `functions[id - 1]` is the entry address of function `id`.
    pub functions: Vec<u64>,
    /// A YAML map whose ids do not run 1, 2, 3... in order: entry address
    /// by id (llvm-xray takes a YAML map's ids as written, the last entry
    /// of an id winning); `functions` is then unused.
    by_id: Option<std::collections::HashMap<i32, u64>>,
}

impl InstrMap {
    /// The entry address of a function id.
    pub fn function_address(&self, id: i32) -> Option<u64> {
        if let Some(m) = &self.by_id {
            return m.get(&id).copied();
        }
        if id < 1 {
            return None;
        }
        self.functions.get(id as usize - 1).copied()
    }

    /// Reads an ELF binary, or a YAML map written by `extract`.
    pub fn parse(bytes: &[u8]) -> Result<InstrMap> {
        if looks_like_yaml_map(bytes) {
            Self::from_yaml(bytes)
        } else if bytes.is_empty() {
            Err(Error::Other(
                "The file was not recognized as a valid object file (it is empty)".into(),
            ))
        } else {
            Self::from_elf(bytes)
        }
    }

    /// Reads the `xray_instr_map` section. Version-2 sleds hold
    /// PC-relative addresses; older ones absolute addresses (or 0 plus a
    /// relative relocation in PIEs).
    pub fn from_elf(bytes: &[u8]) -> Result<InstrMap> {
        // Errors in llvm-xray 14's words (its tests check them), then ours.
        let file = object::File::parse(bytes).map_err(|e| {
            Error::Other(format!(
                "The file was not recognized as a valid object file ({e})"
            ))
        })?;
        let supported = matches!(
            file.architecture(),
            object::Architecture::X86_64
                | object::Architecture::Aarch64
                | object::Architecture::Arm
        ) || (file.architecture() == object::Architecture::PowerPc64
            && file.is_little_endian());
        if !supported
            || !matches!(
                file.format(),
                object::BinaryFormat::Elf | object::BinaryFormat::MachO
            )
        {
            return Err(Error::Other(format!(
                "File format not supported (only does ELF and Mach-O little endian 64-bit). This is {:?} {:?}; llvm-xray reads x86-64, AArch64, ARM and ppc64le.",
                file.format(),
                file.architecture()
            )));
        }
        let section = file
            .section_by_name("xray_instr_map")
            .or_else(|| file.section_by_name("__xray_instrmap"))
            .ok_or_else(|| {
                Error::Other(
                    "Failed to find XRay instrumentation map. (The binary has no xray_instr_map section: was it built with -fxray-instrument?)".into(),
                )
            })?;
        let data = section
            .data()
            .map_err(|e| Error::Other(format!("cannot read xray_instr_map: {e}")))?;
        let base = section.address();
        let wide = file.is_64();
        let entry = if wide { 32 } else { 16 };
        if data.len() % entry != 0 {
            return Err(Error::Other(format!(
                "Instrumentation map entries not evenly divisible by size of an XRay sled entry. (xray_instr_map is {} bytes, entries {entry})",
                data.len()
            )));
        }
        // Relocations that fill zero fields of old (version 0/1) sleds:
        // relative ones in PIEs and shared objects (the addend), symbol
        // ones in PIC libraries and objects (the symbol's value plus the
        // addend), as llvm-xray resolves them.
        let relocs = relocations(&file, &section, base, data.len() as u64);
        let little = file.is_little_endian();
        let rd = |at: usize, n: usize| -> u64 {
            let b = &data[at..at + n];
            let mut v = 0u64;
            for i in 0..n {
                let byte = if little { b[n - 1 - i] } else { b[i] };
                v = (v << 8) | u64::from(byte);
            }
            v
        };
        let w = if wide { 8 } else { 4 };
        let mut map = InstrMap::default();
        let mut current: Option<u64> = None;
        for (n, chunk_at) in (0..data.len()).step_by(entry).enumerate() {
            let _ = n;
            let mut address = rd(chunk_at, w);
            let mut function = rd(chunk_at + w, w);
            let kind = data[chunk_at + 2 * w];
            let always = data[chunk_at + 2 * w + 1] != 0;
            let version = data[chunk_at + 2 * w + 2];
            let here = base.wrapping_add(chunk_at as u64);
            if version >= 2 {
                let (a, f) = if wide {
                    (address as i64, function as i64)
                } else {
                    (address as u32 as i32 as i64, function as u32 as i32 as i64)
                };
                address = here.wrapping_add(a as u64);
                function = here.wrapping_add(w as u64).wrapping_add(f as u64);
            } else {
                if address == 0 {
                    address = relocs.get(&here).copied().unwrap_or(0);
                }
                if function == 0 {
                    function = relocs
                        .get(&here.wrapping_add(w as u64))
                        .copied()
                        .unwrap_or(0);
                }
            }
            if current != Some(function) {
                current = Some(function);
                map.functions.push(function);
            }
            map.sleds.push(Sled {
                id: map.functions.len() as i32,
                address,
                function,
                kind: SledKind::from_code(kind),
                always_instrument: always,
                version,
            });
        }
        Ok(map)
    }

    /// Reads `llvm-xray extract` output: a list of sleds, each a mapping
    /// of `id`, `address`, `function`, `kind`, `always-instrument`,
    /// `function-name` (unused: llvm-xray names functions through the
    /// symbolizer, which reads no YAML) and `version`.
    pub fn from_yaml(bytes: &[u8]) -> Result<InstrMap> {
        let entries = crate::yaml_log::sequence_of_mappings(bytes)?;
        let mut map = InstrMap::default();
        let mut by_id = std::collections::HashMap::new();
        let mut in_order = true;
        for (line, fields) in entries {
            let bad = |what: String| {
                Error::malformed(Position::Line(line), format!("sled entry: {what}"))
            };
            let field = |key: &str| -> Option<&str> {
                fields
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.as_str())
            };
            let num = |key: &str| -> Result<u64> {
                let v = field(key).ok_or_else(|| bad(format!("no `{key}`")))?;
                let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse(),
                };
                parsed.map_err(|_| bad(format!("`{key}`: {v:?} is not a number")))
            };
            let id = i32::try_from(num("id")?).map_err(|_| bad("`id` out of range".into()))?;
            let function = num("function")?;
            let kind_name = field("kind").ok_or_else(|| bad("no `kind`".into()))?;
            let kind = SledKind::from_name(kind_name)
                .ok_or_else(|| bad(format!("unknown kind {kind_name:?}")))?;
            let version = match field("version") {
                None => 0,
                Some(_) => u8::try_from(num("version")?)
                    .map_err(|_| bad("`version` out of range".into()))?,
            };
            let always_instrument = match field("always-instrument") {
                None | Some("false") => false,
                Some("true") => true,
                Some(o) => {
                    return Err(bad(format!(
                        "`always-instrument`: {o:?} is not true or false"
                    )))
                }
            };
            if id as usize == map.functions.len() + 1 {
                map.functions.push(function);
            } else if !(id >= 1
                && (id as usize) <= map.functions.len()
                && map.functions[id as usize - 1] == function)
            {
                in_order = false;
            }
            by_id.insert(id, function);
            map.sleds.push(Sled {
                id,
                address: num("address")?,
                function,
                kind,
                always_instrument,
                version,
            });
        }
        if !in_order {
            map.by_id = Some(by_id);
        }
        Ok(map)
    }

    /// `llvm-xray extract` output; `names` gives each sled's function name
    /// (empty without `--symbolize`).
    pub fn write_yaml<W: Write + ?Sized>(
        &self,
        out: &mut W,
        mut names: impl FnMut(i32) -> String,
    ) -> std::io::Result<()> {
        out.write_all(b"---\n")?;
        let mut line = Vec::new();
        for s in &self.sleds {
            line.clear();
            let _ = write!(
                line,
                "- {{ id: {}, address: 0x{:X}, function: 0x{:X}, kind: {}, always-instrument: {}, function-name: ",
                s.id,
                s.address,
                s.function,
                s.kind.name(),
                s.always_instrument
            );
            crate::yaml::write_scalar(names(s.id).as_bytes(), &mut line);
            // llvm-xray leaves the version out when it is 0 (its default).
            if s.version != 0 {
                let _ = write!(line, ", version: {}", s.version);
            }
            line.extend_from_slice(b" }\n");
            out.write_all(&line)?;
        }
        out.write_all(b"...\n")
    }
}
