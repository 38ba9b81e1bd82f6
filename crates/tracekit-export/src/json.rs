//! Minimal JSON string encoding for writers that stream by hand.

use std::io::{self, Write};

/// Writes `s` as a JSON string literal. Bytes that are not UTF-8 are
/// replaced (U+FFFD) so the output is always valid JSON.
pub fn write_str<W: Write + ?Sized>(out: &mut W, s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    match std::str::from_utf8(s) {
        Ok(text) => write_escaped(out, text)?,
        Err(_) => write_escaped(out, &String::from_utf8_lossy(s))?,
    }
    out.write_all(b"\"")
}

fn write_escaped<W: Write + ?Sized>(out: &mut W, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.write_all(&bytes[start..i])?;
                write!(out, "\\u{b:04x}")?;
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.write_all(&bytes[start..i])?;
        out.write_all(esc)?;
        start = i + 1;
    }
    out.write_all(&bytes[start..])
}

/// Writes a finite float the shortest way that reads back exactly; NaN and
/// infinities (not JSON) become 0.
pub fn write_f64<W: Write + ?Sized>(out: &mut W, v: f64) -> io::Result<()> {
    if v.is_finite() {
        let mut buf = ryu::Buffer::new();
        out.write_all(buf.format(v).as_bytes())
    } else {
        out.write_all(b"0")
    }
}

pub fn write_i64<W: Write + ?Sized>(out: &mut W, v: i64) -> io::Result<()> {
    let mut buf = itoa::Buffer::new();
    out.write_all(buf.format(v).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_and_quotes() {
        let mut v = Vec::new();
        write_str(&mut v, b"a\"b\\c\nd\x01\xff").unwrap();
        let s = String::from_utf8(v).unwrap();
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001\u{fffd}\"");
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\nd\u{1}\u{fffd}");
    }
}
