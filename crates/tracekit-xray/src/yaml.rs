//! `convert -output-format=yaml`: llvm-xray's YAML trace, byte for byte
//! (LLVM YAML I/O's quoting and escaping rules included).

use std::io::{self, Write};

use crate::header::FileHeader;
use crate::record::Record;

/// How LLVM's YAML writer quotes a scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Quoting {
    None,
    Single,
    Double,
}

fn is_numeric(s: &[u8]) -> bool {
    fn skip_digits(s: &[u8]) -> &[u8] {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        &s[n..]
    }
    if s.is_empty() || s == b"+" || s == b"-" {
        return false;
    }
    if matches!(s, b".nan" | b".NaN" | b".NAN") {
        return true;
    }
    let tail = if s[0] == b'-' || s[0] == b'+' {
        &s[1..]
    } else {
        s
    };
    if matches!(tail, b".inf" | b".Inf" | b".INF") {
        return true;
    }
    if let Some(r) = s.strip_prefix(b"0o") {
        return !r.is_empty() && r.iter().all(|c| (b'0'..=b'7').contains(c));
    }
    if let Some(r) = s.strip_prefix(b"0x") {
        return !r.is_empty() && r.iter().all(|c| c.is_ascii_hexdigit());
    }
    let mut s = tail;
    if s.first() == Some(&b'.') && (s.len() == 1 || !s[1].is_ascii_digit()) {
        return false;
    }
    if matches!(s.first(), Some(b'e' | b'E')) {
        return false;
    }
    s = skip_digits(s);
    if s.is_empty() {
        return true;
    }
    if s[0] == b'.' {
        s = skip_digits(&s[1..]);
        if s.is_empty() {
            return true;
        }
        if s[0] != b'e' && s[0] != b'E' {
            return false;
        }
        s = &s[1..];
    } else if s[0] == b'e' || s[0] == b'E' {
        s = &s[1..];
    } else {
        return false;
    }
    if s.is_empty() {
        return false;
    }
    if s[0] == b'+' || s[0] == b'-' {
        s = &s[1..];
        if s.is_empty() {
            return false;
        }
    }
    skip_digits(s).is_empty()
}

/// LLVM's `yaml::needsQuotes`.
pub fn needs_quotes(s: &[u8]) -> Quoting {
    if s.is_empty() {
        return Quoting::Single;
    }
    let mut q = Quoting::None;
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    if space(s[0]) || space(s[s.len() - 1]) {
        q = Quoting::Single;
    }
    if matches!(s, b"null" | b"Null" | b"NULL" | b"~") {
        q = Quoting::Single;
    }
    if matches!(
        s,
        b"true" | b"True" | b"TRUE" | b"false" | b"False" | b"FALSE"
    ) {
        q = Quoting::Single;
    }
    if is_numeric(s) {
        q = Quoting::Single;
    }
    if b"-?:\\,[]{}&#*!|>'\"%@`".contains(&s[0]) {
        q = Quoting::Single;
    }
    for &c in s {
        if c.is_ascii_alphanumeric() {
            continue;
        }
        match c {
            b'_' | b'-' | b'^' | b'.' | b',' | b' ' | 0x09 => continue,
            0x0a | 0x0d | 0x7f => return Quoting::Double,
            _ => {
                if c <= 0x1f || c & 0x80 != 0 {
                    return Quoting::Double;
                }
                q = Quoting::Single;
            }
        }
    }
    q
}

/// LLVM's `yaml::escape` for double-quoted scalars: stops at the first
/// invalid UTF-8 sequence after writing U+FFFD (as LLVM does).
pub fn escape(s: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            0 => out.extend_from_slice(b"\\0"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0b => out.extend_from_slice(b"\\v"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            0x1b => out.extend_from_slice(b"\\e"),
            c if c < 0x20 => {
                let _ = write!(out, "\\x{c:02X}");
            }
            c if c & 0x80 != 0 => {
                let len = utf8_len(&s[i..]);
                if len == 0 {
                    out.extend_from_slice("\u{FFFD}".as_bytes());
                    return;
                }
                let ch = std::str::from_utf8(&s[i..i + len])
                    .ok()
                    .and_then(|t| t.chars().next())
                    .unwrap_or('\u{FFFD}');
                match ch as u32 {
                    0x85 => out.extend_from_slice(b"\\N"),
                    0xA0 => out.extend_from_slice(b"\\_"),
                    0x2028 => out.extend_from_slice(b"\\L"),
                    0x2029 => out.extend_from_slice(b"\\P"),
                    _ => out.extend_from_slice(&s[i..i + len]),
                }
                i += len;
                continue;
            }
            c => out.push(c),
        }
        i += 1;
    }
}

/// Length of the valid UTF-8 sequence at the start of `s`, 0 if invalid.
fn utf8_len(s: &[u8]) -> usize {
    let want = match s[0] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return 0,
    };
    if s.len() < want {
        return 0;
    }
    match std::str::from_utf8(&s[..want]) {
        Ok(_) => want,
        Err(_) => 0,
    }
}

/// Writes a scalar with LLVM's quoting.
pub fn write_scalar(s: &[u8], out: &mut Vec<u8>) {
    match needs_quotes(s) {
        Quoting::None => out.extend_from_slice(s),
        Quoting::Single => {
            out.push(b'\'');
            for &c in s {
                if c == b'\'' {
                    out.extend_from_slice(b"''");
                } else {
                    out.push(c);
                }
            }
            out.push(b'\'');
        }
        Quoting::Double => {
            out.push(b'"');
            escape(s, out);
            out.push(b'"');
        }
    }
}

/// Streams llvm-xray's YAML: the header, then one flow mapping per record.
pub struct YamlWriter<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> YamlWriter<W> {
    pub fn new(mut out: W, h: &FileHeader) -> io::Result<Self> {
        write!(
            out,
            "---\nheader:\n  version:         {}\n  type:            {}\n  constant-tsc:    {}\n  nonstop-tsc:     {}\n  cycle-frequency: {}\nrecords:\n",
            h.version,
            h.type_code(),
            h.constant_tsc,
            h.nonstop_tsc,
            h.cycle_frequency
        )?;
        Ok(YamlWriter {
            out,
            line: Vec::with_capacity(256),
        })
    }

    /// Writes one record; `function` is the name to show (llvm-xray: the
    /// id as text, or the symbol with `-symbolize`).
    pub fn record(&mut self, r: &Record<'_>, function: &str) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        let _ = write!(
            l,
            "  - {{ type: {}, func-id: {}, function: ",
            r.record_type, r.func_id
        );
        write_scalar(function.as_bytes(), l);
        if !r.args.is_empty() {
            l.extend_from_slice(b", args: [ ");
            for (i, a) in r.args.iter().enumerate() {
                if i > 0 {
                    l.extend_from_slice(b", ");
                }
                let _ = write!(l, "{a}");
            }
            l.extend_from_slice(b" ]");
        }
        let _ = write!(l, ", cpu: {}", r.cpu);
        if r.tid != 0 {
            let _ = write!(l, ", thread: {}", r.tid);
        }
        if r.pid != 0 {
            let _ = write!(l, ", process: {}", r.pid);
        }
        let _ = write!(l, ", kind: {}, tsc: {}, data: ", r.kind.yaml_name(), r.tsc);
        write_scalar(&r.data, l);
        l.extend_from_slice(b" }\n");
        self.out.write_all(l)
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"...\n")?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> String {
        let mut v = Vec::new();
        write_scalar(s.as_bytes(), &mut v);
        String::from_utf8_lossy(&v).into_owned()
    }

    #[test]
    fn quoting_follows_llvm() {
        assert_eq!(q("step1"), "step1");
        assert_eq!(q("1"), "'1'");
        assert_eq!(q("plain(long)"), "'plain(long)'");
        assert_eq!(q(""), "''");
        assert_eq!(q("hello-event"), "hello-event");
        assert_eq!(q("custom-event #7 hello"), "'custom-event #7 hello'");
        assert_eq!(q("#3"), "'#3'");
        assert_eq!(q("it's"), "'it''s'");
    }
}
