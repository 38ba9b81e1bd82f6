//! The PERF format: `|`-separated columns, as git writes them (checked on
//! git 2.47.3 and 2.39.5).
//!
//! ```text
//! 19:34:50.324213 read-cache.c:2383            | d0 | main                     | region_enter | r1  |  0.001151 |           | index        | label:do_read_index .git/index
//! ```
//!
//! A record may span several physical lines (a message or argv element
//! with a newline); [`crate::reader`] joins them before [`parse`] sees the
//! record.

use std::borrow::Cow;

use crate::event::{Body, Event, Kind, Region, Text, Time};
use crate::event_fmt::ParseError;
use crate::quote::{sq_quote, sq_quote_argv, sq_split, sq_unquote};
use crate::time::{Micros, TimeOfDay};

const SEP: &[u8] = b" | ";
const FILE_LINE_WIDTH: usize = 28;
const THREAD_WIDTH: usize = 24;
const EVENT_WIDTH: usize = 12;
const REPO_WIDTH: usize = 3;
const CATEGORY_WIDTH: usize = 12;

/// Does this physical line start a PERF record (rather than continue the
/// previous one)?
pub fn starts_record(line: &[u8], brief: bool) -> bool {
    if brief {
        brief_prefix(line)
    } else {
        line.len() > 16 && TimeOfDay::parse(&line[..15]).is_some() && line[15] == b' '
    }
}

fn brief_prefix(line: &[u8]) -> bool {
    if line.first() != Some(&b'd') {
        return false;
    }
    let digits = line[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && line[1 + digits..].starts_with(SEP)
}

/// Is this first line of a file a brief PERF record?
pub fn is_brief_line(line: &[u8]) -> bool {
    brief_prefix(line)
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(&hay[from..], needle).map(|i| i + from)
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|&&c| c == b' ').count();
    &s[..s.len() - n]
}

fn trim(s: &[u8]) -> &[u8] {
    let s = trim_end(s);
    let n = s.iter().take_while(|&&c| c == b' ').count();
    &s[n..]
}

pub(crate) fn split_file_line(fl: &[u8]) -> (Option<Text<'_>>, Option<i64>) {
    if fl.is_empty() {
        return (None, None);
    }
    match memchr::memrchr(b':', fl) {
        Some(i) => match std::str::from_utf8(&fl[i + 1..])
            .ok()
            .and_then(|s| s.parse().ok())
        {
            Some(n) => (Some(Cow::Borrowed(&fl[..i])), Some(n)),
            None => (Some(Cow::Borrowed(fl)), None),
        },
        None => (Some(Cow::Borrowed(fl)), None),
    }
}

fn int(s: &[u8], what: &str, at: usize) -> Result<i64, ParseError> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            perr(
                at,
                format!(
                    "{what}: expected an integer, found '{}'",
                    String::from_utf8_lossy(s)
                ),
            )
        })
}

fn perr(offset: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        offset,
        message: message.into(),
    }
}

fn secs_col(s: &[u8], at: usize) -> Result<Option<Micros>, ParseError> {
    let t = trim(s);
    if t.is_empty() {
        return Ok(None);
    }
    Micros::parse(t).map(Some).ok_or_else(|| {
        perr(
            at,
            format!("expected seconds, found '{}'", String::from_utf8_lossy(t)),
        )
    })
}

/// Parses one PERF record (continuation lines included, joined by `\n`).
pub fn parse(rec: &[u8], brief: bool) -> Result<Event<'_>, ParseError> {
    let mut ev = Event::new(Body::TooManyFiles);
    let mut pos = 0;
    if !brief {
        ev.time = Some(Time::OfDay(parse_time_prefix(rec)?));
        let end = find(rec, 16, SEP).ok_or_else(|| perr(16, "expected ' | ' after file:line"))?;
        let (file, line) = split_file_line(trim_end(&rec[16..end]));
        ev.file = file;
        ev.line = line;
        pos = end + SEP.len();
    }
    let mut cols: [(usize, &[u8]); 7] = [(0, &[]); 7];
    for col in cols.iter_mut() {
        let end = find(rec, pos, SEP).ok_or_else(|| perr(pos, "too few ' | ' columns"))?;
        *col = (pos, &rec[pos..end]);
        pos = end + SEP.len();
    }
    let payload_at = pos;
    let payload = &rec[pos..];
    let [(d_at, depth), (_, thread), (_, event), (r_at, repo), (a_at, abs), (rl_at, rel), (_, category)] =
        cols;
    // git writes the category with %-12.12s: always exactly 12 bytes.
    if category.len() != CATEGORY_WIDTH {
        return Err(perr(
            cols[6].0,
            format!(
                "the category column is {} bytes wide, not {CATEGORY_WIDTH}",
                category.len()
            ),
        ));
    }
    if depth.first() != Some(&b'd') {
        return Err(perr(d_at, "expected the depth column 'd<N>'"));
    }
    ev.depth = Some(int(&depth[1..], "depth", d_at)? as u32);
    ev.thread = Some(Cow::Borrowed(trim_end(thread)));
    let event = trim_end(event);
    let repo = trim(repo);
    if !repo.is_empty() {
        if repo[0] != b'r' {
            return Err(perr(r_at, "expected the repo column 'r<N>'"));
        }
        ev.repo = Some(int(&repo[1..], "repo", r_at)?);
    }
    let t_abs = secs_col(abs, a_at)?;
    let t_rel = secs_col(rel, rl_at)?;
    let category_raw: Option<&[u8]> = Some(trim_end(category)).filter(|c| !c.is_empty());
    let category: Option<Text<'_>> = category_raw.map(Cow::Borrowed);
    let kind = Kind::from_name(event);
    let dots = payload.iter().take_while(|&&c| c == b'.').count();
    let indent = match kind {
        // Never inside a region, and their payload may start with a dot.
        Kind::Version | Kind::Start | Kind::CmdPath | Kind::CmdAncestry => 0,
        _ => dots / 2,
    };
    ev.indent = Some(indent as u32);
    let p = &payload[indent * 2..];
    let p_at = payload_at + indent * 2;
    let need_rel = |what: &str| t_rel.ok_or_else(|| perr(rl_at, format!("{what} without t_rel")));
    let need_abs = |what: &str| t_abs.ok_or_else(|| perr(a_at, format!("{what} without t_abs")));
    let bad = |what: &str| perr(p_at, format!("{}: {what}", String::from_utf8_lossy(event)));
    ev.body = match kind {
        Kind::Version => Body::Version {
            evt: None,
            exe: Cow::Borrowed(p),
        },
        Kind::Start => Body::Start {
            t_abs,
            argv: sq_split(p).ok_or_else(|| bad("unterminated quote in argv"))?,
        },
        Kind::CmdPath => Body::CmdPath {
            path: Cow::Borrowed(p),
        },
        Kind::CmdAncestry => {
            let inner = p
                .strip_prefix(b"ancestry:[")
                .and_then(|r| r.strip_suffix(b"]"))
                .ok_or_else(|| bad("expected 'ancestry:[...]'"))?;
            Body::CmdAncestry {
                ancestry: sq_split(inner).ok_or_else(|| bad("unterminated quote"))?,
            }
        }
        Kind::CmdName => match memchr::memmem::rfind(p, b" (") {
            Some(i) if p.ends_with(b")") => Body::CmdName {
                name: Cow::Borrowed(&p[..i]),
                hierarchy: Some(Cow::Borrowed(&p[i + 2..p.len() - 1])),
            },
            _ => Body::CmdName {
                name: Cow::Borrowed(p),
                hierarchy: None,
            },
        },
        Kind::CmdMode => Body::CmdMode {
            name: Cow::Borrowed(p),
        },
        Kind::Alias => {
            let rest = p
                .strip_prefix(b"alias:")
                .ok_or_else(|| bad("expected 'alias:'"))?;
            let i =
                memchr::memmem::find(rest, b" argv:[").ok_or_else(|| bad("expected ' argv:['"))?;
            let argv = rest[i + 7..]
                .strip_suffix(b"]")
                .ok_or_else(|| bad("expected ']'"))?;
            Body::Alias {
                alias: Cow::Borrowed(&rest[..i]),
                argv: sq_split(argv).ok_or_else(|| bad("unterminated quote"))?,
            }
        }
        Kind::ChildStart => {
            let (child_id, mut rest) = child_id(p).ok_or_else(|| bad("expected '[ch<N>] '"))?;
            let mut child_class = None;
            let mut hook_name = None;
            let mut cd = None;
            if let Some(r) = rest.strip_prefix(b"class:") {
                let e = memchr::memchr(b' ', r).unwrap_or(r.len());
                child_class = Some(Cow::Borrowed(&r[..e]));
                rest = r.get(e + 1..).unwrap_or_default();
            }
            if let Some(r) = rest.strip_prefix(b"hook:") {
                let e = memchr::memchr(b' ', r).unwrap_or(r.len());
                hook_name = Some(Cow::Borrowed(&r[..e]));
                rest = r.get(e + 1..).unwrap_or_default();
            }
            if let Some(r) = rest.strip_prefix(b"cd:") {
                let e = quoted_word_end(r);
                cd = Some(sq_unquote(&r[..e]).ok_or_else(|| bad("bad cd: path"))?);
                rest = r.get(e + 1..).unwrap_or_default();
            }
            let argv = rest
                .strip_prefix(b"argv:[")
                .and_then(|r| r.strip_suffix(b"]"))
                .ok_or_else(|| bad("expected 'argv:[...]'"))?;
            Body::ChildStart {
                t_abs,
                child_id,
                child_class,
                hook_name,
                cd,
                use_shell: None,
                argv: sq_split(argv).ok_or_else(|| bad("unterminated quote"))?,
            }
        }
        Kind::ChildExit | Kind::ChildReady => {
            let (child_id, rest) = child_id(p).ok_or_else(|| bad("expected '[ch<N>] '"))?;
            let mut words = rest.splitn(2, |&c| c == b' ');
            let pid = words
                .next()
                .and_then(|w| w.strip_prefix(b"pid:"))
                .ok_or_else(|| bad("expected 'pid:'"))?;
            let pid = int(pid, "pid", p_at)?;
            let second = words.next().unwrap_or_default();
            if kind == Kind::ChildExit {
                let code = second
                    .strip_prefix(b"code:")
                    .ok_or_else(|| bad("expected 'code:'"))?;
                Body::ChildExit {
                    t_abs,
                    child_id,
                    pid,
                    code: int(code, "code", p_at)?,
                    t_rel: need_rel("child_exit")?,
                }
            } else {
                let ready = second
                    .strip_prefix(b"ready:")
                    .ok_or_else(|| bad("expected 'ready:'"))?;
                Body::ChildReady {
                    t_abs,
                    child_id,
                    pid,
                    ready: Cow::Borrowed(ready),
                    t_rel: need_rel("child_ready")?,
                }
            }
        }
        Kind::ThreadStart => Body::ThreadStart { t_abs },
        Kind::ThreadExit => Body::ThreadExit {
            t_abs,
            t_rel: need_rel("thread_exit")?,
        },
        Kind::Exec => {
            let rest = p
                .strip_prefix(b"id:")
                .ok_or_else(|| bad("expected 'id:'"))?;
            let sp = memchr::memchr(b' ', rest).ok_or_else(|| bad("expected 'argv:['"))?;
            let exec_id = int(&rest[..sp], "id", p_at)?;
            let inner = rest[sp + 1..]
                .strip_prefix(b"argv:[")
                .and_then(|r| r.strip_suffix(b"]"))
                .ok_or_else(|| bad("expected 'argv:[...]'"))?;
            // git writes the executable unquoted, then the quoted argv.
            let (exe, argv) = match memchr::memchr(b' ', inner) {
                Some(i) => (&inner[..i], &inner[i + 1..]),
                None => (inner, &b""[..]),
            };
            Body::Exec {
                t_abs,
                exec_id,
                exe: Some(Cow::Borrowed(exe)),
                argv: sq_split(argv).ok_or_else(|| bad("unterminated quote"))?,
            }
        }
        Kind::ExecResult => {
            let rest = p
                .strip_prefix(b"id:")
                .ok_or_else(|| bad("expected 'id:'"))?;
            let mut words = rest.splitn(3, |&c| c == b' ');
            let exec_id = int(words.next().unwrap_or_default(), "id", p_at)?;
            let code = words
                .next()
                .and_then(|w| w.strip_prefix(b"code:"))
                .ok_or_else(|| bad("expected 'code:'"))?;
            Body::ExecResult {
                t_abs,
                exec_id,
                code: int(code, "code", p_at)?,
            }
        }
        Kind::DefParam => {
            let i = memchr::memchr(b':', p).ok_or_else(|| bad("expected 'param:value'"))?;
            Body::DefParam {
                scope: category_raw.map(|c| Cow::Borrowed(c.strip_prefix(b"scope:").unwrap_or(c))),
                param: Cow::Borrowed(&p[..i]),
                value: Some(Cow::Borrowed(&p[i + 1..])),
            }
        }
        Kind::DefRepo => {
            let w = p
                .strip_prefix(b"worktree:")
                .ok_or_else(|| bad("expected 'worktree:'"))?;
            Body::DefRepo {
                worktree: sq_unquote(w).ok_or_else(|| bad("bad worktree path"))?,
            }
        }
        Kind::RegionEnter | Kind::RegionLeave => {
            let (label, msg) = if let Some(r) = p.strip_prefix(b"label:") {
                match memchr::memchr(b' ', r) {
                    Some(i) => (
                        Some(Cow::Borrowed(&r[..i])),
                        Some(Cow::Borrowed(&r[i + 1..])),
                    ),
                    None => (Some(Cow::Borrowed(r)), None),
                }
            } else if let Some(r) = p.strip_prefix(b" ") {
                (None, Some(Cow::Borrowed(r)))
            } else if p.is_empty() {
                (None, None)
            } else {
                return Err(bad("expected 'label:' or ' <msg>'"));
            };
            let region = Region {
                t_abs,
                nesting: indent as i64 + 1,
                category,
                label,
                msg,
            };
            if kind == Kind::RegionEnter {
                Body::RegionEnter(region)
            } else {
                Body::RegionLeave {
                    region,
                    t_rel: need_rel("region_leave")?,
                }
            }
        }
        Kind::Data | Kind::DataJson => {
            let i = memchr::memchr(b':', p).ok_or_else(|| bad("expected 'key:value'"))?;
            let (key, value) = (Cow::Borrowed(&p[..i]), Cow::Borrowed(&p[i + 1..]));
            let (t_abs, t_rel) = (need_abs("data")?, need_rel("data")?);
            let nesting = indent as i64 + 1;
            if kind == Kind::Data {
                Body::Data {
                    t_abs,
                    t_rel,
                    nesting,
                    category,
                    key,
                    value,
                }
            } else {
                Body::DataJson {
                    t_abs,
                    t_rel,
                    nesting,
                    category,
                    key,
                    value,
                }
            }
        }
        Kind::Printf => Body::Printf {
            t_abs,
            msg: Some(Cow::Borrowed(p)),
        },
        Kind::Error => Body::Error {
            msg: Some(Cow::Borrowed(p)),
            fmt: None,
        },
        Kind::Exit | Kind::AtExit => {
            let code = int(
                p.strip_prefix(b"code:")
                    .ok_or_else(|| bad("expected 'code:'"))?,
                "code",
                p_at,
            )?;
            let t_abs = need_abs(if kind == Kind::Exit { "exit" } else { "atexit" })?;
            if kind == Kind::Exit {
                Body::Exit { t_abs, code }
            } else {
                Body::AtExit { t_abs, code }
            }
        }
        Kind::Signal => Body::Signal {
            t_abs: need_abs("signal")?,
            signo: int(
                p.strip_prefix(b"signo:")
                    .ok_or_else(|| bad("expected 'signo:'"))?,
                "signo",
                p_at,
            )?,
        },
        Kind::Timer | Kind::ThTimer => {
            let f = fields(p);
            let get = |k: &str| f.iter().find(|(n, _)| *n == k.as_bytes()).map(|(_, v)| *v);
            let secs = |k: &str| {
                get(k)
                    .and_then(|v| Micros::parse(trim(v)))
                    .ok_or_else(|| bad(&format!("expected '{k}:<seconds>'")))
            };
            Body::Timer {
                per_thread: kind == Kind::ThTimer,
                category: category.clone().unwrap_or_default(),
                name: Cow::Borrowed(get("name").ok_or_else(|| bad("expected 'name:'"))?),
                intervals: int(
                    get("intervals").ok_or_else(|| bad("expected 'intervals:'"))?,
                    "intervals",
                    p_at,
                )?,
                t_total: secs("total")?,
                t_min: secs("min")?,
                t_max: secs("max")?,
            }
        }
        Kind::Counter | Kind::ThCounter => {
            let f = fields(p);
            let get = |k: &str| f.iter().find(|(n, _)| *n == k.as_bytes()).map(|(_, v)| *v);
            Body::Counter {
                per_thread: kind == Kind::ThCounter,
                category: category.clone().unwrap_or_default(),
                name: Cow::Borrowed(get("name").ok_or_else(|| bad("expected 'name:'"))?),
                count: int(
                    get("value").ok_or_else(|| bad("expected 'value:'"))?,
                    "value",
                    p_at,
                )?,
            }
        }
        Kind::TooManyFiles | Kind::Unknown => Body::Unknown {
            event: Cow::Borrowed(event),
            payload: Some(Cow::Borrowed(p)),
        },
    };
    // Columns the body has no field for must survive a rewrite.
    if let Body::Unknown { .. } = ev.body {
        stash_unknown_columns(&mut ev, t_abs, t_rel, category_raw.map(Cow::Borrowed));
    }
    Ok(ev)
}

/// For an unknown event the t_abs/t_rel/category columns are kept in
/// `extra` (as EVENT would name them) so a rewrite keeps them.
fn stash_unknown_columns<'a>(
    ev: &mut Event<'a>,
    t_abs: Option<Micros>,
    t_rel: Option<Micros>,
    category: Option<Text<'a>>,
) {
    if let Some(t) = t_abs {
        let mut v = Vec::new();
        t.write(&mut v);
        ev.extra.push((Cow::Borrowed(b"t_abs"), Cow::Owned(v)));
    }
    if let Some(t) = t_rel {
        let mut v = Vec::new();
        t.write(&mut v);
        ev.extra.push((Cow::Borrowed(b"t_rel"), Cow::Owned(v)));
    }
    if let Some(c) = category {
        let mut v = Vec::new();
        crate::event_fmt::write_json_string(&mut v, &c);
        ev.extra.push((Cow::Borrowed(b"category"), Cow::Owned(v)));
    }
}

fn extra_secs(ev: &Event<'_>, key: &[u8]) -> Option<Micros> {
    ev.extra
        .iter()
        .find(|(k, _)| &**k == key)
        .and_then(|(_, v)| Micros::parse(v))
}

fn extra_category(ev: &Event<'_>) -> Option<Vec<u8>> {
    let (_, v) = ev.extra.iter().find(|(k, _)| &**k == b"category")?;
    crate::event_fmt::decode_json_string(v).map(|c| c.into_owned())
}

/// `name:x intervals:1 total:...` → pairs (values up to the next ` word:`).
fn fields(p: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    for word in p.split(|&c| c == b' ') {
        if let Some(i) = memchr::memchr(b':', word) {
            out.push((&word[..i], &word[i + 1..]));
        }
    }
    out
}

fn child_id(p: &[u8]) -> Option<(i64, &[u8])> {
    let r = p.strip_prefix(b"[ch")?;
    let close = memchr::memchr(b']', r)?;
    let id = std::str::from_utf8(&r[..close]).ok()?.parse().ok()?;
    let rest = r[close + 1..].strip_prefix(b" ").unwrap_or(&r[close + 1..]);
    Some((id, rest))
}

/// The end of one git-quoted word (quotes may contain spaces).
fn quoted_word_end(s: &[u8]) -> usize {
    let mut i = 0;
    while i < s.len() && s[i] != b' ' {
        match s[i] {
            b'\'' => match memchr::memchr(b'\'', &s[i + 1..]) {
                Some(n) => i += n + 2,
                None => return s.len(),
            },
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    i.min(s.len())
}

/// Options for writing PERF.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfOptions {
    /// `GIT_TRACE2_PERF_BRIEF`: no time, no file:line.
    pub brief: bool,
}

/// What a converter knows that the event itself may not carry. Every
/// field is used only where the event lacks the value (`time` and
/// `location` replace the event's own).
#[derive(Debug, Default, Clone, Copy)]
pub struct Context<'c> {
    /// Regions open on the event's thread (PERF's dots), when the event
    /// has no [`Event::indent`].
    pub indent: u32,
    /// Process depth, when the event has neither `depth` nor a SID.
    pub depth: u32,
    /// Local time of day to write instead of the event's.
    pub time: Option<TimeOfDay>,
    /// Seconds since process start, for events whose PERF line shows
    /// t_abs but whose record has none (EVENT regions, children, exec).
    pub t_abs: Option<Micros>,
    /// Source location to write instead of the event's (events a target
    /// emits itself carry that target's location).
    pub location: Option<(&'c [u8], i64)>,
}

/// The `HH:MM:SS.uuuuuu ` prefix NORMAL and PERF records start with.
pub(crate) fn parse_time_prefix(rec: &[u8]) -> Result<TimeOfDay, ParseError> {
    if rec.len() < 16 || rec[15] != b' ' {
        return Err(perr(0, "expected a 'HH:MM:SS.uuuuuu ' time of day"));
    }
    TimeOfDay::parse(&rec[..15]).ok_or_else(|| perr(0, "expected a 'HH:MM:SS.uuuuuu' time of day"))
}

/// Writes the time of day and a space: the converter's, else the event's.
/// An event with neither (only brief or foreign input can lack it, and the
/// converter derives one where it can) gets midnight, the format's zero.
pub(crate) fn write_time_prefix(ev: &Event<'_>, ctx: &Context<'_>, out: &mut Vec<u8>) {
    let time = ctx.time.or(match &ev.time {
        Some(Time::OfDay(t)) => Some(*t),
        _ => None,
    });
    time.unwrap_or(TimeOfDay(0)).write(out);
    out.push(b' ');
}

/// The source location to write: the converter's, else the event's.
pub(crate) fn location<'c>(
    ev: &'c Event<'_>,
    ctx: &Context<'c>,
) -> (Option<&'c [u8]>, Option<i64>) {
    match ctx.location {
        Some((f, l)) => (Some(f), Some(l)),
        None => (ev.file.as_deref(), ev.line),
    }
}

/// Does PERF show t_abs for this kind of event?
pub fn shows_t_abs(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Start
            | Kind::ChildStart
            | Kind::ChildExit
            | Kind::ChildReady
            | Kind::ThreadStart
            | Kind::ThreadExit
            | Kind::Exec
            | Kind::ExecResult
            | Kind::RegionEnter
            | Kind::RegionLeave
            | Kind::Data
            | Kind::DataJson
            | Kind::Printf
            | Kind::Exit
            | Kind::AtExit
            | Kind::Signal
    )
}

/// Writes one PERF record, newline included.
pub fn write(ev: &Event<'_>, ctx: &Context<'_>, opts: PerfOptions, out: &mut Vec<u8>) {
    let kind = ev.kind();
    if kind == Kind::TooManyFiles {
        return; // PERF never writes it.
    }
    if !opts.brief {
        write_time_prefix(ev, ctx, out);
        let col_end = out.len() + FILE_LINE_WIDTH;
        let (file, line) = location(ev, ctx);
        if let Some(file) = file.filter(|f| !f.is_empty()) {
            let mut num = itoa::Buffer::new();
            let line = num.format(line.unwrap_or(0)).as_bytes();
            let len = file.len() + 1 + line.len();
            if len <= FILE_LINE_WIDTH {
                out.extend_from_slice(file);
                out.push(b':');
                out.extend_from_slice(line);
            } else {
                // Keep the last 25 bytes of "file:line" behind "...".
                let keep = FILE_LINE_WIDTH - 3;
                out.extend_from_slice(b"...");
                if line.len() + 1 >= keep {
                    let tail = [b":".as_slice(), line].concat();
                    out.extend_from_slice(&tail[tail.len() - keep..]);
                } else {
                    out.extend_from_slice(&file[file.len() - (keep - 1 - line.len())..]);
                    out.push(b':');
                    out.extend_from_slice(line);
                }
            }
        }
        while out.len() < col_end {
            out.push(b' ');
        }
        out.extend_from_slice(SEP);
    }
    let mut num = itoa::Buffer::new();
    out.push(b'd');
    out.extend_from_slice(num.format(ev.depth.unwrap_or(ctx.depth)).as_bytes());
    out.extend_from_slice(SEP);
    pad(out, ev.thread.as_deref().unwrap_or(b"main"), THREAD_WIDTH);
    out.extend_from_slice(SEP);
    pad(out, ev.body.name(), EVENT_WIDTH);
    out.extend_from_slice(SEP);
    let repo_end = out.len() + REPO_WIDTH;
    if let Some(r) = ev.repo {
        out.push(b'r');
        out.extend_from_slice(num.format(r).as_bytes());
        out.push(b' ');
    }
    while out.len() < repo_end {
        out.push(b' ');
    }
    out.extend_from_slice(SEP);

    let (t_abs, t_rel) = columns(ev);
    let t_abs = t_abs.or(if shows_t_abs(kind) { ctx.t_abs } else { None });
    for t in [t_abs, t_rel] {
        match t {
            Some(t) => t.write_width(9, out),
            None => out.extend_from_slice(b"         "),
        }
        out.extend_from_slice(SEP);
    }
    let category: Option<Cow<'_, [u8]>> = match &ev.body {
        // git < 2.38 has no scope: the category column stays blank.
        Body::DefParam { scope, .. } => scope.as_deref().map(|scope| {
            let mut c = b"scope:".to_vec();
            c.extend_from_slice(scope);
            Cow::Owned(c)
        }),
        Body::RegionEnter(r) | Body::RegionLeave { region: r, .. } => {
            r.category.as_deref().map(Cow::Borrowed)
        }
        Body::Data { category, .. } | Body::DataJson { category, .. } => {
            category.as_deref().map(Cow::Borrowed)
        }
        Body::Timer { category, .. } | Body::Counter { category, .. } => {
            Some(Cow::Borrowed(&**category))
        }
        Body::Unknown { .. } => extra_category(ev).map(Cow::Owned),
        _ => None,
    };
    let c = category.as_deref().unwrap_or_default();
    let c = &c[..c.len().min(CATEGORY_WIDTH)];
    pad(out, c, CATEGORY_WIDTH);
    out.extend_from_slice(SEP);

    let indent = ev.indent.unwrap_or(match &ev.body {
        Body::RegionEnter(r) | Body::RegionLeave { region: r, .. } => (r.nesting - 1).max(0) as u32,
        Body::Data { nesting, .. } | Body::DataJson { nesting, .. } => (*nesting - 1).max(0) as u32,
        _ => ctx.indent,
    });
    for _ in 0..indent * 2 {
        out.push(b'.');
    }
    payload(ev, out);
    out.push(b'\n');
}

/// The t_abs and t_rel columns of an event.
fn columns(ev: &Event<'_>) -> (Option<Micros>, Option<Micros>) {
    match &ev.body {
        Body::ChildExit { t_abs, t_rel, .. }
        | Body::ChildReady { t_abs, t_rel, .. }
        | Body::ThreadExit { t_abs, t_rel } => (*t_abs, Some(*t_rel)),
        Body::RegionLeave { region, t_rel } => (region.t_abs, Some(*t_rel)),
        Body::Data { t_abs, t_rel, .. } | Body::DataJson { t_abs, t_rel, .. } => {
            (Some(*t_abs), Some(*t_rel))
        }
        Body::Unknown { .. } => (extra_secs(ev, b"t_abs"), extra_secs(ev, b"t_rel")),
        b => (b.t_abs(), None),
    }
}

fn pad(out: &mut Vec<u8>, s: &[u8], width: usize) {
    out.extend_from_slice(s);
    for _ in s.len()..width {
        out.push(b' ');
    }
}

fn payload(ev: &Event<'_>, out: &mut Vec<u8>) {
    match &ev.body {
        Body::Version { exe, .. } => out.extend_from_slice(exe),
        Body::TooManyFiles => {}
        Body::Start { argv, .. } => sq_quote_argv(out, argv),
        Body::CmdPath { path } => out.extend_from_slice(path),
        Body::CmdAncestry { ancestry } => {
            out.extend_from_slice(b"ancestry:[");
            sq_quote_argv(out, ancestry);
            out.push(b']');
        }
        Body::CmdName { name, hierarchy } => {
            out.extend_from_slice(name);
            if let Some(h) = hierarchy {
                out.extend_from_slice(b" (");
                out.extend_from_slice(h);
                out.push(b')');
            }
        }
        Body::CmdMode { name } => out.extend_from_slice(name),
        Body::Alias { alias, argv } => {
            out.extend_from_slice(b"alias:");
            out.extend_from_slice(alias);
            out.extend_from_slice(b" argv:[");
            sq_quote_argv(out, argv);
            out.push(b']');
        }
        Body::ChildStart {
            child_id,
            child_class,
            hook_name,
            cd,
            argv,
            ..
        } => {
            out.extend_from_slice(format!("[ch{child_id}] class:").as_bytes());
            out.extend_from_slice(child_class.as_deref().unwrap_or(b"?"));
            if let Some(h) = hook_name {
                out.extend_from_slice(b" hook:");
                out.extend_from_slice(h);
            }
            if let Some(cd) = cd {
                out.extend_from_slice(b" cd:");
                sq_quote(out, cd);
            }
            out.extend_from_slice(b" argv:[");
            sq_quote_argv(out, argv);
            out.push(b']');
        }
        Body::ChildExit {
            child_id,
            pid,
            code,
            ..
        } => out.extend_from_slice(format!("[ch{child_id}] pid:{pid} code:{code}").as_bytes()),
        Body::ChildReady {
            child_id,
            pid,
            ready,
            ..
        } => {
            out.extend_from_slice(format!("[ch{child_id}] pid:{pid} ready:").as_bytes());
            out.extend_from_slice(ready);
        }
        Body::ThreadStart { .. } | Body::ThreadExit { .. } => {}
        Body::Exec {
            exec_id, exe, argv, ..
        } => {
            out.extend_from_slice(format!("id:{exec_id} argv:[").as_bytes());
            if let Some(exe) = exe {
                out.extend_from_slice(exe);
                if !argv.is_empty() {
                    out.push(b' ');
                }
            }
            sq_quote_argv(out, argv);
            out.push(b']');
        }
        Body::ExecResult { exec_id, code, .. } => {
            out.extend_from_slice(format!("id:{exec_id} code:{code}").as_bytes());
            if *code > 0 {
                out.extend_from_slice(b" err:");
                out.extend_from_slice(strerror(*code).as_bytes());
            }
        }
        Body::DefParam { param, value, .. } => {
            out.extend_from_slice(param);
            out.push(b':');
            if let Some(v) = value {
                out.extend_from_slice(v);
            }
        }
        Body::DefRepo { worktree } => {
            out.extend_from_slice(b"worktree:");
            sq_quote(out, worktree);
        }
        Body::RegionEnter(r) | Body::RegionLeave { region: r, .. } => {
            if let Some(l) = &r.label {
                out.extend_from_slice(b"label:");
                out.extend_from_slice(l);
            }
            if let Some(m) = &r.msg {
                out.push(b' ');
                out.extend_from_slice(m);
            }
        }
        Body::Data { key, value, .. } | Body::DataJson { key, value, .. } => {
            out.extend_from_slice(key);
            out.push(b':');
            out.extend_from_slice(value);
        }
        Body::Printf { msg, .. } | Body::Error { msg, .. } => {
            if let Some(m) = msg {
                out.extend_from_slice(m);
            }
        }
        Body::Exit { code, .. } | Body::AtExit { code, .. } => {
            out.extend_from_slice(format!("code:{code}").as_bytes())
        }
        Body::Signal { signo, .. } => out.extend_from_slice(format!("signo:{signo}").as_bytes()),
        Body::Timer {
            name,
            intervals,
            t_total,
            t_min,
            t_max,
            ..
        } => {
            out.extend_from_slice(b"name:");
            out.extend_from_slice(name);
            out.extend_from_slice(format!(" intervals:{intervals} total:").as_bytes());
            t_total.write_width(8, out);
            out.extend_from_slice(b" min:");
            t_min.write_width(8, out);
            out.extend_from_slice(b" max:");
            t_max.write_width(8, out);
        }
        Body::Counter { name, count, .. } => {
            out.extend_from_slice(b"name:");
            out.extend_from_slice(name);
            out.extend_from_slice(format!(" value:{count}").as_bytes());
        }
        Body::Unknown { payload, .. } => {
            if let Some(p) = payload {
                out.extend_from_slice(p);
            }
        }
    }
}

/// The C library's message for an errno value, as git's `strerror`.
pub(crate) fn strerror(code: i64) -> String {
    std::io::Error::from_raw_os_error(code as i32)
        .to_string()
        .split(" (os error")
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_event_with_escapes_in_its_category_is_stable() {
        // Found by fuzzing: the category of an unknown event was escaped
        // twice on a rewrite.
        let line = b"d1 | main                     | new_event    |     |           |           | a\\u0000\"b    | payload";
        let ev = parse(line, true).unwrap();
        let mut out = Vec::new();
        write(
            &ev,
            &Context::default(),
            PerfOptions { brief: true },
            &mut out,
        );
        assert_eq!(&out[..out.len() - 1], &line[..]);
    }
}
