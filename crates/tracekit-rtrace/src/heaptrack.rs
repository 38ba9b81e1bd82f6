//! An sp-rtrace memory trace as heaptrack's own data file (the
//! "interpreted" format, file format version 3, that heaptrack 1.3–1.5's
//! `heaptrack_interpret` writes and `heaptrack_print`/`heaptrack_gui`
//! read), so heaptrack's tools open tracekit recordings.
//!
//! The format (read from heaptrack's `src/interpret/heaptrack_interpret.cpp`
//! and `src/analyze/accumulatedtracedata.cpp`, checked with Debian's
//! heaptrack_print 1.4): one record per line, numbers in lower-case hex.
//! * `v <heaptrack version> <file format version>`; from version 3 on,
//!   strings are sized: `s <length> <bytes>`; string indices start at 1,
//!   0 is "none";
//! * `X <command line>`;
//! * `i <ip> <module> [<function> [<file> <line> [<function> <file> <line>]…]]`:
//!   one instruction pointer, the function it is in and the functions
//!   inlined there (innermost first); indices start at 1;
//! * `t <ip index> <parent trace index>`: a node of the backtrace tree,
//!   the outermost frame's parent is 0; indices start at 1;
//! * `a <size> <trace index>`: allocation info (size and backtrace),
//!   indices start at 0;
//! * `+ <allocation info index>`, `- <allocation info index>`;
//! * `c <milliseconds since the start>`.
//!
//! Strings, instruction pointers, trace nodes and allocation infos are
//! written just before their first use, so the conversion streams; memory
//! is bounded by the distinct addresses, backtraces, (size, backtrace)
//! pairs and the live allocations. Only the memory resource type is
//! converted (heaptrack knows nothing else); frees of blocks never seen
//! allocated are left out, as heaptrack_interpret leaves them out.

use std::io::Write;

use rustc_hash::FxHashMap;
use tracekit_core::{Error, Result, Warnings};

use crate::reader::{IntoItems, Item, Items};
use crate::record::ResourceDef;
use crate::report::Symbolise;
use crate::resolve::Resolver;

/// The file format version written (heaptrack 1.3 and later read it).
pub const FILE_FORMAT_VERSION: u32 = 3;

/// What a conversion wrote and left out.
#[derive(Debug, Default)]
pub struct Stats {
    /// `+` lines (memory allocations).
    pub allocations: u64,
    /// `-` lines.
    pub frees: u64,
    /// Frees of blocks never seen allocated (not written).
    pub unmatched_frees: u64,
    /// `free(NULL)` calls: not written (heaptrack records none), not an
    /// error.
    pub null_frees: u64,
    /// Calls of other resource types (file descriptors, …): not written.
    pub other_resources: u64,
    pub strings: u64,
    pub ips: u64,
    pub trace_nodes: u64,
    pub warnings: Warnings,
}

struct Writer<W: Write> {
    out: W,
    strings: FxHashMap<String, u64>,
    ips: FxHashMap<u64, u64>,
    /// (parent trace index, ip index) → trace index.
    nodes: FxHashMap<(u64, u64), u64>,
    /// (size, trace index) → allocation info index.
    infos: FxHashMap<(i64, u64), u64>,
    /// Backtrace (addresses) → trace index of its innermost frame.
    backtraces: FxHashMap<Vec<u64>, u64>,
    resolver: Resolver,
    resolve: bool,
}

fn io(e: std::io::Error) -> Error {
    Error::io(None, e)
}

impl<W: Write> Writer<W> {
    fn string(&mut self, s: &str) -> Result<u64> {
        if s.is_empty() {
            return Ok(0);
        }
        if let Some(&i) = self.strings.get(s) {
            return Ok(i);
        }
        // heaptrack reads a line at a time: a string cannot hold a newline.
        let clean: String = s.replace(['\n', '\r'], " ");
        let i = self.strings.len() as u64 + 1;
        writeln!(self.out, "s {:x} {}", clean.len(), clean).map_err(io)?;
        self.strings.insert(s.to_string(), i);
        Ok(i)
    }

    fn ip(&mut self, addr: u64) -> Result<u64> {
        if let Some(&i) = self.ips.get(&addr) {
            return Ok(i);
        }
        let mut line = format!("i {addr:x}");
        if self.resolve {
            let sym = self.resolver.symbolise(addr);
            let module = match &sym.module {
                Some(m) => self.string(m)?,
                None => 0,
            };
            line.push_str(&format!(" {module:x}"));
            for (k, f) in sym.frames.iter().enumerate() {
                let function = self.string(&f.function)?;
                let file = match &f.file {
                    Some(p) => self.string(p)?,
                    None => 0,
                };
                if k == 0 && file == 0 {
                    // heaptrack writes a file and line only with a file,
                    // and inlined frames only after them.
                    line.push_str(&format!(" {function:x}"));
                    break;
                }
                line.push_str(&format!(" {function:x} {file:x} {:x}", f.line.unwrap_or(0)));
            }
        } else {
            line.push_str(" 0");
        }
        writeln!(self.out, "{line}").map_err(io)?;
        let i = self.ips.len() as u64 + 1;
        self.ips.insert(addr, i);
        Ok(i)
    }

    /// The trace index of a backtrace (innermost first).
    fn trace(&mut self, frames: &[u64]) -> Result<u64> {
        if let Some(&t) = self.backtraces.get(frames) {
            return Ok(t);
        }
        let mut parent = 0u64;
        for &addr in frames.iter().rev() {
            let ip = self.ip(addr)?;
            parent = match self.nodes.get(&(parent, ip)) {
                Some(&t) => t,
                None => {
                    let t = self.nodes.len() as u64 + 1;
                    writeln!(self.out, "t {ip:x} {parent:x}").map_err(io)?;
                    self.nodes.insert((parent, ip), t);
                    t
                }
            };
        }
        self.backtraces.insert(frames.to_vec(), parent);
        Ok(parent)
    }

    fn info(&mut self, size: i64, trace: u64) -> Result<u64> {
        if let Some(&i) = self.infos.get(&(size, trace)) {
            return Ok(i);
        }
        let i = self.infos.len() as u64;
        writeln!(self.out, "a {:x} {trace:x}", size.max(0)).map_err(io)?;
        self.infos.insert((size, trace), i);
        Ok(i)
    }
}

/// Converts an sp-rtrace text trace into heaptrack's data file (text;
/// wrap `out` in a zstd encoder for a `.zst` file, see [`write_zst`]).
pub fn convert<R: IntoItems, W: Write>(input: R, out: W, sym: &Symbolise) -> Result<Stats> {
    let mut asm = input.into_items();
    let mut resolver = Resolver::for_reports(sym.root.clone(), sym.debug_dirs.clone());
    resolver.use_dwarf = sym.resolve;
    let mut w = Writer {
        out,
        strings: FxHashMap::default(),
        ips: FxHashMap::default(),
        nodes: FxHashMap::default(),
        infos: FxHashMap::default(),
        backtraces: FxHashMap::default(),
        resolver,
        resolve: sym.resolve,
    };
    let mut stats = Stats::default();
    let mut registry: Vec<ResourceDef> = Vec::new();
    let mut live: FxHashMap<u64, u64> = FxHashMap::default();
    let mut started = false;
    // Milliseconds: the first call's timestamp, the last one written.
    let mut clock_start: Option<u64> = None;
    let mut clock_written = 0u64;
    let mut unwrapped = Unwrap::default();
    while let Some(item) = asm.next_item()? {
        match item {
            Item::Header(h) => {
                writeln!(w.out, "v 0 {FILE_FORMAT_VERSION:x}").map_err(io)?;
                if let Some(p) = h.get("process") {
                    writeln!(w.out, "X {}", p.replace(['\n', '\r'], " ")).map_err(io)?;
                }
                started = true;
            }
            Item::Resource(r) if !registry.iter().any(|x| x.name == r.name) => {
                registry.push(r);
            }
            Item::Map(m) => w.resolver.add_map(&m),
            Item::Call(fc) => {
                if !started {
                    return Err(Error::Malformed {
                        file: None,
                        position: tracekit_core::Position::Line(fc.line),
                        message: "a call before the header line".into(),
                    });
                }
                let is_memory = match &fc.call.resource_type {
                    Some(t) => t == "memory",
                    None => registry.first().is_none_or(|r| r.name == "memory"),
                };
                if !is_memory {
                    stats.other_resources += 1;
                    continue;
                }
                if let Some(t) = fc.call.timestamp {
                    let t = unwrapped.tick(t);
                    let start = *clock_start.get_or_insert(t);
                    let elapsed = t.saturating_sub(start);
                    if elapsed > clock_written {
                        writeln!(w.out, "c {elapsed:x}").map_err(io)?;
                        clock_written = elapsed;
                    }
                }
                if fc.call.is_alloc() {
                    let frames: Vec<u64> = fc.frames.iter().map(|f| f.addr).collect();
                    let trace = w.trace(&frames)?;
                    let info = w.info(fc.call.size(), trace)?;
                    writeln!(w.out, "+ {info:x}").map_err(io)?;
                    live.insert(fc.call.id, info);
                    stats.allocations += 1;
                } else if fc.call.id == 0 {
                    stats.null_frees += 1;
                } else {
                    match live.remove(&fc.call.id) {
                        Some(info) => {
                            writeln!(w.out, "- {info:x}").map_err(io)?;
                            stats.frees += 1;
                        }
                        None => stats.unmatched_frees += 1,
                    }
                }
            }
            _ => {}
        }
    }
    writeln!(
        w.out,
        "# strings: {}\n# ips: {}",
        w.strings.len(),
        w.ips.len()
    )
    .map_err(io)?;
    w.out.flush().map_err(io)?;
    stats.strings = w.strings.len() as u64;
    stats.ips = w.ips.len() as u64;
    stats.trace_nodes = w.nodes.len() as u64;
    stats.warnings = asm.take_warnings();
    Ok(stats)
}

/// [`convert`] into a zstd-compressed file, as heaptrack writes them.
pub fn write_zst<R: IntoItems, W: Write>(input: R, out: W, sym: &Symbolise) -> Result<Stats> {
    let mut enc = zstd::Encoder::new(out, 3).map_err(io)?;
    let stats = convert(input, &mut enc, sym)?;
    enc.finish().map_err(io)?.flush().map_err(io)?;
    Ok(stats)
}

/// sp-rtrace timestamps are milliseconds modulo 24 h: unwrapped here.
#[derive(Default)]
struct Unwrap {
    last: Option<u64>,
    wraps: u64,
}

impl Unwrap {
    fn tick(&mut self, t: u32) -> u64 {
        const DAY_MS: u64 = 86_400_000;
        let mut t = t as u64 + self.wraps * DAY_MS;
        if self.last.is_some_and(|l| t + DAY_MS / 2 < l) {
            self.wraps += 1;
            t += DAY_MS;
        }
        self.last = Some(t);
        t
    }
}
