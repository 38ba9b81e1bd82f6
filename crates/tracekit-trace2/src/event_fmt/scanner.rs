//! A byte scanner for git's JSON: strings kept as bytes (git writes bytes >= 0x80 raw), numbers kept as written.

use super::*;

/// Deepest JSON nesting accepted inside a value (`data_json`); deeper input
/// is refused instead of exhausting memory.
pub(super) const MAX_DEPTH: usize = 512;

pub(super) struct Scanner<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
}

pub(super) enum Value<'a> {
    Str(Text<'a>),
    /// A number, `true`, `false`, `null`, or a nested object/array: the raw
    /// bytes.
    Raw(&'a [u8]),
    Strings(Vec<Text<'a>>),
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    #[inline(always)]
    pub(super) fn expect(&mut self, c: u8) -> Result<(), ParseError> {
        // git writes no whitespace: try the byte itself first.
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            return Ok(());
        }
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.expected(c))
        }
    }

    #[cold]
    pub(super) fn expected(&self, c: u8) -> ParseError {
        self.unexpected(&format!("expected '{}'", c as char))
    }

    pub(super) fn unexpected(&self, what: &str) -> ParseError {
        match self.s.get(self.i) {
            None => ParseError::new(
                self.i,
                format!("{what}, found end of line (record cut short?)"),
            ),
            Some(c) if c.is_ascii_graphic() => {
                ParseError::new(self.i, format!("{what}, found '{}'", *c as char))
            }
            Some(c) => ParseError::new(self.i, format!("{what}, found byte 0x{c:02x}")),
        }
    }

    /// Parses an object key: short and, from git, never escaped.
    #[inline(always)]
    pub(super) fn key(&mut self) -> Result<Text<'a>, ParseError> {
        if self.s.get(self.i) == Some(&b'"') {
            let start = self.i + 1;
            let s = self.s;
            let mut i = start;
            while i < s.len() && i - start < 24 {
                match s[i] {
                    b'"' => {
                        self.i = i + 1;
                        return Ok(Cow::Borrowed(&s[start..i]));
                    }
                    b'\\' => break,
                    c if c < 0x20 => break,
                    _ => i += 1,
                }
            }
        }
        self.string()
    }

    /// Parses a string starting at the opening quote.
    #[inline]
    pub(super) fn string(&mut self) -> Result<Text<'a>, ParseError> {
        self.expect(b'"')?;
        let start = self.i;
        let s = self.s;
        let mut i = start;
        // Eight bytes at a time while none is special ('"', '\\', < 0x20).
        while let Some(chunk) = s.get(i..i + 8) {
            let x = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
            if has_special(x) {
                break;
            }
            i += 8;
        }
        while i < s.len() {
            let c = s[i];
            if c == b'"' {
                self.i = i + 1;
                return Ok(Cow::Borrowed(&s[start..i]));
            }
            if c == b'\\' {
                return self.string_escaped(start);
            }
            if c < 0x20 {
                return Err(ParseError::new(i, "control character inside a string"));
            }
            i += 1;
            if i.is_multiple_of(8) {
                while let Some(chunk) = s.get(i..i + 8) {
                    let x = u64::from_le_bytes([
                        chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6],
                        chunk[7],
                    ]);
                    if has_special(x) {
                        break;
                    }
                    i += 8;
                }
            }
        }
        Err(ParseError::new(
            start.saturating_sub(1),
            "unterminated string",
        ))
    }

    pub(super) fn string_escaped(&mut self, start: usize) -> Result<Text<'a>, ParseError> {
        let mut out = Vec::with_capacity(64);
        let mut i = start;
        loop {
            let Some(n) = memchr::memchr2(b'"', b'\\', &self.s[i..]) else {
                return Err(ParseError::new(
                    start.saturating_sub(1),
                    "unterminated string",
                ));
            };
            let chunk = &self.s[i..i + n];
            if let Some(p) = chunk.iter().position(|&c| c < 0x20) {
                return Err(ParseError::new(i + p, "control character inside a string"));
            }
            out.extend_from_slice(chunk);
            i += n;
            if self.s[i] == b'"' {
                self.i = i + 1;
                return Ok(Cow::Owned(out));
            }
            let esc = *self
                .s
                .get(i + 1)
                .ok_or_else(|| ParseError::new(i, "unterminated escape"))?;
            i += 2;
            match esc {
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                b'/' => out.push(b'/'),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'u' => {
                    let hi =
                        hex4(self.s, i).ok_or_else(|| ParseError::new(i - 2, "bad \\u escape"))?;
                    i += 4;
                    let cp =
                        if (0xD800..0xDC00).contains(&hi) && self.s.get(i..i + 2) == Some(b"\\u") {
                            match hex4(self.s, i + 2) {
                                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                    i += 6;
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                }
                                _ => 0xFFFD,
                            }
                        } else if (0xD800..0xE000).contains(&hi) {
                            0xFFFD
                        } else {
                            hi
                        };
                    let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => {
                    return Err(ParseError::new(
                        i - 2,
                        format!("unknown escape '\\{}'", esc as char),
                    ))
                }
            }
        }
    }

    /// Skips any value and returns its raw bytes (iterative: deep nesting
    /// cannot overflow the stack).
    pub(super) fn raw_value(&mut self) -> Result<&'a [u8], ParseError> {
        self.ws();
        let start = self.i;
        // The closers of the containers we are in.
        let mut stack: Vec<u8> = Vec::new();
        loop {
            // A value is expected here.
            self.ws();
            match self.s.get(self.i) {
                Some(b'"') => {
                    self.string()?;
                }
                Some(&c @ (b'{' | b'[')) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(ParseError::new(
                            self.i,
                            format!("JSON nested deeper than {MAX_DEPTH} levels"),
                        ));
                    }
                    let close = if c == b'{' { b'}' } else { b']' };
                    stack.push(close);
                    self.i += 1;
                    self.ws();
                    if self.s.get(self.i) == Some(&close) {
                        self.i += 1;
                        stack.pop();
                    } else {
                        if c == b'{' {
                            self.string()?;
                            self.expect(b':')?;
                        }
                        continue;
                    }
                }
                Some(b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
                    let b = self.i;
                    while let Some(c) = self.s.get(self.i) {
                        if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.') {
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                    let tok = &self.s[b..self.i];
                    let ok = matches!(tok, b"true" | b"false" | b"null")
                        || tok[0] == b'-'
                        || tok[0].is_ascii_digit();
                    if !ok {
                        return Err(ParseError::new(b, "invalid literal"));
                    }
                }
                _ => return Err(self.unexpected("expected a value")),
            }
            // A value is complete: close containers or go on after a comma.
            loop {
                let Some(&close) = stack.last() else {
                    return Ok(&self.s[start..self.i]);
                };
                self.ws();
                match self.s.get(self.i) {
                    Some(b',') => {
                        self.i += 1;
                        if close == b'}' {
                            self.ws();
                            self.string()?;
                            self.expect(b':')?;
                        }
                        break;
                    }
                    Some(c) if *c == close => {
                        self.i += 1;
                        stack.pop();
                    }
                    _ => {
                        return Err(self.unexpected(&format!("expected ',' or '{}'", close as char)))
                    }
                }
            }
        }
    }

    pub(super) fn value(&mut self, want_strings: bool) -> Result<Value<'a>, ParseError> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'[') if want_strings => {
                let save = self.i;
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Strings(items));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        // Not an array of strings: keep it raw.
                        self.i = save;
                        return Ok(Value::Raw(self.raw_value()?));
                    }
                    items.push(self.string()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Strings(items));
                        }
                        _ => return Err(self.unexpected("expected ',' or ']'")),
                    }
                }
            }
            _ => Ok(Value::Raw(self.raw_value()?)),
        }
    }
}

/// Does any byte of `x` end or escape a JSON string (`"`, `\\`, or a
/// control byte)? May err towards true (then the byte loop decides), never
/// towards false.
#[inline(always)]
pub(super) fn has_special(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero_byte(x ^ (ONES * b'"' as u64));
    let backslash = zero_byte(x ^ (ONES * b'\\' as u64));
    let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    (quote | backslash | control) != 0
}

pub(super) fn hex4(s: &[u8], i: usize) -> Option<u32> {
    let h = s.get(i..i + 4)?;
    let mut v = 0u32;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Decodes one JSON string literal (quotes included), or `None` if `raw`
/// is not exactly one.
pub fn decode_json_string(raw: &[u8]) -> Option<Text<'_>> {
    let mut sc = Scanner { s: raw, i: 0 };
    let v = sc.string().ok()?;
    (sc.i == raw.len()).then_some(v)
}
