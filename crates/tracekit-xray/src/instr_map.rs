//! The instrumentation map: sleds from an ELF binary's `xray_instr_map`
//! section (or from `llvm-xray extract`'s YAML), and the function ids the
//! runtime assigns to them.

use std::io::Write;

use object::{Object, ObjectSection};
use tracekit_core::{Error, Position, Result};

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
}

impl InstrMap {
    /// The entry address of a function id.
    pub fn function_address(&self, id: i32) -> Option<u64> {
        if id < 1 {
            return None;
        }
        self.functions.get(id as usize - 1).copied()
    }

    /// Reads an ELF binary, or a YAML map written by `extract`.
    pub fn parse(bytes: &[u8]) -> Result<InstrMap> {
        if bytes.starts_with(b"\x7fELF") {
            Self::from_elf(bytes)
        } else if bytes.starts_with(b"---") {
            Self::from_yaml(bytes)
        } else {
            Err(Error::malformed(
                Position::Offset(0),
                "instrumentation map is neither an ELF binary nor an `xray extract` YAML map",
            ))
        }
    }

    /// Reads the `xray_instr_map` section. Version-2 sleds hold
    /// PC-relative addresses; older ones absolute addresses (or 0 plus a
    /// relative relocation in PIEs).
    pub fn from_elf(bytes: &[u8]) -> Result<InstrMap> {
        let file = object::File::parse(bytes).map_err(|e| {
            Error::malformed(Position::Offset(0), format!("cannot read the binary: {e}"))
        })?;
        let section = file.section_by_name("xray_instr_map").ok_or_else(|| {
            Error::malformed(
                Position::Unknown,
                "the binary has no xray_instr_map section (was it built with -fxray-instrument?)",
            )
        })?;
        let data = section.data().map_err(|e| {
            Error::malformed(
                Position::Unknown,
                format!("cannot read xray_instr_map: {e}"),
            )
        })?;
        let base = section.address();
        let wide = file.is_64();
        let entry = if wide { 32 } else { 16 };
        if data.len() % entry != 0 {
            return Err(Error::malformed(
                Position::Unknown,
                format!(
                    "xray_instr_map is {} bytes, not a multiple of the {entry}-byte entry size",
                    data.len()
                ),
            ));
        }
        // Relative relocations that fill zero fields of old sleds in PIEs.
        let mut relocs = std::collections::HashMap::new();
        if let Some(iter) = file.dynamic_relocations() {
            for (off, r) in iter {
                if off >= base && off < base.saturating_add(data.len() as u64) {
                    relocs.insert(off, r.addend() as u64);
                }
            }
        }
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

    /// Reads `llvm-xray extract` output (one flow mapping per sled).
    pub fn from_yaml(bytes: &[u8]) -> Result<InstrMap> {
        let text = String::from_utf8_lossy(bytes);
        let mut map = InstrMap::default();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            let Some(body) = l.strip_prefix("- {").and_then(|b| b.strip_suffix('}')) else {
                continue;
            };
            let bad = |what: &str| {
                Error::malformed(Position::Line(i as u64 + 1), format!("sled entry: {what}"))
            };
            let field = |key: &str| -> Option<&str> {
                body.split(", ").find_map(|kv| {
                    let (k, v) = kv.trim().split_once(':')?;
                    (k.trim() == key).then(|| v.trim())
                })
            };
            let num = |key: &str| -> Result<u64> {
                let v = field(key).ok_or_else(|| bad(&format!("no {key}")))?;
                let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse(),
                };
                parsed.map_err(|_| bad(&format!("bad {key} {v:?}")))
            };
            let id = num("id")? as i32;
            let function = num("function")?;
            let kind_name = field("kind").ok_or_else(|| bad("no kind"))?;
            let kind = SledKind::from_name(kind_name)
                .ok_or_else(|| bad(&format!("unknown kind {kind_name:?}")))?;
            if id < 1 || id as usize > map.functions.len() + 1 {
                return Err(bad(&format!("function id {id} out of sequence")));
            }
            if id as usize == map.functions.len() + 1 {
                map.functions.push(function);
            }
            map.sleds.push(Sled {
                id,
                address: num("address")?,
                function,
                kind,
                always_instrument: field("always-instrument") == Some("true"),
                version: num("version").unwrap_or(0) as u8,
            });
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
            let _ = writeln!(line, ", version: {} }}", s.version);
            out.write_all(&line)?;
        }
        out.write_all(b"...\n")
    }
}
