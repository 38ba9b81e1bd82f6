//! Analyses for `tracekit report`, the views heaptrack_print gives:
//! peak consumers (live bytes per backtrace at the moment of the peak),
//! most calls to allocation functions, most temporary allocations, leaks,
//! largest allocations and totals; usage over time (SVG plot), flame graphs
//! of allocated bytes, calls and leaks, and [`diff`] between two recordings.
//!
//! One streaming pass over the trace; memory is bounded by the live
//! allocations, the distinct backtraces and a fixed number of plot points.
//! Backtraces are symbolised once each, after the pass.

use std::collections::HashMap;
use std::path::PathBuf;

use tracekit_core::{Result, Warnings};

use crate::live::{resource_index, Allocated, Backtraces, Freed, LiveSet};
use crate::number_map::NumberMap;
use crate::reader::{Batch, CallEvent, IntoItems, Item, Items, CALL_BATCH};
use crate::record::{Header, MemoryMap, ResourceDef};
use crate::resolve::{Resolver, Symbol};

mod data;
mod diff;
mod recording;
mod svg;
mod text;

pub use diff::{diff, diff_report, Diff};
pub use recording::RecordingReport;
pub use text::human_bytes;

/// Usage of one resource type.
#[derive(Debug, Default, Clone)]
pub struct ResourceStats {
    pub name: String,
    pub description: String,
    pub allocs: u64,
    pub frees: u64,
    pub allocated_bytes: i64,
    /// Frees of something never seen allocated (allocated before tracing
    /// started, or not by a traced function); `free(NULL)` is not one.
    pub unmatched_frees: u64,
    /// Releases of the null pointer (`free(NULL)`, `realloc` of NULL is an
    /// allocation): memory only. Not an error (C says it does nothing),
    /// so neither an unmatched free nor a call that ends a temporary
    /// allocation; heaptrack does not record them at all.
    pub null_frees: u64,
    /// In a recording turned on and off by a signal (`record mem
    /// --toggle-signal`, see [`crate::recording::TOGGLE_NOTE`]): releases of
    /// blocks the recording did not see allocated, that is allocated while
    /// recording was paused. Counted here, not in `unmatched_frees`.
    pub paused_frees: u64,
    pub peak_bytes: i64,
    pub peak_blocks: u64,
    /// Index of the call at which the peak was reached.
    pub peak_at_index: i64,
    pub leaked_blocks: u64,
    pub leaked_bytes: i64,
    /// Blocks released by the next call after their allocation, not
    /// counting `free(NULL)` and frees of blocks never seen allocated in
    /// between (heaptrack's "temporary allocations": it records neither).
    pub temporary: u64,
    /// The largest single allocation.
    pub largest: i64,
}

/// One backtrace's frames, innermost first: `(address, function,
/// file:line, inlined)`. An inlined function comes before the function it
/// was inlined into, with the same address, and says so (`inlined`): the
/// same address twice in a row is also a recursive call from one place.
pub type Frames = Vec<(u64, String, Option<String>, bool)>;

/// Leaks (or allocations) that share a backtrace.
#[derive(Debug, Clone)]
pub struct Site {
    pub resource: String,
    pub blocks: u64,
    pub bytes: i64,
    pub frames: Frames,
}

/// What one backtrace (or one location) cost. Signed: a [`diff`] holds
/// differences.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// Calls to allocation functions.
    pub allocations: i64,
    /// Bytes they asked for.
    pub allocated: i64,
    /// Bytes still allocated when the resource's usage peaked.
    pub peak: i64,
    /// Bytes never released.
    pub leaked: i64,
    pub leaked_blocks: i64,
    pub temporary: i64,
    /// The largest single allocation (a maximum, not a sum).
    pub largest: i64,
}

impl Cost {
    fn add(&mut self, o: &Cost) {
        self.allocations += o.allocations;
        self.allocated += o.allocated;
        self.peak += o.peak;
        self.leaked += o.leaked;
        self.leaked_blocks += o.leaked_blocks;
        self.temporary += o.temporary;
        self.largest = self.largest.max(o.largest);
    }

    /// `self - base`, field by field.
    pub fn minus(&self, base: &Cost) -> Cost {
        Cost {
            allocations: self.allocations - base.allocations,
            allocated: self.allocated - base.allocated,
            peak: self.peak - base.peak,
            leaked: self.leaked - base.leaked,
            leaked_blocks: self.leaked_blocks - base.leaked_blocks,
            temporary: self.temporary - base.temporary,
            largest: self.largest - base.largest,
        }
    }

    /// The value a [`Metric`] ranks by.
    pub fn get(&self, m: Metric) -> i64 {
        match m {
            Metric::Allocations => self.allocations,
            Metric::Allocated => self.allocated,
            Metric::Peak => self.peak,
            Metric::Leaked => self.leaked,
            Metric::Temporary => self.temporary,
            Metric::Largest => self.largest,
        }
    }
}

/// What a view ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Allocations,
    Allocated,
    Peak,
    Leaked,
    Temporary,
    Largest,
}

impl Metric {
    /// The views of the report, in heaptrack_print's order (largest last).
    pub const VIEWS: [Metric; 5] = [
        Metric::Allocations,
        Metric::Peak,
        Metric::Leaked,
        Metric::Temporary,
        Metric::Largest,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Allocations => "allocations",
            Metric::Allocated => "allocated",
            Metric::Peak => "peak",
            Metric::Leaked => "leaked",
            Metric::Temporary => "temporary",
            Metric::Largest => "largest",
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        Some(match s {
            "allocations" | "count" | "calls" => Metric::Allocations,
            "allocated" | "bytes" => Metric::Allocated,
            "peak" => Metric::Peak,
            "leaked" | "leaks" => Metric::Leaked,
            "temporary" => Metric::Temporary,
            "largest" => Metric::Largest,
            _ => return None,
        })
    }

    /// Does it count bytes (or calls)?
    pub fn is_bytes(self) -> bool {
        !matches!(self, Metric::Allocations | Metric::Temporary)
    }
}

/// A backtrace as `(function, file:line)` per frame.
pub type TraceKey = Vec<(String, Option<String>)>;

/// One backtrace of one resource type and what it cost.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Index into [`Report::resources`].
    pub resource: usize,
    pub cost: Cost,
    pub frames: Frames,
    /// `(function, file:line)` of every frame: what the backtrace is across
    /// runs (addresses move with ASLR).
    pub key: TraceKey,
    /// The module of its location frame (see [`Location`]).
    pub module: Option<String>,
}

/// Backtraces merged by the place that called the allocation function
/// (the innermost frame after `operator new`), as heaptrack_print merges.
#[derive(Debug, Clone)]
pub struct Location {
    pub resource: usize,
    pub function: String,
    pub position: Option<String>,
    pub module: Option<String>,
    pub cost: Cost,
    /// Indices into [`Report::traces`].
    pub traces: Vec<usize>,
}

/// One point of the usage-over-time plot.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Call number (1-based, file order).
    pub call: u64,
    /// Milliseconds of the recorder's monotonic clock, if recorded.
    pub timestamp: Option<u32>,
    /// Milliseconds since the first timestamped call (the clock's wraps
    /// at 24 h undone), if this call has a timestamp.
    pub elapsed_ms: Option<u64>,
    pub live_bytes: i64,
}

/// A marker the program made (`include/tracekit/mem.h`), as the report
/// shows it.
#[derive(Debug, Clone)]
pub struct MarkerStat {
    pub marker: crate::marker::Marker,
    /// Calls before it.
    pub calls_before: u64,
    /// Milliseconds since the first timestamped call or marker.
    pub elapsed_ms: Option<u64>,
    /// Its backtrace, named as the allocations' are.
    pub frames: Frames,
    /// A snapshot's view of the `memory` resource at its point: bytes and
    /// blocks live (`None`: not a snapshot, or no `memory` resource).
    pub live: Option<(i64, u64)>,
    /// A snapshot's backtraces holding the most bytes live at its point
    /// (at most [`SNAPSHOT_SITES`], most bytes first; `blocks` and
    /// `bytes` are what each held live then).
    pub sites: Vec<Site>,
}

/// The most markers a report lists (the first ones; the rest are counted
/// in [`Report::markers_omitted`]).
pub const MARKERS_MAX: usize = 1000;
/// The backtraces a snapshot lists.
pub const SNAPSHOT_SITES: usize = 5;

/// Everything `tracekit report` shows for an sp-rtrace trace.
#[derive(Debug, Default)]
pub struct Report {
    pub header: Header,
    pub calls: u64,
    pub resources: Vec<ResourceStats>,
    /// Never-freed allocations grouped by backtrace, most bytes first
    /// (the first `top`).
    pub leaks: Vec<Site>,
    /// All allocations grouped by backtrace, most calls first (the first
    /// `top`).
    pub top_sites: Vec<Site>,
    /// Every backtrace of every resource type with its cost.
    pub traces: Vec<Trace>,
    /// The backtraces merged by location.
    pub locations: Vec<Location>,
    /// Live bytes of the first resource type over time (at most
    /// [`PLOT_POINTS`] points, the maxima of equal-width buckets).
    pub timeline: Vec<Point>,
    /// Milliseconds between the first and the last timestamped call.
    pub runtime_ms: Option<u64>,
    /// How many entries the ranked views list.
    pub top: usize,
    /// Permanent comments of the recorder (`## tracekit: …`): how the
    /// program ended, what could not be recorded.
    pub notes: Vec<String>,
    /// Markers the program made, in the order of the trace (at most
    /// [`MARKERS_MAX`]).
    pub markers: Vec<MarkerStat>,
    /// Markers past [`MARKERS_MAX`], not listed.
    pub markers_omitted: u64,
    pub warnings: Warnings,
}

pub const PLOT_POINTS: usize = 1000;

/// How the recorder's note on a trace of a process it attached to
/// (`record mem -p`) begins: blocks allocated before the recording are
/// not in it, and frees of unknown blocks are frees of those.
pub const ATTACHED_NOTE: &str = "attached to a running process";

/// How to name frames.
#[derive(Debug, Clone, Default)]
pub struct Symbolise {
    /// Resolve addresses through the trace's maps and the module files.
    pub resolve: bool,
    /// Prefix of module paths (a copy of the recorded system's files).
    pub root: Option<PathBuf>,
    /// Where separate debug files are looked for.
    pub debug_dirs: Vec<PathBuf>,
}

impl Symbolise {
    /// Resolving with the system's debug directory.
    pub fn system() -> Self {
        Symbolise {
            resolve: true,
            root: None,
            debug_dirs: vec![PathBuf::from(crate::resolve::DEFAULT_DEBUG_DIR)],
        }
    }

    /// Addresses only.
    pub fn none() -> Self {
        Symbolise::default()
    }
}

/// A marker met in the pass, its backtraces named after it: a snapshot's
/// top live sites are (trace, bytes, blocks).
struct PendingMarker {
    marker: crate::marker::Marker,
    calls_before: u64,
    elapsed_ms: Option<u64>,
    live: Option<(i64, u64)>,
    top: Vec<(u32, i64, u64)>,
}

/// Backtraces the pass knows by the pointer of their frames (each slot
/// holds its frames, so a pointer is not reused while known).
const SEEN_FRAMES: usize = 64;

/// A live block: its size and backtrace.
struct Live {
    size: i64,
    trace: u32,
}

/// A backtrace's running cost in one resource type.
#[derive(Default, Clone)]
struct TraceAgg {
    cost: Cost,
    live: i64,
    live_blocks: u64,
    /// Live bytes when the resource last peaked, valid if `peak_gen`
    /// equals the resource's generation.
    at_peak: i64,
    peak_gen: u64,
}

impl TraceAgg {
    /// Called before `live` changes: keeps its value at the latest peak.
    fn sync_peak(&mut self, gen: u64) {
        if self.peak_gen != gen {
            self.at_peak = self.live;
            self.peak_gen = gen;
        }
    }
}

#[derive(Default)]
struct ResourceState {
    bytes: i64,
    blocks: u64,
    /// Bumped at every new peak.
    peak_gen: u64,
    traces: Vec<TraceAgg>,
}

/// The pass's running state: resource types, live blocks, the timeline.
struct Pass {
    registry: Vec<ResourceDef>,
    state: Vec<ResourceState>,
    live: LiveSet<Live>,
    /// The block the previous call allocated: freeing it next makes it
    /// temporary.
    last_alloc: Option<(usize, u64)>,
    /// Timeline: full-resolution points are folded into buckets that
    /// double in width whenever the point budget is exceeded (the width:
    /// 2 to this power).
    timeline: Vec<Point>,
    bucket_shift: u32,
    leak_orphans: Vec<(usize, Live)>,
    clock: Clock,
}

impl Pass {
    /// Takes one call; `tid` is an allocation's backtrace number.
    #[inline]
    fn call(&mut self, report: &mut Report, c: CallEvent<'_>, tid: u32) {
        report.calls += 1;
        let elapsed_ms = c.timestamp.map(|t| {
            let t = self.clock.tick(t);
            t.saturating_sub(self.clock.first.unwrap_or(t))
        });
        let ri = resource_index(
            self.registry.iter().map(|r| r.name.as_str()),
            c.resource_type,
        );
        let ri = match ri {
            Some(i) => i,
            None => {
                // A call of an unregistered type: register it so
                // nothing is dropped.
                let name = c
                    .resource_type
                    .map(str::to_string)
                    .unwrap_or_else(|| "memory".to_string());
                report.resources.push(ResourceStats {
                    name: name.clone(),
                    ..Default::default()
                });
                self.registry.push(ResourceDef {
                    id: 0,
                    name,
                    description: String::new(),
                    flags: None,
                });
                self.state.push(ResourceState::default());
                self.registry.len() - 1
            }
        };
        let refcount = self.registry[ri].is_refcount();
        let stats = &mut report.resources[ri];
        let st = &mut self.state[ri];
        let key = (ri, c.id);
        // `free(NULL)` does nothing: counted apart, and (as for
        // heaptrack, which never sees it) it does not end the run
        // after an allocation that makes a block temporary.
        if c.alloc.is_none() && c.id == 0 && self.registry[ri].name == "memory" {
            stats.frees += 1;
            stats.null_frees += 1;
            return;
        }
        let previous = self.last_alloc.take();
        if let Some(size) = c.alloc {
            if st.traces.len() <= tid as usize {
                st.traces.resize_with(tid as usize + 1, TraceAgg::default);
            }
            let gen = st.peak_gen;
            let agg = &mut st.traces[tid as usize];
            agg.cost.allocations += 1;
            agg.cost.allocated += size;
            agg.cost.largest = agg.cost.largest.max(size);
            stats.allocs += 1;
            stats.allocated_bytes += size;
            stats.largest = stats.largest.max(size);
            let block = Live { size, trace: tid };
            if let Allocated::New { replaced } = self.live.alloc(key, refcount, block) {
                agg.sync_peak(gen);
                agg.live += size;
                agg.live_blocks += 1;
                // Same key allocated again without a free: the
                // older block stays counted as leaked.
                if let Some(old) = replaced {
                    self.leak_orphans.push((ri, old));
                }
                st.bytes += size;
                st.blocks += 1;
                self.last_alloc = Some(key);
            }
            if st.bytes > stats.peak_bytes {
                stats.peak_bytes = st.bytes;
                stats.peak_blocks = st.blocks;
                stats.peak_at_index = c.index;
                st.peak_gen += 1;
            }
        } else {
            stats.frees += 1;
            match self.live.free(key, refcount) {
                Freed::Released(Live { size, trace }) => {
                    st.bytes -= size;
                    st.blocks -= 1;
                    let gen = st.peak_gen;
                    let agg = &mut st.traces[trace as usize];
                    agg.sync_peak(gen);
                    agg.live -= size;
                    agg.live_blocks -= 1;
                    if previous == Some(key) {
                        agg.cost.temporary += 1;
                        stats.temporary += 1;
                    }
                }
                Freed::Unreferenced => {}
                Freed::Unmatched => {
                    stats.unmatched_frees += 1;
                    // heaptrack drops a free it cannot match
                    // before counting temporaries: the run goes on.
                    self.last_alloc = previous;
                }
            }
        }
        if ri == 0 {
            let p = Point {
                call: report.calls,
                timestamp: c.timestamp,
                elapsed_ms,
                live_bytes: self.state[0].bytes,
            };
            let bucket = (report.calls - 1) >> self.bucket_shift;
            match self.timeline.last_mut() {
                Some(last) if (last.call - 1) >> self.bucket_shift == bucket => {
                    if p.live_bytes >= last.live_bytes {
                        *last = p;
                    }
                }
                _ => self.timeline.push(p),
            }
            if self.timeline.len() > PLOT_POINTS {
                self.bucket_shift += 1;
                let mut merged: Vec<Point> = Vec::with_capacity(PLOT_POINTS / 2 + 1);
                for p in self.timeline.drain(..) {
                    match merged.last_mut() {
                        Some(l)
                            if (l.call - 1) >> self.bucket_shift
                                == (p.call - 1) >> self.bucket_shift =>
                        {
                            if p.live_bytes >= l.live_bytes {
                                *l = p;
                            }
                        }
                        _ => merged.push(p),
                    }
                }
                self.timeline = merged;
            }
        }
    }
}

/// Builds the report; `top` limits the ranked lists; `resolve` names
/// frames through the module files (system debug directory).
pub fn analyse<R: IntoItems>(input: R, top: usize, resolve: bool) -> Result<Report> {
    let sym = if resolve {
        Symbolise::system()
    } else {
        Symbolise::none()
    };
    analyse_with(input, top, &sym)
}

/// [`analyse`] with the symbolisation settings spelled out.
pub fn analyse_with<R: IntoItems>(input: R, top: usize, sym: &Symbolise) -> Result<Report> {
    let mut asm = input.into_items();
    let mut report = Report {
        top,
        ..Default::default()
    };
    let mut pass = Pass {
        registry: Vec::new(),
        state: Vec::new(),
        live: LiveSet::default(),
        last_alloc: None,
        timeline: Vec::new(),
        bucket_shift: 0,
        leak_orphans: Vec::new(),
        clock: Clock::default(),
    };
    let mut maps: Vec<MemoryMap> = Vec::new();
    let mut traces = Backtraces::default();
    let mut trace_list: Vec<Vec<u64>> = Vec::new();
    // Resolved text already in the trace (first occurrence), used when
    // the module files are not on this machine.
    let mut trace_texts: Vec<Vec<Option<String>>> = Vec::new();
    let mut addrs: Vec<u64> = Vec::new();
    let mut seen_frames: Vec<Option<(crate::reader::Backtrace, u32)>> = vec![None; SEEN_FRAMES];
    // The backtrace number of each stack number of the calls given as
    // `CallEvent`s (`u32::MAX`: not met yet).
    let mut stack_tids: NumberMap<u32> = NumberMap::default();
    // Markers: each with the trace ids of a snapshot's top live sites
    // (bytes, blocks), named after the pass.
    let mut markers: Vec<PendingMarker> = Vec::new();

    // Interns a backtrace's frames: its number.
    let mut intern = |frames: &crate::reader::Backtrace| -> u32 {
        addrs.clear();
        addrs.extend(frames.iter().map(|f| f.addr));
        let (tid, new) = traces.intern(&addrs);
        if new {
            trace_list.push(addrs.clone());
            trace_texts.push(frames.iter().map(|f| f.text.clone()).collect());
        }
        tid
    };

    let mut calls: Vec<CallEvent> = Vec::with_capacity(CALL_BATCH);
    loop {
        calls.clear();
        let next = asm.next_calls(&mut calls)?;
        for c in &calls {
            // The backtrace of an allocation, by its stack number.
            let tid = match c.alloc {
                None => 0,
                Some(_) => match stack_tids.get(c.stack) {
                    Some(&t) => t,
                    None => {
                        let frames = asm.backtrace(c.stack).unwrap_or_default();
                        let t = intern(&frames);
                        stack_tids.insert(c.stack, t);
                        t
                    }
                },
            };
            pass.call(&mut report, *c, tid);
        }
        let item = match next {
            Batch::Item(item) => item,
            Batch::Full => continue,
            Batch::End => break,
        };
        let Pass {
            registry,
            state,
            clock,
            ..
        } = &mut pass;
        match item {
            Item::Header(h) => report.header = h,
            Item::Comment(c) => {
                if let Some(note) = c.strip_prefix("## tracekit: ") {
                    report.notes.push(note.to_string());
                } else if c.starts_with(crate::marker::PREFIX) {
                    let Some(m) = crate::marker::Marker::parse(&c) else {
                        report.warnings.push(
                            tracekit_core::Position::Unknown,
                            format!("a damaged marker comment (ignored): {c}"),
                        );
                        continue;
                    };
                    if markers.len() >= MARKERS_MAX {
                        report.markers_omitted += 1;
                        continue;
                    }
                    let elapsed = m.timestamp.map(|t| {
                        let t = clock.tick(t);
                        t.saturating_sub(clock.first.unwrap_or(t))
                    });
                    let mut live = None;
                    let mut sites = Vec::new();
                    let mem = registry.iter().position(|r| r.name == "memory");
                    if let (crate::marker::MarkerKind::Snapshot, Some(ri)) = (m.kind, mem) {
                        let st = &state[ri];
                        live = Some((st.bytes, st.blocks));
                        // The top live backtraces: one pass over them
                        // (bounded: at most MARKERS_MAX snapshots).
                        let mut top: Vec<(u32, i64, u64)> = Vec::new();
                        for (tid, agg) in st.traces.iter().enumerate() {
                            if agg.live_blocks == 0 {
                                continue;
                            }
                            top.push((tid as u32, agg.live, agg.live_blocks));
                            if top.len() > 4 * SNAPSHOT_SITES {
                                top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                                top.truncate(SNAPSHOT_SITES);
                            }
                        }
                        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                        top.truncate(SNAPSHOT_SITES);
                        sites = top;
                    }
                    markers.push(PendingMarker {
                        marker: m,
                        calls_before: report.calls,
                        elapsed_ms: elapsed,
                        live,
                        top: sites,
                    });
                }
            }
            Item::Resource(r) if !registry.iter().any(|x| x.name == r.name) => {
                report.resources.push(ResourceStats {
                    name: r.name.clone(),
                    description: r.description.clone(),
                    ..Default::default()
                });
                registry.push(r);
                state.push(ResourceState::default());
            }
            Item::Map(m) => maps.push(m),
            Item::Call(ref fc) => {
                let tid = if fc.call.is_alloc() {
                    // A recording's calls share their backtrace's frames:
                    // those met lately are known by their pointer.
                    let slot =
                        (std::rc::Rc::as_ptr(&fc.frames) as *const u8 as usize >> 4) % SEEN_FRAMES;
                    match &seen_frames[slot] {
                        Some((f, tid)) if std::rc::Rc::ptr_eq(f, &fc.frames) => *tid,
                        _ => {
                            let tid = intern(&fc.frames);
                            seen_frames[slot] = Some((fc.frames.clone(), tid));
                            tid
                        }
                    }
                } else {
                    0
                };
                // The backtrace is `tid` (the pass reads no stack number).
                let c = CallEvent {
                    index: fc.call.index,
                    timestamp: fc.call.timestamp,
                    resource_type: fc.call.resource_type.as_deref(),
                    alloc: fc.call.is_alloc().then(|| fc.call.size()),
                    id: fc.call.id,
                    stack: 0,
                };
                pass.call(&mut report, c, tid);
            }
            _ => {}
        }
    }
    report.warnings.extend(asm.take_warnings());
    let Pass {
        registry,
        mut state,
        live,
        timeline,
        leak_orphans,
        clock,
        ..
    } = pass;
    report.timeline = timeline;
    report.runtime_ms = clock.elapsed();

    // Leaked blocks by (resource, backtrace).
    for ((ri, _), l) in live.iter() {
        let c = &mut state[*ri].traces[l.trace as usize].cost;
        c.leaked_blocks += 1;
        c.leaked += l.size;
    }
    for (ri, l) in &leak_orphans {
        let c = &mut state[*ri].traces[l.trace as usize].cost;
        c.leaked_blocks += 1;
        c.leaked += l.size;
    }

    // Symbolise every distinct backtrace once.
    let mut resolver = Resolver::for_reports(sym.root.clone(), sym.debug_dirs.clone());
    for m in &maps {
        resolver.add_map(m);
    }
    let mut named: Vec<Option<(Frames, Vec<Option<String>>)>> = vec![None; trace_list.len()];
    for (ri, st) in state.iter().enumerate() {
        for (tid, agg) in st.traces.iter().enumerate() {
            if agg.cost.allocations == 0 {
                continue;
            }
            let (frames, modules) = named[tid].get_or_insert_with(|| {
                name_frames(
                    &mut resolver,
                    &trace_list[tid],
                    &trace_texts[tid],
                    sym.resolve,
                )
            });
            let mut cost = agg.cost;
            cost.peak = if agg.peak_gen == st.peak_gen {
                agg.at_peak
            } else {
                agg.live
            };
            let stats = &mut report.resources[ri];
            stats.leaked_blocks += cost.leaked_blocks as u64;
            stats.leaked_bytes += cost.leaked;
            report.traces.push(Trace {
                resource: ri,
                cost,
                key: frames.iter().map(|f| (f.1.clone(), f.2.clone())).collect(),
                module: location_frame(frames).and_then(|i| modules[i].clone()),
                frames: frames.clone(),
            });
        }
    }
    report.locations = merge_locations(&report.traces);

    let mem = registry.iter().position(|r| r.name == "memory");
    for PendingMarker {
        marker: m,
        calls_before,
        elapsed_ms,
        live,
        top,
    } in markers
    {
        let texts = vec![None; m.frames.len()];
        let (frames, _) = name_frames(&mut resolver, &m.frames, &texts, sym.resolve);
        let sites = top
            .into_iter()
            .filter_map(|(tid, bytes, blocks)| {
                let (frames, _) = named.get_mut(tid as usize)?.get_or_insert_with(|| {
                    name_frames(
                        &mut resolver,
                        &trace_list[tid as usize],
                        &trace_texts[tid as usize],
                        sym.resolve,
                    )
                });
                Some(Site {
                    resource: registry[mem?].name.clone(),
                    blocks,
                    bytes,
                    frames: frames.clone(),
                })
            })
            .collect();
        report.markers.push(MarkerStat {
            marker: m,
            calls_before,
            elapsed_ms,
            frames,
            live,
            sites,
        });
    }

    let site = |t: &Trace, blocks: u64, bytes: i64| Site {
        resource: registry[t.resource].name.clone(),
        blocks,
        bytes,
        frames: t.frames.clone(),
    };
    let mut leaks: Vec<&Trace> = report
        .traces
        .iter()
        .filter(|t| t.cost.leaked_blocks > 0)
        .collect();
    leaks.sort_by(|a, b| {
        b.cost
            .leaked
            .cmp(&a.cost.leaked)
            .then(b.cost.leaked_blocks.cmp(&a.cost.leaked_blocks))
            .then(a.resource.cmp(&b.resource))
    });
    report.leaks = leaks
        .iter()
        .take(top)
        .map(|t| site(t, t.cost.leaked_blocks as u64, t.cost.leaked))
        .collect();
    let mut sites: Vec<&Trace> = report.traces.iter().collect();
    sites.sort_by(|a, b| {
        b.cost
            .allocations
            .cmp(&a.cost.allocations)
            .then(b.cost.allocated.cmp(&a.cost.allocated))
            .then(a.resource.cmp(&b.resource))
    });
    report.top_sites = sites
        .iter()
        .take(top)
        .map(|t| site(t, t.cost.allocations as u64, t.cost.allocated))
        .collect();
    if report
        .notes
        .iter()
        .any(|n| n.starts_with(crate::recording::TOGGLE_NOTE))
    {
        // Paused recording: what it did not see allocated was allocated
        // while paused (the note says so), not an unknown block.
        for r in &mut report.resources {
            r.paused_frees += std::mem::take(&mut r.unmatched_frees);
        }
    }
    Ok(report)
}

/// The frame heaptrack attributes an allocation to: the innermost one
/// that is not `operator new`.
fn location_frame(frames: &Frames) -> Option<usize> {
    if frames.is_empty() {
        return None;
    }
    Some(
        frames
            .iter()
            .position(|f| !f.1.starts_with("operator new"))
            .unwrap_or(0),
    )
}

fn merge_locations(traces: &[Trace]) -> Vec<Location> {
    let mut index: HashMap<(usize, String, Option<String>), usize> = HashMap::new();
    let mut out: Vec<Location> = Vec::new();
    for (ti, t) in traces.iter().enumerate() {
        let (function, position) = match location_frame(&t.frames) {
            Some(i) => (t.frames[i].1.clone(), t.frames[i].2.clone()),
            None => ("??".to_string(), None),
        };
        let k = (t.resource, function.clone(), position.clone());
        let li = *index.entry(k).or_insert_with(|| {
            out.push(Location {
                resource: t.resource,
                function,
                position,
                module: t.module.clone(),
                cost: Cost::default(),
                traces: Vec::new(),
            });
            out.len() - 1
        });
        out[li].cost.add(&t.cost);
        out[li].traces.push(ti);
    }
    out
}

/// Names the frames of one backtrace; also returns each frame's module.
fn name_frames(
    resolver: &mut Resolver,
    addrs: &[u64],
    texts: &[Option<String>],
    resolve: bool,
) -> (Frames, Vec<Option<String>>) {
    let mut frames = Frames::new();
    let mut modules = Vec::new();
    for (&addr, text) in addrs.iter().zip(texts) {
        if !resolve {
            frames.push((addr, format!("0x{addr:x}"), None, false));
            modules.push(None);
            continue;
        }
        let s: std::rc::Rc<Symbol> = resolver.symbolise(addr);
        let module = s.module.as_deref().map(str::to_string);
        if s.frames.is_empty() {
            // Not on this machine: what the recording's resolver wrote.
            let label = match (s.missing || s.module.is_none(), text) {
                (true, Some(t)) => t.clone(),
                _ => s.fallback_label(),
            };
            frames.push((addr, label, None, false));
            modules.push(module);
            continue;
        }
        let last = s.frames.len() - 1;
        for (k, f) in s.frames.iter().enumerate() {
            // All but the outermost were inlined into the next.
            frames.push((addr, f.function.clone(), f.position(), k < last));
            modules.push(module.clone());
        }
    }
    (frames, modules)
}

/// sp-rtrace's call times (milliseconds of a monotonic clock modulo 24 h),
/// unwrapped: a step back of more than half a day is the next day.
#[derive(Default)]
pub(crate) struct Clock {
    first: Option<u64>,
    last: u64,
    max: u64,
    wraps: u64,
}

const DAY_MS: u64 = 86_400_000;

impl Clock {
    /// Takes the next call's time; returns it unwrapped.
    pub(crate) fn tick(&mut self, t: u32) -> u64 {
        let mut t = t as u64 + self.wraps * DAY_MS;
        if self.first.is_some() && t + DAY_MS / 2 < self.last {
            self.wraps += 1;
            t += DAY_MS;
        }
        self.first.get_or_insert(t);
        self.last = t;
        self.max = self.max.max(t);
        t
    }

    fn elapsed(&self) -> Option<u64> {
        self.first.map(|f| self.max - f)
    }
}

impl Report {
    /// Whether the trace is of a process the recorder attached to (see
    /// [`ATTACHED_NOTE`]).
    pub fn attached(&self) -> bool {
        self.notes.iter().any(|n| n.starts_with(ATTACHED_NOTE))
    }

    /// The locations of resource `ri` ranked by `m` (non-zero only), at
    /// most `top`; each with its backtraces ranked the same way.
    pub fn view(&self, ri: usize, m: Metric, top: usize) -> Vec<(&Location, Vec<&Trace>)> {
        ranked(&self.locations, &self.traces, ri, m, top)
    }

    /// Index of the resource type named `name`.
    pub fn resource(&self, name: &str) -> Option<usize> {
        self.resources.iter().position(|r| r.name == name)
    }
}

fn ranked<'a>(
    locations: &'a [Location],
    traces: &'a [Trace],
    ri: usize,
    m: Metric,
    top: usize,
) -> Vec<(&'a Location, Vec<&'a Trace>)> {
    let mut locs: Vec<&Location> = locations
        .iter()
        .filter(|l| l.resource == ri && l.cost.get(m) != 0)
        .collect();
    locs.sort_by(|a, b| {
        b.cost
            .get(m)
            .abs()
            .cmp(&a.cost.get(m).abs())
            .then_with(|| a.function.cmp(&b.function))
            .then_with(|| a.position.cmp(&b.position))
    });
    locs.truncate(top);
    locs.into_iter()
        .map(|l| {
            let mut ts: Vec<&Trace> = l
                .traces
                .iter()
                .map(|&i| &traces[i])
                .filter(|t| t.cost.get(m) != 0)
                .collect();
            ts.sort_by(|a, b| {
                b.cost
                    .get(m)
                    .abs()
                    .cmp(&a.cost.get(m).abs())
                    .then_with(|| a.key.cmp(&b.key))
            });
            (l, ts)
        })
        .collect()
}
