//! The NORMAL format: `<time> <file>:<line>` padded to column 50, then a
//! message whose first word names the event.
//!
//! NORMAL drops regions, data and thread events, and has no SID, so lines
//! of concurrent processes cannot be told apart; use EVENT for analysis.

use std::borrow::Cow;

use crate::event::{Body, Event, Kind, Text, Time};
use crate::event_fmt::ParseError;
use crate::perf::split_file_line;
use crate::quote::{sq_quote, sq_quote_argv, sq_split, sq_unquote};
use crate::time::{Micros, TimeOfDay};

/// The column where the message starts (the time is counted in it).
const MESSAGE_COLUMN: usize = 50;

/// Event keywords that begin a message (used to find records in brief
/// mode, where there is no time prefix).
const KEYWORDS: &[&[u8]] = &[
    b"version ",
    b"start ",
    b"exit ",
    b"atexit ",
    b"signal ",
    b"error",
    b"cmd_path ",
    b"cmd_ancestry ",
    b"cmd_name ",
    b"cmd_mode ",
    b"alias ",
    b"child_start[",
    b"child_exit[",
    b"child_ready[",
    b"exec[",
    b"exec_result[",
    b"def_param ",
    b"worktree ",
    b"timer ",
    b"th_timer ",
    b"counter ",
    b"th_counter ",
];

/// Does this physical line start a NORMAL record?
pub fn starts_record(line: &[u8], brief: bool) -> bool {
    if brief {
        KEYWORDS.iter().any(|k| line.starts_with(k))
    } else {
        line.len() >= 16 && line[15] == b' ' && TimeOfDay::parse(&line[..15]).is_some()
    }
}

fn perr(offset: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        offset,
        message: message.into(),
    }
}

fn int(s: &[u8]) -> Option<i64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// `key:value` words → the value of `key`.
fn word<'a>(s: &'a [u8], key: &str) -> Option<&'a [u8]> {
    s.split(|&c| c == b' ').find_map(|w| {
        w.strip_prefix(key.as_bytes())
            .and_then(|r| r.strip_prefix(b":"))
    })
}

fn bracket_id(s: &[u8]) -> Option<(i64, &[u8])> {
    let r = s.strip_prefix(b"[")?;
    let close = memchr::memchr(b']', r)?;
    Some((int(&r[..close])?, &r[close + 1..]))
}

/// Parses one NORMAL record (continuation lines joined by `\n`).
pub fn parse(rec: &[u8], brief: bool) -> Result<Event<'_>, ParseError> {
    let mut ev = Event::new(Body::TooManyFiles);
    let mut at = 0;
    if !brief {
        ev.time = Some(Time::OfDay(crate::perf::parse_time_prefix(rec)?));
        let mut fl_end = 16;
        if rec.get(16).is_some_and(|&c| c != b' ') {
            fl_end = 16
                + memchr::memchr(b' ', &rec[16..])
                    .ok_or_else(|| perr(16, "expected a message after file:line"))?;
            let (file, line) = split_file_line(&rec[16..fl_end]);
            ev.file = file;
            ev.line = line;
            fl_end += 1;
        }
        at = fl_end.max(MESSAGE_COLUMN).min(rec.len());
        if rec[fl_end.min(rec.len())..at].iter().any(|&c| c != b' ') {
            return Err(perr(fl_end, "expected spaces up to column 50"));
        }
    }
    let m = &rec[at..];
    let sp = memchr::memchr(b' ', m).unwrap_or(m.len());
    let (first, rest) = (&m[..sp], m.get(sp + 1..).unwrap_or_default());
    let bad = |what: &str| perr(at, format!("{}: {what}", String::from_utf8_lossy(first)));
    let elapsed = |r: &[u8]| -> Result<(Micros, i64), ParseError> {
        let e = word(r, "elapsed")
            .and_then(Micros::parse)
            .ok_or_else(|| bad("expected 'elapsed:'"))?;
        let c = word(r, "code")
            .and_then(int)
            .ok_or_else(|| bad("expected 'code:'"))?;
        Ok((e, c))
    };
    // Events with an id in brackets glue it to the keyword.
    let bracketed = |kw: &[u8]| -> Option<(i64, &[u8])> { bracket_id(m.strip_prefix(kw)?) };
    ev.body = match first {
        b"version" => Body::Version {
            evt: None,
            exe: Cow::Borrowed(rest),
        },
        b"start" => Body::Start {
            t_abs: None,
            argv: sq_split(rest).ok_or_else(|| bad("unterminated quote"))?,
        },
        b"exit" => {
            let (t_abs, code) = elapsed(rest)?;
            Body::Exit { t_abs, code }
        }
        b"atexit" => {
            let (t_abs, code) = elapsed(rest)?;
            Body::AtExit { t_abs, code }
        }
        b"signal" => {
            let (t_abs, signo) = elapsed(rest)?;
            Body::Signal { t_abs, signo }
        }
        b"error" => Body::Error {
            msg: (sp < m.len()).then_some(Cow::Borrowed(rest)),
            fmt: None,
        },
        b"cmd_path" => Body::CmdPath {
            path: Cow::Borrowed(rest),
        },
        b"cmd_ancestry" => Body::CmdAncestry {
            ancestry: if rest.is_empty() {
                Vec::new()
            } else {
                split_on(rest, b" <- ")
                    .into_iter()
                    .map(Cow::Borrowed)
                    .collect()
            },
        },
        b"cmd_name" => match memchr::memmem::rfind(rest, b" (") {
            Some(i) if rest.ends_with(b")") => Body::CmdName {
                name: Cow::Borrowed(&rest[..i]),
                hierarchy: Some(Cow::Borrowed(&rest[i + 2..rest.len() - 1])),
            },
            _ => Body::CmdName {
                name: Cow::Borrowed(rest),
                hierarchy: None,
            },
        },
        b"cmd_mode" => Body::CmdMode {
            name: Cow::Borrowed(rest),
        },
        b"alias" => {
            let i = memchr::memmem::find(rest, b" -> ").ok_or_else(|| bad("expected ' -> '"))?;
            Body::Alias {
                alias: Cow::Borrowed(&rest[..i]),
                argv: sq_split(&rest[i + 4..]).ok_or_else(|| bad("unterminated quote"))?,
            }
        }
        b"def_param" => {
            // git < 2.38 writes no scope: `def_param param=value`.
            let (scope, pv) = match rest.strip_prefix(b"scope:") {
                Some(r) => {
                    let s = memchr::memchr(b' ', r).ok_or_else(|| bad("expected 'param=value'"))?;
                    (Some(Cow::Borrowed(&r[..s])), &r[s + 1..])
                }
                None => (None, rest),
            };
            let e = memchr::memchr(b'=', pv).ok_or_else(|| bad("expected 'param=value'"))?;
            Body::DefParam {
                scope,
                param: Cow::Borrowed(&pv[..e]),
                value: Some(Cow::Borrowed(&pv[e + 1..])),
            }
        }
        b"worktree" => Body::DefRepo {
            worktree: sq_unquote(rest).ok_or_else(|| bad("bad path"))?,
        },
        b"timer" | b"th_timer" => {
            let sp2 = memchr::memchr(b' ', rest).unwrap_or(rest.len());
            let (category, name) = split_slash(&rest[..sp2]);
            let r = &rest[sp2..];
            let secs = |k: &str| -> Result<Micros, ParseError> {
                // `total:%8.6f` may pad with spaces after the colon.
                let i = memchr::memmem::find(r, format!("{k}:").as_bytes())
                    .ok_or_else(|| bad(&format!("expected '{k}:'")))?;
                let v = r[i + k.len() + 1..]
                    .split(|&c| c == b' ')
                    .find(|w| !w.is_empty())
                    .unwrap_or_default();
                Micros::parse(v).ok_or_else(|| bad(&format!("expected '{k}:<seconds>'")))
            };
            Body::Timer {
                per_thread: first == b"th_timer",
                category,
                name,
                intervals: word(r, "intervals")
                    .and_then(int)
                    .ok_or_else(|| bad("expected 'intervals:'"))?,
                t_total: secs("total")?,
                t_min: secs("min")?,
                t_max: secs("max")?,
            }
        }
        b"counter" | b"th_counter" => {
            let sp2 = memchr::memchr(b' ', rest).unwrap_or(rest.len());
            let (category, name) = split_slash(&rest[..sp2]);
            Body::Counter {
                per_thread: first == b"th_counter",
                category,
                name,
                count: word(&rest[sp2..], "value")
                    .and_then(int)
                    .ok_or_else(|| bad("expected 'value:'"))?,
            }
        }
        _ => {
            if let Some((child_id, r)) = bracketed(b"child_start") {
                let mut r = r;
                let mut cd = None;
                if let Some(c) = r.strip_prefix(b" cd ") {
                    let e = memchr::memchr(b';', c).ok_or_else(|| bad("expected ';' after cd"))?;
                    cd = Some(sq_unquote(&c[..e]).ok_or_else(|| bad("bad cd path"))?);
                    r = &c[e + 1..];
                }
                let r = r.strip_prefix(b" ").ok_or_else(|| bad("expected argv"))?;
                Body::ChildStart {
                    t_abs: None,
                    child_id,
                    child_class: None,
                    hook_name: None,
                    cd,
                    use_shell: None,
                    argv: sq_split(r).ok_or_else(|| bad("unterminated quote"))?,
                }
            } else if let Some((child_id, r)) = bracketed(b"child_exit") {
                let (t_rel, code) = elapsed(r)?;
                Body::ChildExit {
                    t_abs: None,
                    child_id,
                    pid: word(r, "pid")
                        .and_then(int)
                        .ok_or_else(|| bad("expected 'pid:'"))?,
                    code,
                    t_rel,
                }
            } else if let Some((child_id, r)) = bracketed(b"child_ready") {
                Body::ChildReady {
                    t_abs: None,
                    child_id,
                    pid: word(r, "pid")
                        .and_then(int)
                        .ok_or_else(|| bad("expected 'pid:'"))?,
                    ready: Cow::Borrowed(word(r, "ready").ok_or_else(|| bad("expected 'ready:'"))?),
                    t_rel: word(r, "elapsed")
                        .and_then(Micros::parse)
                        .ok_or_else(|| bad("expected 'elapsed:'"))?,
                }
            } else if let Some((exec_id, r)) = bracketed(b"exec_result") {
                Body::ExecResult {
                    t_abs: None,
                    exec_id,
                    code: word(r, "code")
                        .and_then(int)
                        .ok_or_else(|| bad("expected 'code:'"))?,
                }
            } else if let Some((exec_id, r)) = bracketed(b"exec") {
                let r = r.strip_prefix(b" ").unwrap_or(r);
                let (exe, argv) = match memchr::memchr(b' ', r) {
                    Some(i) => (&r[..i], &r[i + 1..]),
                    None => (r, &b""[..]),
                };
                Body::Exec {
                    t_abs: None,
                    exec_id,
                    exe: Some(Cow::Borrowed(exe)),
                    argv: sq_split(argv).ok_or_else(|| bad("unterminated quote"))?,
                }
            } else {
                // NORMAL writes printf messages with no keyword.
                Body::Printf {
                    t_abs: None,
                    msg: Some(Cow::Borrowed(m)),
                }
            }
        }
    };
    Ok(ev)
}

fn split_on<'a>(s: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in memchr::memmem::find_iter(s, sep) {
        if i >= start {
            out.push(&s[start..i]);
            start = i + sep.len();
        }
    }
    out.push(&s[start..]);
    out
}

fn split_slash(s: &[u8]) -> (Text<'_>, Text<'_>) {
    match memchr::memchr(b'/', s) {
        Some(i) => (Cow::Borrowed(&s[..i]), Cow::Borrowed(&s[i + 1..])),
        None => (Cow::Borrowed(&b""[..]), Cow::Borrowed(s)),
    }
}

/// Does NORMAL write this event at all?
pub fn writes(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::RegionEnter
            | Kind::RegionLeave
            | Kind::Data
            | Kind::DataJson
            | Kind::ThreadStart
            | Kind::ThreadExit
            | Kind::TooManyFiles
    )
}

/// Writes one NORMAL record (newline included), or nothing for events
/// NORMAL does not show. `ctx.time` and `ctx.location` replace the
/// event's own.
pub fn write(ev: &Event<'_>, brief: bool, ctx: &crate::perf::Context<'_>, out: &mut Vec<u8>) {
    if !writes(ev.kind()) {
        return;
    }
    if !brief {
        let start = out.len();
        crate::perf::write_time_prefix(ev, ctx, out);
        let (file, line) = crate::perf::location(ev, ctx);
        if let Some(file) = file.filter(|f| !f.is_empty()) {
            out.extend_from_slice(file);
            out.push(b':');
            out.extend_from_slice(itoa::Buffer::new().format(line.unwrap_or(0)).as_bytes());
            out.push(b' ');
        }
        while out.len() - start < MESSAGE_COLUMN {
            out.push(b' ');
        }
    }
    message(ev, out);
    out.push(b'\n');
}

fn message(ev: &Event<'_>, out: &mut Vec<u8>) {
    let mut add = |s: &[u8]| out.extend_from_slice(s);
    match &ev.body {
        Body::Version { exe, .. } => {
            add(b"version ");
            add(exe);
        }
        Body::Start { argv, .. } => {
            add(b"start ");
            sq_quote_argv(out, argv);
        }
        Body::Exit { t_abs, code } => elapsed_code(out, "exit", *t_abs, *code),
        Body::AtExit { t_abs, code } => elapsed_code(out, "atexit", *t_abs, *code),
        Body::Signal { t_abs, signo } => elapsed_code(out, "signal", *t_abs, *signo),
        Body::Error { msg, .. } => {
            add(b"error");
            if let Some(m) = msg {
                out.push(b' ');
                out.extend_from_slice(m);
            }
        }
        Body::CmdPath { path } => {
            add(b"cmd_path ");
            add(path);
        }
        Body::CmdAncestry { ancestry } => {
            add(b"cmd_ancestry ");
            for (i, a) in ancestry.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b" <- ");
                }
                out.extend_from_slice(a);
            }
        }
        Body::CmdName { name, hierarchy } => {
            add(b"cmd_name ");
            add(name);
            if let Some(h) = hierarchy {
                out.extend_from_slice(b" (");
                out.extend_from_slice(h);
                out.push(b')');
            }
        }
        Body::CmdMode { name } => {
            add(b"cmd_mode ");
            add(name);
        }
        Body::Alias { alias, argv } => {
            add(b"alias ");
            add(alias);
            out.extend_from_slice(b" -> ");
            sq_quote_argv(out, argv);
        }
        Body::ChildStart {
            child_id, cd, argv, ..
        } => {
            add(format!("child_start[{child_id}]").as_bytes());
            if let Some(cd) = cd {
                out.extend_from_slice(b" cd ");
                sq_quote(out, cd);
                out.push(b';');
            }
            out.push(b' ');
            sq_quote_argv(out, argv);
        }
        Body::ChildExit {
            child_id,
            pid,
            code,
            t_rel,
            ..
        } => {
            add(format!("child_exit[{child_id}] pid:{pid} code:{code} elapsed:").as_bytes());
            t_rel.write(out);
        }
        Body::ChildReady {
            child_id,
            pid,
            ready,
            t_rel,
            ..
        } => {
            add(format!("child_ready[{child_id}] pid:{pid} ready:").as_bytes());
            out.extend_from_slice(ready);
            out.extend_from_slice(b" elapsed:");
            t_rel.write(out);
        }
        Body::Exec {
            exec_id, exe, argv, ..
        } => {
            add(format!("exec[{exec_id}] ").as_bytes());
            if let Some(exe) = exe {
                out.extend_from_slice(exe);
                out.push(b' ');
            }
            sq_quote_argv(out, argv);
        }
        Body::ExecResult { exec_id, code, .. } => {
            add(format!("exec_result[{exec_id}] code:{code}").as_bytes());
            if *code > 0 {
                out.extend_from_slice(b" err:");
                out.extend_from_slice(crate::perf::strerror(*code).as_bytes());
            }
        }
        Body::DefParam {
            scope,
            param,
            value,
        } => {
            add(b"def_param ");
            // git < 2.38 has no scope (and no scope in its EVENT).
            if let Some(scope) = scope {
                add(b"scope:");
                add(scope);
                out.push(b' ');
            }
            out.extend_from_slice(param);
            out.push(b'=');
            if let Some(v) = value {
                out.extend_from_slice(v);
            }
        }
        Body::DefRepo { worktree } => {
            add(b"worktree ");
            sq_quote(out, worktree);
        }
        Body::Printf { msg, .. } => {
            if let Some(m) = msg {
                add(m);
            }
        }
        Body::Timer {
            per_thread,
            category,
            name,
            intervals,
            t_total,
            t_min,
            t_max,
        } => {
            add(if *per_thread { b"th_timer " } else { b"timer " });
            add(category);
            out.push(b'/');
            out.extend_from_slice(name);
            out.extend_from_slice(format!(" intervals:{intervals} total:").as_bytes());
            t_total.write_width(8, out);
            out.extend_from_slice(b" min:");
            t_min.write_width(8, out);
            out.extend_from_slice(b" max:");
            t_max.write_width(8, out);
        }
        Body::Counter {
            per_thread,
            category,
            name,
            count,
        } => {
            add(if *per_thread {
                b"th_counter "
            } else {
                b"counter "
            });
            add(category);
            out.push(b'/');
            out.extend_from_slice(name);
            out.extend_from_slice(format!(" value:{count}").as_bytes());
        }
        Body::Unknown { event, payload } => match payload {
            Some(p) => add(p),
            None => add(event),
        },
        Body::TooManyFiles
        | Body::RegionEnter(_)
        | Body::RegionLeave { .. }
        | Body::Data { .. }
        | Body::DataJson { .. }
        | Body::ThreadStart { .. }
        | Body::ThreadExit { .. } => {}
    }
}

fn elapsed_code(out: &mut Vec<u8>, word: &str, t: Micros, code: i64) {
    out.extend_from_slice(word.as_bytes());
    out.extend_from_slice(b" elapsed:");
    t.write(out);
    out.extend_from_slice(format!(" code:{code}").as_bytes());
}
