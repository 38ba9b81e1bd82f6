//! tracekit as the controller of a traced program (`tracekit posix
//! record`): create a stream (with a log, or read live), set its filter,
//! start it, run the program with the stream's name in its environment,
//! and shut the stream down when the program ends or, when its children
//! may trace into it too ([`Options::inherit`]), when every process that
//! inherited it has ended (see [`reaper`]).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};

use crate::api::{self, Wait};
use crate::consts::SYSTEM_EVENT_NAMES;
use crate::log::EventInfo;
use crate::{traced, EventSet, TraceAttr};

mod reaper;

/// How to record.
pub struct Options {
    pub attr: TraceAttr,
    /// Write the events into this trace log; without one they are read
    /// live and handed to the caller.
    pub log: Option<File>,
    /// Event type names to filter out (system events by their standard
    /// names, `posix_trace_start`, ...).
    pub filter: Vec<String>,
    /// Whether the program's children may trace into the stream too
    /// (POSIX_TRACE_INHERITED); otherwise only the program itself attaches.
    /// The stream then stays open until every process that inherited it
    /// has exited (the program and all its descendants, also those that
    /// outlive it), as `strace -f` waits for every traced process.
    pub inherit: bool,
    /// With `inherit` and a log: shut the stream down when the program
    /// exits, without waiting for its descendants; an event they write
    /// afterwards is not recorded but counted in the log's header
    /// ([`crate::log::LogMeta::events_after_shutdown`], updated by a
    /// process that waits for them after [`record`] returned).
    pub stop_at_exit: bool,
}

/// How a recording ended.
pub struct Recorded {
    pub status: ExitStatus,
    /// Events the stream could not take (it was full).
    pub lost_in_stream: u64,
}

/// A step that failed, with the errno or I/O error behind it.
#[derive(Debug)]
pub struct Failed {
    pub what: String,
    pub errno: Option<i32>,
    pub io: Option<std::io::Error>,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.errno, &self.io) {
            (Some(e), _) => write!(
                f,
                "{}: {}",
                self.what,
                std::io::Error::from_raw_os_error(*e)
            ),
            (None, Some(e)) => write!(f, "{}: {e}", self.what),
            (None, None) => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for Failed {}

fn errno(what: impl Into<String>) -> impl FnOnce(i32) -> Failed {
    let what = what.into();
    move |e| Failed {
        what,
        errno: Some(e),
        io: None,
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Failed {
    let what = what.into();
    move |e| Failed {
        what,
        errno: None,
        io: Some(e),
    }
}

/// What [`record`] hands each event to when there is no log: the event,
/// its type's name, its payload.
type OnEvent<'a> = dyn FnMut(&EventInfo, &[u8], &[u8]) -> std::io::Result<()> + 'a;

/// Runs `cmd` as the traced process of a new stream. Without a log,
/// `on_event(info, type name, payload)` sees every event as it is read
/// (every couple of milliseconds while the program runs, then the rest).
pub fn record(
    cmd: &mut Command,
    opts: Options,
    mut on_event: impl FnMut(&EventInfo, &[u8], &[u8]) -> std::io::Result<()>,
) -> Result<Recorded, Failed> {
    let has_log = opts.log.is_some();
    let trid = api::create(
        api::POSIX_TRACE_ALLPROC,
        Some(&opts.attr),
        opts.log.as_ref().map(|f| f.as_raw_fd()),
    )
    .map_err(|e| {
        if e == libc::EINVAL && !has_log {
            Failed {
                what: "a FLUSH stream needs a log".into(),
                errno: None,
                io: None,
            }
        } else {
            errno("cannot create the trace stream")(e)
        }
    })?;
    let path = api::stream_path(trid).map_err(errno("stream"))?;
    if !opts.filter.is_empty() {
        let mut set = EventSet::empty();
        for name in &opts.filter {
            let id = match SYSTEM_EVENT_NAMES.iter().find(|(_, n)| n == name) {
                Some((id, _)) => *id,
                None => api::trid_eventid_open(trid, name.as_bytes())
                    .map_err(errno(format!("filter {name}")))?,
            };
            set.add(id);
        }
        api::set_filter(trid, &set, crate::consts::POSIX_TRACE_SET_EVENTSET)
            .map_err(errno("filter"))?;
    }
    if opts.stop_at_exit && (!opts.inherit || !has_log) {
        return Err(Failed {
            what: "stopping at the program's exit needs inheritance and a log".into(),
            errno: None,
            io: None,
        });
    }
    api::start(trid).map_err(errno("start"))?;
    let setter = api::traced_pid_setter(trid).map_err(errno("stream"))?;
    cmd.env(traced::STREAM_ENV, &path);
    if opts.inherit {
        let late = match &opts.log {
            Some(f) if opts.stop_at_exit => Some((
                api::late_writes(trid).map_err(errno("stream"))?,
                f.as_raw_fd(),
            )),
            _ => None,
        };
        let max = opts.attr.max_data_size;
        return record_inherited(cmd, trid, (has_log, max), late, &mut on_event);
    }
    // Only this process (after exec) may attach by name, not the programs
    // it starts.
    // SAFETY: the closure only calls getpid and does one atomic store into
    // shared memory, both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            setter.set(libc::getpid());
            Ok(())
        });
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd.spawn().map_err(io(format!("{program}: cannot run")))?;
    let status = if has_log {
        child.wait().map_err(io("wait"))?
    } else {
        let mut buf = vec![0u8; opts.attr.max_data_size.max(512) as usize];
        loop {
            drain(trid, &mut buf, &mut on_event)?;
            if let Some(st) = child.try_wait().map_err(io("wait"))? {
                api::stop(trid).map_err(errno("stop"))?;
                drain(trid, &mut buf, &mut on_event)?;
                break st;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    };
    let lost_in_stream = api::lost_events(trid).unwrap_or(0);
    api::shutdown(trid).map_err(errno("shutdown"))?;
    Ok(Recorded {
        status,
        lost_in_stream,
    })
}

/// Reads what the stream holds now, without waiting, handing each event
/// to `on_event`.
fn drain(trid: api::TraceId, buf: &mut [u8], on_event: &mut OnEvent<'_>) -> Result<(), Failed> {
    while let Some(e) = api::getnext_event(trid, buf, Wait::Never).map_err(errno("read"))? {
        let name = api::eventid_get_name(trid, e.info.event_id).unwrap_or_default();
        on_event(&e.info, &name, &buf[..e.data_len]).map_err(io("write"))?;
    }
    Ok(())
}

/// [`record`] of a program whose descendants trace into the stream too:
/// the [`reaper`] runs it and waits for all of them; the stream is shut
/// down when the last one exited or, with `late` (`stop_at_exit`: what
/// counts the events written after the shutdown, and the log's
/// descriptor), when the program did.
fn record_inherited(
    cmd: &mut Command,
    trid: api::TraceId,
    (has_log, max_data_size): (bool, u64),
    late: Option<(api::LateWrites, i32)>,
    on_event: &mut OnEvent<'_>,
) -> Result<Recorded, Failed> {
    use std::os::unix::process::ExitStatusExt;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let stop_at_exit = late.is_some();
    let spec = reaper::Spec::of(cmd).map_err(io(format!("{program}: cannot run")))?;
    let mut reaper = reaper::spawn(&spec, late).map_err(io(format!("{program}: cannot run")))?;
    let mut buf = vec![0u8; max_data_size.max(512) as usize];
    // Without a log, events are read while waiting (every 2 ms).
    let timeout = if has_log { -1 } else { 2 };
    let mut next = |on_event: &mut OnEvent<'_>| -> Result<Option<reaper::Msg>, Failed> {
        if !has_log {
            drain(trid, &mut buf, on_event)?;
        }
        reaper.next(timeout).map_err(io("wait"))
    };
    let mut status = None;
    let mut spawned = false;
    while status.is_none() {
        match next(on_event)? {
            Some(reaper::Msg::Spawned(_)) => spawned = true,
            Some(reaper::Msg::ExecFailed(e)) => {
                return Err(Failed {
                    what: format!("{program}: cannot run"),
                    errno: None,
                    io: Some(std::io::Error::from_raw_os_error(e)),
                })
            }
            Some(reaper::Msg::Exited(st)) => status = Some(ExitStatus::from_raw(st)),
            Some(reaper::Msg::Gone) => {
                return Err(Failed {
                    what: format!(
                        "{program}: {}",
                        if spawned {
                            "the process waiting for it is gone (killed?)"
                        } else {
                            "cannot start the process that runs it"
                        }
                    ),
                    errno: None,
                    io: None,
                })
            }
            None => {}
        }
    }
    let status = status.unwrap_or_else(|| ExitStatus::from_raw(0));
    if stop_at_exit {
        let lost_in_stream = api::lost_events(trid).unwrap_or(0);
        api::shutdown_with_late_writers(trid).map_err(errno("shutdown"))?;
        reaper.log_complete();
        return Ok(Recorded {
            status,
            lost_in_stream,
        });
    }
    // Every process that inherited the stream: the reaper exits after the
    // last one (end of file).
    while next(on_event)? != Some(reaper::Msg::Gone) {}
    if !has_log {
        api::stop(trid).map_err(errno("stop"))?;
        drain(trid, &mut buf, on_event)?;
    }
    let lost_in_stream = api::lost_events(trid).unwrap_or(0);
    api::shutdown(trid).map_err(errno("shutdown"))?;
    Ok(Recorded {
        status,
        lost_in_stream,
    })
}
