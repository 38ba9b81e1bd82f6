//! Analyses for `tracekit report`: what was never freed (grouped by
//! backtrace, resolved), peak usage, top allocating backtraces, usage over
//! time (SVG plot) and a flame graph of leaked bytes.
//!
//! One streaming pass; memory is bounded by the live allocations, the
//! distinct backtraces and a fixed number of plot points.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use rustc_hash::FxHashMap;
use tracekit_core::{Result, Warnings};

use crate::reader::{Assembler, Item, Reader};
use crate::record::{Header, MemoryMap, ResourceDef};
use crate::resolve::{Resolved, Resolver};

/// Usage of one resource type.
#[derive(Debug, Default, Clone)]
pub struct ResourceStats {
    pub name: String,
    pub description: String,
    pub allocs: u64,
    pub frees: u64,
    pub allocated_bytes: i64,
    /// Frees of something never seen allocated (before tracing, `free(NULL)`).
    pub unmatched_frees: u64,
    pub peak_bytes: i64,
    pub peak_blocks: u64,
    /// Index of the call at which the peak was reached.
    pub peak_at_index: i64,
    pub leaked_blocks: u64,
    pub leaked_bytes: i64,
}

/// Leaks (or allocations) that share a backtrace.
#[derive(Debug, Clone)]
pub struct Site {
    pub resource: String,
    pub blocks: u64,
    pub bytes: i64,
    /// Innermost first; each `(address, label, file:line)`.
    pub frames: Vec<(u64, String, Option<String>)>,
}

/// One point of the usage-over-time plot.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Call number (1-based, file order).
    pub call: u64,
    /// Milliseconds of the recorder's monotonic clock, if recorded.
    pub timestamp: Option<u32>,
    pub live_bytes: i64,
}

/// Everything `tracekit report` shows for an sp-rtrace trace.
#[derive(Debug, Default)]
pub struct Report {
    pub header: Header,
    pub calls: u64,
    pub resources: Vec<ResourceStats>,
    /// Never-freed allocations grouped by backtrace, most bytes first.
    pub leaks: Vec<Site>,
    /// All allocations grouped by backtrace, most calls first.
    pub top_sites: Vec<Site>,
    /// Live bytes of the first resource type over time (at most
    /// [`PLOT_POINTS`] points, the maxima of equal-width buckets).
    pub timeline: Vec<Point>,
    /// Every leak group as a root-first stack and its bytes.
    pub leaks_all_for_flame: Vec<(Vec<String>, i64)>,
    pub warnings: Warnings,
}

pub const PLOT_POINTS: usize = 1000;

struct Live {
    size: i64,
    trace: u32,
    refs: u32,
}

#[derive(Default)]
struct TraceAgg {
    allocs: u64,
    bytes: i64,
}

/// Builds the report; `top` limits the leak and site lists.
pub fn analyse<R: BufRead>(input: R, top: usize, resolve: bool) -> Result<Report> {
    let mut asm = Assembler::new(Reader::new(input));
    let mut report = Report::default();
    let mut registry: Vec<ResourceDef> = Vec::new();
    let mut maps: Vec<MemoryMap> = Vec::new();
    let mut traces: FxHashMap<Vec<u64>, u32> = FxHashMap::default();
    let mut trace_list: Vec<Vec<u64>> = Vec::new();
    // Resolved text already in the trace (first occurrence), used when
    // the module files are not on this machine.
    let mut trace_texts: Vec<Vec<Option<String>>> = Vec::new();
    let mut per_trace: Vec<Vec<TraceAgg>> = Vec::new(); // [resource][trace]
    let mut live: FxHashMap<(usize, u64), Live> = FxHashMap::default();
    let mut current: Vec<(i64, u64)> = Vec::new(); // per resource: bytes, blocks
                                                   // Timeline: full-resolution points are folded into buckets that double
                                                   // in width whenever the point budget is exceeded.
    let mut timeline: Vec<Point> = Vec::new();
    let mut bucket_width: u64 = 1;
    let mut leak_orphans: Vec<(usize, Live)> = Vec::new();

    while let Some(item) = asm.next_item()? {
        match item {
            Item::Header(h) => report.header = h,
            Item::Resource(r) if !registry.iter().any(|x| x.name == r.name) => {
                report.resources.push(ResourceStats {
                    name: r.name.clone(),
                    description: r.description.clone(),
                    ..Default::default()
                });
                registry.push(r);
                current.push((0, 0));
                per_trace.push(Vec::new());
            }
            Item::Map(m) => maps.push(m),
            Item::Call(fc) => {
                report.calls += 1;
                let ri = match &fc.call.resource_type {
                    Some(name) => registry.iter().position(|r| &r.name == name),
                    None => (!registry.is_empty()).then_some(0),
                };
                let ri = match ri {
                    Some(i) => i,
                    None => {
                        // A call of an unregistered type: register it so
                        // nothing is dropped.
                        let name = fc
                            .call
                            .resource_type
                            .clone()
                            .unwrap_or_else(|| "memory".to_string());
                        report.resources.push(ResourceStats {
                            name: name.clone(),
                            ..Default::default()
                        });
                        registry.push(ResourceDef {
                            id: 0,
                            name,
                            description: String::new(),
                            flags: None,
                        });
                        current.push((0, 0));
                        per_trace.push(Vec::new());
                        registry.len() - 1
                    }
                };
                let refcount = registry[ri].is_refcount();
                let stats = &mut report.resources[ri];
                let key = (ri, fc.call.id);
                if fc.call.is_alloc() {
                    let size = fc.call.size();
                    let addrs: Vec<u64> = fc.frames.iter().map(|f| f.addr).collect();
                    let next = trace_list.len() as u32;
                    let tid = *traces.entry(addrs.clone()).or_insert_with(|| {
                        trace_list.push(addrs);
                        trace_texts.push(fc.frames.iter().map(|f| f.text.clone()).collect());
                        next
                    });
                    let agg = &mut per_trace[ri];
                    if agg.len() <= tid as usize {
                        agg.resize_with(tid as usize + 1, TraceAgg::default);
                    }
                    agg[tid as usize].allocs += 1;
                    agg[tid as usize].bytes += size;
                    stats.allocs += 1;
                    stats.allocated_bytes += size;
                    match live.get_mut(&key) {
                        Some(l) if refcount => l.refs += 1,
                        _ => {
                            let old = live.insert(
                                key,
                                Live {
                                    size,
                                    trace: tid,
                                    refs: 1,
                                },
                            );
                            // Same key allocated again without a free:
                            // the older block stays counted as leaked.
                            if let Some(old) = old {
                                leak_orphans.push((ri, old));
                            }
                            current[ri].0 += size;
                            current[ri].1 += 1;
                        }
                    }
                    if current[ri].0 > stats.peak_bytes {
                        stats.peak_bytes = current[ri].0;
                        stats.peak_blocks = current[ri].1;
                        stats.peak_at_index = fc.call.index;
                    }
                } else {
                    stats.frees += 1;
                    match live.get_mut(&key) {
                        Some(l) => {
                            l.refs = l.refs.saturating_sub(1);
                            if l.refs == 0 || !refcount {
                                let size = l.size;
                                live.remove(&key);
                                current[ri].0 -= size;
                                current[ri].1 -= 1;
                            }
                        }
                        None => stats.unmatched_frees += 1,
                    }
                }
                if ri == 0 {
                    let p = Point {
                        call: report.calls,
                        timestamp: fc.call.timestamp,
                        live_bytes: current[0].0,
                    };
                    let bucket = (report.calls - 1) / bucket_width;
                    match timeline.last_mut() {
                        Some(last) if (last.call - 1) / bucket_width == bucket => {
                            if p.live_bytes >= last.live_bytes {
                                *last = p;
                            }
                        }
                        _ => timeline.push(p),
                    }
                    if timeline.len() > PLOT_POINTS {
                        bucket_width *= 2;
                        let mut merged: Vec<Point> = Vec::with_capacity(PLOT_POINTS / 2 + 1);
                        for p in timeline.drain(..) {
                            match merged.last_mut() {
                                Some(l)
                                    if (l.call - 1) / bucket_width
                                        == (p.call - 1) / bucket_width =>
                                {
                                    if p.live_bytes >= l.live_bytes {
                                        *l = p;
                                    }
                                }
                                _ => merged.push(p),
                            }
                        }
                        timeline = merged;
                    }
                }
            }
            _ => {}
        }
    }
    report
        .warnings
        .extend(std::mem::take(&mut asm.reader.warnings));
    report.timeline = timeline;

    // Leaks grouped by (resource, backtrace).
    let mut leak_groups: HashMap<(usize, u32), (u64, i64)> = HashMap::new();
    for ((ri, _), l) in live.iter() {
        let e = leak_groups.entry((*ri, l.trace)).or_default();
        e.0 += 1;
        e.1 += l.size;
    }
    for (ri, l) in &leak_orphans {
        let e = leak_groups.entry((*ri, l.trace)).or_default();
        e.0 += 1;
        e.1 += l.size;
    }
    for ((ri, _), (blocks, bytes)) in &leak_groups {
        report.resources[*ri].leaked_blocks += blocks;
        report.resources[*ri].leaked_bytes += bytes;
    }
    let mut resolver = Resolver::new(None);
    resolver.use_dwarf = true;
    for m in &maps {
        resolver.add_map(m);
    }
    let mut frames_of = |tid: u32| -> Vec<(u64, String, Option<String>)> {
        trace_list[tid as usize]
            .iter()
            .zip(&trace_texts[tid as usize])
            .map(|(&addr, text)| {
                if !resolve {
                    return (addr, format!("0x{addr:x}"), None);
                }
                let r = resolver.resolve(addr);
                if let (Resolved::ModuleOnly { loaded: false, .. } | Resolved::Unknown, Some(t)) =
                    (&r, text)
                {
                    return (addr, t.clone(), None);
                }
                let pos = match &r {
                    Resolved::Function {
                        file: Some(f),
                        line,
                        ..
                    } => Some(match line {
                        Some(l) => format!("{f}:{l}"),
                        None => f.clone(),
                    }),
                    _ => None,
                };
                (addr, r.label(addr), pos)
            })
            .collect()
    };
    let mut leaks: Vec<((usize, u32), (u64, i64))> = leak_groups.into_iter().collect();
    leaks.sort_by(|a, b| {
        b.1 .1
            .cmp(&a.1 .1)
            .then(b.1 .0.cmp(&a.1 .0))
            .then(a.0.cmp(&b.0))
    });
    report.leaks = leaks
        .iter()
        .take(top)
        .map(|((ri, tid), (blocks, bytes))| Site {
            resource: registry[*ri].name.clone(),
            blocks: *blocks,
            bytes: *bytes,
            frames: frames_of(*tid),
        })
        .collect();
    let mut sites: Vec<(usize, u32, u64, i64)> = Vec::new();
    for (ri, aggs) in per_trace.iter().enumerate() {
        for (tid, a) in aggs.iter().enumerate() {
            if a.allocs > 0 {
                sites.push((ri, tid as u32, a.allocs, a.bytes));
            }
        }
    }
    sites.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then(b.3.cmp(&a.3))
            .then((a.0, a.1).cmp(&(b.0, b.1)))
    });
    report.top_sites = sites
        .iter()
        .take(top)
        .map(|&(ri, tid, allocs, bytes)| Site {
            resource: registry[ri].name.clone(),
            blocks: allocs,
            bytes,
            frames: frames_of(tid),
        })
        .collect();
    // Flame graph input needs all leaks, not only the top ones.
    report.leaks_all_for_flame = leaks
        .iter()
        .map(|((ri, tid), (_, bytes))| {
            let mut stack: Vec<String> = frames_of(*tid).into_iter().map(|f| f.1).collect();
            stack.reverse();
            stack.insert(0, registry[*ri].name.clone());
            (stack, *bytes)
        })
        .collect();
    Ok(report)
}

impl Report {
    /// Folded stacks (root first) of leaked bytes.
    pub fn leak_folded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (stack, bytes) in &self.leaks_all_for_flame {
            let _ = tracekit_export::flame::write_folded(&mut out, stack, (*bytes).max(0) as u64);
        }
        out
    }

    /// Flame graph (SVG) of leaked bytes.
    pub fn write_leak_flamegraph<W: Write>(&self, out: W) -> std::io::Result<()> {
        let folded = self.leak_folded();
        let opts = tracekit_export::flame::FlameOptions {
            title: "Leaked bytes by backtrace",
            count_name: "bytes",
            inverted: false,
        };
        if folded.is_empty() {
            // inferno refuses empty input; an empty graph says "no leaks".
            return tracekit_export::flame::svg_from_folded(b"(no leaks) 0\n", &opts, out);
        }
        tracekit_export::flame::svg_from_folded(&folded, &opts, out)
    }

    /// Live bytes over time as an SVG line plot.
    pub fn write_timeline_svg<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        let (w, h, left, bottom, top, right) = (900.0, 400.0, 80.0, 40.0, 30.0, 20.0);
        let pw = w - left - right;
        let ph = h - top - bottom;
        let max_calls = self.timeline.last().map(|p| p.call).unwrap_or(1).max(1) as f64;
        let max_bytes = self
            .timeline
            .iter()
            .map(|p| p.live_bytes)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let name = self
            .resources
            .first()
            .map(|r| r.name.as_str())
            .unwrap_or("memory");
        writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
        )?;
        writeln!(out, r#"<rect width="{w}" height="{h}" fill="white"/>"#)?;
        writeln!(
            out,
            r#"<text x="{}" y="18" text-anchor="middle" font-size="14">Live {} over time (bytes not yet freed)</text>"#,
            w / 2.0,
            xml_escape(name)
        )?;
        writeln!(
            out,
            r#"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#,
            top + ph,
            left + pw,
            top + ph,
            top + ph
        )?;
        for i in 0..=4 {
            let v = max_bytes * i as f64 / 4.0;
            let y = top + ph - ph * i as f64 / 4.0;
            writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text><line x1="{left}" y1="{y}" x2="{}" y2="{y}" stroke="lightgray"/>"#,
                left - 6.0,
                y + 4.0,
                human_bytes(v as i64),
                left + pw
            )?;
            let c = max_calls * i as f64 / 4.0;
            writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                left + pw * i as f64 / 4.0,
                top + ph + 16.0,
                c as u64
            )?;
        }
        writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">calls</text>"#,
            left + pw / 2.0,
            h - 6.0
        )?;
        write!(
            out,
            r#"<polyline fill="none" stroke="firebrick" stroke-width="1.5" points=""#
        )?;
        for p in &self.timeline {
            let x = left + pw * p.call as f64 / max_calls;
            let y = top + ph - ph * p.live_bytes.max(0) as f64 / max_bytes;
            write!(out, "{x:.1},{y:.1} ")?;
        }
        writeln!(out, r#""/>"#)?;
        writeln!(out, "</svg>")
    }
}

impl Report {
    /// The human report.
    pub fn write_text<W: Write>(&self, mut out: W, file: &str) -> std::io::Result<()> {
        let h = &self.header;
        writeln!(out, "sp-rtrace trace {file}")?;
        writeln!(
            out,
            "  process {} (pid {}), {}, recorded {}, origin {}",
            h.get("process").unwrap_or("?"),
            h.get("pid").unwrap_or("?"),
            h.get("arch").unwrap_or("?"),
            h.timestamp().unwrap_or("?"),
            h.get("origin").unwrap_or("?")
        )?;
        writeln!(out, "  {} calls", self.calls)?;
        for r in &self.resources {
            writeln!(out)?;
            writeln!(out, "{} ({}):", r.name, r.description)?;
            writeln!(
                out,
                "  allocations {}  ({} total), frees {} ({} of unknown blocks)",
                r.allocs,
                human_bytes(r.allocated_bytes),
                r.frees,
                r.unmatched_frees
            )?;
            writeln!(
                out,
                "  peak {} in {} blocks (at call {})",
                human_bytes(r.peak_bytes),
                r.peak_blocks,
                r.peak_at_index
            )?;
            writeln!(
                out,
                "  never freed: {} blocks, {} bytes",
                r.leaked_blocks, r.leaked_bytes
            )?;
        }
        writeln!(out)?;
        writeln!(out, "LEAKS (never freed, by backtrace, most bytes first):")?;
        if self.leaks.is_empty() {
            writeln!(out, "  none")?;
        }
        for s in &self.leaks {
            write_site(&mut out, s, "leaked")?;
        }
        writeln!(out)?;
        writeln!(out, "TOP ALLOCATING BACKTRACES (most calls first):")?;
        for s in &self.top_sites {
            write_site(&mut out, s, "allocated")?;
        }
        if self.warnings.total() > 0 {
            writeln!(out)?;
            writeln!(out, "{} warning(s) while reading:", self.warnings.total())?;
            for w in self.warnings.kept() {
                writeln!(out, "  line {}: {}", w.position, w.message)?;
            }
        }
        Ok(())
    }

    /// The same as JSON.
    pub fn to_json(&self, file: &str) -> serde_json::Value {
        use serde_json::json;
        let site = |s: &Site| {
            json!({
                "resource": s.resource,
                "blocks": s.blocks,
                "bytes": s.bytes,
                "frames": s.frames.iter().map(|(a, l, p)| json!({
                    "address": format!("0x{a:x}"), "function": l, "source": p
                })).collect::<Vec<_>>(),
            })
        };
        let header: serde_json::Map<String, serde_json::Value> = self
            .header
            .fields
            .iter()
            .map(|f| (f.key.clone(), json!(f.value)))
            .collect();
        json!({
            "file": file,
            "format": "sp-rtrace",
            "header": header,
            "calls": self.calls,
            "resources": self.resources.iter().map(|r| json!({
                "name": r.name, "description": r.description,
                "allocations": r.allocs, "allocated_bytes": r.allocated_bytes,
                "frees": r.frees, "unmatched_frees": r.unmatched_frees,
                "peak_bytes": r.peak_bytes, "peak_blocks": r.peak_blocks,
                "peak_at_index": r.peak_at_index,
                "leaked_blocks": r.leaked_blocks, "leaked_bytes": r.leaked_bytes,
            })).collect::<Vec<_>>(),
            "leaks": self.leaks.iter().map(site).collect::<Vec<_>>(),
            "top_sites": self.top_sites.iter().map(site).collect::<Vec<_>>(),
            "warnings": self.warnings.total(),
        })
    }
}

fn write_site<W: Write>(out: &mut W, s: &Site, verb: &str) -> std::io::Result<()> {
    writeln!(
        out,
        "  {} block(s), {} bytes {verb} [{}]",
        s.blocks, s.bytes, s.resource
    )?;
    for (addr, label, pos) in &s.frames {
        match pos {
            Some(p) => writeln!(out, "      0x{addr:x} {label} at {p}")?,
            None => writeln!(out, "      0x{addr:x} {label}")?,
        }
    }
    Ok(())
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `68012` → `66.4 KiB`.
pub fn human_bytes(b: i64) -> String {
    let a = b.unsigned_abs() as f64;
    let sign = if b < 0 { "-" } else { "" };
    if a < 1024.0 {
        format!("{b} B")
    } else if a < 1024.0 * 1024.0 {
        format!("{sign}{:.1} KiB", a / 1024.0)
    } else if a < 1024.0 * 1024.0 * 1024.0 {
        format!("{sign}{:.1} MiB", a / 1024.0 / 1024.0)
    } else {
        format!("{sign}{:.1} GiB", a / 1024.0 / 1024.0 / 1024.0)
    }
}
