//! Trace → Klocwork build specification (`kwinject.out`): `version;108`,
//! then `compile` and `link` records (`kwinject.md` §5, §8).
//!
//! Our interpretation, as documented there: a recognised compiler driver
//! gives one `compile` record per source (working directory, absolute
//! compiler, absolute object, source as written, kept options) and, when it
//! also links, a `link` record; `ld` and archivers (`ar`) give `link`
//! records; children of a recognised driver (cc1, as, collect2, ld) are the
//! tool chain and give nothing; launchers are unwrapped and the compiler is
//! looked up on the recorded `PATH`; `@file` options are spliced in.
//! Kept options: `-I -D -U -include -imacros -isystem -iquote -idirafter
//! -std= -x`. A field holding `;` is an error (the escaping is undocumented).

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use crate::cdb::{absolute, CdbOptions};
use crate::compiler::{classify, recognize, FlagKind};
use crate::trace::{Env, Process};

/// Reads a response file (absolute path); `None` when it is gone.
pub type FileReader<'a> = &'a dyn Fn(&str) -> Option<String>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Compile {
        dir: String,
        compiler: String,
        output: String,
        source: String,
        options: Vec<String>,
    },
    Link {
        dir: String,
        output: String,
        inputs: Vec<String>,
    },
}

impl Record {
    pub fn fields(&self) -> Vec<&str> {
        match self {
            Record::Compile {
                dir,
                compiler,
                output,
                source,
                options,
            } => {
                let mut v = vec!["compile", dir, compiler, output, source];
                v.extend(options.iter().map(String::as_str));
                v
            }
            Record::Link {
                dir,
                output,
                inputs,
            } => {
                let mut v = vec!["link", dir, output];
                v.extend(inputs.iter().map(String::as_str));
                v
            }
        }
    }
}

/// Builds the spec over a trace in order. Keeps which outputs were produced
/// so `-lz -L.` resolves to a `libz.a` made earlier in the same build.
pub struct SpecBuilder<'a> {
    read_file: FileReader<'a>,
    pub records: Vec<Record>,
    produced: HashSet<String>,
    /// Ids of recognised drivers, whose children are their tool chain.
    drivers: HashMap<i64, ()>,
    pub warnings: Vec<String>,
}

impl<'a> SpecBuilder<'a> {
    pub fn new(read_file: FileReader<'a>) -> Self {
        SpecBuilder {
            read_file,
            records: Vec::new(),
            produced: HashSet::new(),
            drivers: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Adds what one process compiles and links; returns the indices of
    /// the records it gave in [`records`](Self::records).
    pub fn add(&mut self, p: &Process, env: &Env) -> std::ops::Range<usize> {
        let before = self.records.len();
        self.add_records(p, env);
        before..self.records.len()
    }

    fn add_records(&mut self, p: &Process, env: &Env) {
        let under_driver = p.parent().is_some_and(|pp| self.drivers.contains_key(&pp));
        let name = p.program_name().to_string();
        let opts = CdbOptions::default();
        if recognize(&name).is_some() {
            self.drivers.insert(p.id, ());
            if under_driver {
                return;
            }
            if let Some((exe, args)) = crate::cdb::compiler_call(p, env, &opts) {
                let exe = if exe.contains('/') {
                    exe
                } else {
                    // Unwrapped launcher: the recorded PATH decides, even
                    // when that directory is not on this machine.
                    env.get("PATH")
                        .and_then(|path| path.split(':').find(|d| !d.is_empty()))
                        .map(|d| format!("{d}/{exe}"))
                        .unwrap_or(exe)
                };
                let args = self.expand(args, &p.work_dir);
                self.driver(&p.work_dir, &exe, &args);
            }
            return;
        }
        if under_driver {
            // cc1, as, collect2, ld under gcc: the tool chain.
            self.drivers.insert(p.id, ());
            return;
        }
        match name.as_str() {
            "ar" | "llvm-ar" | "gcc-ar" => {
                let args = self.expand(p.args.get(1..).unwrap_or(&[]), &p.work_dir);
                self.archive(&p.work_dir, &args);
            }
            "ld" | "ld.bfd" | "ld.gold" | "ld.lld" | "lld" => {
                let args = self.expand(p.args.get(1..).unwrap_or(&[]), &p.work_dir);
                self.link(&p.work_dir, &args, "a.out");
            }
            _ => {}
        }
    }

    /// Splices `@file` contents in (GCC tokenisation: whitespace, quotes,
    /// backslash), relative to `dir`; a missing file stays as a token.
    fn expand(&mut self, args: &[String], dir: &str) -> Vec<String> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            if let Some(f) = a.strip_prefix('@') {
                let path = absolute(dir, f);
                match (self.read_file)(&path) {
                    Some(text) => out.extend(split_response(&text)),
                    None => {
                        self.warnings
                            .push(format!("response file {path} not found; kept as {a}"));
                        out.push(a.clone());
                    }
                }
            } else {
                out.push(a.clone());
            }
        }
        out
    }

    fn driver(&mut self, dir: &str, exe: &str, args: &[String]) {
        let flags = classify(args);
        if flags.iter().any(|f| {
            f.kind == FlagKind::Info
                || (f.kind == FlagKind::NoLinking && f.name == "-E")
                || (f.kind == FlagKind::DependencyMake && (f.name == "-M" || f.name == "-MM"))
        }) {
            return;
        }
        let no_link = flags.iter().any(|f| f.kind == FlagKind::NoLinking);
        let output = flags
            .iter()
            .rev()
            .find(|f| f.kind == FlagKind::Output && f.tokens.len() == 2)
            .map(|f| f.tokens[1].clone());
        let mut options = Vec::new();
        for f in &flags {
            let t = &f.tokens[0];
            let keep = ["-I", "-D", "-U"].iter().any(|p| t.starts_with(p))
                || [
                    "-include",
                    "-imacros",
                    "-isystem",
                    "-iquote",
                    "-idirafter",
                    "-x",
                ]
                .contains(&t.as_str())
                || t.starts_with("-std=");
            if keep && f.kind == FlagKind::Kept {
                if f.tokens.len() == 2 && f.tokens[0].len() == 2 {
                    // `-I dir` → `-Idir`, one field per option.
                    options.push(format!("{}{}", f.tokens[0], f.tokens[1]));
                } else {
                    options.push(f.tokens.join(" "));
                }
            }
        }
        let mut objects = Vec::new();
        for f in flags.iter().filter(|f| f.kind == FlagKind::Source) {
            let src = &f.tokens[0];
            let obj = match (&output, no_link) {
                (Some(o), true) => absolute(dir, o),
                _ => {
                    let base = src.rsplit('/').next().unwrap_or(src);
                    let stem = base.rsplit_once('.').map(|(s, _)| s).unwrap_or(base);
                    absolute(dir, &format!("{stem}.o"))
                }
            };
            objects.push(obj.clone());
            self.records.push(Record::Compile {
                dir: dir.to_string(),
                compiler: exe.to_string(),
                output: obj,
                source: src.clone(),
                options: options.clone(),
            });
        }
        if !no_link {
            let out = absolute(dir, output.as_deref().unwrap_or("a.out"));
            let mut inputs = objects;
            let mut lib_dirs = vec![];
            let mut libs = vec![];
            for f in &flags {
                match (f.kind, f.name) {
                    (FlagKind::Kept, "") => {
                        let t = &f.tokens[0];
                        if !t.starts_with('-') {
                            inputs.push(absolute(dir, t));
                        }
                    }
                    (FlagKind::Linker, "-L") => lib_dirs.push(value(f, "-L")),
                    (FlagKind::Linker, "-l") => libs.push(value(f, "-l")),
                    _ => {}
                }
            }
            for l in libs {
                inputs.push(self.resolve_lib(dir, &lib_dirs, &l));
            }
            if !inputs.is_empty() {
                self.produced.insert(out.clone());
                self.records.push(Record::Link {
                    dir: dir.to_string(),
                    output: out,
                    inputs,
                });
            }
        }
    }

    fn resolve_lib(&self, dir: &str, lib_dirs: &[String], name: &str) -> String {
        for d in lib_dirs {
            for ext in ["a", "so"] {
                let cand = absolute(&absolute(dir, d), &format!("lib{name}.{ext}"));
                if self.produced.contains(&cand) {
                    return cand;
                }
            }
        }
        format!("-l{name}")
    }

    fn archive(&mut self, dir: &str, args: &[String]) {
        // `ar OPS ARCHIVE MEMBERS...` (the first argument is the operation).
        let mut it = args.iter().skip_while(|a| a.starts_with("--"));
        let Some(ops) = it.next() else { return };
        if !ops.contains(['r', 'q']) {
            return;
        }
        let Some(archive) = it.next() else { return };
        let out = absolute(dir, archive);
        let inputs: Vec<String> = it.map(|m| absolute(dir, m)).collect();
        self.produced.insert(out.clone());
        self.records.push(Record::Link {
            dir: dir.to_string(),
            output: out,
            inputs,
        });
    }

    fn link(&mut self, dir: &str, args: &[String], default_out: &str) {
        let mut out = default_out.to_string();
        let mut inputs = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "-o" {
                if let Some(o) = args.get(i + 1) {
                    out = o.clone();
                }
                i += 2;
                continue;
            }
            if !a.starts_with('-') {
                inputs.push(absolute(dir, a));
            }
            i += 1;
        }
        let out = absolute(dir, &out);
        self.produced.insert(out.clone());
        self.records.push(Record::Link {
            dir: dir.to_string(),
            output: out,
            inputs,
        });
    }

    /// `version;108` and the records; a `;` inside a field is an error.
    pub fn write<W: Write>(&self, mut out: W) -> io::Result<()> {
        out.write_all(b"version;108\n")?;
        for r in &self.records {
            let fields = r.fields();
            if let Some(bad) = fields.iter().find(|f| f.contains(';')) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the build specification cannot hold a field with ';' (its escaping is \
                         not documented): {bad:?} in {}",
                        fields.join(" ")
                    ),
                ));
            }
            out.write_all(fields.join(";").as_bytes())?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }
}

fn value(f: &crate::compiler::Flag, name: &str) -> String {
    if f.tokens.len() == 2 {
        f.tokens[1].clone()
    } else {
        f.tokens[0][name.len()..].to_string()
    }
}

/// GCC's response file syntax: whitespace-separated, `'…'`/`"…"` quoting,
/// backslash escapes.
pub fn split_response(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_token = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_token = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_token {
                    out.push(std::mem::take(&mut cur));
                    in_token = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_token = true;
            }
        }
    }
    if in_token {
        out.push(cur);
    }
    out
}
