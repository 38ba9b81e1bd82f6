//! `build.ninja`: the build graph, as far as a critical path needs it.
//!
//! Read by ninja's rules (its `manifest_parser.cc`/`lexer.in.cc`, and the
//! manual's "Ninja file reference"): `build OUT [| IMPLICIT_OUT]: RULE IN
//! [| IMPLICIT] [|| ORDER_ONLY] [|@ VALIDATION]` with indented bindings
//! under it, `rule NAME` with its bindings, top-level `name = value`,
//! `include` (same scope) and `subninja` (a child scope), `default`,
//! `pool`; `$` escapes (`$$`, `$ `, `$:`, `$` at the end of a line
//! continuing it) and variables (`$name`, `${name}`). Paths are evaluated
//! in the file's scope as the `build` line is read; a command in the edge's
//! scope (`$in`, `$out`, the edge's bindings, the rule's, the file's).
//! Paths are kept as written in the manifest (relative to the build
//! directory), as `.ninja_log` writes them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tracekit_core::{Error, Position};

/// One `build` statement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Edge {
    pub rule: String,
    pub outputs: Vec<String>,
    pub implicit_outputs: Vec<String>,
    pub inputs: Vec<String>,
    pub implicit: Vec<String>,
    pub order_only: Vec<String>,
    /// The command with its variables expanded (`None` for `phony`).
    pub command: Option<String>,
    /// Where it is: file and 1-based line.
    pub file: String,
    pub line: usize,
}

impl Edge {
    /// Every file the edge waits for (explicit, implicit, order-only).
    pub fn all_inputs(&self) -> impl Iterator<Item = &String> {
        self.inputs
            .iter()
            .chain(&self.implicit)
            .chain(&self.order_only)
    }
}

/// The edges of a manifest and the files it includes.
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    pub edges: Vec<Edge>,
    /// Files read (the manifest, then `include`d and `subninja`d ones).
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Default)]
struct Rule {
    bindings: HashMap<String, String>,
}

#[derive(Debug, Default)]
struct Scope {
    parent: Option<usize>,
    vars: HashMap<String, String>,
    rules: HashMap<String, Rule>,
}

struct Reader<'a> {
    scopes: Vec<Scope>,
    manifest: Manifest,
    /// Reads an included file (relative to the build directory).
    open: &'a dyn Fn(&str) -> Option<String>,
    depth: u32,
    /// Bytes of manifest text read so far, includes counted each time.
    read_bytes: usize,
}

/// Longest value a variable or command may grow to (a manifest that
/// doubles a variable line after line would otherwise exhaust memory).
const MAX_VALUE: usize = 1 << 20;
/// Most manifest text read, includes counted each time they are read.
const MAX_READ: usize = 256 << 20;

/// A piece of unevaluated text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(String),
}

fn var_char(c: char, braced: bool) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || (braced && c == '.')
}

/// Splits a value or path (already joined over `$`-newlines) into text and
/// variables. `stop` ends it at an unescaped space, `:` or `|` (paths).
fn lex(s: &[char], mut i: usize, path: bool) -> Result<(Vec<Piece>, usize), String> {
    let mut out: Vec<Piece> = Vec::new();
    let mut text = String::new();
    while i < s.len() {
        let c = s[i];
        if path && (c == ' ' || c == ':' || c == '|' || c == '\n') {
            break;
        }
        if c != '$' {
            text.push(c);
            i += 1;
            continue;
        }
        match s.get(i + 1) {
            Some('$') => {
                text.push('$');
                i += 2;
            }
            Some(' ') => {
                text.push(' ');
                i += 2;
            }
            Some(':') => {
                text.push(':');
                i += 2;
            }
            Some('{') => {
                let end = (i + 2..s.len())
                    .find(|&k| s[k] == '}')
                    .ok_or("unclosed ${")?;
                let name: String = s[i + 2..end].iter().collect();
                if name.is_empty() || !name.chars().all(|c| var_char(c, true)) {
                    return Err(format!("bad variable name ${{{name}}}"));
                }
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Var(name));
                i = end + 1;
            }
            Some(&c) if var_char(c, false) => {
                let mut k = i + 1;
                while k < s.len() && var_char(s[k], false) {
                    k += 1;
                }
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Var(s[i + 1..k].iter().collect()));
                i = k;
            }
            _ => return Err("bad $-escape (literal $ must be written as $$)".into()),
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok((out, i))
}

impl Reader<'_> {
    fn lookup(&self, scope: usize, name: &str) -> Option<&String> {
        let mut s = Some(scope);
        while let Some(k) = s {
            if let Some(v) = self.scopes[k].vars.get(name) {
                return Some(v);
            }
            s = self.scopes[k].parent;
        }
        None
    }

    fn rule(&self, scope: usize, name: &str) -> Option<&Rule> {
        let mut s = Some(scope);
        while let Some(k) = s {
            if let Some(r) = self.scopes[k].rules.get(name) {
                return Some(r);
            }
            s = self.scopes[k].parent;
        }
        None
    }

    /// The text of `pieces`; `None` past [`MAX_VALUE`].
    fn eval(&self, pieces: &[Piece], scope: usize) -> Option<String> {
        let mut s = String::new();
        for p in pieces {
            match p {
                Piece::Text(t) => s.push_str(t),
                Piece::Var(v) => {
                    if let Some(x) = self.lookup(scope, v) {
                        s.push_str(x);
                    }
                }
            }
            if s.len() > MAX_VALUE {
                return None;
            }
        }
        Some(s)
    }
}

/// Physical lines joined where a line ends in an unescaped `$`; each
/// logical line with the number of its first physical line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    for (k, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let (n, mut acc) = match cur.take() {
            Some((n, acc)) => (n, acc),
            None => (k + 1, String::new()),
        };
        let piece = if acc.is_empty() {
            line
        } else {
            line.trim_start()
        };
        acc.push_str(piece);
        // An odd number of trailing `$`: the last one escapes the newline.
        let dollars = acc.chars().rev().take_while(|&c| c == '$').count();
        if dollars % 2 == 1 {
            acc.pop();
            cur = Some((n, acc));
        } else {
            out.push((n, acc));
        }
    }
    if let Some(c) = cur {
        out.push(c);
    }
    out
}

/// Reads `text` (the manifest named `name`); `open` reads files it
/// includes (paths relative to the build directory, as ninja opens them).
pub fn read_manifest(
    text: &str,
    name: &str,
    open: &dyn Fn(&str) -> Option<String>,
) -> Result<Manifest, Error> {
    let mut r = Reader {
        scopes: vec![Scope::default()],
        manifest: Manifest::default(),
        open,
        depth: 0,
        read_bytes: 0,
    };
    r.file(text, name, 0)?;
    Ok(r.manifest)
}

/// Reads `dir/build.ninja` and what it includes from the file system.
pub fn read_build_dir(dir: &Path) -> Result<Manifest, Error> {
    let path = dir.join("build.ninja");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(Some(&path), e))?;
    let dir = dir.to_path_buf();
    let open = move |p: &str| -> Option<String> {
        let full: PathBuf = if p.starts_with('/') {
            PathBuf::from(p)
        } else {
            dir.join(p)
        };
        std::fs::read_to_string(full).ok()
    };
    read_manifest(&text, &path.display().to_string(), &open)
}

fn bad(file: &str, line: usize, msg: impl Into<String>) -> Error {
    Error::malformed(Position::Line(line as u64), msg).in_file(Path::new(file))
}

impl Reader<'_> {
    fn file(&mut self, text: &str, name: &str, scope: usize) -> Result<(), Error> {
        self.read_bytes = self.read_bytes.saturating_add(text.len());
        if self.read_bytes > MAX_READ {
            return Err(bad(
                name,
                1,
                "more than 256 MiB of manifest read (includes counted each time)",
            ));
        }
        self.manifest.files.push(name.to_string());
        let lines = logical_lines(text);
        let mut k = 0;
        while k < lines.len() {
            let (lineno, line) = &lines[k];
            k += 1;
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if line.starts_with(' ') || line.starts_with('\t') {
                return Err(bad(
                    name,
                    *lineno,
                    "an indented line outside a build, rule or pool",
                ));
            }
            // Bindings indented below this statement.
            let mut bindings: Vec<(usize, String, Vec<Piece>)> = Vec::new();
            while k < lines.len() {
                let (n, l) = &lines[k];
                if !(l.starts_with(' ') || l.starts_with('\t')) {
                    if l.trim().is_empty() || l.trim_start().starts_with('#') {
                        k += 1;
                        continue;
                    }
                    break;
                }
                let t = l.trim_start();
                if t.is_empty() || t.starts_with('#') {
                    k += 1;
                    continue;
                }
                let (var, value) = t
                    .split_once('=')
                    .ok_or_else(|| bad(name, *n, "expected name = value"))?;
                let chars: Vec<char> = value.trim_start().chars().collect();
                let (pieces, _) = lex(&chars, 0, false).map_err(|e| bad(name, *n, e))?;
                bindings.push((*n, var.trim().to_string(), pieces));
                k += 1;
            }
            let (word, rest) = match trimmed.split_once([' ', '=']) {
                Some((w, _)) => (w, trimmed[w.len()..].trim_start()),
                None => (trimmed, ""),
            };
            match word {
                "build" => self.build(rest, &bindings, name, *lineno, scope)?,
                "rule" => {
                    let rule = Rule {
                        bindings: bindings
                            .iter()
                            .map(|(_, v, p)| (v.clone(), pieces_text(p)))
                            .collect(),
                    };
                    self.scopes[scope]
                        .rules
                        .insert(rest.trim().to_string(), rule);
                }
                "include" | "subninja" => {
                    let chars: Vec<char> = rest.chars().collect();
                    let (pieces, _) = lex(&chars, 0, false).map_err(|e| bad(name, *lineno, e))?;
                    let path = self
                        .eval(&pieces, scope)
                        .ok_or_else(|| bad(name, *lineno, "a path longer than 1 MiB"))?;
                    if self.depth > 32 {
                        return Err(bad(name, *lineno, "includes nested too deep"));
                    }
                    let text = (self.open)(&path)
                        .ok_or_else(|| bad(name, *lineno, format!("cannot read {word} {path}")))?;
                    let inner = if word == "include" {
                        scope
                    } else {
                        self.scopes.push(Scope {
                            parent: Some(scope),
                            ..Default::default()
                        });
                        self.scopes.len() - 1
                    };
                    self.depth += 1;
                    self.file(&text, &path, inner)?;
                    self.depth -= 1;
                }
                "default" | "pool" => {}
                _ => {
                    // `name = value`.
                    let (var, value) = trimmed
                        .split_once('=')
                        .ok_or_else(|| bad(name, *lineno, format!("unknown statement {word:?}")))?;
                    let chars: Vec<char> = value.trim_start().chars().collect();
                    let (pieces, _) = lex(&chars, 0, false).map_err(|e| bad(name, *lineno, e))?;
                    let v = self.eval(&pieces, scope).ok_or_else(|| {
                        bad(
                            name,
                            *lineno,
                            format!("{} grows longer than 1 MiB", var.trim()),
                        )
                    })?;
                    self.scopes[scope].vars.insert(var.trim().to_string(), v);
                }
            }
        }
        Ok(())
    }

    fn build(
        &mut self,
        rest: &str,
        bindings: &[(usize, String, Vec<Piece>)],
        name: &str,
        lineno: usize,
        scope: usize,
    ) -> Result<(), Error> {
        let s: Vec<char> = rest.chars().collect();
        let mut i = 0;
        // 0: outputs, 1: implicit outputs, then after ':' the rule,
        // 2: inputs, 3: implicit, 4: order-only, 5: validations.
        let mut lists: [Vec<String>; 6] = Default::default();
        let mut part = 0;
        let mut rule: Option<String> = None;
        let mut after_colon = false;
        loop {
            while i < s.len() && s[i] == ' ' {
                i += 1;
            }
            if i >= s.len() {
                break;
            }
            match s[i] {
                ':' if !after_colon => {
                    after_colon = true;
                    i += 1;
                    while i < s.len() && s[i] == ' ' {
                        i += 1;
                    }
                    let st = i;
                    while i < s.len() && var_char(s[i], false) {
                        i += 1;
                    }
                    if st == i {
                        return Err(bad(name, lineno, "expected a rule name after ':'"));
                    }
                    rule = Some(s[st..i].iter().collect());
                    part = 2;
                }
                '|' => {
                    if s.get(i + 1) == Some(&'|') {
                        part = 4;
                        i += 2;
                    } else if s.get(i + 1) == Some(&'@') {
                        part = 5;
                        i += 2;
                    } else {
                        part = if after_colon { 3 } else { 1 };
                        i += 1;
                    }
                }
                _ => {
                    let (pieces, next) = lex(&s, i, true).map_err(|e| bad(name, lineno, e))?;
                    if next == i {
                        return Err(bad(name, lineno, format!("unexpected {:?}", s[i])));
                    }
                    let path = self
                        .eval(&pieces, scope)
                        .ok_or_else(|| bad(name, lineno, "a path longer than 1 MiB"))?;
                    lists[part].push(path);
                    i = next;
                }
            }
        }
        let Some(rule) = rule else {
            return Err(bad(
                name,
                lineno,
                "a build statement without ':' and a rule",
            ));
        };
        if lists[0].is_empty() {
            return Err(bad(name, lineno, "a build statement without outputs"));
        }
        let [outputs, implicit_outputs, inputs, implicit, order_only, _] = lists;
        // The edge's own bindings, evaluated in the file's scope.
        let mut edge_vars: HashMap<String, String> = HashMap::new();
        for (_, v, p) in bindings {
            let value = self
                .eval(p, scope)
                .ok_or_else(|| bad(name, lineno, format!("{v} grows longer than 1 MiB")))?;
            edge_vars.insert(v.clone(), value);
        }
        let command = if rule == "phony" {
            None
        } else {
            let r = self
                .rule(scope, &rule)
                .ok_or_else(|| bad(name, lineno, format!("unknown rule {rule:?}")))?
                .clone();
            r.bindings.get("command").map(|c| {
                let chars: Vec<char> = c.chars().collect();
                let pieces = lex(&chars, 0, false).map(|p| p.0).unwrap_or_default();
                let in_ = shell_join(&inputs);
                let out = shell_join(&outputs);
                self.eval_edge(&pieces, scope, &edge_vars, &r, &in_, &out, 0)
            })
        };
        self.manifest.edges.push(Edge {
            rule,
            outputs,
            implicit_outputs,
            inputs,
            implicit,
            order_only,
            command: command.flatten(),
            file: name.to_string(),
            line: lineno,
        });
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_edge(
        &self,
        pieces: &[Piece],
        scope: usize,
        edge: &HashMap<String, String>,
        rule: &Rule,
        in_: &str,
        out: &str,
        depth: u32,
    ) -> Option<String> {
        let mut s = String::new();
        for p in pieces {
            if s.len() > MAX_VALUE {
                // Not named: a command that long is not read.
                return None;
            }
            match p {
                Piece::Text(t) => s.push_str(t),
                Piece::Var(v) => match v.as_str() {
                    "in" => s.push_str(in_),
                    "out" => s.push_str(out),
                    _ => {
                        if let Some(x) = edge.get(v) {
                            s.push_str(x);
                        } else if let Some(x) = rule.bindings.get(v) {
                            if depth < 16 {
                                let chars: Vec<char> = x.chars().collect();
                                let inner = lex(&chars, 0, false).map(|p| p.0).unwrap_or_default();
                                match self.eval_edge(&inner, scope, edge, rule, in_, out, depth + 1)
                                {
                                    Some(x) => s.push_str(&x),
                                    None => return None,
                                }
                            }
                        } else if let Some(x) = self.lookup(scope, v) {
                            s.push_str(x);
                        }
                    }
                },
            }
        }
        (s.len() <= MAX_VALUE).then_some(s)
    }
}

/// A rule's binding is kept as written (evaluated per edge).
fn pieces_text(p: &[Piece]) -> String {
    let mut s = String::new();
    for x in p {
        match x {
            Piece::Text(t) => {
                for c in t.chars() {
                    match c {
                        '$' => s.push_str("$$"),
                        ' ' => s.push(' '),
                        c => s.push(c),
                    }
                }
            }
            Piece::Var(v) => {
                s.push_str("${");
                s.push_str(v);
                s.push('}');
            }
        }
    }
    s
}

/// `$in`/`$out`: paths joined by spaces, each quoted for the shell when it
/// needs it (ninja's `GetShellEscapedString`).
fn shell_join(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| {
            if p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_+-./".contains(c))
            {
                p.clone()
            } else {
                format!("'{}'", p.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_paths_and_commands() {
        let text = "cflags = -O2\nrule cc\n  command = gcc $cflags $extra -c $in -o $out\n  description = CC $out\ninclude rules.ninja\nbuild a$ b.o | a.d: cc src/a.c | gen.h || dir\n  extra = -DX=$$1\nbuild all: phony a$ b.o $\n    lib.so\nbuild lib.so: link a$ b.o\n";
        let open = |p: &str| {
            (p == "rules.ninja")
                .then(|| "rule link\n  command = gcc -shared $in -o $out\n".to_string())
        };
        let m = read_manifest(text, "build.ninja", &open).unwrap();
        assert_eq!(m.edges.len(), 3);
        let e = &m.edges[0];
        assert_eq!(e.outputs, ["a b.o"]);
        assert_eq!(e.implicit_outputs, ["a.d"]);
        assert_eq!(e.inputs, ["src/a.c"]);
        assert_eq!(e.implicit, ["gen.h"]);
        assert_eq!(e.order_only, ["dir"]);
        assert_eq!(
            e.command.as_deref(),
            Some("gcc -O2 -DX=$1 -c src/a.c -o 'a b.o'")
        );
        assert_eq!(e.line, 6);
        assert_eq!(m.edges[1].inputs, ["a b.o", "lib.so"]);
        assert_eq!(m.edges[1].command, None);
        assert_eq!(
            m.edges[2].command.as_deref(),
            Some("gcc -shared 'a b.o' -o lib.so")
        );
        assert_eq!(m.files, ["build.ninja", "rules.ninja"]);
        // A variable doubled line after line is refused, not grown until
        // memory runs out; so is a manifest that includes itself forever.
        let doubling = format!("v = x\n{}", "v = $v$v\n".repeat(40));
        let e = read_manifest(&doubling, "b.ninja", &open).unwrap_err();
        assert!(e.to_string().contains("grows longer than 1 MiB"), "{e}");
        let me = "subninja b.ninja\nsubninja b.ninja\n".to_string();
        let e = read_manifest(&me, "b.ninja", &|_| Some(me.clone())).unwrap_err();
        assert!(
            e.to_string().contains("too deep") || e.to_string().contains("256 MiB"),
            "{e}"
        );
        let e = read_manifest("build x: nosuch y\n", "b.ninja", &open).unwrap_err();
        assert!(e.to_string().contains("b.ninja:1: unknown rule"), "{e}");
        let e =
            read_manifest("rule r\n  command = x\nbuild x: r $@\n", "b.ninja", &open).unwrap_err();
        assert!(e.to_string().contains("b.ninja:3"), "{e}");
    }
}
