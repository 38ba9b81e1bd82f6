//! Git Trace2 sessions as OpenTelemetry traces, the job of git-ecosystem's
//! trace2receiver: [`Forwarder`] watches what `tracekit trace2 listen`
//! receives (it is a [`tracekit_trace2::receiver::Observer`]), assembles
//! each git session from its processes' EVENT lines and hands it, as one
//! trace, to a [`PieceOutput`] (the [`crate::exporter::Exporter`]).
//!
//! # Sessions
//!
//! A session is a top-level git command and every process below it: all
//! SIDs sharing their first component, whichever connection (or datagram)
//! their lines come on. A process has **ended** at its `atexit` (or
//! `signal`), when its connection closes (a crash or a kill closes it
//! too), when its parent's `child_exit`/`child_ready` for its pid arrives,
//! or when it has been silent for [`ForwarderConfig::session_timeout`]. A
//! session is **complete** when every process it has has ended; it is sent
//! [`ForwarderConfig::settle`] later if nothing new arrived for it by then
//! (a child's connection may still be queued on the listener when its
//! parent's `atexit` is read). Lines of a session that arrive after it was
//! sent (a detached background child) form a later part of the same trace
//! (same trace id, parents by SID), counted as `late_processes`.
//!
//! # Span model
//!
//! Per process, as trace2receiver builds it ([`process`]): one
//! `ResourceSpans` whose resource carries `service.namespace` = `trace2`,
//! `service.name` = `<exe>:<verb>#<mode>`, `service.version` = the git
//! version, `service.instance.id` = the SID, `trace2.cmd.version`,
//! `trace2.cmd.sid`, and (unless turned off) `host.name` and `user.name`
//! (the git process's user, from the socket's peer credentials; for
//! datagrams, the receiver's own user). Ids are trace2receiver's: trace
//! id from the SID's first component, process span ids from SID
//! components ([`crate::ids`]); the other spans' ids derive from the
//! process span id and their order.
//!
//! Added where trace2receiver has no name (its spans carry these as JSON
//! attributes only): span events `error` (`trace2.cmd.error.message`,
//! `.format`), `signal` (`trace2.signal.signo`), `data`/`data_json`
//! (`trace2.data.category`, `.key`, `.value`, `.nesting`) on the region
//! the data belongs to or the process span; `tracekit.process.end` on a
//! process span that never said `atexit`, telling how its end was known.
//!
//! # Filters and memory
//!
//! [`filter`] decides per session (keep/drop by the top-level command) and
//! per process (detail levels); [`crate::redact`] runs on every string.
//! Memory is bounded by the open sessions: a session holding more than
//! [`ForwarderConfig::max_buffered_spans`] finished spans sends them ahead
//! (a part without the session count), so a long-running process cannot
//! grow the receiver.

pub mod filter;
pub mod process;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracekit_trace2::event::{sid_parent, sid_root, Body};
use tracekit_trace2::receiver::{Format, LineSource, Observer};

use crate::batch::Piece;
use crate::proto::{kv_str, resource_spans, sdk_attributes, KeyValue};
use crate::redact::Redactor;
use crate::sink::PieceOutput;
use filter::{Detail, QualifiedNames, Rules};
use process::{Ended, Process, SpanClass};

/// How the forwarder assembles and filters.
#[derive(Debug, Clone)]
pub struct ForwarderConfig {
    pub rules: Rules,
    pub redactor: Arc<Redactor>,
    /// Wait after a session is complete before sending it.
    pub settle: Duration,
    /// A process silent this long has ended.
    pub session_timeout: Duration,
    /// Finished spans a session may hold before they are sent ahead.
    pub max_buffered_spans: usize,
    /// Complete sessions waiting for their settle time; past it the oldest
    /// are sent at once.
    pub max_settling: usize,
    /// `host.name` (and `trace2.pii.hostname`).
    pub host: Option<String>,
    /// `user.name` (and `trace2.pii.username`), looked up from uids.
    pub user: bool,
}

impl Default for ForwarderConfig {
    fn default() -> Self {
        ForwarderConfig {
            rules: Rules::default(),
            redactor: Arc::new(Redactor::none()),
            settle: Duration::from_millis(300),
            session_timeout: Duration::from_secs(600),
            max_buffered_spans: 20_000,
            max_settling: 256,
            host: None,
            user: false,
        }
    }
}

/// What the forwarder did; every count is exact.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ForwardStats {
    /// Sessions handed to the exporter (kept by the filters).
    pub sessions: u64,
    /// Sessions dropped by `keep`/`drop`.
    pub sessions_filtered: u64,
    /// Processes handed to the exporter.
    pub processes: u64,
    /// Processes at `dl:drop`.
    pub processes_filtered: u64,
    /// Processes without a `start` event (nothing is known about the
    /// command; trace2receiver drops them too).
    pub processes_without_start: u64,
    /// Processes whose events carry no time (brief EVENT output): OTLP
    /// needs absolute times; not sent.
    pub processes_without_time: u64,
    /// Processes of a session that had been sent already.
    pub late_processes: u64,
    /// Processes whose end was known without `atexit`/`signal`.
    pub ended_by_connection: u64,
    pub ended_by_parent: u64,
    pub ended_by_timeout: u64,
    pub ended_by_shutdown: u64,
    pub spans: u64,
    /// Parts of sessions sent ahead to bound memory.
    pub parts_sent_ahead: u64,
    /// EVENT lines that did not parse.
    pub lines_unparsed: u64,
    /// EVENT lines without a `sid`.
    pub lines_without_sid: u64,
    /// PERF and NORMAL lines (they carry no SID: not forwarded).
    pub lines_not_event: u64,
    pub unmatched_regions: u64,
    pub events_dropped: u64,
    /// Threads whose events came without their `thread_start` (given a
    /// span from their first event).
    pub undeclared_threads: u64,
    /// Pieces the output refused (the exporter never does; a file may).
    pub output_errors: u64,
    /// Sessions still being assembled when the receiver stopped (sent
    /// then, their open processes ended by the shutdown).
    pub sessions_open_at_stop: u64,
    /// The first problems, with their line (at most 20).
    pub warnings: Vec<String>,
}

impl ForwardStats {
    fn warn(&mut self, w: String) {
        if self.warnings.len() < 20 {
            self.warnings.push(w);
        }
    }
}

struct Session {
    procs: HashMap<Box<[u8]>, Process>,
    complete_since: Option<Instant>,
    last_activity: Instant,
    /// A part of this session was sent already (late lines, or sent
    /// ahead): this part does not count as a session again.
    continued: bool,
    buffered: usize,
}

/// Remembers the last sessions sent (a 64-bit hash of each key, 24 bytes
/// a session), to recognise late lines: a session whose late part comes
/// after [`Recent::CAP`] newer sessions were sent counts twice.
struct Recent {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Recent {
    const CAP: usize = 1 << 16;

    fn hash(key: &[u8]) -> u64 {
        use std::hash::Hasher;
        // Fixed keys: the same key always hashes the same.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write(key);
        h.finish()
    }

    fn contains(&self, key: &[u8]) -> bool {
        self.set.contains(&Self::hash(key))
    }

    fn insert(&mut self, key: &[u8]) {
        let h = Self::hash(key);
        if self.set.insert(h) {
            self.order.push_back(h);
            if self.order.len() > Self::CAP {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

/// Assembles sessions and hands them on; see the module docs.
pub struct Forwarder<O: PieceOutput> {
    config: ForwarderConfig,
    out: O,
    sessions: HashMap<Box<[u8]>, Session>,
    /// Stream connection → the SIDs it carried.
    conns: HashMap<u64, Vec<Box<[u8]>>>,
    recent: Recent,
    /// Sessions that became complete, in that order, with the time they
    /// are due: sent once settled, checked on every line and connection end (a round of
    /// the receiver's poll loop can be long under a flood, and waiting for
    /// the next tick would hold every session completed meanwhile).
    completed: VecDeque<(Box<[u8]>, Instant)>,
    users: HashMap<u32, Option<String>>,
    own_uid: u32,
    stats: ForwardStats,
}

/// The name of user `uid` (`getpwuid_r`).
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: zeroed passwd is a valid out-parameter for getpwuid_r.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; `buf` outlives the use
    // of the strings it holds (copied below before it is dropped).
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded: pw_name is a NUL-terminated string in `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// This machine's host name.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    (!name.is_empty()).then_some(name)
}

impl<O: PieceOutput> Forwarder<O> {
    pub fn new(config: ForwarderConfig, out: O) -> Self {
        Forwarder {
            config,
            out,
            sessions: HashMap::new(),
            conns: HashMap::new(),
            recent: Recent {
                set: HashSet::new(),
                order: VecDeque::new(),
            },
            completed: VecDeque::new(),
            users: HashMap::new(),
            // SAFETY: getuid cannot fail.
            own_uid: unsafe { libc::getuid() },
            stats: ForwardStats::default(),
        }
    }

    pub fn stats(&self) -> &ForwardStats {
        &self.stats
    }

    /// Sessions being assembled.
    pub fn open_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// One EVENT line (with or without its newline).
    pub fn line(&mut self, line: &[u8], conn: Option<u64>, uid: Option<u32>, now: Instant) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let ev = match tracekit_trace2::event_fmt::parse(line) {
            Ok(ev) => ev,
            Err(e) => {
                self.stats.lines_unparsed += 1;
                let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
                self.stats
                    .warn(format!("EVENT line did not parse ({e}): {shown}"));
                return;
            }
        };
        let Some(sid) = ev.sid.as_deref() else {
            self.stats.lines_without_sid += 1;
            return;
        };
        let key = sid_root(sid);
        if !self.sessions.contains_key(key) {
            let continued = self.recent.contains(key);
            self.sessions.insert(
                key.into(),
                Session {
                    procs: HashMap::new(),
                    complete_since: None,
                    last_activity: now,
                    continued,
                    buffered: 0,
                },
            );
        }
        let session = self.sessions.get_mut(key).expect("inserted above");
        session.last_activity = now;
        if !session.procs.contains_key(sid) {
            if session.continued {
                self.stats.late_processes += 1;
            }
            let mut p = Process::new(sid);
            p.uid = uid;
            session.procs.insert(sid.into(), p);
            if let Some(c) = conn {
                self.conns.entry(c).or_default().push(sid.into());
            }
        }
        let p = session.procs.get_mut(sid).expect("inserted above");
        let before = p.done.len();
        p.apply(&ev, &self.config.redactor);
        session.buffered += p.done.len().saturating_sub(before);
        let this_ended = p.ended.is_some();
        // A parent's word that a child is gone.
        if let Body::ChildExit { pid, .. } | Body::ChildReady { pid, .. } = &ev.body {
            for (child_sid, child) in session.procs.iter_mut() {
                if child.ended.is_none()
                    && child.pid == Some(*pid)
                    && sid_parent(child_sid) == Some(sid)
                {
                    child.ended = Some(Ended::ByParent);
                }
            }
        }
        // While this process runs its session is not complete: no need to
        // look at the others (a session can have hundreds).
        let newly = if this_ended {
            Self::update_complete(session, now)
        } else {
            session.complete_since = None;
            false
        };
        let over = session.buffered > self.config.max_buffered_spans;
        if newly {
            self.completed
                .push_back((key.into(), now + self.config.settle));
        }
        if over {
            self.send_ahead(key);
        }
        self.send_settled(now);
    }

    /// Notes whether every process of the session has ended; true when it
    /// just became complete.
    fn update_complete(session: &mut Session, now: Instant) -> bool {
        let all_ended = session.procs.values().all(|p| p.ended.is_some());
        if !all_ended {
            session.complete_since = None;
        } else if session.complete_since.is_none() {
            session.complete_since = Some(now);
            return true;
        }
        false
    }

    /// Sends the complete sessions whose settle time has passed, and the
    /// oldest ones beyond [`ForwarderConfig::max_settling`] (a burst of
    /// queued connections completes thousands at once).
    fn send_settled(&mut self, now: Instant) {
        let settle = self.config.settle;
        while let Some((_, due)) = self.completed.front() {
            let crowded = self.completed.len() > self.config.max_settling;
            if now < *due && !crowded {
                return;
            }
            let (key, _) = self.completed.pop_front().expect("checked");
            let Some(s) = self.sessions.get(&key) else {
                continue; // sent already
            };
            let Some(since) = s.complete_since else {
                continue; // a new process joined: queued again when it ends
            };
            let at = (since + settle).max(s.last_activity + settle);
            if now >= at || crowded {
                self.send_session(&key);
            } else {
                self.completed.push_back((key, at));
            }
        }
    }

    /// A stream connection ended: its processes have.
    pub fn connection_closed(&mut self, conn: u64, now: Instant) {
        for sid in self.conns.remove(&conn).unwrap_or_default() {
            let key = sid_root(&sid);
            if let Some(session) = self.sessions.get_mut(key) {
                if let Some(p) = session.procs.get_mut(&sid) {
                    if p.ended.is_none() {
                        p.ended = Some(Ended::Closed);
                    }
                }
                if Self::update_complete(session, now) {
                    self.completed
                        .push_back((key.into(), now + self.config.settle));
                }
            }
        }
        self.send_settled(now);
    }

    /// Sends what is due; returns when to be called again.
    pub fn tick(&mut self, now: Instant) -> Option<Instant> {
        self.send_settled(now);
        let settle = self.config.settle;
        let timeout = self.config.session_timeout;
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for (key, s) in self.sessions.iter_mut() {
            if now >= s.last_activity + timeout {
                for p in s.procs.values_mut() {
                    if p.ended.is_none() {
                        p.ended = Some(Ended::TimedOut);
                    }
                }
                due.push(key.clone());
                continue;
            }
            let at = match s.complete_since {
                Some(since) => (since + settle).max(s.last_activity + settle),
                None => s.last_activity + timeout,
            };
            if now >= at {
                due.push(key.clone());
            } else {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        for key in due {
            self.send_session(&key);
        }
        next
    }

    /// Ends every process still open (the receiver stopped) and sends
    /// every session; returns the output and the counts.
    pub fn finish(mut self) -> (O, ForwardStats) {
        self.stats.sessions_open_at_stop = self.sessions.len() as u64;
        let mut keys: Vec<Box<[u8]>> = self.sessions.keys().cloned().collect();
        keys.sort();
        for key in keys {
            if let Some(s) = self.sessions.get_mut(&key) {
                for p in s.procs.values_mut() {
                    if p.ended.is_none() {
                        p.ended = Some(Ended::Shutdown);
                    }
                }
            }
            self.send_session(&key);
        }
        (self.out, self.stats)
    }

    /// The process whose command decides the session's keep/drop: the
    /// topmost ancestor of `sid` present in the session.
    fn decider<'s>(session: &'s Session, sid: &'s [u8]) -> &'s Process {
        let mut at = sid;
        while let Some(parent) = sid_parent(at) {
            if !session.procs.contains_key(parent) {
                break;
            }
            at = parent;
        }
        &session.procs[at]
    }

    fn resource(&mut self, p: &Process, q: &QualifiedNames) -> (Vec<KeyValue>, Vec<KeyValue>) {
        let r = &self.config.redactor;
        let sid = String::from_utf8_lossy(&p.sid).into_owned();
        let mut res = vec![
            kv_str("service.namespace", "trace2"),
            kv_str("service.name", q.exe_verb_mode.clone()),
            kv_str("service.version", p.exe_version().to_string()),
            kv_str("service.instance.id", sid.clone()),
        ];
        res.extend(sdk_attributes());
        res.push(kv_str("trace2.cmd.version", p.exe_version().to_string()));
        res.push(kv_str("trace2.cmd.sid", sid));
        let mut pii = Vec::new();
        if let Some(h) = &self.config.host {
            let h = r.apply(h).into_owned();
            res.push(kv_str("host.name", h.clone()));
            pii.push(kv_str("trace2.pii.hostname", h));
        }
        if self.config.user {
            let uid = p.uid.unwrap_or(self.own_uid);
            let name = self
                .users
                .entry(uid)
                .or_insert_with(|| user_name(uid))
                .clone();
            if let Some(n) = name {
                let n = r.apply(&n).into_owned();
                res.push(kv_str("user.name", n.clone()));
                pii.push(kv_str("trace2.pii.username", n));
            }
            res.push(crate::proto::kv_int("user.id", i64::from(uid)));
        }
        (res, pii)
    }

    fn wanted(class: SpanClass, dl: Detail) -> bool {
        match class {
            SpanClass::Verbose => dl.region_and_thread_spans(),
            SpanClass::Process => dl.process_details(),
        }
    }

    fn put(&mut self, piece: Piece) {
        if self.out.put(piece).is_err() {
            self.stats.output_errors += 1;
        }
    }

    /// Sends the finished spans of a session that holds too many, ahead
    /// of the session (only of processes whose command is known).
    fn send_ahead(&mut self, key: &[u8]) {
        let Some(mut session) = self.sessions.remove(key) else {
            return;
        };
        let mut piece = Piece::default();
        let sids: Vec<Box<[u8]>> = session.procs.keys().cloned().collect();
        for sid in sids {
            let (keep, dl, q) = {
                let decider = Self::decider(&session, &sid);
                let p = &session.procs[&sid];
                if !decider.named() || !p.named() {
                    continue;
                }
                let keep = self.config.rules.keeps_session(&decider.names());
                let q = p.names();
                let nick = self
                    .config
                    .rules
                    .nickname_key
                    .as_deref()
                    .and_then(|k| p.param(k));
                (keep, self.config.rules.detail(&q, nick), q)
            };
            let p = session.procs.get_mut(&sid).expect("listed above");
            let done = std::mem::take(&mut p.done);
            if !keep || dl == Detail::Drop {
                continue;
            }
            let spans: Vec<_> = done
                .into_iter()
                .filter(|(c, _)| Self::wanted(*c, dl))
                .map(|(_, s)| s)
                .collect();
            if spans.is_empty() {
                continue;
            }
            self.stats.spans += spans.len() as u64;
            let p = &session.procs[&sid];
            let (res, _) = self.resource(p, &q);
            piece.push(&resource_spans(res, spans));
        }
        session.buffered = 0;
        self.sessions.insert(key.into(), session);
        if !piece.is_empty() {
            self.stats.parts_sent_ahead += 1;
            self.put(piece);
        }
    }

    fn send_session(&mut self, key: &[u8]) {
        let Some(mut session) = self.sessions.remove(key) else {
            return;
        };
        let mut sids: Vec<Box<[u8]>> = session.procs.keys().cloned().collect();
        sids.sort();
        for sid in &sids {
            if let Some(p) = session.procs.get_mut(sid) {
                match p.ended {
                    Some(Ended::Closed) => self.stats.ended_by_connection += 1,
                    Some(Ended::ByParent) => self.stats.ended_by_parent += 1,
                    Some(Ended::TimedOut) => self.stats.ended_by_timeout += 1,
                    Some(Ended::Shutdown) => self.stats.ended_by_shutdown += 1,
                    _ => {}
                }
                p.close(Ended::Shutdown);
                self.stats.unmatched_regions += p.anomalies.unmatched_regions;
                self.stats.events_dropped += p.anomalies.events_dropped;
                self.stats.undeclared_threads += p.anomalies.undeclared_threads;
            }
        }
        let mut piece = Piece::default();
        let mut kept_any = false;
        let mut filtered_all = true;
        // Most processes share their decider (the session's top command).
        let mut keeps: HashMap<Box<[u8]>, bool> = HashMap::new();
        for sid in &sids {
            let decider = Self::decider(&session, sid);
            let keep = match keeps.get(&decider.sid) {
                Some(&keep) => keep,
                None => {
                    let keep = self.config.rules.keeps_session(&decider.names());
                    keeps.insert(decider.sid.clone(), keep);
                    keep
                }
            };
            if !keep {
                continue;
            }
            filtered_all = false;
            let p = session.procs.get_mut(sid).expect("listed above");
            if !p.has_argv() {
                self.stats.processes_without_start += 1;
                continue;
            }
            if !p.is_timed() {
                self.stats.processes_without_time += 1;
                continue;
            }
            let q = p.names();
            let nick = self
                .config
                .rules
                .nickname_key
                .as_deref()
                .and_then(|k| p.param(k))
                .map(str::to_string);
            let dl = self.config.rules.detail(&q, nick.as_deref());
            if dl == Detail::Drop {
                self.stats.processes_filtered += 1;
                continue;
            }
            let done = std::mem::take(&mut p.done);
            let p = &session.procs[sid];
            let (res, pii) = self.resource(p, &q);
            let p = session.procs.get_mut(sid).expect("listed above");
            let mut spans =
                vec![p.process_span(&q, dl, self.config.rules.nickname_key.as_deref(), &pii)];
            spans.extend(
                done.into_iter()
                    .filter(|(c, _)| Self::wanted(*c, dl))
                    .map(|(_, s)| s),
            );
            self.stats.spans += spans.len() as u64;
            self.stats.processes += 1;
            kept_any = true;
            piece.push(&resource_spans(res, spans));
        }
        if filtered_all && !sids.is_empty() {
            self.stats.sessions_filtered += 1;
        }
        if kept_any {
            if !session.continued {
                piece.sessions = 1;
                self.stats.sessions += 1;
            }
            self.put(piece);
        }
        self.recent.insert(key);
    }
}

impl<O: PieceOutput> Observer for Forwarder<O> {
    fn lines(&mut self, source: LineSource, format: Format, lines: &[u8]) {
        let (conn, uid) = match source {
            LineSource::Stream { conn, peer } => (Some(conn), peer.map(|p| p.uid)),
            LineSource::Datagram => (None, None),
        };
        if format != Format::Event {
            self.stats.lines_not_event += memchr::memchr_iter(b'\n', lines).count() as u64;
            return;
        }
        let now = Instant::now();
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', lines) {
            self.line(&lines[start..nl], conn, uid, now);
            start = nl + 1;
        }
        if start < lines.len() {
            self.line(&lines[start..], conn, uid, now);
        }
    }

    fn closed(&mut self, conn: u64) {
        self.connection_closed(conn, Instant::now());
    }

    fn tick(&mut self, now: Instant) -> Option<Instant> {
        Forwarder::tick(self, now)
    }
}
