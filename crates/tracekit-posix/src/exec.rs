//! What tracing requires of `exec`, `_exit` and `posix_spawn`, for the
//! wrappers of those functions in the C library (`tracekit-posix-c`
//! interposes them; a Rust program calls these around its own exec).
//!
//! The standard says:
//! - a controller that calls an exec function, or exits (also by `_exit`),
//!   shuts its streams down as by `posix_trace_shutdown`: the log is
//!   complete and holds every event recorded before;
//! - a traced process that execs goes on being traced into the same
//!   streams (without its name-to-id mapping); a child created by `fork`
//!   or `posix_spawn` of a process traced into a `POSIX_TRACE_INHERITED`
//!   stream is traced into it too.
//!
//! [`Exec::prepare`] does both right before the exec: it completes the
//! logs of this process's streams (as shutdown does) and names the
//! inherited streams' descriptors, passed open, in the new image's
//! environment ([`traced::INHERIT_ENV`]). If the exec fails, [`Exec::done`]
//! puts everything back: the streams run on and the logs are written on.
//! `exit` shuts streams down from an `atexit` handler; [`exit_now`] is for
//! `_exit`. A process killed by a signal runs none of this: the stream's
//! keeper completes its log.
//!
//! These run in the process about to exec, which may be a `vfork` child
//! sharing its parent's memory: they compare the real `getpid()` (not a
//! cached one) with the controller's before touching any stream.

use std::ffi::{c_char, CStr, CString};

use crate::api;
use crate::traced;

/// A pending exec or spawn: what [`Exec::prepare`] changed.
#[derive(Default)]
pub struct Exec {
    /// Streams of this process whose logs were completed for the exec.
    streams: api::ExecStreams,
    /// Descriptors passed open to the new image (duplicates made for it).
    passed: Vec<i32>,
    /// The new image's environment, if it differs from the caller's.
    env: Option<(Vec<CString>, Vec<*const c_char>)>,
}

impl Exec {
    /// Before `execve(path, argv, envp)` and the like: completes this
    /// controller's logs and prepares the environment that passes
    /// inherited streams on. `envp` is the environment the caller gives
    /// the new image (null-terminated).
    ///
    /// # Safety
    /// `envp` must be null or a null-terminated array of C strings.
    pub unsafe fn prepare(envp: *const *const c_char) -> Exec {
        let streams = api::prepare_exec();
        // SAFETY: the caller's guarantee.
        let mut x = unsafe { Self::pass_inherited(envp, false) };
        x.streams = streams;
        x
    }

    /// Before `posix_spawn(..., envp)`: the child is traced into the
    /// inherited streams of this process, its own included.
    ///
    /// # Safety
    /// As for [`Exec::prepare`].
    pub unsafe fn prepare_spawn(envp: *const *const c_char) -> Exec {
        // SAFETY: the caller's guarantee.
        unsafe { Self::pass_inherited(envp, true) }
    }

    unsafe fn pass_inherited(envp: *const *const c_char, include_own: bool) -> Exec {
        let mut x = Exec::default();
        let fds = traced::inherited_fds(include_own);
        if fds.is_empty() {
            return x;
        }
        for fd in fds {
            // SAFETY: duplicating a descriptor this process holds open;
            // the duplicate is not close-on-exec, so the new image has it.
            let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD, 0) };
            if dup >= 0 {
                x.passed.push(dup);
            }
        }
        if x.passed.is_empty() {
            return x;
        }
        let value = x
            .passed
            .iter()
            .map(|fd| fd.to_string())
            .collect::<Vec<_>>()
            .join(":");
        let prefix = format!("{}=", traced::INHERIT_ENV);
        let mut owned = Vec::new();
        if !envp.is_null() {
            let mut p = envp;
            // SAFETY: a null-terminated array of C strings (the caller's
            // guarantee).
            unsafe {
                while !(*p).is_null() {
                    let e = CStr::from_ptr(*p);
                    if !e.to_bytes().starts_with(prefix.as_bytes()) {
                        owned.push(e.to_owned());
                    }
                    p = p.add(1);
                }
            }
        }
        if let Ok(var) = CString::new(format!("{prefix}{value}")) {
            owned.push(var);
        }
        let mut ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        x.env = Some((owned, ptrs));
        x
    }

    /// The environment to give the new image: the caller's, or the one
    /// that names the inherited streams.
    pub fn envp(&self, caller: *const *const c_char) -> *const *const c_char {
        match &self.env {
            Some((_, ptrs)) => ptrs.as_ptr(),
            None => caller,
        }
    }

    /// The exec returned (it failed), or `posix_spawn` returned (the child
    /// has its own copies of the descriptors, whatever the result): the
    /// streams run on as before and the descriptors made for the new image
    /// are closed.
    pub fn done(self) {
        for fd in &self.passed {
            // SAFETY: closing duplicates this wrapper made.
            unsafe { libc::close(*fd) };
        }
        api::exec_failed(self.streams);
    }
}

/// `_exit`/`_Exit` of a controller: its streams are shut down now, as
/// `exit` does from its `atexit` handler.
pub fn exit_now() {
    api::shutdown_all_of_this_process();
}
