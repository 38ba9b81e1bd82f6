//! Recording a build: run a command and write a kwinject trace of every
//! process it starts.
//!
//! Two methods feed the same [`Assembler`]:
//! * [`ptrace`]: the recorder follows the build with ptrace (fork, vfork,
//!   clone and exec events; no syscall stops), reading argv, environment,
//!   working directory and executable from `/proc` at each exec stop. Sees
//!   static programs too.
//! * [`preload`]: the `tracekit-preload` shim, loaded into every dynamically
//!   linked program, reports one binary record per exec, fork and reaped
//!   child through a POSIX trace stream (`tracekit-posix`; shared memory,
//!   no system call per record); the recorder drains the stream while the
//!   build runs and reassembles the records.
//!
//! **Architecture Invariant:** the build sees no difference (exit status,
//! stdout/stderr, signals, environment except the preload variables); the
//! recorder re-raises a fatal signal of the build on itself.

pub mod events;
pub mod preload;
pub mod ptrace;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::hash::{BuildHasher, Hash, Hasher};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::env::diff;
use crate::trace::{latin1_string, Env, Exit, Process, TraceWriter, Truncation, VERSION};

/// One successful exec as a recorder saw it (bytes, as the OS has them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecEvent {
    pub pid: i32,
    pub ppid: i32,
    pub time_us: u64,
    pub cwd: Vec<u8>,
    /// The path that reached the exec call (absolute or as spelled).
    pub executable: Vec<u8>,
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
}

/// Variables of the recorder itself, left out of every `env-diff`
/// (`kwinject.md` §4.4 item 4).
pub const PRELOAD_OUT_VAR: &str = "TRACEKIT_PRELOAD_OUT";

/// How the recorder runs the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Preload,
    Ptrace,
}

/// What the recorder reports when the build is over.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub processes: u64,
    /// Records the events file held that could not be read.
    pub lost_records: u64,
    pub root_exit: Option<Exit>,
}

pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Turns exec/fork/exit events into trace records, in exec order.
pub struct Assembler {
    top_env: Env,
    /// Our preload library's value, removed from `LD_PRELOAD` in records.
    preload_lib: Option<String>,
    records: Vec<Process>,
    latest: HashMap<i32, usize>,
    /// Per record id: the environment the process received. A child that
    /// inherits it unchanged (the usual case) holds the very same one.
    env_by_id: HashMap<i64, Arc<ExecEnv>>,
    /// Per pid: the record id its next exec names as parent (set at fork).
    parent_of: HashMap<i32, i64>,
    envs: EnvCache,
}

impl Assembler {
    pub fn new(top_env: Env, preload_lib: Option<String>) -> Self {
        Assembler {
            top_env,
            preload_lib,
            records: Vec::new(),
            latest: HashMap::new(),
            env_by_id: HashMap::new(),
            parent_of: HashMap::new(),
            envs: EnvCache::default(),
        }
    }

    /// The record id that stands for `pid` now: itself once it exec'd,
    /// else what it inherited at fork.
    fn owner(&self, pid: i32) -> Option<i64> {
        if self.latest.contains_key(&pid) {
            Some(pid as i64)
        } else {
            self.parent_of.get(&pid).copied()
        }
    }

    /// Our shim's path, taken out of `LD_PRELOAD` in records.
    pub fn preload_lib(&self) -> Option<&str> {
        self.preload_lib.as_deref()
    }

    pub fn root(&mut self, pid: i32) {
        self.parent_of.insert(pid, -1);
    }

    pub fn fork(&mut self, child: i32, parent: i32) {
        let owner = self.owner(parent).unwrap_or(-1);
        self.parent_of.insert(child, owner);
    }

    pub fn exec(&mut self, ev: ExecEvent) {
        let p = PreparedExec::new(ev, self.preload_lib.as_deref(), &mut self.envs);
        self.exec_prepared(p);
    }

    /// An exec whose own text was converted beforehand (possibly on another
    /// thread, while the build ran); links it to its parent.
    pub fn exec_prepared(&mut self, p: PreparedExec) {
        let PreparedExec {
            pid,
            ppid,
            time_us,
            all_utf8,
            cwd,
            executable,
            args,
            env,
        } = p;
        if let Some(&i) = self.latest.get(&pid) {
            let r = &mut self.records[i];
            if r.end_us.is_none() {
                r.end_us = Some(time_us);
            }
        }
        let parent_id = match self.parent_of.get(&pid) {
            Some(&p) => p,
            None => self.owner(ppid).unwrap_or(-1),
        };
        self.parent_of.insert(pid, parent_id);
        let parent_env = self.env_by_id.get(&parent_id);
        let mut p = Process::new(pid as i64, Some(parent_id), cwd, executable);
        p.args = args;
        // One cache prepares all execs of a recording, so an environment
        // inherited unchanged is the parent's very own (and were it not,
        // the diff would only come out empty).
        let inherited = parent_env.is_some_and(|parent| Arc::ptr_eq(parent, &env));
        if !inherited {
            let parent = parent_env.map_or(&self.top_env, |e| &e.env);
            p.env_diff = diff(parent, &env.env);
        }
        p.start_us = Some(time_us);
        if !all_utf8 {
            p.extra.insert("tk_encoding".into(), Value::from("latin1"));
        }
        self.env_by_id.insert(pid as i64, env);
        self.latest.insert(pid, self.records.len());
        self.records.push(p);
    }

    pub fn exit(&mut self, pid: i32, time_us: u64, how: Exit) {
        if let Some(&i) = self.latest.get(&pid) {
            let r = &mut self.records[i];
            if r.exit.is_none() && r.end_us.is_none() {
                r.end_us = Some(time_us);
                r.exit = Some(how);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// The records so far, in exec order (as [`write`](Self::write) writes them).
    pub fn processes(&self) -> &[Process] {
        &self.records
    }

    /// The environment the build started with (the trace's top-level `env`).
    pub fn top_env(&self) -> &Env {
        &self.top_env
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let mut w = TraceWriter::new(out);
        w.header(VERSION, Some(&creator()), &self.top_env)?;
        for p in &self.records {
            w.process(p)?;
        }
        w.finish()
    }

    /// Writes the trace into `file` (created empty at `path`). When a write
    /// fails (a full disk), what reached the file does not stay cut in the
    /// middle of a record: the file is cut back to the end of a record and
    /// ends with the [`Truncation`] marker, overwriting bytes the file
    /// already holds (so it needs no new space); if that cannot be done,
    /// the file is removed. A file that is not a regular file (a device, a
    /// pipe) is left as it is.
    pub fn write_file(&self, path: &Path, file: &File) -> Result<(), WriteFailure> {
        let mut sink = FileSink {
            file,
            buf: Vec::with_capacity(FileSink::CAPACITY),
            generated: 0,
            committed: 0,
        };
        // Byte offset after the header, then after each record.
        let mut ends: Vec<u64> = Vec::with_capacity(self.records.len() + 1);
        let result = (|| {
            let mut w = TraceWriter::new(&mut sink);
            w.header(VERSION, Some(&creator()), &self.top_env)?;
            ends.push(w.get_ref().generated);
            for p in &self.records {
                w.process(p)?;
                ends.push(w.get_ref().generated);
            }
            w.finish().map(|_| ())
        })();
        let Err(error) = result else {
            return Ok(());
        };
        let left = salvage(path, file, sink.committed, &ends, &error);
        Err(WriteFailure { error, left })
    }
}

fn creator() -> String {
    format!("tracekit, version {}", env!("CARGO_PKG_VERSION"))
}

/// A trace file whose writing failed, and what became of it.
#[derive(Debug)]
pub struct WriteFailure {
    pub error: io::Error,
    pub left: Left,
}

/// What is left of a trace file whose writing failed.
#[derive(Debug)]
pub enum Left {
    /// The first `records` of `of` process records, complete, then the
    /// `tk_truncated` marker.
    Truncated { records: u64, of: u64 },
    /// The file was removed: not even the header could be kept whole, or
    /// the marker could not be written.
    Removed,
    /// Not a regular file (`/dev/full`, a pipe): left alone.
    NotAFile,
    /// The file could be neither completed nor removed.
    Cut(io::Error),
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Left::Truncated { records, of } => write!(
                f,
                "kept the first {records} of {of} process records, marked as a truncated trace"
            ),
            Left::Removed => write!(f, "the partial trace was removed"),
            Left::NotAFile => write!(f, "not a regular file, left as it is"),
            Left::Cut(e) => write!(
                f,
                "the partial trace could not be completed nor removed ({e}): it ends in the \
                 middle of a record"
            ),
        }
    }
}

/// Buffers writes to a file and counts the bytes the file accepted; unlike
/// `BufWriter`, it never writes on drop (after a failure the file is
/// fixed up by offset, and a late flush would undo that).
struct FileSink<'a> {
    file: &'a File,
    buf: Vec<u8>,
    /// Bytes handed to `write`.
    generated: u64,
    /// Bytes the file accepted.
    committed: u64,
}

impl FileSink<'_> {
    const CAPACITY: usize = 1 << 16;

    fn flush_buf(&mut self) -> io::Result<()> {
        let mut off = 0;
        let mut out = self.file;
        let result = loop {
            if off == self.buf.len() {
                break Ok(());
            }
            match out.write(&self.buf[off..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => {
                    off += n;
                    self.committed += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..off);
        result
    }
}

impl Write for FileSink<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        self.generated += data.len() as u64;
        if self.buf.len() >= Self::CAPACITY {
            self.flush_buf()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_buf()
    }
}

/// After a failed write that left `committed` bytes in `file`: cut back to
/// the last record end that leaves room for the marker within those bytes,
/// write the marker there, or remove the file.
fn salvage(path: &Path, file: &File, committed: u64, ends: &[u64], error: &io::Error) -> Left {
    use std::os::unix::fs::FileExt;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Left::NotAFile;
    }
    let of = ends.len().saturating_sub(1) as u64;
    let reason = error.to_string();
    for (k, &end) in ends.iter().enumerate().rev() {
        if end > committed {
            continue;
        }
        let marker = Truncation {
            records: k as u64,
            of,
            reason: reason.clone(),
        }
        .line();
        if end + marker.len() as u64 > committed {
            continue;
        }
        let done = file
            .write_all_at(marker.as_bytes(), end)
            .and_then(|()| file.set_len(end + marker.len() as u64));
        if done.is_ok() {
            return Left::Truncated {
                records: k as u64,
                of,
            };
        }
        break;
    }
    match std::fs::remove_file(path) {
        Ok(()) => Left::Removed,
        Err(e) => Left::Cut(e),
    }
}

/// An exec event with the work done that needs no other record: its text
/// converted (UTF-8, or Latin-1 when any of it is not UTF-8) and its
/// environment parsed without the recorder's variables. Recorders prepare
/// events while the build runs; [`Assembler::exec_prepared`] links them.
pub struct PreparedExec {
    pid: i32,
    ppid: i32,
    time_us: u64,
    all_utf8: bool,
    cwd: String,
    executable: String,
    args: Vec<String>,
    env: Arc<ExecEnv>,
}

/// The environment an exec received, as received and parsed. Identical
/// environments are one [`ExecEnv`] (see [`EnvCache`]).
pub struct ExecEnv {
    raw: Vec<Vec<u8>>,
    /// Read as UTF-8 (else Latin-1).
    utf8: bool,
    env: Env,
}

/// Environments already parsed, by content: most processes of a build
/// receive one of a handful, which are then parsed once and compared by
/// pointer.
#[derive(Default)]
pub struct EnvCache {
    by_hash: HashMap<u64, Vec<Arc<ExecEnv>>>,
    hasher: std::collections::hash_map::RandomState,
}

impl EnvCache {
    fn get(
        &mut self,
        raw: Vec<Vec<u8>>,
        utf8: bool,
        parse: impl FnOnce(&[Vec<u8>]) -> Env,
    ) -> Arc<ExecEnv> {
        let mut h = self.hasher.build_hasher();
        raw.hash(&mut h);
        utf8.hash(&mut h);
        let same = self.by_hash.entry(h.finish()).or_default();
        if let Some(e) = same.iter().find(|e| e.utf8 == utf8 && e.raw == raw) {
            return e.clone();
        }
        let env = parse(&raw);
        let e = Arc::new(ExecEnv { raw, utf8, env });
        same.push(e.clone());
        e
    }
}

impl PreparedExec {
    /// The process that exec'd.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// `preload_lib`: our shim's path, taken out of `LD_PRELOAD`; `envs`:
    /// the environments seen so far.
    pub fn new(mut ev: ExecEvent, preload_lib: Option<&str>, envs: &mut EnvCache) -> PreparedExec {
        // The recorder's own variable is no part of the build's environment
        // (and the shim marks its value differently for every exec).
        ev.env.retain(|kv| {
            kv.strip_prefix(PRELOAD_OUT_VAR.as_bytes())
                .is_none_or(|rest| !rest.is_empty() && rest[0] != b'=')
        });
        let all_utf8 = std::str::from_utf8(&ev.cwd).is_ok()
            && std::str::from_utf8(&ev.executable).is_ok()
            && ev.argv.iter().all(|a| std::str::from_utf8(a).is_ok())
            && ev.env.iter().all(|a| std::str::from_utf8(a).is_ok());
        let conv = |b: &[u8]| -> String {
            if all_utf8 {
                String::from_utf8_lossy(b).into_owned()
            } else {
                latin1_string(b)
            }
        };
        let cwd = conv(&ev.cwd);
        let mut executable = conv(&ev.executable);
        if !executable.starts_with('/') && !executable.is_empty() {
            executable = crate::cdb::absolute(&cwd, &executable);
        }
        let args = ev.argv.iter().map(|a| conv(a)).collect();
        let env = envs.get(std::mem::take(&mut ev.env), all_utf8, |raw| {
            parse_env(raw, &conv, preload_lib)
        });
        PreparedExec {
            pid: ev.pid,
            ppid: ev.ppid,
            time_us: ev.time_us,
            all_utf8,
            cwd,
            executable,
            args,
            env,
        }
    }
}

/// The environment of an exec record, without our library in `LD_PRELOAD`.
fn parse_env(raw: &[Vec<u8>], conv: &dyn Fn(&[u8]) -> String, preload_lib: Option<&str>) -> Env {
    let mut env = Env::new();
    for kv in raw {
        let s = conv(kv);
        let (k, v) = s.split_once('=').unwrap_or((s.as_str(), ""));
        if k == "LD_PRELOAD" {
            if let Some(rest) = strip_preload(v, preload_lib) {
                if !rest.is_empty() {
                    env.insert(k.to_string(), rest);
                }
                continue;
            }
        }
        env.insert(k.to_string(), v.to_string());
    }
    env
}

/// `LD_PRELOAD` without our library, or `None` when ours is not in it.
fn strip_preload(value: &str, lib: Option<&str>) -> Option<String> {
    let lib = lib?;
    let parts: Vec<&str> = value.split([':', ' ']).filter(|s| !s.is_empty()).collect();
    if !parts.contains(&lib) {
        return None;
    }
    Some(
        parts
            .into_iter()
            .filter(|p| *p != lib)
            .collect::<Vec<_>>()
            .join(":"),
    )
}

/// The recorder's own environment, as the build's top-level `env`.
pub fn current_env() -> Env {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k != PRELOAD_OUT_VAR)
        .collect()
}

/// Exit status of the recorder that mirrors the build's: the same code, or
/// the same signal re-raised on ourselves.
pub fn mirror_exit(exit: Option<Exit>) -> i32 {
    match exit {
        Some(Exit::Code(c)) => c,
        Some(Exit::Signal(sig)) => {
            // SAFETY: resetting a disposition and signalling ourselves have
            // no memory-safety preconditions.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
            }
            128 + sig
        }
        None => 1,
    }
}

/// Turns a wait status into an [`Exit`].
pub fn exit_of(status: libc::c_int) -> Option<Exit> {
    if libc::WIFEXITED(status) {
        Some(Exit::Code(libc::WEXITSTATUS(status)))
    } else if libc::WIFSIGNALED(status) {
        Some(Exit::Signal(libc::WTERMSIG(status)))
    } else {
        None
    }
}

/// A `#!` script: the kernel ran the interpreter with the script's path in
/// argv (`/bin/sh ./script a b`); give the exec as the build made it
/// (`./script a b`), as strace and Bear show it.
pub fn unwrap_script(ev: &mut ExecEvent) {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    let exe = &ev.executable;
    if exe.is_empty() {
        return;
    }
    let Some(i) = ev.argv.iter().take(3).skip(1).position(|a| a == exe) else {
        return;
    };
    let path = if exe.starts_with(b"/") {
        exe.clone()
    } else {
        [&ev.cwd[..], b"/", exe].concat()
    };
    let mut head = [0u8; 2];
    let script = std::fs::File::open(std::ffi::OsStr::from_bytes(&path))
        .and_then(|mut f| f.read_exact(&mut head))
        .map(|_| &head == b"#!")
        .unwrap_or(false);
    if script {
        ev.argv.drain(..=i + 1);
        ev.argv.insert(0, exe.clone());
    }
}

/// Arguments for `execvp` as C strings.
pub(crate) fn c_args(cmd: &[OsString]) -> io::Result<Vec<std::ffi::CString>> {
    use std::os::unix::ffi::OsStrExt;
    cmd.iter()
        .map(|a| {
            std::ffi::CString::new(a.as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "argument holds NUL"))
        })
        .collect()
}
