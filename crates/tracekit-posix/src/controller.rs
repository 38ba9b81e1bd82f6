//! tracekit as the controller of a traced program (`tracekit posix
//! record`): create a stream (with a log, or read live), set its filter,
//! start it, run the program with the stream's name in its environment,
//! and shut the stream down when the program ends.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};

use crate::api::{self, Wait};
use crate::consts::SYSTEM_EVENT_NAMES;
use crate::log::EventInfo;
use crate::{traced, EventSet, TraceAttr};

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
    pub inherit: bool,
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
    api::start(trid).map_err(errno("start"))?;
    let setter = api::traced_pid_setter(trid).map_err(errno("stream"))?;
    cmd.env(traced::STREAM_ENV, &path);
    if !opts.inherit {
        // Only this process (after exec) may attach by name, not the
        // programs it starts.
        // SAFETY: the closure only calls getpid and does one atomic store
        // into shared memory, both async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                setter.set(libc::getpid());
                Ok(())
            });
        }
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd.spawn().map_err(io(format!("{program}: cannot run")))?;
    let status = if has_log {
        child.wait().map_err(io("wait"))?
    } else {
        let max = opts.attr.max_data_size.max(512) as usize;
        let mut buf = vec![0u8; max];
        let mut drain = |on_event: &mut OnEvent<'_>| -> Result<(), Failed> {
            while let Some(e) =
                api::getnext_event(trid, &mut buf, Wait::Never).map_err(errno("read"))?
            {
                let name = api::eventid_get_name(trid, e.info.event_id).unwrap_or_default();
                on_event(&e.info, &name, &buf[..e.data_len]).map_err(io("write"))?;
            }
            Ok(())
        };
        loop {
            drain(&mut on_event)?;
            if let Some(st) = child.try_wait().map_err(io("wait"))? {
                api::stop(trid).map_err(errno("stop"))?;
                drain(&mut on_event)?;
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
