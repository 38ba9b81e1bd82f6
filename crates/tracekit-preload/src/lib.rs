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
//! * its constructor maps the stream and reports one *exec* record: pid, parent pid, time,
//!   working directory, `AT_EXECFN` (the path given to exec), argv and the
//!   whole environment. A constructor sees every way a program can be
//!   started (`execve`, `execveat`, `fexecve`, `execv*`/`execl*`,
//!   `posix_spawn*`, `vfork`+exec, `system`, `popen`);
//! * `fork` reports a *fork* record from the parent, stamped with a time
//!   taken before the fork (so it sorts before anything the child reports,
//!   and the child pays nothing): a subshell that never execs still links
//!   its children to their parent;
//! * `waitpid`, `wait4`, `wait3` and `wait` report a *reaped* record (child pid, wait
//!   status, time) when a child has ended: exit status and end time;
//! * `execve`, `execvpe`, `posix_spawn`, `posix_spawnp` called with an
//!   environment that lost `LD_PRELOAD` or `TRACEKIT_PRELOAD_OUT` (`env -i`,
//!   `env -u`) get both put back, so the build stays recorded; the trace
//!   leaves them out again.
//!
//! Records are written into the stream's shared-memory ring with
//! `tracekit_posix::producer` (its source is compiled into the shim: it
//! needs only `core`), as events of at most the stream's max-data-size,
//! each behind a fragment header (pid, serial: the low bits of the record's start time, offset, total)
//! that the recorder uses to reassemble larger records. No system call per
//! record; mapping the stream costs `open`, `lseek`, `mmap` and `close` once
//! per process (no descriptor stays open for the program to see). A full
//! stream refuses events and counts them lost. `errno` is preserved around
//! everything the shim does.

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
