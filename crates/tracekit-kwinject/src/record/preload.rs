//! `--method preload`: run the build with the `tracekit-preload` shim in
//! `LD_PRELOAD` and turn its events file into the trace afterwards.
//!
//! The shim's library constructor reports every exec of a dynamically
//! linked program, whichever call started it (`execve`, `execveat`,
//! `fexecve`, the `execv*`/`execl*` family, `posix_spawn*`, `vfork`+exec,
//! `system`, `popen`); its `fork` hook reports subshells that never exec,
//! so their children find their parent record; its `waitpid`/`wait4`/`wait3`/`wait`
//! hooks report exit status and end time when the parent reaps a child.
//! Statically linked programs load no shim and are not seen: use ptrace.
//!
//! The events file is read once the build is over; if the recorder dies,
//! the build goes on (it only appends to a file).

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit_core::Warnings;

use super::events::{decode, Event};
use super::{exit_of, now_us, Assembler, PRELOAD_OUT_VAR};
use crate::trace::Exit;

/// The file name of the shim library.
pub const LIB_NAME: &str = "libtracekit_preload.so";

/// Where the shim is: `$TRACEKIT_PRELOAD_LIB`, else beside the running
/// executable (or its parent directory, for test binaries in `deps/`), else
/// `../lib/tracekit/` from it.
pub fn find_lib() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACEKIT_PRELOAD_LIB") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join(LIB_NAME),
        dir.join("..").join(LIB_NAME),
        dir.join("../lib/tracekit").join(LIB_NAME),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .and_then(|p| p.canonicalize().ok())
}

/// Runs `cmd` with the shim; events go to `events_path` (created, removed
/// afterwards unless `keep_events`). Returns how the build ended and the
/// lost-event count.
pub fn record(
    cmd: &[OsString],
    lib: &Path,
    events_path: &Path,
    asm: &mut Assembler,
    warnings: &mut Warnings,
) -> io::Result<Option<Exit>> {
    let (program, rest) = cmd
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command"))?;
    fs::File::create(events_path)?;
    let lib_s = lib.to_str().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the shim's path is not UTF-8")
    })?;
    if lib_s.contains([' ', ':']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the shim's path {lib_s} holds a space or colon, which LD_PRELOAD cannot carry"
            ),
        ));
    }
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{lib_s}:{old}"),
        _ => lib_s.to_string(),
    };
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("LD_PRELOAD", preload)
        .env(PRELOAD_OUT_VAR, events_path);
    // SAFETY: the closure runs between fork and exec and only resets
    // signal dispositions (async-signal-safe).
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let root = child.id() as i32;
    // SAFETY: changing dispositions has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = loop {
        match child.wait() {
            Ok(s) => break s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    let end = now_us();
    let root_exit = exit_of(status.into_raw());
    let buf = fs::read(events_path)?;
    asm.root(root);
    for ev in decode(&buf, warnings) {
        match ev {
            Event::Fork { pid, ppid, .. } => asm.fork(pid, ppid),
            Event::Exec(mut e) => {
                super::unwrap_script(&mut e);
                asm.exec(e)
            }
            Event::Reaped {
                pid,
                status,
                time_us,
            } => {
                if let Some(how) = exit_of(status) {
                    asm.exit(pid, time_us, how);
                }
            }
        }
    }
    if let Some(how) = root_exit {
        asm.exit(root, end, how);
    }
    Ok(root_exit)
}
