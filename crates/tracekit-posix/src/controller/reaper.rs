//! The *reaper*: the process that runs the traced program for `record
//! --inherit` and waits for every process that inherited the stream.
//!
//! The processes that write into an inherited stream are the program and
//! its descendants: they inherit the stream's name in the environment (and
//! its mapping across `fork`), and only they do. Some outlive the program
//! (a parent that exits at once, a daemon that double-forks). The reaper
//! is a child subreaper (`PR_SET_CHILD_SUBREAPER`): every descendant that
//! loses its parent is re-parented to it, so `waitpid(-1)` sees each of
//! them exit, crashed or not, with no pid to poll and no pid reused under
//! it, until `ECHILD` says none is left. (A reference count in the mapping
//! would miss a descendant that has not attached yet, since attaching is
//! lazy, and needs a dead-pid check that pid reuse defeats.)
//!
//! It is forked twice from the controller (so that nobody has to reap it
//! when it outlives the controller) and tells the controller over a pipe:
//! the program's pid, or why it could not run; the program's exit status;
//! then it exits when the last descendant did (end of file). Under
//! `--stop-at-exit` the controller shuts the stream down at the program's
//! exit and returns; the reaper waits on, and once the controller says the
//! log is complete (a byte on a second pipe) it writes into the log's
//! header how many events were written after the shutdown
//! ([`LateWrites`]), again whenever that count changes, and last when the
//! last descendant is gone; then it removes the stream's name.
//!
//! The controller is multi-threaded (its flusher), so after `fork` the
//! reaper and the program (until its `exec`) make only async-signal-safe
//! calls and never allocate: everything is prepared before. The count
//! needs no log reading: the stream counts the events it refuses once shut
//! down, and the slots reserved past what the reader finished with are
//! those of writers admitted just before.

use std::ffi::{c_char, CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

use crate::api::LateWrites;

/// What the reaper reports, in 8-byte messages (kind, value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Msg {
    /// The program runs with this pid.
    Spawned(i32),
    /// The program could not be run: errno.
    ExecFailed(i32),
    /// The program ended: its raw wait status.
    Exited(i32),
    /// The reaper is gone: every descendant has exited (or it was killed).
    Gone,
}

const SPAWNED: u32 = 1;
const EXEC_FAILED: u32 = 2;
const EXITED: u32 = 3;

/// The program to run, ready for `execvpe` in a forked child.
pub(super) struct Spec {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: Option<CString>,
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: contains a NUL byte", s.to_string_lossy()),
        )
    })
}

impl Spec {
    /// The program, arguments, environment (this process's, with the
    /// command's changes) and directory of `cmd`.
    pub(super) fn of(cmd: &Command) -> io::Result<Spec> {
        let program = cstring(cmd.get_program())?;
        let mut argv = vec![program.clone()];
        for a in cmd.get_args() {
            argv.push(cstring(a)?);
        }
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
        for (k, v) in cmd.get_envs() {
            env.retain(|(key, _)| key != k);
            if let Some(v) = v {
                env.push((k.to_owned(), v.to_owned()));
            }
        }
        let mut envp = Vec::with_capacity(env.len());
        for (k, v) in env {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(cstring(OsStr::from_bytes(&kv))?);
        }
        let cwd = cmd
            .get_current_dir()
            .map(|d| cstring(d.as_os_str()))
            .transpose()?;
        Ok(Spec {
            program,
            argv,
            envp,
            cwd,
        })
    }
}

/// The controller's side of a running reaper.
pub(super) struct Reaper {
    status: File,
    /// `--stop-at-exit`: the write end that says the log is complete.
    done: Option<File>,
}

fn pipe() -> io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// The errno of the last failed call (async-signal-safe).
fn errno() -> i32 {
    // SAFETY: errno of this thread.
    unsafe { *libc::__errno_location() }
}

/// Everything the reaper and the program need, made before `fork`.
struct Prepared<'a> {
    spec: &'a Spec,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    status_tx: RawFd,
    done_rx: RawFd,
    late: Option<(LateWrites, RawFd)>,
}

/// Starts the reaper, which runs `spec`. With `late` (the stream's
/// [`LateWrites`] and its log's descriptor), it counts the events written
/// after the shutdown into the log once [`Reaper::log_complete`] is called.
pub(super) fn spawn(spec: &Spec, late: Option<(LateWrites, RawFd)>) -> io::Result<Reaper> {
    let (status_rx, status_tx) = pipe()?;
    // SAFETY: fresh descriptors, owned here (closed on error by drop).
    let status = unsafe { File::from_raw_fd(status_rx) };
    // SAFETY: as above.
    let status_tx_owned = unsafe { File::from_raw_fd(status_tx) };
    let (done_rx, done) = if late.is_some() {
        let (r, w) = pipe()?;
        // SAFETY: as above.
        (
            Some(unsafe { File::from_raw_fd(r) }),
            Some(unsafe { File::from_raw_fd(w) }),
        )
    } else {
        (None, None)
    };
    let nul = |v: &[CString]| -> Vec<*const c_char> {
        v.iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let p = Prepared {
        spec,
        argv: nul(&spec.argv),
        envp: nul(&spec.envp),
        status_tx,
        done_rx: done_rx.as_ref().map_or(-1, |f| f.as_raw_fd()),
        late,
    };
    // SAFETY: the child only forks again and exits; the grandchild runs
    // `reap`, see the module's notes on what it may call.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(io::Error::last_os_error());
    }
    if child == 0 {
        // SAFETY: fork/_exit in the child.
        unsafe {
            if libc::fork() != 0 {
                libc::_exit(0);
            }
            libc::close(status_rx);
            if let Some(d) = &done {
                libc::close(d.as_raw_fd());
            }
        }
        reap(&p);
    }
    let mut st = 0;
    // SAFETY: reaping our own short-lived child (ECHILD if a SIGCHLD
    // handler did first: harmless).
    while unsafe { libc::waitpid(child, &mut st, 0) } < 0 && errno() == libc::EINTR {}
    drop(status_tx_owned);
    drop(done_rx);
    Ok(Reaper { status, done })
}

impl Reaper {
    /// The next message, waiting up to `timeout_ms` (-1: for ever; `None`
    /// when none came in that time).
    pub(super) fn next(&mut self, timeout_ms: i32) -> io::Result<Option<Msg>> {
        let mut pfd = libc::pollfd {
            fd: self.status.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut pfd, 1, timeout_ms) } {
            0 => return Ok(None),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted {
                    Ok(None)
                } else {
                    Err(e)
                };
            }
            _ => {}
        }
        let mut m = [0u8; 8];
        let mut got = 0;
        while got < m.len() {
            match self.status.read(&mut m[got..]) {
                Ok(0) => return Ok(Some(Msg::Gone)),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let kind = u32::from_ne_bytes([m[0], m[1], m[2], m[3]]);
        let v = i32::from_ne_bytes([m[4], m[5], m[6], m[7]]);
        Ok(Some(match kind {
            SPAWNED => Msg::Spawned(v),
            EXEC_FAILED => Msg::ExecFailed(v),
            EXITED => Msg::Exited(v),
            _ => Msg::Gone,
        }))
    }

    /// `--stop-at-exit`: the log is complete; the reaper may count into it.
    pub(super) fn log_complete(mut self) {
        if let Some(mut d) = self.done.take() {
            let _ = d.write_all(&[1]);
        }
    }
}

fn send(fd: RawFd, kind: u32, v: i32) {
    let mut m = [0u8; 8];
    m[..4].copy_from_slice(&kind.to_ne_bytes());
    m[4..].copy_from_slice(&v.to_ne_bytes());
    // SAFETY: writing a valid buffer to our pipe (atomic: under PIPE_BUF);
    // a controller that is gone makes it fail with EPIPE (ignored below).
    unsafe { libc::write(fd, m.as_ptr().cast(), m.len()) };
}

/// The reaper's life: runs the program, reports, waits for every
/// descendant, counts late events.
fn reap(p: &Prepared<'_>) -> ! {
    // SAFETY: prctl, pipe2, fork, signal calls with valid arguments; in the
    // program's child only async-signal-safe calls before exec.
    unsafe {
        // A controller that is gone must not kill it with SIGPIPE (the
        // program gets SIGPIPE back by default below).
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        let mut err = [0; 2];
        if libc::pipe2(err.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            send(p.status_tx, EXEC_FAILED, errno());
            libc::_exit(0);
        }
        let program = libc::fork();
        if program == 0 {
            // As `std::process::Command` leaves a child: no signal blocked,
            // SIGPIPE by default (the Rust runtime ignores it here).
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let ok = p
                .spec
                .cwd
                .as_ref()
                .is_none_or(|d| libc::chdir(d.as_ptr()) == 0);
            if ok {
                libc::execvpe(p.spec.program.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
            }
            let e = errno().to_ne_bytes();
            libc::write(err[1], e.as_ptr().cast(), e.len());
            libc::_exit(127);
        }
        libc::close(err[1]);
        if program < 0 {
            send(p.status_tx, EXEC_FAILED, errno());
            libc::_exit(0);
        }
        let mut e = [0u8; 4];
        let n = loop {
            let n = libc::read(err[0], e.as_mut_ptr().cast(), e.len());
            if n >= 0 || errno() != libc::EINTR {
                break n;
            }
        };
        libc::close(err[0]);
        if n == 4 {
            send(p.status_tx, EXEC_FAILED, i32::from_ne_bytes(e));
        } else {
            send(p.status_tx, SPAWNED, program);
        }
        // The reaper may outlive the controller: it must not keep the
        // controller's terminal or pipes open (a `| cat` would wait for it).
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
        // Nor anything else of the controller's (another stream's pipes,
        // in a controller that records more than one program at once).
        let mut keep = [0, 1, 2, p.status_tx, p.done_rx, -1];
        if let Some((_, log)) = &p.late {
            keep[5] = *log;
        }
        keep.sort_unstable();
        let from = keep.iter().position(|&fd| fd >= 0).unwrap_or(keep.len());
        crate::api::close_all_but(&keep[from..]);
        // Until the program ends: report its status as soon as it does.
        loop {
            let mut st = 0;
            let r = libc::waitpid(-1, &mut st, 0);
            if r == program {
                send(p.status_tx, EXITED, st);
                break;
            }
            if r < 0 && errno() != libc::EINTR {
                libc::_exit(0);
            }
        }
    }
    match &p.late {
        None => {
            // Every other descendant: the controller waits for the end of
            // file that this process's exit makes.
            loop {
                let mut st = 0;
                // SAFETY: waiting for our children.
                let r = unsafe { libc::waitpid(-1, &mut st, 0) };
                if r < 0 && errno() != libc::EINTR {
                    break;
                }
            }
        }
        Some((late, log_fd)) => count_late(late, *log_fd, p.done_rx),
    }
    // SAFETY: leaving without the controller's atexit handlers.
    unsafe { libc::_exit(0) }
}

/// `--stop-at-exit`: waits for the rest of the descendants, writing the
/// count of events written after the shutdown into the log whenever it
/// changes (once the controller said the log is complete), and at the end.
fn count_late(late: &LateWrites, log_fd: RawFd, done_rx: RawFd) {
    // Not closed on drop: the descriptor stays the log's.
    // SAFETY: the log's descriptor, inherited open.
    let log = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(log_fd) });
    // SAFETY: fcntl on our pipe's read end.
    unsafe {
        let fl = libc::fcntl(done_rx, libc::F_GETFL);
        libc::fcntl(done_rx, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    // None: not known yet whether the controller completed the log.
    let mut complete: Option<bool> = None;
    let mut recorded = None;
    let mut record = |complete: Option<bool>| {
        let n = late.count();
        if complete == Some(true)
            && recorded != Some(n)
            && crate::log::set_events_after_shutdown(&log, n).is_ok()
        {
            recorded = Some(n);
        }
    };
    loop {
        let mut st = 0;
        // SAFETY: polling for our children.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r > 0 {
            continue;
        }
        if r < 0 && errno() != libc::EINTR {
            break;
        }
        check_done(done_rx, &mut complete, false);
        record(complete);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    check_done(done_rx, &mut complete, true);
    record(complete);
    // Whether or not the log could be counted into, nobody attaches any
    // more (a keeper that completes the log of a controller that died
    // removes the name too, if it still names this stream).
    late.remove_name();
}

/// Has the controller said whether the log is complete (a byte: yes; end
/// of file: no, it failed or died, and the log is not ours to touch)?
/// With `wait`, waits for it.
fn check_done(done_rx: RawFd, complete: &mut Option<bool>, wait: bool) {
    if complete.is_some() {
        return;
    }
    let mut b = 0u8;
    loop {
        // SAFETY: reading one byte into a valid buffer.
        let n = unsafe { libc::read(done_rx, (&mut b as *mut u8).cast(), 1) };
        match n {
            1 => *complete = Some(true),
            0 => *complete = Some(false),
            _ if errno() == libc::EINTR => continue,
            _ if wait && errno() == libc::EAGAIN => {
                let mut pfd = libc::pollfd {
                    fd: done_rx,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, -1) };
                continue;
            }
            _ => {}
        }
        return;
    }
}
