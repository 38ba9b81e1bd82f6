//! Trace2 events mapped to the timeline model (`tracekit_core::timeline`),
//! once, for every sink (Chrome JSON, Perfetto, and the sinks to come).
//!
//! * A **process** track per git process (pid = the `P` component of the
//!   SID, or a fresh number above 2^32 when there is none or it is taken,
//!   e.g. by an `exec`'d image), named `git <cmd_name>` (or its argv when
//!   it never said), with a track per trace2 thread (`main` is 1, others
//!   2, 3, ... in order of appearance: lanes, since trace2 names threads
//!   but does not number them).
//! * The process itself is a slice on its main thread, opened at its
//!   first event once its first `cmd_name` is known (it names the slice) and
//!   closed at its last event (`atexit`, `signal`, `exec`, or the end of
//!   the input), with how it ended as arguments.
//! * Regions are slices on their thread; children (`child_start` ..
//!   `child_exit`) are complete slices on **lane** tracks of the parent
//!   (`children`, `children 2`, ...: parallel children overlap), with a
//!   **flow** to the child's own process slice when the child is a traced
//!   git process (its SID's parent and pid say so).
//! * data, errors, timers, exit/signal/exec are instants; counters are
//!   **counter** tracks (`category/name`, series `count`).
//!
//! * A SID written by **several processes** (git's `daemonize()`: `git
//!   maintenance run --detach` forks, parent and child share the SID; see
//!   [`crate::event::ends_process`]): a record of a SID after its
//!   `atexit`/`signal` starts a process track of its own (`git maintenance
//!   (fork 1)`, a fresh pid: the SID's is the parent's), whose slice starts
//!   where the parent's ended (the fork itself is not in the trace) and
//!   re-opens the regions the parent's ending thread had open (argument
//!   `inherited`); children the parent logged `child_start` for and the
//!   fork logs `child_exit` for move to the fork (a parent with pending
//!   children closes when its fork shows up, or once
//!   [`ENDED_WAITING`] more such processes ended).
//! * Records it cannot place (a `region_leave` with no region open, a
//!   `child_exit` with no `child_start`) are drawn as instants with a
//!   `no_region_enter`/`no_child_start` argument and said in
//!   [`Trace2Timeline::warnings`]; nothing after them is lost.
//!
//! Time: microseconds. EVENT's UTC `time` is Unix time; PERF/NORMAL only
//! carry a local time of day, so their clock is relative (a trace crossing
//! midnight wraps). Events without a time (brief EVENT) are placed at the
//! process start plus their `t_abs`, or at the latest time seen in the
//! process.
//!
//! **Architecture Invariant:** streaming: state is kept per open process
//! (open slices, pending children) and dropped when it ends, plus what a
//! forked child inherits from the last [`ENDED_KEPT`] processes that ended;
//! a process that never ends is closed by [`Trace2Timeline::finish`] at
//! the last time it was seen.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::VecDeque;
use std::io;

use tracekit_core::timeline::{
    Clock, Event as TEvent, Flow, Name, Origin, Scope, Sink, TraceInfo, Track, TrackId, TrackKind,
    Value,
};
use tracekit_core::{Position, Warnings};

use crate::event::{ends_process, sid_own, sid_parent, sid_pid, sid_root, Body, Event, Time};
use crate::reader::{for_each_in, release_pages, Format};
use crate::report::SyntheticSids;
use crate::time::UnixMicros;

/// Lane number (Chrome thread id) of a process's first child lane.
const CHILD_LANE: i64 = 1_000_000;

/// Ended processes whose SID a forked child may still write under: what it
/// would inherit is kept for this many.
pub const ENDED_KEPT: usize = 4096;
/// Ended processes with children still pending (a fork may take them over)
/// stay open until this many more are waiting.
pub const ENDED_WAITING: usize = 256;

/// A region open on a thread: its nesting, and where its name and
/// category are in the thread's `names`.
#[derive(Clone, Copy)]
struct OpenRegion {
    nesting: i64,
    at: usize,
    name_len: usize,
}

struct ThreadTrack {
    name: Box<[u8]>,
    track: TrackId,
    /// The regions open on this thread.
    open: Vec<OpenRegion>,
    /// Their names and categories, back to back (popped with them).
    names: Vec<u8>,
}

impl ThreadTrack {
    fn push(&mut self, nesting: i64, name: &[u8], category: &[u8]) {
        let at = self.names.len();
        self.names.extend_from_slice(name);
        self.names.extend_from_slice(category);
        self.open.push(OpenRegion {
            nesting,
            at,
            name_len: name.len(),
        });
    }

    fn pop(&mut self) {
        if let Some(r) = self.open.pop() {
            self.names.truncate(r.at);
        }
    }

    /// The open regions, outermost first: (nesting, name, category).
    fn regions(&self) -> impl Iterator<Item = (i64, &[u8], &[u8])> + '_ {
        self.open.iter().enumerate().map(|(i, r)| {
            let end = self.open.get(i + 1).map_or(self.names.len(), |n| n.at);
            let name_end = r.at + r.name_len;
            (
                r.nesting,
                &self.names[r.at..name_end],
                &self.names[name_end..end],
            )
        })
    }
}

/// What a process forked under an ended process's SID starts from.
struct Inherit {
    fork: u32,
    cmd: Option<Vec<u8>>,
    argv: Vec<u8>,
    base: Option<i64>,
    /// The parent's last time: the fork came before.
    last: i64,
    /// The thread that ended the parent (the one that lives on), and its
    /// open regions: (nesting, name, category), outermost first.
    thread: Box<[u8]>,
    regions: Vec<(i64, Vec<u8>, Vec<u8>)>,
}

struct PendingChild {
    ts: i64,
    lane: usize,
    name: Vec<u8>,
    class: Vec<u8>,
    argv: Vec<u8>,
}

struct ProcTrack {
    pid: i64,
    track: TrackId,
    /// 0, or n for the n-th process forked under the SID.
    fork: u32,
    /// `atexit`/`signal` seen (waiting for a fork to take its children),
    /// and the thread that wrote it.
    ended: Option<Box<[u8]>>,
    /// The SID's parent and own pid, when both are real (for the flow from
    /// the parent's child slice).
    flow: Option<u64>,
    argv: Vec<u8>,
    /// Wall time at `t_abs` = 0, when known.
    base: Option<i64>,
    start: Option<i64>,
    last: i64,
    threads: Vec<ThreadTrack>,
    children: HashMap<i64, PendingChild>,
    /// Lane tracks; a lane is free when no pending child holds it.
    lanes: Vec<TrackId>,
    counters: HashMap<Vec<u8>, TrackId>,
    cmd: Option<Vec<u8>>,
    /// Whether the process slice was opened on the main thread.
    opened: bool,
    exit: Option<(&'static str, i64)>,
}

impl ProcTrack {
    fn new(pid: i64, track: TrackId, fork: u32, flow: Option<u64>) -> Self {
        ProcTrack {
            pid,
            track,
            fork,
            ended: None,
            flow,
            argv: Vec::new(),
            base: None,
            start: None,
            last: 0,
            threads: Vec::new(),
            children: HashMap::default(),
            lanes: Vec::new(),
            counters: HashMap::default(),
            cmd: None,
            opened: false,
            exit: None,
        }
    }

    /// What a process forked from this one (which ended) starts from.
    fn inherit(&self) -> Inherit {
        let thread = self
            .ended
            .clone()
            .unwrap_or_else(|| Box::from(&b"main"[..]));
        let regions = self
            .threads
            .iter()
            .find(|t| t.name == thread)
            .map(|t| {
                t.regions()
                    .map(|(n, name, cat)| (n, name.to_vec(), cat.to_vec()))
                    .collect()
            })
            .unwrap_or_default();
        Inherit {
            fork: self.fork,
            cmd: self.cmd.clone(),
            argv: self.argv.clone(),
            base: self.base,
            last: self.last,
            thread,
            regions,
        }
    }

    /// `git <cmd_name>`, else its argv, else `git`; `(fork n)` after it
    /// for a forked process.
    fn track_name(&self) -> Vec<u8> {
        let mut n = match (&self.cmd, self.argv.is_empty()) {
            (Some(cmd), _) => [&b"git "[..], cmd].concat(),
            (None, false) => self.argv.clone(),
            (None, true) => b"git".to_vec(),
        };
        if self.fork > 0 {
            n.extend_from_slice(format!(" (fork {})", self.fork).as_bytes());
        }
        n
    }
}

/// A lane for a new pending child of `p`: the first no pending child
/// holds, or a new one.
fn take_lane<S: Sink>(
    sink: &mut S,
    next_track: &mut TrackId,
    p: &mut ProcTrack,
) -> io::Result<usize> {
    if let Some(l) = (0..p.lanes.len()).find(|&l| p.children.values().all(|c| c.lane != l)) {
        return Ok(l);
    }
    let l = p.lanes.len();
    let number = CHILD_LANE + l as i64;
    let label = if l == 0 {
        b"children".to_vec()
    } else {
        format!("children {}", l + 1).into_bytes()
    };
    let id = *next_track;
    *next_track += 1;
    sink.event(&TEvent::Track(Track {
        id,
        parent: Some(p.track),
        kind: TrackKind::Lane {
            pid: p.pid,
            lane: number,
        },
        name: Some(&label),
        sort_index: Some(number),
    }))?;
    p.lanes.push(id);
    Ok(l)
}

/// Counts of what was written, per kind (for tests and `--verbose`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MapStats {
    pub processes: u64,
    pub region_slices: u64,
    pub child_slices: u64,
    pub instants: u64,
    pub counters: u64,
    /// Flows from a parent's child slice to the child's process slice.
    pub flows: u64,
    /// `region_leave` with no open region on its thread (not written).
    pub unmatched_leaves: u64,
    /// Regions still open when their process ended or the input did
    /// (closed at the last time seen).
    pub closed_at_end: u64,
    /// Events with no usable time and no earlier event in their process
    /// (written at time 0).
    pub untimed: u64,
    /// Processes that went on under the SID of one that ended (forked).
    pub forks: u64,
    /// `child_exit` with no pending `child_start` (drawn as an instant).
    pub unmatched_child_exits: u64,
}

/// The clock of a Trace2 input whose first event has `time`: EVENT's
/// UTC times are Unix microseconds; PERF/NORMAL's local times of day (or
/// no time at all) are only relative.
pub fn clock(time: &Option<Time<'_>>) -> Clock {
    Clock {
        ticks_per_second: 1_000_000,
        origin: match time {
            Some(Time::Iso(_)) => Origin::Unix { ns_at_zero: 0 },
            _ => Origin::Relative,
        },
    }
}

/// Maps trace2 events, in input order, to the timeline.
pub struct Trace2Timeline<'s, S: Sink> {
    sink: S,
    source: &'s str,
    /// Whether the sink was started (at the first event, whose time says
    /// which clock the input has).
    started: bool,
    procs: HashMap<Box<[u8]>, ProcTrack>,
    used_pids: HashSet<i64>,
    next_pid: i64,
    next_track: TrackId,
    synthetic: SyntheticSids,
    stats: MapStats,
    /// Ended processes waiting for a fork to take their pending children:
    /// (SID, fork number).
    waiting: VecDeque<(Box<[u8]>, u32)>,
    /// What a fork of a recently ended (and closed) process inherits, with
    /// the serial number of its entry in `gone_order`.
    gone: HashMap<Box<[u8]>, (u64, Inherit)>,
    gone_order: VecDeque<(Box<[u8]>, u64)>,
    gone_serial: u64,
    /// Records that could not be placed as the model wants (drawn anyway).
    warnings: Warnings,
    position: Position,
}

fn ts_of(time: &Option<Time<'_>>) -> Option<i64> {
    match time {
        Some(Time::Iso(t)) => UnixMicros::parse_iso(t).map(|u| u.0),
        Some(Time::OfDay(t)) => Some(t.0 as i64),
        None => None,
    }
}

/// The id of the flow from a parent process (by SID) to its child (by
/// pid): FNV-1a over both, the same on either end.
fn flow_id(parent_sid: &[u8], child_pid: i64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in parent_sid
        .iter()
        .chain(b"\0")
        .chain(&child_pid.to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn joined(argv: &[crate::event::Text<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    crate::quote::sq_quote_argv(&mut out, argv);
    out
}

/// Raw JSON from `data_json`, if it is valid (git copies bytes >= 0x80 raw,
/// which can make it invalid UTF-8).
fn valid_json(v: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(v).is_ok()
}

impl<'s, S: Sink> Trace2Timeline<'s, S> {
    /// The timeline of a Trace2 input named `source` (one file, or the
    /// files of a directory target in turn).
    pub fn new(sink: S, source: &'s str) -> Self {
        Trace2Timeline {
            sink,
            source,
            started: false,
            procs: HashMap::default(),
            used_pids: HashSet::default(),
            next_pid: 1 << 32,
            next_track: 1,
            synthetic: SyntheticSids::default(),
            stats: MapStats::default(),
            waiting: VecDeque::new(),
            gone: HashMap::default(),
            gone_order: VecDeque::new(),
            gone_serial: 0,
            warnings: Warnings::default(),
            position: Position::Unknown,
        }
    }

    /// What could not be placed as the model wants (drawn anyway: see the
    /// module docs), at the positions given to [`Self::add_at`].
    pub fn warnings(&self) -> &Warnings {
        &self.warnings
    }

    /// Hands over the warnings so far (to print them per input file).
    pub fn take_warnings(&mut self) -> Warnings {
        std::mem::take(&mut self.warnings)
    }

    /// Adds one event read at `position` (where warnings about it point).
    pub fn add_at(&mut self, ev: &Event<'_>, position: Position) -> io::Result<()> {
        self.position = position;
        let r = self.add(ev);
        self.position = Position::Unknown;
        r
    }

    fn start(&mut self, time: &Option<Time<'_>>) -> io::Result<()> {
        if !self.started {
            self.started = true;
            self.sink.start(&TraceInfo {
                dialect: "trace2",
                source: self.source,
                host: None,
                clock: clock(time),
            })?;
        }
        Ok(())
    }

    pub fn stats(&self) -> &MapStats {
        &self.stats
    }

    fn new_track(next: &mut TrackId) -> TrackId {
        let id = *next;
        *next += 1;
        id
    }

    /// Declares the track of a process seen for the first time.
    fn new_process(&mut self, sid: &[u8], has_sid: bool) -> io::Result<()> {
        let own_pid = sid_pid(sid_own(sid)).map(i64::from);
        let pid = match own_pid {
            Some(p) if !self.used_pids.contains(&p) => p,
            _ => {
                self.next_pid += 1;
                self.next_pid
            }
        };
        self.used_pids.insert(pid);
        self.stats.processes += 1;
        let track = Self::new_track(&mut self.next_track);
        self.sink.event(&TEvent::Track(Track {
            id: track,
            parent: None,
            kind: TrackKind::Process { pid },
            name: None,
            sort_index: None,
        }))?;
        if has_sid {
            // The session (first SID component), this process and its
            // parent: sinks that link traces (OTLP) derive ids from them.
            self.sink.event(&TEvent::TrackOrigin {
                track,
                trace: sid_root(sid),
                span: sid_own(sid),
                parent: sid_parent(sid).map(sid_own),
            })?;
        }
        let flow = match (sid_parent(sid), own_pid) {
            (Some(parent), Some(p)) if has_sid => Some(flow_id(parent, p)),
            _ => None,
        };
        self.procs
            .insert(sid.into(), ProcTrack::new(pid, track, 0, flow));
        Ok(())
    }

    /// A record of `parent`'s SID after it ended, while it waits with
    /// children pending: the fork takes over the children it reaps, and
    /// the parent closes.
    fn fork_open(&mut self, sid: &[u8], mut parent: ProcTrack, ev: &Event<'_>) -> io::Result<()> {
        let inherit = parent.inherit();
        let mut pending: Vec<(i64, PendingChild)> = parent.children.drain().collect();
        pending.sort_by_key(|(_, c)| c.ts);
        close(
            &mut self.sink,
            &mut self.next_track,
            &mut self.stats,
            parent,
        )?;
        self.fork(sid, inherit, pending, ev)
    }

    /// Starts the process that goes on under `sid` after the one described
    /// by `inherit` ended, with the children it takes over.
    fn fork(
        &mut self,
        sid: &[u8],
        inherit: Inherit,
        children: Vec<(i64, PendingChild)>,
        ev: &Event<'_>,
    ) -> io::Result<()> {
        // The SID's pid is the parent's; the fork's own is not in the trace.
        self.next_pid += 1;
        let pid = self.next_pid;
        self.used_pids.insert(pid);
        self.stats.processes += 1;
        self.stats.forks += 1;
        let fork = inherit.fork + 1;
        let track = Self::new_track(&mut self.next_track);
        self.sink.event(&TEvent::Track(Track {
            id: track,
            parent: None,
            kind: TrackKind::Process { pid },
            name: None,
            sort_index: None,
        }))?;
        if ev.sid.is_some() {
            // A span of its own under the parent's: `<own>#fork<n>` names
            // no real SID component (git's have no `#`).
            let own = sid_own(sid);
            let mut span = own.to_vec();
            span.extend_from_slice(format!("#fork{fork}").as_bytes());
            self.sink.event(&TEvent::TrackOrigin {
                track,
                trace: sid_root(sid),
                span: &span,
                parent: Some(own),
            })?;
        }
        // It exists from the fork, before its first record and before its
        // parent ended (daemonize() exits the parent right after forking):
        // its slice starts where the parent's ended, or at its first
        // record if that is earlier.
        let first = ts_of(&ev.time).or_else(|| {
            let a = ev.body.t_abs()?;
            Some(inherit.base? + a.0)
        });
        let start = first.map_or(inherit.last, |t| t.min(inherit.last));
        let mut p = ProcTrack::new(pid, track, fork, None);
        p.argv = inherit.argv;
        p.cmd = inherit.cmd;
        p.base = inherit.base;
        p.start = Some(start);
        p.last = start;
        let sink = &mut self.sink;
        let next_track = &mut self.next_track;
        let name = p.track_name();
        sink.event(&TEvent::TrackName {
            track: p.track,
            name: &name,
        })?;
        open_process_slice(sink, next_track, &mut p)?;
        // The regions the forking thread had open go on in the fork.
        let ti = thread_index(sink, next_track, &mut p, &inherit.thread)?;
        for (nesting, name, category) in &inherit.regions {
            sink.event(&TEvent::Begin {
                track: p.threads[ti].track,
                ts: start,
                name: Name::text(name),
                category,
                args: &[
                    ("nesting", Value::Int(*nesting)),
                    ("inherited", Value::Bool(true)),
                ],
                flows: &[],
            })?;
            p.threads[ti].push(*nesting, name, category);
        }
        for (id, mut c) in children {
            c.lane = take_lane(sink, next_track, &mut p)?;
            p.children.insert(id, c);
        }
        self.procs.insert(sid.into(), p);
        Ok(())
    }

    /// After `atexit`/`signal`: the process closes, and what a fork would
    /// inherit is kept; with children pending, it waits open for a fork
    /// to take them.
    fn ended(&mut self, sid: &[u8], thread: &[u8]) -> io::Result<()> {
        let Some(p) = self.procs.get_mut(sid) else {
            return Ok(());
        };
        p.ended = Some(thread.into());
        if !p.children.is_empty() {
            self.waiting.push_back((sid.into(), p.fork));
            while self.waiting.len() > ENDED_WAITING {
                let Some((old, fork)) = self.waiting.pop_front() else {
                    break;
                };
                // Unless a fork took over meanwhile.
                let still = self
                    .procs
                    .get(&old)
                    .is_some_and(|p| p.ended.is_some() && p.fork == fork);
                if still {
                    self.close_ended(&old)?;
                }
            }
            return Ok(());
        }
        self.close_ended(sid)
    }

    /// Closes an ended process, keeping what a fork would inherit.
    fn close_ended(&mut self, sid: &[u8]) -> io::Result<()> {
        let Some(p) = self.procs.remove(sid) else {
            return Ok(());
        };
        let inherit = p.inherit();
        close(&mut self.sink, &mut self.next_track, &mut self.stats, p)?;
        self.gone_serial += 1;
        let serial = self.gone_serial;
        self.gone.insert(sid.into(), (serial, inherit));
        self.gone_order.push_back((sid.into(), serial));
        while self.gone_order.len() > ENDED_KEPT {
            let Some((old, serial)) = self.gone_order.pop_front() else {
                break;
            };
            // Unless the SID ended again since (a later entry).
            if self.gone.get(&old).is_some_and(|(s, _)| *s == serial) {
                self.gone.remove(&old);
            }
        }
        Ok(())
    }

    /// Adds one event.
    #[allow(clippy::collapsible_match)] // one arm per event kind reads best
    pub fn add(&mut self, ev: &Event<'_>) -> io::Result<()> {
        self.start(&ev.time)?;
        let synthetic;
        let sid: &[u8] = match &ev.sid {
            Some(s) => s,
            None => {
                synthetic = self.synthetic.sid_for(ev);
                &synthetic
            }
        };
        // A record of a SID whose process ended: another process, forked
        // from it.
        match self.procs.get(sid) {
            Some(p) if p.ended.is_some() => {
                let parent = self.procs.remove(sid).expect("found above");
                self.fork_open(sid, parent, ev)?;
            }
            Some(_) => {}
            None => match self.gone.remove(sid) {
                Some((_, inherit)) => self.fork(sid, inherit, Vec::new(), ev)?,
                None => self.new_process(sid, ev.sid.is_some())?,
            },
        }
        let p = self.procs.get_mut(sid).expect("inserted above");
        // Time of this event.
        let t_abs = ev.body.t_abs().map(|t| t.0);
        let ts = match (ts_of(&ev.time), t_abs) {
            (Some(ts), Some(a)) => {
                if p.base.is_none() {
                    p.base = Some(ts - a);
                }
                ts
            }
            (Some(ts), None) => ts,
            (None, Some(a)) => match p.base {
                Some(b) => b + a,
                None => p.last,
            },
            (None, None) => {
                if p.start.is_none() {
                    self.stats.untimed += 1;
                }
                p.last
            }
        };
        if p.start.is_none() {
            p.start = Some(ts);
        }
        p.last = p.last.max(ts);
        let sink = &mut self.sink;
        let next_track = &mut self.next_track;
        let thread_name: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        let ti = thread_index(sink, next_track, p, thread_name)?;
        let track = p.threads[ti].track;
        let stats = &mut self.stats;
        let warnings = &mut self.warnings;
        let position = self.position;
        let sid_for_flows = sid;
        match &ev.body {
            Body::Start { argv, .. } => p.argv = joined(argv),
            // The first cmd_name names the process and its slice (an alias
            // or a dashed command logs more, the slice is open by then).
            Body::CmdName { name, .. } if p.cmd.is_none() => {
                p.cmd = Some(name.to_vec());
                let n = p.track_name();
                sink.event(&TEvent::TrackName {
                    track: p.track,
                    name: &n,
                })?;
                open_process_slice(sink, next_track, p)?;
            }
            Body::RegionEnter(r) => {
                open_process_slice(sink, next_track, p)?;
                let name: &[u8] = r
                    .label
                    .as_deref()
                    .or(r.category.as_deref())
                    .unwrap_or(b"region");
                let mut args: Vec<(&str, Value<'_>)> = vec![("nesting", Value::Int(r.nesting))];
                if let Some(m) = &r.msg {
                    args.push(("msg", Value::Str(m)));
                }
                if let Some(repo) = ev.repo {
                    args.push(("repo", Value::Int(repo)));
                }
                sink.event(&TEvent::Begin {
                    track,
                    ts,
                    name: Name::text(name),
                    category: r.category.as_deref().unwrap_or(b""),
                    args: &args,
                    flows: &[],
                })?;
                p.threads[ti].push(r.nesting, name, r.category.as_deref().unwrap_or(b""));
            }
            Body::RegionLeave { region, t_rel } => {
                let t = &mut p.threads[ti];
                let innermost = |t: &ThreadTrack| t.open.last().map(|r| r.nesting);
                // A region to close at this nesting or above it (regions
                // deeper than the leave's were left open: closed first).
                let matched = innermost(t).is_some_and(|n| n >= region.nesting)
                    && t.open.iter().any(|r| r.nesting <= region.nesting);
                if matched {
                    // Close regions left open below this one first.
                    while innermost(t).is_some_and(|n| n > region.nesting) {
                        t.pop();
                        stats.closed_at_end += 1;
                        sink.event(&TEvent::End {
                            track,
                            ts,
                            args: &[],
                        })?;
                    }
                    t.pop();
                    stats.region_slices += 1;
                    sink.event(&TEvent::End {
                        track,
                        ts,
                        args: &[("t_rel_s", Value::Float(t_rel.as_secs_f64()))],
                    })?;
                } else {
                    // Nothing open to close: drawn where it happened.
                    stats.unmatched_leaves += 1;
                    stats.instants += 1;
                    let name: &[u8] = region
                        .label
                        .as_deref()
                        .or(region.category.as_deref())
                        .unwrap_or(b"region");
                    sink.event(&TEvent::Instant {
                        track,
                        ts,
                        name: Name::text(name),
                        category: region.category.as_deref().unwrap_or(b""),
                        scope: Scope::Thread,
                        args: &[
                            ("nesting", Value::Int(region.nesting)),
                            ("t_rel_s", Value::Float(t_rel.as_secs_f64())),
                            ("no_region_enter", Value::Bool(true)),
                        ],
                    })?;
                    warnings.push(
                        position,
                        format!(
                            "'region_leave' of '{}' on thread '{}': no region is open there (drawn as an instant)",
                            String::from_utf8_lossy(name),
                            String::from_utf8_lossy(thread_name)
                        ),
                    );
                }
            }
            Body::ChildStart {
                child_id,
                child_class,
                hook_name,
                argv,
                ..
            } => {
                let class = child_class.as_deref().unwrap_or(b"?").to_vec();
                let name = child_slice_name(hook_name.as_deref(), argv, &class);
                // Children get lanes of their own: a child often outlives
                // the region it was started in, and parallel children
                // overlap, which one track cannot show nested. Each open
                // child holds a lane; a lane is free once its child exited.
                let lane = take_lane(sink, next_track, p)?;
                p.children.insert(
                    *child_id,
                    PendingChild {
                        ts,
                        lane,
                        name,
                        class,
                        argv: joined(argv),
                    },
                );
            }
            Body::ChildExit {
                child_id,
                pid: child_pid,
                code,
                t_rel,
                ..
            } => {
                if let Some(c) = p.children.remove(child_id) {
                    stats.child_slices += 1;
                    let flows = [Flow {
                        id: flow_id(sid_for_flows, *child_pid),
                        terminating: false,
                    }];
                    sink.event(&TEvent::Complete {
                        track: p.lanes[c.lane],
                        ts: c.ts,
                        dur: (ts - c.ts).max(0),
                        name: Name::text(&c.name),
                        category: b"child",
                        args: &[
                            ("class", Value::Str(&c.class)),
                            ("argv", Value::Str(&c.argv)),
                            ("pid", Value::Int(*child_pid)),
                            ("code", Value::Int(*code)),
                            ("t_rel_s", Value::Float(t_rel.as_secs_f64())),
                        ],
                        flows: if ev.sid.is_some() { &flows } else { &[] },
                    })?;
                } else {
                    // No child_start to pair it with: drawn where it
                    // happened.
                    stats.unmatched_child_exits += 1;
                    stats.instants += 1;
                    sink.event(&TEvent::Instant {
                        track,
                        ts,
                        name: Name::text(b"child_exit"),
                        category: b"child",
                        scope: Scope::Thread,
                        args: &[
                            ("child_id", Value::Int(*child_id)),
                            ("pid", Value::Int(*child_pid)),
                            ("code", Value::Int(*code)),
                            ("t_rel_s", Value::Float(t_rel.as_secs_f64())),
                            ("no_child_start", Value::Bool(true)),
                        ],
                    })?;
                    warnings.push(
                        position,
                        format!(
                            "'child_exit' of child {child_id} (pid {child_pid}): its process logged no 'child_start' for it (drawn as an instant)"
                        ),
                    );
                }
            }
            Body::Data {
                nesting,
                category,
                key,
                value,
                ..
            } => {
                stats.instants += 1;
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(key),
                    category: category.as_deref().unwrap_or(b"data"),
                    scope: Scope::Thread,
                    args: &[
                        ("value", Value::Str(value)),
                        ("nesting", Value::Int(*nesting)),
                    ],
                })?;
            }
            Body::DataJson {
                nesting,
                category,
                key,
                value,
                ..
            } => {
                stats.instants += 1;
                let v = if valid_json(value) {
                    Value::Json(value)
                } else {
                    Value::Str(value)
                };
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(key),
                    category: category.as_deref().unwrap_or(b"data"),
                    scope: Scope::Thread,
                    args: &[("value", v), ("nesting", Value::Int(*nesting))],
                })?;
            }
            Body::Error { msg, fmt } => {
                stats.instants += 1;
                let mut args = Vec::new();
                if let Some(m) = msg {
                    args.push(("msg", Value::Str(m)));
                }
                if let Some(f) = fmt {
                    args.push(("fmt", Value::Str(f)));
                }
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(b"error"),
                    category: b"error",
                    scope: Scope::Thread,
                    args: &args,
                })?;
            }
            Body::Counter {
                category,
                name,
                count,
                ..
            } => {
                stats.counters += 1;
                let mut n = category.to_vec();
                n.push(b'/');
                n.extend_from_slice(name);
                let counter = match p.counters.get(&n) {
                    Some(&id) => id,
                    None => {
                        let id = Self::new_track(next_track);
                        sink.event(&TEvent::Track(Track {
                            id,
                            parent: Some(p.track),
                            kind: TrackKind::Counter {
                                pid: p.pid,
                                series: "count",
                            },
                            name: Some(&n),
                            sort_index: None,
                        }))?;
                        p.counters.insert(n, id);
                        id
                    }
                };
                sink.event(&TEvent::Counter {
                    track: counter,
                    ts,
                    value: *count as f64,
                })?;
            }
            Body::Timer {
                category,
                name,
                intervals,
                t_total,
                t_min,
                t_max,
                ..
            } => {
                stats.instants += 1;
                let mut n = category.to_vec();
                n.push(b'/');
                n.extend_from_slice(name);
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(&n),
                    category: b"timer",
                    scope: Scope::Thread,
                    args: &[
                        ("intervals", Value::Int(*intervals)),
                        ("total_s", Value::Float(t_total.as_secs_f64())),
                        ("min_s", Value::Float(t_min.as_secs_f64())),
                        ("max_s", Value::Float(t_max.as_secs_f64())),
                    ],
                })?;
            }
            Body::Exit { code, .. } => {
                p.exit = Some(("exit", *code));
                stats.instants += 1;
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(b"exit"),
                    category: b"process",
                    scope: Scope::Process,
                    args: &[("code", Value::Int(*code))],
                })?;
            }
            Body::AtExit { code, .. } => {
                if p.exit.is_none() {
                    p.exit = Some(("exit", *code));
                }
            }
            Body::Signal { signo, .. } => {
                p.exit = Some(("signal", *signo));
                stats.instants += 1;
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(b"signal"),
                    category: b"process",
                    scope: Scope::Process,
                    args: &[("signo", Value::Int(*signo))],
                })?;
            }
            Body::Exec { argv, .. } => {
                p.exit = Some(("exec", 0));
                stats.instants += 1;
                let a = joined(argv);
                sink.event(&TEvent::Instant {
                    track,
                    ts,
                    name: Name::text(b"exec"),
                    category: b"process",
                    scope: Scope::Process,
                    args: &[("argv", Value::Str(&a))],
                })?;
            }
            _ => {}
        }
        if ends_process(ev.kind()) {
            // A fork may still write under the SID.
            let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
            self.ended(sid, thread)?;
        } else if matches!(ev.body, Body::Exec { .. }) {
            // The image is replaced (its successor has a SID of its own).
            if let Some(p) = self.procs.remove(sid) {
                close(&mut self.sink, &mut self.next_track, &mut self.stats, p)?;
            }
        }
        Ok(())
    }

    /// Closes processes that never ended and hands the sink back.
    pub fn finish(mut self) -> io::Result<(S, MapStats)> {
        self.start(&None)?;
        let mut rest: Vec<ProcTrack> = self.procs.drain().map(|(_, p)| p).collect();
        rest.sort_by_key(|p| p.pid);
        for p in rest {
            close(&mut self.sink, &mut self.next_track, &mut self.stats, p)?;
        }
        self.sink.finish()?;
        Ok((self.sink, self.stats))
    }
}

/// The thread track of `name` in `p`, declared on first use.
fn thread_index<S: Sink>(
    sink: &mut S,
    next_track: &mut TrackId,
    p: &mut ProcTrack,
    name: &[u8],
) -> io::Result<usize> {
    if let Some(i) = p.threads.iter().position(|t| &*t.name == name) {
        return Ok(i);
    }
    let tid = if name == b"main" {
        1
    } else {
        p.threads.len() as i64 + 2
    };
    let id = *next_track;
    *next_track += 1;
    sink.event(&TEvent::Track(Track {
        id,
        parent: Some(p.track),
        // Trace2 names threads; their numbers are ours, not the system's,
        // so they are lanes of the process.
        kind: TrackKind::Lane {
            pid: p.pid,
            lane: tid,
        },
        name: Some(name),
        sort_index: Some(tid),
    }))?;
    p.threads.push(ThreadTrack {
        name: name.into(),
        track: id,
        open: Vec::new(),
        names: Vec::new(),
    });
    Ok(p.threads.len() - 1)
}

/// Opens the process slice on the main thread, once: at `cmd_name` (which
/// names it), or before the first region, or at the end.
fn open_process_slice<S: Sink>(
    sink: &mut S,
    next_track: &mut TrackId,
    p: &mut ProcTrack,
) -> io::Result<()> {
    if p.opened {
        return Ok(());
    }
    p.opened = true;
    let main = thread_index(sink, next_track, p, b"main")?;
    let name: &[u8] = p.cmd.as_deref().unwrap_or(b"git");
    let flows = p.flow.map(|id| Flow {
        id,
        terminating: true,
    });
    let fork = [
        ("argv", Value::Str(&p.argv)),
        ("fork", Value::Int(i64::from(p.fork))),
    ];
    sink.event(&TEvent::Begin {
        track: p.threads[main].track,
        ts: p.start.unwrap_or(p.last),
        name: Name::text(name),
        category: b"process",
        // A forked process says which (the first one has no such arg).
        args: if p.fork > 0 { &fork } else { &fork[..1] },
        flows: flows.as_slice(),
    })
}

/// What a child slice is called: the hook, the git subcommand, or the
/// program.
fn child_slice_name(hook: Option<&[u8]>, argv: &[crate::event::Text<'_>], class: &[u8]) -> Vec<u8> {
    let mut name = b"child ".to_vec();
    match (hook, argv.first()) {
        (Some(h), _) => {
            name.extend_from_slice(b"hook:");
            name.extend_from_slice(h);
        }
        (None, Some(a0)) if &a0[..] == b"git" => {
            name.extend_from_slice(b"git");
            if let Some(sub) = argv.get(1).filter(|a| !a.starts_with(b"-")) {
                name.push(b' ');
                name.extend_from_slice(sub);
            }
        }
        (None, Some(a0)) => {
            // A shell command line: its first word.
            let a0 = match memchr::memchr(b' ', a0) {
                Some(i) => &a0[..i],
                None => &a0[..],
            };
            let base = match memchr::memrchr(b'/', a0) {
                Some(i) => &a0[i + 1..],
                None => a0,
            };
            name.extend_from_slice(base);
        }
        (None, None) => name.extend_from_slice(class),
    }
    name
}

/// Closes what is open in a process, ends its slice and its tracks.
fn close<S: Sink>(
    sink: &mut S,
    next_track: &mut TrackId,
    stats: &mut MapStats,
    mut p: ProcTrack,
) -> io::Result<()> {
    if p.cmd.is_none() {
        let n = p.track_name();
        sink.event(&TEvent::TrackName {
            track: p.track,
            name: &n,
        })?;
    }
    open_process_slice(sink, next_track, &mut p)?;
    for t in &p.threads {
        for _ in &t.open {
            stats.closed_at_end += 1;
            sink.event(&TEvent::End {
                track: t.track,
                ts: p.last,
                args: &[("unclosed", Value::Bool(true))],
            })?;
        }
    }
    let mut pending: Vec<&PendingChild> = p.children.values().collect();
    pending.sort_by_key(|c| c.lane);
    for c in pending {
        stats.child_slices += 1;
        sink.event(&TEvent::Complete {
            track: p.lanes[c.lane],
            ts: c.ts,
            dur: (p.last - c.ts).max(0),
            name: Name::text(&c.name),
            category: b"child",
            args: &[
                ("class", Value::Str(&c.class)),
                ("argv", Value::Str(&c.argv)),
                ("no_child_exit", Value::Bool(true)),
            ],
            flows: &[],
        })?;
    }
    let (end_kind, code) = match p.exit {
        Some((k, c)) => (k, Some(c)),
        None => ("none (crashed, killed or cut off)", None),
    };
    let mut args = vec![("end", Value::Str(end_kind.as_bytes()))];
    if let Some(c) = code {
        let key = if end_kind == "signal" {
            "signo"
        } else {
            "code"
        };
        args.push((key, Value::Int(c)));
    }
    if p.flow.is_some() {
        stats.flows += 1;
    }
    let main = p
        .threads
        .iter()
        .find(|t| &*t.name == b"main")
        .map(|t| t.track);
    if let Some(main) = main {
        sink.event(&TEvent::End {
            track: main,
            ts: p.last,
            args: &args,
        })?;
    }
    for t in p
        .threads
        .iter()
        .map(|t| t.track)
        .chain(p.lanes.iter().copied())
    {
        sink.event(&TEvent::TrackDone { track: t })?;
    }
    for &c in p.counters.values() {
        sink.event(&TEvent::TrackDone { track: c })?;
    }
    sink.event(&TEvent::TrackDone { track: p.track })
}

/// Maps a whole input to `sink`. Records that do not parse are counted in
/// `warnings` with their line number, and skipped; records the mapping
/// cannot place as the model wants are drawn as instants and counted in
/// the [`MapStats`] (`unmatched_leaves`, `unmatched_child_exits`).
pub fn map_bytes<S: Sink>(
    data: &[u8],
    format: Format,
    source: &str,
    sink: S,
    warnings: &mut Warnings,
) -> io::Result<(S, MapStats)> {
    map_with(data, format, source, sink, warnings, |_| {})
}

/// [`map_bytes`] on a memory map, handing pages back to the kernel once
/// mapped so that resident memory stays small.
pub fn map_mmap<S: Sink>(
    map: &memmap2::Mmap,
    format: Format,
    source: &str,
    sink: S,
    warnings: &mut Warnings,
) -> io::Result<(S, MapStats)> {
    map_with(map, format, source, sink, warnings, |r| {
        release_pages(map, r)
    })
}

fn map_with<S: Sink>(
    data: &[u8],
    format: Format,
    source: &str,
    sink: S,
    warnings: &mut Warnings,
    consumed: impl Fn(std::ops::Range<usize>),
) -> io::Result<(S, MapStats)> {
    let mut tl = Trace2Timeline::new(sink, source);
    for_each_in(data, format, consumed, |rec| {
        match rec.parse_or_warn(format, warnings) {
            Some(ev) => tl.add(&ev),
            None => Ok(()),
        }
    })?;
    tl.finish()
}
