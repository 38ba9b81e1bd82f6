//! Writing an [`Event`] as one EVENT line, byte for byte as git's json-writer does.

use super::*;

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
