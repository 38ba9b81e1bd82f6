//! The report as text (heaptrack_print's sections) and as JSON.

use std::io::Write;

use serde_json::{json, Value};

use super::{Cost, Frames, Location, Metric, Report, Site, Trace};

/// Backtraces listed under each location.
pub(super) const SUB_TRACES: usize = 5;

impl Report {
    /// The human report: the text of [`Report::to_report`]'s sections
    /// (each carries its part of this layout, which the tests pin).
    pub fn write_text<W: Write>(&self, mut out: W, file: &str) -> std::io::Result<()> {
        tracekit_report::text::write_report(&mut out, &self.to_report(file))
    }

    /// The text's first lines: the trace, the process, notes, calls.
    pub(super) fn header_text(&self, file: &str) -> String {
        let mut out = Vec::new();
        let _ = self.write_header(&mut out, file);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn write_header<W: Write>(&self, mut out: W, file: &str) -> std::io::Result<()> {
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
        if let Some(d) = h.get("backtrace depth") {
            // How deep the recorder unwound: a stack cut short hides the
            // callers above this many frames.
            writeln!(out, "  backtrace depth {}", d.trim())?;
        }
        for n in &self.notes {
            writeln!(out, "  {n}")?;
        }
        match self.runtime_ms {
            Some(ms) => writeln!(
                out,
                "  {} calls over {:.3} s",
                self.calls,
                ms as f64 / 1000.0
            )?,
            None => writeln!(out, "  {} calls", self.calls)?,
        }
        Ok(())
    }

    /// The totals of every resource type.
    pub(super) fn resources_text(&self) -> String {
        let mut out = Vec::new();
        let _ = self.write_resources(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn write_resources<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        for r in &self.resources {
            writeln!(out)?;
            writeln!(out, "{} ({}):", r.name, r.description)?;
            write!(
                out,
                "  allocations {}  ({} total), frees {} ({} of {}",
                r.allocs,
                human_bytes(r.allocated_bytes),
                r.frees,
                r.unmatched_frees,
                if self.attached() {
                    "blocks allocated before recording"
                } else {
                    "unknown blocks"
                }
            )?;
            if r.null_frees > 0 {
                // Not an error: counted apart (heaptrack records none).
                write!(out, ", {} free(NULL)", r.null_frees)?;
            }
            if r.paused_frees > 0 {
                write!(out, ", {} of blocks allocated while paused", r.paused_frees)?;
            }
            writeln!(out, ")")?;
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
            writeln!(
                out,
                "  temporary: {} (freed by the next call), largest allocation: {} bytes",
                r.temporary, r.largest
            )?;
        }
        Ok(())
    }

    /// One view (`m`) of resource `ri`: its `top` locations.
    pub(super) fn view_text(&self, ri: usize, m: Metric) -> String {
        let mut out = Vec::new();
        let _ = self.write_view(&mut out, ri, m);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn write_view<W: Write>(&self, mut out: W, ri: usize, m: Metric) -> std::io::Result<()> {
        writeln!(out)?;
        writeln!(out, "{} [{}]", title(m), self.resources[ri].name)?;
        let view = self.view(ri, m, self.top);
        if view.is_empty() {
            writeln!(out, "  none")?;
        }
        for (loc, traces) in view {
            write_location(&mut out, loc, &traces, m)?;
        }
        Ok(())
    }

    /// The markers the program made, each on a line (time since the
    /// first call, thread, kind, name), a snapshot's live memory and the
    /// backtraces holding the most of it under it.
    pub(super) fn markers_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let snapshots = self
            .markers
            .iter()
            .filter(|m| m.marker.kind == crate::marker::MarkerKind::Snapshot)
            .count();
        let _ = writeln!(
            out,
            "\nmarkers: {} ({snapshots} snapshot(s))",
            self.markers.len() as u64 + self.markers_omitted
        );
        for m in &self.markers {
            let k = &m.marker;
            let when = match m.elapsed_ms {
                Some(ms) => format!("+{:.3} s", ms as f64 / 1000.0),
                None => format!("call {}", m.calls_before),
            };
            let _ = write!(
                out,
                "  {when}  thread {}  {:<8}  {}",
                k.thread,
                k.kind.name(),
                serde_json::Value::from(k.name.as_str())
            );
            if let Some(n) = k.cut_from {
                let _ = write!(out, " (name cut: {n} bytes)");
            }
            if let Some(f) = m.frames.first() {
                let _ = write!(out, " at {}", f.1);
                if let Some(p) = &f.2 {
                    let _ = write!(out, " ({p})");
                }
            }
            out.push('\n');
            if let Some((bytes, blocks)) = m.live {
                let _ = writeln!(
                    out,
                    "      live: {} in {blocks} block(s)",
                    human_bytes(bytes)
                );
                for s in &m.sites {
                    let _ = write!(
                        out,
                        "        {} in {} block(s)",
                        human_bytes(s.bytes),
                        s.blocks
                    );
                    if let Some(f) = super::location_frame(&s.frames).map(|i| &s.frames[i]) {
                        let _ = write!(out, " from {}", f.1);
                        if let Some(p) = &f.2 {
                            let _ = write!(out, " ({p})");
                        }
                    }
                    out.push('\n');
                }
            }
        }
        if self.markers_omitted > 0 {
            let _ = writeln!(
                out,
                "  ... and {} more marker(s), not listed",
                self.markers_omitted
            );
        }
        out
    }

    /// The reader's warnings (empty when there were none).
    pub(super) fn warnings_text(&self) -> String {
        let mut out = String::new();
        if self.warnings.total() > 0 {
            out.push('\n');
            out.push_str(&format!(
                "{} warning(s) while reading:\n",
                self.warnings.total()
            ));
            for w in self.warnings.kept() {
                out.push_str(&format!("  line {}: {}\n", w.position, w.message));
            }
        }
        out
    }

    /// The same as JSON.
    pub fn to_json(&self, file: &str) -> Value {
        let site = |s: &Site| {
            json!({
                "resource": s.resource,
                "blocks": s.blocks,
                "bytes": s.bytes,
                "frames": frames_json(&s.frames),
            })
        };
        let header: serde_json::Map<String, Value> = self
            .header
            .fields
            .iter()
            .map(|f| (f.key.clone(), json!(f.value)))
            .collect();
        let mut views = serde_json::Map::new();
        for (ri, r) in self.resources.iter().enumerate() {
            let mut per = serde_json::Map::new();
            for m in Metric::VIEWS {
                let list: Vec<Value> = self
                    .view(ri, m, self.top)
                    .into_iter()
                    .map(|(l, ts)| location_json(l, &ts))
                    .collect();
                per.insert(m.name().to_string(), Value::Array(list));
            }
            views.insert(r.name.clone(), Value::Object(per));
        }
        let mut v = json!({
            "file": file,
            "format": "sp-rtrace",
            "header": header,
            "notes": self.notes,
            "attached": self.attached(),
            "calls": self.calls,
            "runtime_ms": self.runtime_ms,
            "resources": self.resources.iter().map(|r| json!({
                "name": r.name, "description": r.description,
                "allocations": r.allocs, "allocated_bytes": r.allocated_bytes,
                "frees": r.frees, "unmatched_frees": r.unmatched_frees,
                "null_frees": r.null_frees, "paused_frees": r.paused_frees,
                "peak_bytes": r.peak_bytes, "peak_blocks": r.peak_blocks,
                "peak_at_index": r.peak_at_index,
                "leaked_blocks": r.leaked_blocks, "leaked_bytes": r.leaked_bytes,
                "temporary": r.temporary, "largest": r.largest,
            })).collect::<Vec<_>>(),
            "views": views,
            "leaks": self.leaks.iter().map(site).collect::<Vec<_>>(),
            "top_sites": self.top_sites.iter().map(site).collect::<Vec<_>>(),
            "warnings": self.warnings.total(),
        });
        if !self.markers.is_empty() || self.markers_omitted > 0 {
            v["markers"] = self
                .markers
                .iter()
                .map(|m| {
                    json!({
                        "index": m.marker.index,
                        "timestamp_ms": m.marker.timestamp,
                        "elapsed_ms": m.elapsed_ms,
                        "thread": m.marker.thread,
                        "kind": m.marker.kind.name(),
                        "name": m.marker.name,
                        "name_length": m.marker.cut_from,
                        "calls_before": m.calls_before,
                        "frames": frames_json(&m.frames),
                        "live_bytes": m.live.map(|l| l.0),
                        "live_blocks": m.live.map(|l| l.1),
                        "sites": m.sites.iter().map(site).collect::<Vec<_>>(),
                    })
                })
                .collect::<Vec<_>>()
                .into();
            v["markers_omitted"] = self.markers_omitted.into();
        }
        v
    }
}

pub(super) fn title(m: Metric) -> &'static str {
    match m {
        Metric::Allocations => "MOST CALLS TO ALLOCATION FUNCTIONS",
        Metric::Allocated => "MOST BYTES ALLOCATED",
        Metric::Peak => "PEAK CONSUMERS (allocated at the time of the peak)",
        Metric::Leaked => "LEAKS (never freed)",
        Metric::Temporary => "MOST TEMPORARY ALLOCATIONS (freed by the next call)",
        Metric::Largest => "LARGEST ALLOCATIONS",
    }
}

/// `1234 calls with 2.0 KiB at the peak` and the like.
pub(super) fn cost_line(c: &Cost, m: Metric) -> String {
    match m {
        Metric::Allocations => format!(
            "{} calls ({}) with {} at the peak",
            c.allocations,
            human_bytes(c.allocated),
            human_bytes(c.peak)
        ),
        Metric::Allocated => format!(
            "{} allocated in {} calls",
            human_bytes(c.allocated),
            c.allocations
        ),
        Metric::Peak => format!(
            "{} at the peak, over {} calls",
            human_bytes(c.peak),
            c.allocations
        ),
        Metric::Leaked => format!(
            "{} leaked in {} blocks, over {} calls",
            human_bytes(c.leaked),
            c.leaked_blocks,
            c.allocations
        ),
        Metric::Temporary => format!(
            "{} temporary of {} calls ({:.2}%)",
            c.temporary,
            c.allocations,
            if c.allocations == 0 {
                0.0
            } else {
                c.temporary as f64 * 100.0 / c.allocations as f64
            }
        ),
        Metric::Largest => format!(
            "{} largest, over {} calls",
            human_bytes(c.largest),
            c.allocations
        ),
    }
}

pub(super) fn write_location<W: Write>(
    out: &mut W,
    loc: &Location,
    traces: &[&Trace],
    m: Metric,
) -> std::io::Result<()> {
    writeln!(out, "  {} from", cost_line(&loc.cost, m))?;
    writeln!(out, "    {}", loc.function)?;
    if let Some(p) = &loc.position {
        writeln!(out, "      at {p}")?;
    }
    if let Some(module) = &loc.module {
        writeln!(out, "      in {module}")?;
    }
    let mut shown = 0i64;
    for t in traces.iter().take(SUB_TRACES) {
        shown += t.cost.get(m);
        let from = super::location_frame(&t.frames).map_or(0, |i| i + 1);
        if from >= t.frames.len() && traces.len() == 1 {
            // Nothing more to say than the location itself.
            continue;
        }
        writeln!(out, "    {} from:", cost_line(&t.cost, m))?;
        write_frames(out, &t.frames, from, "        ")?;
    }
    if traces.len() > SUB_TRACES {
        let rest = loc.cost.get(m) - shown;
        let rest = if m.is_bytes() {
            human_bytes(rest)
        } else {
            rest.to_string()
        };
        writeln!(
            out,
            "    and {rest} from {} other places",
            traces.len() - SUB_TRACES
        )?;
    }
    Ok(())
}

/// Frames from index `from` on, one a line, inlined ones marked.
pub(super) fn write_frames<W: Write>(
    out: &mut W,
    frames: &Frames,
    from: usize,
    indent: &str,
) -> std::io::Result<()> {
    for (_, label, pos, inlined) in frames.iter().skip(from) {
        write!(out, "{indent}{label}")?;
        if let Some(p) = pos {
            write!(out, " at {p}")?;
        }
        if *inlined {
            write!(out, " (inlined)")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn frames_json(frames: &Frames) -> Vec<Value> {
    frames
        .iter()
        .map(|(a, l, p, inlined)| {
            json!({"address": format!("0x{a:x}"), "function": l, "source": p, "inlined": inlined})
        })
        .collect()
}

pub(super) fn cost_json(c: &Cost) -> Value {
    json!({
        "allocations": c.allocations,
        "allocated": c.allocated,
        "peak": c.peak,
        "leaked": c.leaked,
        "leaked_blocks": c.leaked_blocks,
        "temporary": c.temporary,
        "largest": c.largest,
    })
}

pub(super) fn location_json(l: &Location, traces: &[&Trace]) -> Value {
    json!({
        "function": l.function,
        "source": l.position,
        "module": l.module,
        "cost": cost_json(&l.cost),
        "backtraces": traces.iter().take(SUB_TRACES).map(|t| json!({
            "cost": cost_json(&t.cost),
            "frames": frames_json(&t.frames),
        })).collect::<Vec<_>>(),
    })
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
