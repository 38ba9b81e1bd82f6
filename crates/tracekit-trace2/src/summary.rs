//! What `tracekit info` says about a trace2 input: format, producer,
//! events by kind, time span, processes and threads.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use tracekit_core::{Position, Warnings};

use crate::event::{Body, Event, Kind, Time};
use crate::reader::{Format, RecordIter};
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
    /// Distinct SIDs (EVENT), or `version` events (PERF/NORMAL: one per
    /// process).
    pub processes: u64,
    /// Distinct (process, thread) pairs; PERF counts (depth, thread).
    pub threads: u64,
    /// Processes that wrote neither `atexit` nor `signal` (crashed,
    /// killed, still running, or cut off).
    pub unfinished: u64,
    pub bytes: u64,
    sids: HashSet<Vec<u8>>,
    ended: HashSet<Vec<u8>>,
    thread_keys: HashSet<(Vec<u8>, Vec<u8>)>,
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
        if matches!(kind, Kind::AtExit | Kind::Signal) {
            self.ends_seen += 1;
            if let Some(sid) = &ev.sid {
                self.ended.insert(sid.to_vec());
            }
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
        match &ev.sid {
            Some(sid) => {
                if !self.sids.contains(&sid[..]) {
                    self.sids.insert(sid.to_vec());
                }
                let key = (sid.to_vec(), thread.to_vec());
                self.thread_keys.insert(key);
            }
            None => {
                let d = ev.depth.unwrap_or(0).to_string().into_bytes();
                self.thread_keys.insert((d, thread.to_vec()));
            }
        }
    }

    /// Reads every record of `data`, counting unreadable ones as warnings.
    pub fn add_bytes(&mut self, data: &[u8], format: Format, warnings: &mut Warnings) {
        self.bytes += data.len() as u64;
        for rec in RecordIter::new(data, format) {
            match format.parse(rec.bytes) {
                Ok(ev) => self.add(&ev),
                Err(e) => warnings.push(
                    Position::Line(rec.line),
                    if rec.unterminated {
                        format!("record cut short (no newline at end of input): {e}")
                    } else {
                        e.to_string()
                    },
                ),
            }
        }
    }

    /// Fills in the derived counts; call once after the last record.
    pub fn finish(&mut self) {
        if self.sids.is_empty() {
            self.processes = self.versions_seen;
            self.unfinished = self.versions_seen.saturating_sub(self.ends_seen);
        } else {
            self.processes = self.sids.len() as u64;
            self.unfinished = self
                .sids
                .iter()
                .filter(|s| !self.ended.contains(*s))
                .count() as u64;
        }
        self.threads = self.thread_keys.len() as u64;
    }
}
