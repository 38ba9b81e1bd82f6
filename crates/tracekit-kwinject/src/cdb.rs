//! Trace → Clang JSON compilation database (`compile_commands.json`), by
//! Bear 3.1.1's rules (`build-tools.md` §5.3), so a database made by
//! tracekit equals Bear's entry for entry.
//!
//! Bear's configuration file (`--config`,
//! [`BearConfig`](crate::bear_config::BearConfig)) and `--append` mean
//! here what they mean to Bear 3.1.1: extra compilers (with flags to add
//! and remove), compilers to exclude, directories to include or exclude,
//! existing sources only, the duplicate key, `command` strings instead of
//! `arguments`, no `output` field. New entries come first, then the old
//! ones; the filters run over both, so the newest entry of a file wins and
//! entries of deleted sources go.
//!
//! Where tracekit differs by default, [`CdbOptions::bear3`] restores
//! Bear's behaviour: `distcc -j N gcc …` is unwrapped (Bear 3.1.1 takes
//! `-j` for a query and writes nothing); `icecc`/`sccache` are unwrapped;
//! the Clang table stays in use for a Clang behind a launcher or named in
//! the configuration; compilers named in the configuration or in
//! `CC`/`CXX`/`FC` may be bare names (matched by file name).

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::Path;

use serde_json::{Map, Value};

use crate::compiler::{parse, recognize, FlagKind, Flags, Tool};
use crate::trace::{Env, Process};

/// One `compile_commands.json` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub directory: String,
    pub file: String,
    pub arguments: Vec<String>,
    pub output: Option<String>,
}

/// A compiler named by the configuration (`compilers_to_recognize`) or by
/// `CC`/`CXX`/`FC` in the build's environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExtraCompiler {
    /// The executable's path (Bear: exact match). A name without `/`
    /// matches by file name (not in `--bear3` mode).
    pub executable: String,
    /// Appended to every entry's flags (before `-o` and the source).
    pub flags_to_add: Vec<String>,
    /// Arguments removed wherever they occur (exact match, one at a time).
    pub flags_to_remove: Vec<String>,
    /// The flag table to read its command lines with (Bear 4's `as:`);
    /// `None`: by its name (Clang's for a Clang, else GCC's).
    pub flags: Option<Flags>,
}

/// Which fields make two entries duplicates (Bear 3's
/// `duplicate_filter_fields`, Bear 4's `duplicates.match_on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicateKey {
    /// `file`, `output` and `arguments`.
    All,
    /// `file` only.
    File,
    /// `file` and `output` (Bear 3.1.1's default).
    #[default]
    FileOutput,
    /// Bear 4's list of fields (`command` counts as `arguments`: one is
    /// the other written as a string).
    Fields {
        directory: bool,
        file: bool,
        arguments: bool,
        output: bool,
    },
}

/// A source-directory rule (Bear 4's `sources.directories`, tracekit's
/// `--include`/`--exclude`): the last rule whose directory holds a
/// source decides; a source no rule matches is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryRule {
    /// Absolute.
    pub path: String,
    pub include: bool,
}

/// How `file` or `directory` is written (Bear 4's `format.paths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathFormat {
    /// tracekit's (and Bear 3.1.1's): `file` absolute, lexically;
    /// `directory` as the build had it.
    #[default]
    Absolute,
    /// `file` as the command line names it; `directory` as it was.
    AsIs,
    /// Symbolic links resolved (a path that does not exist stays).
    Canonical,
    /// `file` relative to `directory`; `directory` relative to where
    /// tracekit runs.
    Relative,
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
    /// `arguments` (true) or one shell-quoted `command` string.
    pub command_as_array: bool,
    pub duplicates: DuplicateKey,
    /// Keep only sources under one of these directories (absolute), when
    /// any is given.
    pub paths_to_include: Vec<String>,
    /// Drop sources under these directories (absolute).
    pub paths_to_exclude: Vec<String>,
    /// Recognised before the built-in compilers; the last one named wins.
    pub compilers: Vec<ExtraCompiler>,
    /// Executables (exact paths) that never give entries.
    pub compilers_to_exclude: Vec<String>,
    /// Ordered include/exclude rules, after `paths_to_include` and
    /// `paths_to_exclude`.
    pub directory_rules: Vec<DirectoryRule>,
    /// Arguments dropped from every entry (after the compiler): exact, or
    /// a prefix when it ends in `*` (`-march=*`).
    pub drop_flags: Vec<String>,
    pub file_format: PathFormat,
    pub directory_format: PathFormat,
}

impl Default for CdbOptions {
    fn default() -> Self {
        CdbOptions {
            existing_only: true,
            bear3: false,
            with_output: true,
            expand_response_files: false,
            command_as_array: true,
            duplicates: DuplicateKey::FileOutput,
            paths_to_include: Vec::new(),
            paths_to_exclude: Vec::new(),
            compilers: Vec::new(),
            compilers_to_exclude: Vec::new(),
            directory_rules: Vec::new(),
            drop_flags: Vec::new(),
            file_format: PathFormat::Absolute,
            directory_format: PathFormat::Absolute,
        }
    }
}

impl CdbOptions {
    /// Recognises the programs `CC`, `CXX` and `FC` name in the build's
    /// environment (its top-level `env`) as compilers, as Bear 3.1.1 does
    /// with its own environment. Outside `--bear3` mode, a value's first
    /// word counts (`CC="mpicc -std=c11"`), and a program the built-in
    /// rules know already is left to them (they know its flag table).
    pub fn add_environment_compilers(&mut self, env: &Env) {
        for var in ["CC", "CXX", "FC"] {
            let Some(value) = env.get(var) else { continue };
            let program = if self.bear3 {
                value.as_str()
            } else {
                match value.split_whitespace().next() {
                    Some(p) => p,
                    None => continue,
                }
            };
            if !self.bear3 && recognize(program).is_some() {
                continue;
            }
            if self.compilers.iter().any(|c| c.executable == program) {
                continue;
            }
            self.compilers.push(ExtraCompiler {
                executable: program.to_string(),
                ..Default::default()
            });
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
    /// Compiler runs with an argument Bear's rules cannot read (an empty
    /// one): no entry, as with Bear.
    pub unreadable_arguments: u64,
    /// Runs of a compiler in `compilers_to_exclude`.
    pub excluded_compiler: u64,
    /// Entries read from the existing database (`--append`).
    pub appended: u64,
    pub entries: u64,
    pub dropped_missing_source: u64,
    /// Sources outside `paths_to_include` or inside `paths_to_exclude`.
    pub dropped_by_path: u64,
    pub dropped_duplicate: u64,
    /// `@file` arguments whose file could not be read.
    pub missing_response_files: u64,
    /// Arguments taken out by `drop_flags`.
    pub dropped_flags: u64,
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

/// How Bear's rules see one execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call<'a> {
    /// Not a compiler run.
    Other,
    /// Its executable is in `compilers_to_exclude`.
    Excluded,
    /// A launcher or compiler asked for information only (`ccache -s`).
    Query,
    /// A compiler run: the executable that goes into `arguments[0]`, the
    /// arguments after it, the flag table, and the configured compiler it
    /// matched.
    Compiler {
        executable: String,
        args: &'a [String],
        flags: Flags,
        extra: Option<&'a ExtraCompiler>,
    },
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Recognises an execution: excluded compilers, then configured ones (the
/// last named first), then the built-in families and launchers.
pub fn classify_call<'a>(p: &'a Process, env: &Env, opts: &'a CdbOptions) -> Call<'a> {
    let exe: &str = if p.executable.is_empty() {
        match p.args.first() {
            Some(a) => a,
            None => return Call::Other,
        }
    } else {
        &p.executable
    };
    let args = p.args.get(1..).unwrap_or(&[]);
    if opts.compilers_to_exclude.iter().any(|x| x == exe) {
        return Call::Excluded;
    }
    let by_name = |c: &ExtraCompiler| {
        !opts.bear3 && !c.executable.contains('/') && c.executable == file_name(exe)
    };
    if let Some(c) = opts
        .compilers
        .iter()
        .rev()
        .find(|c| c.executable == exe || by_name(c))
    {
        let flags = c.flags.unwrap_or(match recognize(exe) {
            Some(Tool::Clang) if !opts.bear3 => Flags::Clang,
            _ => Flags::Gcc,
        });
        return Call::Compiler {
            executable: exe.to_string(),
            args,
            flags,
            extra: Some(c),
        };
    }
    let Some(tool) = recognize(exe) else {
        return Call::Other;
    };
    match tool {
        Tool::Gcc | Tool::Clang | Tool::Nvcc => Call::Compiler {
            executable: exe.to_string(),
            args,
            flags: Flags::for_tool(tool),
            extra: None,
        },
        Tool::Ccache => match args.first() {
            Some(first) if !first.is_empty() && !first.starts_with('-') => {
                unwrapped(first, &args[1..], env, opts)
            }
            _ => Call::Query,
        },
        Tool::Launcher if opts.bear3 => Call::Other,
        Tool::Launcher => match args.first() {
            Some(first) if !first.is_empty() && !first.starts_with('-') => {
                unwrapped(first, &args[1..], env, opts)
            }
            _ => Call::Query,
        },
        Tool::Distcc => {
            let mut i = 0;
            if opts.bear3 {
                match args.first() {
                    Some(a) if !a.is_empty() && !DISTCC_QUERIES.contains(&a.as_str()) => {}
                    _ => return Call::Query,
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
                        return Call::Query;
                    } else {
                        break;
                    }
                }
            }
            match args.get(i) {
                Some(first) if !first.is_empty() && !first.starts_with('-') => {
                    unwrapped(first, &args[i + 1..], env, opts)
                }
                _ => Call::Query,
            }
        }
    }
}

/// The compiler behind a launcher: looked up on the execution's `PATH`,
/// parsed with GCC's table (Bear 3.1.1), or with Clang's for a Clang
/// (tracekit).
fn unwrapped<'a>(program: &str, args: &'a [String], env: &Env, opts: &CdbOptions) -> Call<'a> {
    let flags = match recognize(program) {
        Some(Tool::Clang) if !opts.bear3 => Flags::Clang,
        _ => Flags::Gcc,
    };
    Call::Compiler {
        executable: resolve_on_path(program, env),
        args,
        flags,
        extra: None,
    }
}

/// The compiler behind an execution: (executable, argv without `argv[0]`),
/// unwrapping one launcher; `None` when it is not a compiler run.
pub fn compiler_call<'a>(
    p: &'a Process,
    env: &Env,
    opts: &'a CdbOptions,
) -> Option<(String, &'a [String])> {
    match classify_call(p, env, opts) {
        Call::Compiler {
            executable, args, ..
        } => Some((executable, args)),
        _ => None,
    }
}

/// What one compiler run gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Entries(Vec<Entry>),
    /// A query, preprocessing, a link without sources: nothing to compile.
    NoCompilation,
    /// An argument Bear's rules cannot read (an empty one).
    Unreadable,
    /// A compiler in `compilers_to_exclude`.
    Excluded,
}

/// The entries one execution gives (before the filters); `None` when it is
/// not a compiler run.
pub fn entries_for(p: &Process, env: &Env, opts: &CdbOptions) -> Option<Vec<Entry>> {
    match outcome_for(p, env, opts)? {
        Outcome::Entries(e) => Some(e),
        Outcome::Excluded => None,
        _ => Some(Vec::new()),
    }
}

/// [`entries_for`], saying why a compiler run gives none; `None` when it
/// is not a compiler run.
pub fn outcome_for(p: &Process, env: &Env, opts: &CdbOptions) -> Option<Outcome> {
    match classify_call(p, env, opts) {
        Call::Other => None,
        Call::Excluded => Some(Outcome::Excluded),
        Call::Query => Some(Outcome::NoCompilation),
        Call::Compiler {
            executable,
            args,
            flags,
            extra,
        } => Some(compile_entries(
            &executable,
            &p.work_dir,
            args,
            flags,
            extra,
            env,
        )),
    }
}

/// Bear 3.1.1's `Compile` semantic: arguments plus the flags the
/// environment implies, classified; no entry for queries, `-E`, `-M`,
/// `-MM`, or without a source; `-c` first when the run also links; the
/// configured compiler's flags removed and added; then one entry per
/// source: compiler, flags, `-o OUTPUT`, the source.
fn compile_entries(
    exe: &str,
    dir: &str,
    args: &[String],
    table: Flags,
    extra: Option<&ExtraCompiler>,
    env: &Env,
) -> Outcome {
    let env_flags = flags_from_environment(env);
    let with_env;
    let input: &[String] = if env_flags.is_empty() {
        args
    } else {
        with_env = [args, &env_flags].concat();
        &with_env
    };
    let Ok(flags) = parse(input, table) else {
        return Outcome::Unreadable;
    };
    let query = flags.is_empty()
        || flags.iter().any(|f| {
            f.kind == FlagKind::Info
                || (f.kind == FlagKind::DependencyMake && (f.name == "-M" || f.name == "-MM"))
                || (f.kind == FlagKind::NoLinking && f.name == "-E")
        });
    if query {
        return Outcome::NoCompilation;
    }
    let mut kept: Vec<String> = Vec::with_capacity(input.len() + 1);
    let mut sources: Vec<&str> = Vec::new();
    let mut output: Option<&str> = None;
    for f in &flags {
        match f.kind {
            FlagKind::Source => sources.push(&f.tokens[0]),
            FlagKind::Output => output = f.tokens.last().map(String::as_str),
            FlagKind::Linker | FlagKind::DependencyMake => {}
            _ => kept.extend(f.tokens.iter().cloned()),
        }
    }
    if sources.is_empty() {
        return Outcome::NoCompilation;
    }
    if !flags.iter().any(|f| f.kind == FlagKind::NoLinking) {
        kept.insert(0, "-c".into());
    }
    if let Some(c) = extra {
        kept.retain(|a| !c.flags_to_remove.contains(a));
        kept.extend(c.flags_to_add.iter().cloned());
    }
    let entries = sources
        .into_iter()
        .map(|src| {
            let mut arguments = Vec::with_capacity(kept.len() + 4);
            arguments.push(exe.to_string());
            arguments.extend(kept.iter().cloned());
            if let Some(o) = output {
                arguments.push("-o".into());
                arguments.push(o.to_string());
            }
            arguments.push(src.to_string());
            Entry {
                directory: dir.to_string(),
                file: absolute(dir, src),
                arguments,
                output: output.map(|o| absolute(dir, o)),
            }
        })
        .collect();
    Outcome::Entries(entries)
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
/// `CPLUS_INCLUDE_PATH` and `OBJC_INCLUDE_PATH`, as Bear adds them (an
/// empty variable adds nothing, an empty entry means `.`).
fn flags_from_environment(env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    for (var, flag) in [
        ("CPATH", "-I"),
        ("C_INCLUDE_PATH", "-I"),
        ("CPLUS_INCLUDE_PATH", "-I"),
        ("OBJC_INCLUDE_PATH", "-isystem"),
    ] {
        match env.get(var) {
            Some(v) if !v.is_empty() => {
                for dir in v.split(':') {
                    out.push(flag.to_string());
                    out.push(if dir.is_empty() { "." } else { dir }.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// `dir` holds `file`, component by component (both absolute, lexical).
fn contains(dir: &str, file: &str) -> bool {
    let mut f = file.split('/').filter(|c| !c.is_empty());
    dir.split('/')
        .filter(|c| !c.is_empty())
        .all(|d| f.next() == Some(d))
}

/// (directory, file, output, arguments) as far as the duplicate key
/// looks at them.
type DupKey = (Option<String>, Option<String>, Option<String>, Vec<String>);

/// `arg` is one of `drop`: equal, or starting with a pattern's text
/// before its final `*`.
fn drop_matches(drop: &[String], arg: &str) -> bool {
    drop.iter().any(|d| match d.strip_suffix('*') {
        Some(prefix) => arg.starts_with(prefix),
        None => arg == d,
    })
}

/// `path` relative to the directory `base` (both absolute), lexically.
pub fn relative_to(path: &str, base: &str) -> String {
    let p: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let b: Vec<&str> = base.split('/').filter(|c| !c.is_empty()).collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<&str> = vec![".."; b.len() - common];
    parts.extend(&p[common..]);
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

fn canonical(path: &str) -> String {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| path.to_string())
}

/// Writes `file` and `directory` of a new entry as Bear 4's
/// `format.paths` asks.
fn format_paths(e: &mut Entry, file: PathFormat, directory: PathFormat, cwd: &str) {
    let dir = e.directory.clone();
    match file {
        PathFormat::Absolute => {}
        PathFormat::AsIs => {
            // The source is the last argument of every entry made here.
            if let Some(last) = e.arguments.last() {
                if absolute(&dir, last) == e.file {
                    e.file = last.clone();
                }
            }
        }
        PathFormat::Canonical => e.file = canonical(&e.file),
        PathFormat::Relative => e.file = relative_to(&e.file, &dir),
    }
    match directory {
        PathFormat::Absolute | PathFormat::AsIs => {}
        PathFormat::Canonical => e.directory = canonical(&dir),
        PathFormat::Relative => e.directory = relative_to(&dir, cwd),
    }
}

/// Collects the entries of a trace, then (in [`CdbBuilder::finish`]) puts
/// the existing database's entries after them and filters both as Bear
/// 3.1.1 writes its output: existing sources only (when asked), the
/// include and exclude directories, then duplicates (the first wins, so a
/// new entry replaces an old one).
pub struct CdbBuilder {
    opts: CdbOptions,
    /// Before [`finish`](Self::finish): every entry in order (new, then
    /// appended); after: the database.
    pub entries: Vec<Entry>,
    appended: Vec<Entry>,
    finished: bool,
    pub stats: CdbStats,
}

impl CdbBuilder {
    pub fn new(opts: CdbOptions) -> Self {
        CdbBuilder {
            opts,
            entries: Vec::new(),
            appended: Vec::new(),
            finished: false,
            stats: CdbStats::default(),
        }
    }

    pub fn options(&self) -> &CdbOptions {
        &self.opts
    }

    pub fn add(&mut self, p: &Process, env: &Env) {
        self.stats.execs += 1;
        let outcome = if self.opts.expand_response_files
            && p.args.iter().skip(1).any(|a| a.starts_with('@'))
        {
            let mut q = p.clone();
            q.args = expand_response_files(&p.args, &p.work_dir, &mut self.stats);
            outcome_for(&q, env, &self.opts)
        } else {
            outcome_for(p, env, &self.opts)
        };
        match outcome {
            None => return,
            Some(Outcome::Excluded) => {
                self.stats.excluded_compiler += 1;
                return;
            }
            Some(Outcome::Entries(mut e)) => {
                if !self.opts.drop_flags.is_empty() {
                    for entry in &mut e {
                        let before = entry.arguments.len();
                        let mut k = 0;
                        let drop = &self.opts.drop_flags;
                        entry.arguments.retain(|a| {
                            k += 1;
                            k == 1 || !drop_matches(drop, a)
                        });
                        self.stats.dropped_flags += (before - entry.arguments.len()) as u64;
                    }
                }
                self.entries.extend(e)
            }
            Some(Outcome::NoCompilation) => self.stats.no_compilation += 1,
            Some(Outcome::Unreadable) => self.stats.unreadable_arguments += 1,
        }
        self.stats.compiler_execs += 1;
    }

    /// The existing database's entries (`--append`), placed after the new
    /// ones.
    pub fn append(&mut self, old: Vec<Entry>) {
        self.stats.appended += old.len() as u64;
        self.appended.extend(old);
    }

    /// Applies the filters once; [`entries`](Self::entries) is then the
    /// database.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let mut all = std::mem::take(&mut self.entries);
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        for e in &mut all {
            format_paths(e, self.opts.file_format, self.opts.directory_format, &cwd);
        }
        all.append(&mut self.appended);
        let mut seen: HashSet<DupKey> = HashSet::new();
        for e in all {
            // Filters see the source's absolute path, whatever the format.
            let file = absolute(&absolute(&cwd, &e.directory), &e.file);
            if self.opts.existing_only && !Path::new(&file).exists() {
                self.stats.dropped_missing_source += 1;
                continue;
            }
            let included = self.opts.paths_to_include.is_empty()
                || self
                    .opts
                    .paths_to_include
                    .iter()
                    .any(|d| contains(d, &file));
            let ruled = self
                .opts
                .directory_rules
                .iter()
                .rev()
                .find(|r| contains(&r.path, &file))
                .is_none_or(|r| r.include);
            if !included
                || !ruled
                || self
                    .opts
                    .paths_to_exclude
                    .iter()
                    .any(|d| contains(d, &file))
            {
                self.stats.dropped_by_path += 1;
                continue;
            }
            let f = Some(e.file.clone());
            let key = match self.opts.duplicates {
                DuplicateKey::File => (None, f, None, Vec::new()),
                DuplicateKey::FileOutput => (None, f, e.output.clone(), Vec::new()),
                DuplicateKey::All => (None, f, e.output.clone(), e.arguments.clone()),
                DuplicateKey::Fields {
                    directory,
                    file,
                    arguments,
                    output,
                } => (
                    directory.then(|| e.directory.clone()),
                    if file { f } else { None },
                    if output { e.output.clone() } else { None },
                    if arguments {
                        e.arguments.clone()
                    } else {
                        Vec::new()
                    },
                ),
            };
            if !seen.insert(key) {
                self.stats.dropped_duplicate += 1;
                continue;
            }
            self.entries.push(e);
        }
        self.stats.entries = self.entries.len() as u64;
    }

    /// Writes the database as Bear does (pretty JSON, keys in order).
    pub fn write<W: Write>(&mut self, out: W) -> io::Result<()> {
        self.finish();
        write_database(
            &self.entries,
            self.opts.with_output,
            self.opts.command_as_array,
            out,
        )
    }
}

pub fn write_entries<W: Write>(entries: &[Entry], with_output: bool, out: W) -> io::Result<()> {
    write_database(entries, with_output, true, out)
}

/// The database as Bear 3.1.1 writes it: keys sorted (`arguments` or
/// `command`, `directory`, `file`, `output`), two-space indentation.
pub fn write_database<W: Write>(
    entries: &[Entry],
    with_output: bool,
    command_as_array: bool,
    mut out: W,
) -> io::Result<()> {
    let arr: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut m = Map::new();
            if command_as_array {
                m.insert("arguments".into(), Value::from(e.arguments.clone()));
            } else {
                m.insert("command".into(), Value::from(shell_join(&e.arguments)));
            }
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

/// One argument quoted as Bear 3.1.1 does for `command`: a backslash
/// before every character outside `A-Za-z0-9_-.,:/@` and newline, a
/// newline as `'\n'`, the empty string as `''`. (Bear escapes each byte of
/// a non-ASCII character; tracekit escapes the character once.)
pub fn shell_quote(arg: &str) -> String {
    if arg.is_empty() {
        return "''".into();
    }
    let mut s = String::with_capacity(arg.len() + 2);
    for c in arg.chars() {
        match c {
            '\n' => s.push_str("'\n'"),
            c if c.is_ascii_alphanumeric() || "_-.,:/@".contains(c) => s.push(c),
            c => {
                s.push('\\');
                s.push(c);
            }
        }
    }
    s
}

pub fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A compilation database that cannot be read for `--append`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseError {
    /// 1-based line of a JSON syntax error, when it is one.
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{l}: {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

/// Reads a compilation database (`arguments` or `command`, which is split
/// as a POSIX shell would). Bear 3.1.1 refuses the whole file when an
/// entry lacks `file`, `directory` or both `arguments` and `command`, or
/// has one of them empty; so does this.
pub fn read_database<R: io::Read>(input: R) -> Result<Vec<Entry>, DatabaseError> {
    let v: Value = serde_json::from_reader(input).map_err(|e| DatabaseError {
        line: Some(e.line()),
        message: e.to_string(),
    })?;
    let Value::Array(items) = v else {
        return Err(DatabaseError {
            line: None,
            message: "not a JSON array of entries".into(),
        });
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let bad = |what: String| DatabaseError {
            line: None,
            message: format!("entry {}: {what}", i + 1),
        };
        let Value::Object(mut m) = item else {
            return Err(bad("not an object".into()));
        };
        let mut text = |key: &str, required: bool| -> Result<Option<String>, DatabaseError> {
            match m.remove(key) {
                Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
                Some(Value::String(_)) => Err(bad(format!("\"{key}\" is empty"))),
                Some(_) => Err(bad(format!("\"{key}\" is not a string"))),
                None if required => Err(bad(format!("no \"{key}\""))),
                None => Ok(None),
            }
        };
        let file = text("file", true)?.unwrap_or_default();
        let directory = text("directory", true)?.unwrap_or_default();
        let output = text("output", false)?;
        let command = text("command", false)?;
        let arguments = match m.remove("arguments") {
            Some(Value::Array(a)) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    _ => Err(bad(
                        "\"arguments\" holds a value that is not a string".into()
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(bad("\"arguments\" is not an array".into())),
            None => match command {
                Some(c) => shlex::split(&c)
                    .ok_or_else(|| bad("\"command\" has unbalanced quotes".into()))?,
                None => return Err(bad("neither \"arguments\" nor \"command\"".into())),
            },
        };
        if arguments.is_empty() {
            return Err(bad("\"arguments\" is empty".into()));
        }
        out.push(Entry {
            directory,
            file,
            arguments,
            output,
        });
    }
    Ok(out)
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

    fn process(exe: &str, args: &[&str]) -> Process {
        let mut p = Process::new(1, None, "/w".into(), exe.into());
        p.args = args.iter().map(|s| s.to_string()).collect();
        p
    }

    /// Bear's `use_cc`/`use_cxx` cases: a program `CC`/`CXX` names is a
    /// compiler, whatever its name.
    #[test]
    fn environment_compilers() {
        let p = process("/usr/bin/true", &["true", "-c", "-o", "a.o", "a.c"]);
        let env = Env::new();
        let mut opts = CdbOptions::default();
        assert_eq!(entries_for(&p, &env, &opts), None);
        let build_env: Env = [("CXX", "/usr/bin/true"), ("CC", "gcc -m32")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        opts.add_environment_compilers(&build_env);
        // `gcc` is known already: only `true` is added.
        assert_eq!(opts.compilers.len(), 1);
        let e = entries_for(&p, &env, &opts).unwrap();
        assert_eq!(e[0].arguments, ["/usr/bin/true", "-c", "-o", "a.o", "a.c"]);
        // A bare name matches by file name, except in --bear3 mode.
        let mut opts = CdbOptions::default();
        let mpi: Env = [("CC".to_string(), "mpicc".to_string())].into();
        opts.add_environment_compilers(&mpi);
        let p = process("/usr/bin/mpicc", &["mpicc", "-c", "x.c"]);
        assert_eq!(entries_for(&p, &env, &opts).map(|e| e.len()), Some(1));
        opts.bear3 = true;
        assert_eq!(entries_for(&p, &env, &opts), None);
    }

    /// Bear's `empty_argument` case: an empty argument gives no entry.
    #[test]
    fn empty_argument_gives_nothing() {
        let env = Env::new();
        let opts = CdbOptions::default();
        for args in [
            &["cc", "-c", "-o", "a.o", "a.c", ""][..],
            &["cc", "-c", "-o", "a.o", "", "a.c"][..],
        ] {
            let p = process("/usr/bin/cc", args);
            assert_eq!(outcome_for(&p, &env, &opts), Some(Outcome::Unreadable));
        }
        // An empty variable adds no `-I`; an empty entry is `.`.
        let p = process("/usr/bin/cc", &["cc", "-c", "a.c"]);
        let cpath = |v: &str| -> Env { [("CPATH".to_string(), v.to_string())].into() };
        assert_eq!(
            entries_for(&p, &cpath(""), &opts).unwrap()[0]
                .arguments
                .len(),
            3
        );
        assert_eq!(
            entries_for(&p, &cpath(":/x"), &opts).unwrap()[0].arguments,
            ["/usr/bin/cc", "-c", "-I", ".", "-I", "/x", "a.c"]
        );
    }

    #[test]
    fn configured_compilers_and_exclusions() {
        let env = Env::new();
        let mut opts = CdbOptions {
            compilers: vec![ExtraCompiler {
                executable: "/opt/mpi/bin/mpicc".into(),
                flags_to_add: vec!["-I/opt/mpi/include".into()],
                flags_to_remove: vec!["-Wall".into(), "-c".into()],
                flags: None,
            }],
            compilers_to_exclude: vec!["/usr/bin/c++".into()],
            ..Default::default()
        };
        let p = process("/opt/mpi/bin/mpicc", &["mpicc", "-Wall", "a.c", "-o", "a"]);
        assert_eq!(
            entries_for(&p, &env, &opts).unwrap()[0].arguments,
            ["/opt/mpi/bin/mpicc", "-I/opt/mpi/include", "-o", "a", "a.c"]
        );
        let p = process("/usr/bin/c++", &["c++", "-c", "a.cc"]);
        assert_eq!(entries_for(&p, &env, &opts), None);
        // A configured Clang keeps Clang's table (GCC's with --bear3).
        opts.compilers[0].executable = "/usr/bin/clang".into();
        let p = process(
            "/usr/bin/clang",
            &["clang", "-c", "a.c", "-Xclang", "-load"],
        );
        assert_eq!(
            entries_for(&p, &env, &opts).unwrap()[0].arguments,
            [
                "/usr/bin/clang",
                "-Xclang",
                "-load",
                "-I/opt/mpi/include",
                "a.c"
            ]
        );
        opts.bear3 = true;
        assert_eq!(
            entries_for(&p, &env, &opts).unwrap()[0].arguments,
            ["/usr/bin/clang", "-Xclang", "-I/opt/mpi/include", "a.c"]
        );
    }

    fn entry(file: &str, output: Option<&str>, args: &[&str]) -> Entry {
        Entry {
            directory: "/w".into(),
            file: file.into(),
            arguments: args.iter().map(|s| s.to_string()).collect(),
            output: output.map(str::to_string),
        }
    }

    /// `--append`: new entries first, then old ones; the newest entry of a
    /// (file, output) wins; the path filters and the duplicate key apply to
    /// both.
    #[test]
    fn append_and_filters() {
        let opts = CdbOptions {
            existing_only: false,
            paths_to_exclude: vec!["/w/test".into()],
            ..Default::default()
        };
        let mut b = CdbBuilder::new(opts.clone());
        let p = process("/usr/bin/cc", &["cc", "-O1", "-c", "a.c", "-o", "a.o"]);
        b.add(&p, &Env::new());
        b.append(vec![
            entry("/w/a.c", Some("/w/a.o"), &["cc", "-O2", "-c", "a.c"]),
            entry("/w/b.c", Some("/w/b.o"), &["cc", "-c", "b.c"]),
            entry("/w/test/t.c", None, &["cc", "-c", "t.c"]),
            entry("/w/testing.c", None, &["cc", "-c", "testing.c"]),
        ]);
        b.finish();
        let files: Vec<(&str, &str)> = b
            .entries
            .iter()
            .map(|e| (e.file.as_str(), e.arguments[1].as_str()))
            .collect();
        assert_eq!(
            files,
            [("/w/a.c", "-O1"), ("/w/b.c", "-c"), ("/w/testing.c", "-c")]
        );
        assert_eq!(
            (
                b.stats.appended,
                b.stats.dropped_duplicate,
                b.stats.dropped_by_path
            ),
            (4, 1, 1)
        );
        // Keyed on the file alone, or on everything.
        for (key, n) in [(DuplicateKey::File, 1), (DuplicateKey::All, 3)] {
            let mut b = CdbBuilder::new(CdbOptions {
                duplicates: key,
                ..opts.clone()
            });
            b.append(vec![
                entry("/w/a.c", Some("/w/a.o"), &["cc", "-c", "a.c"]),
                entry("/w/a.c", Some("/w/a.pic.o"), &["cc", "-c", "a.c"]),
                entry("/w/a.c", Some("/w/a.pic.o"), &["cc", "-fPIC", "-c", "a.c"]),
            ]);
            b.finish();
            assert_eq!(b.entries.len(), n, "{key:?}");
        }
        let mut b = CdbBuilder::new(CdbOptions {
            paths_to_include: vec!["/w/test/".into()],
            ..opts
        });
        b.append(vec![
            entry("/w/test/t.c", None, &["cc"]),
            entry("/w/b.c", None, &["cc"]),
        ]);
        b.finish();
        assert_eq!(b.entries.len(), 0, "excluded wins over included");
    }

    /// Bear 4's ordered directory rules and duplicate fields, path
    /// formats, and flags dropped from every entry.
    #[test]
    fn bear4_rules_formats_and_dropped_flags() {
        let opts = CdbOptions {
            existing_only: false,
            directory_rules: vec![
                DirectoryRule {
                    path: "/w/src".into(),
                    include: false,
                },
                DirectoryRule {
                    path: "/w/src/keep".into(),
                    include: true,
                },
            ],
            drop_flags: vec!["-mthumb".into(), "-march=*".into()],
            duplicates: DuplicateKey::Fields {
                directory: true,
                file: true,
                arguments: false,
                output: false,
            },
            file_format: PathFormat::Relative,
            ..Default::default()
        };
        let mut b = CdbBuilder::new(opts.clone());
        for args in [
            &["cc", "-mthumb", "-march=armv7-m", "-O2", "-c", "src/a.c"][..],
            &["cc", "-c", "src/keep/b.c", "-o", "b.o"][..],
            &["cc", "-O1", "-c", "src/keep/b.c", "-o", "b1.o"][..],
            &["cc", "-c", "c.c"][..],
        ] {
            b.add(&process("/usr/bin/cc", args), &Env::new());
        }
        b.finish();
        let got: Vec<(&str, &[String])> = b
            .entries
            .iter()
            .map(|e| (e.file.as_str(), &e.arguments[..]))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "src/keep/b.c");
        assert_eq!(got[1], ("c.c", &line("/usr/bin/cc -c c.c")[..]));
        assert_eq!((b.stats.dropped_by_path, b.stats.dropped_duplicate), (1, 1));
        let mut b = CdbBuilder::new(CdbOptions {
            directory_rules: vec![],
            ..opts
        });
        b.add(
            &process(
                "/usr/bin/cc",
                &["cc", "-mthumb", "-march=armv7-m", "-O2", "-c", "src/a.c"],
            ),
            &Env::new(),
        );
        b.finish();
        assert_eq!(b.entries[0].arguments, line("/usr/bin/cc -O2 -c src/a.c"));
        assert_eq!(b.stats.dropped_flags, 2);
        assert_eq!(relative_to("/w/a/b.c", "/w/x/y"), "../../a/b.c");
        let mut e = entry("/w/sub/a.c", None, &["cc", "-c", "sub/a.c"]);
        format_paths(&mut e, PathFormat::AsIs, PathFormat::AsIs, "/");
        assert_eq!(e.file, "sub/a.c");
    }

    #[test]
    fn command_strings_round_trip() {
        let args: Vec<String> = [
            "/usr/bin/gcc",
            "-DMESSAGE=\"Hello World\\n\"",
            "-DX=a b",
            "",
            "it's",
            "line\nfeed",
            "ünï",
            "$HOME",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let text = shell_join(&args);
        assert!(
            text.starts_with("/usr/bin/gcc -DMESSAGE\\=\\\"Hello\\ World"),
            "{text}"
        );
        assert_eq!(shlex::split(&text).unwrap(), args);
        let mut out = Vec::new();
        write_database(
            &[entry("/w/a.c", None, &["cc", "a b.c"])],
            true,
            false,
            &mut out,
        )
        .unwrap();
        let back = read_database(&out[..]).unwrap();
        assert_eq!(back[0].arguments, ["cc", "a b.c"]);
    }

    #[test]
    fn unreadable_databases() {
        for (text, want) in [
            ("{}", "not a JSON array"),
            ("[\n{\"file\": 1}]", "entry 1: \"file\" is not a string"),
            (r#"[{"file":"a.c","directory":"/w"}]"#, "neither"),
            (
                r#"[{"file":"a.c","directory":"/w","arguments":[]}]"#,
                "is empty",
            ),
            (
                r#"[{"file":"a.c","directory":"","arguments":["cc"]}]"#,
                "\"directory\" is empty",
            ),
            (
                r#"[{"file":"a.c","directory":"/w","command":"cc 'a.c"}]"#,
                "unbalanced",
            ),
            ("[\n\n{", "3:"),
        ] {
            let e = read_database(text.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn lexical_paths() {
        assert_eq!(absolute("/a/b", "../c/./d.c"), "/a/c/d.c");
        assert_eq!(absolute("/a", "/x/y.c"), "/x/y.c");
    }
}
