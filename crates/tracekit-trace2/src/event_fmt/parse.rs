//! Parsing one EVENT line into an [`Event`].

use super::*;

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
