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
//! # Privacy
//!
//! Trace lines carry command lines, URLs and paths, so what the receiver
//! creates is private like every trace file tracekit writes
//! ([`tracekit_core::files`]): output files get the trace file mode (0600
//! unless `--file-mode`/`TRACEKIT_FILE_MODE` chose another), the output
//! directories it creates that mode plus search permission (0700), and
//! the socket files that mode too, so only the user's own git processes
//! can connect (connecting needs write permission on the socket); a socket
//! is given its mode before it appears under its name. Files and
//! directories that exist already keep their mode.
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
//! # Observers
//!
//! [`Receiver::run_with`] also hands every complete line to an
//! [`Observer`] as it arrives (with the connection it came on, the peer's
//! pid and uid), tells it when a connection ends, and wakes it at the
//! deadlines it asks for: this is how `trace2 listen --otlp-endpoint`
//! turns sessions into OpenTelemetry traces (`tracekit-otlp`) while the
//! files are written as before. Without an output directory
//! ([`Config::out_dir`] `None`) only the observer sees the lines.
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
use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracekit_core::{files, Error, Position, Result, Warnings};

mod classify;
mod conn;
mod naming;
mod routing;
#[cfg(test)]
mod tests;

pub use classify::{detect_format, scan_sid, Format};
use conn::Conn;
pub use naming::{is_session_file_name, session_file_name, sid_timestamp};
use routing::{Files, SessionKey, State};

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

/// What to listen on and where to write.
#[derive(Debug, Clone)]
pub struct Config {
    /// SOCK_STREAM socket for `af_unix:PATH` and `af_unix:stream:PATH`.
    pub stream_socket: Option<PathBuf>,
    /// SOCK_DGRAM socket for `af_unix:dgram:PATH`.
    pub dgram_socket: Option<PathBuf>,
    /// Output directory (created if missing); `None`: no files, the lines
    /// only go to the [`Observer`].
    pub out_dir: Option<PathBuf>,
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
    /// Lines received (a partial line counts as one); with an output
    /// directory each is written or counted in `lines_lost`.
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

/// The process at the other end of a stream connection (`SO_PEERCRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub pid: i32,
    pub uid: u32,
}

/// Where lines came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSource {
    /// A stream connection (one git process), numbered from 1 in accept
    /// order.
    Stream { conn: u64, peer: Option<Peer> },
    /// A datagram (one line of any process).
    Datagram,
}

/// Sees what a running [`Receiver`] receives, in the receiver's thread.
pub trait Observer {
    /// Complete lines, each ending in `\n` (a line cut short by a client
    /// that went away gets one added), all of one source and format.
    fn lines(&mut self, source: LineSource, format: Format, lines: &[u8]);
    /// A stream connection ended: its process exited (or closed it).
    fn closed(&mut self, conn: u64);
    /// Called after every round of the poll loop; returns the time by which
    /// it wants to be called again, if any.
    fn tick(&mut self, now: Instant) -> Option<Instant>;
}

/// An observer that does nothing ([`Receiver::run`]).
struct NoObserver;

impl Observer for NoObserver {
    fn lines(&mut self, _: LineSource, _: Format, _: &[u8]) {}
    fn closed(&mut self, _: u64) {}
    fn tick(&mut self, _: Instant) -> Option<Instant> {
        None
    }
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

pub(crate) use files::create_private_dir;

/// Binds a socket file at `path` with the trace file mode ([`files::mode`],
/// 0600 by default: only the user's own git processes can connect; the
/// umask removes bits as it does from files). The
/// socket is bound under a temporary name in the same directory, given its
/// mode and renamed into place, so nobody can connect before the mode is
/// set; when the temporary name would be too long for `sun_path`, it is
/// bound in place and its mode set at once.
fn bind_private<S>(path: &Path, bind: impl Fn(&Path) -> io::Result<S>) -> io::Result<S> {
    // bind(2) creates the file with 0777 minus the umask; keeping only
    // those bits applies the umask the way it applies to files.
    let set_mode = |p: &Path| {
        let bound = std::fs::symlink_metadata(p)?.permissions().mode();
        std::fs::set_permissions(
            p,
            std::fs::Permissions::from_mode(files::mode() & bound & 0o7777),
        )
    };
    let tmp = path.file_name().map(|name| {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        path.with_file_name(tmp_name)
    });
    let Some(tmp) = tmp.filter(|t| t.as_os_str().len() < 108) else {
        let socket = bind(path)?;
        if let Err(e) = set_mode(path) {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        return Ok(socket);
    };
    // A temporary socket left by a receiver of the same pid that was killed.
    let _ = std::fs::remove_file(&tmp);
    let socket = bind(&tmp)?;
    if let Err(e) = set_mode(&tmp).and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(socket)
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
        if let Some(dir) = &config.out_dir {
            create_private_dir(dir).map_err(|e| Error::io(Some(dir), e))?;
        }
        let listener = match &config.stream_socket {
            Some(path) => {
                check_socket_path(path)?;
                clear_stale_socket(path, true)?;
                let listener = bind_private(path, |p| UnixListener::bind(p))
                    .map_err(|e| Error::io(Some(path), e))?;
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
                let socket = bind_private(path, |p| UnixDatagram::bind(p))
                    .map_err(|e| Error::io(Some(path), e))?;
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
    pub fn run(self) -> Result<Summary> {
        self.run_with(&mut NoObserver)
    }

    /// [`Receiver::run`], handing what arrives to `observer` too.
    pub fn run_with(mut self, observer: &mut dyn Observer) -> Result<Summary> {
        let mut state = State::new(self.config.out_dir.clone(), observer);
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

            let wake_at = state.observer.tick(Instant::now());
            let observer_ms = wake_at.map(|at| {
                // Round up: waking a millisecond early would spin.
                let left = at.saturating_duration_since(Instant::now());
                (left.as_micros().div_ceil(1000)).min(60_000) as libc::c_int
            });
            let timeout_ms: libc::c_int = match stopping_since {
                None => observer_ms.unwrap_or(-1),
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
                    let grace_ms = left.as_millis().clamp(1, 60_000) as libc::c_int;
                    observer_ms.map_or(grace_ms, |o| o.min(grace_ms))
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
                    state.observer.closed(conn.id);
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
                state.observer.closed(conn.id);
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
        Ok(std::mem::take(&mut state.summary))
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
    fn begin_shutdown(&mut self, state: &mut State<'_>, dgram_buf: &mut [u8]) {
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
        state: &mut State<'_>,
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

    fn receive_datagrams(&self, state: &mut State<'_>, buf: &mut [u8], limit: usize) {
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
