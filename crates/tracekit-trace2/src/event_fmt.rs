//! The EVENT format: one JSON object per line.
//!
//! The parser is a small byte scanner rather than a general JSON library
//! because git writes bytes >= 0x80 raw without validating UTF-8 (argv file
//! names), and because numbers must be kept exactly as written. The writer
//! reproduces git's json-writer byte for byte: fixed key order, `%.6f`
//! floats, git's string escapes.

use std::borrow::Cow;

use crate::event::{Body, Event, Kind, Region, Text, Time};
use crate::time::Micros;

/// A record that could not be parsed, with the byte offset in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

impl ParseError {
    fn new(offset: usize, message: impl Into<String>) -> Self {
        ParseError {
            offset,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.offset == 0 {
            // Whole-record problems (a missing key) have no useful column.
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} (at column {})", self.message, self.offset + 1)
        }
    }
}

/// Deepest JSON nesting accepted inside a value (`data_json`); deeper input
/// is refused instead of exhausting memory.
const MAX_DEPTH: usize = 512;

struct Scanner<'a> {
    s: &'a [u8],
    i: usize,
}

enum Value<'a> {
    Str(Text<'a>),
    /// A number, `true`, `false`, `null`, or a nested object/array: the raw
    /// bytes.
    Raw(&'a [u8]),
    Strings(Vec<Text<'a>>),
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    #[inline(always)]
    fn expect(&mut self, c: u8) -> Result<(), ParseError> {
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
    fn expected(&self, c: u8) -> ParseError {
        self.unexpected(&format!("expected '{}'", c as char))
    }

    fn unexpected(&self, what: &str) -> ParseError {
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
    fn key(&mut self) -> Result<Text<'a>, ParseError> {
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
    fn string(&mut self) -> Result<Text<'a>, ParseError> {
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

    fn string_escaped(&mut self, start: usize) -> Result<Text<'a>, ParseError> {
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
    fn raw_value(&mut self) -> Result<&'a [u8], ParseError> {
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

    fn value(&mut self, want_strings: bool) -> Result<Value<'a>, ParseError> {
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
fn has_special(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero_byte(x ^ (ONES * b'"' as u64));
    let backslash = zero_byte(x ^ (ONES * b'\\' as u64));
    let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    (quote | backslash | control) != 0
}

fn hex4(s: &[u8], i: usize) -> Option<u32> {
    let h = s.get(i..i + 4)?;
    let mut v = 0u32;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Every key a known event may carry.
#[derive(Default)]
struct Fields<'a> {
    event: Option<Text<'a>>,
    evt: Option<Text<'a>>,
    exe: Option<Text<'a>>,
    t_abs: Option<Micros>,
    t_rel: Option<Micros>,
    argv: Option<Vec<Text<'a>>>,
    code: Option<i64>,
    signo: Option<i64>,
    msg: Option<Text<'a>>,
    fmt: Option<Text<'a>>,
    path: Option<Text<'a>>,
    ancestry: Option<Vec<Text<'a>>>,
    name: Option<Text<'a>>,
    hierarchy: Option<Text<'a>>,
    alias: Option<Text<'a>>,
    child_id: Option<i64>,
    child_class: Option<Text<'a>>,
    hook_name: Option<Text<'a>>,
    cd: Option<Text<'a>>,
    use_shell: Option<bool>,
    pid: Option<i64>,
    ready: Option<Text<'a>>,
    exec_id: Option<i64>,
    scope: Option<Text<'a>>,
    param: Option<Text<'a>>,
    value: Option<Text<'a>>,
    value_raw: Option<&'a [u8]>,
    worktree: Option<Text<'a>>,
    nesting: Option<i64>,
    category: Option<Text<'a>>,
    label: Option<Text<'a>>,
    key: Option<Text<'a>>,
    intervals: Option<i64>,
    t_total: Option<Micros>,
    t_min: Option<Micros>,
    t_max: Option<Micros>,
    count: Option<i64>,
}

/// The keys of known events.
#[derive(Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // `Key::Key` is the JSON key named "key".
enum Key {
    Event,
    Sid,
    Thread,
    Time,
    File,
    Line,
    Repo,
    Evt,
    Exe,
    TAbs,
    TRel,
    Argv,
    Code,
    Signo,
    Msg,
    Fmt,
    Path,
    Ancestry,
    Name,
    Hierarchy,
    Alias,
    ChildId,
    ChildClass,
    HookName,
    Cd,
    UseShell,
    Pid,
    Ready,
    ExecId,
    Scope,
    Param,
    Value,
    Worktree,
    Nesting,
    Category,
    Label,
    Key,
    Intervals,
    TTotal,
    TMin,
    TMax,
    Count,
    Other,
}

/// Maps a key to [`Key`] with one length dispatch and at most a few
/// comparisons (a plain `match` on byte strings compares them in turn).
#[inline]
fn key_of(k: &[u8]) -> Key {
    match k.len() {
        2 => match k {
            b"cd" => Key::Cd,
            _ => Key::Other,
        },
        3 => match k {
            b"sid" => Key::Sid,
            b"evt" => Key::Evt,
            b"exe" => Key::Exe,
            b"msg" => Key::Msg,
            b"fmt" => Key::Fmt,
            b"pid" => Key::Pid,
            b"key" => Key::Key,
            _ => Key::Other,
        },
        4 => match k {
            b"time" => Key::Time,
            b"file" => Key::File,
            b"line" => Key::Line,
            b"repo" => Key::Repo,
            b"argv" => Key::Argv,
            b"code" => Key::Code,
            b"path" => Key::Path,
            b"name" => Key::Name,
            _ => Key::Other,
        },
        5 => match k {
            b"event" => Key::Event,
            b"t_abs" => Key::TAbs,
            b"t_rel" => Key::TRel,
            b"signo" => Key::Signo,
            b"alias" => Key::Alias,
            b"ready" => Key::Ready,
            b"scope" => Key::Scope,
            b"param" => Key::Param,
            b"value" => Key::Value,
            b"label" => Key::Label,
            b"t_min" => Key::TMin,
            b"t_max" => Key::TMax,
            b"count" => Key::Count,
            _ => Key::Other,
        },
        6 => match k {
            b"thread" => Key::Thread,
            _ => Key::Other,
        },
        7 => match k {
            b"exec_id" => Key::ExecId,
            b"nesting" => Key::Nesting,
            b"t_total" => Key::TTotal,
            _ => Key::Other,
        },
        8 => match k {
            b"ancestry" => Key::Ancestry,
            b"child_id" => Key::ChildId,
            b"worktree" => Key::Worktree,
            b"category" => Key::Category,
            _ => Key::Other,
        },
        9 => match k {
            b"hierarchy" => Key::Hierarchy,
            b"hook_name" => Key::HookName,
            b"use_shell" => Key::UseShell,
            b"intervals" => Key::Intervals,
            _ => Key::Other,
        },
        11 => match k {
            b"child_class" => Key::ChildClass,
            _ => Key::Other,
        },
        _ => Key::Other,
    }
}

fn parse_int(v: &[u8]) -> Option<i64> {
    let (neg, digits) = match v.first() {
        Some(b'-') => (true, &v[1..]),
        _ => (false, v),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(c - b'0');
    }
    Some(if neg { -n } else { n })
}

/// Parses one EVENT line (without its newline).
pub fn parse(line: &[u8]) -> Result<Event<'_>, ParseError> {
    let mut sc = Scanner { s: line, i: 0 };
    let mut ev = Event::new(Body::TooManyFiles);
    let mut f = Fields::default();
    if !fast_prefix(&mut sc, &mut ev, &mut f) {
        sc.i = 0;
        sc.expect(b'{')?;
        sc.ws();
        if sc.s.get(sc.i) == Some(&b'}') {
            return Err(ParseError::new(sc.i, "empty object: no \"event\" key"));
        }
    }
    loop {
        sc.ws();
        let key_at = sc.i;
        let key = sc.key()?;
        sc.expect(b':')?;
        let k = key_of(&key);
        let want_strings = matches!(k, Key::Argv | Key::Ancestry);
        let value_at = {
            sc.ws();
            sc.i
        };
        let v = sc.value(want_strings)?;
        let bad = |what: &str| {
            ParseError::new(
                value_at,
                format!("\"{}\": expected {what}", String::from_utf8_lossy(&key)),
            )
        };
        macro_rules! string {
            () => {
                match v {
                    Value::Str(s) => Some(s),
                    _ => return Err(bad("a string")),
                }
            };
        }
        macro_rules! int {
            () => {
                match v {
                    Value::Raw(r) => Some(parse_int(r).ok_or_else(|| bad("an integer"))?),
                    _ => return Err(bad("an integer")),
                }
            };
        }
        macro_rules! secs {
            () => {
                match v {
                    Value::Raw(r) => Some(Micros::parse(r).ok_or_else(|| bad("seconds"))?),
                    _ => return Err(bad("seconds")),
                }
            };
        }
        macro_rules! strings {
            () => {
                match v {
                    Value::Strings(s) => Some(s),
                    _ => return Err(bad("an array of strings")),
                }
            };
        }
        match k {
            Key::Event => f.event = string!(),
            Key::Sid => ev.sid = string!(),
            Key::Thread => ev.thread = string!(),
            Key::Time => ev.time = string!().map(Time::Iso),
            Key::File => ev.file = string!(),
            Key::Line => ev.line = int!(),
            Key::Repo => ev.repo = int!(),
            Key::Evt => f.evt = string!(),
            Key::Exe => f.exe = string!(),
            Key::TAbs => f.t_abs = secs!(),
            Key::TRel => f.t_rel = secs!(),
            Key::Argv => f.argv = strings!(),
            Key::Code => f.code = int!(),
            Key::Signo => f.signo = int!(),
            Key::Msg => f.msg = string!(),
            Key::Fmt => f.fmt = string!(),
            Key::Path => f.path = string!(),
            Key::Ancestry => f.ancestry = strings!(),
            Key::Name => f.name = string!(),
            Key::Hierarchy => f.hierarchy = string!(),
            Key::Alias => f.alias = string!(),
            Key::ChildId => f.child_id = int!(),
            Key::ChildClass => f.child_class = string!(),
            Key::HookName => f.hook_name = string!(),
            Key::Cd => f.cd = string!(),
            Key::UseShell => {
                f.use_shell = match v {
                    Value::Raw(b"true") => Some(true),
                    Value::Raw(b"false") => Some(false),
                    _ => return Err(bad("true or false")),
                }
            }
            Key::Pid => f.pid = int!(),
            Key::Ready => f.ready = string!(),
            Key::ExecId => f.exec_id = int!(),
            Key::Scope => f.scope = string!(),
            Key::Param => f.param = string!(),
            Key::Value => match v {
                Value::Str(s) => f.value = Some(s),
                Value::Raw(r) => f.value_raw = Some(r),
                Value::Strings(_) => f.value_raw = Some(&line[value_at..sc.i]),
            },
            Key::Worktree => f.worktree = string!(),
            Key::Nesting => f.nesting = int!(),
            Key::Category => f.category = string!(),
            Key::Label => f.label = string!(),
            Key::Key => f.key = string!(),
            Key::Intervals => f.intervals = int!(),
            Key::TTotal => f.t_total = secs!(),
            Key::TMin => f.t_min = secs!(),
            Key::TMax => f.t_max = secs!(),
            Key::Count => f.count = int!(),
            Key::Other => {
                let _ = key_at;
                ev.extra.push((key, Cow::Borrowed(&line[value_at..sc.i])));
            }
        }
        sc.ws();
        match sc.s.get(sc.i) {
            Some(b',') => sc.i += 1,
            Some(b'}') => {
                sc.i += 1;
                break;
            }
            _ => return Err(sc.unexpected("expected ',' or '}'")),
        }
    }
    sc.ws();
    if sc.i != line.len() {
        return Err(sc.unexpected("trailing data after the JSON object"));
    }
    let name = f
        .event
        .take()
        .ok_or_else(|| ParseError::new(0, "no \"event\" key"))?;
    ev.body = build_body(name, f).map_err(|m| ParseError::new(0, m))?;
    Ok(ev)
}

/// Reads the keys git always writes first, in its order
/// (`{"event":..,"sid":..,"thread":..[,"time":..][,"file":..,"line":..]`),
/// without the general key dispatch. Leaves the scanner after the comma
/// that precedes the next key and returns true; returns false (the
/// general parser then starts over) on anything else, escapes included.
#[inline]
fn fast_prefix<'a>(sc: &mut Scanner<'a>, ev: &mut Event<'a>, f: &mut Fields<'a>) -> bool {
    let s = sc.s;
    // A quoted value without escapes starting at `i`: its end.
    let plain = |i: usize| -> Option<usize> {
        let mut j = i;
        while let Some(chunk) = s.get(j..j + 8) {
            let x = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
            if has_special(x) {
                break;
            }
            j += 8;
        }
        loop {
            match s.get(j)? {
                b'"' => return Some(j),
                b'\\' => return None,
                c if *c < 0x20 => return None,
                _ => j += 1,
            }
        }
    };
    let Some(rest) = s.strip_prefix(b"{\"event\":\"") else {
        return false;
    };
    let mut i = s.len() - rest.len();
    let Some(e) = plain(i) else { return false };
    let event = &s[i..e];
    i = e + 1;
    let field = |i: &mut usize, key: &[u8]| -> Option<&'a [u8]> {
        let r = s.get(*i..)?;
        if r.first() != Some(&b',') || r.get(1) != Some(&b'"') || !r[2..].starts_with(key) {
            return None;
        }
        let after = *i + 2 + key.len();
        if s.get(after..after + 3) != Some(b"\":\"") {
            return None;
        }
        let start = after + 3;
        let end = plain(start)?;
        *i = end + 1;
        Some(&s[start..end])
    };
    let Some(sid) = field(&mut i, b"sid") else {
        return false;
    };
    let Some(thread) = field(&mut i, b"thread") else {
        return false;
    };
    let mut probe = i;
    let time = field(&mut probe, b"time");
    if time.is_some() {
        i = probe;
    }
    let mut probe = i;
    let file = field(&mut probe, b"file");
    let mut line = None;
    if file.is_some() {
        // ,"line":<digits>
        let Some(r) = s.get(probe..).and_then(|r| r.strip_prefix(b",\"line\":")) else {
            return false;
        };
        let digits = r
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b'-')
            .count();
        let Some(n) = parse_int(&r[..digits]) else {
            return false;
        };
        line = Some(n);
        i = s.len() - r.len() + digits;
    }
    match s.get(i) {
        Some(b',') => sc.i = i + 1,
        Some(b'}') => sc.i = i, // the general loop is not entered
        _ => return false,
    }
    if s.get(i) == Some(&b'}') {
        // Only the prefix: let the general parser handle the rare case.
        return false;
    }
    f.event = Some(Cow::Borrowed(event));
    ev.sid = Some(Cow::Borrowed(sid));
    ev.thread = Some(Cow::Borrowed(thread));
    ev.time = time.map(|t| Time::Iso(Cow::Borrowed(t)));
    ev.file = file.map(Cow::Borrowed);
    ev.line = line;
    true
}

fn build_body<'a>(name: Text<'a>, mut f: Fields<'a>) -> Result<Body<'a>, String> {
    let kind = Kind::from_name(&name);
    macro_rules! need {
        ($field:ident) => {
            f.$field.take().ok_or_else(|| {
                format!(
                    "{} event without \"{}\"",
                    String::from_utf8_lossy(&name),
                    stringify!($field)
                )
            })?
        };
    }
    Ok(match kind {
        Kind::Version => Body::Version {
            evt: f.evt.take(),
            exe: need!(exe),
        },
        Kind::TooManyFiles => Body::TooManyFiles,
        Kind::Start => Body::Start {
            t_abs: f.t_abs,
            argv: need!(argv),
        },
        Kind::Exit => Body::Exit {
            t_abs: need!(t_abs),
            code: need!(code),
        },
        Kind::AtExit => Body::AtExit {
            t_abs: need!(t_abs),
            code: need!(code),
        },
        Kind::Signal => Body::Signal {
            t_abs: need!(t_abs),
            signo: need!(signo),
        },
        Kind::Error => Body::Error {
            msg: f.msg.take(),
            fmt: f.fmt.take(),
        },
        Kind::CmdPath => Body::CmdPath { path: need!(path) },
        Kind::CmdAncestry => Body::CmdAncestry {
            ancestry: need!(ancestry),
        },
        Kind::CmdName => Body::CmdName {
            name: need!(name),
            hierarchy: f.hierarchy.take(),
        },
        Kind::CmdMode => Body::CmdMode { name: need!(name) },
        Kind::Alias => Body::Alias {
            alias: need!(alias),
            argv: need!(argv),
        },
        Kind::ChildStart => Body::ChildStart {
            t_abs: f.t_abs,
            child_id: need!(child_id),
            child_class: f.child_class.take(),
            hook_name: f.hook_name.take(),
            cd: f.cd.take(),
            use_shell: f.use_shell,
            argv: need!(argv),
        },
        Kind::ChildExit => Body::ChildExit {
            t_abs: f.t_abs,
            child_id: need!(child_id),
            pid: need!(pid),
            code: need!(code),
            t_rel: need!(t_rel),
        },
        Kind::ChildReady => Body::ChildReady {
            t_abs: f.t_abs,
            child_id: need!(child_id),
            pid: need!(pid),
            ready: need!(ready),
            t_rel: need!(t_rel),
        },
        Kind::ThreadStart => Body::ThreadStart { t_abs: f.t_abs },
        Kind::ThreadExit => Body::ThreadExit {
            t_abs: f.t_abs,
            t_rel: need!(t_rel),
        },
        Kind::Exec => Body::Exec {
            t_abs: f.t_abs,
            exec_id: need!(exec_id),
            exe: f.exe.take(),
            argv: need!(argv),
        },
        Kind::ExecResult => Body::ExecResult {
            t_abs: f.t_abs,
            exec_id: need!(exec_id),
            code: need!(code),
        },
        Kind::DefParam => Body::DefParam {
            scope: f.scope.take(),
            param: need!(param),
            value: f.value.take(),
        },
        Kind::DefRepo => Body::DefRepo {
            worktree: need!(worktree),
        },
        Kind::RegionEnter => Body::RegionEnter(Region {
            t_abs: f.t_abs,
            nesting: need!(nesting),
            category: f.category.take(),
            label: f.label.take(),
            msg: f.msg.take(),
        }),
        Kind::RegionLeave => Body::RegionLeave {
            t_rel: need!(t_rel),
            region: Region {
                t_abs: f.t_abs,
                nesting: need!(nesting),
                category: f.category.take(),
                label: f.label.take(),
                msg: f.msg.take(),
            },
        },
        Kind::Data => Body::Data {
            t_abs: need!(t_abs),
            t_rel: need!(t_rel),
            nesting: need!(nesting),
            category: f.category.take(),
            key: need!(key),
            value: need!(value),
        },
        Kind::DataJson => Body::DataJson {
            t_abs: need!(t_abs),
            t_rel: need!(t_rel),
            nesting: need!(nesting),
            category: f.category.take(),
            key: need!(key),
            value: match (f.value_raw.take(), f.value.take()) {
                (Some(r), _) => Cow::Borrowed(r),
                (None, Some(s)) => {
                    let mut q = Vec::with_capacity(s.len() + 2);
                    write_json_string(&mut q, &s);
                    Cow::Owned(q)
                }
                (None, None) => return Err("data_json event without \"value\"".into()),
            },
        },
        Kind::Printf => Body::Printf {
            t_abs: f.t_abs,
            msg: f.msg.take(),
        },
        Kind::Timer | Kind::ThTimer => Body::Timer {
            per_thread: kind == Kind::ThTimer,
            category: need!(category),
            name: need!(name),
            intervals: need!(intervals),
            t_total: need!(t_total),
            t_min: need!(t_min),
            t_max: need!(t_max),
        },
        Kind::Counter | Kind::ThCounter => Body::Counter {
            per_thread: kind == Kind::ThCounter,
            category: need!(category),
            name: need!(name),
            count: need!(count),
        },
        Kind::Unknown => Body::Unknown {
            event: name,
            payload: None,
        },
    })
}

/// Decodes one JSON string literal (quotes included), or `None` if `raw`
/// is not exactly one.
pub fn decode_json_string(raw: &[u8]) -> Option<Text<'_>> {
    let mut sc = Scanner { s: raw, i: 0 };
    let v = sc.string().ok()?;
    (sc.i == raw.len()).then_some(v)
}

/// Writes `s` as git's json-writer does: `"` `\` and the C escapes,
/// `\u00XX` for other control bytes, everything else raw.
pub fn write_json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x0c => b"\\f",
            0x08 => b"\\b",
            0..=0x1f => {
                out.extend_from_slice(&s[start..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl Obj<'_> {
    fn key(&mut self, k: &[u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k);
        self.out.extend_from_slice(b"\":");
    }
    fn str(&mut self, k: &str, v: &[u8]) {
        self.key(k.as_bytes());
        write_json_string(self.out, v);
    }
    fn opt_str(&mut self, k: &str, v: &Option<Text<'_>>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }
    fn int(&mut self, k: &str, v: i64) {
        self.key(k.as_bytes());
        self.out.extend_from_slice(v.to_string().as_bytes());
    }
    fn secs(&mut self, k: &str, v: Micros) {
        self.key(k.as_bytes());
        v.write(self.out);
    }
    fn opt_secs(&mut self, k: &str, v: Option<Micros>) {
        if let Some(v) = v {
            self.secs(k, v);
        }
    }
    fn strings(&mut self, k: &str, v: &[Text<'_>]) {
        self.key(k.as_bytes());
        self.out.push(b'[');
        for (i, s) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write_json_string(self.out, s);
        }
        self.out.push(b']');
    }
    fn raw(&mut self, k: &[u8], v: &[u8]) {
        self.key(k);
        self.out.extend_from_slice(v);
    }
}

/// Writes `ev` as one EVENT line, newline included, with the key order of
/// git 2.47.
pub fn write(ev: &Event<'_>, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut o = Obj { out, first: true };
    o.str("event", ev.body.name());
    o.opt_str("sid", &ev.sid);
    o.opt_str("thread", &ev.thread);
    match &ev.time {
        Some(Time::Iso(t)) => o.str("time", t),
        Some(Time::OfDay(t)) => {
            // A time of day without a date cannot be an EVENT `time`; keep
            // what is known rather than invent a date.
            let mut s = Vec::new();
            t.write(&mut s);
            o.str("time", &s);
        }
        None => {}
    }
    o.opt_str("file", &ev.file);
    if let Some(l) = ev.line {
        o.int("line", l);
    }
    if let Some(r) = ev.repo {
        o.int("repo", r);
    }
    match &ev.body {
        Body::Version { evt, exe } => {
            o.opt_str("evt", evt);
            o.str("exe", exe);
        }
        Body::TooManyFiles => {}
        Body::Start { t_abs, argv } => {
            o.opt_secs("t_abs", *t_abs);
            o.strings("argv", argv);
        }
        Body::Exit { t_abs, code } | Body::AtExit { t_abs, code } => {
            o.secs("t_abs", *t_abs);
            o.int("code", *code);
        }
        Body::Signal { t_abs, signo } => {
            o.secs("t_abs", *t_abs);
            o.int("signo", *signo);
        }
        Body::Error { msg, fmt } => {
            o.opt_str("msg", msg);
            o.opt_str("fmt", fmt);
        }
        Body::CmdPath { path } => o.str("path", path),
        Body::CmdAncestry { ancestry } => o.strings("ancestry", ancestry),
        Body::CmdName { name, hierarchy } => {
            o.str("name", name);
            o.opt_str("hierarchy", hierarchy);
        }
        Body::CmdMode { name } => o.str("name", name),
        Body::Alias { alias, argv } => {
            o.str("alias", alias);
            o.strings("argv", argv);
        }
        Body::ChildStart {
            t_abs,
            child_id,
            child_class,
            hook_name,
            cd,
            use_shell,
            argv,
        } => {
            o.opt_secs("t_abs", *t_abs);
            o.int("child_id", *child_id);
            o.opt_str("child_class", child_class);
            o.opt_str("hook_name", hook_name);
            o.opt_str("cd", cd);
            if let Some(b) = use_shell {
                o.raw(b"use_shell", if *b { b"true" } else { b"false" });
            }
            o.strings("argv", argv);
        }
        Body::ChildExit {
            t_abs,
            child_id,
            pid,
            code,
            t_rel,
        } => {
            o.opt_secs("t_abs", *t_abs);
            o.int("child_id", *child_id);
            o.int("pid", *pid);
            o.int("code", *code);
            o.secs("t_rel", *t_rel);
        }
        Body::ChildReady {
            t_abs,
            child_id,
            pid,
            ready,
            t_rel,
        } => {
            o.opt_secs("t_abs", *t_abs);
            o.int("child_id", *child_id);
            o.int("pid", *pid);
            o.str("ready", ready);
            o.secs("t_rel", *t_rel);
        }
        Body::ThreadStart { t_abs } => o.opt_secs("t_abs", *t_abs),
        Body::ThreadExit { t_abs, t_rel } => {
            o.opt_secs("t_abs", *t_abs);
            o.secs("t_rel", *t_rel);
        }
        Body::Exec {
            t_abs,
            exec_id,
            exe,
            argv,
        } => {
            o.opt_secs("t_abs", *t_abs);
            o.int("exec_id", *exec_id);
            o.opt_str("exe", exe);
            o.strings("argv", argv);
        }
        Body::ExecResult {
            t_abs,
            exec_id,
            code,
        } => {
            o.opt_secs("t_abs", *t_abs);
            o.int("exec_id", *exec_id);
            o.int("code", *code);
        }
        Body::DefParam {
            scope,
            param,
            value,
        } => {
            o.opt_str("scope", scope);
            o.str("param", param);
            o.opt_str("value", value);
        }
        Body::DefRepo { worktree } => o.str("worktree", worktree),
        Body::RegionEnter(r) => region(&mut o, r, None),
        Body::RegionLeave { region: r, t_rel } => region(&mut o, r, Some(*t_rel)),
        Body::Data {
            t_abs,
            t_rel,
            nesting,
            category,
            key,
            value,
        } => {
            o.secs("t_abs", *t_abs);
            o.secs("t_rel", *t_rel);
            o.int("nesting", *nesting);
            o.opt_str("category", category);
            o.str("key", key);
            o.str("value", value);
        }
        Body::DataJson {
            t_abs,
            t_rel,
            nesting,
            category,
            key,
            value,
        } => {
            o.secs("t_abs", *t_abs);
            o.secs("t_rel", *t_rel);
            o.int("nesting", *nesting);
            o.opt_str("category", category);
            o.str("key", key);
            o.raw(b"value", value);
        }
        Body::Printf { t_abs, msg } => {
            o.opt_secs("t_abs", *t_abs);
            o.opt_str("msg", msg);
        }
        Body::Timer {
            category,
            name,
            intervals,
            t_total,
            t_min,
            t_max,
            ..
        } => {
            o.str("category", category);
            o.str("name", name);
            o.int("intervals", *intervals);
            o.secs("t_total", *t_total);
            o.secs("t_min", *t_min);
            o.secs("t_max", *t_max);
        }
        Body::Counter {
            category,
            name,
            count,
            ..
        } => {
            o.str("category", category);
            o.str("name", name);
            o.int("count", *count);
        }
        Body::Unknown { .. } => {}
    }
    for (k, v) in &ev.extra {
        o.raw(k, v);
    }
    out.extend_from_slice(b"}\n");
}

fn region(o: &mut Obj<'_>, r: &Region<'_>, t_rel: Option<Micros>) {
    o.opt_secs("t_abs", r.t_abs);
    o.opt_secs("t_rel", t_rel);
    o.int("nesting", r.nesting);
    o.opt_str("category", &r.category);
    o.opt_str("label", &r.label);
    o.opt_str("msg", &r.msg);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(line: &str) {
        let ev = parse(line.as_bytes()).unwrap_or_else(|e| panic!("{e}: {line}"));
        let mut out = Vec::new();
        write(&ev, &mut out);
        assert_eq!(String::from_utf8_lossy(&out), format!("{line}\n"));
    }

    #[test]
    fn round_trips() {
        round(
            r#"{"event":"version","sid":"20261121T195427.163686Z-H0a7c9cdf-P000032e6","thread":"main","time":"2026-11-21T19:54:27.163779Z","file":"common-main.c","line":57,"evt":"4","exe":"2.47.3"}"#,
        );
        round(r#"{"event":"data_json","sid":"s","thread":"main","t_abs":0.1,"t_rel":0.000001,"nesting":1,"category":"c","key":"k","value":{"a":[1,{"b":{}}],"c":"x\"y"}}"#.replace("0.1,", "0.100000,").as_str());
        round(r#"{"event":"error","sid":"s","thread":"main","msg":"a\nb\t\u0001é","fmt":"%s"}"#);
        round(r#"{"event":"new_thing","sid":"s","thread":"main","answer":42,"list":[1,2]}"#);
    }

    #[test]
    fn raw_bytes_survive() {
        let line = b"{\"event\":\"start\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":0.000416,\"argv\":[\"git\",\"add\",\"caf\xe9.txt\"]}";
        let ev = parse(line).unwrap();
        let mut out = Vec::new();
        write(&ev, &mut out);
        assert_eq!(&out[..out.len() - 1], &line[..]);
    }

    #[test]
    fn errors_have_positions() {
        let e = parse(br#"{"event":"exit","sid":"s","t_abs":0.1"#).unwrap_err();
        assert!(e.message.contains("end of line"), "{e}");
        let e = parse(br#"{"event":"exit","code":"x","t_abs":0.1}"#).unwrap_err();
        assert_eq!(e.offset, 23);
        let e = parse(br#"{"event":"exit","t_abs":0.1}"#).unwrap_err();
        assert!(e.message.contains("without \"code\""), "{e}");
        let deep = format!(
            "{{\"event\":\"data_json\",\"value\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let e = parse(deep.as_bytes()).unwrap_err();
        assert!(e.message.contains("nested deeper"), "{e}");
        assert!(parse(b"").is_err());
        assert!(parse(b"\xff\xfe").is_err());
    }
}
