//! The subset of LLVM's FileCheck that llvm-xray's tests use: the
//! directives CHECK, CHECK-NEXT, CHECK-SAME, CHECK-EMPTY, CHECK-NOT and
//! CHECK-DAG under any prefix (`--check-prefix`, `--check-prefixes`),
//! `{{regex}}`, `[[VAR:regex]]` definitions and `[[VAR]]` uses (also from
//! `-DVAR=value`), and FileCheck's default whitespace handling (runs of
//! spaces and tabs in the input and in literal pattern text match as one
//! space; a pattern's leading and trailing blanks are ignored).
//!
//! Semantics follow FileCheck 14: a check searches forward from the end of
//! the previous match; CHECK-NEXT must match on the line after it,
//! CHECK-SAME on its line; CHECK-NOT patterns must not occur between the
//! matches around them; consecutive CHECK-DAGs match in any order, not
//! overlapping, after the previous match; the following check starts after
//! the furthest of them.

use std::collections::HashMap;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Next,
    Same,
    Empty,
    Not,
    Dag,
}

#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    Regex(String),
    Define(String, String),
    Use(String),
}

#[derive(Debug, Clone)]
struct Check {
    kind: Kind,
    pieces: Vec<Piece>,
    /// Line of the check file, for messages.
    line: usize,
    text: String,
}

/// FileCheck's options as given on a RUN line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub prefixes: Vec<String>,
    pub defines: Vec<(String, String)>,
}

impl Options {
    /// Parses FileCheck's arguments (the check file excluded).
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options::default();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            let value = |name: &str, i: &mut usize| -> Option<String> {
                for dashes in ["--", "-"] {
                    let long = format!("{dashes}{name}");
                    if let Some(v) = a.strip_prefix(&format!("{long}=")) {
                        return Some(v.to_string());
                    }
                    if *a == long {
                        *i += 1;
                        return args.get(*i).cloned();
                    }
                }
                None
            };
            if let Some(v) = value("check-prefix", &mut i) {
                o.prefixes.push(v);
            } else if let Some(v) = value("check-prefixes", &mut i) {
                o.prefixes.extend(v.split(',').map(str::to_string));
            } else if let Some(d) = a.strip_prefix("-D") {
                let d = if d.is_empty() {
                    i += 1;
                    args.get(i).cloned().unwrap_or_default()
                } else {
                    d.to_string()
                };
                let (k, v) = d
                    .split_once('=')
                    .ok_or_else(|| format!("-D needs NAME=VALUE, not {d:?}"))?;
                o.defines.push((k.to_string(), v.to_string()));
            } else {
                return Err(format!("FileCheck option {a:?} is not supported here"));
            }
            i += 1;
        }
        if o.prefixes.is_empty() {
            o.prefixes.push("CHECK".into());
        }
        Ok(o)
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// The directive of a check-file line, if any: its kind and pattern text.
fn directive<'l>(line: &'l str, prefixes: &[String]) -> Option<(Kind, &'l str)> {
    let b = line.as_bytes();
    // FileCheck takes the first prefix occurrence that forms a directive.
    let mut best: Option<(usize, Kind, &str)> = None;
    for p in prefixes {
        let mut from = 0;
        while let Some(at) = line[from..].find(p.as_str()) {
            let at = from + at;
            from = at + 1;
            if at > 0 && is_ident(b[at - 1]) {
                continue;
            }
            let rest = &line[at + p.len()..];
            let found = [
                (":", Kind::Plain),
                ("-NEXT:", Kind::Next),
                ("-SAME:", Kind::Same),
                ("-EMPTY:", Kind::Empty),
                ("-NOT:", Kind::Not),
                ("-DAG:", Kind::Dag),
            ]
            .into_iter()
            .find(|(s, _)| rest.starts_with(s));
            if let Some((s, k)) = found {
                if best.is_none_or(|(b, _, _)| at < b) {
                    best = Some((at, k, &rest[s.len()..]));
                }
                break;
            }
        }
    }
    best.map(|(_, k, t)| (k, t))
}

/// Collapses runs of spaces and tabs into one space.
fn canonical(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for c in s.chars() {
        if c == ' ' || c == '\t' {
            if !blank {
                out.push(' ');
            }
            blank = true;
        } else {
            out.push(c);
            blank = false;
        }
    }
    out
}

fn parse_pattern(text: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut rest = text.trim_matches(|c| c == ' ' || c == '\t');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("{{") {
            let end = r
                .find("}}")
                .ok_or_else(|| format!("`{{{{` without `}}}}` in {text:?}"))?;
            if !lit.is_empty() {
                pieces.push(Piece::Literal(canonical(&std::mem::take(&mut lit))));
            }
            pieces.push(Piece::Regex(r[..end].to_string()));
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix("[[") {
            // The end: `]]` outside the brackets of the regex.
            let bytes = r.as_bytes();
            let (mut i, mut depth, mut end) = (0, 0i32, None);
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 1,
                    b']' if depth == 0 && bytes.get(i + 1) == Some(&b']') => {
                        end = Some(i);
                        break;
                    }
                    b'[' => depth += 1,
                    b']' => depth -= 1,
                    _ => {}
                }
                i += 1;
            }
            let end = end.ok_or_else(|| format!("`[[` without `]]` in {text:?}"))?;
            let body = &r[..end];
            if !lit.is_empty() {
                pieces.push(Piece::Literal(canonical(&std::mem::take(&mut lit))));
            }
            match body.split_once(':') {
                Some((name, re)) => pieces.push(Piece::Define(name.to_string(), re.to_string())),
                None => pieces.push(Piece::Use(body.to_string())),
            }
            rest = &r[end + 2..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            lit.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Literal(canonical(&lit)));
    }
    Ok(pieces)
}

/// Reads the checks of `check_file` for `opts`' prefixes.
fn checks(check_file: &str, opts: &Options) -> Result<Vec<Check>, String> {
    let mut out = Vec::new();
    for (n, line) in check_file.lines().enumerate() {
        if let Some((kind, text)) = directive(line, &opts.prefixes) {
            out.push(Check {
                kind,
                pieces: parse_pattern(text)?,
                line: n + 1,
                text: text.trim().to_string(),
            });
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no check strings found with prefix {}",
            opts.prefixes.join(", ")
        ));
    }
    Ok(out)
}

struct Matcher {
    regex: Regex,
    /// Capture group index of each defined variable.
    defines: Vec<(String, usize)>,
}

fn compile(c: &Check, vars: &HashMap<String, String>) -> Result<Matcher, String> {
    let mut re = String::from("(?m)");
    let mut defines = Vec::new();
    let mut group = 0;
    for p in &c.pieces {
        match p {
            Piece::Literal(l) => re.push_str(&regex::escape(l)),
            Piece::Regex(r) => {
                re.push_str("(?:");
                re.push_str(r);
                re.push(')');
                group += Regex::new(r).map_err(|e| e.to_string())?.captures_len() - 1;
            }
            Piece::Define(name, r) => {
                group += 1;
                defines.push((name.clone(), group));
                re.push('(');
                re.push_str(r);
                re.push(')');
                group += Regex::new(r).map_err(|e| e.to_string())?.captures_len() - 1;
            }
            Piece::Use(name) => {
                let v = vars.get(name).ok_or_else(|| {
                    format!("line {}: variable [[{name}]] is not defined", c.line)
                })?;
                re.push_str(&regex::escape(v));
            }
        }
    }
    let regex = Regex::new(&re).map_err(|e| format!("line {}: bad pattern: {e}", c.line))?;
    Ok(Matcher { regex, defines })
}

/// Finds `c` in `input[from..]`: the match range, with its variables
/// recorded in `vars`.
fn find(
    c: &Check,
    input: &str,
    from: usize,
    vars: &mut HashMap<String, String>,
) -> Result<Option<(usize, usize)>, String> {
    let m = compile(c, vars)?;
    let Some(caps) = m.regex.captures_at(input, from) else {
        return Ok(None);
    };
    let whole = caps
        .get(0)
        .map(|x| (x.start(), x.end()))
        .unwrap_or((from, from));
    for (name, g) in &m.defines {
        if let Some(v) = caps.get(*g) {
            vars.insert(name.clone(), v.as_str().to_string());
        }
    }
    Ok(Some(whole))
}

fn newlines(s: &str) -> usize {
    s.bytes().filter(|&b| b == b'\n').count()
}

fn line_of(input: &str, at: usize) -> usize {
    newlines(&input[..at.min(input.len())]) + 1
}

/// Checks `input` against the checks of `check_file`. Err: what failed.
pub fn check(check_file: &str, input: &str, opts: &Options) -> Result<(), String> {
    let checks = checks(check_file, opts)?;
    let input = &canonical(input);
    let mut vars: HashMap<String, String> = opts.defines.iter().cloned().collect();
    let mut pos = 0usize;
    let mut nots: Vec<&Check> = Vec::new();
    let mut i = 0;
    let fail =
        |c: &Check, why: &str| -> String { format!("check line {}: {:?}: {why}", c.line, c.text) };
    let check_nots = |nots: &mut Vec<&Check>,
                      vars: &mut HashMap<String, String>,
                      from: usize,
                      to: usize|
     -> Result<(), String> {
        for n in nots.drain(..) {
            let region = &input[..to];
            if let Some((s, _)) = find(n, region, from, vars)? {
                return Err(format!(
                    "check line {}: {:?}: CHECK-NOT pattern found at input line {}",
                    n.line,
                    n.text,
                    line_of(input, s)
                ));
            }
        }
        Ok(())
    };
    while i < checks.len() {
        let c = &checks[i];
        match c.kind {
            Kind::Not => {
                nots.push(c);
                i += 1;
            }
            Kind::Dag => {
                let start = pos;
                let mut taken: Vec<(usize, usize)> = Vec::new();
                while i < checks.len() && checks[i].kind == Kind::Dag {
                    let d = &checks[i];
                    let mut from = start;
                    loop {
                        let Some((s, e)) = find(d, input, from, &mut vars)? else {
                            return Err(fail(
                                d,
                                &format!(
                                    "CHECK-DAG not found after input line {}",
                                    line_of(input, start)
                                ),
                            ));
                        };
                        match taken.iter().find(|&&(ts, te)| s < te && ts < e.max(s + 1)) {
                            Some(&(_, te)) => from = te.max(s + 1),
                            None => {
                                taken.push((s, e));
                                break;
                            }
                        }
                    }
                    i += 1;
                }
                let first = taken.iter().map(|t| t.0).min().unwrap_or(start);
                check_nots(&mut nots, &mut vars, start, first)?;
                pos = taken.iter().map(|t| t.1).max().unwrap_or(start);
            }
            Kind::Empty => {
                // The line after the current one must be empty.
                let Some(nl) = input[pos..].find('\n').map(|x| pos + x) else {
                    return Err(fail(c, "CHECK-EMPTY: no next line"));
                };
                let next = nl + 1;
                if !(next >= input.len() || input[next..].starts_with('\n')) {
                    return Err(fail(
                        c,
                        &format!(
                            "CHECK-EMPTY: input line {} is not empty",
                            line_of(input, next)
                        ),
                    ));
                }
                check_nots(&mut nots, &mut vars, pos, next)?;
                pos = next;
                i += 1;
            }
            Kind::Plain | Kind::Next | Kind::Same => {
                let Some((s, e)) = find(c, input, pos, &mut vars)? else {
                    return Err(fail(
                        c,
                        &format!("not found after input line {}", line_of(input, pos)),
                    ));
                };
                let between = newlines(&input[pos..s]);
                if c.kind == Kind::Next && between != 1 {
                    return Err(fail(
                        c,
                        &format!(
                            "CHECK-NEXT matched at input line {}, not on the line after the previous match (line {})",
                            line_of(input, s),
                            line_of(input, pos)
                        ),
                    ));
                }
                if c.kind == Kind::Same && between != 0 {
                    return Err(fail(c, "CHECK-SAME matched on a later line"));
                }
                check_nots(&mut nots, &mut vars, pos, s)?;
                pos = e;
                i += 1;
            }
        }
    }
    let end = input.len();
    check_nots(&mut nots, &mut vars, pos, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(p: &[&str]) -> Options {
        Options {
            prefixes: p.iter().map(|s| s.to_string()).collect(),
            defines: vec![],
        }
    }

    #[test]
    fn directives_and_whitespace() {
        let file = "# CHECK: a  b\n# CHECK-NEXT: {{[0-9]+}} x\n# CHECK-NOT: zzz\n# CHECK: end\n";
        assert!(check(file, "a   b\n12 x\nend\n", &opts(&["CHECK"])).is_ok());
        assert!(check(file, "a b\n\n12 x\nend\n", &opts(&["CHECK"])).is_err());
        assert!(check(file, "a b\n12 x\nzzz\nend\n", &opts(&["CHECK"])).is_err());
    }

    #[test]
    fn dag_and_variables() {
        let file = "X: start\nX-DAG: F[[A:[0-9]+]] a\nX-DAG: F[[B:[0-9]+]] b\nX-DAG: F[[A]] -> F[[B]]\nX-NEXT: }\n";
        let o = opts(&["X"]);
        assert!(check(file, "start\nF2 b\nF1 a\nF1 -> F2\n}\n", &o).is_ok());
        assert!(check(file, "start\nF2 b\nF1 a\nF2 -> F1\n}\n", &o).is_err());
        // A prefix inside another word is no directive.
        assert!(directive("#KEEP-GOING-SUCCEEDS: x", &["KEEP-GOING".into()]).is_none());
        assert!(directive("#KEEP-GOING: x", &["KEEP-GOING".into()]).is_some());
    }
}
