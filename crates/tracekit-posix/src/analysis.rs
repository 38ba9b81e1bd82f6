//! What `tracekit info`, `report` and `posix dump` show about a trace log,
//! for library users: one pass over the log's events ([`summarise`]) and
//! the orderings the report prints ([`Summary::top_types`],
//! [`Summary::top_threads`]).

use std::collections::BTreeMap;

use crate::consts::*;
use crate::log::{EventInfo, LogReader};

/// Counts over the events of a log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    /// Events read (corrupt records excluded).
    pub events: u64,
    /// Per event type: events and payload bytes.
    pub by_type: BTreeMap<u32, (u64, u64)>,
    /// Events per pid.
    pub pids: BTreeMap<i32, u64>,
    /// Events per (pid, thread).
    pub threads: BTreeMap<(i32, u64), u64>,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    /// Events truncated when recorded.
    pub truncated: u64,
    /// Records that could not be read (the rest of their block is skipped).
    pub corrupt: u64,
}

/// Reads `r` from its current position to the end.
pub fn summarise(r: &mut LogReader) -> Summary {
    let mut s = Summary::default();
    while let Some(e) = r.next_event() {
        match e {
            Ok(e) => s.add(&e.info, e.data.len()),
            Err(_) => s.corrupt += 1,
        }
    }
    s
}

impl Summary {
    /// Counts one event with a payload of `len` bytes.
    pub fn add(&mut self, i: &EventInfo, len: usize) {
        self.events += 1;
        let t = self.by_type.entry(i.event_id).or_default();
        t.0 += 1;
        t.1 += len as u64;
        *self.pids.entry(i.pid).or_default() += 1;
        *self.threads.entry((i.pid, i.thread)).or_default() += 1;
        self.first_ns = Some(
            self.first_ns
                .map_or(i.timestamp_ns, |f| f.min(i.timestamp_ns)),
        );
        self.last_ns = Some(
            self.last_ns
                .map_or(i.timestamp_ns, |l| l.max(i.timestamp_ns)),
        );
        if i.truncation != POSIX_TRACE_NOT_TRUNCATED {
            self.truncated += 1;
        }
    }

    /// Seconds from the first to the last event.
    pub fn span_s(&self) -> Option<f64> {
        self.last_ns
            .zip(self.first_ns)
            .map(|(l, f)| (l - f) as f64 / 1e9)
    }

    /// Events per second over the span (0 without a span).
    pub fn events_per_s(&self) -> f64 {
        match self.span_s() {
            Some(s) if s > 0.0 => self.events as f64 / s,
            _ => 0.0,
        }
    }

    /// The `n` most frequent event types: (id, events, payload bytes),
    /// most events first, then by id.
    pub fn top_types(&self, n: usize) -> Vec<(u32, u64, u64)> {
        let mut types: Vec<(u32, u64, u64)> = self
            .by_type
            .iter()
            .map(|(i, (n, b))| (*i, *n, *b))
            .collect();
        types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        types.truncate(n);
        types
    }

    /// The `n` busiest threads: ((pid, thread), events), most events first.
    pub fn top_threads(&self, n: usize) -> Vec<((i32, u64), u64)> {
        let mut threads: Vec<((i32, u64), u64)> =
            self.threads.iter().map(|(k, v)| (*k, *v)).collect();
        threads.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        threads.truncate(n);
        threads
    }
}

/// The name of an event type of `r`, or `event-ID` for one it does not name.
pub fn event_name(r: &LogReader, id: u32) -> Vec<u8> {
    r.type_name(id)
        .map(<[u8]>::to_vec)
        .unwrap_or_else(|| format!("event-{id}").into_bytes())
}

/// A stream- or log-full-policy as the CLI spells it.
pub fn policy_name(p: i32) -> &'static str {
    match p {
        POSIX_TRACE_LOOP => "loop",
        POSIX_TRACE_UNTIL_FULL => "until-full",
        POSIX_TRACE_FLUSH => "flush",
        POSIX_TRACE_APPEND => "append",
        _ => "unknown",
    }
}

/// An event's payload in hex.
pub fn hex(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// An event's payload as text: printable ASCII as is, anything else `.`.
pub fn printable(data: &[u8]) -> String {
    data.iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            }
        })
        .collect()
}
