//! Every git process as a row, handed out as its session is folded: what
//! SQL tables (`trace2_processes`) need, with the command grouped exactly
//! as the report's per-command statistics group it.

use super::{command_name, End, ProcState, Session};
use crate::event::{sid_own, sid_parent, sid_pid};
use crate::time::UnixMicros;

/// One git process. Times are microseconds (git's own resolution).
#[derive(Debug, Clone, Copy)]
pub struct ProcessRow<'a> {
    /// The input the process's first event came from.
    pub source: &'a str,
    /// The SID's first component (the process tree's root).
    pub session: &'a [u8],
    pub sid: &'a [u8],
    /// 0 for the process that made the SID, n for the n-th process that
    /// went on under it after the previous one ended (a child forked by
    /// git's `daemonize()`, e.g. `maintenance run --detach`).
    pub fork: u32,
    /// The SID minus its last component.
    pub parent_sid: Option<&'a [u8]>,
    /// From the SID's `P` part, where it has one (not for a forked
    /// process: the SID names its parent).
    pub pid: Option<u32>,
    /// What the report groups by: `cmd_name`, else `(argv0's base name)`.
    pub command: &'a [u8],
    pub mode: Option<&'a [u8]>,
    pub argv: &'a [Box<[u8]>],
    pub version: Option<&'a [u8]>,
    /// From the SID's own component, where it carries a time.
    pub start_unix_us: Option<i64>,
    /// The `exit` event's `t_abs`; `None` when the process never exited.
    pub elapsed_us: Option<i64>,
    pub exit_code: Option<i64>,
    pub signal: Option<i64>,
    /// `exit`, `signal`, `exec` or `none` (as the report's JSON says).
    pub end: &'static str,
}

pub(super) type ProcessHook = Box<dyn FnMut(&ProcessRow<'_>) + Send>;

impl super::ReportBuilder {
    /// Calls `hook` with every process, as its session is folded (so in
    /// session order, with memory still bounded by the open sessions).
    pub fn on_process(&mut self, hook: impl FnMut(&ProcessRow<'_>) + Send + 'static) {
        self.process_rows = Some(Box::new(hook));
    }
}

pub(super) fn emit(hook: &mut ProcessHook, session: &Session, sources: &[String]) {
    for p in &session.procs {
        emit_one(hook, &session.root, p, sources);
    }
}

fn emit_one(hook: &mut ProcessHook, root: &[u8], p: &ProcState, sources: &[String]) {
    let own = sid_own(&p.sid);
    let command = command_name(p);
    hook(&ProcessRow {
        source: sources.get(p.source as usize).map_or("", String::as_str),
        session: root,
        sid: &p.sid,
        fork: p.fork,
        parent_sid: sid_parent(&p.sid),
        pid: sid_pid(own).filter(|_| p.fork == 0),
        command: &command,
        mode: p.cmd_mode.as_deref(),
        argv: &p.argv,
        version: p.version.as_deref(),
        start_unix_us: UnixMicros::parse_sid(own).map(|t| t.0),
        elapsed_us: p.elapsed,
        exit_code: p.exit_code,
        signal: p.signal,
        end: match p.end {
            End::Exit | End::AtExit => "exit",
            End::Signal => "signal",
            End::Exec => "exec",
            End::None => "none",
        },
    });
}
