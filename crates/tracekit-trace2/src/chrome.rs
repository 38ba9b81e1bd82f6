//! Trace2 events as Chrome Trace Event JSON (Perfetto UI, chrome://tracing).
//!
//! One Chrome process per git process (pid = the `P` component of the SID,
//! or a fresh number when that is taken, e.g. by an `exec`'d image), one
//! track per thread. Regions are `B`/`E` slices on their thread; the whole
//! process is a slice on its main thread; children (`child_start` ..
//! `child_exit`) are complete slices on the parent's main thread; data,
//! errors, exit/signal/exec and timers are instant events with args;
//! counters are counter events.
//!
//! Timestamps are microseconds: EVENT's UTC `time` since the Unix epoch;
//! PERF/NORMAL only have a local time of day, used as is (a trace crossing
//! midnight wraps). Events without a time (brief EVENT) are placed at the
//! process start plus their `t_abs`, or at the latest time seen in the
//! process.
//!
//! **Architecture Invariant:** streaming: state is kept per open process
//! only (open slices, pending children) and dropped when it ends; a process
//! that never ends has its open slices closed by [`ChromeExporter::finish`]
//! at the last time it was seen.

use std::collections::HashMap;
use std::collections::HashSet;
use std::io::{self, Write};

use tracekit_export::chrome::{Arg, ChromeWriter, Scope};

use tracekit_core::Warnings;

use crate::event::{sid_own, Body, Event, Time};
use crate::reader::{for_each_in, release_pages, Format};
use crate::report::SyntheticSids;
use crate::time::UnixMicros;

/// Track id of the first child lane of a process (thread tracks count
/// up from 1).
const CHILD_TID: i64 = 1_000_000;

struct ThreadTrack {
    name: Box<[u8]>,
    tid: i64,
    /// Nesting of the regions open on this thread.
    open: Vec<i64>,
}

struct PendingChild {
    ts: f64,
    /// Track (tid) of the child lane it occupies.
    lane: i64,
    name: Vec<u8>,
    class: Vec<u8>,
    argv: Vec<u8>,
}

struct ProcTrack {
    pid: i64,
    named: bool,
    argv: Vec<u8>,
    /// Wall time at `t_abs` = 0, when known.
    base: Option<f64>,
    start: Option<f64>,
    last: f64,
    threads: Vec<ThreadTrack>,
    children: HashMap<i64, PendingChild>,
    /// Child lanes created so far (lane i has tid CHILD_TID + i).
    lanes: i64,
    cmd: Option<Vec<u8>>,
    exit: Option<(&'static str, i64)>,
}

/// Counts of what was written, per kind (for tests and `--verbose`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChromeStats {
    pub processes: u64,
    pub region_slices: u64,
    pub child_slices: u64,
    pub instants: u64,
    pub counters: u64,
    /// `region_leave` with no open region on its thread (not written).
    pub unmatched_leaves: u64,
    /// Regions still open when their process ended or the input did
    /// (closed at the last time seen).
    pub closed_at_end: u64,
    /// Events with no usable time and no earlier event in their process
    /// (written at time 0).
    pub untimed: u64,
}

/// Converts trace2 events, in input order, to Chrome JSON.
pub struct ChromeExporter<W: Write> {
    out: ChromeWriter<W>,
    procs: HashMap<Box<[u8]>, ProcTrack>,
    used_pids: HashSet<i64>,
    next_pid: i64,
    synthetic: SyntheticSids,
    stats: ChromeStats,
}

fn ts_of(time: &Option<Time<'_>>) -> Option<f64> {
    match time {
        Some(Time::Iso(t)) => UnixMicros::parse_iso(t).map(|u| u.0 as f64),
        Some(Time::OfDay(t)) => Some(t.0 as f64),
        None => None,
    }
}

fn sid_pid(own: &[u8]) -> Option<i64> {
    let i = memchr::memrchr(b'P', own)?;
    let hex = own.get(i + 1..)?;
    if hex.is_empty() || hex.len() > 8 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    i64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
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

impl<W: Write> ChromeExporter<W> {
    pub fn new(out: W) -> io::Result<Self> {
        Ok(ChromeExporter {
            out: ChromeWriter::new(out)?,
            procs: HashMap::new(),
            used_pids: HashSet::new(),
            next_pid: 1 << 32,
            synthetic: SyntheticSids::default(),
            stats: ChromeStats::default(),
        })
    }

    pub fn stats(&self) -> &ChromeStats {
        &self.stats
    }

    /// Adds one event.
    #[allow(clippy::collapsible_match)] // one arm per event kind reads best
    pub fn add(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let synthetic;
        let sid: &[u8] = match &ev.sid {
            Some(s) => s,
            None => {
                synthetic = self.synthetic.sid_for(ev);
                &synthetic
            }
        };
        if !self.procs.contains_key(sid) {
            let pid = match sid_pid(sid_own(sid)) {
                Some(p) if !self.used_pids.contains(&p) => p,
                _ => {
                    self.next_pid += 1;
                    self.next_pid
                }
            };
            self.used_pids.insert(pid);
            self.stats.processes += 1;
            self.procs.insert(
                sid.into(),
                ProcTrack {
                    pid,
                    named: false,
                    argv: Vec::new(),
                    base: None,
                    start: None,
                    last: 0.0,
                    threads: Vec::new(),
                    children: HashMap::new(),
                    lanes: 0,
                    cmd: None,
                    exit: None,
                },
            );
        }
        let p = self.procs.get_mut(sid).expect("inserted above");
        // Time of this event.
        let t_abs = ev.body.t_abs().map(|t| t.0 as f64);
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
        let pid = p.pid;
        let thread_name: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
        let ti = match p.threads.iter().position(|t| &*t.name == thread_name) {
            Some(i) => i,
            None => {
                let tid = if thread_name == b"main" {
                    1
                } else {
                    p.threads.len() as i64 + 2
                };
                self.out.thread_name(pid, tid, thread_name)?;
                self.out.thread_sort_index(pid, tid, tid)?;
                p.threads.push(ThreadTrack {
                    name: thread_name.into(),
                    tid,
                    open: Vec::new(),
                });
                p.threads.len() - 1
            }
        };
        let tid = p.threads[ti].tid;
        let out = &mut self.out;
        let stats = &mut self.stats;
        match &ev.body {
            Body::Start { argv, .. } => p.argv = joined(argv),
            Body::CmdName { name, .. } => {
                p.cmd = Some(name.to_vec());
                if !p.named {
                    p.named = true;
                    let mut n = b"git ".to_vec();
                    n.extend_from_slice(name);
                    out.process_name(pid, &n)?;
                }
            }
            Body::RegionEnter(r) => {
                let name: &[u8] = r
                    .label
                    .as_deref()
                    .or(r.category.as_deref())
                    .unwrap_or(b"region");
                let mut args: Vec<(&str, Arg<'_>)> = vec![("nesting", Arg::Int(r.nesting))];
                if let Some(m) = &r.msg {
                    args.push(("msg", Arg::Str(m)));
                }
                if let Some(repo) = ev.repo {
                    args.push(("repo", Arg::Int(repo)));
                }
                out.begin(
                    pid,
                    tid,
                    ts,
                    name,
                    r.category.as_deref().unwrap_or(b""),
                    &args,
                )?;
                p.threads[ti].open.push(r.nesting);
            }
            Body::RegionLeave { region, t_rel } => {
                let open = &mut p.threads[ti].open;
                if open.last().is_some_and(|&n| n >= region.nesting) {
                    // Close regions left open below this one first.
                    while open.last().is_some_and(|&n| n > region.nesting) {
                        open.pop();
                        stats.closed_at_end += 1;
                        out.end(pid, tid, ts, &[])?;
                    }
                    open.pop();
                    stats.region_slices += 1;
                    out.end(
                        pid,
                        tid,
                        ts,
                        &[("t_rel_s", Arg::Float(t_rel.as_secs_f64()))],
                    )?;
                } else {
                    stats.unmatched_leaves += 1;
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
                // What ran: the hook, the git subcommand, or the program.
                let mut name = b"child ".to_vec();
                match (hook_name, argv.first()) {
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
                    (None, None) => name.extend_from_slice(&class),
                }
                // Children get their own tracks: a child often outlives
                // the region it was started in, and parallel children
                // overlap, which one track cannot show nested. Each open
                // child holds a lane; a lane is free once its child exited.
                let free = (0..p.lanes)
                    .map(|l| CHILD_TID + l)
                    .find(|&tid| p.children.values().all(|c| c.lane != tid));
                let lane = match free {
                    Some(tid) => tid,
                    None => {
                        let tid = CHILD_TID + p.lanes;
                        p.lanes += 1;
                        let label = if p.lanes == 1 {
                            b"children".to_vec()
                        } else {
                            format!("children {}", p.lanes).into_bytes()
                        };
                        out.thread_name(pid, tid, &label)?;
                        out.thread_sort_index(pid, tid, tid)?;
                        tid
                    }
                };
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
                    out.complete(
                        pid,
                        c.lane,
                        c.ts,
                        (ts - c.ts).max(0.0),
                        &c.name,
                        b"child",
                        &[
                            ("class", Arg::Str(&c.class)),
                            ("argv", Arg::Str(&c.argv)),
                            ("pid", Arg::Int(*child_pid)),
                            ("code", Arg::Int(*code)),
                            ("t_rel_s", Arg::Float(t_rel.as_secs_f64())),
                        ],
                    )?;
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
                out.instant(
                    pid,
                    tid,
                    ts,
                    key,
                    category.as_deref().unwrap_or(b"data"),
                    Scope::Thread,
                    &[("value", Arg::Str(value)), ("nesting", Arg::Int(*nesting))],
                )?;
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
                    Arg::RawJson(value)
                } else {
                    Arg::Str(value)
                };
                out.instant(
                    pid,
                    tid,
                    ts,
                    key,
                    category.as_deref().unwrap_or(b"data"),
                    Scope::Thread,
                    &[("value", v), ("nesting", Arg::Int(*nesting))],
                )?;
            }
            Body::Error { msg, fmt } => {
                stats.instants += 1;
                let mut args = Vec::new();
                if let Some(m) = msg {
                    args.push(("msg", Arg::Str(m)));
                }
                if let Some(f) = fmt {
                    args.push(("fmt", Arg::Str(f)));
                }
                out.instant(pid, tid, ts, b"error", b"error", Scope::Thread, &args)?;
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
                out.counter(pid, ts, &n, &[("count", *count as f64)])?;
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
                out.instant(
                    pid,
                    tid,
                    ts,
                    &n,
                    b"timer",
                    Scope::Thread,
                    &[
                        ("intervals", Arg::Int(*intervals)),
                        ("total_s", Arg::Float(t_total.as_secs_f64())),
                        ("min_s", Arg::Float(t_min.as_secs_f64())),
                        ("max_s", Arg::Float(t_max.as_secs_f64())),
                    ],
                )?;
            }
            Body::Exit { code, .. } => {
                p.exit = Some(("exit", *code));
                stats.instants += 1;
                out.instant(
                    pid,
                    tid,
                    ts,
                    b"exit",
                    b"process",
                    Scope::Process,
                    &[("code", Arg::Int(*code))],
                )?;
            }
            Body::AtExit { code, .. } => {
                if p.exit.is_none() {
                    p.exit = Some(("exit", *code));
                }
            }
            Body::Signal { signo, .. } => {
                p.exit = Some(("signal", *signo));
                stats.instants += 1;
                out.instant(
                    pid,
                    tid,
                    ts,
                    b"signal",
                    b"process",
                    Scope::Process,
                    &[("signo", Arg::Int(*signo))],
                )?;
            }
            Body::Exec { argv, .. } => {
                p.exit = Some(("exec", 0));
                stats.instants += 1;
                let a = joined(argv);
                out.instant(
                    pid,
                    tid,
                    ts,
                    b"exec",
                    b"process",
                    Scope::Process,
                    &[("argv", Arg::Str(&a))],
                )?;
            }
            _ => {}
        }
        let ended = matches!(
            &ev.body,
            Body::AtExit { .. } | Body::Signal { .. } | Body::Exec { .. }
        );
        if ended {
            if let Some(p) = self.procs.remove(sid) {
                Self::close(&mut self.out, &mut self.stats, p)?;
            }
        }
        Ok(())
    }

    /// Closes what is open in a process and writes its own slice.
    fn close(out: &mut ChromeWriter<W>, stats: &mut ChromeStats, p: ProcTrack) -> io::Result<()> {
        for t in &p.threads {
            for _ in &t.open {
                stats.closed_at_end += 1;
                out.end(p.pid, t.tid, p.last, &[("unclosed", Arg::Bool(true))])?;
            }
        }
        for c in p.children.values() {
            stats.child_slices += 1;
            out.complete(
                p.pid,
                c.lane,
                c.ts,
                (p.last - c.ts).max(0.0),
                &c.name,
                b"child",
                &[
                    ("class", Arg::Str(&c.class)),
                    ("argv", Arg::Str(&c.argv)),
                    ("no_child_exit", Arg::Bool(true)),
                ],
            )?;
        }
        if !p.named {
            let n: &[u8] = if p.argv.is_empty() { b"git" } else { &p.argv };
            out.process_name(p.pid, n)?;
        }
        let start = p.start.unwrap_or(p.last);
        let name: &[u8] = match &p.cmd {
            Some(c) => c,
            None => b"git",
        };
        let (end_kind, code) = match p.exit {
            Some((k, c)) => (k, Some(c)),
            None => ("none (crashed, killed or cut off)", None),
        };
        let mut args = vec![
            ("argv", Arg::Str(&p.argv)),
            ("end", Arg::Str(end_kind.as_bytes())),
        ];
        if let Some(c) = code {
            args.push((
                if end_kind == "signal" {
                    "signo"
                } else {
                    "code"
                },
                Arg::Int(c),
            ));
        }
        // The process slice is emitted before the regions it encloses in
        // the file; viewers sort by time.
        out.complete(
            p.pid,
            1,
            start,
            (p.last - start).max(0.0),
            name,
            b"process",
            &args,
        )
    }

    /// Closes processes that never ended and the JSON document.
    pub fn finish(mut self) -> io::Result<(W, ChromeStats)> {
        let mut rest: Vec<ProcTrack> = self.procs.drain().map(|(_, p)| p).collect();
        rest.sort_by_key(|p| p.pid);
        for p in rest {
            Self::close(&mut self.out, &mut self.stats, p)?;
        }
        let w = self.out.finish()?;
        Ok((w, self.stats))
    }
}

/// Converts a whole input. Records that do not parse are counted in
/// `warnings` with their line number, and skipped.
pub fn convert_bytes<W: Write>(
    data: &[u8],
    format: Format,
    out: W,
    warnings: &mut Warnings,
) -> io::Result<(W, ChromeStats)> {
    convert_with(data, format, out, warnings, |_| {})
}

/// [`convert_bytes`] on a memory map, handing pages back to the kernel
/// once converted so that resident memory stays small.
pub fn convert_mmap<W: Write>(
    map: &memmap2::Mmap,
    format: Format,
    out: W,
    warnings: &mut Warnings,
) -> io::Result<(W, ChromeStats)> {
    convert_with(map, format, out, warnings, |r| release_pages(map, r))
}

fn convert_with<W: Write>(
    data: &[u8],
    format: Format,
    out: W,
    warnings: &mut Warnings,
    consumed: impl Fn(std::ops::Range<usize>),
) -> io::Result<(W, ChromeStats)> {
    let mut ex = ChromeExporter::new(out)?;
    for_each_in(data, format, consumed, |rec| {
        match rec.parse_or_warn(format, warnings) {
            Some(ev) => ex.add(&ev),
            None => Ok(()),
        }
    })?;
    ex.finish()
}
