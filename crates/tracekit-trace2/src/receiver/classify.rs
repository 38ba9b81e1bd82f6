//! Classifying a line: which format it is and which session (SID) it belongs to, without a full parse.

use std::borrow::Cow;

/// The three Trace2 output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Event,
    Perf,
    Normal,
}

impl Format {
    /// The subdirectory of the output directory holding this format.
    pub fn dir_name(self) -> &'static str {
        match self {
            Format::Event => "event",
            Format::Perf => "perf",
            Format::Normal => "normal",
        }
    }

    pub(super) fn index(self) -> usize {
        match self {
            Format::Event => 0,
            Format::Perf => 1,
            Format::Normal => 2,
        }
    }
}

/// Tells the format of a Trace2 line (complete or a prefix of one).
///
/// EVENT lines are JSON objects. PERF lines have `" | "` right before the
/// `d<depth>` column (byte 44 in the normal layout) or start with
/// `d<depth> | ` (brief). Everything else is NORMAL. The first line of every
/// git process is `version`, so this is unambiguous on a connection's first
/// line; a first line cut short before byte 47 is PERF if it holds a `" | "`.
pub fn detect_format(line: &[u8]) -> Format {
    if line.first() == Some(&b'{') {
        return Format::Event;
    }
    if is_brief_perf(line) || is_timed_perf(line) {
        return Format::Perf;
    }
    Format::Normal
}

fn is_brief_perf(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"d") else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && rest[digits..].starts_with(b" | ")
}

fn is_timed_perf(line: &[u8]) -> bool {
    // `HH:MM:SS.uuuuuu ` then the 28-column file:line field and ` | d`.
    const TIME: &[u8] = b"00:00:00.000000 ";
    if line.len() < TIME.len() {
        return false;
    }
    let time_like = line[..TIME.len()].iter().zip(TIME).all(|(&b, &t)| {
        if t == b'0' {
            b.is_ascii_digit()
        } else {
            b == t
        }
    });
    if !time_like {
        return false;
    }
    if line.len() >= 48 {
        &line[44..48] == b" | d"
    } else {
        memchr::memmem::find(&line[TIME.len()..], b" | ").is_some()
    }
}

/// The decoded value of the top-level `"sid"` key of an EVENT line, or
/// `None` if the line is not an object with a complete string `sid`.
///
/// A small tolerant scanner: it walks the top-level keys (skipping values
/// of any JSON type, with escapes), accepts whitespace, decodes the
/// string's escapes (`\uXXXX` included; invalid ones become U+FFFD) and
/// keeps bytes >= 0x80 raw, as git writes them. The rest of the line is
/// never validated.
pub fn scan_sid(line: &[u8]) -> Option<Cow<'_, [u8]>> {
    let mut at = skip_ws(line, 0);
    if line.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(line, at);
        if line.get(at) != Some(&b'"') {
            return None;
        }
        let (key, after_key) = decode_string(line, at)?;
        at = skip_ws(line, after_key);
        if line.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(line, at + 1);
        if *key == b"sid"[..] {
            if line.get(at) != Some(&b'"') {
                return None;
            }
            return decode_string(line, at).map(|(value, _)| value);
        }
        at = skip_value(line, at)?;
        at = skip_ws(line, at);
        match line.get(at) {
            Some(b',') => at += 1,
            _ => return None,
        }
    }
}

fn skip_ws(s: &[u8], mut at: usize) -> usize {
    while matches!(s.get(at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        at += 1;
    }
    at
}

/// Decodes the JSON string starting at the `"` at `at`; returns the bytes
/// (borrowed from `s` when the string has no escape, as git's SIDs and
/// keys never do) and the index after the closing quote.
fn decode_string(s: &[u8], at: usize) -> Option<(Cow<'_, [u8]>, usize)> {
    let start = at + 1;
    let first = memchr::memchr2(b'"', b'\\', s.get(start..)?)?;
    if s[start + first] == b'"' {
        return Some((Cow::Borrowed(&s[start..start + first]), start + first + 1));
    }
    let mut out = Vec::new();
    let mut i = start;
    loop {
        let run = memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
        out.extend_from_slice(&s[i..i + run]);
        i += run;
        if s[i] == b'"' {
            return Some((Cow::Owned(out), i + 1));
        }
        let escape = *s.get(i + 1)?;
        i += 2;
        match escape {
            b'"' | b'\\' | b'/' => out.push(escape),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => {
                let unit = hex4(s, i)?;
                i += 4;
                let mut code = Some(u32::from(unit));
                if (0xd800..0xdc00).contains(&unit) && s.get(i..i + 2) == Some(b"\\u") {
                    if let Some(low @ 0xdc00..=0xdfff) = hex4(s, i + 2) {
                        i += 6;
                        code = Some(
                            0x10000
                                + ((u32::from(unit) - 0xd800) << 10)
                                + (u32::from(low) - 0xdc00),
                        );
                    }
                }
                let ch = code.and_then(char::from_u32).unwrap_or('\u{fffd}');
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());
            }
            other => {
                // Not a JSON escape: keep it as written.
                out.push(b'\\');
                out.push(other);
            }
        }
    }
}

fn hex4(s: &[u8], at: usize) -> Option<u16> {
    let digits = s.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok()
}

/// Skips one JSON value of any type starting at `at`.
fn skip_value(s: &[u8], at: usize) -> Option<usize> {
    match s.get(at)? {
        b'"' => skip_string(s, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match s.get(i)? {
                    b'"' => {
                        i = skip_string(s, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            // Number, true, false, null: up to the next delimiter.
            let len = s[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
            (len > 0).then_some(at + len)
        }
    }
}

fn skip_string(s: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
        if s[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}
