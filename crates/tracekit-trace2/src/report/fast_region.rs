//! Fast path for EVENT `region_enter`/`region_leave` lines (94% of a large trace).

use super::*;

/// What the report needs of a `region_enter`/`region_leave` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegionLine<'a> {
    pub leave: bool,
    pub sid: &'a [u8],
    pub thread: &'a [u8],
    pub nesting: i64,
    pub category: Option<&'a [u8]>,
    pub label: Option<&'a [u8]>,
    pub t_rel: Micros,
}

/// A JSON string without escapes starting at `line[pos]` (after the
/// opening quote): its bytes and the position after the closing quote.
fn plain_string(line: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = line.get(pos..)?;
    let i = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[i] != b'"' || rest[..i].iter().any(|&c| c < 0x20) {
        return None;
    }
    Some((&rest[..i], pos + i + 1))
}

/// The end of a JSON string with escapes (position after its quote).
fn skip_string(line: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let i = memchr::memchr2(b'"', b'\\', line.get(pos..)?)?;
        if line[pos + i] == b'"' {
            return Some(pos + i + 1);
        }
        pos += i + 2;
    }
}

fn number_end(line: &[u8], pos: usize) -> usize {
    pos + line[pos..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || matches!(c, b'-' | b'.'))
        .count()
}

static T_REL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"t_rel\":"));
static NESTING: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"nesting\":"));

/// Reads a region line as git writes it (fixed key order) without a full
/// JSON parse. `None` for anything unusual (escapes in the SID, thread,
/// category or label, unknown keys, a cut line): the caller then uses the
/// full parser, which also reports errors.
pub(crate) fn fast_region(line: &[u8]) -> Option<RegionLine<'_>> {
    const ENTER: &[u8] = b"{\"event\":\"region_enter\",\"sid\":\"";
    const LEAVE: &[u8] = b"{\"event\":\"region_leave\",\"sid\":\"";
    let leave = if line.starts_with(ENTER) {
        false
    } else if line.starts_with(LEAVE) {
        true
    } else {
        return None;
    };
    if line.last() != Some(&b'}') {
        return None;
    }
    let (sid, pos) = plain_string(line, ENTER.len())?;
    let pos = pos
        + line
            .get(pos..)?
            .strip_prefix(b",\"thread\":\"")
            .map(|_| 11)?;
    let (thread, pos) = plain_string(line, pos)?;
    let mut pos = pos;
    let mut t_rel = Micros(0);
    if leave {
        let i = T_REL.find(&line[pos..])? + pos + 9;
        let end = number_end(line, i);
        t_rel = Micros::parse(&line[i..end])?;
        pos = end;
    }
    let i = NESTING.find(&line[pos..])? + pos + 11;
    let end = number_end(line, i);
    let nesting: i64 = std::str::from_utf8(&line[i..end]).ok()?.parse().ok()?;
    let mut pos = end;
    let mut category = None;
    let mut label = None;
    if line[pos..].starts_with(b",\"category\":\"") {
        let (c, p) = plain_string(line, pos + 13)?;
        category = Some(c);
        pos = p;
    }
    if line[pos..].starts_with(b",\"label\":\"") {
        let (l, p) = plain_string(line, pos + 10)?;
        label = Some(l);
        pos = p;
    }
    if line[pos..].starts_with(b",\"msg\":\"") {
        pos = skip_string(line, pos + 8)?;
    }
    if pos + 1 != line.len() {
        return None;
    }
    Some(RegionLine {
        leave,
        sid,
        thread,
        nesting,
        category,
        label,
        t_rel,
    })
}
