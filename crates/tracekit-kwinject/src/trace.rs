//! The kwinject build trace: JSON values, one per line (pretty-printed
//! objects are accepted too), header objects `version`, `creator`, `env`,
//! then one object per process.
//!
//! Reading is streaming ([`TraceReader`] is an iterator over [`Item`]s);
//! [`Trace::read`] collects a whole trace for the analyses that need it.
//! Unknown keys and unknown root objects are kept and written back.
//!
//! Extension keys written by tracekit (every reader keeps unknown keys, so
//! other consumers are not disturbed): `tk_start_us` and `tk_end_us`
//! (microseconds since the Unix epoch), `tk_exit` (exit status), `tk_signal`
//! (the signal that killed the process), `tk_encoding` (`"latin1"`: the
//! record's strings carried bytes that are not UTF-8; every character of
//! every string of that record stands for one byte, U+0000..U+00FF).
//!
//! One extension root object: `{"tk_truncated":{"records":N,"of":M,
//! "reason":"..."}}`, the last line of a trace whose recorder could not
//! write it whole (a full disk): the N process records before it are
//! complete, M were recorded. Readers warn about it and count the missing
//! records as lost ([`Trace::lost`]).

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use serde_json::{Map, Value};
use tracekit_core::{Error, Position, Warnings};

/// The trace format versions this reader knows; 101 is written.
pub const VERSION: i64 = 101;

/// A variable of `env-diff`: `None` is a removed variable (`null`).
pub type EnvDiff = BTreeMap<String, Option<String>>;
/// A full environment.
pub type Env = BTreeMap<String, String>;

/// How a process ended, from the `tk_exit` / `tk_signal` extension keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// One process record (one successful exec).
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    /// The pid in traces tracekit writes; repeats after an exec without fork.
    pub id: i64,
    /// `None` when the key is absent (kwwrap-style traces): the top-level
    /// process is the parent. -1 is written for the root.
    pub parent_id: Option<i64>,
    pub work_dir: String,
    pub executable: String,
    pub args: Vec<String>,
    pub env_diff: EnvDiff,
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    pub exit: Option<Exit>,
    /// Keys this reader does not know, kept for round trips.
    pub extra: Map<String, Value>,
    /// 1-based line where the record starts (0 for records built in memory).
    pub line: u64,
}

impl Process {
    pub fn new(id: i64, parent_id: Option<i64>, work_dir: String, executable: String) -> Self {
        Process {
            id,
            parent_id,
            work_dir,
            executable,
            args: Vec::new(),
            env_diff: EnvDiff::new(),
            start_us: None,
            end_us: None,
            exit: None,
            extra: Map::new(),
            line: 0,
        }
    }

    /// The parent id with "absent" and -1 both meaning "the top level".
    pub fn parent(&self) -> Option<i64> {
        match self.parent_id {
            None | Some(-1) => None,
            Some(p) => Some(p),
        }
    }

    /// Wall time in microseconds, when both ends are known.
    pub fn duration_us(&self) -> Option<u64> {
        Some(self.end_us?.saturating_sub(self.start_us?))
    }

    /// The program's file name (`gcc` for `/usr/bin/gcc`).
    pub fn program_name(&self) -> &str {
        let exe = if self.executable.is_empty() {
            self.args.first().map(String::as_str).unwrap_or("")
        } else {
            &self.executable
        };
        exe.rsplit('/').next().unwrap_or(exe)
    }
}

/// The `tk_truncated` marker: the recorder kept the first `records` of the
/// `of` process records it had, because writing the rest failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub records: u64,
    pub of: u64,
    /// Why the rest could not be written (the OS's words).
    pub reason: String,
}

/// The root key of the [`Truncation`] marker.
pub const TRUNCATED_KEY: &str = "tk_truncated";

impl Truncation {
    /// The marker's line, newline included.
    pub fn line(&self) -> String {
        let v = serde_json::json!({
            TRUNCATED_KEY: {"records": self.records, "of": self.of, "reason": self.reason}
        });
        format!("{v}\n")
    }
}

/// One root value of a trace.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Version(i64),
    Creator(String),
    Env(Env),
    Process(Box<Process>),
    /// The recorder could not write the rest of the trace.
    Truncated(Truncation),
    /// A root object this reader does not know; kept verbatim.
    Other(Value),
}

/// Longest pretty-printed object the reader accumulates before giving up
/// on it (bounds memory on garbage without newlines).
const MAX_OBJECT_BYTES: usize = 64 << 20;

/// Streaming reader: yields items; problems that do not stop reading go
/// to [`TraceReader::warnings`].
pub struct TraceReader<R: BufRead> {
    input: R,
    line: u64,
    buf: Vec<u8>,
    pending: Vec<u8>,
    pending_line: u64,
    warnings: Warnings,
    done: bool,
    seen_process: bool,
    /// Values split off a line that held several (popped from the end).
    queue: Vec<(Value, u64)>,
    /// Records skipped because they could not be read.
    lost: u64,
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(input: R) -> Self {
        TraceReader {
            input,
            line: 0,
            buf: Vec::new(),
            pending: Vec::new(),
            pending_line: 0,
            warnings: Warnings::default(),
            done: false,
            seen_process: false,
            queue: Vec::new(),
            lost: 0,
        }
    }

    pub fn warnings(&self) -> &Warnings {
        &self.warnings
    }

    /// Records skipped so far because they could not be read (not JSON, or
    /// cut off at the end of the input).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    pub fn into_warnings(self) -> Warnings {
        self.warnings
    }

    /// The next complete JSON value with the line it starts on.
    fn next_value(&mut self) -> Result<Option<(Value, u64)>, Error> {
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| Error::io(None, e))?;
            if n == 0 {
                if !self.pending.is_empty() {
                    self.warnings.push(
                        Position::Line(self.pending_line),
                        format!(
                            "truncated record at end of input ({} bytes dropped)",
                            self.pending.len()
                        ),
                    );
                    self.lost += 1;
                    self.pending.clear();
                }
                return Ok(None);
            }
            self.line += 1;
            if self.pending.is_empty() {
                if self.buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                self.pending_line = self.line;
            }
            self.pending.extend_from_slice(&self.buf);
            match serde_json::from_slice::<Value>(&self.pending) {
                Ok(v) => {
                    self.pending.clear();
                    return Ok(Some((v, self.pending_line)));
                }
                Err(e) if e.is_eof() && self.pending.len() < MAX_OBJECT_BYTES => {
                    // A pretty-printed object goes on, or a truncated last line.
                    continue;
                }
                Err(e) => {
                    // Several values on one line (the documentation's example
                    // prints them space-separated) are split here.
                    if let Some(values) = split_values(&self.pending) {
                        let line = self.pending_line;
                        self.pending.clear();
                        let mut it = values.into_iter();
                        let first = it.next();
                        let rest: Vec<Value> = it.collect();
                        if !rest.is_empty() {
                            self.queue = rest.into_iter().map(|v| (v, line)).collect();
                            self.queue.reverse();
                        }
                        if let Some(v) = first {
                            return Ok(Some((v, line)));
                        }
                        continue;
                    }
                    self.warnings.push(
                        Position::Line(self.pending_line),
                        format!("not JSON, skipped: {e}"),
                    );
                    self.lost += 1;
                    self.pending.clear();
                }
            }
        }
    }

    fn item(&mut self, value: Value, line: u64) -> Result<Item, Error> {
        let Value::Object(mut obj) = value else {
            return Err(Error::malformed(
                Position::Line(line),
                "expected a JSON object at the top level",
            ));
        };
        if obj.contains_key("id") {
            self.seen_process = true;
            return parse_process(obj, line).map(|p| Item::Process(Box::new(p)));
        }
        if obj.len() == 1 {
            if let Some(v) = obj.get("version") {
                let Some(n) = v.as_i64() else {
                    return Err(Error::malformed(
                        Position::Line(line),
                        "\"version\" is not an integer",
                    ));
                };
                if n != 100 && n != 101 {
                    self.warnings.push(
                        Position::Line(line),
                        format!("unknown trace version {n} (known: 100, 101); reading on"),
                    );
                }
                return Ok(Item::Version(n));
            }
            if let Some(v) = obj.get("creator") {
                return match v.as_str() {
                    Some(s) => Ok(Item::Creator(s.to_string())),
                    None => Err(Error::malformed(
                        Position::Line(line),
                        "\"creator\" is not a string",
                    )),
                };
            }
            if let Some(v) = obj.remove("env") {
                let Value::Object(m) = v else {
                    return Err(Error::malformed(
                        Position::Line(line),
                        "\"env\" is not an object",
                    ));
                };
                let mut env = Env::new();
                for (k, v) in m {
                    match v {
                        Value::String(s) => {
                            env.insert(k, s);
                        }
                        other => self.warnings.push(
                            Position::Line(line),
                            format!("env variable {k:?} is not a string ({other}); skipped"),
                        ),
                    }
                }
                if self.seen_process {
                    self.warnings.push(
                        Position::Line(line),
                        "top-level \"env\" after process records",
                    );
                }
                return Ok(Item::Env(env));
            }
            if let Some(v) = obj.get(TRUNCATED_KEY) {
                let count = |k: &str| v.get(k).and_then(Value::as_u64);
                let (Some(records), Some(of)) = (count("records"), count("of")) else {
                    return Err(Error::malformed(
                        Position::Line(line),
                        "\"tk_truncated\" needs \"records\" and \"of\" counts",
                    ));
                };
                let reason = v
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given")
                    .to_string();
                self.warnings.push(
                    Position::Line(line),
                    format!(
                        "truncated trace: the recorder could not write it whole ({reason}); \
                         it kept {records} of {of} process records"
                    ),
                );
                return Ok(Item::Truncated(Truncation {
                    records,
                    of,
                    reason,
                }));
            }
        }
        self.warnings.push(
            Position::Line(line),
            "unknown root object kept as is".to_string(),
        );
        Ok(Item::Other(Value::Object(obj)))
    }
}

/// Splits a buffer holding several JSON values back to back, or `None`
/// when it is not that.
fn split_values(bytes: &[u8]) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for v in serde_json::Deserializer::from_slice(bytes).into_iter::<Value>() {
        out.push(v.ok()?);
    }
    (out.len() > 1).then_some(out)
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Item, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = match self.queue.pop() {
            Some(v) => Ok(Some(v)),
            None => self.next_value(),
        };
        match next {
            Ok(Some((v, line))) => Some(self.item(v, line)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn get_str(obj: &mut Map<String, Value>, keys: &[&str], line: u64) -> Result<String, Error> {
    for k in keys {
        if let Some(v) = obj.remove(*k) {
            return match v {
                Value::String(s) => Ok(s),
                Value::Null => Ok(String::new()),
                other => Err(Error::malformed(
                    Position::Line(line),
                    format!("\"{k}\" is not a string: {other}"),
                )),
            };
        }
    }
    Ok(String::new())
}

fn get_int(v: &Value, key: &str, line: u64) -> Result<i64, Error> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| {
            Error::malformed(
                Position::Line(line),
                format!("\"{key}\" is not an integer: {v}"),
            )
        })
}

fn parse_process(mut obj: Map<String, Value>, line: u64) -> Result<Process, Error> {
    let id = match obj.remove("id") {
        Some(v) => get_int(&v, "id", line)?,
        None => unreachable_id(line)?,
    };
    let parent_id = match obj.remove("parent_id").or_else(|| obj.remove("parentid")) {
        None | Some(Value::Null) => None,
        Some(v) => Some(get_int(&v, "parent_id", line)?),
    };
    let work_dir = get_str(&mut obj, &["work_dir", "workdir"], line)?;
    let executable = get_str(&mut obj, &["executable"], line)?;
    let args = match obj.remove("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let mut args = Vec::with_capacity(a.len());
            for v in a {
                match v {
                    Value::String(s) => args.push(s),
                    other => {
                        return Err(Error::malformed(
                            Position::Line(line),
                            format!("\"args\" holds a non-string: {other}"),
                        ))
                    }
                }
            }
            args
        }
        Some(other) => {
            return Err(Error::malformed(
                Position::Line(line),
                format!("\"args\" is not an array: {other}"),
            ))
        }
    };
    let mut env_diff = EnvDiff::new();
    match obj.remove("env-diff") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v {
                    Value::String(s) => {
                        env_diff.insert(k, Some(s));
                    }
                    Value::Null => {
                        env_diff.insert(k, None);
                    }
                    other => {
                        return Err(Error::malformed(
                            Position::Line(line),
                            format!(
                                "env-diff variable {k:?} is neither a string nor null: {other}"
                            ),
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(Error::malformed(
                Position::Line(line),
                format!("\"env-diff\" is not an object: {other}"),
            ))
        }
    }
    let start_us = obj.remove("tk_start_us").and_then(|v| v.as_u64());
    let end_us = obj.remove("tk_end_us").and_then(|v| v.as_u64());
    let exit = match (obj.remove("tk_exit"), obj.remove("tk_signal")) {
        (_, Some(s)) if s.as_i64().is_some() => s.as_i64().map(|n| Exit::Signal(n as i32)),
        (Some(c), _) => c.as_i64().map(|n| Exit::Code(n as i32)),
        _ => None,
    };
    let mut p = Process {
        id,
        parent_id,
        work_dir,
        executable,
        args,
        env_diff,
        start_us,
        end_us,
        exit,
        extra: Map::new(),
        line,
    };
    if obj.get("tk_encoding").and_then(Value::as_str) == Some("latin1") {
        obj.remove("tk_encoding");
        p.extra.insert("tk_encoding".into(), Value::from("latin1"));
    }
    p.extra.extend(obj);
    Ok(p)
}

fn unreachable_id(line: u64) -> Result<i64, Error> {
    Err(Error::malformed(
        Position::Line(line),
        "record without \"id\"",
    ))
}

/// A whole trace in memory.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub version: Option<i64>,
    pub creator: Option<String>,
    pub env: Env,
    pub processes: Vec<Process>,
    /// Unknown root objects, in order.
    pub others: Vec<Value>,
    /// The recorder's `tk_truncated` marker, when it could not write the
    /// whole trace.
    pub truncated: Option<Truncation>,
    /// Records the reader skipped (unreadable, or cut off at the end).
    pub skipped: u64,
    pub warnings: Warnings,
}

impl Trace {
    /// Reads everything; a malformed record is an error naming its line.
    pub fn read<R: BufRead>(input: R) -> Result<Trace, Error> {
        let mut reader = TraceReader::new(input);
        let mut t = Trace::default();
        for item in reader.by_ref() {
            match item? {
                Item::Version(v) => t.version = Some(v),
                Item::Creator(c) => t.creator = Some(c),
                Item::Env(e) => t.env = e,
                Item::Process(p) => t.processes.push(*p),
                Item::Other(v) => t.others.push(v),
                Item::Truncated(x) => t.truncated = Some(x),
            }
        }
        t.skipped = reader.lost();
        t.warnings = reader.into_warnings();
        if t.version.is_none() {
            t.warnings
                .push(Position::Line(1), "no {\"version\":…} object; assuming 101");
        }
        Ok(t)
    }

    /// Writes the trace back (header, unknown root objects, processes).
    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let mut w = TraceWriter::new(out);
        w.header(
            self.version.unwrap_or(VERSION),
            self.creator.as_deref(),
            &self.env,
        )?;
        for o in &self.others {
            w.raw(o)?;
        }
        for p in &self.processes {
            w.process(p)?;
        }
        if let Some(x) = &self.truncated {
            w.truncated(x)?;
        }
        w.finish()
    }

    /// Process records known to be missing: those the reader skipped, and
    /// those a truncated recording could not write.
    pub fn lost(&self) -> u64 {
        self.skipped
            + self
                .truncated
                .as_ref()
                .map_or(0, |x| x.of.saturating_sub(x.records))
    }
}

/// Streaming writer: one compact object per line, keys in the documented
/// order `id, parent_id, work_dir, executable, args, env-diff`, then the
/// extension keys, then kept unknown keys.
pub struct TraceWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W) -> Self {
        TraceWriter {
            out,
            buf: Vec::with_capacity(4096),
        }
    }

    pub fn header(&mut self, version: i64, creator: Option<&str>, env: &Env) -> io::Result<()> {
        writeln!(self.out, "{{\"version\":{version}}}")?;
        if let Some(c) = creator {
            self.out.write_all(b"{\"creator\":")?;
            serde_json::to_writer(&mut self.out, c)?;
            self.out.write_all(b"}\n")?;
        }
        self.out.write_all(b"{\"env\":")?;
        serde_json::to_writer(&mut self.out, env)?;
        self.out.write_all(b"}\n")
    }

    /// The [`Truncation`] marker (the last line of the trace).
    pub fn truncated(&mut self, x: &Truncation) -> io::Result<()> {
        self.out.write_all(x.line().as_bytes())
    }

    /// The output, for callers that track what reached it.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    pub fn raw(&mut self, v: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, v)?;
        self.out.write_all(b"\n")
    }

    pub fn process(&mut self, p: &Process) -> io::Result<()> {
        let b = &mut self.buf;
        b.clear();
        b.extend_from_slice(b"{\"id\":");
        b.extend_from_slice(p.id.to_string().as_bytes());
        if let Some(pp) = p.parent_id {
            b.extend_from_slice(b",\"parent_id\":");
            b.extend_from_slice(pp.to_string().as_bytes());
        }
        b.extend_from_slice(b",\"work_dir\":");
        serde_json::to_writer(&mut *b, &p.work_dir)?;
        b.extend_from_slice(b",\"executable\":");
        serde_json::to_writer(&mut *b, &p.executable)?;
        b.extend_from_slice(b",\"args\":");
        serde_json::to_writer(&mut *b, &p.args)?;
        b.extend_from_slice(b",\"env-diff\":");
        serde_json::to_writer(&mut *b, &p.env_diff)?;
        if let Some(t) = p.start_us {
            b.extend_from_slice(b",\"tk_start_us\":");
            b.extend_from_slice(t.to_string().as_bytes());
        }
        if let Some(t) = p.end_us {
            b.extend_from_slice(b",\"tk_end_us\":");
            b.extend_from_slice(t.to_string().as_bytes());
        }
        match p.exit {
            Some(Exit::Code(c)) => {
                b.extend_from_slice(b",\"tk_exit\":");
                b.extend_from_slice(c.to_string().as_bytes());
            }
            Some(Exit::Signal(s)) => {
                b.extend_from_slice(b",\"tk_signal\":");
                b.extend_from_slice(s.to_string().as_bytes());
            }
            None => {}
        }
        for (k, v) in &p.extra {
            b.push(b',');
            serde_json::to_writer(&mut *b, k)?;
            b.push(b':');
            serde_json::to_writer(&mut *b, v)?;
        }
        b.extend_from_slice(b"}\n");
        self.out.write_all(b)
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Bytes (argv, paths, env from the OS) to a trace string: UTF-8 as is;
/// otherwise `None`, and the caller switches the record to
/// [`latin1_string`] for all its strings (`tk_encoding: "latin1"`).
pub fn utf8_string(bytes: &[u8]) -> Option<String> {
    std::str::from_utf8(bytes).ok().map(str::to_string)
}

/// Every byte as the character with that code (U+0000..U+00FF): lossless.
pub fn latin1_string(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

/// Reverses [`latin1_string`] (`None` if a character is above U+00FF).
pub fn latin1_bytes(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(c as u32).ok()).collect()
}
