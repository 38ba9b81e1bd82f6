//! `tracekit report` for Git Trace2: session trees, per-command latency
//! distributions and region costs.
//!
//! Events are fed one at a time to a [`ReportBuilder`] (from any number of
//! files, in any order of processes: lines of parents and children
//! interleave). Processes are grouped into *sessions* by the first component
//! of their SID (every process started under one top-level git command
//! shares it); inside a session, a process's parent is the process whose SID
//! is its own minus the last `/` component.
//!
//! A SID can stand for several processes: git's `daemonize()` (`git
//! maintenance run --detach`) forks, and the child goes on writing under
//! its parent's SID after the parent's `atexit` (see
//! [`crate::event::ends_process`]). A record of a SID whose process ended
//! starts the next process of that SID (its `fork` number is one more),
//! which inherits the command, the version and the regions open on the
//! thread that ended the parent; a `child_exit` whose `child_start` the
//! parent logged (the child's records can come before the parent's
//! `atexit`) takes that child over. The report lists it under `forked`.
//!
//! **Architecture Invariant:** memory is bounded by the open sessions plus
//! the `top` slowest finished ones. A session whose processes have all ended
//! waits in a short queue (children traced to other files, detached
//! `gc --auto`, may still arrive) and is then folded into the aggregates
//! (per-command durations, region totals by category/label, error groups)
//! and dropped, unless it is among the slowest `top`. Per-process detail is
//! capped (regions are merged by their path, data/children/errors lists have
//! a limit and count what they leave out).
//!
//! **API Boundary:** [`ReportBuilder::add`] takes parsed [`Event`]s from any
//! format; [`report_bytes`]/[`report_mmap`] parse a whole EVENT/PERF/NORMAL
//! input (EVENT in parallel); [`write_text`] and `serde` render the
//! [`Report`].

use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Write};
use std::sync::mpsc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use serde::Serialize;
use tracekit_core::{Position, Warnings};

use crate::event::{sid_own, sid_parent, sid_pid, sid_root, Body, Event, Time};
use crate::reader::{for_each_in, Format, RecordIter};
use crate::time::{Micros, UnixMicros};

mod apply;
mod assemble;
mod fast_region;
mod model;
mod rows;
#[cfg(test)]
mod tests;
mod text;
mod whole_input;

use apply::{apply, apply_region};
use assemble::session_report;
pub(crate) use fast_region::{fast_region, RegionLine};
pub use model::*;
pub use rows::ProcessRow;
pub use text::write_text;
pub use whole_input::{report_bytes, report_mmap};

/// Which input a process was read from (see [`ReportBuilder::source`]).
pub type SourceId = u32;

/// Sessions whose processes all ended wait this long (in sessions ended
/// after them) before being folded: a child traced to another file of a
/// directory target, or a detached child, may still show up.
const PENDING_SESSIONS: usize = 256;
/// Per-process caps on detail lists.
const MAX_CHILDREN: usize = 200;
const MAX_DATA: usize = 100;
const MAX_ERRORS: usize = 50;
const MAX_REGION_NODES: usize = 2000;
const MAX_COUNTERS: usize = 200;
/// Regions listed per command.
pub const REGIONS_PER_COMMAND: usize = 5;
/// Folded session roots remembered to recognise late processes.
const FOLDED_MEMORY: usize = 1 << 16;
/// Distinct error formats kept in the aggregate.
const MAX_ERROR_GROUPS: usize = 10_000;

// ---------------------------------------------------------------------------
// Builder state.

/// An owned byte string (git does not promise UTF-8).
type Bytes = Box<[u8]>;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn secs(m: i64) -> f64 {
    Micros(m).as_secs_f64()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    None,
    /// `exit` seen, waiting for `atexit`.
    Exit,
    AtExit,
    Signal,
    Exec,
}

struct RegionSlot {
    parent: u32,
    category: Box<[u8]>,
    label: Box<[u8]>,
    count: u64,
    total: i64,
    self_time: i64,
    max: i64,
    children: Vec<u32>,
}

struct Frame {
    node: u32,
    nesting: i64,
    child_time: i64,
}

struct ThreadState {
    name: Box<[u8]>,
    /// Index of the thread's root slot in `ProcState::regions`.
    root: u32,
    stack: Vec<Frame>,
}

struct ChildState {
    child_id: i64,
    class: Option<Box<[u8]>>,
    hook: Option<Box<[u8]>>,
    argv: Vec<Box<[u8]>>,
    pid: Option<i64>,
    code: Option<i64>,
    elapsed: Option<i64>,
    /// Wall-clock start (EVENT `time`), to match a child run through a
    /// shell (whose pid is the shell's) by its SID's start time.
    start_unix: Option<i64>,
    use_shell: bool,
}

struct ProcState {
    sid: Box<[u8]>,
    /// 0 for the process that made the SID, n for the n-th process that
    /// went on under it after the previous one ended (a forked child).
    fork: u32,
    source: SourceId,
    seq: u64,
    version: Option<Box<[u8]>>,
    argv: Vec<Box<[u8]>>,
    cmd_name: Option<Box<[u8]>>,
    hierarchy: Option<Box<[u8]>>,
    cmd_mode: Option<Box<[u8]>>,
    alias: Option<(Bytes, Vec<Bytes>)>,
    end: End,
    /// The thread that wrote `atexit`/`signal`: a forked child goes on
    /// with its open regions.
    end_thread: Option<Box<[u8]>>,
    exit_code: Option<i64>,
    signal: Option<i64>,
    elapsed: Option<i64>,
    /// Latest `t_abs` seen (for the span of unfinished processes).
    last_t_abs: i64,
    children: Vec<ChildState>,
    children_omitted: u64,
    threads: Vec<ThreadState>,
    regions: Vec<RegionSlot>,
    regions_dropped: u64,
    data: Vec<DataItem>,
    data_omitted: u64,
    counters: Vec<CounterItem>,
    timers: Vec<TimerItem>,
    errors: Vec<String>,
    errors_omitted: u64,
    /// Errors for the aggregate: (format, message).
    error_keys: Vec<(Bytes, Bytes)>,
}

impl ProcState {
    fn new(sid: &[u8], source: SourceId, seq: u64) -> Self {
        ProcState {
            sid: sid.into(),
            fork: 0,
            source,
            seq,
            version: None,
            argv: Vec::new(),
            cmd_name: None,
            hierarchy: None,
            cmd_mode: None,
            alias: None,
            end: End::None,
            end_thread: None,
            exit_code: None,
            signal: None,
            elapsed: None,
            last_t_abs: 0,
            children: Vec::new(),
            children_omitted: 0,
            threads: Vec::new(),
            regions: Vec::new(),
            regions_dropped: 0,
            data: Vec::new(),
            data_omitted: 0,
            counters: Vec::new(),
            timers: Vec::new(),
            errors: Vec::new(),
            errors_omitted: 0,
            error_keys: Vec::new(),
        }
    }

    fn ended(&self) -> bool {
        matches!(self.end, End::AtExit | End::Signal | End::Exec)
    }

    /// Nothing more comes from this process: a record of its SID is from a
    /// process forked from it.
    fn ended_for_good(&self) -> bool {
        matches!(self.end, End::AtExit | End::Signal)
    }

    fn thread(&mut self, name: &[u8]) -> usize {
        if let Some(i) = self.threads.iter().position(|t| &*t.name == name) {
            return i;
        }
        let root = self.regions.len() as u32;
        self.regions.push(RegionSlot {
            parent: u32::MAX,
            category: Box::default(),
            label: name.into(),
            count: 0,
            total: 0,
            self_time: 0,
            max: 0,
            children: Vec::new(),
        });
        self.threads.push(ThreadState {
            name: name.into(),
            root,
            stack: Vec::new(),
        });
        self.threads.len() - 1
    }

    fn child_slot(&mut self, parent: u32, category: &[u8], label: &[u8]) -> Option<u32> {
        let p = &self.regions[parent as usize];
        for &c in &p.children {
            let s = &self.regions[c as usize];
            if &*s.category == category && &*s.label == label {
                return Some(c);
            }
        }
        if self.regions.len() >= MAX_REGION_NODES {
            return None;
        }
        let idx = self.regions.len() as u32;
        self.regions.push(RegionSlot {
            parent,
            category: category.into(),
            label: label.into(),
            count: 0,
            total: 0,
            self_time: 0,
            max: 0,
            children: Vec::new(),
        });
        self.regions[parent as usize].children.push(idx);
        Some(idx)
    }

    /// Elapsed time if it ended, else the latest time seen.
    fn span(&self) -> i64 {
        self.elapsed.unwrap_or(self.last_t_abs)
    }
}

struct Session {
    root: Box<[u8]>,
    seq: u64,
    procs: Vec<ProcState>,
    open: u32,
    /// Bumped whenever the session gets a new process, so a stale entry in
    /// the pending queue is recognised.
    generation: u64,
}

#[derive(Default)]
struct CommandAgg {
    durations: Vec<i64>,
    failed: u64,
    unfinished: u64,
    regions: HashMap<(Bytes, Bytes), RegionAgg>,
}

#[derive(Default)]
struct RegionAgg {
    count: u64,
    total: i64,
    self_time: i64,
    max: i64,
}

struct Shown {
    elapsed: i64,
    seq: u64,
    report: SessionReport,
}

impl PartialEq for Shown {
    fn eq(&self, o: &Self) -> bool {
        (self.elapsed, self.seq) == (o.elapsed, o.seq)
    }
}
impl Eq for Shown {}
impl PartialOrd for Shown {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Shown {
    // Reversed so that the BinaryHeap's top is the fastest shown session
    // (the one to evict); among equals the later one goes first.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.elapsed, self.seq).cmp(&(self.elapsed, o.seq))
    }
}

/// Processes without a SID (PERF, NORMAL): attributed to the most recent
/// open process at the event's depth (PERF) or to the most recent open
/// process (NORMAL), a new process starting at each `version`; with none
/// open, to the one that ended last there (a child forked from it goes on
/// writing after its parent's `atexit`).
#[derive(Default)]
pub(crate) struct SyntheticSids {
    /// Open processes: (depth, synthetic SID).
    open: Vec<(u32, Vec<u8>)>,
    /// The process that ended last, per depth (`None`: NORMAL's, which has
    /// no depth).
    ended: Vec<(Option<u32>, Vec<u8>)>,
    next: u64,
}

impl SyntheticSids {
    /// The SID to file `ev` under.
    pub(crate) fn sid_for(&mut self, ev: &Event<'_>) -> Vec<u8> {
        let depth = ev.depth;
        if matches!(ev.body, Body::Version { .. }) {
            self.next += 1;
            let d = depth.unwrap_or(0);
            let parent = if d > 0 {
                self.open.iter().rev().find(|(pd, _)| *pd + 1 == d)
            } else {
                None
            };
            let own = format!("process-{}", self.next);
            let sid = match parent {
                Some((_, p)) => [p.as_slice(), b"/", own.as_bytes()].concat(),
                None => own.into_bytes(),
            };
            self.open.push((d, sid.clone()));
            return sid;
        }
        let pos = match depth {
            Some(d) => self.open.iter().rposition(|(pd, _)| *pd == d),
            None => self.open.len().checked_sub(1),
        };
        let pos = match pos {
            Some(pos) => pos,
            None => {
                let Some(e) = self.ended.iter().position(|(d, _)| *d == depth) else {
                    return b"process-0".to_vec();
                };
                // A process forked from it goes on: open again (it may
                // start children of its own).
                let (d, sid) = self.ended.swap_remove(e);
                self.open.push((d.unwrap_or(0), sid));
                self.open.len() - 1
            }
        };
        if !crate::event::ends_process(ev.kind()) {
            return self.open[pos].1.clone();
        }
        let (d, sid) = self.open.remove(pos);
        let key = depth.map(|_| d);
        match self.ended.iter_mut().find(|(e, _)| *e == key) {
            Some(e) => e.1.clone_from(&sid),
            None => self.ended.push((key, sid.clone())),
        }
        sid
    }
}

/// Collects events into a [`Report`].
pub struct ReportBuilder {
    top: usize,
    sources: Vec<String>,
    events: u64,
    processes: u64,
    sessions: u64,
    unfinished: u64,
    late: u64,
    anomalies: Anomalies,
    seq: u64,
    /// Open sessions; `None` slots are free.
    slab: Vec<Option<Session>>,
    free: Vec<usize>,
    session_by_root: HashMap<Box<[u8]>, usize>,
    /// Full SID -> (slab slot, process index), for every open process.
    proc_index: HashMap<Box<[u8]>, (usize, usize)>,
    /// The process of the previous event: consecutive lines usually come
    /// from the same process, so most events skip hashing their SID.
    last: Option<(Vec<u8>, usize, usize)>,
    /// Quiescent sessions: (slot, generation when queued).
    pending: VecDeque<(usize, u64)>,
    /// Hashes of recently folded session roots (the last
    /// [`FOLDED_MEMORY`]), to recognise late processes.
    folded: HashSet<u64>,
    folded_order: VecDeque<u64>,
    commands: HashMap<(Bytes, Option<Bytes>), CommandAgg>,
    regions: HashMap<(Bytes, Bytes), RegionAgg>,
    errors: HashMap<Bytes, (u64, Bytes)>,
    errors_other: u64,
    shown: BinaryHeap<Shown>,
    synthetic: SyntheticSids,
    /// Called with every process as its session is folded (`on_process`).
    process_rows: Option<rows::ProcessHook>,
}

fn hash_bytes(b: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // A fixed-key hasher: the same root hashes the same in every run.
    let mut h =
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .build_hasher();
    h.write(b);
    h.finish()
}

impl ReportBuilder {
    /// `top`: how many sessions keep their full detail (the slowest).
    pub fn new(top: usize) -> Self {
        ReportBuilder {
            top,
            sources: Vec::new(),
            events: 0,
            processes: 0,
            sessions: 0,
            unfinished: 0,
            late: 0,
            anomalies: Anomalies::default(),
            seq: 0,
            slab: Vec::new(),
            free: Vec::new(),
            session_by_root: HashMap::default(),
            proc_index: HashMap::default(),
            last: None,
            pending: VecDeque::new(),
            folded: HashSet::default(),
            folded_order: VecDeque::new(),
            commands: HashMap::default(),
            regions: HashMap::default(),
            errors: HashMap::default(),
            errors_other: 0,
            shown: BinaryHeap::new(),
            synthetic: SyntheticSids::default(),
            process_rows: None,
        }
    }

    /// Registers an input name; processes read from it are labelled so.
    pub fn source(&mut self, name: &str) -> SourceId {
        self.sources.push(name.to_string());
        (self.sources.len() - 1) as SourceId
    }

    /// Adds one event.
    pub fn add(&mut self, ev: &Event<'_>, source: SourceId) {
        self.events += 1;
        let synthetic;
        let sid: &[u8] = match &ev.sid {
            Some(s) => s,
            None => {
                synthetic = self.synthetic.sid_for(ev);
                &synthetic
            }
        };
        let (slot, pi) = self.locate_live(sid, source);
        let Some(session) = self.slab[slot].as_mut() else {
            return;
        };
        if let Body::ChildExit { child_id, .. } = &ev.body {
            adopt_child(session, pi, *child_id);
        }
        let p = &mut session.procs[pi];
        let was_ended = p.ended();
        apply(p, ev, &mut self.anomalies);
        if was_ended && !p.ended() {
            // A failed exec: the process goes on.
            session.open += 1;
        } else if !was_ended && p.ended() {
            session.open -= 1;
            if session.open == 0 {
                self.pending.push_back((slot, session.generation));
                if self.pending.len() > PENDING_SESSIONS {
                    self.fold_oldest_pending();
                }
            }
        }
    }

    /// Adds a region event read by the fast path.
    fn add_region(&mut self, r: &RegionLine<'_>, source: SourceId) {
        self.events += 1;
        let (slot, pi) = self.locate_live(r.sid, source);
        if let Some(session) = self.slab[slot].as_mut() {
            apply_region(&mut session.procs[pi], r, &mut self.anomalies);
        }
    }

    /// The (slot, process) that writes under `sid` now: a process of its
    /// own after the SID's process ended (a forked child).
    fn locate_live(&mut self, sid: &[u8], source: SourceId) -> (usize, usize) {
        let (slot, pi) = self.locate(sid, source);
        let ended = self.slab[slot]
            .as_ref()
            .is_some_and(|s| s.procs[pi].ended_for_good());
        if !ended {
            return (slot, pi);
        }
        self.fork_process(slot, pi, source)
    }

    /// The next process of the SID of `(slot, pi)`, which ended: a child
    /// forked from it, with what it inherits.
    fn fork_process(&mut self, slot: usize, pi: usize, source: SourceId) -> (usize, usize) {
        self.processes += 1;
        self.seq += 1;
        let seq = self.seq;
        let s = self.slab[slot].as_mut().expect("live slot");
        let parent = &mut s.procs[pi];
        let mut child = ProcState::new(&parent.sid, source, seq);
        child.fork = parent.fork + 1;
        child.version = parent.version.clone();
        child.argv = parent.argv.clone();
        child.cmd_name = parent.cmd_name.clone();
        child.hierarchy = parent.hierarchy.clone();
        child.cmd_mode = parent.cmd_mode.clone();
        child.alias = parent.alias.clone();
        // t_abs counts from the same start: the clock is inherited.
        child.last_t_abs = parent.last_t_abs;
        // Only the forking thread lives on in the child, in the regions it
        // had open (git unwinds them in the parent at its exit).
        let forking = parent.end_thread.clone();
        if let Some(t) = forking
            .as_deref()
            .and_then(|n| parent.threads.iter().position(|t| &*t.name == n))
        {
            let frames = std::mem::take(&mut parent.threads[t].stack);
            let ct = child.thread(&parent.threads[t].name);
            for f in frames {
                let node = match parent.regions.get(f.node as usize) {
                    Some(r) => {
                        let up = child.threads[ct]
                            .stack
                            .last()
                            .map_or(child.threads[ct].root, |f| f.node);
                        if up == u32::MAX {
                            None
                        } else {
                            child.child_slot(up, &r.category.clone(), &r.label.clone())
                        }
                    }
                    None => None,
                };
                child.threads[ct].stack.push(Frame {
                    node: node.unwrap_or(u32::MAX),
                    nesting: f.nesting,
                    child_time: f.child_time,
                });
            }
        }
        let sid = child.sid.clone();
        s.procs.push(child);
        s.open += 1;
        s.generation = seq;
        let pi = s.procs.len() - 1;
        self.proc_index.insert(sid, (slot, pi));
        if let Some((_, a, b)) = &mut self.last {
            *a = slot;
            *b = pi;
        }
        (slot, pi)
    }

    /// The (slot, process) of `sid`, creating the process (and its
    /// session) on first sight.
    fn locate(&mut self, sid: &[u8], source: SourceId) -> (usize, usize) {
        if let Some((s, slot, pi)) = &self.last {
            if s.as_slice() == sid {
                return (*slot, *pi);
            }
        }
        let (slot, pi) = match self.proc_index.get(sid) {
            Some(&found) => found,
            None => self.new_process(sid, source),
        };
        match &mut self.last {
            Some((s, a, b)) => {
                s.clear();
                s.extend_from_slice(sid);
                *a = slot;
                *b = pi;
            }
            None => self.last = Some((sid.to_vec(), slot, pi)),
        }
        (slot, pi)
    }

    fn new_process(&mut self, sid: &[u8], source: SourceId) -> (usize, usize) {
        self.processes += 1;
        self.seq += 1;
        let seq = self.seq;
        let root = sid_root(sid);
        let slot = match self.session_by_root.get(root) {
            Some(&slot) => slot,
            None => {
                if self.folded.contains(&hash_bytes(root)) {
                    self.late += 1;
                }
                self.sessions += 1;
                let session = Session {
                    root: root.into(),
                    seq,
                    procs: Vec::new(),
                    open: 0,
                    generation: 0,
                };
                let slot = match self.free.pop() {
                    Some(s) => {
                        self.slab[s] = Some(session);
                        s
                    }
                    None => {
                        self.slab.push(Some(session));
                        self.slab.len() - 1
                    }
                };
                self.session_by_root.insert(root.into(), slot);
                slot
            }
        };
        let s = self.slab[slot].as_mut().expect("live slot");
        s.procs.push(ProcState::new(sid, source, seq));
        s.open += 1;
        s.generation = seq;
        let pi = s.procs.len() - 1;
        self.proc_index.insert(sid.into(), (slot, pi));
        (slot, pi)
    }

    fn fold_oldest_pending(&mut self) {
        while let Some((slot, generation)) = self.pending.pop_front() {
            let ready = self.slab[slot]
                .as_ref()
                .is_some_and(|s| s.generation == generation && s.open == 0);
            if ready {
                self.fold(slot);
                return;
            }
        }
    }

    fn fold(&mut self, slot: usize) {
        let Some(session) = self.slab[slot].take() else {
            return;
        };
        self.free.push(slot);
        self.last = None;
        self.session_by_root.remove(&session.root);
        let h = hash_bytes(&session.root);
        if self.folded.insert(h) {
            self.folded_order.push_back(h);
            if self.folded_order.len() > FOLDED_MEMORY {
                if let Some(old) = self.folded_order.pop_front() {
                    self.folded.remove(&old);
                }
            }
        }
        for p in &session.procs {
            self.proc_index.remove(&p.sid);
        }
        self.fold_session(session);
    }

    fn fold_session(&mut self, mut session: Session) {
        if let Some(hook) = self.process_rows.as_mut() {
            rows::emit(hook, &session, &self.sources);
        }
        for p in &mut session.procs {
            // Regions still open at the end of the process.
            for t in &mut p.threads {
                self.anomalies.unclosed_regions += t.stack.len() as u64;
                t.stack.clear();
            }
            if !p.ended() && p.end != End::Exit {
                self.unfinished += 1;
            }
            let key = (command_name(p), p.cmd_mode.clone());
            let agg = self.commands.entry(key).or_default();
            match p.elapsed {
                Some(e) => agg.durations.push(e),
                None => agg.unfinished += 1,
            }
            if p.exit_code.is_some_and(|c| c != 0) || p.signal.is_some() {
                agg.failed += 1;
            }
            for r in &p.regions {
                if r.parent == u32::MAX {
                    continue;
                }
                let key = (r.category.clone(), r.label.clone());
                for a in [
                    self.regions.entry(key.clone()).or_default(),
                    agg.regions.entry(key).or_default(),
                ] {
                    a.count += r.count;
                    a.total += r.total;
                    a.self_time += r.self_time;
                    a.max = a.max.max(r.max);
                }
            }
            for (fmt, msg) in p.error_keys.drain(..) {
                if let Some(e) = self.errors.get_mut(&fmt) {
                    e.0 += 1;
                } else if self.errors.len() < MAX_ERROR_GROUPS {
                    self.errors.insert(fmt, (1, msg));
                } else {
                    self.errors_other += 1;
                }
            }
        }
        if self.top == 0 {
            return;
        }
        let elapsed = session_elapsed(&session).unwrap_or(0);
        if self.shown.len() >= self.top {
            let fastest = self.shown.peek().map_or(0, |s| s.elapsed);
            if elapsed <= fastest {
                return;
            }
        }
        let report = session_report(&session, &self.sources);
        self.shown.push(Shown {
            elapsed,
            seq: session.seq,
            report,
        });
        if self.shown.len() > self.top {
            self.shown.pop();
        }
    }

    /// Folds the sessions still open and returns the report.
    pub fn finish(mut self) -> Report {
        let mut rest: Vec<Session> = self.slab.drain(..).flatten().collect();
        rest.sort_by_key(|s| s.seq);
        self.proc_index.clear();
        self.session_by_root.clear();
        for s in rest {
            self.fold_session(s);
        }
        let mut commands: Vec<CommandStats> = self
            .commands
            .into_iter()
            .map(|((name, mode), mut agg)| {
                agg.durations.sort_unstable();
                let q = |p: f64| -> Option<f64> {
                    let n = agg.durations.len();
                    if n == 0 {
                        return None;
                    }
                    // Nearest rank.
                    let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
                    Some(secs(agg.durations[rank - 1]))
                };
                CommandStats {
                    name: text(&name),
                    mode: mode.as_deref().map(text),
                    count: agg.durations.len() as u64 + agg.unfinished,
                    failed: agg.failed,
                    unfinished: agg.unfinished,
                    p50_s: q(0.50),
                    p90_s: q(0.90),
                    p99_s: q(0.99),
                    max_s: agg.durations.last().map(|d| secs(*d)),
                    total_s: secs(agg.durations.iter().sum()),
                    top_regions: region_totals(agg.regions, REGIONS_PER_COMMAND),
                }
            })
            .collect();
        commands.sort_by(|a, b| {
            b.total_s
                .total_cmp(&a.total_s)
                .then(b.count.cmp(&a.count))
                .then_with(|| (&a.name, &a.mode).cmp(&(&b.name, &b.mode)))
        });
        let regions = region_totals(self.regions, usize::MAX);
        let mut errors: Vec<ErrorGroup> = self
            .errors
            .into_iter()
            .map(|(f, (count, msg))| ErrorGroup {
                format: text(&f),
                count,
                example: text(&msg),
            })
            .collect();
        if self.errors_other > 0 {
            errors.push(ErrorGroup {
                format: "(other formats)".into(),
                count: self.errors_other,
                example: String::new(),
            });
        }
        errors.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.format.cmp(&b.format)));
        let mut shown: Vec<Shown> = self.shown.into_vec();
        shown.sort_by_key(|s| s.seq);
        Report {
            sources: self.sources,
            events: self.events,
            processes: self.processes,
            sessions: self.sessions,
            unfinished_processes: self.unfinished,
            late_processes: self.late,
            anomalies: self.anomalies,
            commands,
            regions,
            errors,
            sessions_shown: shown.into_iter().map(|s| s.report).collect(),
            top: self.top,
        }
    }
}

/// A `child_exit` in a forked process whose `child_start` an earlier
/// process of the SID logged (records the child wrote before its parent's
/// `atexit` are the parent's as far as EVENT can tell): the child moves to
/// the process that waited for it.
fn adopt_child(session: &mut Session, pi: usize, child_id: i64) {
    let p = &session.procs[pi];
    if p.fork == 0 || p.children.iter().any(|c| c.child_id == child_id) {
        return;
    }
    let found = (0..session.procs.len()).rev().find_map(|j| {
        let q = &session.procs[j];
        if j == pi || q.sid != p.sid || q.fork >= p.fork {
            return None;
        }
        q.children
            .iter()
            .position(|c| c.child_id == child_id && c.code.is_none())
            .map(|k| (j, k))
    });
    if let Some((j, k)) = found {
        let c = session.procs[j].children.remove(k);
        session.procs[pi].children.push(c);
    }
}

/// Region aggregates as a list by total time, longest first.
fn region_totals(map: HashMap<(Bytes, Bytes), RegionAgg>, limit: usize) -> Vec<RegionTotal> {
    let mut regions: Vec<RegionTotal> = map
        .into_iter()
        .map(|((c, l), a)| RegionTotal {
            category: text(&c),
            label: text(&l),
            count: a.count,
            total_s: secs(a.total),
            self_s: secs(a.self_time),
            max_s: secs(a.max),
        })
        .collect();
    regions.sort_by(|a, b| {
        b.total_s
            .total_cmp(&a.total_s)
            .then_with(|| (&a.category, &a.label).cmp(&(&b.category, &b.label)))
    });
    regions.truncate(limit);
    regions
}

/// `cmd_name`, else the program name from argv (`git-shell`, which execs
/// before naming a command), else `(none)`.
fn command_name(p: &ProcState) -> Bytes {
    if let Some(n) = &p.cmd_name {
        return n.clone();
    }
    match p.argv.first() {
        Some(a0) => {
            let base = match memchr::memrchr(b'/', a0) {
                Some(i) => &a0[i + 1..],
                None => a0,
            };
            [b"(".as_slice(), base, b")"].concat().into()
        }
        None => Box::from(&b"(none)"[..]),
    }
}

fn session_top(session: &Session) -> Option<&ProcState> {
    session
        .procs
        .iter()
        .min_by_key(|p| (memchr::memchr_iter(b'/', &p.sid).count(), p.seq))
}

fn session_elapsed(session: &Session) -> Option<i64> {
    let top = session_top(session)?;
    if let Some(e) = top.elapsed {
        if top.end != End::Exec {
            return Some(e);
        }
    }
    // The top process did not end (or exec'd): the span from the earliest
    // start to the latest time seen, by SID start times.
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for p in &session.procs {
        let start = UnixMicros::parse_sid(sid_own(&p.sid))?.0;
        lo = lo.min(start);
        hi = hi.max(start + p.span());
    }
    (hi >= lo).then_some(hi - lo)
}
