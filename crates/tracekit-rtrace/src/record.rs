//! The records of the sp-rtrace text protocol, one per line, and how each
//! is recognised and written back.
//!
//! Classification follows the order of the reference parser (spec §1):
//! frame, call, argument, memory map, context, resource, attachment,
//! comment. Anything unrecognised is a comment, as in the reference; the
//! reader counts comments that do not start with `#` as warnings.

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
    /// Function name: inline up to 24 bytes (no allocation per call line).
    pub name: compact_str::CompactString,
    /// The resource type *name* in `<…>`, present when the trace has more
    /// than one resource type.
    pub resource_type: Option<String>,
    pub kind: CallKind,
    /// Pointer, fd number, FILE*, … (always hex in the text).
    pub id: u64,
    /// `id` is not an address but the allocation's event number (with
    /// bit 63 set): a heap block a `.tkmem` file names by number
    /// (`recording::packed::NOT_KEPT`). Never so in a text trace.
    pub by_number: bool,
}

impl Call {
    /// The block's address or the handle's value; `None` for a block
    /// named by number.
    pub fn address(&self) -> Option<u64> {
        (!self.by_number).then_some(self.id)
    }

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
        // One line buffer per thread: no allocation per call line.
        thread_local!(static LINE: std::cell::RefCell<Vec<u8>> = const {
            std::cell::RefCell::new(Vec::new())
        });
        let tag = if show_type {
            self.resource_type.as_deref()
        } else {
            None
        };
        LINE.with(|l| {
            let mut line = l.borrow_mut();
            line.clear();
            format_call(
                &mut line,
                self.index,
                self.context,
                self.timestamp,
                &self.name,
                tag,
                self.kind,
                self.id,
            );
            out.write_all(&line)
        })
    }
}

/// Appends a call line (`N. [@ctx ][[hh:mm:ss.mmm] ]name[<type>](args)`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn format_call(
    line: &mut Vec<u8>,
    index: i64,
    context: u32,
    timestamp: Option<u32>,
    name: &str,
    tag: Option<&str>,
    kind: CallKind,
    id: u64,
) {
    push_dec(line, index);
    line.extend_from_slice(b". ");
    if context != 0 {
        line.push(b'@');
        push_hex(line, u64::from(context));
        line.push(b' ');
    }
    if let Some(ms) = timestamp {
        let two = |l: &mut Vec<u8>, v: u32| {
            if v < 10 {
                l.push(b'0');
            }
            push_dec(l, i64::from(v));
        };
        line.push(b'[');
        two(line, ms / 3_600_000);
        line.push(b':');
        two(line, ms / 60_000 % 60);
        line.push(b':');
        two(line, ms / 1000 % 60);
        line.push(b'.');
        let frac = ms % 1000;
        if frac < 100 {
            line.push(b'0');
        }
        if frac < 10 {
            line.push(b'0');
        }
        push_dec(line, i64::from(frac));
        line.extend_from_slice(b"] ");
    }
    line.extend_from_slice(name.as_bytes());
    if let Some(t) = tag {
        line.push(b'<');
        line.extend_from_slice(t.as_bytes());
        line.push(b'>');
    }
    line.push(b'(');
    match kind {
        CallKind::Alloc { size } => {
            push_dec(line, size);
            line.extend_from_slice(b") = 0x");
            push_hex(line, id);
        }
        CallKind::Free => {
            line.extend_from_slice(b"0x");
            push_hex(line, id);
            line.push(b')');
        }
    }
    line.push(b'\n');
}

/// Appends a bare frame line `\t0x<addr>\n`.
pub(crate) fn format_frame(line: &mut Vec<u8>, addr: u64) {
    let mut buf = [0u8; 20];
    let n = frame_line(&mut buf, addr, b'\n');
    // One fixed-size copy instead of extend_from_slice's variable-length
    // memcpy: 10% fewer instructions here, 2.4% of decoding a recording
    // (callgrind).
    line.reserve(buf.len());
    let len = line.len();
    // SAFETY: `reserve` made room for 20 more bytes; all 20 are copied,
    // the first n <= 20 of them are kept.
    unsafe {
        std::ptr::copy_nonoverlapping(buf.as_ptr(), line.as_mut_ptr().add(len), buf.len());
        line.set_len(len + n);
    }
}

/// Writes a frame line's start, `\t0x<addr>` and then `end`, into `buf`
/// (frames are most of a trace's lines: no formatting machinery);
/// returns its length.
#[inline(always)]
fn frame_line(buf: &mut [u8; 20], addr: u64, end: u8) -> usize {
    buf[..3].copy_from_slice(b"\t0x");
    let n = write_hex(&mut buf[3..19], addr);
    buf[3 + n] = end;
    4 + n
}

fn push_dec(out: &mut Vec<u8>, v: i64) {
    let mut buf = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_hex(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 16];
    let n = write_hex(&mut buf, v);
    out.extend_from_slice(&buf[..n]);
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
        let mut buf = [0u8; 20];
        match &self.text {
            Some(t) => {
                let n = frame_line(&mut buf, self.addr, b' ');
                out.write_all(&buf[..n])?;
                out.write_all(t.as_bytes())?;
                out.write_all(b"\n")
            }
            None => {
                let n = frame_line(&mut buf, self.addr, b'\n');
                out.write_all(&buf[..n])
            }
        }
    }
}

/// Lower-case hex without leading zeros (`%lx`); returns the length.
fn write_hex(out: &mut [u8], v: u64) -> usize {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let len = if v == 0 {
        1
    } else {
        (64 - v.leading_zeros() as usize).div_ceil(4)
    };
    for i in 0..len {
        out[len - 1 - i] = DIGITS[((v >> (4 * i)) & 0xf) as usize];
    }
    len
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

/// Decimal digits only, no sign, no overflow.
fn parse_dec(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut v = 0u64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
    }
    Some(v)
}

/// `h:m:s.ms` → milliseconds, byte by byte (this is on the hot path).
fn parse_timestamp_bytes(b: &[u8]) -> Option<u32> {
    let mut parts = [0u64; 4];
    let mut i = 0;
    let mut start = 0;
    for (pos, &c) in b.iter().enumerate() {
        let sep = match i {
            0 | 1 => b':',
            2 => b'.',
            _ => 0,
        };
        if sep != 0 && c == sep {
            parts[i] = parse_dec(&b[start..pos])?;
            i += 1;
            start = pos + 1;
        }
    }
    if i != 3 {
        return None;
    }
    parts[3] = parse_dec(&b[start..])?;
    let ms = parts[0]
        .checked_mul(3_600_000)?
        .checked_add(parts[1].checked_mul(60_000)?)?
        .checked_add(parts[2].checked_mul(1000)?)?
        .checked_add(parts[3])?;
    u32::try_from(ms).ok()
}

fn parse_call(line: &str) -> Option<Call> {
    let b = line.as_bytes();
    if !b.first()?.is_ascii_digit() {
        return None;
    }
    let dot = memchr::memchr(b'.', b)?;
    let index = i64::try_from(parse_dec(&b[..dot])?).ok()?;
    // The reference skips to the first space after the dot.
    let sp = dot + 1 + memchr::memchr(b' ', &b[dot + 1..])?;
    let mut pos = sp + 1;
    let mut context = 0;
    if b.get(pos) == Some(&b'@') {
        let end = pos + 1 + memchr::memchr(b' ', &b[pos + 1..])?;
        context = u32::from_str_radix(&line[pos + 1..end], 16).ok()?;
        pos = end + 1;
    }
    let mut timestamp = None;
    if b.get(pos) == Some(&b'[') {
        let end = pos + 1 + memchr::memchr(b']', &b[pos + 1..])?;
        timestamp = Some(parse_timestamp_bytes(&b[pos + 1..end])?);
        if b.get(end + 1) != Some(&b' ') {
            return None;
        }
        pos = end + 2;
    }
    let rest = &line[pos..];
    let rb = rest.as_bytes();
    // Allocation: `(<decimal>) = 0x<hex>`; else free: `(0x<hex>)`.
    let (kind, id, head) = if rb.last() == Some(&b')') {
        let body = &rest[..rest.len() - 1];
        let open = memchr::memrchr(b'(', body.as_bytes())?;
        let id = parse_0x(&body[open + 1..])?;
        (CallKind::Free, id, &rest[..open])
    } else {
        let eq = memchr::memmem::rfind(rb, b") = ")?;
        let id = parse_0x(&rest[eq + 4..])?;
        let open = memchr::memrchr(b'(', &rb[..eq])?;
        let size_text = &rb[open + 1..eq];
        let size = match size_text.strip_prefix(b"-") {
            Some(d) => -i64::try_from(parse_dec(d)?).ok()?,
            None => i64::try_from(parse_dec(size_text)?).ok()?,
        };
        (CallKind::Alloc { size }, id, &rest[..open])
    };
    let (name, resource_type) = match head.strip_suffix('>') {
        Some(h) => match memchr::memrchr(b'<', h.as_bytes()) {
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
        name: compact_str::CompactString::new(name),
        resource_type,
        kind,
        id,
        by_number: false,
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
    fn call_lines_are_formatted_exactly() {
        let line = |index, context, ts, name, tag, kind, id| {
            let mut out = Vec::new();
            format_call(&mut out, index, context, ts, name, tag, kind, id);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            line(0, 0, None, "malloc", None, CallKind::Alloc { size: 0 }, 0),
            "0. malloc(0) = 0x0\n"
        );
        assert_eq!(
            line(
                -5,
                2,
                Some(5 * 3_600_000 + 7),
                "free",
                Some("memory"),
                CallKind::Free,
                0xabc
            ),
            "-5. @2 [05:00:00.007] free<memory>(0xabc)\n"
        );
        assert_eq!(
            line(
                i64::MAX,
                0x8000_0000,
                Some(86_399_999),
                "QObject::QObject",
                None,
                CallKind::Alloc { size: i64::MIN },
                u64::MAX
            ),
            "9223372036854775807. @80000000 [23:59:59.999] QObject::QObject(-9223372036854775808) = 0xffffffffffffffff\n"
        );
        let long_name = "n".repeat(200);
        assert_eq!(
            line(1, 0, None, &long_name, None, CallKind::Free, 1),
            format!("1. {long_name}(0x1)\n")
        );
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
