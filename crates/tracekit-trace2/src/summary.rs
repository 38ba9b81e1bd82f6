//! What `tracekit info` says about a trace2 input: format, producer,
//! events by kind, time span, processes and threads.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

use crate::event::{Body, Event, Kind, Time};
use crate::time::{TimeOfDay, UnixMicros};

/// Facts gathered from one pass over the records.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub records: u64,
    pub by_kind: BTreeMap<&'static str, u64>,
    /// Git versions seen in `version` events (`exe`).
    pub producers: BTreeSet<String>,
    /// EVENT format versions (`evt`).
    pub evt_versions: BTreeSet<String>,
    /// UTC span from EVENT `time` fields.
    pub first_utc: Option<UnixMicros>,
    pub last_utc: Option<UnixMicros>,
    /// Time-of-day span from PERF/NORMAL (no date).
    pub first_of_day: Option<TimeOfDay>,
    pub last_of_day: Option<TimeOfDay>,
    /// Distinct SIDs (EVENT) and the processes that went on under a SID
    /// after its `atexit`/`signal` (forked: `maintenance run --detach`),
    /// or `version` events (PERF/NORMAL: one per process).
    pub processes: u64,
    /// Distinct (process, thread) pairs; PERF counts (depth, thread).
    pub threads: u64,
    /// Processes that wrote neither `atexit` nor `signal` (crashed,
    /// killed, still running, or cut off).
    pub unfinished: u64,
    pub bytes: u64,
    /// Per SID: the threads seen (a process has few: a linear scan), and
    /// whether its last record ended its process; keyed so that a lookup
    /// borrows and only a new process or thread allocates.
    threads_by_sid: FxHashMap<Vec<u8>, (Vec<Vec<u8>>, bool)>,
    /// Threads seen per PERF depth, for input without SIDs.
    threads_by_depth: FxHashMap<u32, Vec<Vec<u8>>>,
    /// Records of a SID after its process ended: another process each.
    forks: u64,
    versions_seen: u64,
    ends_seen: u64,
}

impl Summary {
    pub fn add(&mut self, ev: &Event<'_>) {
        self.records += 1;
        let kind = ev.kind();
        let name: &'static str = match kind {
            Kind::Unknown => "(unknown)",
            k => k.name(),
        };
        *self.by_kind.entry(name).or_default() += 1;
        if let Body::Version { evt, exe } = &ev.body {
            self.versions_seen += 1;
            if self.producers.len() < 16 {
                self.producers
                    .insert(format!("git {}", String::from_utf8_lossy(exe)));
            }
            if let Some(e) = evt {
                self.evt_versions
                    .insert(String::from_utf8_lossy(e).into_owned());
            }
        }
        let ends = crate::event::ends_process(kind);
        if ends {
            self.ends_seen += 1;
        }
        match &ev.time {
            Some(Time::Iso(_)) => {
                if let Some(u) = ev.time.as_ref().and_then(Time::unix) {
                    self.first_utc = Some(self.first_utc.map_or(u, |f| f.min(u)));
                    self.last_utc = Some(self.last_utc.map_or(u, |l| l.max(u)));
                }
            }
            Some(Time::OfDay(t)) => {
                self.first_of_day.get_or_insert(*t);
                self.last_of_day = Some(*t);
            }
            None => {}
        }
        let thread = ev.thread.as_deref().unwrap_or(b"main");
        let threads = match &ev.sid {
            Some(sid) => {
                let (threads, ended) = match self.threads_by_sid.get_mut(&sid[..]) {
                    Some(t) => t,
                    None => self.threads_by_sid.entry(sid.to_vec()).or_default(),
                };
                if *ended {
                    self.forks += 1;
                }
                *ended = ends;
                threads
            }
            None => self
                .threads_by_depth
                .entry(ev.depth.unwrap_or(0))
                .or_default(),
        };
        if !threads.iter().any(|t| t == thread) {
            threads.push(thread.to_vec());
        }
    }

    /// Fills in the derived counts; call once after the last record.
    pub fn finish(&mut self) {
        if self.threads_by_sid.is_empty() {
            self.processes = self.versions_seen;
            self.unfinished = self.versions_seen.saturating_sub(self.ends_seen);
        } else {
            self.processes = self.threads_by_sid.len() as u64 + self.forks;
            self.unfinished = self
                .threads_by_sid
                .values()
                .filter(|(_, ended)| !ended)
                .count() as u64;
        }
        self.threads = self
            .threads_by_sid
            .values()
            .map(|(t, _)| t)
            .chain(self.threads_by_depth.values())
            .map(|t| t.len() as u64)
            .sum();
    }
}
