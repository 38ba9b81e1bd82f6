//! The report's pictures: flame graphs (through `tracekit-export`) and
//! live bytes over time.

use std::io::Write;

use super::{Metric, Report};

impl Report {
    /// Folded stacks (root first, the resource type as the root frame)
    /// weighted by `m`; backtraces that cost nothing are left out.
    pub fn folded(&self, m: Metric) -> Vec<u8> {
        let mut out = Vec::new();
        for t in &self.traces {
            let v = t.cost.get(m);
            if v <= 0 {
                continue;
            }
            let mut stack: Vec<&str> = Vec::with_capacity(t.frames.len() + 1);
            stack.push(&self.resources[t.resource].name);
            stack.extend(t.frames.iter().rev().map(|f| f.1.as_str()));
            let _ = tracekit_export::flame::write_folded(&mut out, &stack, v as u64);
        }
        out
    }

    /// Folded stacks of leaked bytes.
    pub fn leak_folded(&self) -> Vec<u8> {
        self.folded(Metric::Leaked)
    }

    /// Flame graph (SVG) of the backtraces weighted by `m`.
    pub fn write_flamegraph<W: Write>(&self, m: Metric, out: W) -> std::io::Result<()> {
        let (title, count_name) = match m {
            Metric::Allocations => ("Allocation calls by backtrace", "calls"),
            Metric::Allocated => ("Allocated bytes by backtrace", "bytes"),
            Metric::Peak => ("Bytes in use at the peak by backtrace", "bytes"),
            Metric::Leaked => ("Leaked bytes by backtrace", "bytes"),
            Metric::Temporary => ("Temporary allocations by backtrace", "calls"),
            Metric::Largest => ("Largest allocation by backtrace", "bytes"),
        };
        let folded = self.folded(m);
        let opts = tracekit_export::flame::FlameOptions {
            title,
            count_name,
            inverted: false,
        };
        if folded.is_empty() {
            // inferno refuses empty input; an empty graph says so.
            let empty = format!("(no {}) 0\n", m.name());
            return tracekit_export::flame::svg_from_folded(empty.as_bytes(), &opts, out);
        }
        tracekit_export::flame::svg_from_folded(&folded, &opts, out)
    }

    /// Flame graph (SVG) of leaked bytes.
    pub fn write_leak_flamegraph<W: Write>(&self, out: W) -> std::io::Result<()> {
        self.write_flamegraph(Metric::Leaked, out)
    }

    /// Live bytes over time as an SVG line plot: against the recorder's
    /// clock when every plotted call has a timestamp, else against calls.
    pub fn write_timeline_svg<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        let (w, h, left, bottom, top, right) = (900.0, 400.0, 80.0, 40.0, 30.0, 20.0);
        let pw = w - left - right;
        let ph = h - top - bottom;
        // x of each point: ms since the first call, or the call number.
        let timed =
            !self.timeline.is_empty() && self.timeline.iter().all(|p| p.timestamp.is_some());
        let xs: Vec<f64> = if timed {
            let mut clock = super::Clock::default();
            self.timeline
                .iter()
                .map(|p| {
                    clock.tick(p.timestamp.unwrap_or(0));
                    clock.last as f64 - clock.first.unwrap_or(0) as f64
                })
                .collect()
        } else {
            self.timeline.iter().map(|p| p.call as f64).collect()
        };
        let max_x = xs.iter().cloned().fold(0.0, f64::max).max(1.0);
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
                super::human_bytes(v as i64),
                left + pw
            )?;
            let c = max_x * i as f64 / 4.0;
            let tick = if timed {
                format!("{:.3}", c / 1000.0)
            } else {
                format!("{}", c as u64)
            };
            writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle">{tick}</text>"#,
                left + pw * i as f64 / 4.0,
                top + ph + 16.0,
            )?;
        }
        writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            left + pw / 2.0,
            h - 6.0,
            if timed { "seconds" } else { "calls" }
        )?;
        write!(
            out,
            r#"<polyline fill="none" stroke="firebrick" stroke-width="1.5" points=""#
        )?;
        for (p, x) in self.timeline.iter().zip(&xs) {
            let x = left + pw * x / max_x;
            let y = top + ph - ph * p.live_bytes.max(0) as f64 / max_bytes;
            write!(out, "{x:.1},{y:.1} ")?;
        }
        writeln!(out, r#""/>"#)?;
        writeln!(out, "</svg>")
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
