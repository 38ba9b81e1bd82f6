//! `--method preload`: run the build with the `tracekit-preload` shim in
//! `LD_PRELOAD`, reading what it reports from a POSIX trace stream while
//! the build runs.
//!
//! Every exec of a dynamically linked program is reported, whichever call
//! started it (`execve`, `execveat`, `fexecve`, the `execv*`/`execl*`
//! family, `posix_spawn*`, `vfork`+exec, `system`, `popen`): by the
//! shim's exec hooks in the calling process before the call (cancelled by
//! an *exec failed* record if the call returns), else by the shim's
//! constructor in the new program (see `tracekit_preload`). Its `fork`
//! hook reports subshells that never exec, so their children find their
//! parent record; its `waitpid`/`wait4`/`wait3`/`wait` hooks report exit
//! status and end time when the parent reaps a child. Statically linked
//! programs load no shim and are seen only when a program with the shim
//! execs them: use ptrace.
//!
//! The recorder is the stream's controller (`tracekit_posix::api`): it
//! creates an UNTIL_FULL stream for all processes
//! ([`api::POSIX_TRACE_ALLPROC`]) in `/dev/shm`, registers the event type
//! [`EVENT_NAME`], names the stream file in `TRACEKIT_PRELOAD_OUT` and
//! drains it with the getnext functions on a thread while the build runs.
//! The shim maps the stream once per process and writes each record (the
//! layout of [`super::events`]) as one or more events without a system
//! call; [`Reassembler`] puts fragmented records back together. Events the
//! stream lost (it was full) and records left incomplete are reported as
//! warnings, never dropped silently. If the recorder dies, the build goes
//! on: a full stream only refuses events.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use tracekit_core::{Position, Warnings};
use tracekit_posix::api;
use tracekit_posix::consts::POSIX_TRACE_UNTIL_FULL;
use tracekit_posix::fragments::{self, FragmentError, Order, RecorderStream};
use tracekit_posix::TraceAttr;

use super::events::{decode_one, Event, ExecBy};
use super::{exit_of, now_us, Assembler, EnvCache, PreparedExec, PRELOAD_OUT_VAR};
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

/// The user event type the shim writes (its records, in fragments).
pub const EVENT_NAME: &[u8] = b"tracekit.build";
/// Payload room per event: slots of 512 bytes with their header, so the
/// small fork and reaped records share pages (each fresh page costs a
/// writer a page fault) and an exec record takes a few slots.
const MAX_DATA: u64 = 512 - 48;
/// Ring size: 131072 slots of 512 bytes (pages are only touched when used).
const STREAM_SIZE: u64 = 64 << 20;
/// A record larger than this is refused as damaged (argv + environment are
/// bounded by the kernel's limit of a few MiB).
const MAX_RECORD: usize = 64 << 20;

/// A record's writer (pid, thread) and serial.
type RecordKey = (i32, u64, u32);

/// Puts records split over several events back together (the shim's
/// fragment header: pid, serial, offset, total). A record is known by its
/// writer's pid and thread (the stream event's) and the serial of its
/// fragment header (the shim uses the low bits of the record's start
/// time). Completed records are ordered by the stream time of their first
/// piece (the order things happened: a fork record is stamped before the
/// fork), then by arrival.
pub type Reassembler = fragments::Reassembler<RecordKey>;

/// A [`Reassembler`] refusing records over [`MAX_RECORD`] bytes.
pub fn reassembler() -> Reassembler {
    Reassembler::new(MAX_RECORD)
}

/// Gives `asm` one event payload written by thread `thread` at stream time
/// `time_ns`; `warnings` hears of damaged fragments.
pub fn take_fragment(
    asm: &mut Reassembler,
    thread: u64,
    time_ns: i64,
    data: &[u8],
    warnings: &mut Warnings,
) {
    let key = |pid: u32, serial: u32| (pid as i32, thread, serial);
    match asm.fragment(time_ns, data, key) {
        Ok(()) => {}
        Err(e @ FragmentError::OutOfRange { word, .. }) => {
            warnings.push(Position::Unknown, format!("pid {}: {e}", word as i32))
        }
        Err(e) => warnings.push(Position::Unknown, e.to_string()),
    }
}

/// Creates the stream the shim writes into: for all processes, UNTIL_FULL
/// (nothing unread is overwritten), started, with [`EVENT_NAME`] registered.
fn create_stream() -> io::Result<(RecorderStream, u32)> {
    let mut attr = TraceAttr::default();
    attr.set_stream_policy(POSIX_TRACE_UNTIL_FULL);
    attr.set_max_data_size(MAX_DATA);
    attr.stream_size = STREAM_SIZE;
    let (stream, ids) = RecorderStream::create(&attr, &[EVENT_NAME], "the build's trace stream")?;
    Ok((stream, ids[0]))
}

/// How long the reader sleeps when the stream is empty.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// A record as the reader thread leaves it: decoded, and an exec's text
/// converted, so little is left to do once the build is over.
enum Prepared {
    Exec(PreparedExec, ExecBy),
    Fork { pid: i32, ppid: i32 },
    Reaped { pid: i32, status: i32, time_us: u64 },
    ExecFailed { pid: i32 },
    Damaged(String),
}

/// `time_ns`: the stream time of the record's first piece, which stands
/// for the record's own time when it carries none (the shim leaves it 0).
fn prepare(
    record: &[u8],
    time_ns: i64,
    preload_lib: Option<&str>,
    envs: &mut EnvCache,
) -> Prepared {
    let stream_us = (time_ns.max(0) / 1000) as u64;
    let or_stream = |t: u64| if t == 0 { stream_us } else { t };
    match decode_one(record) {
        Ok(Event::Exec(mut e, by)) => {
            e.time_us = or_stream(e.time_us);
            // A caller reports the exec as it made it; the new program sees
            // a script's interpreter instead.
            if by != ExecBy::Caller {
                super::unwrap_script(&mut e);
            }
            Prepared::Exec(PreparedExec::new(e, preload_lib, envs), by)
        }
        Ok(Event::Fork { pid, ppid, .. }) => Prepared::Fork { pid, ppid },
        Ok(Event::Reaped {
            pid,
            status,
            time_us,
        }) => Prepared::Reaped {
            pid,
            status,
            time_us: or_stream(time_us),
        },
        Ok(Event::ExecFailed { pid, .. }) => Prepared::ExecFailed { pid },
        Err(msg) => Prepared::Damaged(msg),
    }
}

/// Which records (by place in the final order) stand for execs that never
/// happened: a caller's report whose call failed, or that the new program
/// replaced with its own.
fn cancelled(prepared: &[(Order, Prepared)]) -> Vec<bool> {
    let mut out = vec![false; prepared.len()];
    let mut called: HashMap<i32, usize> = HashMap::new();
    for (i, (_, record)) in prepared.iter().enumerate() {
        let pid = match record {
            Prepared::Exec(e, ExecBy::Caller) => {
                called.insert(e.pid(), i);
                continue;
            }
            Prepared::Exec(e, ExecBy::Replacing) => e.pid(),
            Prepared::ExecFailed { pid } => *pid,
            _ => continue,
        };
        if let Some(j) = called.remove(&pid) {
            out[j] = true;
        }
    }
    out
}

/// What the reader collected: the reassembler (for its losses) and the
/// records it completed, prepared, with their places in the final order.
type Drained = (Reassembler, Vec<(Order, Prepared)>);

/// Drains the stream until `done` was set before a read found it empty
/// (whoever sets it unparks the reader), preparing each record as soon as
/// it is complete: that work overlaps the build.
fn drain(
    trid: api::TraceId,
    id: u32,
    done: &AtomicBool,
    preload_lib: Option<&str>,
    warnings: &mut Warnings,
) -> Drained {
    let mut asm = reassembler();
    let mut prepared = Vec::new();
    let mut envs = EnvCache::default();
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let finishing = done.load(Ordering::Acquire);
        match api::getnext_event(trid, &mut buf, api::Wait::Never) {
            Ok(Some(ev)) => {
                if ev.info.event_id == id {
                    take_fragment(
                        &mut asm,
                        ev.info.thread,
                        ev.info.timestamp_ns,
                        &buf[..ev.data_len],
                        warnings,
                    );
                    for c in asm.take_complete() {
                        let p = prepare(&c.record, c.order.0, preload_lib, &mut envs);
                        prepared.push((c.order, p));
                    }
                }
            }
            Ok(None) if finishing => break,
            // Empty: each lane holds far more than a build writes in a
            // second, so poll calmly: every wake-up costs CPU the build
            // could use (tens of microseconds in a VM; at 2 ms that was a
            // third of the recorder's CPU). The end of the build unparks us.
            Ok(None) => std::thread::park_timeout(POLL),
            Err(libc::EINTR) => {}
            Err(e) => {
                warnings.push(
                    Position::Unknown,
                    format!(
                        "reading the build's trace stream: {}",
                        io::Error::from_raw_os_error(e)
                    ),
                );
                break;
            }
        }
    }
    (asm, prepared)
}

/// Runs `cmd` with the shim, feeding what it reports to `asm`. Returns how
/// the build ended; lost events and damaged records go to `warnings`.
pub fn record(
    cmd: &[OsString],
    lib: &Path,
    asm: &mut Assembler,
    warnings: &mut Warnings,
) -> io::Result<Option<Exit>> {
    let (program, rest) = cmd
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command"))?;
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
    let (stream, event_id) = create_stream()?;
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("LD_PRELOAD", preload)
        .env(PRELOAD_OUT_VAR, stream.path());
    // SAFETY: the closure runs between fork and exec and only resets
    // signal dispositions (async-signal-safe).
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let done = AtomicBool::new(false);
    let mut reader_warnings = Warnings::default();
    let lib_name = asm.preload_lib().map(str::to_string);
    let (waited, drained) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            drain(
                stream.trid(),
                event_id,
                &done,
                lib_name.as_deref(),
                &mut reader_warnings,
            )
        });
        let waited = wait_build(&mut command);
        done.store(true, Ordering::Release);
        reader.thread().unpark();
        let drained = reader.join();
        (waited, drained)
    });
    let (root, status, end) = waited?;
    warnings.extend(reader_warnings);
    let (reassembler, mut prepared) = drained.unwrap_or_else(|_| {
        warnings.push(
            Position::Unknown,
            "the trace stream's reader failed; no process recorded",
        );
        (reassembler(), Vec::new())
    });
    let lost = api::lost_events(stream.trid()).unwrap_or(0);
    drop(stream);
    let root_exit = exit_of(status);
    // The reader took every completed record; what is left is incomplete.
    let incomplete = reassembler.incomplete();
    if lost > 0 || incomplete > 0 {
        warnings.push(
            Position::Unknown,
            format!(
                "the trace stream lost {lost} events (it was full); {incomplete} process records are incomplete and left out"
            ),
        );
    }
    asm.root(root);
    prepared.sort_by_key(|(order, _)| *order);
    let cancelled = cancelled(&prepared);
    for (i, (_, record)) in prepared.into_iter().enumerate() {
        if cancelled[i] {
            continue;
        }
        match record {
            Prepared::Fork { pid, ppid } => asm.fork(pid, ppid),
            Prepared::Exec(e, _) => asm.exec_prepared(e),
            Prepared::ExecFailed { .. } => {}
            Prepared::Reaped {
                pid,
                status,
                time_us,
            } => {
                if let Some(how) = exit_of(status) {
                    asm.exit(pid, time_us, how);
                }
            }
            Prepared::Damaged(msg) => {
                warnings.push(Position::Offset(i as u64), format!("record {i}: {msg}"));
            }
        }
    }
    if let Some(how) = root_exit {
        asm.exit(root, end, how);
    }
    Ok(root_exit)
}

/// Starts the build and waits for it, ignoring SIGINT and SIGQUIT meanwhile
/// (the build gets them from the terminal). Returns its pid, wait status
/// and end time.
fn wait_build(command: &mut Command) -> io::Result<(i32, libc::c_int, u64)> {
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
    Ok((root, status.into_raw(), now_us()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(pid: i32, serial: u32, off: usize, total: usize, piece: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [pid as u32, serial, off as u32, total as u32] {
            v.extend_from_slice(&w.to_ne_bytes());
        }
        v.extend_from_slice(piece);
        v
    }

    /// The reassembler's own cases are tested in `tracekit_posix::fragments`;
    /// here the keying by writer thread and the warnings.
    #[test]
    fn records_are_keyed_by_thread_and_damage_is_warned_about() {
        let mut r = reassembler();
        let mut w = Warnings::default();
        take_fragment(&mut r, 0, 0, &frag(1, 0, 0, 6, b"abc"), &mut w);
        // Same pid and serial, another thread: another record.
        take_fragment(&mut r, 7, 0, &frag(1, 0, 0, 4, b"thr"), &mut w);
        take_fragment(&mut r, 7, 0, &frag(1, 0, 3, 4, b"d"), &mut w);
        take_fragment(&mut r, 0, 0, &frag(1, 0, 3, 6, b"def"), &mut w);
        let done: Vec<Vec<u8>> = r.take_complete().into_iter().map(|c| c.record).collect();
        assert_eq!(done, vec![b"thrd".to_vec(), b"abcdef".to_vec()]);
        assert!(w.is_empty());
        take_fragment(&mut r, 0, 0, b"short", &mut w);
        take_fragment(&mut r, 0, 0, &frag(-3, 0, 4, 5, b"ab"), &mut w);
        take_fragment(&mut r, 0, 0, &frag(1, 0, 0, MAX_RECORD + 1, b""), &mut w);
        assert_eq!(w.total(), 3);
        assert!(r.take_complete().is_empty());
        assert_eq!(r.incomplete(), 0);
    }
}
