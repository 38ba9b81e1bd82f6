//! llvm-xray's YAML traces as input: the format `llvm-xray convert -f yaml`
//! writes and LLVM's own tests are written in. A header mapping (`version`,
//! `type`, `constant-tsc`, `nonstop-tsc`, `cycle-frequency`) and a list of
//! records (`type`, `func-id`, `function`, `args`, `cpu`, `thread`,
//! `process`, `kind`, `tsc`, `data`), each a flow mapping on one line as
//! llvm-xray writes them, or a block mapping over several lines.
//!
//! Records keep file order, as llvm-xray's YAML loader keeps them (it does
//! not sort). The reader streams: it holds one record at a time.
//!
//! Deliberate difference: llvm-xray 14 refuses YAML whose header version
//! is not 1 ("Unsupported XRay file version"), so it cannot read back its
//! own YAML of v3 basic or v5 FDR logs; we read every version the binary
//! formats have (basic 1-3, FDR 1-5).

use std::borrow::Cow;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::header::{Endian, FileHeader, LogKind};
use crate::record::{Record, RecordKind};

/// Where the records of a YAML trace lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlBody {
    /// Offset of the first line after `records:`.
    pub start: usize,
    /// Line number (1-based) of that line.
    pub line: u64,
    /// The value of `records:` was written on its line (`records: []`).
    pub inline_empty: bool,
}

/// One line of the input: its text without the end of line, its
/// indentation, and where the next line starts.
struct Line<'a> {
    text: &'a [u8],
    indent: usize,
    next: usize,
}

fn line_at(data: &[u8], pos: usize) -> Line<'_> {
    let end = memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
    let mut text = &data[pos..end];
    if let Some(t) = text.strip_suffix(b"\r") {
        text = t;
    }
    let indent = text.iter().take_while(|&&b| b == b' ').count();
    Line {
        text,
        indent,
        next: (end + 1).min(data.len().max(end)),
    }
}

fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == b)
}

/// A line with nothing to read: blank or a comment.
fn is_blank(text: &[u8]) -> bool {
    let t = trim(text);
    t.is_empty() || t[0] == b'#'
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &s[start..end.max(start)]
}

/// True when `data` starts like an llvm-xray YAML trace: after comments,
/// blank lines and `---`, a top-level `header:` key whose mapping holds
/// XRay's header fields.
pub fn looks_like_yaml_log(data: &[u8]) -> bool {
    let mut pos = 0;
    let mut seen_header = false;
    let mut lines = 0;
    while pos < data.len() && lines < 64 {
        let l = line_at(data, pos);
        pos = l.next;
        lines += 1;
        if is_blank(l.text) || l.text.starts_with(b"%") {
            continue;
        }
        let t = trim(l.text);
        if !seen_header {
            if t == b"---" {
                continue;
            }
            if l.indent == 0 && (t.starts_with(b"header:")) {
                seen_header = true;
                if t.contains(&b'{') {
                    return contains(t, b"version") && contains(t, b"type");
                }
                continue;
            }
            return false;
        }
        return l.indent > 0
            && [
                &b"version:"[..],
                b"type:",
                b"constant-tsc:",
                b"nonstop-tsc:",
                b"cycle-frequency:",
            ]
            .iter()
            .any(|k| t.starts_with(k));
    }
    false
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A parsed scalar or sequence of scalars.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value<'a> {
    Scalar(Cow<'a, [u8]>),
    Seq(Vec<Cow<'a, [u8]>>),
}

/// A small YAML scalar/flow parser over one line (or a few joined lines).
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
        // A comment runs to the end of its line.
        if self.i < self.s.len() && self.s[self.i] == b'#' {
            while self.i < self.s.len() && self.s[self.i] != b'\n' {
                self.i += 1;
            }
            self.ws();
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// A scalar in flow context (ends at `,` `}` `]`) or block context
    /// (ends at the end of the text or a comment).
    fn scalar(&mut self, flow: bool) -> std::result::Result<Cow<'a, [u8]>, String> {
        self.ws();
        match self.peek() {
            Some(b'\'') => self.single_quoted(),
            Some(b'"') => self.double_quoted(),
            _ => {
                let start = self.i;
                while let Some(c) = self.peek() {
                    if flow && matches!(c, b',' | b'}' | b']') {
                        break;
                    }
                    if c == b'#' && self.i > start && matches!(self.s[self.i - 1], b' ' | b'\t') {
                        break;
                    }
                    self.i += 1;
                }
                Ok(Cow::Borrowed(trim(&self.s[start..self.i])))
            }
        }
    }

    fn single_quoted(&mut self) -> std::result::Result<Cow<'a, [u8]>, String> {
        self.i += 1;
        let start = self.i;
        let mut owned: Option<Vec<u8>> = None;
        loop {
            let Some(c) = self.peek() else {
                return Err("a single-quoted string is not closed".into());
            };
            self.i += 1;
            if c == b'\'' {
                if self.peek() == Some(b'\'') {
                    let o = owned.get_or_insert_with(|| self.s[start..self.i - 1].to_vec());
                    o.push(b'\'');
                    self.i += 1;
                    continue;
                }
                return Ok(match owned {
                    Some(o) => Cow::Owned(o),
                    None => Cow::Borrowed(&self.s[start..self.i - 1]),
                });
            }
            if let Some(o) = owned.as_mut() {
                o.push(c);
            }
        }
    }

    fn double_quoted(&mut self) -> std::result::Result<Cow<'a, [u8]>, String> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err("a double-quoted string is not closed".into());
            };
            self.i += 1;
            match c {
                b'"' => return Ok(Cow::Owned(out)),
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err("a double-quoted string ends in a backslash".into());
                    };
                    self.i += 1;
                    match e {
                        b'0' => out.push(0),
                        b'a' => out.push(7),
                        b'b' => out.push(8),
                        b't' | b'\t' => out.push(b'\t'),
                        b'n' => out.push(b'\n'),
                        b'v' => out.push(11),
                        b'f' => out.push(12),
                        b'r' => out.push(b'\r'),
                        b'e' => out.push(27),
                        b' ' => out.push(b' '),
                        b'"' => out.push(b'"'),
                        b'/' => out.push(b'/'),
                        b'\\' => out.push(b'\\'),
                        b'N' => out.extend_from_slice("\u{85}".as_bytes()),
                        b'_' => out.extend_from_slice("\u{a0}".as_bytes()),
                        b'L' => out.extend_from_slice("\u{2028}".as_bytes()),
                        b'P' => out.extend_from_slice("\u{2029}".as_bytes()),
                        b'x' | b'u' | b'U' => {
                            let n = match e {
                                b'x' => 2,
                                b'u' => 4,
                                _ => 8,
                            };
                            let hex = self
                                .s
                                .get(self.i..self.i + n)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .ok_or_else(|| format!("\\{} needs {n} hex digits", e as char))?;
                            self.i += n;
                            if e == b'x' {
                                // LLVM's YAML reader encodes \xHH as the
                                // code point U+00HH in UTF-8.
                                let ch = char::from_u32(hex).unwrap_or('\u{fffd}');
                                let mut b = [0; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                            } else {
                                let ch = char::from_u32(hex).ok_or_else(|| {
                                    format!("\\{} escape {hex:#x} is not a character", e as char)
                                })?;
                                let mut b = [0; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                            }
                        }
                        other => {
                            return Err(format!("unknown escape \\{}", other as char));
                        }
                    }
                }
                _ => out.push(c),
            }
        }
    }

    /// A value: a flow sequence or a scalar.
    fn value(&mut self, flow: bool) -> std::result::Result<Value<'a>, String> {
        self.ws();
        if self.peek() == Some(b'[') {
            self.i += 1;
            let mut items = Vec::new();
            loop {
                self.ws();
                match self.peek() {
                    Some(b']') => {
                        self.i += 1;
                        return Ok(Value::Seq(items));
                    }
                    None => return Err("a sequence `[` is not closed".into()),
                    _ => {}
                }
                items.push(self.scalar(true)?);
                self.ws();
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b']') => {}
                    _ => return Err("expected `,` or `]` in a sequence".into()),
                }
            }
        }
        Ok(Value::Scalar(self.scalar(flow)?))
    }

    /// A key up to its `:`.
    fn key(&mut self) -> std::result::Result<&'a [u8], String> {
        self.ws();
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == b':' {
                let k = trim(&self.s[start..self.i]);
                self.i += 1;
                return Ok(k);
            }
            if matches!(c, b',' | b'}' | b'\n') {
                break;
            }
            self.i += 1;
        }
        Err(format!(
            "expected `key: value`, found {:?}",
            String::from_utf8_lossy(trim(&self.s[start..self.i]))
        ))
    }

    /// A flow mapping `{ k: v, ... }`.
    fn flow_mapping(&mut self) -> std::result::Result<Vec<(&'a [u8], Value<'a>)>, String> {
        self.ws();
        if self.peek() != Some(b'{') {
            return Err("expected a mapping `{ ... }`".into());
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(out);
                }
                None => return Err("a mapping `{` is not closed".into()),
                _ => {}
            }
            let k = self.key()?;
            let v = self.value(true)?;
            out.push((k, v));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                _ => return Err("expected `,` or `}` in a mapping".into()),
            }
        }
    }
}

fn flow_balanced(s: &[u8]) -> bool {
    let (mut depth, mut quote) = (0i32, None::<u8>);
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match quote {
            Some(q) => {
                if c == b'\\' && q == b'"' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                b'#' if i == 0 || matches!(s[i - 1], b' ' | b'\t') => {
                    while i < s.len() && s[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                _ => {}
            },
        }
        i += 1;
    }
    depth <= 0 && quote.is_none()
}

fn text(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

fn number<T: TryFrom<u64>>(key: &str, v: &Value<'_>) -> std::result::Result<T, String> {
    let Value::Scalar(s) = v else {
        return Err(format!("`{key}` must be a number, not a sequence"));
    };
    parse_u64(s)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("`{key}`: {:?} is not a number in range", text(s)))
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(s).ok()?;
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(o) = s.strip_prefix("0o") {
        u64::from_str_radix(o, 8).ok()
    } else if let Some(b) = s.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()
    } else {
        s.parse().ok()
    }
}

/// A signed number (`func-id` is an `int32_t`; llvm-xray prints it signed).
fn signed(key: &str, v: &Value<'_>) -> std::result::Result<i32, String> {
    let Value::Scalar(s) = v else {
        return Err(format!("`{key}` must be a number, not a sequence"));
    };
    let t = std::str::from_utf8(s).unwrap_or("");
    if let Some(neg) = t.strip_prefix('-') {
        if let Some(n) = parse_u64(neg.as_bytes()).and_then(|n| i64::try_from(n).ok()) {
            if let Ok(x) = i32::try_from(-n) {
                return Ok(x);
            }
        }
    } else if let Some(n) = parse_u64(s) {
        if let Ok(x) = i32::try_from(n) {
            return Ok(x);
        }
    }
    Err(format!("`{key}`: {:?} is not a 32-bit number", text(s)))
}

fn boolean(key: &str, v: &Value<'_>) -> std::result::Result<bool, String> {
    match v {
        Value::Scalar(s) => match &**s {
            b"true" | b"True" | b"TRUE" | b"yes" | b"on" | b"1" => Ok(true),
            b"false" | b"False" | b"FALSE" | b"no" | b"off" | b"0" => Ok(false),
            other => Err(format!("`{key}`: {:?} is not true or false", text(other))),
        },
        Value::Seq(_) => Err(format!("`{key}` must be true or false")),
    }
}

/// Reads the header of a YAML trace and finds its records.
pub fn open(data: &[u8]) -> Result<(FileHeader, YamlBody, Warnings)> {
    let mut warnings = Warnings::default();
    let mut header: Option<FileHeader> = None;
    let mut body: Option<YamlBody> = None;
    let mut pos = 0;
    let mut line_no = 0u64;
    let err = |line: u64, msg: String| Error::malformed(Position::Line(line), msg);
    while pos < data.len() {
        let l = line_at(data, pos);
        line_no += 1;
        pos = l.next;
        if is_blank(l.text) || l.text.starts_with(b"%") || trim(l.text) == b"---" {
            continue;
        }
        let t = trim(l.text);
        if t == b"..." {
            break;
        }
        if l.indent != 0 || t.starts_with(b"- ") {
            // The body of a section already handled (records being
            // skipped while looking for a header written after them).
            continue;
        }
        let mut c = Cursor { s: l.text, i: 0 };
        let key = c.key().map_err(|m| err(line_no, m))?;
        let rest = trim(&l.text[c.i..]);
        match key {
            b"header" => {
                let mut fields: Vec<(Vec<u8>, Value<'_>, u64)> = Vec::new();
                if !rest.is_empty() && rest[0] == b'{' {
                    let mut c = Cursor { s: rest, i: 0 };
                    for (k, v) in c.flow_mapping().map_err(|m| err(line_no, m))? {
                        fields.push((k.to_vec(), v, line_no));
                    }
                } else {
                    while pos < data.len() {
                        let h = line_at(data, pos);
                        if !is_blank(h.text) && h.indent == 0 {
                            break;
                        }
                        line_no += 1;
                        pos = h.next;
                        if is_blank(h.text) {
                            continue;
                        }
                        let mut c = Cursor { s: h.text, i: 0 };
                        let k = c.key().map_err(|m| err(line_no, m))?;
                        let v = c.value(false).map_err(|m| err(line_no, m))?;
                        fields.push((k.to_vec(), v, line_no));
                    }
                }
                header = Some(parse_header(&fields, line_no, &mut warnings)?);
            }
            b"records" => {
                let inline_empty = rest == b"[]" || rest.starts_with(b"[]");
                if !inline_empty && !rest.is_empty() && rest[0] != b'#' {
                    return Err(err(
                        line_no,
                        format!(
                            "`records:` must be followed by a list of records, not {:?}",
                            text(rest)
                        ),
                    ));
                }
                body = Some(YamlBody {
                    start: pos,
                    line: line_no + 1,
                    inline_empty,
                });
                if header.is_some() {
                    break;
                }
            }
            other => warnings.push(
                Position::Line(line_no),
                format!("unknown key `{}` ignored", text(other)),
            ),
        }
    }
    let header = header.ok_or_else(|| {
        Error::malformed(Position::Unknown, "YAML trace without a `header:` mapping")
    })?;
    let body = body.unwrap_or(YamlBody {
        start: data.len(),
        line: line_no + 1,
        inline_empty: true,
    });
    Ok((header, body, warnings))
}

fn parse_header(
    fields: &[(Vec<u8>, Value<'_>, u64)],
    header_line: u64,
    warnings: &mut Warnings,
) -> Result<FileHeader> {
    let (mut version, mut kind, mut constant, mut nonstop, mut freq) =
        (None, None, None, None, None);
    for (k, v, line) in fields {
        let e = |m: String| Error::malformed(Position::Line(*line), m);
        match &k[..] {
            b"version" => version = Some(number::<u16>("version", v).map_err(e)?),
            b"type" => kind = Some(number::<u16>("type", v).map_err(e)?),
            b"constant-tsc" => constant = Some(boolean("constant-tsc", v).map_err(e)?),
            b"nonstop-tsc" => nonstop = Some(boolean("nonstop-tsc", v).map_err(e)?),
            b"cycle-frequency" => freq = Some(number::<u64>("cycle-frequency", v).map_err(e)?),
            other => warnings.push(
                Position::Line(*line),
                format!("unknown header key `{}` ignored", text(other)),
            ),
        }
    }
    let missing = |k: &str| {
        Error::malformed(
            Position::Line(header_line),
            format!("the header has no `{k}`"),
        )
    };
    let version = version.ok_or_else(|| missing("version"))?;
    let type_code = kind.ok_or_else(|| missing("type"))?;
    let kind = match (type_code, version) {
        (0, 1..=3) => LogKind::Basic,
        (1, 1..=5) => LogKind::Fdr,
        _ => {
            return Err(Error::malformed(
                Position::Line(header_line),
                format!(
                    "header: version {version} of type {type_code} is not an XRay log format (type 0 basic: versions 1-3; type 1 FDR: versions 1-5)"
                ),
            ))
        }
    };
    Ok(FileHeader {
        version,
        kind,
        constant_tsc: constant.ok_or_else(|| missing("constant-tsc"))?,
        nonstop_tsc: nonstop.ok_or_else(|| missing("nonstop-tsc"))?,
        cycle_frequency: freq.ok_or_else(|| missing("cycle-frequency"))?,
        buffer_size: 0,
        endian: Endian::Little,
    })
}

/// Streams the records of a YAML trace in file order.
pub struct YamlReader<'a> {
    data: &'a [u8],
    pos: usize,
    /// The records stop here (a run's end; the input's end).
    end: usize,
    line: u64,
    /// Records left (a run's length), or unlimited.
    left: Option<usize>,
    done: bool,
    /// Offset and line number of the line that started the last record
    /// returned.
    pub last_start: usize,
    pub last_line: u64,
    pub warnings: Warnings,
}

impl<'a> YamlReader<'a> {
    pub fn new(data: &'a [u8], body: YamlBody) -> Self {
        YamlReader {
            data,
            pos: body.start,
            end: data.len(),
            line: body.line,
            left: None,
            done: body.inline_empty,
            last_start: body.start,
            last_line: body.line,
            warnings: Warnings::default(),
        }
    }

    /// Reads `count` records from `start` (a record's first line, `line`
    /// its number).
    pub fn run(data: &'a [u8], start: usize, line: u64, count: usize) -> Self {
        YamlReader {
            data,
            pos: start,
            end: data.len(),
            line,
            left: Some(count),
            done: false,
            last_start: start,
            last_line: line,
            warnings: Warnings::default(),
        }
    }

    fn fail(&mut self, line: u64, msg: String) -> Option<Result<Record<'a>>> {
        self.done = true;
        Some(Err(Error::malformed(Position::Line(line), msg)))
    }
}

/// One item of a YAML list of mappings, read from `*pos` (line `*line`):
/// its first line's number and offset and its fields. `None` at the end of
/// the list (`...`, `---`, a top-level key, the end of the input).
#[allow(clippy::type_complexity)]
fn next_item<'a>(
    data: &'a [u8],
    pos: &mut usize,
    line: &mut u64,
) -> Option<std::result::Result<(u64, usize, Vec<(&'a [u8], Value<'a>)>), (u64, String)>> {
    // Find the item's first line.
    let (item_indent, first) = loop {
        if *pos >= data.len() {
            return None;
        }
        let l = line_at(data, *pos);
        if is_blank(l.text) {
            *pos = l.next;
            *line += 1;
            continue;
        }
        let t = trim(l.text);
        if t == b"..." || t == b"---" || (l.indent == 0 && !t.starts_with(b"-")) {
            return None;
        }
        if !(t == b"-" || t.starts_with(b"- ")) {
            return Some(Err((
                *line,
                format!("expected a list item `- {{ ... }}`, found {:?}", text(t)),
            )));
        }
        break (l.indent, l);
    };
    let start_line = *line;
    let start = *pos;
    let after_dash = trim(&trim(first.text)[1..]);
    let mut fields: Vec<(&'a [u8], Value<'a>)> = Vec::new();
    let text_start = *pos;
    let value_start = text_start + first.indent + 1;
    if after_dash.starts_with(b"{") {
        // A flow mapping, possibly over several lines.
        let mut end = first.next;
        let mut lines = 1;
        while !flow_balanced(&data[value_start..end]) {
            if end >= data.len() {
                return Some(Err((start_line, "a `{` is not closed".into())));
            }
            end = line_at(data, end).next;
            lines += 1;
        }
        let mut c = Cursor {
            s: &data[value_start..end],
            i: 0,
        };
        match c.flow_mapping() {
            Ok(f) => fields = f,
            Err(m) => return Some(Err((start_line, m))),
        }
        c.ws();
        if c.i < c.s.len() {
            return Some(Err((
                start_line,
                format!("unexpected {:?} after `}}`", text(trim(&c.s[c.i..]))),
            )));
        }
        *pos = end;
        *line += lines;
    } else {
        // A block mapping: `- key: value` then deeper-indented lines.
        *pos = first.next;
        *line += 1;
        let mut texts: Vec<(&'a [u8], u64)> = Vec::new();
        if !after_dash.is_empty() {
            texts.push((
                &data[value_start..text_start + first.text.len()],
                start_line,
            ));
        }
        while *pos < data.len() {
            let l = line_at(data, *pos);
            if is_blank(l.text) {
                *pos = l.next;
                *line += 1;
                continue;
            }
            if l.indent <= item_indent {
                break;
            }
            texts.push((l.text, *line));
            *pos = l.next;
            *line += 1;
        }
        for (t, at) in texts {
            let mut c = Cursor { s: t, i: 0 };
            let k = match c.key() {
                Ok(k) => k,
                Err(m) => return Some(Err((at, m))),
            };
            match c.value(false) {
                Ok(v) => fields.push((k, v)),
                Err(m) => return Some(Err((at, m))),
            }
        }
    }
    Some(Ok((start_line, start, fields)))
}

impl<'a> Iterator for YamlReader<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.left == Some(0) || self.pos >= self.end {
            return None;
        }
        match next_item(self.data, &mut self.pos, &mut self.line) {
            None => {
                self.done = true;
                None
            }
            Some(Err((line, m))) => self.fail(line, m),
            Some(Ok((line, start, fields))) => {
                self.last_start = start;
                self.last_line = line;
                if let Some(n) = self.left.as_mut() {
                    *n -= 1;
                }
                Some(record(fields).map_err(|m| Error::malformed(Position::Line(line), m)))
            }
        }
    }
}

/// A YAML list of flat mappings (`llvm-xray extract`'s sleds), after
/// comments, blank lines and `---`: each item's line and its keys and
/// scalar values as text. An empty document or `[]` is an empty list.
#[allow(clippy::type_complexity)]
pub fn sequence_of_mappings(data: &[u8]) -> Result<Vec<(u64, Vec<(String, String)>)>> {
    let mut pos = 0;
    let mut line = 1u64;
    while pos < data.len() {
        let l = line_at(data, pos);
        let t = trim(l.text);
        if is_blank(l.text) || t.starts_with(b"%") || t == b"---" {
            pos = l.next;
            line += 1;
            continue;
        }
        if t == b"[]" || t == b"--- []" {
            return Ok(Vec::new());
        }
        if let Some(rest) = t.strip_prefix(b"--- ") {
            if !rest.starts_with(b"#") {
                return Err(Error::malformed(
                    Position::Line(line),
                    format!("expected a list of sleds, found {:?}", text(rest)),
                ));
            }
            pos = l.next;
            line += 1;
            continue;
        }
        break;
    }
    let mut out = Vec::new();
    while let Some(item) = next_item(data, &mut pos, &mut line) {
        let (at, _, fields) = item.map_err(|(l, m)| Error::malformed(Position::Line(l), m))?;
        let mut kv = Vec::with_capacity(fields.len());
        for (k, v) in fields {
            match v {
                Value::Scalar(s) => kv.push((text(k), text(&s))),
                Value::Seq(_) => {
                    return Err(Error::malformed(
                        Position::Line(at),
                        format!("`{}` must be a single value", text(k)),
                    ))
                }
            }
        }
        out.push((at, kv));
    }
    // Anything but the end of the document after the list is an error.
    while pos < data.len() {
        let l = line_at(data, pos);
        let t = trim(l.text);
        if !(is_blank(l.text) || t == b"..." || t == b"---") {
            return Err(Error::malformed(
                Position::Line(line),
                format!("unexpected {:?} after the list of sleds", text(t)),
            ));
        }
        pos = l.next;
        line += 1;
    }
    Ok(out)
}

fn record<'a>(fields: Vec<(&'a [u8], Value<'a>)>) -> std::result::Result<Record<'a>, String> {
    let (mut record_type, mut func_id, mut cpu, mut tid, mut pid, mut kind, mut tsc) =
        (None, 0i32, None, 0u32, 0u32, None, None);
    let mut args = Vec::new();
    let mut data: Cow<'a, [u8]> = Cow::Borrowed(&[]);
    for (k, v) in fields {
        match k {
            b"type" => record_type = Some(number::<u16>("type", &v)?),
            b"func-id" => func_id = signed("func-id", &v)?,
            b"function" => {}
            b"args" => match v {
                Value::Seq(items) => {
                    for a in items {
                        args.push(
                            parse_u64(&a)
                                .ok_or_else(|| format!("`args`: {:?} is not a number", text(&a)))?,
                        );
                    }
                }
                Value::Scalar(s) if s.is_empty() => {}
                Value::Scalar(_) => return Err("`args` must be a sequence `[ ... ]`".into()),
            },
            b"cpu" => cpu = Some(number::<u16>("cpu", &v)?),
            b"thread" => tid = number::<u32>("thread", &v)?,
            b"process" => pid = number::<u32>("process", &v)?,
            b"kind" => {
                let Value::Scalar(s) = &v else {
                    return Err("`kind` must be a record kind".into());
                };
                kind = Some(match &s[..] {
                    b"function-enter" => RecordKind::Enter,
                    b"function-exit" => RecordKind::Exit,
                    b"function-tail-exit" => RecordKind::TailExit,
                    b"function-enter-arg" => RecordKind::EnterArg,
                    b"custom-event" => RecordKind::CustomEvent,
                    b"typed-event" => RecordKind::TypedEvent,
                    other => {
                        return Err(format!(
                            "`kind`: unknown record kind {:?} (function-enter, function-exit, function-tail-exit, function-enter-arg, custom-event, typed-event)",
                            text(other)
                        ))
                    }
                });
            }
            b"tsc" => tsc = Some(number::<u64>("tsc", &v)?),
            b"data" => match v {
                Value::Scalar(s) => data = s,
                Value::Seq(_) => return Err("`data` must be a string".into()),
            },
            other => return Err(format!("unknown key `{}` in a record", text(other))),
        }
    }
    let missing = |k: &str| format!("a record without `{k}`");
    Ok(Record {
        record_type: record_type.ok_or_else(|| missing("type"))?,
        cpu: cpu.ok_or_else(|| missing("cpu"))?,
        kind: kind.ok_or_else(|| missing("kind"))?,
        func_id,
        tsc: tsc.ok_or_else(|| missing("tsc"))?,
        tid,
        pid,
        args,
        data,
    })
}

/// Splits the records into maximal runs of non-decreasing timestamps:
/// (first line offset, its line number, record count). Merging the runs
/// by timestamp, earlier runs first on ties, is a stable sort.
pub fn runs(data: &[u8], body: YamlBody) -> Result<Vec<(usize, u64, usize)>> {
    let mut out = Vec::new();
    let mut r = YamlReader::new(data, body);
    let mut last = 0u64;
    while let Some(rec) = r.next() {
        let rec = rec?;
        match out.last_mut() {
            Some((_, _, n)) if rec.tsc >= last => *n += 1,
            _ => out.push((r.last_start, r.last_line, 1)),
        }
        last = rec.tsc;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"# a comment\n---\nheader:\n  version: 1\n  type: 0\n  constant-tsc: true\n  nonstop-tsc: true\n  cycle-frequency: 2601000000\nrecords:\n  - { type: 0, func-id: 1, cpu: 1, thread: 111, kind: function-enter, tsc: 10001 }\n# between\n  - { type: 1, func-id: 4, function: 'f(int)', args: [ 1, 0x2 ], cpu: 1, thread: 111, process: 7, kind: function-enter-arg, tsc: 10301, data: 'it''s' }\n  - type: 0\n    func-id: 2\n    cpu: 0\n    kind: custom-event\n    tsc: 5\n    data: \"a\\x01b\"\n...\n";

    #[test]
    fn reads_flow_and_block_records() {
        assert!(looks_like_yaml_log(SAMPLE));
        let (h, body, w) = open(SAMPLE).unwrap();
        assert_eq!(w.total(), 0);
        assert_eq!(
            (h.version, h.kind, h.cycle_frequency),
            (1, LogKind::Basic, 2601000000)
        );
        let recs: Vec<_> = YamlReader::new(SAMPLE, body)
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1].args, vec![1, 2]);
        assert_eq!(&*recs[1].data, b"it's");
        assert_eq!((recs[1].pid, recs[1].record_type), (7, 1));
        assert_eq!(recs[2].kind, RecordKind::CustomEvent);
        assert_eq!(&*recs[2].data, b"a\x01b");
        let r = runs(SAMPLE, body).unwrap();
        assert_eq!(r.iter().map(|x| x.2).collect::<Vec<_>>(), vec![2, 1]);
        let again: Vec<_> = YamlReader::run(SAMPLE, r[1].0, r[1].1, r[1].2)
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(again, recs[2..]);
    }

    #[test]
    fn bad_records_are_errors_with_lines() {
        let bad = b"---\nheader:\n  version: 1\n  type: 0\n  constant-tsc: true\n  nonstop-tsc: true\n  cycle-frequency: 1\nrecords:\n  - { type: 0, func-id: 1, cpu: 1, kind: function-jump, tsc: 1 }\n";
        let (_, body, _) = open(bad).unwrap();
        let e = YamlReader::new(bad, body).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("9"), "{e}");
        assert!(e.to_string().contains("function-jump"), "{e}");
        let no_freq = b"---\nheader:\n  version: 1\n  type: 0\n  constant-tsc: true\n  nonstop-tsc: true\nrecords:\n";
        assert!(open(no_freq)
            .unwrap_err()
            .to_string()
            .contains("cycle-frequency"));
        for cut in 0..SAMPLE.len() {
            if let Ok((_, body, _)) = open(&SAMPLE[..cut]) {
                for r in YamlReader::new(&SAMPLE[..cut], body) {
                    let _ = r;
                }
            }
        }
    }
}
