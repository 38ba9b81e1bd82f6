//! A receiver for git's `af_unix:` Trace2 targets: it accepts what git
//! writes to `GIT_TRACE2_EVENT`, `GIT_TRACE2_PERF` and `GIT_TRACE2`
//! (NORMAL) when they name a Unix socket, and writes one file per session
//! the way git's own *directory* target does.
//!
//! # Sockets
//!
//! A socket file has exactly one type, so one path cannot serve both
//! `af_unix:stream:PATH` and `af_unix:dgram:PATH` (binding the second type
//! fails with `EADDRINUSE`, and git gets `EPROTOTYPE` when it connects with
//! the wrong type). The receiver therefore binds a SOCK_STREAM listener at
//! [`Config::stream_socket`], which serves `af_unix:stream:PATH` **and** the
//! plain `af_unix:PATH` form (git tries STREAM first and only falls back to
//! DGRAM on `EPROTOTYPE`), and optionally a SOCK_DGRAM socket at a second
//! path, [`Config::dgram_socket`], for `af_unix:dgram:PATH2` (and
//! `af_unix:PATH2`, whose STREAM attempt fails with `EPROTOTYPE`).
//!
//! # Framing and routing
//!
//! * Stream: git opens one connection per process and per target and
//!   writes each event with one `write(2)`; a `recv()` may hold several
//!   lines or a fraction of one. Every connection keeps its own buffer and
//!   only complete lines (ending in `\n`) are written out. The format of a
//!   connection (EVENT, PERF or NORMAL) is detected from its first line,
//!   which is always git's `version` event ([`detect_format`]).
//! * Dgram: git sends exactly one event per datagram; each datagram is
//!   classified and routed on its own.
//! * EVENT lines are routed by their `sid` field ([`scan_sid`]): the file is
//!   `OUT/event/<last SID component>`, exactly the name git's directory
//!   target would choose, so a process's lines land in its own file even
//!   when they come over datagrams interleaved with other processes. A line
//!   without a readable `sid` goes to the file of the previous line of the
//!   same connection (or the connection's own file) and is counted as a
//!   warning.
//! * PERF and NORMAL lines carry no SID. Over a stream socket a connection
//!   is one process, so its lines go to `OUT/perf/<accept time>-P<pid>`
//!   (resp. `OUT/normal/...`): the accept time is UTC in the SID's own
//!   `YYYYMMDDTHHMMSS.uuuuuuZ` form and the pid (from `SO_PEERCRED`) is
//!   printed like the SID's `P` part, so `...-P0000392b` pairs the PERF
//!   file with the EVENT file of the same process (the timestamps differ
//!   by the microseconds between git computing its SID and connecting).
//!   Without a peer pid the name ends in `-conn<N>` instead. Over dgram
//!   nothing ties a PERF/NORMAL datagram to its process: they are written,
//!   in arrival order, to the single files `OUT/perf/dgram` and
//!   `OUT/normal/dgram`.
//! * The three formats go to the subdirectories `event/`, `perf/` and
//!   `normal/`, so all three targets can point at one listener without
//!   their files colliding.
//! * A file is created with `O_EXCL` the first time its session is seen in
//!   this run; if the name exists already (an earlier run), `.1`, `.2`, ...
//!   are tried like git does (git gives up after `.9`, the receiver never
//!   drops data and keeps counting). Later lines of the same session in the
//!   same run are appended to that file.
//!
//! # Resources
//!
//! One thread, one `poll(2)` loop. A stream connection holds its socket and
//! at most one output file (the session it is writing to); both are closed
//! when the connection ends. The number of open connections is capped so
//! that they fit under `RLIMIT_NOFILE`; beyond it, clients wait in the
//! listen queue (git's connect has already succeeded and its writes block
//! once the socket buffer is full, so nothing is lost, git just waits). Datagram output files are kept in a small
//! cache ([`DGRAM_OPEN_FILES`]). Complete lines received in one read that go
//! to the same file are appended with one `write(2)`, so lines never tear
//! even if two writers share a file. Memory per connection is bounded by
//! the longest line; the run keeps one small map entry per session seen
//! (to append rather than create a `.1` file when a session comes back).
//!
//! # Loss accounting
//!
//! Nothing is silently dropped: a client that vanishes mid-line gets what
//! arrived written out, terminated with `\n`, and counted as a partial line;
//! datagrams larger than the receive buffer are written truncated and
//! counted; write errors are counted. All of it is in the [`Summary`].
//!
//! # Shutdown
//!
//! [`StopHandle::stop`] (or a signal registered with
//! [`Receiver::stop_on_signals`]) makes [`Receiver::run`]: remove the
//! socket files (new git processes then find no socket and trace nothing,
//! silently), read the datagrams already queued and close the datagram
//! socket, then keep serving the stream connections that are open or
//! already queued on the listener until their processes close them, the
//! grace period ([`Config::grace`]) ends or a second stop arrives. Then
//! every open and queued connection is drained, partial lines are written
//! and counted, and `run` returns the summary. A git process still connected after that may die of
//! SIGPIPE on its next trace write (git does not ignore SIGPIPE).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracekit_core::{Error, Position, Result, Warnings};

/// How many datagram output files stay open at once.
pub const DGRAM_OPEN_FILES: usize = 64;

/// Bytes read per `read(2)` on a stream connection.
const READ_CHUNK: usize = 64 * 1024;

/// Receive buffer for one datagram. Linux caps a Unix datagram by the
/// sender's `SO_SNDBUF` (208 KiB by default); larger ones are detected with
/// `MSG_TRUNC` and counted.
const DGRAM_BUFFER: usize = 256 * 1024;

/// Reads per connection per poll round, so one chatty client cannot starve
/// the others.
const READS_PER_ROUND: usize = 16;

/// The three Trace2 output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Event,
    Perf,
    Normal,
}

impl Format {
    /// The subdirectory of the output directory holding this format.
    pub fn dir_name(self) -> &'static str {
        match self {
            Format::Event => "event",
            Format::Perf => "perf",
            Format::Normal => "normal",
        }
    }

    fn index(self) -> usize {
        match self {
            Format::Event => 0,
            Format::Perf => 1,
            Format::Normal => 2,
        }
    }
}

/// Tells the format of a Trace2 line (complete or a prefix of one).
///
/// EVENT lines are JSON objects. PERF lines have `" | "` right before the
/// `d<depth>` column (byte 44 in the normal layout) or start with
/// `d<depth> | ` (brief). Everything else is NORMAL. The first line of every
/// git process is `version`, so this is unambiguous on a connection's first
/// line; a first line cut short before byte 47 is PERF if it holds a `" | "`.
pub fn detect_format(line: &[u8]) -> Format {
    if line.first() == Some(&b'{') {
        return Format::Event;
    }
    if is_brief_perf(line) || is_timed_perf(line) {
        return Format::Perf;
    }
    Format::Normal
}

fn is_brief_perf(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"d") else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && rest[digits..].starts_with(b" | ")
}

fn is_timed_perf(line: &[u8]) -> bool {
    // `HH:MM:SS.uuuuuu ` then the 28-column file:line field and ` | d`.
    const TIME: &[u8] = b"00:00:00.000000 ";
    if line.len() < TIME.len() {
        return false;
    }
    let time_like = line[..TIME.len()].iter().zip(TIME).all(|(&b, &t)| {
        if t == b'0' {
            b.is_ascii_digit()
        } else {
            b == t
        }
    });
    if !time_like {
        return false;
    }
    if line.len() >= 48 {
        &line[44..48] == b" | d"
    } else {
        memchr::memmem::find(&line[TIME.len()..], b" | ").is_some()
    }
}

/// The decoded value of the top-level `"sid"` key of an EVENT line, or
/// `None` if the line is not an object with a complete string `sid`.
///
/// A small tolerant scanner: it walks the top-level keys (skipping values
/// of any JSON type, with escapes), accepts whitespace, decodes the
/// string's escapes (`\uXXXX` included; invalid ones become U+FFFD) and
/// keeps bytes >= 0x80 raw, as git writes them. The rest of the line is
/// never validated.
pub fn scan_sid(line: &[u8]) -> Option<Vec<u8>> {
    let mut at = skip_ws(line, 0);
    if line.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(line, at);
        if line.get(at) != Some(&b'"') {
            return None;
        }
        let (key, after_key) = decode_string(line, at)?;
        at = skip_ws(line, after_key);
        if line.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(line, at + 1);
        if key == b"sid" {
            if line.get(at) != Some(&b'"') {
                return None;
            }
            return decode_string(line, at).map(|(value, _)| value);
        }
        at = skip_value(line, at)?;
        at = skip_ws(line, at);
        match line.get(at) {
            Some(b',') => at += 1,
            _ => return None,
        }
    }
}

fn skip_ws(s: &[u8], mut at: usize) -> usize {
    while matches!(s.get(at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        at += 1;
    }
    at
}

/// Decodes the JSON string starting at the `"` at `at`; returns the bytes
/// and the index after the closing quote.
fn decode_string(s: &[u8], at: usize) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = at + 1;
    loop {
        let run = memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
        out.extend_from_slice(&s[i..i + run]);
        i += run;
        if s[i] == b'"' {
            return Some((out, i + 1));
        }
        let escape = *s.get(i + 1)?;
        i += 2;
        match escape {
            b'"' | b'\\' | b'/' => out.push(escape),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => {
                let unit = hex4(s, i)?;
                i += 4;
                let mut code = Some(u32::from(unit));
                if (0xd800..0xdc00).contains(&unit) && s.get(i..i + 2) == Some(b"\\u") {
                    if let Some(low @ 0xdc00..=0xdfff) = hex4(s, i + 2) {
                        i += 6;
                        code = Some(
                            0x10000
                                + ((u32::from(unit) - 0xd800) << 10)
                                + (u32::from(low) - 0xdc00),
                        );
                    }
                }
                let ch = code.and_then(char::from_u32).unwrap_or('\u{fffd}');
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());
            }
            other => {
                // Not a JSON escape: keep it as written.
                out.push(b'\\');
                out.push(other);
            }
        }
    }
}

fn hex4(s: &[u8], at: usize) -> Option<u16> {
    let digits = s.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok()
}

/// Skips one JSON value of any type starting at `at`.
fn skip_value(s: &[u8], at: usize) -> Option<usize> {
    match s.get(at)? {
        b'"' => skip_string(s, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match s.get(i)? {
                    b'"' => {
                        i = skip_string(s, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            // Number, true, false, null: up to the next delimiter.
            let len = s[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
            (len > 0).then_some(at + len)
        }
    }
}

fn skip_string(s: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
        if s[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

/// The file name for a session: the SID's last component (after the last
/// `/`), as git's directory target names it. Bytes other than ASCII
/// letters, digits, `.`, `-`, `_` become `_` and a leading `.` becomes `_`,
/// so a hostile SID cannot escape the output directory. `None` if empty.
pub fn session_file_name(sid: &[u8]) -> Option<String> {
    let last = match memchr::memrchr(b'/', sid) {
        Some(slash) => &sid[slash + 1..],
        None => sid,
    };
    if last.is_empty() {
        return None;
    }
    let mut name: String = last
        .iter()
        .take(200)
        .map(|&b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with('.') {
        name.replace_range(..1, "_");
    }
    Some(name)
}

/// What to listen on and where to write.
#[derive(Debug, Clone)]
pub struct Config {
    /// SOCK_STREAM socket for `af_unix:PATH` and `af_unix:stream:PATH`.
    pub stream_socket: Option<PathBuf>,
    /// SOCK_DGRAM socket for `af_unix:dgram:PATH`.
    pub dgram_socket: Option<PathBuf>,
    /// Output directory (created if missing).
    pub out_dir: PathBuf,
    /// After a stop request, how long open stream connections may still
    /// finish on their own before they are drained and closed.
    pub grace: Duration,
}

/// What a run received. Every count is exact.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Distinct session files written (EVENT sessions, PERF/NORMAL
    /// connections, and the per-format datagram files).
    pub sessions: u64,
    /// Stream connections accepted.
    pub connections: u64,
    /// Datagrams received.
    pub datagrams: u64,
    /// Lines written (a partial line counts as one).
    pub lines: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Lines cut short by a client that went away (written, terminated).
    pub partial_lines: u64,
    /// EVENT lines without a readable `sid` (written to the previous
    /// line's or the connection's file).
    pub lines_without_sid: u64,
    /// Datagrams longer than the receive buffer (written truncated).
    pub truncated_datagrams: u64,
    /// Lines that could not be written to the output directory (lost).
    pub lines_lost: u64,
    /// Details of the above, capped.
    pub warnings: Warnings,
}

/// Wakes a running [`Receiver`] and asks it to shut down. Cheap to clone,
/// callable from any thread; a second call cuts the grace period short.
#[derive(Debug, Clone)]
pub struct StopHandle {
    wake: std::sync::Arc<UnixStream>,
}

impl StopHandle {
    pub fn stop(&self) {
        // The pipe is non-blocking: if it is full a stop is pending anyway.
        let _ = (&*self.wake).write(&[1]);
    }
}

/// A socket file this run created, removed again at shutdown if it is
/// still the same file.
#[derive(Debug)]
struct SocketPath {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketPath {
    fn new(path: &Path) -> Result<Self> {
        let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(Some(path), e))?;
        Ok(SocketPath {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    fn remove(&self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if meta.dev() == self.dev && meta.ino() == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// A bound receiver; [`Receiver::run`] serves it until stopped.
#[derive(Debug)]
pub struct Receiver {
    config: Config,
    listener: Option<(UnixListener, SocketPath)>,
    dgram: Option<(UnixDatagram, SocketPath)>,
    wake_read: UnixStream,
    wake_write: std::sync::Arc<UnixStream>,
}

/// Removes a stale socket file (nobody listening) so it can be bound
/// again; refuses to touch anything that is not a socket or is in use.
fn clear_stale_socket(path: &Path, stream: bool) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(Some(path), e)),
    };
    if !meta.file_type().is_socket() {
        return Err(Error::Other(format!(
            "{}: exists and is not a socket; refusing to replace it",
            path.display()
        )));
    }
    let in_use = if stream {
        UnixStream::connect(path).is_ok()
    } else {
        UnixDatagram::unbound()
            .and_then(|s| s.connect(path))
            .is_ok()
    };
    if in_use {
        return Err(Error::Other(format!(
            "{}: another process is listening on this socket",
            path.display()
        )));
    }
    std::fs::remove_file(path).map_err(|e| Error::io(Some(path), e))
}

fn check_socket_path(path: &Path) -> Result<()> {
    // sun_path is 108 bytes on Linux including the terminating NUL; git
    // also insists on an absolute path.
    if path.as_os_str().len() >= 108 {
        return Err(Error::Other(format!(
            "{}: socket path too long ({} bytes, at most 107)",
            path.display(),
            path.as_os_str().len()
        )));
    }
    Ok(())
}

impl Receiver {
    /// Creates the output directory and binds the sockets (replacing stale
    /// socket files left by a receiver that was killed).
    pub fn bind(config: Config) -> Result<Receiver> {
        if config.stream_socket.is_none() && config.dgram_socket.is_none() {
            return Err(Error::Other("no socket to listen on".into()));
        }
        if config.stream_socket.is_some() && config.stream_socket == config.dgram_socket {
            return Err(Error::Other(
                "the stream and the datagram socket need two different paths \
                 (a socket file has one type)"
                    .into(),
            ));
        }
        std::fs::create_dir_all(&config.out_dir)
            .map_err(|e| Error::io(Some(&config.out_dir), e))?;
        let listener = match &config.stream_socket {
            Some(path) => {
                check_socket_path(path)?;
                clear_stale_socket(path, true)?;
                let listener = UnixListener::bind(path).map_err(|e| Error::io(Some(path), e))?;
                // A burst of git processes (each opening one connection per
                // target, children too) must not wait on a short backlog:
                // raise it to the system maximum (listen(2) again on a
                // listening socket only updates the backlog).
                // SAFETY: plain listen(2) on a socket descriptor we own.
                unsafe { libc::listen(listener.as_raw_fd(), libc::SOMAXCONN) };
                listener
                    .set_nonblocking(true)
                    .map_err(|e| Error::io(Some(path), e))?;
                Some((listener, SocketPath::new(path)?))
            }
            None => None,
        };
        let dgram = match &config.dgram_socket {
            Some(path) => {
                check_socket_path(path)?;
                clear_stale_socket(path, false)?;
                let socket = UnixDatagram::bind(path).map_err(|e| Error::io(Some(path), e))?;
                socket
                    .set_nonblocking(true)
                    .map_err(|e| Error::io(Some(path), e))?;
                Some((socket, SocketPath::new(path)?))
            }
            None => None,
        };
        let (wake_read, wake_write) = UnixStream::pair().map_err(|e| Error::io(None, e))?;
        wake_read
            .set_nonblocking(true)
            .map_err(|e| Error::io(None, e))?;
        wake_write
            .set_nonblocking(true)
            .map_err(|e| Error::io(None, e))?;
        Ok(Receiver {
            config,
            listener,
            dgram,
            wake_read,
            wake_write: std::sync::Arc::new(wake_write),
        })
    }

    /// A handle that stops [`Receiver::run`] from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            wake: self.wake_write.clone(),
        }
    }

    /// Makes the given signals (e.g. `SIGINT`, `SIGTERM`) stop the
    /// receiver instead of killing the process (self-pipe, async-signal
    /// safe). A second signal ends the grace period.
    pub fn stop_on_signals(&self, signals: &[i32]) -> Result<()> {
        for &signal in signals {
            let wake = self
                .wake_write
                .try_clone()
                .map_err(|e| Error::io(None, e))?;
            signal_hook::low_level::pipe::register(signal, wake).map_err(|e| Error::io(None, e))?;
        }
        Ok(())
    }

    /// Serves until stopped, then shuts down as described in the module
    /// docs and returns what was received. Errors are only returned for
    /// failures of the receiver itself (poll, accept); output write errors
    /// are counted in [`Summary::lines_lost`].
    pub fn run(mut self) -> Result<Summary> {
        let mut state = State::new(self.config.out_dir.clone());
        let mut conns: Vec<Conn> = Vec::new();
        let mut dgram_buf = vec![0u8; DGRAM_BUFFER];
        let mut read_buf = vec![0u8; READ_CHUNK];
        let mut stopping_since: Option<Instant> = None;
        let max_conns = self.max_connections();
        // True while the listener waits for a connection to end (too many
        // open, or out of descriptors): it stays out of the poll set, where
        // it would be readable all the time.
        let mut accept_paused = false;
        let mut pollfds: Vec<libc::pollfd> = Vec::new();
        loop {
            pollfds.clear();
            let entry = |fd: RawFd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            pollfds.push(entry(self.wake_read.as_raw_fd()));
            let listener_at = self
                .listener
                .as_ref()
                .filter(|_| !accept_paused)
                .map(|(l, _)| {
                    pollfds.push(entry(l.as_raw_fd()));
                    pollfds.len() - 1
                });
            let dgram_at = self.dgram.as_ref().map(|(d, _)| {
                pollfds.push(entry(d.as_raw_fd()));
                pollfds.len() - 1
            });
            let conns_at = pollfds.len();
            // A negative fd is ignored by poll(2).
            pollfds.extend(
                conns
                    .iter()
                    .map(|c| entry(c.stream.as_ref().map_or(-1, |s| s.as_raw_fd()))),
            );

            let timeout_ms: libc::c_int = match stopping_since {
                None => -1,
                Some(since) => {
                    let left = self.config.grace.saturating_sub(since.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    if conns.is_empty() {
                        // Everyone finished: done unless more are queued.
                        accept_paused = self.accept_all(&mut state, &mut conns, max_conns)?;
                        if conns.is_empty() {
                            break;
                        }
                        continue;
                    }
                    left.as_millis().clamp(1, 60_000) as libc::c_int
                }
            };
            // SAFETY: `pollfds` is a valid, initialised array of
            // `pollfds.len()` entries that outlives the call.
            let ready = unsafe {
                libc::poll(
                    pollfds.as_mut_ptr(),
                    pollfds.len() as libc::nfds_t,
                    timeout_ms,
                )
            };
            if ready < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(Error::io(None, err));
            }
            let readable = |i: usize| pollfds[i].revents != 0;

            if readable(0) {
                let mut sink = [0u8; 64];
                let _ = (&self.wake_read).read(&mut sink);
                if stopping_since.is_some() {
                    break; // a second stop: no more grace
                }
                stopping_since = Some(Instant::now());
                self.begin_shutdown(&mut state, &mut dgram_buf);
                continue;
            }
            if listener_at.is_some_and(readable) {
                accept_paused = self.accept_all(&mut state, &mut conns, max_conns)?;
            }
            if dgram_at.is_some_and(readable) {
                self.receive_datagrams(&mut state, &mut dgram_buf, usize::MAX);
            }
            // Connections accepted in this round have no poll entry yet.
            let polled = pollfds.len() - conns_at;
            let mut any_gone = false;
            for (k, conn) in conns.iter_mut().enumerate().take(polled) {
                if pollfds[conns_at + k].revents != 0
                    && !conn.read_some(&mut state, &mut read_buf, READS_PER_ROUND)
                {
                    conn.finish(&mut state);
                    any_gone = true;
                }
            }
            if any_gone {
                accept_paused = false;
                conns.retain(|conn| conn.stream.is_some());
            }
        }
        if stopping_since.is_none() {
            self.begin_shutdown(&mut state, &mut dgram_buf);
        }
        // Grace over or everyone gone: drain and close what is open, then
        // take the connections still queued (their socket path is gone, so
        // the queue only shrinks) in batches that fit the descriptors.
        loop {
            for mut conn in conns.drain(..) {
                conn.read_some(&mut state, &mut read_buf, usize::MAX);
                conn.finish(&mut state);
            }
            if self.listener.is_none() {
                break;
            }
            let waiting = self.accept_all(&mut state, &mut conns, max_conns)?;
            if conns.is_empty() {
                if waiting {
                    state.summary.warnings.push(
                        Position::Unknown,
                        "out of file descriptors at shutdown: connections still queued on \
                         the listener were closed unread (raise `ulimit -n`)",
                    );
                }
                break;
            }
        }
        self.listener = None;
        Ok(state.summary)
    }

    /// How many stream connections may be open at once: each holds a
    /// socket and at most one output file, and the datagram file cache and
    /// a few spare descriptors must still fit under `RLIMIT_NOFILE`.
    fn max_connections(&self) -> usize {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the valid `limit` we pass.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
        } else {
            1024
        };
        let open_now = std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count());
        let dgram_files = if self.dgram.is_some() {
            DGRAM_OPEN_FILES
        } else {
            0
        };
        (soft.saturating_sub(open_now + dgram_files + 8) / 2).max(1)
    }

    /// The first step of a shutdown: remove the socket files (new git
    /// processes then trace nothing), take in the datagrams already queued
    /// and close the datagram socket. The stream listener stays open so
    /// that connections already queued on it are still accepted.
    fn begin_shutdown(&mut self, state: &mut State, dgram_buf: &mut [u8]) {
        if let Some((_, path)) = &self.listener {
            path.remove();
        }
        if self.dgram.is_some() {
            self.receive_datagrams(state, dgram_buf, usize::MAX);
        }
        if let Some((socket, path)) = self.dgram.take() {
            path.remove();
            drop(socket);
        }
    }

    /// Accepts queued connections up to `max_conns` open ones; returns
    /// true if some may still be waiting (limit reached or out of
    /// descriptors).
    fn accept_all(
        &self,
        state: &mut State,
        conns: &mut Vec<Conn>,
        max_conns: usize,
    ) -> Result<bool> {
        let Some((listener, path)) = &self.listener else {
            return Ok(false);
        };
        loop {
            if conns.len() >= max_conns {
                return Ok(true);
            }
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Err(e) = stream.set_nonblocking(true) {
                        state.summary.warnings.push(
                            Position::Unknown,
                            format!("connection dropped: cannot make it non-blocking: {e}"),
                        );
                        continue;
                    }
                    state.summary.connections += 1;
                    conns.push(Conn::new(stream, state.summary.connections));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // The client gave up before we accepted: nothing was lost.
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    // Out of descriptors: leave the rest queued until
                    // connections close.
                    state.summary.warnings.push(
                        Position::Unknown,
                        format!("accept delayed: {e} ({} open connections)", conns.len()),
                    );
                    return Ok(true);
                }
                Err(e) => return Err(Error::io(Some(&path.path), e)),
            }
        }
    }

    fn receive_datagrams(&self, state: &mut State, buf: &mut [u8], limit: usize) {
        let Some((socket, _)) = &self.dgram else {
            return;
        };
        for _ in 0..limit {
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the
            // duration of the call; MSG_TRUNC makes Linux return the
            // datagram's real length even when it exceeds `buf.len()`.
            let got = unsafe {
                libc::recv(
                    socket.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                )
            };
            if got < 0 {
                let err = io::Error::last_os_error();
                match err.kind() {
                    ErrorKind::Interrupted => continue,
                    ErrorKind::WouldBlock => return,
                    _ => {
                        state
                            .summary
                            .warnings
                            .push(Position::Unknown, format!("datagram receive failed: {err}"));
                        return;
                    }
                }
            }
            let real_len = got as usize;
            state.summary.datagrams += 1;
            state.summary.bytes += real_len as u64;
            let datagram = &buf[..real_len.min(buf.len())];
            if real_len > buf.len() {
                state.summary.truncated_datagrams += 1;
                state.summary.warnings.push(
                    Position::Unknown,
                    format!(
                        "datagram {} truncated from {real_len} to {} bytes",
                        state.summary.datagrams,
                        buf.len()
                    ),
                );
            }
            if datagram.is_empty() {
                continue;
            }
            state.write_datagram(datagram);
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some((_, path)) = &self.listener {
            path.remove();
        }
        if let Some((_, path)) = &self.dgram {
            path.remove();
        }
    }
}

/// Where lines go: a format and a file name inside its directory.
type SessionKey = (Format, String);

/// Mutable state of a run shared by all connections.
struct State {
    out_dir: PathBuf,
    /// The path chosen for each session seen in this run.
    sessions: HashMap<SessionKey, PathBuf>,
    /// Format directories already created.
    dirs_made: [bool; 3],
    /// Open datagram output files.
    dgram_files: HashMap<SessionKey, File>,
    summary: Summary,
}

impl State {
    fn new(out_dir: PathBuf) -> Self {
        State {
            out_dir,
            sessions: HashMap::new(),
            dirs_made: [false; 3],
            dgram_files: HashMap::new(),
            summary: Summary::default(),
        }
    }

    /// Opens the file of a session for appending, creating it (with git's
    /// `.N` collision suffixes) the first time the session is seen.
    fn open(&mut self, key: &SessionKey) -> io::Result<File> {
        if let Some(path) = self.sessions.get(key) {
            return OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o666)
                .open(path);
        }
        let dir = self.out_dir.join(key.0.dir_name());
        if !self.dirs_made[key.0.index()] {
            std::fs::create_dir_all(&dir)?;
            self.dirs_made[key.0.index()] = true;
        }
        let mut attempt = 0u32;
        loop {
            let name = if attempt == 0 {
                key.1.clone()
            } else {
                format!("{}.{attempt}", key.1)
            };
            let path = dir.join(name);
            match OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o666)
                .open(&path)
            {
                Ok(file) => {
                    self.sessions.insert(key.clone(), path);
                    self.summary.sessions += 1;
                    return Ok(file);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && attempt < 100_000 => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes `bytes` (complete lines) with one write, counting loss.
    fn append(&mut self, file: &mut File, key: &SessionKey, bytes: &[u8], lines: u64) {
        match file.write_all(bytes) {
            Ok(()) => self.summary.lines += lines,
            Err(e) => self.lost(key, lines, &e),
        }
    }

    fn lost(&mut self, key: &SessionKey, lines: u64, err: &io::Error) {
        self.summary.lines_lost += lines;
        let path = self
            .sessions
            .get(key)
            .cloned()
            .unwrap_or_else(|| self.out_dir.join(key.0.dir_name()).join(&key.1));
        self.summary.warnings.push(
            Position::Unknown,
            format!("{}: {lines} line(s) lost: {err}", path.display()),
        );
    }

    fn write_datagram(&mut self, datagram: &[u8]) {
        let format = detect_format(datagram);
        let name = match format {
            Format::Event => match scan_sid(datagram).and_then(|sid| session_file_name(&sid)) {
                Some(name) => name,
                None => {
                    self.summary.lines_without_sid += 1;
                    self.summary.warnings.push(
                        Position::Unknown,
                        format!(
                            "datagram {}: EVENT line without a readable sid, written to event/dgram",
                            self.summary.datagrams
                        ),
                    );
                    "dgram".to_string()
                }
            },
            Format::Perf | Format::Normal => "dgram".to_string(),
        };
        let key = (format, name);
        let bytes: std::borrow::Cow<[u8]> = if datagram.ends_with(b"\n") {
            std::borrow::Cow::Borrowed(datagram)
        } else {
            // git always ends a datagram with `\n`; keep files line-based.
            self.summary.partial_lines += 1;
            self.summary.warnings.push(
                Position::Unknown,
                format!(
                    "datagram {}: no final newline, one added",
                    self.summary.datagrams
                ),
            );
            let mut owned = datagram.to_vec();
            owned.push(b'\n');
            std::borrow::Cow::Owned(owned)
        };
        let lines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
        let mut file = match self.dgram_files.remove(&key) {
            Some(file) => file,
            None => {
                let mut opened = self.open(&key);
                if matches!(&opened, Err(e) if e.raw_os_error() == Some(libc::EMFILE)) {
                    // Out of descriptors: give back the cached ones, retry.
                    self.dgram_files.clear();
                    opened = self.open(&key);
                }
                match opened {
                    Ok(file) => file,
                    Err(e) => return self.lost(&key, lines, &e),
                }
            }
        };
        self.append(&mut file, &key, &bytes, lines);
        if self.dgram_files.len() >= DGRAM_OPEN_FILES {
            self.dgram_files.clear();
        }
        self.dgram_files.insert(key, file);
    }
}

/// One stream connection: one git process writing one target.
#[derive(Default)]
struct Conn {
    stream: Option<UnixStream>,
    id: u64,
    /// The connection's own file name: accept time and peer pid.
    own_name: String,
    format: Option<Format>,
    /// Bytes of a line whose `\n` has not arrived yet.
    pending: Vec<u8>,
    /// The session file the last line went to.
    current: Option<(SessionKey, File)>,
}

impl Conn {
    fn new(stream: UnixStream, id: u64) -> Self {
        let stamp = sid_timestamp(SystemTime::now());
        let own_name = match peer_pid(&stream) {
            Some(pid) => format!("{stamp}-P{:08x}", pid as u32),
            None => format!("{stamp}-conn{id}"),
        };
        Conn {
            stream: Some(stream),
            id,
            own_name,
            ..Conn::default()
        }
    }

    /// Reads up to `rounds` chunks; returns false once the peer is gone.
    fn read_some(&mut self, state: &mut State, buf: &mut [u8], rounds: usize) -> bool {
        for _ in 0..rounds {
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.read(buf) {
                Ok(0) => return false,
                Ok(n) => {
                    state.summary.bytes += n as u64;
                    self.take(state, &buf[..n]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    // ECONNRESET and friends: the client is gone.
                    if e.kind() != ErrorKind::ConnectionReset {
                        state.summary.warnings.push(
                            Position::Unknown,
                            format!("connection {}: read failed: {e}", self.id),
                        );
                    }
                    return false;
                }
            }
        }
        true
    }

    /// Frames `chunk` into lines and writes the complete ones, one write
    /// per run of lines going to the same file.
    fn take(&mut self, state: &mut State, chunk: &[u8]) {
        let Some(last_newline) = memchr::memrchr(b'\n', chunk) else {
            self.pending.extend_from_slice(chunk);
            return;
        };
        let complete: Vec<u8>;
        let data: &[u8] = if self.pending.is_empty() {
            &chunk[..=last_newline]
        } else {
            self.pending.extend_from_slice(&chunk[..=last_newline]);
            complete = std::mem::take(&mut self.pending);
            &complete
        };
        self.write_lines(state, data);
        self.pending.extend_from_slice(&chunk[last_newline + 1..]);
    }

    /// Writes complete lines (`data` ends with `\n`).
    fn write_lines(&mut self, state: &mut State, data: &[u8]) {
        let format = *self.format.get_or_insert_with(|| detect_format(data));
        if format != Format::Event {
            let lines = memchr::memchr_iter(b'\n', data).count() as u64;
            let key = (format, self.own_name.clone());
            self.write_to(state, key, data, lines);
            return;
        }
        let mut batch_start = 0;
        let mut batch_key: Option<SessionKey> = None;
        let mut batch_lines = 0u64;
        let mut line_start = 0;
        for newline in memchr::memchr_iter(b'\n', data) {
            let line = &data[line_start..=newline];
            let key = self.event_key(state, line);
            if batch_key.as_ref() != Some(&key) {
                if let Some(previous) = batch_key.take() {
                    self.write_to(state, previous, &data[batch_start..line_start], batch_lines);
                }
                batch_start = line_start;
                batch_lines = 0;
                batch_key = Some(key);
            }
            batch_lines += 1;
            line_start = newline + 1;
        }
        if let Some(key) = batch_key {
            self.write_to(state, key, &data[batch_start..], batch_lines);
        }
    }

    /// The session an EVENT line belongs to.
    fn event_key(&self, state: &mut State, line: &[u8]) -> SessionKey {
        if let Some(name) = scan_sid(line).and_then(|sid| session_file_name(&sid)) {
            return (Format::Event, name);
        }
        state.summary.lines_without_sid += 1;
        let key = match &self.current {
            Some((key, _)) => key.clone(),
            None => (Format::Event, self.own_name.clone()),
        };
        state.summary.warnings.push(
            Position::Unknown,
            format!(
                "connection {}: EVENT line without a readable sid, written to event/{}",
                self.id, key.1
            ),
        );
        key
    }

    fn write_to(&mut self, state: &mut State, key: SessionKey, bytes: &[u8], lines: u64) {
        if self.current.as_ref().map(|(k, _)| k) != Some(&key) {
            // Close the previous file before opening the next: one output
            // file per connection at a time.
            self.current = None;
            match state.open(&key) {
                Ok(file) => self.current = Some((key.clone(), file)),
                Err(e) => return state.lost(&key, lines, &e),
            }
        }
        if let Some((key, file)) = self.current.as_mut() {
            state.append(file, key, bytes, lines);
        }
    }

    /// The client is gone: write a partial last line, terminated, and
    /// count it; close the socket and the file.
    fn finish(&mut self, state: &mut State) {
        self.stream = None;
        if !self.pending.is_empty() {
            let mut line = std::mem::take(&mut self.pending);
            let cut_at = line.len();
            line.push(b'\n');
            state.summary.partial_lines += 1;
            state.summary.warnings.push(
                Position::Unknown,
                format!(
                    "connection {} ({}): last line cut short after {cut_at} bytes; written with a newline added",
                    self.id, self.own_name
                ),
            );
            self.write_lines(state, &line);
        }
        self.current = None;
    }
}

/// The pid of the process at the other end, from `SO_PEERCRED`.
fn peer_pid(stream: &UnixStream) -> Option<i32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and `len` holds the size
    // of `cred`, as getsockopt(SO_PEERCRED) requires.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid)
}

/// `YYYYMMDDTHHMMSS.uuuuuuZ` in UTC, the form of a SID's timestamp.
pub fn sid_timestamp(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}.{:06}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_micros()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn corpus(rel: &str) -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/corpus/trace2/"
        ))
        .join(rel)
    }

    fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
        bytes.split_inclusive(|&b| b == b'\n')
    }

    /// The sid of a line according to serde_json (valid UTF-8 lines only).
    fn reference_sid(line: &[u8]) -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(line).ok()?;
        value.get("sid")?.as_str().map(str::to_owned)
    }

    #[test]
    fn sid_matches_serde_json_on_every_corpus_event_line() {
        let mut checked = 0;
        for entry in std::fs::read_dir(corpus("")).unwrap() {
            let path = entry.unwrap().path().join("event.jsonl");
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            for line in lines_of(&bytes) {
                let ours = scan_sid(line).expect("every git EVENT line has a sid");
                if let Some(reference) = reference_sid(line) {
                    assert_eq!(ours, reference.as_bytes(), "{}", path.display());
                    checked += 1;
                }
            }
        }
        assert!(checked > 3000, "only {checked} lines checked");
    }

    #[test]
    fn sid_scanner_handles_escapes_spacing_and_order() {
        let line = br#" { "event" : "x\"sid\":\"no" , "n":[1,{"sid":"nested"}], "t":-1.5e3, "ok":true, "sid" : "a\/b\u002fc\"d\u00e9\ud83d\ude00" }"#;
        let sid = scan_sid(line).unwrap();
        assert_eq!(
            String::from_utf8(sid.clone()).unwrap(),
            "a/b/c\"d\u{e9}\u{1f600}"
        );
        // Every byte of a multi-byte character becomes one `_`.
        assert_eq!(session_file_name(&sid).unwrap(), "c_d______");
        // Raw non-UTF-8 bytes are kept, as git writes them.
        assert_eq!(scan_sid(b"{\"sid\":\"x\xe9y\"}").unwrap(), b"x\xe9y");
        // Incomplete or missing: no sid, never a panic.
        for bad in [
            &b"{\"event\":\"version\",\"sid\":\"2026"[..],
            b"{\"event\":\"version\",\"sid\":",
            b"{\"event\":\"ver",
            b"{\"event\":\"x\",\"sid\":12}",
            b"{\"sid\":\"\\u12\"}",
            b"not json",
            b"",
            b"{",
            b"{\"a\":[\"]\"",
        ] {
            assert_eq!(scan_sid(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        // A lone surrogate becomes U+FFFD.
        assert_eq!(
            scan_sid(br#"{"sid":"\ud800"}"#).unwrap(),
            "\u{fffd}".as_bytes()
        );
    }

    #[test]
    fn sid_scanner_survives_mutated_lines_and_agrees_with_serde_when_valid() {
        let bytes = std::fs::read(corpus("04-clone-local/event.jsonl")).unwrap();
        let lines: Vec<&[u8]> = lines_of(&bytes).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"{}[]\"\\:,u0d8 \x80\xffsid/";
        for _ in 0..20_000 {
            let mut line = lines[next() as usize % lines.len()].to_vec();
            for _ in 0..1 + next() % 4 {
                let at = next() as usize % line.len();
                match next() % 3 {
                    0 => line[at] = alphabet[next() as usize % alphabet.len()],
                    1 => line.truncate(at),
                    _ => line.insert(at, alphabet[next() as usize % alphabet.len()]),
                }
                if line.is_empty() {
                    break;
                }
            }
            let ours = scan_sid(&line);
            if let Some(ours) = &ours {
                let _ = session_file_name(ours);
            }
            if let Some(reference) = reference_sid(&line) {
                assert_eq!(
                    ours.as_deref(),
                    Some(reference.as_bytes()),
                    "{:?}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
    }

    #[test]
    fn session_names_stay_inside_the_output_directory() {
        assert_eq!(
            session_file_name(b"20261121T195437.801874Z-H0a7c9cdf-P000039db/20261121T195437.9Z-H0a7c9cdf-P000039dc")
                .unwrap(),
            "20261121T195437.9Z-H0a7c9cdf-P000039dc"
        );
        assert_eq!(session_file_name(b"x/..").unwrap(), "_.");
        assert_eq!(session_file_name(b"a\0b c").unwrap(), "a_b_c");
        assert_eq!(session_file_name(b"x/"), None);
        assert_eq!(session_file_name(b""), None);
    }

    #[test]
    fn format_of_every_corpus_connection_is_detected_from_its_first_line() {
        for (dir, format) in [
            ("uds-event", Format::Event),
            ("uds-perf", Format::Perf),
            ("uds-normal", Format::Normal),
        ] {
            let dir = corpus("14-af-unix-stream").join(dir);
            let mut seen = 0;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if !path
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("conn-")
                {
                    continue;
                }
                let bytes = std::fs::read(&path).unwrap();
                let first = lines_of(&bytes).next().unwrap();
                assert_eq!(detect_format(first), format, "{}", path.display());
                // A first line cut short still says the same once the
                // bytes that differ (the ` | ` before `d<depth>`) arrived.
                for cut in 1..first.len() {
                    if format == Format::Event || cut >= 47 {
                        assert_eq!(
                            detect_format(&first[..cut]),
                            format,
                            "{} cut {cut}",
                            path.display()
                        );
                    }
                }
                seen += 1;
            }
            assert_eq!(seen, 8);
        }
        // Brief variants (case 12 has all *_BRIEF on).
        let brief = corpus("12-brief");
        for (file, format) in [("perf.log", Format::Perf), ("normal.log", Format::Normal)] {
            let bytes = std::fs::read(brief.join(file)).unwrap();
            let versions = lines_of(&bytes)
                .filter(|l| l.starts_with(b"version ") || l.windows(9).any(|w| w == b"| version"));
            let mut n = 0;
            for line in versions {
                assert_eq!(
                    detect_format(line),
                    format,
                    "{file}: {:?}",
                    String::from_utf8_lossy(line)
                );
                n += 1;
            }
            assert!(n > 3);
        }
    }

    #[test]
    fn sid_timestamps_look_like_gits() {
        let t = UNIX_EPOCH + Duration::from_micros(1_795_290_877_805_171);
        assert_eq!(sid_timestamp(t), "20261121T195437.805171Z");
        assert_eq!(sid_timestamp(UNIX_EPOCH), "19700101T000000.000000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(sid_timestamp(leap), "20000229T000000.000000Z");
    }

    struct Running {
        _tmp: tempfile::TempDir,
        stream: PathBuf,
        dgram: PathBuf,
        out: PathBuf,
        stop: StopHandle,
        thread: std::thread::JoinHandle<Result<Summary>>,
    }

    fn start(grace: Duration) -> Running {
        let tmp = tempfile::tempdir().unwrap();
        let stream = tmp.path().join("t2.sock");
        let dgram = tmp.path().join("t2.dgram");
        let out = tmp.path().join("out");
        let receiver = Receiver::bind(Config {
            stream_socket: Some(stream.clone()),
            dgram_socket: Some(dgram.clone()),
            out_dir: out.clone(),
            grace,
        })
        .unwrap();
        let stop = receiver.stop_handle();
        let thread = std::thread::spawn(move || receiver.run());
        Running {
            _tmp: tmp,
            stream,
            dgram,
            out,
            stop,
            thread,
        }
    }

    impl Running {
        fn finish(self) -> (PathBuf, Summary, tempfile::TempDir) {
            self.stop.stop();
            let summary = self.thread.join().unwrap().unwrap();
            assert!(
                !self.stream.exists() && !self.dgram.exists(),
                "socket files removed"
            );
            (self.out, summary, self._tmp)
        }
    }

    /// Every file under `dir/sub`, by name.
    fn files(dir: &Path, sub: &str) -> BTreeMap<String, Vec<u8>> {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            return BTreeMap::new();
        };
        entries
            .map(|e| {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&path).unwrap())
            })
            .collect()
    }

    fn conn_files(case_dir: &Path) -> Vec<Vec<u8>> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(case_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("conn-")
            })
            .collect();
        names.sort();
        names.iter().map(|p| std::fs::read(p).unwrap()).collect()
    }

    #[test]
    fn replayed_stream_connections_become_one_file_per_session() {
        let run = start(Duration::from_secs(5));
        let case = corpus("14-af-unix-stream");
        let mut expected_event = BTreeMap::new();
        let mut expected_other: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
        let mut total_lines = 0;
        let mut total_bytes = 0;
        let mut clients = Vec::new();
        for (format, dir) in [
            ("event", "uds-event"),
            ("perf", "uds-perf"),
            ("normal", "uds-normal"),
        ] {
            for (n, bytes) in conn_files(&case.join(dir)).into_iter().enumerate() {
                total_lines += memchr::memchr_iter(b'\n', &bytes).count() as u64;
                total_bytes += bytes.len() as u64;
                if format == "event" {
                    let sid = scan_sid(&bytes).unwrap();
                    expected_event.insert(session_file_name(&sid).unwrap(), bytes.clone());
                } else {
                    expected_other
                        .entry(format)
                        .or_default()
                        .push(bytes.clone());
                }
                // Open all connections first, then write in odd-sized
                // pieces interleaved across connections.
                let client = UnixStream::connect(&run.stream).unwrap();
                clients.push((client, bytes, 1 + n * 7 % 97));
            }
        }
        let mut offset = vec![0; clients.len()];
        loop {
            let mut progressed = false;
            for (i, (client, bytes, step)) in clients.iter_mut().enumerate() {
                if offset[i] < bytes.len() {
                    let end = (offset[i] + *step).min(bytes.len());
                    client.write_all(&bytes[offset[i]..end]).unwrap();
                    offset[i] = end;
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        drop(clients);
        let (out, summary, _tmp) = run.finish();
        assert_eq!(files(&out, "event"), expected_event);
        for (format, mut expected) in expected_other {
            let got = files(&out, format);
            let mut got_contents: Vec<Vec<u8>> = got.values().cloned().collect();
            got_contents.sort();
            expected.sort();
            assert_eq!(got_contents, expected, "{format}");
            for name in got.keys() {
                // <YYYYMMDDTHHMMSS.uuuuuuZ>-P<pid hex8>
                assert_eq!(name.len(), 23 + 10, "{name}");
                assert!(name.contains("Z-P"), "{name}");
            }
        }
        assert_eq!(summary.lines, total_lines);
        assert_eq!(summary.bytes, total_bytes);
        assert_eq!(summary.connections, 24);
        assert_eq!(summary.sessions, 24);
        assert_eq!(summary.partial_lines, 0);
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    }

    #[test]
    fn replayed_datagrams_are_grouped_by_sid() {
        let run = start(Duration::ZERO);
        let case = corpus("15-af-unix-dgram");
        let client = UnixDatagram::unbound().unwrap();
        client.connect(&run.dgram).unwrap();
        let mut expected_event: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut expected_other = BTreeMap::new();
        let mut datagrams = 0;
        for format in ["event", "perf", "normal"] {
            let dir = case.join(format!("uds-{format}"));
            let combined = std::fs::read(dir.join("combined.txt")).unwrap();
            let tsv = std::fs::read_to_string(dir.join("datagrams.tsv")).unwrap();
            let mut at = 0;
            for row in tsv.lines().skip(1) {
                let size: usize = row.split('\t').nth(2).unwrap().parse().unwrap();
                let datagram = &combined[at..at + size];
                at += size;
                client.send(datagram).unwrap();
                datagrams += 1;
                if format == "event" {
                    let name = session_file_name(&scan_sid(datagram).unwrap()).unwrap();
                    expected_event
                        .entry(name)
                        .or_default()
                        .extend_from_slice(datagram);
                }
            }
            assert_eq!(at, combined.len());
            if format != "event" {
                expected_other.insert(format, combined);
            }
        }
        let (out, summary, _tmp) = run.finish();
        assert_eq!(files(&out, "event"), expected_event);
        for (format, combined) in expected_other {
            assert_eq!(
                files(&out, format),
                BTreeMap::from([("dgram".to_string(), combined)])
            );
        }
        assert_eq!(summary.datagrams, datagrams);
        assert_eq!(summary.lines, 143 + 153 + 63);
        assert_eq!(summary.sessions, expected_event_len(&out) + 2);
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    }

    fn expected_event_len(out: &Path) -> u64 {
        files(out, "event").len() as u64
    }

    const SID: &str = "20261121T000000.000001Z-H0a7c9cdf-P00000001";

    #[test]
    fn a_client_that_vanishes_mid_line_leaves_a_terminated_counted_line() {
        let run = start(Duration::from_secs(5));
        let full = format!("{{\"event\":\"version\",\"sid\":\"{SID}\",\"evt\":\"4\"}}\n");
        let cut = format!("{{\"event\":\"start\",\"sid\":\"{SID}\",\"argv\":[\"gi");
        let mut client = UnixStream::connect(&run.stream).unwrap();
        client.write_all(full.as_bytes()).unwrap();
        client.write_all(cut.as_bytes()).unwrap();
        drop(client);
        // A client that dies before its sid is complete.
        let mut early = UnixStream::connect(&run.stream).unwrap();
        early.write_all(b"{\"event\":\"version\",\"si").unwrap();
        drop(early);
        // A PERF client cut mid-line.
        let mut perf = UnixStream::connect(&run.stream).unwrap();
        perf.write_all(b"d0 | main                     | version      |     |           |           |              | 2.47.3\nd0 | main   ").unwrap();
        drop(perf);
        let (out, summary, _tmp) = run.finish();
        let event = files(&out, "event");
        assert_eq!(event[SID], format!("{full}{cut}\n").as_bytes());
        assert_eq!(event.len(), 2);
        let (early_name, early_bytes) = event.iter().find(|(k, _)| *k != SID).unwrap();
        assert!(early_name.contains("Z-P"), "{early_name}");
        assert_eq!(early_bytes, b"{\"event\":\"version\",\"si\n");
        let perf = files(&out, "perf");
        assert_eq!(perf.len(), 1);
        assert!(perf
            .values()
            .next()
            .unwrap()
            .ends_with(b"2.47.3\nd0 | main   \n"));
        assert_eq!(summary.partial_lines, 3);
        assert_eq!(summary.lines_without_sid, 1);
        assert_eq!(summary.lines, 5);
        assert_eq!(summary.warnings.total(), 4);
    }

    #[test]
    fn lines_longer_than_a_read_and_raw_bytes_arrive_intact() {
        let run = start(Duration::from_secs(5));
        let mut expected = Vec::new();
        for (n, size) in [(1, 10), (2, READ_CHUNK * 3 + 17), (3, 5)] {
            let mut line =
                format!("{{\"event\":\"start\",\"sid\":\"{SID}\",\"n\":{n},\"argv\":[\"")
                    .into_bytes();
            line.extend((0..size).map(|i| b"a\xe9\xff/"[i % 4]));
            line.extend_from_slice(b"\"]}\n");
            expected.extend_from_slice(&line);
        }
        let mut client = UnixStream::connect(&run.stream).unwrap();
        client.write_all(&expected).unwrap();
        drop(client);
        let (out, summary, _tmp) = run.finish();
        assert_eq!(files(&out, "event")[SID], expected);
        assert_eq!(summary.lines, 3);
        assert!(summary.warnings.is_empty());
    }

    #[test]
    fn stopping_with_a_client_still_connected_writes_its_partial_line() {
        let run = start(Duration::ZERO);
        let mut client = UnixStream::connect(&run.stream).unwrap();
        client
            .write_all(
                format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n{{\"event\":\"sta")
                    .as_bytes(),
            )
            .unwrap();
        // The client stays connected while the receiver stops.
        let (out, summary, _tmp) = run.finish();
        assert_eq!(
            files(&out, "event")[SID],
            format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n{{\"event\":\"sta\n").as_bytes()
        );
        assert_eq!(summary.partial_lines, 1);
        assert_eq!(summary.connections, 1);
        drop(client);
    }

    #[test]
    fn existing_files_get_git_style_suffixes_and_a_session_coming_back_appends() {
        let run = start(Duration::from_secs(5));
        std::fs::create_dir_all(run.out.join("event")).unwrap();
        std::fs::write(run.out.join("event").join(SID), b"from an earlier run\n").unwrap();
        let line = format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n");
        for _ in 0..2 {
            let mut client = UnixStream::connect(&run.stream).unwrap();
            client.write_all(line.as_bytes()).unwrap();
        }
        let (out, summary, _tmp) = run.finish();
        let event = files(&out, "event");
        assert_eq!(event[SID], b"from an earlier run\n");
        assert_eq!(
            event[&format!("{SID}.1")],
            format!("{line}{line}").as_bytes()
        );
        assert_eq!(summary.sessions, 1);
    }

    #[test]
    fn bind_replaces_stale_sockets_but_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("s");
        let config = |stream: &Path| Config {
            stream_socket: Some(stream.to_path_buf()),
            dgram_socket: None,
            out_dir: tmp.path().join("out"),
            grace: Duration::ZERO,
        };
        drop(UnixListener::bind(&sock).unwrap()); // leaves a stale file
        assert!(sock.exists());
        let live = Receiver::bind(config(&sock)).unwrap();
        let err = Receiver::bind(config(&sock)).unwrap_err().to_string();
        assert!(err.contains("another process is listening"), "{err}");
        drop(live);
        assert!(
            !sock.exists(),
            "dropping an unused receiver removes its socket"
        );
        let file = tmp.path().join("plain");
        std::fs::write(&file, b"keep me").unwrap();
        let err = Receiver::bind(config(&file)).unwrap_err().to_string();
        assert!(err.contains("not a socket"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
        let same = Config {
            dgram_socket: Some(sock.clone()),
            ..config(&sock)
        };
        assert!(Receiver::bind(same).is_err());
    }
}
