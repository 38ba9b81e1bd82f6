//! The trace2 event model shared by the three formats.
//!
//! Fields a format does not carry are `None` (PERF has no SID, NORMAL no
//! thread, EVENT no `t_abs` on region events, ...). A value read from a
//! lossy column (PERF's truncated category, left-truncated `file:line`) is
//! kept exactly as read, so writing it back reproduces the input.

use std::borrow::Cow;

use crate::time::{Micros, TimeOfDay, UnixMicros};

/// A byte string, borrowed from the input unless decoding changed it.
pub type Text<'a> = Cow<'a, [u8]>;

/// When the event was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Time<'a> {
    /// EVENT's UTC `time`, kept as written (`...Z`, or `+00:00` from other
    /// producers).
    Iso(Text<'a>),
    /// NORMAL/PERF local time of day.
    OfDay(TimeOfDay),
}

impl Time<'_> {
    pub fn unix(&self) -> Option<UnixMicros> {
        match self {
            Time::Iso(t) => UnixMicros::parse_iso(t),
            Time::OfDay(_) => None,
        }
    }

    pub fn into_owned(self) -> Time<'static> {
        match self {
            Time::Iso(t) => Time::Iso(Cow::Owned(t.into_owned())),
            Time::OfDay(t) => Time::OfDay(t),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    /// Full session id (`parent/.../own`); EVENT only.
    pub sid: Option<Text<'a>>,
    /// Process depth (`d<N>`); PERF only (EVENT derives it from the SID).
    pub depth: Option<u32>,
    pub thread: Option<Text<'a>>,
    pub time: Option<Time<'a>>,
    pub file: Option<Text<'a>>,
    pub line: Option<i64>,
    pub repo: Option<i64>,
    /// PERF only: regions open on the thread when the event was written
    /// (the dots before the payload, halved).
    pub indent: Option<u32>,
    pub body: Body<'a>,
    /// EVENT keys this version does not know, with their raw JSON values,
    /// in input order; written back after the known keys.
    pub extra: Vec<(Text<'a>, Text<'a>)>,
}

/// What kind of event, without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Version,
    TooManyFiles,
    Start,
    Exit,
    AtExit,
    Signal,
    Error,
    CmdPath,
    CmdAncestry,
    CmdName,
    CmdMode,
    Alias,
    ChildStart,
    ChildExit,
    ChildReady,
    ThreadStart,
    ThreadExit,
    Exec,
    ExecResult,
    DefParam,
    DefRepo,
    RegionEnter,
    RegionLeave,
    Data,
    DataJson,
    Printf,
    Timer,
    ThTimer,
    Counter,
    ThCounter,
    Unknown,
}

impl Kind {
    pub const ALL: [Kind; 31] = [
        Kind::Version,
        Kind::TooManyFiles,
        Kind::Start,
        Kind::Exit,
        Kind::AtExit,
        Kind::Signal,
        Kind::Error,
        Kind::CmdPath,
        Kind::CmdAncestry,
        Kind::CmdName,
        Kind::CmdMode,
        Kind::Alias,
        Kind::ChildStart,
        Kind::ChildExit,
        Kind::ChildReady,
        Kind::ThreadStart,
        Kind::ThreadExit,
        Kind::Exec,
        Kind::ExecResult,
        Kind::DefParam,
        Kind::DefRepo,
        Kind::RegionEnter,
        Kind::RegionLeave,
        Kind::Data,
        Kind::DataJson,
        Kind::Printf,
        Kind::Timer,
        Kind::ThTimer,
        Kind::Counter,
        Kind::ThCounter,
        Kind::Unknown,
    ];

    /// The event name git writes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Version => "version",
            Kind::TooManyFiles => "too_many_files",
            Kind::Start => "start",
            Kind::Exit => "exit",
            Kind::AtExit => "atexit",
            Kind::Signal => "signal",
            Kind::Error => "error",
            Kind::CmdPath => "cmd_path",
            Kind::CmdAncestry => "cmd_ancestry",
            Kind::CmdName => "cmd_name",
            Kind::CmdMode => "cmd_mode",
            Kind::Alias => "alias",
            Kind::ChildStart => "child_start",
            Kind::ChildExit => "child_exit",
            Kind::ChildReady => "child_ready",
            Kind::ThreadStart => "thread_start",
            Kind::ThreadExit => "thread_exit",
            Kind::Exec => "exec",
            Kind::ExecResult => "exec_result",
            Kind::DefParam => "def_param",
            Kind::DefRepo => "def_repo",
            Kind::RegionEnter => "region_enter",
            Kind::RegionLeave => "region_leave",
            Kind::Data => "data",
            Kind::DataJson => "data_json",
            Kind::Printf => "printf",
            Kind::Timer => "timer",
            Kind::ThTimer => "th_timer",
            Kind::Counter => "counter",
            Kind::ThCounter => "th_counter",
            Kind::Unknown => "unknown",
        }
    }

    pub fn from_name(name: &[u8]) -> Kind {
        match name {
            b"version" => Kind::Version,
            b"too_many_files" => Kind::TooManyFiles,
            b"start" => Kind::Start,
            b"exit" => Kind::Exit,
            b"atexit" => Kind::AtExit,
            b"signal" => Kind::Signal,
            b"error" => Kind::Error,
            b"cmd_path" => Kind::CmdPath,
            b"cmd_ancestry" => Kind::CmdAncestry,
            b"cmd_name" => Kind::CmdName,
            b"cmd_mode" => Kind::CmdMode,
            b"alias" => Kind::Alias,
            b"child_start" => Kind::ChildStart,
            b"child_exit" => Kind::ChildExit,
            b"child_ready" => Kind::ChildReady,
            b"thread_start" => Kind::ThreadStart,
            b"thread_exit" => Kind::ThreadExit,
            b"exec" => Kind::Exec,
            b"exec_result" => Kind::ExecResult,
            b"def_param" => Kind::DefParam,
            b"def_repo" => Kind::DefRepo,
            b"region_enter" => Kind::RegionEnter,
            b"region_leave" => Kind::RegionLeave,
            b"data" => Kind::Data,
            b"data_json" => Kind::DataJson,
            b"printf" => Kind::Printf,
            b"timer" => Kind::Timer,
            b"th_timer" => Kind::ThTimer,
            b"counter" => Kind::Counter,
            b"th_counter" => Kind::ThCounter,
            _ => Kind::Unknown,
        }
    }
}

/// Region and data fields shared by `region_enter`/`region_leave`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region<'a> {
    /// EVENT omits `t_abs` on regions; PERF has it.
    pub t_abs: Option<Micros>,
    pub nesting: i64,
    pub category: Option<Text<'a>>,
    pub label: Option<Text<'a>>,
    pub msg: Option<Text<'a>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    Version {
        /// EVENT format version (`"4"` for git 2.47).
        evt: Option<Text<'a>>,
        exe: Text<'a>,
    },
    TooManyFiles,
    Start {
        t_abs: Option<Micros>,
        argv: Vec<Text<'a>>,
    },
    Exit {
        t_abs: Micros,
        code: i64,
    },
    AtExit {
        t_abs: Micros,
        code: i64,
    },
    Signal {
        t_abs: Micros,
        signo: i64,
    },
    Error {
        msg: Option<Text<'a>>,
        fmt: Option<Text<'a>>,
    },
    CmdPath {
        path: Text<'a>,
    },
    CmdAncestry {
        ancestry: Vec<Text<'a>>,
    },
    CmdName {
        name: Text<'a>,
        hierarchy: Option<Text<'a>>,
    },
    CmdMode {
        name: Text<'a>,
    },
    Alias {
        alias: Text<'a>,
        argv: Vec<Text<'a>>,
    },
    ChildStart {
        t_abs: Option<Micros>,
        child_id: i64,
        /// NORMAL does not carry the class.
        child_class: Option<Text<'a>>,
        hook_name: Option<Text<'a>>,
        cd: Option<Text<'a>>,
        /// EVENT only.
        use_shell: Option<bool>,
        /// `git` first for git children.
        argv: Vec<Text<'a>>,
    },
    ChildExit {
        t_abs: Option<Micros>,
        child_id: i64,
        pid: i64,
        code: i64,
        t_rel: Micros,
    },
    ChildReady {
        t_abs: Option<Micros>,
        child_id: i64,
        pid: i64,
        ready: Text<'a>,
        t_rel: Micros,
    },
    ThreadStart {
        t_abs: Option<Micros>,
    },
    ThreadExit {
        t_abs: Option<Micros>,
        t_rel: Micros,
    },
    Exec {
        t_abs: Option<Micros>,
        exec_id: i64,
        exe: Option<Text<'a>>,
        argv: Vec<Text<'a>>,
    },
    ExecResult {
        t_abs: Option<Micros>,
        exec_id: i64,
        code: i64,
    },
    DefParam {
        /// Since git 2.38.
        scope: Option<Text<'a>>,
        param: Text<'a>,
        /// Absent for a valueless-true config entry (git >= 2.48).
        value: Option<Text<'a>>,
    },
    DefRepo {
        worktree: Text<'a>,
    },
    RegionEnter(Region<'a>),
    RegionLeave {
        region: Region<'a>,
        t_rel: Micros,
    },
    Data {
        t_abs: Micros,
        t_rel: Micros,
        nesting: i64,
        category: Option<Text<'a>>,
        key: Text<'a>,
        value: Text<'a>,
    },
    DataJson {
        t_abs: Micros,
        t_rel: Micros,
        nesting: i64,
        category: Option<Text<'a>>,
        key: Text<'a>,
        /// Raw JSON, as written.
        value: Text<'a>,
    },
    Printf {
        t_abs: Option<Micros>,
        msg: Option<Text<'a>>,
    },
    Timer {
        per_thread: bool,
        category: Text<'a>,
        name: Text<'a>,
        intervals: i64,
        t_total: Micros,
        t_min: Micros,
        t_max: Micros,
    },
    Counter {
        per_thread: bool,
        category: Text<'a>,
        name: Text<'a>,
        count: i64,
    },
    /// An event this version does not know; its keys are in
    /// [`Event::extra`].
    Unknown {
        event: Text<'a>,
        /// The PERF payload or NORMAL message, for unknown events read from
        /// those formats.
        payload: Option<Text<'a>>,
    },
}

impl Body<'_> {
    pub fn kind(&self) -> Kind {
        match self {
            Body::Version { .. } => Kind::Version,
            Body::TooManyFiles => Kind::TooManyFiles,
            Body::Start { .. } => Kind::Start,
            Body::Exit { .. } => Kind::Exit,
            Body::AtExit { .. } => Kind::AtExit,
            Body::Signal { .. } => Kind::Signal,
            Body::Error { .. } => Kind::Error,
            Body::CmdPath { .. } => Kind::CmdPath,
            Body::CmdAncestry { .. } => Kind::CmdAncestry,
            Body::CmdName { .. } => Kind::CmdName,
            Body::CmdMode { .. } => Kind::CmdMode,
            Body::Alias { .. } => Kind::Alias,
            Body::ChildStart { .. } => Kind::ChildStart,
            Body::ChildExit { .. } => Kind::ChildExit,
            Body::ChildReady { .. } => Kind::ChildReady,
            Body::ThreadStart { .. } => Kind::ThreadStart,
            Body::ThreadExit { .. } => Kind::ThreadExit,
            Body::Exec { .. } => Kind::Exec,
            Body::ExecResult { .. } => Kind::ExecResult,
            Body::DefParam { .. } => Kind::DefParam,
            Body::DefRepo { .. } => Kind::DefRepo,
            Body::RegionEnter(_) => Kind::RegionEnter,
            Body::RegionLeave { .. } => Kind::RegionLeave,
            Body::Data { .. } => Kind::Data,
            Body::DataJson { .. } => Kind::DataJson,
            Body::Printf { .. } => Kind::Printf,
            Body::Timer {
                per_thread: false, ..
            } => Kind::Timer,
            Body::Timer {
                per_thread: true, ..
            } => Kind::ThTimer,
            Body::Counter {
                per_thread: false, ..
            } => Kind::Counter,
            Body::Counter {
                per_thread: true, ..
            } => Kind::ThCounter,
            Body::Unknown { .. } => Kind::Unknown,
        }
    }

    /// The event name as written (unknown events keep their own).
    pub fn name(&self) -> &[u8] {
        match self {
            Body::Unknown { event, .. } => event,
            b => b.kind().name().as_bytes(),
        }
    }

    /// Seconds since process start, where the event carries it.
    pub fn t_abs(&self) -> Option<Micros> {
        match self {
            Body::Exit { t_abs, .. }
            | Body::AtExit { t_abs, .. }
            | Body::Signal { t_abs, .. }
            | Body::Data { t_abs, .. }
            | Body::DataJson { t_abs, .. } => Some(*t_abs),
            Body::Start { t_abs, .. }
            | Body::ChildStart { t_abs, .. }
            | Body::ChildExit { t_abs, .. }
            | Body::ChildReady { t_abs, .. }
            | Body::ThreadStart { t_abs }
            | Body::ThreadExit { t_abs, .. }
            | Body::Exec { t_abs, .. }
            | Body::ExecResult { t_abs, .. }
            | Body::Printf { t_abs, .. } => *t_abs,
            Body::RegionEnter(r) | Body::RegionLeave { region: r, .. } => r.t_abs,
            _ => None,
        }
    }
}

impl<'a> Event<'a> {
    pub fn new(body: Body<'a>) -> Self {
        Event {
            sid: None,
            depth: None,
            thread: None,
            time: None,
            file: None,
            line: None,
            repo: None,
            indent: None,
            body,
            extra: Vec::new(),
        }
    }

    pub fn kind(&self) -> Kind {
        self.body.kind()
    }

    /// The process depth: PERF's `d<N>`, or the number of `/` in the SID.
    pub fn process_depth(&self) -> Option<u32> {
        self.depth.or_else(|| {
            self.sid
                .as_ref()
                .map(|s| memchr::memchr_iter(b'/', s).count() as u32)
        })
    }
}

/// Whether `kind` is the last record its process writes: after `atexit`
/// (git's atexit handler runs last and turns trace2 off) or `signal` (the
/// handler re-raises it) nothing more comes from that process. A later
/// record with the same SID is from another process forked from it: git's
/// `daemonize()` (`git maintenance run --detach`, started by `commit`,
/// `fetch` and `merge` since git 2.46) forks, and parent and child share
/// the SID, the thread names and the clock; EVENT carries no pid.
pub fn ends_process(kind: Kind) -> bool {
    matches!(kind, Kind::AtExit | Kind::Signal)
}

/// The last component of a SID: the process's own id, and the file name
/// git's directory target uses.
pub fn sid_own(sid: &[u8]) -> &[u8] {
    match memchr::memrchr(b'/', sid) {
        Some(i) => &sid[i + 1..],
        None => sid,
    }
}

/// The parent's SID, if this SID has one.
pub fn sid_parent(sid: &[u8]) -> Option<&[u8]> {
    memchr::memrchr(b'/', sid).map(|i| &sid[..i])
}

/// The first component of a SID: the top-level command's own id, shared
/// by every process of its session.
pub fn sid_root(sid: &[u8]) -> &[u8] {
    match memchr::memchr(b'/', sid) {
        Some(i) => &sid[..i],
        None => sid,
    }
}

/// The pid in a SID component (`...-P0000394d`: the hex digits after the
/// last `P`), `None` if it has none.
pub fn sid_pid(own: &[u8]) -> Option<u32> {
    let i = memchr::memrchr(b'P', own)?;
    let hex = own.get(i + 1..)?;
    if hex.is_empty() || hex.len() > 8 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sid_parts() {
        let sid = b"20240101T000000.000000Z-H0123abcd-P0000392b/20240101T000000.100000Z-H0123abcd-P0000392c";
        assert_eq!(
            sid_root(sid),
            b"20240101T000000.000000Z-H0123abcd-P0000392b"
        );
        assert_eq!(sid_own(sid), b"20240101T000000.100000Z-H0123abcd-P0000392c");
        assert_eq!(sid_parent(sid), Some(sid_root(sid)));
        assert_eq!(sid_pid(sid_own(sid)), Some(0x392c));
        assert_eq!(sid_root(b"solo"), b"solo");
        for no_pid in [&b"x-P"[..], b"x-Pzz", b"x-P123456789", b"none"] {
            assert_eq!(
                sid_pid(no_pid),
                None,
                "{:?}",
                String::from_utf8_lossy(no_pid)
            );
        }
    }
}
