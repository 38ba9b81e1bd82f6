//! Trace → Clang JSON compilation database (`compile_commands.json`), by
//! Bear 3.1.1's rules (`build-tools.md` §5.3), so a database made by
//! tracekit equals Bear's entry for entry.
//!
//! Where tracekit differs by default, [`CdbOptions::bear3`] restores
//! Bear's behaviour: `distcc -j N gcc …` is unwrapped (Bear 3.1.1 takes
//! `-j` for a query and writes nothing).

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::Path;

use serde_json::{Map, Value};

use crate::compiler::{classify, recognize, FlagKind, Tool};
use crate::trace::{Env, Process};

/// One `compile_commands.json` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub directory: String,
    pub file: String,
    pub arguments: Vec<String>,
    pub output: Option<String>,
}

#[derive(Debug, Clone)]
pub struct CdbOptions {
    /// Drop entries whose source does not exist now (Bear's `--run-checks`,
    /// which `bear -- …` always uses: configure's `conftest.c` goes away).
    pub existing_only: bool,
    /// Bear 3.1.1 exactly, where tracekit would do better.
    pub bear3: bool,
    /// Write the `output` field.
    pub with_output: bool,
    /// Splice `@file` response files in (read relative to the working
    /// directory now; a missing file stays as the token and is counted).
    /// Bear 3.1.1 keeps the token.
    pub expand_response_files: bool,
}

impl Default for CdbOptions {
    fn default() -> Self {
        CdbOptions {
            existing_only: true,
            bear3: false,
            with_output: true,
            expand_response_files: false,
        }
    }
}

/// What happened to the executions, for the summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CdbStats {
    pub execs: u64,
    pub compiler_execs: u64,
    /// Compiler runs that compile nothing: queries, `-E`, `-M`, links.
    pub no_compilation: u64,
    pub entries: u64,
    pub dropped_missing_source: u64,
    pub dropped_duplicate: u64,
    /// `@file` arguments whose file could not be read.
    pub missing_response_files: u64,
}

/// Lexically absolute: `dir/path` with `.` and `..` folded (no symlinks).
pub fn absolute(dir: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{dir}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut s = String::with_capacity(joined.len());
    for p in parts {
        s.push('/');
        s.push_str(p);
    }
    if s.is_empty() {
        s.push('/');
    }
    s
}

/// Looks `name` up on `PATH` of `env` (this machine's file system); the bare
/// name when it is found nowhere, as Bear does.
pub fn resolve_on_path(name: &str, env: &Env) -> String {
    if name.contains('/') {
        return name.to_string();
    }
    if let Some(path) = env.get("PATH") {
        for dir in path.split(':') {
            let dir = if dir.is_empty() { "." } else { dir };
            let cand = format!("{dir}/{name}");
            if is_executable(Path::new(&cand)) {
                return cand;
            }
        }
    }
    name.to_string()
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// distcc's own options that make it a query (Bear 3.1.1's list).
const DISTCC_QUERIES: &[&str] = &[
    "--help",
    "--version",
    "--show-hosts",
    "--scan-includes",
    "-j",
    "--show-principal",
];

/// The compiler behind an execution: (executable, argv without `argv[0]`),
/// unwrapping one launcher; `None` when it is not a compiler run.
pub fn compiler_call<'a>(
    p: &'a Process,
    env: &Env,
    opts: &CdbOptions,
) -> Option<(String, &'a [String])> {
    let exe = if p.executable.is_empty() {
        p.args.first()?.clone()
    } else {
        p.executable.clone()
    };
    let args = p.args.get(1..).unwrap_or(&[]);
    match recognize(&exe)? {
        Tool::Gcc | Tool::Clang | Tool::Nvcc => Some((exe, args)),
        Tool::Ccache => {
            let first = args.first()?;
            if first.starts_with('-') {
                return None;
            }
            Some((resolve_on_path(first, env), &args[1..]))
        }
        Tool::Distcc => {
            let mut i = 0;
            if opts.bear3 {
                if DISTCC_QUERIES.contains(&args.first()?.as_str()) {
                    return None;
                }
            } else {
                // `-j`/`--jobs` are queries only when nothing follows.
                while let Some(a) = args.get(i) {
                    if a == "-j" || a == "--jobs" {
                        i += 1;
                        if args.get(i).is_some_and(|n| n.parse::<u32>().is_ok()) {
                            i += 1;
                        }
                    } else if DISTCC_QUERIES.contains(&a.as_str()) {
                        return None;
                    } else {
                        break;
                    }
                }
            }
            let first = args.get(i)?;
            if first.starts_with('-') {
                return None;
            }
            Some((resolve_on_path(first, env), &args[i + 1..]))
        }
    }
}

/// The entries one execution gives (before duplicate and existence filters).
pub fn entries_for(p: &Process, env: &Env, opts: &CdbOptions) -> Option<Vec<Entry>> {
    let (exe, args) = compiler_call(p, env, opts)?;
    let flags = classify(args);
    Some(entries_from_flags(&exe, &p.work_dir, &flags, env))
}

fn entries_from_flags(
    exe: &str,
    dir: &str,
    flags: &[crate::compiler::Flag],
    env: &Env,
) -> Vec<Entry> {
    if flags.is_empty() {
        return Vec::new();
    }
    let query = flags.iter().any(|f| {
        f.kind == FlagKind::Info
            || (f.kind == FlagKind::DependencyMake && (f.name == "-M" || f.name == "-MM"))
            || (f.kind == FlagKind::NoLinking && f.name == "-E")
    });
    if query {
        return Vec::new();
    }
    let sources: Vec<&str> = flags
        .iter()
        .filter(|f| f.kind == FlagKind::Source)
        .map(|f| f.tokens[0].as_str())
        .collect();
    if sources.is_empty() {
        return Vec::new();
    }
    let no_linking = flags.iter().any(|f| f.kind == FlagKind::NoLinking);
    let output = flags
        .iter()
        .rev()
        .find(|f| f.kind == FlagKind::Output && f.tokens.len() == 2)
        .map(|f| f.tokens[1].clone());
    let env_flags = flags_from_environment(env);
    let mut common: Vec<String> = Vec::with_capacity(flags.len() + 4);
    common.push(exe.to_string());
    if !no_linking {
        common.push("-c".into());
    }
    for f in flags {
        match f.kind {
            FlagKind::Source | FlagKind::Output | FlagKind::Linker | FlagKind::DependencyMake => {}
            _ => common.extend(f.tokens.iter().cloned()),
        }
    }
    common.extend(env_flags);
    if let Some(o) = &output {
        common.push("-o".into());
        common.push(o.clone());
    }
    sources
        .into_iter()
        .map(|src| {
            let mut arguments = common.clone();
            arguments.push(src.to_string());
            Entry {
                directory: dir.to_string(),
                file: absolute(dir, src),
                arguments,
                output: output.as_deref().map(|o| absolute(dir, o)),
            }
        })
        .collect()
}

/// argv with every `@file` (after `argv[0]`) replaced by the file's words
/// (GCC's syntax), nested files included up to a depth of 10.
fn expand_response_files(args: &[String], dir: &str, stats: &mut CdbStats) -> Vec<String> {
    fn go(args: &[String], dir: &str, depth: u32, stats: &mut CdbStats, out: &mut Vec<String>) {
        for a in args {
            match a.strip_prefix('@') {
                Some(f) if depth < 10 => match std::fs::read_to_string(absolute(dir, f)) {
                    Ok(text) => {
                        let words = crate::kwspec::split_response(&text);
                        go(&words, dir, depth + 1, stats, out);
                    }
                    Err(_) => {
                        stats.missing_response_files += 1;
                        out.push(a.clone());
                    }
                },
                _ => out.push(a.clone()),
            }
        }
    }
    let mut out = Vec::with_capacity(args.len());
    if let Some((first, rest)) = args.split_first() {
        out.push(first.clone());
        go(rest, dir, 0, stats, &mut out);
    }
    out
}

/// `-I`/`-isystem` pairs from `CPATH`, `C_INCLUDE_PATH`,
/// `CPLUS_INCLUDE_PATH` and `OBJC_INCLUDE_PATH`, as Bear adds them.
fn flags_from_environment(env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    for (var, flag) in [
        ("CPATH", "-I"),
        ("C_INCLUDE_PATH", "-I"),
        ("CPLUS_INCLUDE_PATH", "-I"),
        ("OBJC_INCLUDE_PATH", "-isystem"),
    ] {
        if let Some(v) = env.get(var) {
            for dir in v.split(':') {
                out.push(flag.to_string());
                out.push(if dir.is_empty() { "." } else { dir }.to_string());
            }
        }
    }
    out
}

/// Collects entries over a trace: duplicates by (`file`, `output`) dropped,
/// the first one kept; missing sources dropped when asked.
pub struct CdbBuilder {
    opts: CdbOptions,
    seen: HashSet<(String, Option<String>)>,
    pub entries: Vec<Entry>,
    pub stats: CdbStats,
}

impl CdbBuilder {
    pub fn new(opts: CdbOptions) -> Self {
        CdbBuilder {
            opts,
            seen: HashSet::new(),
            entries: Vec::new(),
            stats: CdbStats::default(),
        }
    }

    pub fn add(&mut self, p: &Process, env: &Env) {
        self.stats.execs += 1;
        let entries = if self.opts.expand_response_files
            && p.args.iter().skip(1).any(|a| a.starts_with('@'))
        {
            let mut q = p.clone();
            q.args = expand_response_files(&p.args, &p.work_dir, &mut self.stats);
            entries_for(&q, env, &self.opts)
        } else {
            entries_for(p, env, &self.opts)
        };
        let Some(entries) = entries else {
            return;
        };
        self.stats.compiler_execs += 1;
        if entries.is_empty() {
            self.stats.no_compilation += 1;
        }
        for e in entries {
            if self.opts.existing_only && !Path::new(&e.file).exists() {
                self.stats.dropped_missing_source += 1;
                continue;
            }
            if !self.seen.insert((e.file.clone(), e.output.clone())) {
                self.stats.dropped_duplicate += 1;
                continue;
            }
            self.stats.entries += 1;
            self.entries.push(e);
        }
    }

    /// Writes the database as Bear does (pretty JSON, keys in order).
    pub fn write<W: Write>(&self, out: W) -> io::Result<()> {
        write_entries(&self.entries, self.opts.with_output, out)
    }
}

pub fn write_entries<W: Write>(entries: &[Entry], with_output: bool, mut out: W) -> io::Result<()> {
    let arr: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("arguments".into(), Value::from(e.arguments.clone()));
            m.insert("directory".into(), Value::from(e.directory.clone()));
            m.insert("file".into(), Value::from(e.file.clone()));
            if with_output {
                if let Some(o) = &e.output {
                    m.insert("output".into(), Value::from(o.clone()));
                }
            }
            Value::Object(m)
        })
        .collect();
    serde_json::to_writer_pretty(&mut out, &arr)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(args: &[&str], env: &[(&str, &str)]) -> Vec<Vec<String>> {
        let mut p = Process::new(1, None, "/w".into(), "/usr/bin/gcc".into());
        p.args = args.iter().map(|s| s.to_string()).collect();
        let env: Env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        entries_for(&p, &env, &CdbOptions::default())
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.arguments)
            .collect()
    }

    fn line(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    /// The examples of build-tools.md §5.3, run through Bear 3.1.1 there.
    #[test]
    fn bear_examples() {
        assert_eq!(
            entries(
                &line("gcc -O2 -Wall -c a.c b.c")
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                &[]
            ),
            vec![
                line("/usr/bin/gcc -O2 -Wall -c a.c"),
                line("/usr/bin/gcc -O2 -Wall -c b.c")
            ]
        );
        let l = line("gcc -O2 -DX=1 a.c b.c -shared -fPIC -Wl,-soname=libx.so.1 -o libx.so");
        assert_eq!(
            entries(&l.iter().map(String::as_str).collect::<Vec<_>>(), &[]),
            vec![
                line("/usr/bin/gcc -c -O2 -DX=1 -fPIC -Wl,-soname=libx.so.1 -o libx.so a.c"),
                line("/usr/bin/gcc -c -O2 -DX=1 -fPIC -Wl,-soname=libx.so.1 -o libx.so b.c"),
            ]
        );
        let l = line("gcc -MD -MP -MF b.d -MT b.o -c b.c -o b.o");
        assert_eq!(
            entries(&l.iter().map(String::as_str).collect::<Vec<_>>(), &[]),
            vec![line("/usr/bin/gcc -c -o b.o b.c")]
        );
        let l = line(
            "cc -O2 main.c util.o libu.a -L. -lm -Wl,--as-needed -fuse-ld=bfd -pthread -o prog",
        );
        assert_eq!(
            entries(&l.iter().map(String::as_str).collect::<Vec<_>>(), &[("CPATH", "/home/dev/inc")]),
            vec![line("/usr/bin/gcc -c -O2 util.o libu.a -Wl,--as-needed -fuse-ld=bfd -pthread -I /home/dev/inc -o prog main.c")]
        );
        let l = line("gcc -x c -c main.c -o m3.o -static-libgcc -T x.ld -Xlinker -q");
        assert_eq!(
            entries(&l.iter().map(String::as_str).collect::<Vec<_>>(), &[]),
            vec![line("/usr/bin/gcc -x c -c -o m3.o main.c")]
        );
        for (cmd, want) in [
            ("gcc -S -O1 main.c", "/usr/bin/gcc -S -O1 main.c"),
            (
                "gcc -omain2.o -c main.c",
                "/usr/bin/gcc -omain2.o -c main.c",
            ),
            (
                "g++ -c @rsp.txt main.c -o m4.o",
                "/usr/bin/gcc -c @rsp.txt -o m4.o main.c",
            ),
        ] {
            let l = line(cmd);
            assert_eq!(
                entries(&l.iter().map(String::as_str).collect::<Vec<_>>(), &[]),
                vec![line(want)],
                "{cmd}"
            );
        }
        for cmd in [
            "gcc -O2 a.o b.o -o prog -lm",
            "gcc -E a.c",
            "gcc -MM a.c",
            "gcc --version",
        ] {
            let l = line(cmd);
            assert!(
                entries(&l.iter().map(String::as_str).collect::<Vec<_>>(), &[]).is_empty(),
                "{cmd}"
            );
        }
    }

    #[test]
    fn lexical_paths() {
        assert_eq!(absolute("/a/b", "../c/./d.c"), "/a/c/d.c");
        assert_eq!(absolute("/a", "/x/y.c"), "/x/y.c");
    }
}
