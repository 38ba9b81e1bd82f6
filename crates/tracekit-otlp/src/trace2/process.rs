//! One git process's EVENT stream turned into spans, as trace2receiver
//! shapes them (`evt_apply.go`, `trace2emitotlp.go`): a process span
//! (`SPAN_KIND_SERVER`, named `<exe>:<verb>#<mode>`), and `INTERNAL` spans
//! for each non-main thread, region, child and exec, with trace2receiver's
//! attribute names (`trace2semconv.go`). What trace2receiver has no name
//! for is added under `trace2.*` names of the same style and listed in
//! [`super`]: span events for `error`, `signal` and `data`/`data_json`.
//!
//! Spans other than the process span are complete when their end event
//! arrives and are kept in [`Process::done`] (the forwarder may send them
//! before the process ends); the process span is built by
//! [`Process::process_span`] once the process has ended.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value as Json;
use tracekit_trace2::event::{sid_own, sid_pid, Body, Event, Text, Time};
use tracekit_trace2::time::UnixMicros;

use super::filter::{Detail, QualifiedNames};
use crate::ids::{self, SpanId, TraceId};
use crate::proto::{kv_int, kv_str, push_capped, span_kind, KeyValue, Span, SpanEvent};
use crate::redact::Redactor;

/// Events kept per span; more are counted in `dropped_events_count`.
pub const MAX_EVENTS_PER_SPAN: usize = 256;

/// Which detail level a span needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanClass {
    /// Threads and regions: `dl:verbose`.
    Verbose,
    /// Children and execs: `dl:process`.
    Process,
}

/// How a process ended, as far as the receiver knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// `atexit` (or `exit`).
    AtExit,
    /// `signal`.
    Signal,
    /// Its connection closed without `atexit` (crash, kill).
    Closed,
    /// Its parent's `child_exit` (or `child_ready`) for its pid arrived.
    ByParent,
    /// Silent for longer than the session time-out.
    TimedOut,
    /// The receiver stopped first.
    Shutdown,
}

#[derive(Debug, Clone, serde::Serialize)]
struct Timer {
    intervals: i64,
    total_sec: f64,
    min_sec: f64,
    max_sec: f64,
}

type Nested<T> = BTreeMap<String, BTreeMap<String, T>>;

struct Region {
    span: Span,
    nesting: i64,
    /// `trace2.region.data`, serialised once when the region ends.
    data: Nested<Json>,
}

#[derive(Default)]
struct Thread {
    span_id: SpanId,
    start: u64,
    end: Option<u64>,
    stack: Vec<Region>,
    timers: Nested<Timer>,
    counters: Nested<i64>,
}

struct Child {
    span: Span,
    argv: Vec<String>,
    class: String,
    hook: Option<String>,
    pid: i64,
    code: i64,
    ready: Option<String>,
}

struct Exec {
    span: Span,
    argv: Vec<String>,
    exe: String,
    code: i64,
}

/// What went wrong reading a process's events (counted by the forwarder).
#[derive(Debug, Default, Clone, Copy)]
pub struct Anomalies {
    /// region_enter/leave whose nesting does not fit the thread's stack
    /// (trace2receiver ignores them too).
    pub unmatched_regions: u64,
    /// Events on a thread that never said `thread_start` (its span starts
    /// at its first event).
    pub undeclared_threads: u64,
    pub events_dropped: u64,
}

/// One git process (one SID).
pub struct Process {
    pub sid: Box<[u8]>,
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent_span_id: Option<SpanId>,
    /// The `P<pid>` part of the SID, for matching the parent's child_exit.
    pub pid: Option<i64>,
    pub uid: Option<u32>,
    ids: SpanIds,
    start: Option<u64>,
    end: Option<u64>,
    last: u64,
    /// Some event carried a time (brief EVENT output has none).
    timed: bool,
    /// Unix ns at t_abs = 0.
    base: Option<u64>,
    exe_version: String,
    argv: Vec<String>,
    verb: String,
    hierarchy: String,
    mode: String,
    alias_key: String,
    alias_value: Vec<String>,
    ancestry: Vec<String>,
    exit_code: Option<i64>,
    error: Option<(String, String)>,
    repos: BTreeMap<String, String>,
    params: BTreeMap<String, (String, i32)>,
    data: Nested<Json>,
    timers: Nested<Timer>,
    counters: Nested<i64>,
    threads: Threads,
    children: HashMap<i64, Child>,
    execs: HashMap<i64, Exec>,
    /// Process span events: (needs `dl:process`, event).
    events: Vec<(bool, SpanEvent)>,
    dropped_events: u32,
    /// Completed spans not yet handed out.
    pub done: Vec<(SpanClass, Span)>,
    pub ended: Option<Ended>,
    pub anomalies: Anomalies,
}

fn texts(r: &Redactor, v: &[Text<'_>]) -> Vec<String> {
    v.iter().map(|t| r.text(t)).collect()
}

fn json_array(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn unix_ns(time: &Option<Time<'_>>) -> Option<u64> {
    match time {
        Some(Time::Iso(t)) => UnixMicros::parse_iso(t).map(|u| (u.0.max(0) as u64) * 1000),
        _ => None,
    }
}

/// trace2receiver's priorities of `def_param` scopes (`get_scope_priority`).
fn scope_priority(scope: Option<&[u8]>) -> i32 {
    match scope {
        None => 100,
        Some(b"system") => 1,
        Some(b"global") => 2,
        Some(b"local") => 3,
        Some(b"worktree") => 4,
        Some(b"command") => 5,
        Some(b"submodule") => 6,
        Some(b"unknown") => 7,
        Some(_) => 99,
    }
}

/// trace2receiver's `normalizeForRegionDisplayName`.
fn normalize(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ' ' | '-' | '.' | ',' | ':' | '(' | ')' => '_',
            c => c,
        })
        .collect::<String>()
        .to_lowercase()
}

fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches(['/', '\\']);
    match trimmed.rfind(['/', '\\']) {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// The ids of the spans of one process: its own, and the next of the
/// spans below it (derived from its id and their order).
struct SpanIds {
    trace_id: TraceId,
    span_id: SpanId,
    ordinal: u64,
}

impl SpanIds {
    fn next_id(&mut self) -> SpanId {
        self.ordinal += 1;
        ids::child_span_id(&self.span_id, self.ordinal)
    }

    fn new_span(&mut self, parent: SpanId, start: u64, name: String) -> Span {
        Span {
            trace_id: self.trace_id.to_vec(),
            span_id: self.next_id().to_vec(),
            parent_span_id: parent.to_vec(),
            name,
            kind: span_kind::INTERNAL,
            start_time_unix_nano: start,
            end_time_unix_nano: start,
            ..Span::default()
        }
    }
}

/// The main thread and the others, by name.
struct Threads {
    main: Thread,
    others: HashMap<Box<[u8]>, Thread>,
}

impl Threads {
    /// The thread `name`; one never declared by `thread_start` starts
    /// here, at `ts` (counted).
    fn get(
        &mut self,
        name: &[u8],
        ts: u64,
        ids: &mut SpanIds,
        anomalies: &mut Anomalies,
    ) -> &mut Thread {
        if name == b"main" {
            return &mut self.main;
        }
        // Looked up first so that the common case does not copy the name.
        if !self.others.contains_key(name) {
            anomalies.undeclared_threads += 1;
            self.start(name, ts, ids);
        }
        self.others.get_mut(name).expect("started above")
    }

    /// `thread_start`: a new thread span (a name seen already keeps its
    /// span).
    fn start(&mut self, name: &[u8], ts: u64, ids: &mut SpanIds) {
        if name == b"main" || self.others.contains_key(name) {
            return;
        }
        let thread = Thread {
            span_id: ids.next_id(),
            start: ts,
            ..Thread::default()
        };
        self.others.insert(name.into(), thread);
    }
}

impl Process {
    pub fn new(sid: &[u8]) -> Process {
        let (span_id, parent) = ids::trace2_process_ids(sid);
        Process {
            sid: sid.into(),
            trace_id: ids::trace2_trace_id(sid),
            span_id,
            parent_span_id: parent,
            pid: sid_pid(sid_own(sid)).map(i64::from),
            uid: None,
            ids: SpanIds {
                trace_id: ids::trace2_trace_id(sid),
                span_id,
                ordinal: 0,
            },
            start: None,
            end: None,
            last: 0,
            timed: false,
            base: None,
            exe_version: String::new(),
            argv: Vec::new(),
            verb: String::new(),
            hierarchy: String::new(),
            mode: String::new(),
            alias_key: String::new(),
            alias_value: Vec::new(),
            ancestry: Vec::new(),
            exit_code: None,
            error: None,
            repos: BTreeMap::new(),
            params: BTreeMap::new(),
            data: BTreeMap::new(),
            timers: BTreeMap::new(),
            counters: BTreeMap::new(),
            threads: Threads {
                main: Thread {
                    span_id,
                    ..Thread::default()
                },
                others: HashMap::new(),
            },
            children: HashMap::new(),
            execs: HashMap::new(),
            events: Vec::new(),
            dropped_events: 0,
            done: Vec::new(),
            ended: None,
            anomalies: Anomalies::default(),
        }
    }

    /// Whether `cmd_name` has arrived (the names are final enough for the
    /// filters).
    pub fn named(&self) -> bool {
        !self.verb.is_empty() || self.ended.is_some()
    }

    fn thread_mut(&mut self, name: &[u8], ts: u64) -> &mut Thread {
        self.threads
            .get(name, ts, &mut self.ids, &mut self.anomalies)
    }

    /// Applies one event of this process.
    pub fn apply(&mut self, ev: &Event<'_>, r: &Redactor) {
        // Brief EVENT output keeps `time` on version and atexit only:
        // others are placed at the process's base plus their t_abs, or at
        // the latest time seen (as the timeline mapping does).
        let t_abs = ev.body.t_abs().map(|t| t.0.max(0) as u64 * 1000);
        let ts = match (unix_ns(&ev.time), t_abs) {
            (Some(t), a) => {
                if !self.timed {
                    // Events before the first time (none in git's order)
                    // start there too.
                    self.timed = true;
                    self.start = self.start.map(|_| t);
                }
                if let (None, Some(a)) = (self.base, a) {
                    self.base = Some(t.saturating_sub(a));
                }
                if self.base.is_none() && matches!(ev.body, Body::Version { .. }) {
                    self.base = Some(t);
                }
                t
            }
            (None, Some(a)) => match self.base {
                Some(b) => (b + a).max(self.last),
                None => self.last,
            },
            (None, None) => self.last,
        };
        if self.start.is_none() {
            self.start = Some(ts);
        }
        self.last = self.last.max(ts);
        let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        match &ev.body {
            Body::Version { exe, .. } => {
                self.exe_version = r.text(exe);
                self.start = Some(ts);
            }
            Body::Start { argv, .. } => self.argv = texts(r, argv),
            Body::Exit { code, .. } | Body::AtExit { code, .. } => {
                self.end = Some(ts);
                self.exit_code = Some(*code);
                if matches!(ev.body, Body::AtExit { .. }) {
                    self.ended = Some(Ended::AtExit);
                }
            }
            Body::Signal { signo, .. } => {
                self.end = Some(ts);
                self.exit_code = Some(128 + signo);
                self.ended = Some(Ended::Signal);
                let ev = SpanEvent {
                    time_unix_nano: ts,
                    name: "signal".into(),
                    attributes: vec![kv_int("trace2.signal.signo", *signo)],
                    dropped_attributes_count: 0,
                };
                self.process_event(false, ev);
            }
            Body::Error { msg, fmt } => {
                let msg = msg.as_deref().map(|m| r.text(m)).unwrap_or_default();
                let fmt = fmt.as_deref().map(|f| r.text(f)).unwrap_or_default();
                if self.error.is_none() {
                    self.error = Some((fmt.clone(), msg.clone()));
                }
                let ev = SpanEvent {
                    time_unix_nano: ts,
                    name: "error".into(),
                    attributes: vec![
                        kv_str("trace2.cmd.error.message", msg),
                        kv_str("trace2.cmd.error.format", fmt),
                    ],
                    dropped_attributes_count: 0,
                };
                self.process_event(false, ev);
            }
            Body::CmdAncestry { ancestry } => self.ancestry = texts(r, ancestry),
            Body::CmdName { name, hierarchy } => {
                self.verb = r.text(name);
                self.hierarchy = hierarchy.as_deref().map(|h| r.text(h)).unwrap_or_default();
            }
            Body::CmdMode { name } => self.mode = r.text(name),
            Body::Alias { alias, argv } => {
                self.alias_key = r.text(alias);
                self.alias_value = texts(r, argv);
            }
            Body::ChildStart {
                child_id,
                child_class,
                hook_name,
                argv,
                ..
            } => {
                if self.children.contains_key(child_id) {
                    return;
                }
                let class = child_class
                    .as_deref()
                    .map(|c| r.text(c))
                    .unwrap_or_else(|| "?".into());
                let hook = hook_name.as_deref().map(|h| r.text(h));
                let argv = texts(r, argv);
                let name = child_display_name(&class, hook.as_deref(), &argv);
                let span = self.ids.new_span(self.span_id, ts, name);
                self.children.insert(
                    *child_id,
                    Child {
                        span,
                        argv,
                        class,
                        hook,
                        pid: -1,
                        code: -1,
                        ready: None,
                    },
                );
            }
            Body::ChildExit {
                child_id,
                pid,
                code,
                ..
            } => {
                if let Some(mut c) = self.children.remove(child_id) {
                    c.span.end_time_unix_nano = ts.max(c.span.start_time_unix_nano);
                    c.pid = *pid;
                    c.code = *code;
                    self.finish_child(c);
                }
            }
            Body::ChildReady {
                child_id,
                pid,
                ready,
                ..
            } => {
                if let Some(mut c) = self.children.remove(child_id) {
                    c.span.end_time_unix_nano = ts.max(c.span.start_time_unix_nano);
                    c.pid = *pid;
                    c.code = -1;
                    c.ready = Some(r.text(ready));
                    self.finish_child(c);
                }
            }
            Body::ThreadStart { .. } => self.threads.start(thread, ts, &mut self.ids),
            Body::ThreadExit { .. } => {
                if let Some(th) = self.threads.others.remove(thread) {
                    self.finish_thread(thread, th, ts);
                }
            }
            Body::Exec {
                exec_id, exe, argv, ..
            } => {
                if self.execs.contains_key(exec_id) {
                    return;
                }
                let exe = exe.as_deref().map(|e| r.text(e)).unwrap_or_default();
                let argv = texts(r, argv);
                let name = if !exe.is_empty() {
                    format!("exec({})", base_name(&exe))
                } else if let Some(a0) = argv.first() {
                    format!("exec({})", base_name(a0))
                } else {
                    "exec(?)".to_string()
                };
                let span = self.ids.new_span(self.span_id, ts, name);
                self.execs.insert(
                    *exec_id,
                    Exec {
                        span,
                        argv,
                        exe,
                        code: -1,
                    },
                );
            }
            Body::ExecResult { exec_id, code, .. } => {
                if let Some(mut e) = self.execs.remove(exec_id) {
                    e.span.end_time_unix_nano = ts.max(e.span.start_time_unix_nano);
                    e.code = *code;
                    self.finish_exec(e);
                }
            }
            Body::DefParam {
                scope,
                param,
                value,
            } => {
                let key = r.text(param);
                let pri = scope_priority(scope.as_deref());
                if self.params.get(&key).is_some_and(|(_, cur)| pri <= *cur) {
                    return;
                }
                let value = value.as_deref().map(|v| r.text(v)).unwrap_or_default();
                self.params.insert(key, (value, pri));
            }
            Body::DefRepo { worktree } => {
                let id = ev.repo.unwrap_or(1);
                self.repos.insert(id.to_string(), r.text(worktree));
            }
            Body::RegionEnter(region) => {
                let repo = ev.repo.unwrap_or(1);
                let c = region
                    .category
                    .as_deref()
                    .map(|c| normalize(&r.text(c)))
                    .unwrap_or_else(|| "C".into());
                let l = region
                    .label
                    .as_deref()
                    .map(|l| normalize(&r.text(l)))
                    .unwrap_or_else(|| "L".into());
                let msg = region.msg.as_deref().map(|m| r.text(m));
                let nesting = region.nesting;
                let th = self
                    .threads
                    .get(thread, ts, &mut self.ids, &mut self.anomalies);
                if th.stack.len() as i64 != nesting - 1 {
                    self.anomalies.unmatched_regions += 1;
                    return;
                }
                let parent = th.stack.last().map_or(th.span_id, |top| {
                    <[u8; 8]>::try_from(&top.span.span_id[..]).unwrap_or_default()
                });
                let mut span = self.ids.new_span(parent, ts, format!("region({c},{l})"));
                span.attributes.push(kv_str("trace2.span.type", "region"));
                span.attributes
                    .push(kv_str("trace2.region.repoid", repo.to_string()));
                span.attributes
                    .push(kv_str("trace2.region.nesting", nesting.to_string()));
                if let Some(m) = msg.filter(|m| !m.is_empty()) {
                    span.attributes.push(kv_str("trace2.region.message", m));
                }
                th.stack.push(Region {
                    span,
                    nesting,
                    data: BTreeMap::new(),
                });
            }
            Body::RegionLeave { region, .. } => {
                let th = self.thread_mut(thread, ts);
                match th.stack.last() {
                    Some(top) if top.nesting == region.nesting => {
                        let mut top = th.stack.pop().expect("checked");
                        top.span.end_time_unix_nano = ts.max(top.span.start_time_unix_nano);
                        self.finish_region(top);
                    }
                    _ => self.anomalies.unmatched_regions += 1,
                }
            }
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
                let is_json = matches!(ev.body, Body::DataJson { .. });
                let category = category.as_deref().map(|c| r.text(c)).unwrap_or_default();
                let key = r.text(key);
                let shown = r.text(value);
                let json = if is_json {
                    serde_json::from_str::<Json>(&shown).unwrap_or(Json::String(shown.clone()))
                } else {
                    Json::String(shown.clone())
                };
                let event = SpanEvent {
                    time_unix_nano: ts,
                    name: if is_json { "data_json" } else { "data" }.into(),
                    attributes: vec![
                        kv_str("trace2.data.category", category.clone()),
                        kv_str("trace2.data.key", key.clone()),
                        kv_str("trace2.data.value", shown),
                        kv_int("trace2.data.nesting", *nesting),
                    ],
                    dropped_attributes_count: 0,
                };
                if *nesting <= 1 {
                    self.data.entry(category).or_default().insert(key, json);
                    self.process_event(true, event);
                    return;
                }
                let want = (*nesting - 2) as usize;
                let th = self
                    .threads
                    .get(thread, ts, &mut self.ids, &mut self.anomalies);
                if let Some(reg) = th.stack.get_mut(want).filter(|g| g.nesting == *nesting - 1) {
                    reg.data.entry(category).or_default().insert(key, json);
                    let span = &mut reg.span;
                    if !push_capped(
                        &mut span.events,
                        &mut span.dropped_events_count,
                        MAX_EVENTS_PER_SPAN,
                        event,
                    ) {
                        self.anomalies.events_dropped += 1;
                    }
                }
            }
            Body::Timer {
                per_thread,
                category,
                name,
                intervals,
                t_total,
                t_min,
                t_max,
            } => {
                let timer = Timer {
                    intervals: *intervals,
                    total_sec: t_total.as_secs_f64(),
                    min_sec: t_min.as_secs_f64(),
                    max_sec: t_max.as_secs_f64(),
                };
                let (c, n) = (r.text(category), r.text(name));
                if *per_thread {
                    self.thread_mut(thread, ts)
                        .timers
                        .entry(c)
                        .or_default()
                        .insert(n, timer);
                } else {
                    self.timers.entry(c).or_default().insert(n, timer);
                }
            }
            Body::Counter {
                per_thread,
                category,
                name,
                count,
            } => {
                let (c, n) = (r.text(category), r.text(name));
                if *per_thread {
                    self.thread_mut(thread, ts)
                        .counters
                        .entry(c)
                        .or_default()
                        .insert(n, *count);
                } else {
                    self.counters.entry(c).or_default().insert(n, *count);
                }
            }
            _ => {}
        }
    }

    fn process_event(&mut self, needs_process_detail: bool, ev: SpanEvent) {
        let ev = (needs_process_detail, ev);
        if !push_capped(
            &mut self.events,
            &mut self.dropped_events,
            MAX_EVENTS_PER_SPAN,
            ev,
        ) {
            self.anomalies.events_dropped += 1;
        }
    }

    fn finish_region(&mut self, mut reg: Region) {
        if !reg.data.is_empty() {
            reg.span.attributes.push(kv_str(
                "trace2.region.data",
                serde_json::to_string(&reg.data).unwrap_or_default(),
            ));
        }
        self.done.push((SpanClass::Verbose, reg.span));
    }

    fn finish_thread(&mut self, name: &[u8], mut th: Thread, end: u64) {
        while let Some(mut reg) = th.stack.pop() {
            reg.span.end_time_unix_nano = end.max(reg.span.start_time_unix_nano);
            self.finish_region(reg);
        }
        let mut attrs = vec![kv_str("trace2.span.type", "thread")];
        if !th.timers.is_empty() {
            attrs.push(kv_str(
                "trace2.thread.timers",
                serde_json::to_string(&th.timers).unwrap_or_default(),
            ));
        }
        if !th.counters.is_empty() {
            attrs.push(kv_str(
                "trace2.thread.counters",
                serde_json::to_string(&th.counters).unwrap_or_default(),
            ));
        }
        let start = th.start;
        let span = Span {
            trace_id: self.trace_id.to_vec(),
            span_id: th.span_id.to_vec(),
            parent_span_id: self.span_id.to_vec(),
            name: String::from_utf8_lossy(name).into_owned(),
            kind: span_kind::INTERNAL,
            start_time_unix_nano: start,
            end_time_unix_nano: th.end.unwrap_or(end).max(start),
            attributes: attrs,
            ..Span::default()
        };
        self.done.push((SpanClass::Verbose, span));
    }

    fn finish_child(&mut self, mut c: Child) {
        let a = &mut c.span.attributes;
        a.push(kv_str("trace2.span.type", "child"));
        if !c.argv.is_empty() {
            a.push(kv_str("trace2.child.argv", json_array(&c.argv)));
        }
        a.push(kv_str("trace2.child.pid", c.pid.to_string()));
        a.push(kv_str("trace2.child.exitcode", c.code.to_string()));
        if let Some(ready) = c.ready {
            a.push(kv_str("trace2.child.ready", ready));
        }
        a.push(kv_str("trace2.child.class", c.class.clone()));
        if c.class == "hook" {
            a.push(kv_str(
                "trace2.child.hook",
                c.hook.unwrap_or_else(|| "??".into()),
            ));
        }
        self.done.push((SpanClass::Process, c.span));
    }

    fn finish_exec(&mut self, mut e: Exec) {
        let a = &mut e.span.attributes;
        a.push(kv_str("trace2.span.type", "exec"));
        if !e.argv.is_empty() {
            a.push(kv_str("trace2.exec.argv", json_array(&e.argv)));
        }
        a.push(kv_str("trace2.exec.exe", e.exe));
        a.push(kv_str("trace2.exec.exitcode", e.code.to_string()));
        self.done.push((SpanClass::Process, e.span));
    }

    /// Marks the process ended (if it was not) and closes what is still
    /// open at its end: its last event's time when it never said `atexit`
    /// (trace2receiver uses the time it noticed; the input's own last time
    /// is what the process is known to have reached). Children still
    /// running get pid and exit code -1, as trace2receiver writes them.
    pub fn close(&mut self, how: Ended) {
        if self.ended.is_none() {
            self.ended = Some(how);
        }
        let end = self.end.unwrap_or(self.last);
        let mut threads: Vec<(Box<[u8]>, Thread)> = self.threads.others.drain().collect();
        threads.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, th) in threads {
            self.finish_thread(&name, th, end);
        }
        while let Some(mut reg) = self.threads.main.stack.pop() {
            reg.span.end_time_unix_nano = end.max(reg.span.start_time_unix_nano);
            self.finish_region(reg);
        }
        let mut children: Vec<(i64, Child)> = self.children.drain().collect();
        children.sort_by_key(|c| c.0);
        for (_, mut c) in children {
            c.span.end_time_unix_nano = end.max(c.span.start_time_unix_nano);
            self.finish_child(c);
        }
        let mut execs: Vec<(i64, Exec)> = self.execs.drain().collect();
        execs.sort_by_key(|e| e.0);
        for (_, mut e) in execs {
            e.span.end_time_unix_nano = end.max(e.span.start_time_unix_nano);
            self.finish_exec(e);
        }
    }

    /// trace2receiver's qualified names (`setQualifiedExe*Name`).
    pub fn names(&self) -> QualifiedNames {
        let argv0 = self.argv.first().map(String::as_str).unwrap_or("");
        let mut exe = base_name(argv0).to_string();
        if let Some(dot) = exe.rfind('.') {
            if exe[dot..].eq_ignore_ascii_case(".exe") {
                exe.truncate(dot);
            }
        }
        let mut exe_verb = exe.clone();
        if !self.verb.is_empty() {
            exe_verb.push(':');
            if self.verb == "_run_dashed_" {
                match self.argv.get(1) {
                    Some(a1) => exe_verb.push_str(a1),
                    None => exe_verb.push_str("_run_dashed_"),
                }
            } else {
                exe_verb.push_str(&self.verb);
            }
        }
        let mut exe_verb_mode = exe_verb.clone();
        if !self.mode.is_empty() {
            exe_verb_mode.push('#');
            exe_verb_mode.push_str(&self.mode);
        }
        QualifiedNames {
            exe,
            exe_verb,
            exe_verb_mode,
            verb: self.verb.clone(),
        }
    }

    /// The value of `def_param` `key` (the highest-priority scope's).
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(|(v, _)| v.as_str())
    }

    /// Whether `start` arrived (trace2receiver drops processes without
    /// it: nothing is known about the command).
    pub fn has_argv(&self) -> bool {
        !self.argv.is_empty()
    }

    /// Whether any event carried a time (OTLP needs absolute times; brief
    /// EVENT output has none).
    pub fn is_timed(&self) -> bool {
        self.timed
    }

    pub fn exe_version(&self) -> &str {
        &self.exe_version
    }

    /// The process span, at detail `dl` (after [`Process::close`]).
    /// `q`: [`Process::names`].
    pub fn process_span(
        &mut self,
        q: &QualifiedNames,
        dl: Detail,
        nickname_key: Option<&str>,
        pii: &[KeyValue],
    ) -> Span {
        let start = self.start.unwrap_or(self.last);
        let end = self.end.unwrap_or(self.last).max(start);
        let exit_code = self.exit_code.unwrap_or(-1);
        let mut a = vec![
            kv_str("trace2.span.type", "process"),
            kv_str("trace2.machine.arch", machine_arch()),
            kv_str("trace2.machine.os", std::env::consts::OS),
        ];
        a.extend(pii.iter().cloned());
        a.push(kv_str("trace2.cmd.name", q.exe.clone()));
        a.push(kv_str("trace2.cmd.name_verb", q.exe_verb.clone()));
        a.push(kv_str("trace2.cmd.name_verb_mode", q.exe_verb_mode.clone()));
        a.push(kv_str("trace2.cmd.hierarchy", self.hierarchy.clone()));
        a.push(kv_str("trace2.cmd.exit_code", exit_code.to_string()));
        if !self.argv.is_empty() {
            a.push(kv_str("trace2.cmd.argv", json_array(&self.argv)));
        }
        if dl.process_details() && !self.ancestry.is_empty() {
            a.push(kv_str("trace2.cmd.ancestry", json_array(&self.ancestry)));
        }
        if dl.process_details() && !self.alias_key.is_empty() {
            a.push(kv_str("trace2.cmd.alias.key", self.alias_key.clone()));
            if !self.alias_value.is_empty() {
                a.push(kv_str(
                    "trace2.cmd.alias.value",
                    json_array(&self.alias_value),
                ));
            }
        }
        if let Some((fmt, msg)) = &self.error {
            if !fmt.is_empty() {
                a.push(kv_str("trace2.cmd.error.format", fmt.clone()));
            }
            if !msg.is_empty() {
                a.push(kv_str("trace2.cmd.error.message", msg.clone()));
            }
        }
        if !self.repos.is_empty() {
            a.push(kv_str(
                "trace2.repo.set",
                serde_json::to_string(&self.repos).unwrap_or_default(),
            ));
        }
        if !self.params.is_empty() {
            let values: BTreeMap<&str, &str> = self
                .params
                .iter()
                .map(|(k, (v, _))| (k.as_str(), v.as_str()))
                .collect();
            a.push(kv_str(
                "trace2.param.set",
                serde_json::to_string(&values).unwrap_or_default(),
            ));
        }
        if let Some(nick) = nickname_key
            .and_then(|k| self.param(k))
            .filter(|n| !n.is_empty())
        {
            a.push(kv_str("trace2.repo.nickname", nick.to_string()));
        }
        if dl.region_and_thread_spans() {
            if !self.threads.main.timers.is_empty() {
                a.push(kv_str(
                    "trace2.thread.timers",
                    serde_json::to_string(&self.threads.main.timers).unwrap_or_default(),
                ));
            }
            if !self.threads.main.counters.is_empty() {
                a.push(kv_str(
                    "trace2.thread.counters",
                    serde_json::to_string(&self.threads.main.counters).unwrap_or_default(),
                ));
            }
        }
        if dl.process_details() {
            if !self.data.is_empty() {
                a.push(kv_str(
                    "trace2.process.data",
                    serde_json::to_string(&self.data).unwrap_or_default(),
                ));
            }
            if !self.timers.is_empty() {
                a.push(kv_str(
                    "trace2.process.timers",
                    serde_json::to_string(&self.timers).unwrap_or_default(),
                ));
            }
            if !self.counters.is_empty() {
                a.push(kv_str(
                    "trace2.process.counters",
                    serde_json::to_string(&self.counters).unwrap_or_default(),
                ));
            }
        }
        if let Some(how) = self
            .ended
            .filter(|h| !matches!(h, Ended::AtExit | Ended::Signal))
        {
            a.push(kv_str(
                "tracekit.process.end",
                match how {
                    Ended::Closed => "connection closed without atexit",
                    Ended::ByParent => "parent's child_exit without atexit",
                    Ended::TimedOut => "timed out without atexit",
                    Ended::Shutdown => "receiver stopped before atexit",
                    Ended::AtExit | Ended::Signal => "",
                },
            ));
        }
        let events: Vec<SpanEvent> = self
            .events
            .drain(..)
            .filter(|(needs, _)| !needs || dl.process_details())
            .map(|(_, e)| e)
            .collect();
        Span {
            trace_id: self.trace_id.to_vec(),
            span_id: self.span_id.to_vec(),
            parent_span_id: self.parent_span_id.map(|p| p.to_vec()).unwrap_or_default(),
            name: q.exe_verb_mode.clone(),
            kind: span_kind::SERVER,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: a,
            events,
            dropped_events_count: self.dropped_events,
            ..Span::default()
        }
    }
}

/// trace2receiver's child span names (`makeChildDisplayName`).
fn child_display_name(class: &str, hook: Option<&str>, argv: &[String]) -> String {
    match class {
        "editor" | "pager" => format!("child(class:{class})"),
        "hook" => format!("child(hook:{})", hook.unwrap_or("??")),
        "git_alias" => "child(alias:git)".into(),
        "shell_alias" => "child(alias:shell)".into(),
        "dashed" => format!(
            "child(dashed:{})",
            argv.first().map(String::as_str).unwrap_or("?")
        ),
        "cred" => {
            if let Some(a1) = argv.get(1) {
                return format!("child(cred:{a1})");
            }
            let a0 = argv.first().map(String::as_str).unwrap_or("");
            if a0.ends_with("get") {
                "child(cred:get)".into()
            } else if a0.ends_with("store") {
                "child(cred:store)".into()
            } else if a0.ends_with("erase") {
                "child(cred:erase)".into()
            } else {
                "child(cred:unknown)".into()
            }
        }
        "?" => "child(class:unknown)".into(),
        other => format!("child(class:{other})"),
    }
}

/// The machine architecture as Go's `runtime.GOARCH` names it (what
/// trace2receiver writes in `trace2.machine.arch`).
pub fn machine_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_trace2receiver() {
        assert_eq!(
            normalize("Fetch-Pack.negotiation (v2):x"),
            "fetch_pack_negotiation__v2__x"
        );
        assert_eq!(
            child_display_name("hook", Some("pre-commit"), &[]),
            "child(hook:pre-commit)"
        );
        assert_eq!(
            child_display_name("cred", None, &["git credential-cache get".into()]),
            "child(cred:get)"
        );
        assert_eq!(
            child_display_name("transport/ssh", None, &[]),
            "child(class:transport/ssh)"
        );
        assert_eq!(base_name("C:\\Program Files\\Git\\git.exe"), "git.exe");
        let mut p = Process::new(b"a/b");
        p.argv = vec!["/usr/bin/git.EXE".into(), "remote-https".into()];
        p.verb = "_run_dashed_".into();
        let q = p.names();
        assert_eq!(
            (q.exe.as_str(), q.exe_verb.as_str()),
            ("git", "git:remote-https")
        );
        p.verb = "checkout".into();
        p.mode = "branch".into();
        assert_eq!(p.names().exe_verb_mode, "git:checkout#branch");
    }
}
