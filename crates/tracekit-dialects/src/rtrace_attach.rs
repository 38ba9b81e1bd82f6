//! `tracekit record mem -p PID`: records a process that is already
//! running. The recorder library is loaded into it with ptrace
//! (`tracekit_rtrace::recording::attach`); the recording runs until the
//! process exits or tracekit gets SIGINT, which stops the recording in the
//! process and leaves it running.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use tracekit_rtrace::recording::attach;
use tracekit_rtrace::recording::capture::{Capture, Outputs};

use crate::rtrace::RecordOptions;

/// Set by SIGINT (and SIGTERM) while recording an attached process.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Makes SIGINT and SIGTERM set [`STOP`] (`on`) or act as before.
fn catch_signals(on: bool) {
    let handler = if on {
        on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
    } else {
        libc::SIG_DFL
    };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(sig, handler) };
    }
}

/// The process's command line (`/proc/PID/cmdline`), for the manifest.
fn command_line(pid: i32, exe: &Path) -> Vec<String> {
    let args: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    if args.is_empty() {
        vec![exe.display().to_string()]
    } else {
        args
    }
}

/// Gives `path` to the target's user (tracekit runs as root, the target
/// as someone else: the library and the stream must be theirs to open).
fn give(path: &Path, uid: u32, gid: u32) -> Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .with_context(|| format!("{}: cannot give it to uid {uid}", path.display()))
}

pub fn record_attached(a: &RecordOptions, pid: i32) -> Result<ExitCode> {
    let target = attach::check(pid).map_err(|e| anyhow::anyhow!("record mem -p: {e}"))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let other_user = target.uid != me;
    if other_user && me != 0 {
        bail!(
            "record mem -p: process {pid} runs as uid {}, tracekit as uid {me}: run tracekit as that user (or as root)",
            target.uid
        );
    }
    let lib_dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .prefix("tracekit-rtrace-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let lib = crate::rtrace::preload_library(lib_dir.path())?;
    if other_user {
        give(lib_dir.path(), target.uid, target.gid)?;
        give(&lib, target.uid, target.gid)?;
    }
    let stdout = a.output.as_deref() == Some(Path::new("-"));
    let outputs = Outputs {
        path: a.output.clone().filter(|_| !stdout),
        format: a.format,
        stdout,
        transient_addresses: a.addresses,
        command: command_line(pid, &target.executable),
    };
    if let Some(dir) = &outputs.path {
        outputs
            .prepare(0)
            .map_err(|e| tracekit_core::Error::io(Some(dir), e))?;
    }
    let capture = Capture::start_for(&outputs, a.backtrace_depth)
        .with_context(|| "cannot set up the recorder's trace stream".to_string())?;
    let modules = format!("{},attached", a.modules);
    let mut settings = String::new();
    for (name, value) in capture.env(&modules) {
        if other_user && name == tracekit_rtrace_preload::wire::STREAM_ENV {
            give(Path::new(&value), target.uid, target.gid)?;
        }
        settings.push_str(&format!("{name}={}\n", value.to_string_lossy()));
    }
    // From here a Ctrl-C must not leave the process half attached.
    STOP.store(false, Ordering::Relaxed);
    catch_signals(true);
    let attached = match attach::inject(&target, &lib, &settings) {
        Ok(x) => x,
        Err(e) => {
            catch_signals(false);
            let packed = capture.packed_path();
            drop(capture);
            if let Some(p) = packed {
                tracekit_core::files::remove_written_file(&p);
            } else if let Some(dir) = &outputs.path {
                let _ = std::fs::remove_dir(dir);
            }
            bail!("record mem -p: {e}");
        }
    };
    let quiet = crate::progress::quiet();
    if !quiet {
        eprintln!(
            "tracekit: recording process {pid} ({}): {} call site(s) hooked; until it exits, or Ctrl-C to stop and leave it running",
            target.executable.display(),
            attached.slots
        );
    }
    let ended = attach::wait_for_exit(pid, &STOP).map_err(|e| anyhow::anyhow!("{e}"))?;
    let detached = if ended {
        false
    } else {
        // Stopped by us: the shim sends what it holds and goes inert.
        attach::stop(pid, &attached).map_err(|e| anyhow::anyhow!("record mem -p: {e}"))?
    };
    catch_signals(false);
    if detached && !quiet {
        eprintln!("tracekit: stopped recording process {pid}; it runs on");
    }
    let recorded = capture
        .finish_with_end(&outputs, pid, None)
        .with_context(|| "reading the recorder's trace stream".to_string())?;
    crate::rtrace::write_recorded(recorded)?;
    Ok(ExitCode::SUCCESS)
}
