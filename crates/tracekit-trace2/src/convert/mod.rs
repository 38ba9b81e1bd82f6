//! Writing events in any trace2 format, with the per-process state the
//! text formats need.
//!
//! What a converted record holds, and where it comes from:
//!
//! * **Exact** (copied from the input record): every field the record
//!   carries, including its own `file:line`. Converting a file to its own
//!   format (and variant) reproduces it byte for byte, whatever git version
//!   wrote it; `signal`/`atexit`/`timer`/`counter` keep the target line the
//!   input has (`tr2_tgt_perf.c:216` from git 2.39, `:217` from 2.47).
//! * **Derived from git's version**: `signal`, `atexit`, `timer` and
//!   `counter` carry the source line of the *target* that wrote them, so a
//!   record converted to another format gets that format's target line in
//!   the git release named by the process's `version` event, from a table
//!   generated from git's release tags ([`git_release`]). A version that is
//!   not a release tag takes the nearest release below it and is reported
//!   by [`Converter::take_notes`]; a process without a `version` event, or
//!   a git without Trace2, is an error naming the field.
//! * **Derived from other fields**: NORMAL/PERF's local time of day from
//!   EVENT's UTC `time` (in the converting process's `TZ`: use the
//!   producer's); PERF's `t_abs` on records where EVENT leaves it out
//!   (region, child, exec) from `time` minus the process start in the SID
//!   (git reads another clock: a few microseconds apart); PERF's dots from
//!   the region nesting (exact up to EVENT's nesting limit, as deeper
//!   regions are not in EVENT at all).
//! * **Not carried, never invented**: a brief input has no time of day and
//!   no `file:line` on most records. Converted to a full variant, such a
//!   record is an error ([`ConvertError`]) naming the missing field,
//!   instead of a made-up `00:00:00.000000`; the brief variants do not show
//!   them. Brief EVENT also lacks `t_abs` on regions and children: brief
//!   PERF leaves that column blank there. NORMAL has no thread (nor PERF's
//!   depth and columns), PERF and NORMAL have no SID: NORMAL -> PERF and
//!   PERF/NORMAL -> EVENT fail naming `thread` / `sid`.
//! * **Cut by PERF's columns**: a `def_param` scope cut to `scope:comman`
//!   is whole again in other formats (git's scope names are a closed set);
//!   a file name cut to `...` stays cut (the rest is not in the input).
//!
//! * **Several processes under one SID**: git's `daemonize()` (`git
//!   maintenance run --detach`, started by `commit`, `fetch`, `merge` since
//!   2.46) forks; parent and child share the SID, the thread names and the
//!   clock, and EVENT carries no pid. The child inherits the parent's
//!   region stack and version, so one state per SID serves both: it is kept
//!   after the SID's `atexit`/`signal` (the records after it are the
//!   child's) and never unwound by them. Records a child writes before its
//!   parent's `exit` cannot be told from the parent's; where they change
//!   the region depth, the dots of the parent's `exit` line follow them.
//! * **Unwound by git first**: `atexit`, `thread_exit`, `timer` and
//!   `counter` (and their `th_` forms) are written after git pops the
//!   writing thread's open regions (`tr2tls_pop_unwind_self`), so PERF
//!   shows them without dots whatever was open.
//!
//! **Architecture Invariant:** converting an event allocates nothing but
//! the state of a newly seen process or thread; a process's state is kept
//! after it ends until [`ENDED_KEPT`] more processes have ended (a forked
//! child may still write under its SID), then dropped.

pub mod git_release;
mod target_lines;

use std::collections::VecDeque;
use std::fmt;

use rustc_hash::FxHashMap;

use crate::event::{sid_own, Body, Event, Kind, Time};
use crate::perf::{Context, PerfOptions};
use crate::reader::Format;
use crate::time::{Micros, TimeOfDay, UnixMicros};
use crate::{event_fmt, normal, perf};
use git_release::{emitted_by_target, target_lines, ReleaseLines};

/// Writes an event back in the format it was read from (the event carries
/// every column that format needs).
pub fn write_same_format(ev: &Event<'_>, format: Format, out: &mut Vec<u8>) {
    let ctx = Context::default();
    match format {
        Format::Event => event_fmt::write(ev, out),
        Format::Perf { brief } => perf::write(ev, &ctx, PerfOptions { brief }, out),
        Format::Normal { brief } => normal::write(ev, brief, &ctx, out),
    }
}

/// A record the target format cannot be written from: `field` is what the
/// target needs and the input does not carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertError {
    /// The missing field, as the formats name it (`time`, `file`, `line`).
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConvertError {}

/// The target file's name as it appears in `file`: `tr2_tgt_perf.c`.
fn target_file_name(target: Format) -> &'static [u8] {
    match target {
        Format::Event => b"tr2_tgt_event.c",
        Format::Perf { .. } => b"tr2_tgt_perf.c",
        Format::Normal { .. } => b"tr2_tgt_normal.c",
    }
}

fn target_index(target: Format) -> usize {
    match target {
        Format::Event => 0,
        Format::Perf { .. } => 1,
        Format::Normal { .. } => 2,
    }
}

/// git's config scope names (`config_scope_name()`).
const SCOPES: [&[u8]; 7] = [
    b"system",
    b"global",
    b"local",
    b"worktree",
    b"command",
    b"submodule",
    b"unknown",
];

/// The scope PERF cut to its 12-byte category column (`scope:` and 6
/// bytes), if `scope` is such a cut.
fn uncut_scope(scope: &[u8]) -> Option<&'static [u8]> {
    if scope.len() != 6 {
        return None;
    }
    let mut found = SCOPES
        .iter()
        .filter(|s| s.len() > scope.len() && s.starts_with(scope));
    match (found.next(), found.next()) {
        (Some(s), None) => Some(s),
        _ => None,
    }
}

/// What a process's `version` event said (git's version string, as
/// written) and the target lines of that release.
type Version = (String, Result<ReleaseLines, String>);

/// How many ended processes keep their state (for a child forked under
/// the same SID that goes on writing after its parent's `atexit`).
pub const ENDED_KEPT: usize = 4096;

#[derive(Default)]
struct Process {
    /// Regions open per thread.
    open: FxHashMap<Vec<u8>, u32>,
    start: Option<UnixMicros>,
    depth: u32,
    /// From the process's `version` event.
    version: Option<Version>,
    /// How many times a process of this SID ended (`atexit`, `signal`):
    /// names the entry of [`Converter::ended`] that may drop this state.
    ends: u32,
    /// The last record of this SID ended its process (a later one is a
    /// forked child's).
    ended: bool,
}

/// Records git writes after popping the writing thread's open regions
/// (`tr2tls_pop_unwind_self` in `trace2.c`: the atexit handler before
/// `atexit` and the final timers/counters, `trace2_thread_exit_fl` before
/// `thread_exit` and the thread's timers/counters).
fn unwound_before(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::AtExit
            | Kind::ThreadExit
            | Kind::Timer
            | Kind::ThTimer
            | Kind::Counter
            | Kind::ThCounter
    )
}

fn new_process(sid: &[u8]) -> Process {
    Process {
        start: UnixMicros::parse_sid(sid_own(sid)),
        depth: memchr::memchr_iter(b'/', sid).count() as u32,
        ..Process::default()
    }
}

/// Converts a stream of events (of any format) to `target`.
pub struct Converter {
    target: Format,
    processes: FxHashMap<Vec<u8>, Process>,
    /// Regions open per thread when events carry no SID (PERF/NORMAL
    /// input); keyed by depth and thread.
    anonymous: FxHashMap<u32, FxHashMap<Vec<u8>, u32>>,
    /// The last `version` seen in input without SIDs (PERF/NORMAL).
    anonymous_version: Option<Version>,
    /// Ended processes, oldest first, with their `ends` count then: the
    /// state is dropped when [`ENDED_KEPT`] more have ended, unless a
    /// forked child wrote under the SID since.
    ended: VecDeque<(Vec<u8>, u32)>,
    tz_cache: Option<(i64, i64)>,
    /// The `file` written on a target-emitted record.
    file_buf: Vec<u8>,
    /// Versions already reported as not in the table.
    noted: Vec<String>,
    notes: Vec<String>,
}

impl Converter {
    pub fn new(target: Format) -> Self {
        Converter {
            target,
            processes: FxHashMap::default(),
            anonymous: FxHashMap::default(),
            anonymous_version: None,
            ended: VecDeque::new(),
            tz_cache: None,
            file_buf: Vec::new(),
            noted: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The format written.
    pub fn target(&self) -> Format {
        self.target
    }

    /// How many processes have state: those running and the last
    /// [`ENDED_KEPT`] that ended.
    pub fn live_processes(&self) -> usize {
        self.processes.len()
    }

    /// What the caller should tell the user about values that were derived
    /// less exactly than usual (a git version not in the release table),
    /// once each; empties the list.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Appends `ev` in the target format to `out` (nothing for events the
    /// target does not write). Fails, writing nothing, when the target
    /// needs a value the event does not carry and nothing derives it.
    pub fn write(&mut self, ev: &Event<'_>, out: &mut Vec<u8>) -> Result<(), ConvertError> {
        let written = self.write_record(ev, out);
        // Even a record that could not be written ends its process.
        self.forget_ended(ev, ev.kind());
        written
    }

    fn write_record(&mut self, ev: &Event<'_>, out: &mut Vec<u8>) -> Result<(), ConvertError> {
        let kind = ev.kind();
        if let Body::Version { exe, .. } = &ev.body {
            self.note_version(ev.sid.as_deref(), exe);
        }
        // Fields whole formats lack: NORMAL has no thread (nor PERF's depth
        // and columns), PERF and NORMAL have no SID.
        let needed = match self.target {
            Format::Event => ev.sid.is_none().then_some(("sid", "a session id")),
            Format::Perf { .. } if kind != Kind::TooManyFiles => {
                ev.thread.is_none().then_some(("thread", "a thread name"))
            }
            _ => None,
        };
        if let Some((field, what)) = needed {
            return Err(ConvertError {
                field,
                message: format!(
                    "'{}' record has no '{field}' (NORMAL has no thread, PERF and NORMAL no SID): {} needs {what} on every record",
                    String::from_utf8_lossy(ev.body.name()),
                    self.target.name(),
                ),
            });
        }
        // PERF's category column cuts `scope:command` to `scope:comman`;
        // git's scope names are a closed set, so the cut one names exactly
        // one of them.
        if let Body::DefParam {
            scope: Some(scope),
            param,
            value,
        } = &ev.body
        {
            if !matches!(self.target, Format::Perf { .. }) {
                if let Some(full) = uncut_scope(scope) {
                    let mut ev = ev.clone();
                    ev.body = Body::DefParam {
                        scope: Some(std::borrow::Cow::Borrowed(full)),
                        param: param.clone(),
                        value: value.clone(),
                    };
                    return self.write_checked(&ev, kind, out);
                }
            }
        }
        self.write_checked(ev, kind, out)
    }

    fn write_checked(
        &mut self,
        ev: &Event<'_>,
        kind: Kind,
        out: &mut Vec<u8>,
    ) -> Result<(), ConvertError> {
        if self.target == Format::Event {
            // (No state to keep alive for a forked child here: EVENT
            // records keep their own target line, the version is only
            // looked up for PERF/NORMAL input, which has no SID.)
            let location = self.target_location(ev)?;
            if location.is_none() {
                event_fmt::write(ev, out);
            } else {
                // Event records keep their file:line in the event itself.
                let mut ev = ev.clone();
                if let Some(line) = location {
                    ev.file = Some(std::borrow::Cow::Owned(self.file_buf.clone()));
                    ev.line = Some(line);
                }
                event_fmt::write(&ev, out);
            }
            return Ok(());
        }

        let brief = matches!(
            self.target,
            Format::Perf { brief: true } | Format::Normal { brief: true }
        );
        let shown = match self.target {
            Format::Normal { .. } => normal::writes(kind),
            _ => kind != Kind::TooManyFiles,
        };
        let mut ctx = Context::default();
        let now = ev.time.as_ref().and_then(Time::unix);
        if !brief && shown {
            // The full variants show a time of day and file:line on every
            // record.
            match (&ev.time, now) {
                (_, Some(t)) => ctx.time = Some(self.local_time_of_day(t)),
                (Some(Time::OfDay(_)), _) => {}
                _ => return Err(self.missing(ev, "time", "a time of day")),
            }
        }
        let location = if !brief && shown {
            let location = self.target_location(ev)?;
            if location.is_none() && ev.file.as_deref().is_none_or(|f| f.is_empty()) {
                return Err(self.missing(ev, "file", "a source file:line"));
            }
            location
        } else {
            None
        };

        let (indent, start, depth) = self.track(ev);
        ctx.indent = indent;
        ctx.depth = depth;
        ctx.location = location.map(|line| (&self.file_buf[..], line));
        if let (Some(now), Some(start)) = (now, start) {
            ctx.t_abs = Some(Micros(now.0 - start.0));
        }
        match self.target {
            Format::Perf { brief } => perf::write(ev, &ctx, PerfOptions { brief }, out),
            Format::Normal { brief } => normal::write(ev, brief, &ctx, out),
            Format::Event => {}
        }
        Ok(())
    }

    /// After a record that ends its process: the state stays for a child
    /// forked under the same SID, until [`ENDED_KEPT`] more processes
    /// ended.
    fn forget_ended(&mut self, ev: &Event<'_>, kind: Kind) {
        if !matches!(kind, Kind::AtExit | Kind::Signal) {
            return;
        }
        let Some(sid) = &ev.sid else {
            return;
        };
        let Some(p) = self.processes.get_mut(&sid[..]) else {
            return;
        };
        p.ends += 1;
        p.ended = true;
        self.ended.push_back((sid.to_vec(), p.ends));
        while self.ended.len() > ENDED_KEPT {
            let Some((old, ends)) = self.ended.pop_front() else {
                break;
            };
            // Dropped only if nothing was written under the SID since.
            if self
                .processes
                .get(&old)
                .is_some_and(|p| p.ended && p.ends == ends)
            {
                self.processes.remove(&old);
            }
        }
    }

    fn missing(&self, ev: &Event<'_>, field: &'static str, what: &str) -> ConvertError {
        ConvertError {
            field,
            message: format!(
                "'{}' record has no '{field}' (brief input?): the full {} variant needs {what} on every record; \
                 convert to the brief variant (--brief, the default for brief input)",
                String::from_utf8_lossy(ev.body.name()),
                self.target.name(),
            ),
        }
    }

    /// Remembers the git release of the process that wrote `exe`.
    fn note_version(&mut self, sid: Option<&[u8]>, exe: &[u8]) {
        let version = (String::from_utf8_lossy(exe).into_owned(), target_lines(exe));
        match sid {
            Some(sid) => self.process(sid).version = Some(version),
            None => self.anonymous_version = Some(version),
        }
    }

    /// For a record a target emits itself (signal, atexit, timer, counter)
    /// that was written by another target than ours: our target's file
    /// (in `file_buf`) and line in the process's git release. `None` where
    /// the record keeps its own location.
    fn target_location(&mut self, ev: &Event<'_>) -> Result<Option<i64>, ConvertError> {
        let Some(index) = emitted_by_target(ev.kind()) else {
            return Ok(None);
        };
        let own = target_file_name(self.target);
        let file: &[u8] = ev.file.as_deref().unwrap_or_default();
        // Same target: the record's own line is exact.
        if file.ends_with(own) {
            return Ok(None);
        }
        let Some(slash) = memchr::memmem::rfind(file, b"tr2_tgt_") else {
            // No file (brief input): nothing to replace; the caller decides
            // whether the target needs one.
            return Ok(None);
        };
        let version = match ev.sid.as_deref() {
            Some(sid) => self.processes.get(sid).and_then(|p| p.version.clone()),
            None => self.anonymous_version.clone(),
        };
        let name = String::from_utf8_lossy(ev.body.name()).into_owned();
        let (exe, lines) = match version {
            None => {
                return Err(ConvertError {
                    field: "line",
                    message: format!(
                        "'{name}' record: its {} line depends on git's version, and its process wrote no 'version' record before it",
                        String::from_utf8_lossy(own)
                    ),
                })
            }
            Some((_, Err(why))) => {
                return Err(ConvertError {
                    field: "line",
                    message: format!(
                        "'{name}' record: its {} line depends on git's version: {why}",
                        String::from_utf8_lossy(own)
                    ),
                })
            }
            Some((exe, Ok(lines))) => (exe, lines),
        };
        let line = lines.lines[target_index(self.target)][index];
        if line == 0 {
            return Err(ConvertError {
                field: "line",
                message: format!(
                    "'{name}' record: git {}.{}.{}'s {} writes no '{name}' record",
                    lines.release.0,
                    lines.release.1,
                    lines.release.2,
                    String::from_utf8_lossy(own)
                ),
            });
        }
        if !lines.exact {
            self.note_inexact(exe, &lines);
        }
        // Keep the directory part git's build gave __FILE__.
        self.file_buf.clear();
        self.file_buf.extend_from_slice(&file[..slash]);
        self.file_buf.extend_from_slice(own);
        Ok(Some(i64::from(line)))
    }

    fn note_inexact(&mut self, exe: String, lines: &ReleaseLines) {
        if self.noted.contains(&exe) {
            return;
        }
        let (a, b, c) = lines.release;
        let (x, y, z) = git_release::newest_known();
        self.notes.push(format!(
            "git {exe} is not a release known here (known: 2.20.0 .. {x}.{y}.{z}): the tr2_tgt_*.c lines of \
             signal/atexit/timer/counter records were taken from git {a}.{b}.{c}, the nearest release below, and may differ"
        ));
        self.noted.push(exe);
    }

    fn process(&mut self, sid: &[u8]) -> &mut Process {
        self.processes
            .entry(sid.to_vec())
            .or_insert_with(|| new_process(sid))
    }

    /// Returns the regions open on the event's thread before the event, the
    /// process start time and its depth, and updates the region count.
    fn track(&mut self, ev: &Event<'_>) -> (u32, Option<UnixMicros>, u32) {
        let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        let (threads, start, depth) = match &ev.sid {
            Some(sid) => {
                // One lookup on the hot path; only a new process allocates.
                let p = match self.processes.get_mut(&sid[..]) {
                    Some(p) => p,
                    None => self
                        .processes
                        .entry(sid.to_vec())
                        .or_insert_with(|| new_process(sid)),
                };
                // A record after the SID's end: a forked child goes on
                // with the state it inherited.
                p.ended = false;
                (&mut p.open, p.start, p.depth)
            }
            None => {
                let depth = ev.depth.unwrap_or(0);
                (self.anonymous.entry(depth).or_default(), None, depth)
            }
        };
        // Look up by borrowed name: only a new thread allocates.
        let slot = match threads.get_mut(thread) {
            Some(s) => s,
            None => threads.entry(thread.to_vec()).or_insert(0),
        };
        let before = *slot;
        let indent = match &ev.body {
            // EVENT's nesting is the depth before the push (thread = 1).
            Body::RegionEnter(r) => {
                *slot = r.nesting.max(1) as u32;
                (r.nesting - 1).max(0) as u32
            }
            Body::RegionLeave { region, .. } => {
                *slot = (region.nesting - 1).max(0) as u32;
                (region.nesting - 1).max(0) as u32
            }
            // Written after git unwound the thread's regions; the state is
            // kept for a forked child, which did not unwind.
            _ if ev.indent.is_none() && unwound_before(ev.kind()) => 0,
            _ => ev.indent.unwrap_or(before),
        };
        (indent, start, depth)
    }

    fn local_time_of_day(&mut self, u: UnixMicros) -> TimeOfDay {
        // The zone offset changes at most hourly; cache it per hour.
        let hour = u.0.div_euclid(3_600_000_000);
        let offset = match self.tz_cache {
            Some((h, off)) if h == hour => off,
            _ => {
                let off = crate::time::local_offset_secs(u.0.div_euclid(1_000_000));
                self.tz_cache = Some((hour, off));
                off
            }
        };
        let local = u.0 + offset * 1_000_000;
        TimeOfDay(local.rem_euclid(86_400_000_000) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(input: &[u8], from: Format, to: Format) -> Result<Vec<u8>, ConvertError> {
        let mut conv = Converter::new(to);
        let mut out = Vec::new();
        for rec in crate::reader::RecordIter::new(input, from) {
            let ev = from.parse(rec.bytes).expect("parses");
            conv.write(&ev, &mut out)?;
        }
        Ok(out)
    }

    /// git < 2.38 writes def_param without a scope (read from its
    /// tr2_tgt_*.c): nothing may add one.
    #[test]
    fn def_param_without_scope_stays_without() {
        let normal: &[u8] =
            b"12:00:00.000001 trace2.c:437                      def_param core.abbrev=12\n";
        let full = Format::Normal { brief: false };
        assert_eq!(convert(normal, full, full).unwrap(), normal);
        let event: &[u8] = b"{\"event\":\"def_param\",\"sid\":\"20240101T120000.000000Z-H0a7c9cdf-P00001234\",\"thread\":\"main\",\"time\":\"2024-01-01T12:00:00.000001Z\",\"file\":\"trace2.c\",\"line\":437,\"param\":\"core.abbrev\",\"value\":\"12\"}\n";
        std::env::set_var("TZ", "UTC");
        assert_eq!(convert(event, Format::Event, full).unwrap(), normal);
        let perf = convert(event, Format::Event, Format::Perf { brief: false }).unwrap();
        let perf = String::from_utf8(perf).unwrap();
        assert!(
            perf.ends_with("|              | core.abbrev:12\n"),
            "{perf}"
        );
        assert!(!perf.contains("scope"), "{perf}");
    }

    /// PERF cuts the scope to 6 bytes; converted to NORMAL it is whole
    /// again (git's scope names are a closed set).
    #[test]
    fn cut_scopes_are_whole_again() {
        assert_eq!(uncut_scope(b"comman"), Some(&b"command"[..]));
        assert_eq!(uncut_scope(b"worktr"), Some(&b"worktree"[..]));
        assert_eq!(uncut_scope(b"unknow"), Some(&b"unknown"[..]));
        assert_eq!(uncut_scope(b"submod"), Some(&b"submodule"[..]));
        assert_eq!(uncut_scope(b"global"), None);
        assert_eq!(uncut_scope(b"local"), None);
        assert_eq!(uncut_scope(b"bogus!"), None);
    }

    #[test]
    fn formats_without_a_field_fail_naming_it() {
        let normal = format!("{:<50}version 2.47.3\n", "12:00:00.000001 common-main.c:58");
        let normal = normal.as_bytes();
        let e = convert(
            normal,
            Format::Normal { brief: false },
            Format::Perf { brief: false },
        )
        .unwrap_err();
        assert_eq!(e.field, "thread", "{e}");
        let e = convert(normal, Format::Normal { brief: false }, Format::Event).unwrap_err();
        assert_eq!(e.field, "sid", "{e}");
    }

    fn record(event: &str, rest: &str) -> String {
        format!(
            "{{\"event\":\"{event}\",\"sid\":\"20240101T120000.000000Z-H0a7c9cdf-P00001234\",\"thread\":\"main\",\"time\":\"2024-01-01T12:00:00.000100Z\",\"file\":\"{}\",\"line\":{}{rest}}}\n",
            if event == "atexit" { "trace2/tr2_tgt_event.c" } else { "x.c" },
            if event == "atexit" { 205 } else { 1 },
        )
    }

    /// git's `daemonize()` forks: parent and child write under one SID,
    /// the child after the parent's `atexit`. The child's records keep the
    /// SID's state (its version for the target line of `atexit`, the
    /// region it inherited), and `atexit`, written after git unwound the
    /// regions, has no dots.
    #[test]
    fn a_forked_child_goes_on_with_its_sids_state() {
        let input = [
            record("version", ",\"evt\":\"4\",\"exe\":\"2.47.3\""),
            record(
                "region_enter",
                ",\"repo\":1,\"nesting\":1,\"category\":\"maintenance\",\"label\":\"detach\"",
            ),
            record("exit", ",\"t_abs\":0.000100,\"code\":0"),
            record("atexit", ",\"t_abs\":0.000100,\"code\":0"),
            record(
                "data",
                ",\"repo\":1,\"t_abs\":0.000100,\"t_rel\":0.000100,\"nesting\":2,\"category\":\"c\",\"key\":\"k\",\"value\":\"v\"",
            ),
            record(
                "region_leave",
                ",\"repo\":1,\"t_rel\":0.000050,\"nesting\":1,\"category\":\"maintenance\",\"label\":\"detach\"",
            ),
            record("exit", ",\"t_abs\":0.000100,\"code\":0"),
            record("atexit", ",\"t_abs\":0.000100,\"code\":0"),
        ]
        .concat();
        std::env::set_var("TZ", "UTC");
        let perf = convert(
            input.as_bytes(),
            Format::Event,
            Format::Perf { brief: false },
        )
        .expect("every record converts");
        let perf = String::from_utf8(perf).unwrap();
        let payloads: Vec<&str> = perf
            .lines()
            .map(|l| l.rsplit(" | ").next().unwrap_or(""))
            .collect();
        assert_eq!(
            payloads,
            [
                "2.47.3",
                "label:detach",
                "..code:0",
                "code:0",
                "..k:v",
                "label:detach",
                "code:0",
                "code:0"
            ],
            "{perf}"
        );
        // The second atexit gets PERF's line of git 2.47.3, like the first.
        assert_eq!(
            perf.matches("trace2/tr2_tgt_perf.c:217").count(),
            2,
            "{perf}"
        );
        let normal = convert(
            input.as_bytes(),
            Format::Event,
            Format::Normal { brief: false },
        )
        .expect("every record converts");
        assert_eq!(
            String::from_utf8(normal)
                .unwrap()
                .matches("tr2_tgt_normal.c:128")
                .count(),
            2
        );
    }

    /// Ended processes keep their state for a forked child, up to
    /// ENDED_KEPT of them.
    #[test]
    fn ended_processes_state_is_bounded() {
        let mut conv = Converter::new(Format::Perf { brief: false });
        let mut out = Vec::new();
        for pid in 0..ENDED_KEPT + 10 {
            for rec in [
                record("version", ",\"evt\":\"4\",\"exe\":\"2.47.3\""),
                record("atexit", ",\"t_abs\":0.000100,\"code\":0"),
            ] {
                let rec = rec.replace("P00001234", &format!("P{pid:08x}"));
                let ev = Format::Event.parse(rec.trim_end().as_bytes()).unwrap();
                conv.write(&ev, &mut out).unwrap();
            }
        }
        assert_eq!(conv.live_processes(), ENDED_KEPT);
    }

    /// A target-emitted record without a `version` before it: its line in
    /// another target is unknowable.
    #[test]
    fn atexit_without_version_fails_naming_line() {
        let event: &[u8] = b"{\"event\":\"atexit\",\"sid\":\"20240101T120000.000000Z-H0a7c9cdf-P00001234\",\"thread\":\"main\",\"time\":\"2024-01-01T12:00:00.000001Z\",\"file\":\"trace2/tr2_tgt_event.c\",\"line\":205,\"t_abs\":0.001000,\"code\":0}\n";
        let e = convert(event, Format::Event, Format::Perf { brief: false }).unwrap_err();
        assert_eq!(e.field, "line", "{e}");
        assert!(e.message.contains("no 'version'"), "{e}");
        // Into EVENT it keeps its own.
        assert_eq!(convert(event, Format::Event, Format::Event).unwrap(), event);
    }
}
