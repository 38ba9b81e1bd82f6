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

use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io::{self, Write};
use std::sync::mpsc;

use serde::Serialize;
use tracekit_core::{Position, Warnings};

use crate::event::{sid_own, sid_parent, Body, Event, Time};
use crate::reader::{for_each_in, Format, RecordIter};
use crate::time::{Micros, UnixMicros};

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
// Output model (what `--json` prints).

/// The result of a report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Input names, indexed by [`SourceId`].
    pub sources: Vec<String>,
    pub events: u64,
    pub processes: u64,
    pub sessions: u64,
    /// Processes with no `exit`, `atexit`, `signal` or `exec`: crashed,
    /// killed, still running, or cut off by the end of the input.
    pub unfinished_processes: u64,
    /// Processes that arrived after their session had been folded; they are
    /// counted as a session of their own.
    pub late_processes: u64,
    /// Structural oddities: `region_leave` without `region_enter`, regions
    /// still open at process end, `child_exit` without `child_start`.
    pub anomalies: Anomalies,
    /// Per command (name and mode), by total time.
    pub commands: Vec<CommandStats>,
    /// Regions by total time (over every process).
    pub regions: Vec<RegionTotal>,
    /// Errors grouped by format, most frequent first.
    pub errors: Vec<ErrorGroup>,
    /// Detail of the slowest `top` sessions, in order of appearance.
    pub sessions_shown: Vec<SessionReport>,
    /// `top` as given to the builder.
    pub top: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Anomalies {
    pub unmatched_region_leave: u64,
    pub unclosed_regions: u64,
    pub unmatched_child_exit: u64,
    pub events_without_process: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommandStats {
    pub name: String,
    pub mode: Option<String>,
    pub count: u64,
    /// Ended with a non-zero exit code or a signal.
    pub failed: u64,
    /// Never ended (no duration known).
    pub unfinished: u64,
    pub p50_s: Option<f64>,
    pub p90_s: Option<f64>,
    pub p99_s: Option<f64>,
    pub max_s: Option<f64>,
    pub total_s: f64,
    /// This command's costliest regions (by total time, at most
    /// [`REGIONS_PER_COMMAND`]).
    pub top_regions: Vec<RegionTotal>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegionTotal {
    pub category: String,
    pub label: String,
    pub count: u64,
    pub total_s: f64,
    /// Total minus the time of regions nested in it.
    pub self_s: f64,
    pub max_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorGroup {
    /// `fmt` if git gave one, else the message.
    pub format: String,
    pub count: u64,
    /// The first message of this group.
    pub example: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// The first SID component, shared by every process of the session.
    pub session: String,
    /// UTC start (from the SID), when known.
    pub start: Option<String>,
    /// Elapsed time of the top process, or the span of all processes when
    /// the top process did not end.
    pub elapsed_s: Option<f64>,
    /// Processes whose parent is not in the trace (normally one: the
    /// top-level git command).
    pub processes: Vec<ProcessReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessReport {
    pub sid: String,
    pub source: String,
    pub pid: Option<u32>,
    pub version: Option<String>,
    pub argv: Vec<String>,
    pub cmd_name: Option<String>,
    pub hierarchy: Option<String>,
    pub cmd_mode: Option<String>,
    pub alias: Option<AliasReport>,
    /// `exit`, `signal`, `exec` or `none` (crash, kill, still running).
    pub end: &'static str,
    pub exit_code: Option<i64>,
    pub signal: Option<i64>,
    pub elapsed_s: Option<f64>,
    pub children: Vec<ChildReport>,
    pub children_omitted: u64,
    /// Processes this one `exec()`'d into (same pid, SID one level down).
    pub exec: Vec<ProcessReport>,
    /// Traced descendants not matched to a `child_start` (e.g. git run by a
    /// shell alias: the grandchild of this process).
    pub descendants: Vec<ProcessReport>,
    /// Region trees, one per thread that had regions.
    pub threads: Vec<ThreadRegions>,
    pub data: Vec<DataItem>,
    pub data_omitted: u64,
    pub counters: Vec<CounterItem>,
    pub timers: Vec<TimerItem>,
    pub errors: Vec<String>,
    pub errors_omitted: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AliasReport {
    pub alias: String,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChildReport {
    pub child_id: i64,
    pub class: Option<String>,
    pub hook: Option<String>,
    pub argv: Vec<String>,
    pub pid: Option<i64>,
    /// -1 when it could not be started.
    pub exit_code: Option<i64>,
    /// As the parent measured it (fork to waitpid).
    pub elapsed_s: Option<f64>,
    /// The child's own trace, when it was traced.
    pub process: Option<Box<ProcessReport>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadRegions {
    pub thread: String,
    pub regions: Vec<RegionNode>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegionNode {
    pub category: String,
    pub label: String,
    /// How many times it was entered at this place of the tree.
    pub count: u64,
    pub total_s: f64,
    pub self_s: f64,
    /// Share of the parent region (of the process for top-level regions).
    pub share: Option<f64>,
    pub children: Vec<RegionNode>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DataItem {
    pub thread: String,
    pub nesting: i64,
    pub category: String,
    pub key: String,
    /// A string for `data`, JSON text for `data_json`.
    pub value: String,
    pub json: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CounterItem {
    pub thread: String,
    pub category: String,
    pub name: String,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimerItem {
    pub thread: String,
    pub category: String,
    pub name: String,
    pub intervals: i64,
    pub total_s: f64,
    pub min_s: f64,
    pub max_s: f64,
}

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

/// The pid in a SID component (`...-P0000394d`).
fn sid_pid(own: &[u8]) -> Option<u32> {
    let i = memchr::memrchr(b'P', own)?;
    let hex = own.get(i + 1..)?;
    if hex.is_empty() || hex.len() > 8 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

fn sid_root(sid: &[u8]) -> &[u8] {
    match memchr::memchr(b'/', sid) {
        Some(i) => &sid[..i],
        None => sid,
    }
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
    source: SourceId,
    seq: u64,
    version: Option<Box<[u8]>>,
    argv: Vec<Box<[u8]>>,
    cmd_name: Option<Box<[u8]>>,
    hierarchy: Option<Box<[u8]>>,
    cmd_mode: Option<Box<[u8]>>,
    alias: Option<(Bytes, Vec<Bytes>)>,
    end: End,
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
            source,
            seq,
            version: None,
            argv: Vec::new(),
            cmd_name: None,
            hierarchy: None,
            cmd_mode: None,
            alias: None,
            end: End::None,
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
/// process (NORMAL), a new process starting at each `version`.
#[derive(Default)]
pub(crate) struct SyntheticSids {
    /// Open processes: (depth, synthetic SID).
    open: Vec<(u32, Vec<u8>)>,
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
        let Some(pos) = pos else {
            return b"process-0".to_vec();
        };
        let sid = self.open[pos].1.clone();
        if matches!(ev.body, Body::AtExit { .. } | Body::Signal { .. }) {
            self.open.remove(pos);
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
            session_by_root: HashMap::new(),
            proc_index: HashMap::new(),
            last: None,
            pending: VecDeque::new(),
            folded: HashSet::new(),
            folded_order: VecDeque::new(),
            commands: HashMap::new(),
            regions: HashMap::new(),
            errors: HashMap::new(),
            errors_other: 0,
            shown: BinaryHeap::new(),
            synthetic: SyntheticSids::default(),
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
        let (slot, pi) = self.locate(sid, source);
        let Some(session) = self.slab[slot].as_mut() else {
            return;
        };
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
        let (slot, pi) = self.locate(r.sid, source);
        if let Some(session) = self.slab[slot].as_mut() {
            apply_region(&mut session.procs[pi], r, &mut self.anomalies);
        }
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

#[allow(clippy::collapsible_match)] // one arm per event kind reads best
fn apply(p: &mut ProcState, ev: &Event<'_>, anomalies: &mut Anomalies) {
    if let Some(t) = ev.body.t_abs() {
        p.last_t_abs = p.last_t_abs.max(t.0);
    }
    let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
    match &ev.body {
        Body::Version { exe, .. } => p.version = Some(exe.as_ref().into()),
        Body::Start { argv, .. } => p.argv = argv.iter().map(|a| a.as_ref().into()).collect(),
        Body::CmdName { name, hierarchy } => {
            p.cmd_name = Some(name.as_ref().into());
            p.hierarchy = hierarchy.as_deref().map(Into::into);
        }
        Body::CmdMode { name } => p.cmd_mode = Some(name.as_ref().into()),
        Body::Alias { alias, argv } => {
            p.alias = Some((
                alias.as_ref().into(),
                argv.iter().map(|a| a.as_ref().into()).collect(),
            ))
        }
        Body::Exit { t_abs, code } => {
            p.exit_code = Some(*code);
            p.elapsed = Some(t_abs.0);
            if p.end == End::None {
                p.end = End::Exit;
            }
        }
        Body::AtExit { t_abs, code } => {
            p.exit_code = Some(*code);
            // `exit.t_abs` is the command's time; atexit handlers come after.
            if p.end != End::Exit {
                p.elapsed = Some(t_abs.0);
            }
            p.end = End::AtExit;
        }
        Body::Signal { t_abs, signo } => {
            p.signal = Some(*signo);
            p.elapsed = Some(t_abs.0);
            p.end = End::Signal;
        }
        Body::Exec { t_abs, .. } => {
            // The image is replaced; a failed exec (`exec_result`) resumes.
            p.end = End::Exec;
            if let Some(t) = t_abs {
                p.elapsed = Some(t.0);
            } else {
                p.elapsed = Some(p.last_t_abs);
            }
        }
        Body::ExecResult { .. } => {
            if p.end == End::Exec {
                p.end = End::None;
                p.elapsed = None;
            }
        }
        Body::ChildStart {
            child_id,
            child_class,
            hook_name,
            argv,
            use_shell,
            ..
        } => {
            if p.children.len() >= MAX_CHILDREN {
                p.children_omitted += 1;
            } else {
                p.children.push(ChildState {
                    child_id: *child_id,
                    class: child_class.as_deref().map(Into::into),
                    hook: hook_name.as_deref().map(Into::into),
                    argv: argv.iter().map(|a| a.as_ref().into()).collect(),
                    pid: None,
                    code: None,
                    elapsed: None,
                    start_unix: ev.time.as_ref().and_then(Time::unix).map(|t| t.0),
                    use_shell: use_shell.unwrap_or(false),
                });
            }
        }
        Body::ChildExit {
            child_id,
            pid,
            code,
            t_rel,
            ..
        } => match p
            .children
            .iter_mut()
            .rev()
            .find(|c| c.child_id == *child_id)
        {
            Some(c) => {
                c.pid = Some(*pid);
                c.code = Some(*code);
                c.elapsed = Some(t_rel.0);
            }
            None if p.children_omitted > 0 => {}
            None => anomalies.unmatched_child_exit += 1,
        },
        Body::RegionEnter(r) => apply_region(
            p,
            &RegionLine {
                leave: false,
                sid: b"",
                thread,
                nesting: r.nesting,
                category: r.category.as_deref(),
                label: r.label.as_deref(),
                t_rel: Micros(0),
            },
            anomalies,
        ),
        Body::RegionLeave { region, t_rel } => apply_region(
            p,
            &RegionLine {
                leave: true,
                sid: b"",
                thread,
                nesting: region.nesting,
                category: region.category.as_deref(),
                label: region.label.as_deref(),
                t_rel: *t_rel,
            },
            anomalies,
        ),
        Body::Data {
            nesting,
            category,
            key,
            value,
            ..
        }
        | Body::DataJson {
            nesting,
            category,
            key,
            value,
            ..
        } => {
            if p.data.len() >= MAX_DATA {
                p.data_omitted += 1;
            } else {
                p.data.push(DataItem {
                    thread: text(thread),
                    nesting: *nesting,
                    category: text(category.as_deref().unwrap_or(b"")),
                    key: text(key),
                    value: text(value),
                    json: matches!(ev.body, Body::DataJson { .. }),
                });
            }
        }
        Body::Counter {
            category,
            name,
            count,
            ..
        } => {
            if p.counters.len() < MAX_COUNTERS {
                p.counters.push(CounterItem {
                    thread: text(thread),
                    category: text(category),
                    name: text(name),
                    count: *count,
                });
            }
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
            if p.timers.len() < MAX_COUNTERS {
                p.timers.push(TimerItem {
                    thread: text(thread),
                    category: text(category),
                    name: text(name),
                    intervals: *intervals,
                    total_s: t_total.as_secs_f64(),
                    min_s: t_min.as_secs_f64(),
                    max_s: t_max.as_secs_f64(),
                });
            }
        }
        Body::Error { msg, fmt } => {
            let m: &[u8] = msg.as_deref().unwrap_or(b"");
            let f: &[u8] = fmt.as_deref().unwrap_or(m);
            if p.error_keys.len() < MAX_ERRORS {
                p.error_keys.push((f.into(), m.into()));
            }
            if p.errors.len() >= MAX_ERRORS {
                p.errors_omitted += 1;
            } else {
                p.errors.push(text(m));
            }
        }
        _ => {}
    }
}

fn apply_region(p: &mut ProcState, r: &RegionLine<'_>, anomalies: &mut Anomalies) {
    let t = p.thread(r.thread);
    if !r.leave {
        let parent = p.threads[t]
            .stack
            .last()
            .map_or(p.threads[t].root, |f| f.node);
        let node = match p.child_slot(parent, r.category.unwrap_or(b""), r.label.unwrap_or(b"")) {
            Some(n) => n,
            None => {
                p.regions_dropped += 1;
                u32::MAX
            }
        };
        p.threads[t].stack.push(Frame {
            node,
            nesting: r.nesting,
            child_time: 0,
        });
        return;
    }
    let stack = &mut p.threads[t].stack;
    // Pop regions left open below this one (should not happen).
    while stack.last().is_some_and(|f| f.nesting > r.nesting) {
        stack.pop();
        anomalies.unclosed_regions += 1;
    }
    match stack.last() {
        Some(f) if f.nesting == r.nesting => {
            let f = stack.pop().expect("checked");
            let dur = r.t_rel.0;
            if let Some(parent) = stack.last_mut() {
                parent.child_time += dur;
            }
            if f.node != u32::MAX {
                let s = &mut p.regions[f.node as usize];
                s.count += 1;
                s.total += dur;
                s.self_time += dur - f.child_time;
                s.max = s.max.max(dur);
            }
        }
        _ => anomalies.unmatched_region_leave += 1,
    }
}

// ---------------------------------------------------------------------------
// Fast path for EVENT region lines.

/// What the report needs of a `region_enter`/`region_leave` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegionLine<'a> {
    pub leave: bool,
    pub sid: &'a [u8],
    pub thread: &'a [u8],
    pub nesting: i64,
    pub category: Option<&'a [u8]>,
    pub label: Option<&'a [u8]>,
    pub t_rel: Micros,
}

/// A JSON string without escapes starting at `line[pos]` (after the
/// opening quote): its bytes and the position after the closing quote.
fn plain_string(line: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = line.get(pos..)?;
    let i = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[i] != b'"' || rest[..i].iter().any(|&c| c < 0x20) {
        return None;
    }
    Some((&rest[..i], pos + i + 1))
}

/// The end of a JSON string with escapes (position after its quote).
fn skip_string(line: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let i = memchr::memchr2(b'"', b'\\', line.get(pos..)?)?;
        if line[pos + i] == b'"' {
            return Some(pos + i + 1);
        }
        pos += i + 2;
    }
}

fn number_end(line: &[u8], pos: usize) -> usize {
    pos + line[pos..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || matches!(c, b'-' | b'.'))
        .count()
}

static T_REL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"t_rel\":"));
static NESTING: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"nesting\":"));

/// Reads a region line as git writes it (fixed key order) without a full
/// JSON parse. `None` for anything unusual (escapes in the SID, thread,
/// category or label, unknown keys, a cut line): the caller then uses the
/// full parser, which also reports errors.
pub(crate) fn fast_region(line: &[u8]) -> Option<RegionLine<'_>> {
    const ENTER: &[u8] = b"{\"event\":\"region_enter\",\"sid\":\"";
    const LEAVE: &[u8] = b"{\"event\":\"region_leave\",\"sid\":\"";
    let leave = if line.starts_with(ENTER) {
        false
    } else if line.starts_with(LEAVE) {
        true
    } else {
        return None;
    };
    if line.last() != Some(&b'}') {
        return None;
    }
    let (sid, pos) = plain_string(line, ENTER.len())?;
    let pos = pos
        + line
            .get(pos..)?
            .strip_prefix(b",\"thread\":\"")
            .map(|_| 11)?;
    let (thread, pos) = plain_string(line, pos)?;
    let mut pos = pos;
    let mut t_rel = Micros(0);
    if leave {
        let i = T_REL.find(&line[pos..])? + pos + 9;
        let end = number_end(line, i);
        t_rel = Micros::parse(&line[i..end])?;
        pos = end;
    }
    let i = NESTING.find(&line[pos..])? + pos + 11;
    let end = number_end(line, i);
    let nesting: i64 = std::str::from_utf8(&line[i..end]).ok()?.parse().ok()?;
    let mut pos = end;
    let mut category = None;
    let mut label = None;
    if line[pos..].starts_with(b",\"category\":\"") {
        let (c, p) = plain_string(line, pos + 13)?;
        category = Some(c);
        pos = p;
    }
    if line[pos..].starts_with(b",\"label\":\"") {
        let (l, p) = plain_string(line, pos + 10)?;
        label = Some(l);
        pos = p;
    }
    if line[pos..].starts_with(b",\"msg\":\"") {
        pos = skip_string(line, pos + 8)?;
    }
    if pos + 1 != line.len() {
        return None;
    }
    Some(RegionLine {
        leave,
        sid,
        thread,
        nesting,
        category,
        label,
        t_rel,
    })
}

// ---------------------------------------------------------------------------
// Session detail.

fn session_report(session: &Session, sources: &[String]) -> SessionReport {
    let procs = &session.procs;
    // Parent of each process: the nearest traced ancestor by SID.
    let index: HashMap<&[u8], usize> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| (&*p.sid, i))
        .collect();
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); procs.len()];
    let mut tops = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        let mut anc = sid_parent(&p.sid);
        let mut parent = None;
        while let Some(a) = anc {
            if let Some(&j) = index.get(a) {
                parent = Some(j);
                break;
            }
            anc = sid_parent(a);
        }
        match parent {
            Some(j) => kids[j].push(i),
            None => tops.push(i),
        }
    }
    let start = UnixMicros::parse_sid(&session.root).map(|t| {
        let mut out = Vec::new();
        t.write_iso(&mut out);
        text(&out)
    });
    SessionReport {
        session: text(&session.root),
        start,
        elapsed_s: session_elapsed(session).map(secs),
        processes: tops
            .iter()
            .map(|&i| process_report(procs, &kids, i, sources))
            .collect(),
    }
}

fn process_report(
    procs: &[ProcState],
    kids: &[Vec<usize>],
    i: usize,
    sources: &[String],
) -> ProcessReport {
    let p = &procs[i];
    let pid = sid_pid(sid_own(&p.sid));
    let mut children: Vec<ChildReport> = p
        .children
        .iter()
        .map(|c| ChildReport {
            child_id: c.child_id,
            class: c.class.as_deref().map(text),
            hook: c.hook.as_deref().map(text),
            argv: c.argv.iter().map(|a| text(a)).collect(),
            pid: c.pid,
            exit_code: c.code,
            elapsed_s: c.elapsed.map(secs),
            process: None,
        })
        .collect();
    let mut exec = Vec::new();
    let mut unmatched = Vec::new();
    for &k in &kids[i] {
        let kp = &procs[k];
        let kpid = sid_pid(sid_own(&kp.sid));
        let report = process_report(procs, kids, k, sources);
        if kpid.is_some() && kpid == pid && p.end == End::Exec {
            exec.push(report);
            continue;
        }
        let slot = children
            .iter_mut()
            .find(|c| c.process.is_none() && kpid.is_some() && c.pid == kpid.map(i64::from));
        match slot {
            Some(c) => c.process = Some(Box::new(report)),
            None => unmatched.push((UnixMicros::parse_sid(sid_own(&kp.sid)), report)),
        }
    }
    // Not the child itself but its descendant (git run by a shell, hook
    // script, alias): match by start time within the child's lifetime,
    // shell children first. Without times (PERF, NORMAL: no SID), match
    // by argv.
    let mut descendants = Vec::new();
    for (start, report) in unmatched {
        let within = |c: &ChildState| match (start, c.start_unix) {
            (Some(s), Some(cs)) => s.0 >= cs && !matches!(c.elapsed, Some(e) if s.0 > cs + e),
            _ => same_command(c, &report.argv),
        };
        let pick = (0..children.len())
            .filter(|&j| children[j].process.is_none() && within(&p.children[j]))
            .max_by_key(|&j| (p.children[j].use_shell, std::cmp::Reverse(j)));
        match pick {
            Some(j) => children[j].process = Some(Box::new(report)),
            None => descendants.push(report),
        }
    }
    ProcessReport {
        sid: text(&p.sid),
        source: sources.get(p.source as usize).cloned().unwrap_or_default(),
        pid,
        version: p.version.as_deref().map(text),
        argv: p.argv.iter().map(|a| text(a)).collect(),
        cmd_name: p.cmd_name.as_deref().map(text),
        hierarchy: p.hierarchy.as_deref().map(text),
        cmd_mode: p.cmd_mode.as_deref().map(text),
        alias: p.alias.as_ref().map(|(a, argv)| AliasReport {
            alias: text(a),
            argv: argv.iter().map(|x| text(x)).collect(),
        }),
        end: match p.end {
            End::Exit | End::AtExit => "exit",
            End::Signal => "signal",
            End::Exec => "exec",
            End::None => "none",
        },
        exit_code: p.exit_code,
        signal: p.signal,
        elapsed_s: p.elapsed.map(secs),
        children,
        children_omitted: p.children_omitted,
        exec,
        descendants,
        threads: p
            .threads
            .iter()
            .filter(|t| !p.regions[t.root as usize].children.is_empty())
            .map(|t| ThreadRegions {
                thread: text(&t.name),
                regions: region_nodes(p, t.root, p.elapsed),
            })
            .collect(),
        data: p.data.clone(),
        data_omitted: p.data_omitted,
        counters: p.counters.clone(),
        timers: p.timers.clone(),
        errors: p.errors.clone(),
        errors_omitted: p.errors_omitted,
    }
}

/// Whether a child's argv (as the parent logged it) runs the command of a
/// process's argv: same arguments after argv[0] (git children show `git`
/// to the parent and the exec path to themselves), or, through a shell,
/// the quoted command line.
fn same_command(c: &ChildState, argv: &[String]) -> bool {
    if c.argv.len() > 1 && c.argv.len() == argv.len() {
        return c.argv[1..]
            .iter()
            .zip(&argv[1..])
            .all(|(a, b)| &a[..] == b.as_bytes());
    }
    if c.argv.len() == 1 && !argv.is_empty() {
        let mut quoted = Vec::new();
        crate::quote::sq_quote_argv(&mut quoted, argv);
        return *c.argv[0] == *quoted || (argv.len() == 1 && *c.argv[0] == *argv[0].as_bytes());
    }
    false
}

fn region_nodes(p: &ProcState, parent: u32, parent_total: Option<i64>) -> Vec<RegionNode> {
    let mut nodes: Vec<RegionNode> = p.regions[parent as usize]
        .children
        .iter()
        .map(|&c| {
            let s = &p.regions[c as usize];
            RegionNode {
                category: text(&s.category),
                label: text(&s.label),
                count: s.count,
                total_s: secs(s.total),
                self_s: secs(s.self_time),
                share: parent_total
                    .filter(|t| *t > 0)
                    .map(|t| s.total as f64 / t as f64),
                children: region_nodes(p, c, Some(s.total)),
            }
        })
        .collect();
    nodes.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
    nodes
}

// ---------------------------------------------------------------------------
// Text output.

fn join_argv(argv: &[String]) -> String {
    let mut out = Vec::new();
    crate::quote::sq_quote_argv(&mut out, argv);
    text(&out)
}

/// Escapes control characters only (messages and values stay readable).
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn fmt_secs(s: Option<f64>) -> String {
    match s {
        Some(s) => format!("{s:.6}s"),
        None => "?".to_string(),
    }
}

fn command_label(name: &str, mode: Option<&str>) -> String {
    match mode {
        Some(m) => format!("{name}#{m}"),
        None => name.to_string(),
    }
}

/// Writes the report for a human. `top` limits the ranked tables (the
/// session detail was already limited by the builder).
pub fn write_text(report: &Report, out: &mut dyn Write, top: usize) -> io::Result<()> {
    writeln!(
        out,
        "Git Trace2 report: {} events, {} processes in {} sessions",
        report.events, report.processes, report.sessions
    )?;
    if report.unfinished_processes > 0 {
        writeln!(
            out,
            "  {} processes did not end (no exit, signal or exec: crashed, killed or cut off)",
            report.unfinished_processes
        )?;
    }
    if report.late_processes > 0 {
        writeln!(
            out,
            "  {} processes arrived after their session was summarised (counted as separate sessions)",
            report.late_processes
        )?;
    }
    let a = &report.anomalies;
    if a.unmatched_region_leave + a.unclosed_regions + a.unmatched_child_exit > 0 {
        writeln!(
            out,
            "  anomalies: {} region_leave without enter, {} regions never left, {} child_exit without child_start",
            a.unmatched_region_leave, a.unclosed_regions, a.unmatched_child_exit
        )?;
    }

    writeln!(out)?;
    writeln!(out, "Commands (by total time)")?;
    writeln!(
        out,
        "  {:<28} {:>7} {:>6} {:>11} {:>11} {:>11} {:>11} {:>12}",
        "command", "count", "failed", "p50", "p90", "p99", "max", "total"
    )?;
    for c in report.commands.iter().take(top.max(1)) {
        let mut label = command_label(&c.name, c.mode.as_deref());
        if c.unfinished > 0 {
            label.push_str(&format!(" ({} unfinished)", c.unfinished));
        }
        let q = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |s| format!("{s:.6}s"));
        writeln!(
            out,
            "  {:<28} {:>7} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11.6}s",
            label,
            c.count,
            c.failed,
            q(c.p50_s),
            q(c.p90_s),
            q(c.p99_s),
            q(c.max_s),
            c.total_s
        )?;
    }
    if report.commands.len() > top.max(1) {
        writeln!(out, "  ... {} more", report.commands.len() - top.max(1))?;
    }

    if !report.regions.is_empty() {
        writeln!(out)?;
        writeln!(out, "Regions (by total time over all processes)")?;
        writeln!(
            out,
            "  {:<48} {:>8} {:>12} {:>12} {:>11}",
            "category/label", "count", "total", "self", "max"
        )?;
        for r in report.regions.iter().take(top.max(1)) {
            writeln!(
                out,
                "  {:<48} {:>8} {:>11.6}s {:>11.6}s {:>10.6}s",
                format!("{}/{}", r.category, r.label),
                r.count,
                r.total_s,
                r.self_s,
                r.max_s
            )?;
        }
        if report.regions.len() > top.max(1) {
            writeln!(out, "  ... {} more", report.regions.len() - top.max(1))?;
        }
    }

    if report.commands.iter().any(|c| !c.top_regions.is_empty()) {
        writeln!(out)?;
        writeln!(out, "Costliest regions per command")?;
        for c in report.commands.iter().take(top.max(1)) {
            if c.top_regions.is_empty() {
                continue;
            }
            writeln!(out, "  {}", command_label(&c.name, c.mode.as_deref()))?;
            for r in &c.top_regions {
                let share = if c.total_s > 0.0 {
                    format!("{:5.1}%", r.total_s / c.total_s * 100.0)
                } else {
                    "     ?".to_string()
                };
                writeln!(
                    out,
                    "    {:<46} {:>8} {:>11.6}s {share}",
                    format!("{}/{}", r.category, r.label),
                    r.count,
                    r.total_s
                )?;
            }
        }
    }

    if !report.errors.is_empty() {
        writeln!(out)?;
        writeln!(out, "Errors (by format)")?;
        for e in report.errors.iter().take(top.max(1)) {
            writeln!(out, "  {:>6}  {}", e.count, printable(&e.format))?;
        }
        if report.errors.len() > top.max(1) {
            writeln!(out, "  ... {} more", report.errors.len() - top.max(1))?;
        }
    }

    if !report.sessions_shown.is_empty() {
        writeln!(out)?;
        if (report.sessions_shown.len() as u64) < report.sessions {
            writeln!(
                out,
                "Sessions (the {} slowest of {}, in order of appearance)",
                report.sessions_shown.len(),
                report.sessions
            )?;
        } else {
            writeln!(out, "Sessions")?;
        }
        for s in &report.sessions_shown {
            writeln!(out)?;
            writeln!(
                out,
                "Session {}  start {}  elapsed {}",
                s.session,
                s.start.as_deref().unwrap_or("?"),
                fmt_secs(s.elapsed_s)
            )?;
            for p in &s.processes {
                write_process(out, p, 1)?;
            }
        }
    }
    Ok(())
}

fn end_label(p: &ProcessReport) -> String {
    match p.end {
        "exit" => format!("exit {}", p.exit_code.unwrap_or(0)),
        "signal" => format!("signal {}", p.signal.unwrap_or(0)),
        "exec" => "exec".to_string(),
        _ => "NO EXIT (crashed, killed or cut off)".to_string(),
    }
}

fn write_process(out: &mut dyn Write, p: &ProcessReport, depth: usize) -> io::Result<()> {
    let ind = "  ".repeat(depth);
    let cmd = command_label(
        p.cmd_name.as_deref().unwrap_or("(no cmd_name)"),
        p.cmd_mode.as_deref(),
    );
    writeln!(
        out,
        "{ind}{cmd}  {}  {}  [{}]",
        end_label(p),
        fmt_secs(p.elapsed_s),
        p.sid.rsplit('/').next().unwrap_or(&p.sid)
    )?;
    writeln!(out, "{ind}  argv: {}", join_argv(&p.argv))?;
    if !p.source.is_empty() {
        writeln!(out, "{ind}  file: {}", p.source)?;
    }
    if let Some(a) = &p.alias {
        writeln!(out, "{ind}  alias: {} -> {}", a.alias, join_argv(&a.argv))?;
    }
    for t in &p.threads {
        writeln!(out, "{ind}  regions ({}):", t.thread)?;
        write_regions(out, &t.regions, depth + 2)?;
    }
    for d in &p.data {
        writeln!(
            out,
            "{ind}  data: {}/{} = {}{}",
            d.category,
            d.key,
            printable(&d.value),
            if d.thread != "main" {
                format!("  ({})", d.thread)
            } else {
                String::new()
            }
        )?;
    }
    if p.data_omitted > 0 {
        writeln!(out, "{ind}  data: ... {} more", p.data_omitted)?;
    }
    for c in &p.counters {
        writeln!(
            out,
            "{ind}  counter: {}/{} = {}  ({})",
            c.category, c.name, c.count, c.thread
        )?;
    }
    for t in &p.timers {
        writeln!(
            out,
            "{ind}  timer: {}/{}  intervals {}  total {:.6}s  min {:.6}s  max {:.6}s  ({})",
            t.category, t.name, t.intervals, t.total_s, t.min_s, t.max_s, t.thread
        )?;
    }
    for e in &p.errors {
        writeln!(out, "{ind}  error: {}", printable(e))?;
    }
    if p.errors_omitted > 0 {
        writeln!(out, "{ind}  error: ... {} more", p.errors_omitted)?;
    }
    for c in &p.children {
        let status = match (c.exit_code, c.pid) {
            (Some(-1), Some(-1)) => "not started".to_string(),
            (Some(code), _) => format!("exit {code}"),
            (None, _) => "no child_exit".to_string(),
        };
        let class = match (&c.class, &c.hook) {
            (Some(cl), Some(h)) => format!("{cl}:{h}"),
            (Some(cl), None) => cl.clone(),
            (None, _) => "?".to_string(),
        };
        writeln!(
            out,
            "{ind}  child [{}] {class}  {status}  {}  {}",
            c.child_id,
            fmt_secs(c.elapsed_s),
            join_argv(&c.argv)
        )?;
        if let Some(cp) = &c.process {
            write_process(out, cp, depth + 2)?;
        }
    }
    if p.children_omitted > 0 {
        writeln!(out, "{ind}  child ... {} more", p.children_omitted)?;
    }
    for e in &p.exec {
        writeln!(out, "{ind}  exec'd into:")?;
        write_process(out, e, depth + 2)?;
    }
    for d in &p.descendants {
        writeln!(out, "{ind}  descendant (not matched to a child):")?;
        write_process(out, d, depth + 2)?;
    }
    Ok(())
}

fn write_regions(out: &mut dyn Write, nodes: &[RegionNode], depth: usize) -> io::Result<()> {
    let ind = "  ".repeat(depth);
    for n in nodes {
        let name = format!("{ind}{}/{}", n.category, n.label);
        let share = n
            .share
            .map(|s| format!("{:5.1}%", s * 100.0))
            .unwrap_or_else(|| "     ?".into());
        let count = if n.count == 1 {
            String::new()
        } else {
            format!("  x{}", n.count)
        };
        writeln!(out, "{name:<56} {:>11.6}s {share}{count}", n.total_s)?;
        write_regions(out, &n.children, depth + 1)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Whole inputs.

/// Below this, EVENT input is parsed on the calling thread.
const PARALLEL_MIN: usize = 4 << 20;
/// Bytes per block handed to a parser thread.
const BLOCK: usize = 1 << 20;

/// Parses a whole input and adds its events. Records that do not parse are
/// counted in `warnings` with their line number, and skipped.
pub fn report_bytes(
    data: &[u8],
    format: Format,
    source: SourceId,
    builder: &mut ReportBuilder,
    warnings: &mut Warnings,
) {
    report_bytes_with(data, format, source, builder, warnings, |_| {})
}

/// [`report_bytes`] on a memory map, handing pages back to the kernel as
/// soon as they are parsed so that resident memory stays small whatever
/// the file's size.
pub fn report_mmap(
    map: &memmap2::Mmap,
    format: Format,
    source: SourceId,
    builder: &mut ReportBuilder,
    warnings: &mut Warnings,
) {
    report_bytes_with(map, format, source, builder, warnings, |range| {
        crate::reader::release_pages(map, range)
    })
}

/// A parsed record on its way from a parser thread to the builder.
enum Item<'a> {
    Region(RegionLine<'a>),
    Full(Box<Event<'a>>),
}

/// Parses the records of `data`, pushing items and (line, error) pairs.
fn parse_block<'a>(
    data: &'a [u8],
    format: Format,
    mut item: impl FnMut(Item<'a>),
    mut error: impl FnMut(u64, String),
) {
    for rec in RecordIter::new(data, format) {
        if format == Format::Event {
            if let Some(r) = fast_region(rec.bytes) {
                item(Item::Region(r));
                continue;
            }
        }
        match format.parse(rec.bytes) {
            Ok(ev) => item(Item::Full(Box::new(ev))),
            Err(e) => error(rec.line, rec.error_message(&e)),
        }
    }
}

impl ReportBuilder {
    /// Parses one record (from [`crate::reader::for_each_record`] on a
    /// stream, say) and adds it, using the fast path for EVENT regions.
    pub fn add_record(
        &mut self,
        record: &[u8],
        format: Format,
        source: SourceId,
    ) -> Result<(), crate::event_fmt::ParseError> {
        if format == Format::Event {
            if let Some(r) = fast_region(record) {
                self.add_region(&r, source);
                return Ok(());
            }
        }
        let ev = format.parse(record)?;
        self.add(&ev, source);
        Ok(())
    }

    fn add_item(&mut self, item: &Item<'_>, source: SourceId) {
        match item {
            Item::Region(r) => self.add_region(r, source),
            Item::Full(ev) => self.add(ev, source),
        }
    }
}
fn report_bytes_with(
    data: &[u8],
    format: Format,
    source: SourceId,
    builder: &mut ReportBuilder,
    warnings: &mut Warnings,
    consumed: impl Fn(std::ops::Range<usize>) + Sync,
) {
    if format != Format::Event || data.len() < PARALLEL_MIN {
        let all = for_each_in(data, format, &consumed, |rec| {
            if let Err(e) = builder.add_record(rec.bytes, format, source) {
                rec.warn(&e, warnings);
            }
            Ok::<(), std::convert::Infallible>(())
        });
        let Ok(()) = all;
        return;
    }
    // EVENT: one record per line, so blocks split at newlines parse
    // independently. Two threads parse alternate blocks; this thread adds
    // them in input order, so the result is the same as sequential.
    let mut bounds = vec![0usize];
    let mut pos = 0;
    while pos < data.len() {
        let target = (pos + BLOCK).min(data.len());
        let end = if target == data.len() {
            target
        } else {
            match memchr::memchr(b'\n', &data[target..]) {
                Some(i) => target + i + 1,
                None => data.len(),
            }
        };
        bounds.push(end);
        pos = end;
    }
    let blocks = bounds.len() - 1;
    type Batch<'a> = (Vec<Item<'a>>, Vec<(u64, String)>, u64);
    std::thread::scope(|scope| {
        let mut receivers = Vec::new();
        for w in 0..2usize {
            let (tx, rx) = mpsc::sync_channel::<Batch<'_>>(2);
            receivers.push(rx);
            let bounds = &bounds;
            scope.spawn(move || {
                let mut b = w;
                while b < blocks {
                    let chunk = &data[bounds[b]..bounds[b + 1]];
                    let mut items = Vec::with_capacity(chunk.len() / 200);
                    let mut errors = Vec::new();
                    parse_block(
                        chunk,
                        Format::Event,
                        |item| items.push(item),
                        |line, msg| errors.push((line, msg)),
                    );
                    let lines = memchr::memchr_iter(b'\n', chunk).count() as u64;
                    if tx.send((items, errors, lines)).is_err() {
                        return;
                    }
                    b += 2;
                }
            });
        }
        let mut line_base = 0u64;
        for b in 0..blocks {
            let Ok((items, errors, lines)) = receivers[b % 2].recv() else {
                break;
            };
            for item in &items {
                builder.add_item(item, source);
            }
            for (line, msg) in errors {
                warnings.push(Position::Line(line_base + line), msg);
            }
            line_base += lines;
            drop(items);
            consumed(bounds[b]..bounds[b + 1]);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path reads every corpus region line exactly as the full
    /// parser does, and declines what it cannot read.
    #[test]
    fn fast_region_agrees_with_the_parser() {
        let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/trace2");
        let mut seen = 0;
        for entry in std::fs::read_dir(corpus).unwrap().flatten() {
            let Ok(data) = std::fs::read(entry.path().join("event.jsonl")) else {
                continue;
            };
            for line in data.split(|&c| c == b'\n') {
                let full = Format::Event.parse(line);
                let fast = fast_region(line);
                let expected = match full.as_ref().map(|e| &e.body) {
                    Ok(Body::RegionEnter(r)) => Some((false, r, Micros(0))),
                    Ok(Body::RegionLeave { region, t_rel }) => Some((true, region, *t_rel)),
                    _ => None,
                };
                match (fast, expected) {
                    (Some(f), Some((leave, r, t_rel))) => {
                        let ev = full.as_ref().unwrap();
                        assert_eq!(f.leave, leave);
                        assert_eq!(Some(f.sid), ev.sid.as_deref());
                        assert_eq!(Some(f.thread), ev.thread.as_deref());
                        assert_eq!(f.nesting, r.nesting);
                        assert_eq!(f.category, r.category.as_deref());
                        assert_eq!(f.label, r.label.as_deref());
                        assert_eq!(f.t_rel, t_rel);
                        seen += 1;
                    }
                    (None, Some(_)) => {
                        panic!("fast path declined {}", String::from_utf8_lossy(line))
                    }
                    (Some(_), None) => {
                        panic!("fast path accepted {}", String::from_utf8_lossy(line))
                    }
                    (None, None) => {}
                }
            }
        }
        assert!(seen > 1000);
        let line = br#"{"event":"region_leave","sid":"a","thread":"main","time":"x","t_rel":0.5,"nesting":1,"category":"c","label":"l","msg":"m\"}"}"#;
        assert_eq!(fast_region(line).unwrap().t_rel, Micros(500_000));
        // Cut short, escapes, unknown keys: left to the full parser.
        assert!(fast_region(&line[..line.len() - 1]).is_none());
        assert!(fast_region(
            br#"{"event":"region_enter","sid":"a","thread":"main","nesting":1,"label":"a\"b"}"#
        )
        .is_none());
        assert!(fast_region(br#"{"event":"region_enter","sid":"a","thread":"main","nesting":1,"label":"l","new":1}"#).is_none());
        assert!(fast_region(
            br#"{"event":"region_enter","sid":"a","thread":"main","nesting":x,"label":"l"}"#
        )
        .is_none());
    }
}
