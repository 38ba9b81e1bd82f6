//! The records of the sp-rtrace text protocol, one per line, and how each
//! is recognised and written back.
//!
//! Classification follows the order of the reference parser (spec §1):
//! frame, call, argument, memory map, context, resource, attachment,
//! comment. Anything unrecognised is a comment, as in the reference; the
//! reader counts comments that do not start with `#` as warnings.

use std::fmt::Write as _;
use std::io::{self, Write};

/// One key of the header line (`key=value`), in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderField {
    pub key: String,
    /// `None` when the piece had no `=` at all.
    pub value: Option<String>,
}

/// The first line of every trace: `key=value, ` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub fields: Vec<HeaderField>,
    /// Real writers end the line with `, `; kept so files round-trip.
    pub trailing_separator: bool,
}

impl Header {
    /// The value of `key` (the first occurrence).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.key == key)
            .and_then(|f| f.value.as_deref())
    }

    /// Sets `key` (replacing its first occurrence, else appending).
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        let value = Some(value.into());
        match self.fields.iter_mut().find(|f| f.key == key) {
            Some(f) => f.value = value,
            None => self.fields.push(HeaderField {
                key: key.to_string(),
                value,
            }),
        }
    }

    /// The start time: `timestamp`, or `time` in protocol 1.0 files.
    pub fn timestamp(&self) -> Option<&str> {
        self.get("timestamp").or_else(|| self.get("time"))
    }

    /// The applied post-processing steps (`leaks|compress|resolve`).
    pub fn filters(&self) -> Vec<&str> {
        self.get("filter")
            .map(|f| f.split('|').filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    }

    pub fn parse(line: &str) -> Option<Header> {
        if !line.contains('=') {
            return None;
        }
        let mut pieces: Vec<&str> = line.split(", ").collect();
        let trailing_separator = pieces.last() == Some(&"");
        if trailing_separator {
            pieces.pop();
        }
        let fields = pieces
            .into_iter()
            .map(|p| match p.split_once('=') {
                Some((k, v)) => HeaderField {
                    key: k.to_string(),
                    value: Some(v.to_string()),
                },
                None => HeaderField {
                    key: p.to_string(),
                    value: None,
                },
            })
            .collect();
        Some(Header {
            fields,
            trailing_separator,
        })
    }

    pub fn write<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        for (i, f) in self.fields.iter().enumerate() {
            if i > 0 {
                out.write_all(b", ")?;
            }
            out.write_all(f.key.as_bytes())?;
            if let Some(v) = &f.value {
                out.write_all(b"=")?;
                out.write_all(v.as_bytes())?;
            }
        }
        if self.trailing_separator {
            out.write_all(b", ")?;
        }
        out.write_all(b"\n")
    }
}

/// Allocation (`name(size) = 0xid`) or deallocation (`name(0xid)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Alloc { size: i64 },
    Free,
}

/// A function call record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub index: i64,
    /// Bit mask of the active contexts; 0 = none (not written).
    pub context: u32,
    /// Milliseconds of a monotonic clock modulo 24 h, if written.
    pub timestamp: Option<u32>,
    pub name: String,
    /// The resource type *name* in `<…>`, present when the trace has more
    /// than one resource type.
    pub resource_type: Option<String>,
    pub kind: CallKind,
    /// Pointer, fd number, FILE*, … (always hex in the text).
    pub id: u64,
}

impl Call {
    pub fn size(&self) -> i64 {
        match self.kind {
            CallKind::Alloc { size } => size,
            CallKind::Free => 0,
        }
    }

    pub fn is_alloc(&self) -> bool {
        matches!(self.kind, CallKind::Alloc { .. })
    }

    /// Writes the call line; `show_type` decides whether `<type>` appears.
    pub fn write<W: Write + ?Sized>(&self, out: &mut W, show_type: bool) -> io::Result<()> {
        let mut line = String::with_capacity(64);
        let _ = write!(line, "{}. ", self.index);
        if self.context != 0 {
            let _ = write!(line, "@{:x} ", self.context);
        }
        if let Some(ms) = self.timestamp {
            let _ = write!(
                line,
                "[{:02}:{:02}:{:02}.{:03}] ",
                ms / 3_600_000,
                ms / 60_000 % 60,
                ms / 1000 % 60,
                ms % 1000
            );
        }
        line.push_str(&self.name);
        if show_type {
            if let Some(t) = &self.resource_type {
                let _ = write!(line, "<{t}>");
            }
        }
        match self.kind {
            CallKind::Alloc { size } => {
                let _ = writeln!(line, "({size}) = 0x{:x}", self.id);
            }
            CallKind::Free => {
                let _ = writeln!(line, "(0x{:x})", self.id);
            }
        }
        out.write_all(line.as_bytes())
    }
}

/// A backtrace frame: `\t0x<addr>` plus opaque resolved text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub addr: u64,
    /// Everything after the address and one space, if anything.
    pub text: Option<String>,
}

impl Frame {
    pub fn write<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match &self.text {
            Some(t) => writeln!(out, "\t0x{:x} {t}", self.addr),
            None => writeln!(out, "\t0x{:x}", self.addr),
        }
    }
}

/// A function argument: `\t$name = value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub value: String,
}

/// An executable mapping: `: path => 0xstart-0xend`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryMap {
    pub path: String,
    pub start: u64,
    pub end: u64,
}

/// Context registry: `@ id : name` (id is a single bit, hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextDef {
    pub id: u32,
    pub name: String,
}

/// Resource registry: `<id> : type (description) [flags]` (id is a bit
/// mask, hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    pub id: u32,
    pub name: String,
    pub description: String,
    pub flags: Option<String>,
}

impl ResourceDef {
    pub fn is_refcount(&self) -> bool {
        self.flags
            .as_deref()
            .is_some_and(|f| f.split([' ', ',', '|']).any(|x| x == "refcount"))
    }
}

/// File attachment: `& name : path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub name: String,
    pub path: String,
}

/// One line of a text trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Header(Header),
    Call(Call),
    Arg(Arg),
    Frame(Frame),
    /// The blank line that ends a backtrace.
    EndBacktrace,
    Map(MemoryMap),
    Context(ContextDef),
    Resource(ResourceDef),
    Attachment(Attachment),
    /// A permanent comment (`##…` or any unrecognised line), verbatim.
    Comment(String),
    /// A temporary comment (`# …`), dropped by post-processing.
    TempComment(String),
}

impl Record {
    /// Classifies one line (without its `\n`) that is not the header.
    pub fn parse(line: &str) -> Record {
        if line.is_empty() {
            return Record::EndBacktrace;
        }
        if line.starts_with("# ") {
            return Record::TempComment(line.to_string());
        }
        if let Some(f) = parse_frame(line) {
            return Record::Frame(f);
        }
        if let Some(c) = parse_call(line) {
            return Record::Call(c);
        }
        if let Some(a) = parse_arg(line) {
            return Record::Arg(a);
        }
        if let Some(m) = parse_map(line) {
            return Record::Map(m);
        }
        if let Some(c) = parse_context(line) {
            return Record::Context(c);
        }
        if let Some(r) = parse_resource(line) {
            return Record::Resource(r);
        }
        if let Some(a) = parse_attachment(line) {
            return Record::Attachment(a);
        }
        Record::Comment(line.to_string())
    }

    /// Writes the record as one line (calls with their `<type>` tag as read).
    pub fn write<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match self {
            Record::Header(h) => h.write(out),
            Record::Call(c) => c.write(out, true),
            Record::Arg(a) => writeln!(out, "\t${} = {}", a.name, a.value),
            Record::Frame(f) => f.write(out),
            Record::EndBacktrace => out.write_all(b"\n"),
            Record::Map(m) => writeln!(out, ": {} => 0x{:x}-0x{:x}", m.path, m.start, m.end),
            Record::Context(c) => writeln!(out, "@ {:x} : {}", c.id, c.name),
            Record::Resource(r) => write_resource(out, r, r.id),
            Record::Attachment(a) => writeln!(out, "& {} : {}", a.name, a.path),
            Record::Comment(t) | Record::TempComment(t) => writeln!(out, "{t}"),
        }
    }
}

/// Writes a resource registry line with the id given (the post-processor
/// renumbers a lone resource type to 1).
pub fn write_resource<W: Write + ?Sized>(out: &mut W, r: &ResourceDef, id: u32) -> io::Result<()> {
    match &r.flags {
        Some(fl) => writeln!(out, "<{:x}> : {} ({}) [{}]", id, r.name, r.description, fl),
        None => writeln!(out, "<{:x}> : {} ({})", id, r.name, r.description),
    }
}

fn parse_hex(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// `0x<hex>` exactly.
fn parse_0x(s: &str) -> Option<u64> {
    parse_hex(s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?)
}

fn parse_frame(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix("\t0x")?;
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(rest.len());
    let addr = parse_hex(&rest[..end])?;
    let tail = &rest[end..];
    let text = if tail.is_empty() {
        None
    } else {
        // The reference reads `\t0x%lx` then the rest after one separator.
        Some(tail.strip_prefix(' ').unwrap_or(tail).to_string())
    };
    Some(Frame { addr, text })
}

/// `[h:m:s.ms]` → milliseconds.
fn parse_timestamp(s: &str) -> Option<u32> {
    let (hms, frac) = s.rsplit_once('.')?;
    let mut parts = hms.split(':');
    let h: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let sec: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let ms: u32 = frac.parse().ok()?;
    h.checked_mul(3_600_000)?
        .checked_add(m.checked_mul(60_000)?)?
        .checked_add(sec.checked_mul(1000)?)?
        .checked_add(ms)
}

fn parse_call(line: &str) -> Option<Call> {
    if !line.as_bytes().first()?.is_ascii_digit() {
        return None;
    }
    let dot = line.find('.')?;
    let digits = &line[..dot];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let index: i64 = digits.parse().ok()?;
    // The reference skips to the first space after the dot.
    let mut rest = &line[dot + 1..];
    let sp = rest.find(' ')?;
    rest = &rest[sp + 1..];
    let mut context = 0;
    if let Some(r) = rest.strip_prefix('@') {
        let end = r.find(' ')?;
        context = u32::from_str_radix(&r[..end], 16).ok()?;
        rest = &r[end + 1..];
    }
    let mut timestamp = None;
    if let Some(r) = rest.strip_prefix('[') {
        let end = r.find(']')?;
        timestamp = Some(parse_timestamp(&r[..end])?);
        rest = r[end + 1..].strip_prefix(' ')?;
    }
    // Allocation: `(<decimal>) = 0x<hex>`; else free: `(0x<hex>)`.
    let (kind, id, head) = if let Some(eq) = memchr::memmem::rfind(rest.as_bytes(), b") = ") {
        let id = parse_0x(&rest[eq + 4..])?;
        let open = rest[..eq].rfind('(')?;
        let size_text = &rest[open + 1..eq];
        let digits = size_text.strip_prefix('-').unwrap_or(size_text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let size: i64 = size_text.parse().ok()?;
        (CallKind::Alloc { size }, id, &rest[..open])
    } else {
        let body = rest.strip_suffix(')')?;
        let open = body.rfind('(')?;
        let id = parse_0x(&body[open + 1..])?;
        (CallKind::Free, id, &rest[..open])
    };
    let (name, resource_type) = match head.strip_suffix('>') {
        Some(h) => match h.rfind('<') {
            Some(lt) => (&h[..lt], Some(h[lt + 1..].to_string())),
            None => (head, None),
        },
        None => (head, None),
    };
    if name.is_empty() {
        return None;
    }
    Some(Call {
        index,
        context,
        timestamp,
        name: name.to_string(),
        resource_type,
        kind,
        id,
    })
}

fn parse_arg(line: &str) -> Option<Arg> {
    let rest = line.strip_prefix("\t$")?;
    let (name, value) = rest.split_once(" = ")?;
    if name.is_empty() {
        return None;
    }
    Some(Arg {
        name: name.to_string(),
        value: value.to_string(),
    })
}

fn parse_map(line: &str) -> Option<MemoryMap> {
    let rest = line.strip_prefix(": ")?;
    let (path, range) = rest.rsplit_once(" => ")?;
    let (a, b) = range.split_once('-')?;
    Some(MemoryMap {
        path: path.to_string(),
        start: parse_0x(a)?,
        end: parse_0x(b)?,
    })
}

fn parse_context(line: &str) -> Option<ContextDef> {
    let rest = line.strip_prefix("@ ")?;
    let (id, name) = rest.split_once(" : ")?;
    Some(ContextDef {
        id: u32::from_str_radix(id, 16).ok()?,
        name: name.to_string(),
    })
}

fn parse_resource(line: &str) -> Option<ResourceDef> {
    let rest = line.strip_prefix('<')?;
    let (id, rest) = rest.split_once("> : ")?;
    let id = u32::from_str_radix(id, 16).ok()?;
    let (name, rest) = rest.split_once(" (")?;
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let close = rest.find(')')?;
    let description = &rest[..close];
    let tail = &rest[close + 1..];
    let flags = if tail.is_empty() {
        None
    } else {
        Some(tail.strip_prefix(" [")?.strip_suffix(']')?.to_string())
    };
    Some(ResourceDef {
        id,
        name: name.to_string(),
        description: description.to_string(),
        flags,
    })
}

fn parse_attachment(line: &str) -> Option<Attachment> {
    let rest = line.strip_prefix("& ")?;
    let (name, path) = rest.split_once(" : ")?;
    Some(Attachment {
        name: name.to_string(),
        path: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(line: &str) -> Record {
        let r = Record::parse(line);
        let mut out = Vec::new();
        r.write(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("{line}\n"));
        r
    }

    #[test]
    fn calls() {
        let r = roundtrip("2. @2 [14:54:27.465] malloc(1002) = 0x84cd7d0");
        let Record::Call(c) = r else { panic!() };
        assert_eq!(c.context, 2);
        assert_eq!(c.timestamp, Some(14 * 3_600_000 + 54 * 60_000 + 27_465));
        assert_eq!(c.kind, CallKind::Alloc { size: 1002 });
        let Record::Call(c) = roundtrip("7. [14:54:26.320] shmdt<segment>(0x1088018)") else {
            panic!()
        };
        assert_eq!(c.resource_type.as_deref(), Some("segment"));
        assert_eq!(c.kind, CallKind::Free);
        let Record::Call(c) = roundtrip("0. QObject::QObject(16) = 0x1") else {
            panic!()
        };
        assert_eq!(c.name, "QObject::QObject");
        // A decimal in parentheses without `= 0x…` is not a call.
        assert!(matches!(Record::parse("3. foo(12)"), Record::Comment(_)));
    }

    #[test]
    fn other_lines() {
        assert!(matches!(
            roundtrip("\t0x8048526 zero() from /bin/x"),
            Record::Frame(Frame {
                addr: 0x8048526,
                text: Some(_)
            })
        ));
        assert!(matches!(roundtrip("\t$shmid = 0x1088018"), Record::Arg(_)));
        assert!(matches!(
            roundtrip(": [vdso] => 0x7fff0d7ff000-0x7fff0d800000"),
            Record::Map(_)
        ));
        assert!(matches!(
            roundtrip("@ 1 : first context"),
            Record::Context(_)
        ));
        let Record::Resource(r) = roundtrip("<1> : segment (shared memory segment) [refcount]")
        else {
            panic!()
        };
        assert!(r.is_refcount());
        assert!(matches!(
            roundtrip("& maps : 123-maps"),
            Record::Attachment(_)
        ));
        assert!(matches!(roundtrip("## heap"), Record::Comment(_)));
        assert!(matches!(roundtrip("# summary"), Record::TempComment(_)));
    }

    #[test]
    fn header() {
        let line =
            "version=1.0, arch=x86_64-linux-gnu, time=2010.8.24 18:40:31, process=, pid=31323, ";
        let h = Header::parse(line.trim_end_matches('\n')).unwrap();
        assert_eq!(h.timestamp(), Some("2010.8.24 18:40:31"));
        assert_eq!(h.get("process"), Some(""));
        let mut out = Vec::new();
        h.write(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("{line}\n"));
    }
}
