//! Build logs: the commands a build printed (or would have run), read back
//! into executions, so that a compilation database or a build
//! specification can be made from a build that already ran, or that
//! cannot run under a recorder.
//!
//! Formats, detected from the content ([`LogFormat`]):
//! * **make**: `make -n` / `make -Bn`, `make V=1`, CMake's `VERBOSE=1`
//!   output: one recipe line per command (backslash-newline continues it),
//!   and GNU make's `make[N]: Entering directory '...'` / `Leaving
//!   directory` lines (printed for every recursive make unless
//!   `--no-print-directory`), which set the directory of what follows;
//! * **ninja**: `ninja -t commands` (one command per line) and `ninja -v`
//!   (`[12/40] cmd`; `ninja: Entering directory` sets the directory);
//! * **shell**: any other text of command lines, read as a shell would:
//!   quotes, escapes, `cd DIR && ...`, `(cd DIR; ...)`, `sh -c '...'`;
//! * **strace**: `strace -f -e trace=execve,chdir[,clone,fork,vfork]`
//!   logs: the exact argv and executable of every successful `execve`, the
//!   directory from `chdir` (and the process tree from clone/fork/vfork).
//!
//! What a log cannot know is said, never guessed silently: the
//! directory of a command is tagged ([`DirSource`]); lines that cannot be
//! read are listed by line number ([`Unparsed`]).

use std::collections::HashMap;

use crate::cdb::absolute;
use crate::shell::{self, Dir, ShellError};
use crate::trace::{Env, Process};

/// What kind of log it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// make's output (`make -n`, `V=1`, `VERBOSE=1`).
    Make,
    /// `ninja -v` or `ninja -t commands`.
    Ninja,
    /// An strace log.
    Strace,
    /// Plain command lines.
    Shell,
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Make => "make",
            LogFormat::Ninja => "ninja",
            LogFormat::Strace => "strace",
            LogFormat::Shell => "shell",
        }
    }
}

/// How the directory of a command is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirSource {
    /// The directory the log was read against (`-C`, or the current one).
    Start,
    /// make's `Entering directory` line (its line number).
    Entering(usize),
    /// `ninja: Entering directory` (its line number).
    Ninja(usize),
    /// A `cd DIR` in the command's own line.
    Cd,
    /// strace's `chdir` of the process or its ancestors: exact.
    Strace,
    /// A `make -C DIR` (or `cd DIR && make`) at this line, in a log that
    /// prints no `Entering directory` lines: the commands after it are
    /// taken to run there, until the next such line.
    AfterMake(usize),
    /// Not known: `cd $VAR`, or an strace log without clone/fork lines
    /// in which processes change directory (the start directory is used).
    Unknown(&'static str),
}

impl DirSource {
    /// Whether the directory is known from the log itself.
    pub fn is_certain(&self) -> bool {
        !matches!(self, DirSource::AfterMake(_) | DirSource::Unknown(_))
    }

    pub fn describe(&self) -> String {
        match self {
            DirSource::Start => "the start directory".into(),
            DirSource::Entering(l) => format!("make's Entering directory line {l}"),
            DirSource::Ninja(l) => format!("ninja's Entering directory line {l}"),
            DirSource::Cd => "a cd on its line".into(),
            DirSource::Strace => "strace's chdir".into(),
            DirSource::AfterMake(l) => format!(
                "inferred from the recursive make at line {l} (the log prints no Entering \
                 directory lines)"
            ),
            DirSource::Unknown(why) => format!("unknown: {why}"),
        }
    }
}

/// One command of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCommand {
    /// 1-based line where it starts.
    pub line: usize,
    pub dir: String,
    pub dir_source: DirSource,
    /// The program that ran, when the log says (strace's execve path);
    /// else `None` (the caller looks `args[0]` up).
    pub executable: Option<String>,
    pub args: Vec<String>,
    /// Assignments before it (`CCACHE_DIR=x ccache gcc ...`).
    pub assignments: Vec<(String, String)>,
    /// An argument holds an unexpanded `$` or backquote.
    pub unexpanded: bool,
}

/// A line (or lines) that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsed {
    pub line: usize,
    pub reason: String,
    /// The text, cut at 200 characters.
    pub text: String,
}

/// A build log read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildLog {
    pub format: LogFormat,
    pub commands: Vec<LogCommand>,
    pub unparsed: Vec<Unparsed>,
    pub lines: usize,
    /// make's and ninja's own messages (`Nothing to be done`, `***`
    /// errors, `Entering directory`), not commands.
    pub messages: usize,
    /// strace: failed execs (`= -1 ENOENT` along `PATH`), not commands.
    pub failed_execs: usize,
}

fn cut(s: &str) -> String {
    if s.chars().count() > 200 {
        let mut t: String = s.chars().take(197).collect();
        t.push_str("...");
        t
    } else {
        s.to_string()
    }
}

/// Detects the log's format from its first lines.
pub fn detect(text: &str) -> LogFormat {
    let mut make = false;
    let mut ninja = false;
    for line in text.lines().take(500) {
        if strace_line(line).is_some() {
            return LogFormat::Strace;
        }
        if make_message(line).is_some() {
            make = true;
        }
        if ninja_progress(line).is_some() || line.starts_with("ninja: ") {
            ninja = true;
        }
    }
    if ninja {
        LogFormat::Ninja
    } else if make {
        LogFormat::Make
    } else {
        LogFormat::Shell
    }
}

/// Reads `text`, a build log, against the directory `start` (absolute).
pub fn read(text: &str, start: &str) -> BuildLog {
    let format = detect(text);
    if format == LogFormat::Strace {
        return read_strace(text, start);
    }
    read_commands(text, start, format)
}

/// `make[2]: Entering directory '/x'` → (program, message).
fn make_message(line: &str) -> Option<(&str, &str)> {
    let (head, rest) = line.split_once(": ")?;
    let prog = match head.split_once('[') {
        Some((p, level))
            if level.ends_with(']') && level[..level.len() - 1].parse::<u32>().is_ok() =>
        {
            p
        }
        None => head,
        _ => return None,
    };
    let name = prog.rsplit('/').next().unwrap_or(prog);
    if matches!(name, "make" | "gmake" | "remake") {
        Some((name, rest))
    } else {
        None
    }
}

/// The directory of an `Entering directory '...'` message (GNU make
/// quotes with `'...'`, or `` `...' `` before 4.0).
fn entering(msg: &str, word: &str) -> Option<String> {
    let rest = msg.strip_prefix(word)?.trim_start();
    let rest = rest.strip_prefix('\'').or_else(|| rest.strip_prefix('`'))?;
    let end = rest.rfind('\'')?;
    Some(rest[..end].to_string())
}

/// `[12/40] cmd` → cmd.
fn ninja_progress(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let (counts, cmd) = rest.split_once("] ")?;
    let (a, b) = counts.split_once('/')?;
    if a.trim().parse::<u64>().is_ok() && b.trim().parse::<u64>().is_ok() {
        Some(cmd)
    } else {
        None
    }
}

fn is_make(arg0: &str) -> bool {
    let name = arg0.rsplit('/').next().unwrap_or(arg0);
    matches!(name, "make" | "gmake" | "$(MAKE)" | "${MAKE}" | "$MAKE")
}

/// `make -C DIR` / `make --directory=DIR` → DIR (relative to `dir`).
fn make_dir(args: &[String], dir: &str) -> Option<String> {
    let mut it = args.iter().skip(1);
    let mut out: Option<String> = None;
    while let Some(a) = it.next() {
        let d = if a == "-C" || a == "--directory" {
            it.next().cloned()
        } else if let Some(d) = a.strip_prefix("--directory=") {
            Some(d.to_string())
        } else {
            a.strip_prefix("-C").map(str::to_string)
        };
        if let Some(d) = d {
            // Several -C options add up, as in make.
            let base = out.clone().unwrap_or_else(|| dir.to_string());
            out = Some(absolute(&base, &d));
        }
    }
    out
}

fn read_commands(text: &str, start: &str, format: LogFormat) -> BuildLog {
    let lines: Vec<&str> = text.split('\n').collect();
    let prints_entering = lines
        .iter()
        .any(|l| make_message(l).is_some_and(|(_, m)| m.starts_with("Entering directory")));
    let mut log = BuildLog {
        format,
        commands: Vec::new(),
        unparsed: Vec::new(),
        lines: 0,
        messages: 0,
        failed_execs: 0,
    };
    // make's directory stack: (dir, how).
    let mut stack: Vec<(String, DirSource)> = vec![(start.to_string(), DirSource::Start)];
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].strip_suffix('\r').unwrap_or(lines[i]);
        let lineno = i + 1;
        i += 1;
        if i == lines.len() && line.is_empty() {
            break;
        }
        log.lines = lineno;
        if line.trim().is_empty() {
            continue;
        }
        if let Some((_, msg)) = make_message(line) {
            log.messages += 1;
            if let Some(d) = entering(msg, "Entering directory") {
                let base = stack.last().map(|s| s.0.clone()).unwrap_or_default();
                stack.push((absolute(&base, &d), DirSource::Entering(lineno)));
            } else if let Some(d) = entering(msg, "Leaving directory") {
                let base = stack.last().map(|s| s.0.clone()).unwrap_or_default();
                if stack.len() > 1 && stack.last().is_some_and(|s| s.0 == absolute(&base, &d)) {
                    stack.pop();
                } else {
                    log.unparsed.push(Unparsed {
                        line: lineno,
                        reason: "Leaving a directory that was not entered".into(),
                        text: cut(line),
                    });
                }
            } else if !msg.starts_with("***") && msg.contains(" '/") && msg.ends_with('\'') {
                // Make names a directory in words this reader does not know
                // (a translated message: make under another LANG); the
                // directories of what follows would be wrong, silently.
                log.unparsed.push(Unparsed {
                    line: lineno,
                    reason: "a make message naming a directory, not in GNU make's English \
                             (run make with LANG=C)"
                        .into(),
                    text: cut(line),
                });
            }
            continue;
        }
        if let Some(msg) = line.strip_prefix("ninja: ") {
            log.messages += 1;
            if let Some(d) = entering(msg, "Entering directory") {
                let d = absolute(start, &d);
                stack = vec![(d, DirSource::Ninja(lineno))];
            }
            continue;
        }
        if line.starts_with("FAILED: ") || line == "ninja: build stopped: subcommand failed." {
            log.messages += 1;
            continue;
        }
        let mut body = ninja_progress(line).unwrap_or(line).to_string();
        // Continuation lines, and quotes a shell would read across lines
        // (at most 50 lines: a stray quote in a compiler's message must not
        // swallow the rest of the log).
        let first = lineno;
        let mut parsed = shell_of(&body);
        let mut extra = 0;
        while i < lines.len() && extra < 50 {
            let continues = body.ends_with('\\') && !body.ends_with("\\\\");
            let open = matches!(parsed, Err(ShellError::Unclosed(_)));
            if !continues && !open {
                break;
            }
            body.push('\n');
            body.push_str(lines[i].strip_suffix('\r').unwrap_or(lines[i]));
            i += 1;
            extra += 1;
            log.lines = i;
            parsed = shell_of(&body);
            if !continues && parsed.is_ok() {
                break;
            }
        }
        if parsed.is_err() && extra > 0 && !body.lines().next().unwrap_or("").ends_with('\\') {
            // The quote never closed: report the first line alone, read on.
            i = first;
            log.lines = first;
            parsed = shell_of(line);
            body = line.to_string();
        }
        let (dir, how) = stack
            .last()
            .cloned()
            .unwrap_or((start.to_string(), DirSource::Start));
        let cmds = match parsed.and_then(|_| shell::commands(&body, &dir, Dir::Start)) {
            Ok(c) => c,
            Err(e) => {
                log.unparsed.push(Unparsed {
                    line: first,
                    reason: e.to_string(),
                    text: cut(&body),
                });
                continue;
            }
        };
        for c in cmds {
            let dir_source = match c.how {
                Dir::Start => how.clone(),
                Dir::Cd => match &how {
                    DirSource::AfterMake(_) | DirSource::Unknown(_) => how.clone(),
                    _ => DirSource::Cd,
                },
                Dir::Unknown => DirSource::Unknown("cd to a directory the log does not spell out"),
            };
            let sub = if is_make(&c.args[0]) {
                make_dir(&c.args, &c.dir).or_else(|| (c.how == Dir::Cd).then(|| c.dir.clone()))
            } else {
                None
            };
            log.commands.push(LogCommand {
                line: first,
                dir: c.dir,
                dir_source,
                executable: None,
                args: c.args,
                assignments: c.assignments,
                unexpanded: c.unexpanded,
            });
            if let Some(sub) = sub {
                if !prints_entering && format != LogFormat::Ninja {
                    // A log without make's directory lines: what follows is
                    // taken to run in the sub-make's directory.
                    stack = vec![(sub, DirSource::AfterMake(first))];
                }
            }
        }
    }
    log
}

fn shell_of(text: &str) -> Result<(), ShellError> {
    shell::tokenize(text).map(|_| ())
}

/// An strace line: (pid, the syscall text after the pid and time).
fn strace_line(line: &str) -> Option<(Option<u32>, &str)> {
    let mut rest = line;
    let mut pid = None;
    if let Some(r) = rest.strip_prefix("[pid ") {
        let (p, r) = r.split_once(']')?;
        pid = Some(p.trim().parse().ok()?);
        rest = r.trim_start();
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(' ') {
            pid = Some(rest[..digits].parse().ok()?);
            rest = rest[digits..].trim_start();
        }
    }
    // `-t`/`-tt`/`-ttt`/`-r` time stamps.
    let t = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b':' || *b == b'.')
        .count();
    if t > 0 && rest[t..].starts_with(' ') {
        rest = rest[t..].trim_start();
    }
    let known = [
        "execve(",
        "execveat(",
        "chdir(",
        "fchdir(",
        "clone(",
        "clone3(",
        "fork(",
        "vfork(",
        "<... ",
        "+++ ",
        "--- ",
    ];
    if known.iter().any(|k| rest.starts_with(k)) {
        // A plain command line (`clone(...)` is not one) needs the pid or
        // an execve to count.
        if pid.is_some() || rest.starts_with("execve(") {
            return Some((pid, rest));
        }
    }
    None
}

/// A C-style string of strace at `s[i]` (`"..."`, maybe followed by `...`
/// when cut): the bytes and the index after it; `None` when malformed.
fn c_string(s: &[u8], mut i: usize) -> Option<(Vec<u8>, usize, bool)> {
    if s.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        match *s.get(i)? {
            b'"' => {
                i += 1;
                break;
            }
            b'\\' => {
                let c = *s.get(i + 1)?;
                i += 2;
                match c {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'v' => out.push(0x0b),
                    b'f' => out.push(0x0c),
                    b'a' => out.push(0x07),
                    b'b' => out.push(0x08),
                    b'x' => {
                        let h = std::str::from_utf8(s.get(i..i + 2)?).ok()?;
                        out.push(u8::from_str_radix(h, 16).ok()?);
                        i += 2;
                    }
                    b'0'..=b'7' => {
                        let mut v = u32::from(c - b'0');
                        let mut k = 0;
                        while k < 2 && s.get(i).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                            v = v * 8 + u32::from(s[i] - b'0');
                            i += 1;
                            k += 1;
                        }
                        out.push(u8::try_from(v).ok()?);
                    }
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    let cut = s.get(i..i + 3) == Some(b"...");
    if cut {
        i += 3;
    }
    Some((out, i, cut))
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `execve("path", ["a", "b"], ...) = R`: (path, argv, cut, result).
fn parse_execve(call: &str) -> Option<(String, Vec<String>, bool, Option<i64>)> {
    let s = call.as_bytes();
    let open = call.find('(')?;
    let (path, mut i, mut was_cut) = c_string(s, open + 1)?;
    if call[i..].starts_with(", [") {
        i += 3;
    } else {
        return None;
    }
    let mut args = Vec::new();
    loop {
        match s.get(i)? {
            b']' => {
                i += 1;
                break;
            }
            b'"' => {
                let (a, next, c) = c_string(s, i)?;
                was_cut |= c;
                args.push(text(a));
                i = next;
                if call[i..].starts_with(", ") {
                    i += 2;
                }
            }
            b'.' if call[i..].starts_with("...]") => {
                // `-s` / `-a` limits: argv itself cut.
                was_cut = true;
                i += 4;
                break;
            }
            _ => return None,
        }
    }
    let result = call_result(&call[i..]);
    Some((text(path), args, was_cut, result))
}

/// `chdir("x") = 0` → Some("x") when it succeeded.
fn parse_chdir(call: &str) -> Option<Option<String>> {
    let open = call.find('(')?;
    let (d, i, _) = c_string(call.as_bytes(), open + 1)?;
    let ok = call_result(&call[i..]) == Some(0);
    Some(ok.then(|| text(d)))
}

/// The result after the call's closing parenthesis (strace pads it with
/// spaces to a column: `)   = 0`).
fn call_result(call: &str) -> Option<i64> {
    let (k, _) = call
        .match_indices(" = ")
        .find(|&(k, _)| call[..k].trim_end().ends_with(')'))?;
    call[k + 3..].split_whitespace().next()?.parse().ok()
}

fn returned_pid(call: &str) -> Option<u32> {
    u32::try_from(call_result(call)?).ok()
}

fn read_strace(text: &str, start: &str) -> BuildLog {
    let mut log = BuildLog {
        format: LogFormat::Strace,
        commands: Vec::new(),
        unparsed: Vec::new(),
        lines: 0,
        messages: 0,
        failed_execs: 0,
    };
    let has_forks = text.lines().any(|l| {
        strace_line(l).is_some_and(|(_, r)| {
            ["clone(", "clone3(", "fork(", "vfork("]
                .iter()
                .any(|k| r.starts_with(k))
                || r.starts_with("<... clone")
                || r.starts_with("<... vfork")
                || r.starts_with("<... fork")
        })
    });
    // Per process: its directory, and whether the log shows it (without
    // clone/fork lines, a new process's parent is unknown: its directory
    // is the start directory only while no process has changed its own).
    let mut cwd: HashMap<Option<u32>, (String, bool)> = HashMap::new();
    let mut moved = false;
    // Calls split by another process's: pid → (line, text so far).
    let mut pending: HashMap<Option<u32>, (usize, String)> = HashMap::new();
    for (k, line) in text.lines().enumerate() {
        let lineno = k + 1;
        log.lines = lineno;
        if line.trim().is_empty() {
            continue;
        }
        let Some((pid, rest)) = strace_line(line) else {
            log.unparsed.push(Unparsed {
                line: lineno,
                reason: "not an strace line".into(),
                text: cut(line),
            });
            continue;
        };
        if rest.starts_with("+++ ") || rest.starts_with("--- ") {
            continue;
        }
        let (call_line, call) = if let Some(r) = rest.strip_prefix("<... ") {
            // `<... execve resumed>, ...) = 0`
            let Some((_, tail)) = r.split_once(" resumed>") else {
                log.unparsed.push(Unparsed {
                    line: lineno,
                    reason: "a resumed call without its name".into(),
                    text: cut(line),
                });
                continue;
            };
            match pending.remove(&pid) {
                Some((l, head)) => (l, format!("{head}{tail}")),
                None => {
                    log.unparsed.push(Unparsed {
                        line: lineno,
                        reason: "a resumed call whose start is not in the log".into(),
                        text: cut(line),
                    });
                    continue;
                }
            }
        } else if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, (lineno, head.to_string()));
            continue;
        } else {
            (lineno, rest.to_string())
        };
        let (here, certain) = cwd
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| (start.to_string(), has_forks || !moved));
        if call.starts_with("execve(") || call.starts_with("execveat(") {
            if call.starts_with("execveat(") {
                log.unparsed.push(Unparsed {
                    line: call_line,
                    reason: "execveat is not read (its path is relative to a descriptor)".into(),
                    text: cut(&call),
                });
                continue;
            }
            let Some((path, args, was_cut, result)) = parse_execve(&call) else {
                log.unparsed.push(Unparsed {
                    line: call_line,
                    reason: "an execve this reader cannot read".into(),
                    text: cut(&call),
                });
                continue;
            };
            match result {
                Some(0) => {}
                Some(_) => {
                    log.failed_execs += 1;
                    continue;
                }
                None => {
                    log.unparsed.push(Unparsed {
                        line: call_line,
                        reason: "an execve without its result".into(),
                        text: cut(&call),
                    });
                    continue;
                }
            }
            if was_cut {
                log.unparsed.push(Unparsed {
                    line: call_line,
                    reason: "argv cut by strace (run it with a larger -s, e.g. -s 65536)".into(),
                    text: cut(&call),
                });
                continue;
            }
            let dir_source = if certain {
                DirSource::Strace
            } else {
                DirSource::Unknown(
                    "the strace log has chdir but no clone/fork lines, so a new process's \
                     directory is not known (trace clone,fork,vfork too)",
                )
            };
            let executable = absolute_exe(&here, &path);
            log.commands.push(LogCommand {
                line: call_line,
                dir: here.clone(),
                dir_source,
                executable: Some(executable),
                args,
                assignments: Vec::new(),
                unexpanded: false,
            });
            cwd.insert(pid, (here, certain));
        } else if call.starts_with("chdir(") {
            match parse_chdir(&call) {
                Some(Some(d)) => {
                    let to = absolute(&here, &d);
                    moved |= to != here;
                    cwd.insert(pid, (to, certain || d.starts_with('/')));
                }
                Some(None) => {}
                None => log.unparsed.push(Unparsed {
                    line: call_line,
                    reason: "a chdir this reader cannot read".into(),
                    text: cut(&call),
                }),
            }
        } else if call.starts_with("fchdir(") {
            // `strace -y` prints the descriptor's path: `fchdir(3</w/lib>) = 0`.
            let path = call
                .split_once('<')
                .and_then(|(_, r)| r.split_once(">)"))
                .map(|(p, _)| p)
                .filter(|p| p.starts_with('/'));
            match (path, call_result(&call)) {
                (Some(p), Some(0)) => {
                    moved |= p != here;
                    cwd.insert(pid, (p.to_string(), true));
                }
                (Some(_), _) => {}
                (None, _) => log.unparsed.push(Unparsed {
                    line: call_line,
                    reason: "fchdir without the directory's path (trace with strace -y)".into(),
                    text: cut(&call),
                }),
            }
        } else {
            // clone, clone3, fork, vfork: the child starts where its parent is.
            if let Some(child) = returned_pid(&call) {
                cwd.insert(Some(child), (here, certain));
            }
        }
    }
    for (_, (l, head)) in pending {
        if head.starts_with("execve(") {
            log.unparsed.push(Unparsed {
                line: l,
                reason: "an execve never resumed (the log ends first)".into(),
                text: cut(&head),
            });
        }
    }
    log.unparsed.sort_by_key(|u| u.line);
    log
}

/// strace prints the path as passed: a relative one is against the cwd,
/// but a bare name (`execve("gcc", ...)` is rare) stays as written.
fn absolute_exe(dir: &str, path: &str) -> String {
    if path.starts_with('/') || !path.contains('/') {
        path.to_string()
    } else {
        // Bear records a relative executable as spelled too.
        let _ = dir;
        path.to_string()
    }
}

impl BuildLog {
    /// The commands as process records (ids in log order, no parents, the
    /// log line in [`Process::line`]) with each one's environment: `env`
    /// (the build's, which a log does not carry: the caller's choice) plus
    /// the assignments written before it. `resolve` finds the executable
    /// of a command named without a `/` (as the build would have found it
    /// along `PATH`); strace logs name it exactly.
    pub fn processes(
        &self,
        env: &Env,
        resolve: &dyn Fn(&str, &Env) -> String,
    ) -> Vec<(Process, Env)> {
        self.commands
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let mut e = env.clone();
                for (name, value) in &c.assignments {
                    e.insert(name.clone(), value.clone());
                }
                let exe = match &c.executable {
                    Some(x) => x.clone(),
                    None => resolve(c.args.first().map_or("", String::as_str), &e),
                };
                let mut p = Process::new(k as i64 + 1, None, c.dir.clone(), exe);
                p.args = c.args.clone();
                p.line = c.line as u64;
                (p, e)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_directories() {
        let text = "make -C lib\nmake[1]: Entering directory '/w/lib'\ncc -c a.c \\\n  -O2\nmake[1]: Leaving directory '/w/lib'\ncc -c b.c\n";
        let log = read(text, "/w");
        assert_eq!(log.format, LogFormat::Make);
        let got: Vec<(&str, &str, usize)> = log
            .commands
            .iter()
            .map(|c| (c.args[0].as_str(), c.dir.as_str(), c.line))
            .collect();
        assert_eq!(
            got,
            [("make", "/w", 1), ("cc", "/w/lib", 3), ("cc", "/w", 6)]
        );
        assert_eq!(log.commands[1].args, ["cc", "-c", "a.c", "-O2"]);
        assert_eq!(log.commands[1].dir_source, DirSource::Entering(2));
        // A translated Entering line is not skipped in silence.
        let log = read(
            "make[1]: Wechsel in das Verzeichnis '/w/lib'\ncc -c a.c\n",
            "/w",
        );
        assert_eq!(log.unparsed.len(), 1);
        assert!(log.unparsed[0].reason.contains("LANG=C"));
        // Without Entering lines, the recursive make's directory is
        // inferred, and said to be.
        let log = read(
            "make -C lib all\ncc -c a.c\n(cd x && make)\ncc -c b.c\n",
            "/w",
        );
        let dirs: Vec<(&str, &DirSource)> = log
            .commands
            .iter()
            .map(|c| (c.dir.as_str(), &c.dir_source))
            .collect();
        assert_eq!(
            dirs,
            [
                ("/w", &DirSource::Start),
                ("/w/lib", &DirSource::AfterMake(1)),
                ("/w/lib/x", &DirSource::AfterMake(1)),
                ("/w/lib/x", &DirSource::AfterMake(3)),
            ]
        );
    }

    #[test]
    fn unparsed_lines_are_listed() {
        let log = read("cc -c 'a.c\ncc -c b.c\n", "/w");
        assert_eq!(log.unparsed.len(), 1);
        assert_eq!(log.unparsed[0].line, 1);
        assert_eq!(log.commands.len(), 1);
        assert_eq!(log.commands[0].line, 2);
        // A quote that closes on the next line is read as a shell would.
        let log = read("echo 'a\nb' > x\ncc -c c.c\n", "/w");
        assert!(log.unparsed.is_empty());
        assert_eq!(log.commands[0].args, ["echo", "a\nb"]);
        assert_eq!(log.commands[1].line, 3);
    }

    #[test]
    fn ninja_verbose() {
        let log = read(
            "ninja: Entering directory `build'\n[1/2] /usr/bin/cc -c ../a.c -o a.o\n[2/2] : && /usr/bin/cc a.o -o app && :\n",
            "/w",
        );
        assert_eq!(log.format, LogFormat::Ninja);
        assert_eq!(log.commands[0].dir, "/w/build");
        assert_eq!(log.commands[0].args[0], "/usr/bin/cc");
        assert_eq!(log.commands.len(), 4);
    }

    #[test]
    fn strace_execs() {
        let text = r#"100 execve("/usr/bin/make", ["make"], 0x7ffc /* 3 vars */) = 0
100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f) = 101
101 chdir("lib") = 0
101 execve("/usr/local/bin/gcc", ["gcc", "-c", "a b.c"], 0x55 /* 3 vars */ <unfinished ...>
100 execve("/bin/gcc", ["gcc"], 0x1 /* 1 var */) = -1 ENOENT (No such file or directory)
101 <... execve resumed>) = 0
101 +++ exited with 0 +++
102 execve("/usr/bin/cc", ["cc", "-DX=\"\303\251\""...], 0x1 /* 1 var */) = 0
"#;
        let log = read(text, "/w");
        assert_eq!(log.format, LogFormat::Strace);
        assert_eq!(log.failed_execs, 1);
        assert_eq!(log.commands.len(), 2);
        let c = &log.commands[1];
        assert_eq!(c.args, ["gcc", "-c", "a b.c"]);
        assert_eq!(c.dir, "/w/lib");
        assert_eq!(c.executable.as_deref(), Some("/usr/local/bin/gcc"));
        assert_eq!(c.line, 4);
        assert_eq!(log.unparsed.len(), 1);
        assert_eq!(log.unparsed[0].line, 8);
        assert!(log.unparsed[0].reason.contains("-s"));
        // `-y` names the directory of an fchdir; without it, it is said.
        let log = read(
            "5 fchdir(3</w/sub>) = 0\n5 execve(\"/usr/bin/cc\", [\"cc\"], 0x1 /* 1 var */) = 0\n6 fchdir(4) = 0\n",
            "/w",
        );
        assert_eq!(log.commands[0].dir, "/w/sub");
        assert_eq!(log.unparsed.len(), 1);
        assert!(log.unparsed[0].reason.contains("-y"));
    }
}
