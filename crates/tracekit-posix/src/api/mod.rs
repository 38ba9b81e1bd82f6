//! The controller and analyzer roles: trace stream identifiers and every
//! `posix_trace_*` function that takes one. Functions return
//! `Err(errno)` exactly where the standard says the C function returns that
//! error number; `tracekit-posix-c` only converts types.

use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::attr::TraceAttr;
use crate::clock::Calibration;
use crate::consts::*;
use crate::eventset::EventSet;
use crate::log::{EventInfo, LogReader, LogWriter, Status};
use crate::producer::{AUTO_STOPPED, AUTO_SUSPENDED, CLOSED, CLOSED_AUTO};
use crate::shm::{self, RawEvent, Region, StreamView, Take};
use crate::traced;

mod consumer;
mod event_types;
mod filter;
mod flush;
mod handles;
mod keeper;
mod lifecycle;
mod prerecorded;
mod read;
mod status;
#[cfg(test)]
mod tests;

use consumer::{Consumer, Next};
use flush::{copy_stream, do_flush, flusher, user_types};
use handles::*;
use status::stream_status;

pub use event_types::{
    eventid_get_name, eventtypelist_getnext_id, eventtypelist_rewind, trid_eventid_open,
};
pub use filter::{get_filter, set_filter};
pub use flush::flush;
pub(crate) use keeper::close_all_but;
pub use lifecycle::{
    clear, create, exec_failed, late_writes, prepare_exec, shutdown, shutdown_all_of_this_process,
    shutdown_with_late_writers, start, stop, stream_path, traced_pid_setter, ExecStreams,
    LateWrites, TracedPidSetter,
};
pub use prerecorded::{close, open, rewind};
pub use read::{getnext_event, getnext_event_into};
pub(crate) use status::reported_running;
pub use status::{get_attr, get_status, lost_events};

pub type Errno = i32;
/// A trace stream identifier: slot index + 1 in the low 32 bits, a
/// generation in the high 32 bits, so a stale identifier is refused.
pub type TraceId = u64;

/// `pid` value for [`create`]: any process that opens the stream by name
/// (through [`traced::STREAM_ENV`]) writes into it. The rationale of the
/// standard suggests such a value (`POSIX_TRACE_ALLPROC`).
pub const POSIX_TRACE_ALLPROC: i32 = -1;

/// What a read returns: the event and how many payload bytes were copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadEvent {
    pub info: EventInfo,
    pub data_len: usize,
}

/// How a read waits for an event.
#[derive(Clone, Copy, Debug)]
pub enum Wait {
    /// `posix_trace_trygetnext_event`.
    Never,
    /// `posix_trace_getnext_event`.
    Forever,
    /// `posix_trace_timedgetnext_event`: absolute CLOCK_REALTIME deadline.
    Until(libc::timespec),
}
