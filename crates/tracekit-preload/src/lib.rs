//! The LD_PRELOAD shim behind `tracekit record build --method preload`.
//!
//! The shim itself (`shim/lib.rs`) is a `no_std`, `panic=abort` shared
//! library that `build.rs` compiles with its own rustc call (no allocator,
//! no thread-locals, no Rust runtime in the build's processes). This crate
//! embeds it ([`SHIM`]) and writes it where the recorder can preload it
//! ([`install`]). The record layout it writes is documented, and decoded, in
//! `tracekit_kwinject::record::events`.
//!
//! What the shim does in every dynamically linked process of the build,
//! only when `TRACEKIT_PRELOAD_OUT` names a POSIX trace stream (a
//! `tracekit-posix` stream file for all processes in which the recorder
//! registered the event type `tracekit.build`):
//! * `execve`, `execv`, and `execvp`/`execvpe` given a path, report the
//!   exec from the calling process, before the call: an *exec called*
//!   record (pid, parent pid, working directory, the path, argv and the
//!   environment passed), and put a mark on `TRACEKIT_PRELOAD_OUT` for the
//!   new program (`@PID.HASH@` before the path: this pid, an FNV-1a hash
//!   of the exec'd path). A call that returns reports *exec failed*, which
//!   cancels the record. The caller usually has the stream mapped (a fork
//!   child inherits its parent's mapping, a vfork child shares it);
//! * the constructor takes the mark off in place (programs see the plain
//!   path). When the mark names this pid and this program (`AT_EXECFN`),
//!   its exec is reported and nothing more happens: the stream is mapped
//!   only when the program forks, waits or execs. Otherwise it maps the
//!   stream and reports an *exec* record itself; that covers every other
//!   way a program can be started (`posix_spawn*`, `system`, `popen`,
//!   `execl*`, `fexecve`, `execveat`, callers without the shim). A mark
//!   naming this pid but another program means glibc's `execvp` ran a
//!   script without `#!` through `/bin/sh`: that record *replaces* the
//!   caller's;
//! * `fork` reports a *fork* record from the parent, stamped with a time
//!   taken before the fork (so it sorts before anything the child reports,
//!   and the child pays nothing): a subshell that never execs still links
//!   its children to their parent;
//! * `waitpid`, `wait4`, `wait3` and `wait` report a *reaped* record (child pid, wait
//!   status) when a child has ended: exit status and end time;
//! * `execve`, `execvpe`, `posix_spawn`, `posix_spawnp` called with an
//!   environment that lost `LD_PRELOAD` or `TRACEKIT_PRELOAD_OUT` (`env -i`,
//!   `env -u`) get both put back, so the build stays recorded; the trace
//!   leaves them out again.
//!
//! Records are written into the stream's shared-memory ring with
//! `tracekit_posix::producer` (its source is compiled into the shim: it
//! needs only `core`), as events of at most the stream's max-data-size,
//! each behind a fragment header (pid, serial: the low bits of the record's start time, offset, total)
//! that the recorder uses to reassemble larger records. A record's time is
//! the stream time of its first event. No system call per record; mapping
//! the stream costs `open`, `lseek`, `mmap` and `close` once per process
//! that needs it (no descriptor stays open for the program to see). The
//! hooks' usual paths call nothing in libc (in a fork child, the first
//! call of each libc function faults its page in). A full stream refuses
//! events and counts them lost. `errno` is preserved around everything
//! the shim does.

use std::io;
use std::path::PathBuf;

/// The shim library (empty where it is not supported).
pub static SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtracekit_preload.so"));

/// Writes [`SHIM`] to `DIR/libtracekit_preload-<hash>.so` (default: a
/// directory `tracekit-<uid>` of mode 0700 in the temporary directory, so
/// no other user can plant a library there) unless an identical file is
/// already there, and returns its path. The name carries a content hash, so recorders of
/// different versions never overwrite each other's library.
pub fn install(dir: Option<PathBuf>) -> io::Result<PathBuf> {
    if SHIM.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the preload shim is not available on this platform; use --method ptrace",
        ));
    }
    let dir = match dir {
        Some(d) => d,
        None => private_dir()?,
    };
    // FNV-1a: a name, not a security measure (the file is checked below).
    let hash = SHIM.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("libtracekit_preload-{hash:016x}.so"));
    if std::fs::read(&path).is_ok_and(|b| b == SHIM) {
        return Ok(path);
    }
    let tmp = dir.join(format!(
        "libtracekit_preload-{hash:016x}.{}.tmp",
        std::process::id()
    ));
    std::fs::write(&tmp, SHIM)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

fn private_dir() -> io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc_getuid() };
    let dir = std::env::temp_dir().join(format!("tracekit-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is not a private directory of ours", dir.display()),
        ));
    }
    Ok(dir)
}

extern "C" {
    #[link_name = "getuid"]
    fn libc_getuid() -> u32;
}
