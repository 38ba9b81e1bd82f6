//! The charts, drawn as inline SVG: every mark has a `<title>` (the
//! browser's tooltip), text uses the page's colours, and sizes are in a
//! fixed coordinate system that scales with the page.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::esc;
use crate::format;
use crate::model::*;
use crate::value::Unit;

/// Width of every chart's coordinate system.
const W: f64 = 960.0;

/// Categorical colours (readable on light and dark backgrounds).
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#86bcb6",
];
const OTHER: &str = "#a0a7b4";

fn colour(i: usize, name: &str) -> &'static str {
    if name == "other" {
        OTHER
    } else {
        PALETTE[i % PALETTE.len()]
    }
}

/// FNV-1a, for colours that stay with a name across charts and runs.
fn hash(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// A warm colour for a flame-graph frame.
fn warm(name: &str) -> String {
    let h = hash(name);
    let hue = h % 45;
    let sat = 65 + (h >> 8) % 25;
    let light = 58 + (h >> 16) % 14;
    format!("hsl({hue},{sat}%,{light}%)")
}

/// A colour for a span of a Gantt chart.
fn cool(name: &str) -> String {
    let h = hash(name);
    let hue = 170 + h % 110;
    let sat = 45 + (h >> 8) % 25;
    let light = 62 + (h >> 16) % 12;
    format!("hsl({hue},{sat}%,{light}%)")
}

/// About `n` round tick values covering `[lo, hi]`.
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !lo.is_finite() || !hi.is_finite() || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut v = Vec::new();
    let mut t = first;
    while t <= hi + step * 1e-9 && v.len() < 50 {
        // Avoid -0 and float dust in labels.
        v.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    v
}

/// An axis label: large counts shortened (`12k`, `3.4M`).
fn tick_label(v: f64, unit: Unit) -> String {
    if unit == Unit::Count && v.abs() >= 10_000.0 {
        let (d, suffix) = if v.abs() >= 1e9 {
            (1e9, "G")
        } else if v.abs() >= 1e6 {
            (1e6, "M")
        } else {
            (1e3, "k")
        };
        format!("{}{suffix}", format::sig(v / d, 3))
    } else {
        format::number(v, unit)
    }
}

/// A label that fits `px` pixels at about 6.4 px per character.
fn fit(label: &str, px: f64) -> Option<String> {
    let n = ((px - 6.0) / 6.4).floor();
    if n < 2.0 {
        return None;
    }
    let n = n as usize;
    if label.chars().count() <= n {
        Some(label.to_string())
    } else {
        let mut s: String = label.chars().take(n - 1).collect();
        s.push('…');
        Some(s)
    }
}

/// A plot area: x from `x0` to `x1`, y from `top` to `y` (the baseline).
struct Area {
    x0: f64,
    x1: f64,
    top: f64,
    y: f64,
}

/// The x axis of `a` for values `lo..hi`: a baseline, grid lines, labels.
fn x_axis(o: &mut String, a: &Area, lo: f64, hi: f64, unit: Unit) {
    let Area { x0, x1, top, y } = *a;
    let sx = |v: f64| x0 + (v - lo) / (hi - lo) * (x1 - x0);
    let _ = writeln!(
        o,
        "<line class=\"axis\" x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\"/>"
    );
    for t in ticks(lo, hi, 8) {
        let x = sx(t);
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{y:.1}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y + 14.0,
            esc(&format::number(t, unit))
        );
    }
}

/// Time series: stacked step areas for per-bucket amounts that add up,
/// lines otherwise; a hover band per x with every line's value.
pub(super) fn series(o: &mut String, s: &Series) {
    let n = s.x.len();
    if n == 0 || s.lines.is_empty() {
        o.push_str("<p class=\"tk-caption\">No data.</p>\n");
        return;
    }
    let (h, ml, mr, mt, mb) = (240.0, 70.0, 14.0, 10.0, 26.0);
    let (px0, px1, py0, py1) = (ml, W - mr, mt, h - mb);
    let step = s.bucket.unwrap_or_else(|| {
        if n > 1 {
            (s.x[n - 1] - s.x[0]) / (n - 1) as f64
        } else {
            1.0
        }
    });
    let lo = s.x[0];
    let hi = if s.bucket.is_some() {
        s.x[n - 1] + step
    } else {
        s.x[n - 1].max(lo + f64::EPSILON)
    };
    let sx = |v: f64| px0 + (v - lo) / (hi - lo) * (px1 - px0);
    // Cumulative tops per line.
    let mut cum: Vec<Vec<f64>> = Vec::with_capacity(s.lines.len());
    for (li, l) in s.lines.iter().enumerate() {
        let prev = if s.stacked && li > 0 {
            cum[li - 1].clone()
        } else {
            vec![0.0; n]
        };
        cum.push(
            (0..n)
                .map(|i| prev[i] + l.values.get(i).copied().unwrap_or(0.0))
                .collect(),
        );
    }
    let ymax = cum.iter().flatten().copied().fold(0.0f64, f64::max);
    let yt = ticks(0.0, if ymax > 0.0 { ymax } else { 1.0 }, 4);
    let ytop = yt
        .last()
        .copied()
        .unwrap_or(1.0)
        .max(ymax)
        .max(f64::MIN_POSITIVE);
    let sy = |v: f64| py1 - v / ytop * (py1 - py0);
    let _ = writeln!(
        o,
        "<p class=\"tk-caption\">{} ({}){}</p>",
        esc(&s.y_label),
        esc(&s.x_label),
        if s.folded > 0 {
            format!("; {} more series in “other”", s.folded)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "<svg class=\"tk-chart tk-series-chart\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{}\">",
        esc(&s.y_label)
    );
    for t in &yt {
        let y = sy(*t);
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{px0}\" y1=\"{y:.1}\" x2=\"{px1}\" y2=\"{y:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            px0 - 6.0,
            y + 4.0,
            esc(&tick_label(*t, s.y_unit))
        );
    }
    x_axis(
        o,
        &Area {
            x0: px0,
            x1: px1,
            top: py0,
            y: py1,
        },
        lo,
        hi,
        s.x_unit,
    );
    for (li, l) in s.lines.iter().enumerate().rev() {
        let c = colour(li, &l.name);
        let mut d = String::new();
        if s.bucket.is_some() {
            // Steps: along the top left to right, back along the bottom.
            for (i, (&x, &top)) in s.x.iter().zip(&cum[li]).enumerate() {
                let (xa, xb) = (sx(x), sx(x + step));
                let y = sy(top);
                let _ = write!(
                    d,
                    "{}{xa:.1},{y:.1}L{xb:.1},{y:.1}",
                    if i == 0 { "M" } else { "L" }
                );
            }
            if s.stacked {
                for i in (0..n).rev() {
                    let (xa, xb) = (sx(s.x[i]), sx(s.x[i] + step));
                    let y = sy(if li > 0 { cum[li - 1][i] } else { 0.0 });
                    let _ = write!(d, "L{xb:.1},{y:.1}L{xa:.1},{y:.1}");
                }
                d.push('Z');
                let _ = writeln!(
                    o,
                    "<path d=\"{d}\" fill=\"{c}\" fill-opacity=\"0.85\" stroke=\"{c}\" stroke-width=\"0.6\"><title>{}</title></path>",
                    esc(&l.name)
                );
            } else {
                let _ = writeln!(
                    o,
                    "<path d=\"{d}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"1.6\"><title>{}</title></path>",
                    esc(&l.name)
                );
            }
        } else {
            for (i, (&x, &top)) in s.x.iter().zip(&cum[li]).enumerate() {
                let _ = write!(
                    d,
                    "{}{:.1},{:.1}",
                    if i == 0 { "M" } else { "L" },
                    sx(x),
                    sy(top)
                );
            }
            if s.stacked {
                for i in (0..n).rev() {
                    let y = sy(if li > 0 { cum[li - 1][i] } else { 0.0 });
                    let _ = write!(d, "L{:.1},{y:.1}", sx(s.x[i]));
                }
                d.push('Z');
                let _ = writeln!(
                    o,
                    "<path d=\"{d}\" fill=\"{c}\" fill-opacity=\"0.85\"><title>{}</title></path>",
                    esc(&l.name)
                );
            } else {
                let _ = writeln!(
                    o,
                    "<path d=\"{d}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"1.6\"><title>{}</title></path>",
                    esc(&l.name)
                );
            }
        }
    }
    // Hover bands: one per x, listing the values there.
    for i in 0..n {
        let xa = if s.bucket.is_some() {
            sx(s.x[i])
        } else if i == 0 {
            px0
        } else {
            (sx(s.x[i - 1]) + sx(s.x[i])) / 2.0
        };
        let xb = if s.bucket.is_some() {
            sx(s.x[i] + step)
        } else if i + 1 == n {
            px1
        } else {
            (sx(s.x[i]) + sx(s.x[i + 1])) / 2.0
        };
        let mut tip = match s.bucket {
            Some(_) => format!(
                "{} – {}",
                format::number(s.x[i], s.x_unit),
                format::number(s.x[i] + step, s.x_unit)
            ),
            None => format::number(s.x[i], s.x_unit),
        };
        for l in &s.lines {
            let v = l.values.get(i).copied().unwrap_or(0.0);
            if v != 0.0 || !s.stacked {
                let _ = write!(tip, "\n{}: {}", l.name, format::number(v, s.y_unit));
            }
        }
        let _ = writeln!(
            o,
            "<rect class=\"hov\" x=\"{xa:.1}\" y=\"{py0}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}</title></rect>",
            (xb - xa).max(0.5),
            py1 - py0,
            esc(&tip)
        );
    }
    o.push_str("</svg>\n<div class=\"tk-legend\">");
    for (li, l) in s.lines.iter().enumerate() {
        let total: f64 = l.values.iter().sum();
        let peak = l.values.iter().copied().fold(0.0f64, f64::max);
        let _ = write!(
            o,
            "<span><i style=\"background:{}\"></i>{} <small>({} {})</small></span>",
            colour(li, &l.name),
            esc(&l.name),
            if s.bucket.is_some() { "total" } else { "max" },
            esc(&format::number(
                if s.bucket.is_some() { total } else { peak },
                s.y_unit
            ))
        );
    }
    o.push_str("</div>\n");
}

/// A histogram: one bar per bucket, equal widths (log buckets read well
/// that way), the bounds under every few bars.
pub(super) fn histogram(o: &mut String, hg: &Histogram) {
    let n = hg.buckets.len();
    if n == 0 {
        o.push_str("<p class=\"tk-caption\">No data.</p>\n");
        return;
    }
    let (h, ml, mr, mt, mb) = (200.0, 70.0, 14.0, 10.0, 26.0);
    let (px0, px1, py0, py1) = (ml, W - mr, mt, h - mb);
    let max = hg.buckets.iter().map(|b| b.count).max().unwrap_or(0) as f64;
    let yt = ticks(0.0, max.max(1.0), 4);
    let ytop = yt.last().copied().unwrap_or(1.0).max(max).max(1.0);
    let sy = |v: f64| py1 - v / ytop * (py1 - py0);
    let bw = (px1 - px0) / n as f64;
    let total: u64 = hg.buckets.iter().map(|b| b.count).sum();
    let _ = writeln!(
        o,
        "<p class=\"tk-caption\">{} {} by {}{}</p>",
        super::group_digits(&total.to_string()),
        esc(&hg.counted),
        if hg.unit.seconds().is_some() {
            "duration"
        } else {
            "value"
        },
        if hg.log {
            " (buckets grow geometrically)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "<svg class=\"tk-chart tk-histogram-chart\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{}\">",
        esc(&hg.counted)
    );
    for t in &yt {
        let y = sy(*t);
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{px0}\" y1=\"{y:.1}\" x2=\"{px1}\" y2=\"{y:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            px0 - 6.0,
            y + 4.0,
            esc(&tick_label(*t, Unit::Count))
        );
    }
    let _ = writeln!(
        o,
        "<line class=\"axis\" x1=\"{px0}\" y1=\"{py1}\" x2=\"{px1}\" y2=\"{py1}\"/>"
    );
    let every = (n as f64 / 8.0).ceil().max(1.0) as usize;
    for (i, b) in hg.buckets.iter().enumerate() {
        let x = px0 + i as f64 * bw;
        let y = sy(b.count as f64);
        let _ = writeln!(
            o,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>[{}, {}): {}</title></rect>",
            x + 1.0,
            (bw - 2.0).max(0.5),
            (py1 - y).max(0.0),
            PALETTE[0],
            esc(&format::number(b.lo, hg.unit)),
            esc(&format::number(b.hi, hg.unit)),
            b.count
        );
        if i % every == 0 {
            let _ = writeln!(
                o,
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"start\">{}</text>",
                py1 + 14.0,
                esc(&format::number(b.lo, hg.unit))
            );
        }
    }
    o.push_str("</svg>\n");
}

/// A call tree node built from folded stacks.
struct Node {
    name: String,
    total: f64,
    own: f64,
    children: Vec<usize>,
    index: HashMap<String, usize>,
}

/// An icicle flame graph (the root on top), heaviest children first;
/// frames narrower than a third of a pixel are left out and counted.
pub(super) fn flame(o: &mut String, f: &Flame) {
    let mut nodes = vec![Node {
        name: "all".into(),
        total: 0.0,
        own: 0.0,
        children: Vec::new(),
        index: HashMap::new(),
    }];
    for s in &f.stacks {
        if s.weight.is_nan() || s.weight <= 0.0 {
            continue;
        }
        let mut at = 0;
        nodes[0].total += s.weight;
        for fr in &s.frames {
            let next = match nodes[at].index.get(fr) {
                Some(&n) => n,
                None => {
                    nodes.push(Node {
                        name: fr.clone(),
                        total: 0.0,
                        own: 0.0,
                        children: Vec::new(),
                        index: HashMap::new(),
                    });
                    let n = nodes.len() - 1;
                    nodes[at].index.insert(fr.clone(), n);
                    nodes[at].children.push(n);
                    n
                }
            };
            nodes[next].total += s.weight;
            at = next;
        }
        nodes[at].own += s.weight;
    }
    let more_w = f.more.as_ref().map_or(0.0, |m| m.weight);
    let total = nodes[0].total;
    if total <= 0.0 {
        o.push_str("<p class=\"tk-caption\">No data.</p>\n");
        return;
    }
    // Lay out depth first; frames get x, width (px), depth.
    let row = 18.0;
    let mut placed: Vec<(usize, f64, f64, usize)> = Vec::new();
    let mut hidden = 0u64;
    let mut stack = vec![(0usize, 0.0f64, 0usize)];
    let mut depth_max = 0;
    while let Some((n, x, d)) = stack.pop() {
        let w = nodes[n].total / total * W;
        if w < 0.33 {
            hidden += 1;
            continue;
        }
        placed.push((n, x, w, d));
        depth_max = depth_max.max(d);
        let mut kids = nodes[n].children.clone();
        kids.sort_by(|a, b| nodes[*b].total.total_cmp(&nodes[*a].total));
        let mut cx = x;
        let mut next = Vec::with_capacity(kids.len());
        for k in kids {
            next.push((k, cx, d + 1));
            cx += nodes[k].total / total * W;
        }
        stack.extend(next.into_iter().rev());
    }
    let h = (depth_max + 1) as f64 * row + 2.0;
    let _ = writeln!(
        o,
        "<p class=\"tk-caption\">{} by call stack, {} in all{}. Hover a frame for its figures; click one to zoom in, the top bar to zoom out.</p>",
        esc(&f.measure),
        esc(&format::number(total + more_w, f.unit)),
        match &f.more {
            Some(m) if m.stacks > 0 => format!(
                "; {} lighter stacks ({}) not included",
                m.stacks,
                format::number(m.weight, f.unit)
            ),
            _ => String::new(),
        }
    );
    let _ = writeln!(
        o,
        "<svg class=\"tk-chart tk-flame\" viewBox=\"0 0 {W} {h:.0}\" data-w=\"{W}\" role=\"img\" aria-label=\"flame graph\">"
    );
    let grand = total + more_w;
    for (n, x, w, d) in placed {
        let node = &nodes[n];
        let y = d as f64 * row;
        let tip = format!(
            "{}\ntotal {} ({:.2}%) · self {}",
            node.name,
            format::number(node.total, f.unit),
            node.total / grand * 100.0,
            format::number(node.own, f.unit)
        );
        let _ = write!(
            o,
            "<g data-x=\"{x:.2}\" data-fw=\"{w:.2}\" data-d=\"{d}\" data-n=\"{}\"><title>{}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" rx=\"1.5\" fill=\"{}\"/>",
            esc(&node.name),
            esc(&tip),
            row - 1.0,
            if n == 0 { "#c9ccd3".to_string() } else { warm(&node.name) }
        );
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            x + 3.0,
            y + row - 5.5,
            fit(&node.name, w).map(|s| esc(&s)).unwrap_or_default()
        );
    }
    o.push_str("</svg>\n");
    if hidden > 0 {
        let _ = writeln!(
            o,
            "<p class=\"tk-caption\">{hidden} frame{} narrower than a third of a pixel not drawn.</p>",
            if hidden == 1 { "" } else { "s" }
        );
    }
}

/// Spans on lanes over time: each lane's spans nested by depth, the
/// highlighted ones outlined (and the others dimmed).
pub(super) fn gantt(o: &mut String, s: &Spans) {
    const MAX_LANES: usize = 48;
    const MAX_ROWS: u32 = 24;
    if s.spans.is_empty() {
        o.push_str("<p class=\"tk-caption\">No spans.</p>\n");
        return;
    }
    let lo = s
        .spans
        .iter()
        .map(|x| x.start)
        .fold(f64::INFINITY, f64::min);
    let mut hi = s
        .spans
        .iter()
        .map(|x| x.end)
        .fold(f64::NEG_INFINITY, f64::max);
    if hi.is_nan() || hi <= lo {
        hi = lo + 1.0;
    }
    let (ml, mr, mt) = (170.0, 12.0, 22.0);
    let (px0, px1) = (ml, W - mr);
    let sx = |v: f64| px0 + (v - lo) / (hi - lo) * (px1 - px0);
    let row = 15.0;
    let gap = 7.0;
    // Rows per lane (deepest span + 1, capped).
    let mut rows = vec![0u32; s.lanes.len()];
    for x in &s.spans {
        if let Some(r) = rows.get_mut(x.lane as usize) {
            *r = (*r).max(x.depth.min(MAX_ROWS - 1) + 1);
        }
    }
    let lanes: Vec<usize> = (0..s.lanes.len())
        .filter(|&l| rows[l] > 0)
        .take(MAX_LANES)
        .collect();
    let mut top = vec![f64::NAN; s.lanes.len()];
    let mut y = mt;
    for &l in &lanes {
        top[l] = y;
        y += rows[l] as f64 * row + gap;
    }
    let h = y + 4.0;
    let any_hl = s.spans.iter().any(|x| x.highlight);
    let _ = writeln!(
        o,
        "<svg class=\"tk-chart tk-gantt{}\" viewBox=\"0 0 {W} {h:.0}\" role=\"img\" aria-label=\"timeline\">",
        if any_hl { " has-hl" } else { "" }
    );
    // Time axis on top.
    for t in ticks(lo, hi, 8) {
        let x = sx(t);
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/><text x=\"{x:.1}\" y=\"12\" text-anchor=\"middle\">{}</text>",
            mt - 4.0,
            h - 4.0,
            esc(&format::number(t, s.unit))
        );
    }
    for &l in &lanes {
        let y = top[l];
        let lh = rows[l] as f64 * row;
        let _ = writeln!(
            o,
            "<rect class=\"lanebg\" x=\"0\" y=\"{:.1}\" width=\"{W}\" height=\"{:.1}\" fill-opacity=\"0.5\"/><text class=\"lane\" x=\"6\" y=\"{:.1}\">{}<title>{}</title></text>",
            y - 2.0,
            lh + 4.0,
            y + 11.0,
            fit(&s.lanes[l].name, ml - 8.0).map(|s| esc(&s)).unwrap_or_default(),
            esc(&s.lanes[l].name)
        );
    }
    let mut skipped = 0u64;
    for x in &s.spans {
        let l = x.lane as usize;
        if l >= top.len() || top[l].is_nan() || x.depth >= MAX_ROWS {
            skipped += 1;
            continue;
        }
        let y = top[l] + x.depth as f64 * row;
        let xa = sx(x.start);
        let w = (sx(x.end) - xa).max(0.6);
        let mut tip = format!(
            "{}\n{} at {}",
            x.name,
            format::number(x.end - x.start, s.unit),
            format::number(x.start, s.unit)
        );
        if let Some(d) = &x.detail {
            let _ = write!(tip, "\n{d}");
        }
        if x.highlight {
            if let Some(h) = &s.highlight {
                let _ = write!(tip, "\n{h}");
            }
        }
        let _ = write!(
            o,
            "<g><title>{}</title><rect class=\"span{}\" x=\"{xa:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" rx=\"1.5\" fill=\"{}\"/>",
            esc(&tip),
            if x.highlight { " hl" } else { "" },
            row - 2.0,
            cool(&x.name)
        );
        match fit(&x.name, w) {
            Some(label) if w > 24.0 => {
                let _ = writeln!(
                    o,
                    "<text class=\"in\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
                    xa + 3.0,
                    y + row - 5.0,
                    esc(&label)
                );
            }
            _ => o.push_str("</g>\n"),
        }
    }
    o.push_str("</svg>\n");
    let lanes_left = s
        .lanes
        .iter()
        .enumerate()
        .filter(|(l, _)| rows[*l] > 0)
        .count()
        - lanes.len();
    let mut notes = Vec::new();
    if any_hl {
        if let Some(h) = &s.highlight {
            notes.push(format!("<span><i class=\"hlkey\"></i>{}</span>", esc(h)));
        }
    }
    if lanes_left > 0 {
        notes.push(format!("<span>{lanes_left} more lanes not drawn</span>"));
    }
    if skipped > 0 {
        notes.push(format!(
            "<span>{skipped} spans deeper than {MAX_ROWS} levels or on those lanes not drawn</span>"
        ));
    }
    if s.more > 0 {
        notes.push(format!(
            "<span>{} more spans not in the report</span>",
            s.more
        ));
    }
    if !notes.is_empty() {
        let _ = writeln!(o, "<div class=\"tk-legend\">{}</div>", notes.join(""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_counts_are_short_on_axes() {
        assert_eq!(tick_label(10_000_000.0, Unit::Count), "10M");
        assert_eq!(tick_label(2500.0, Unit::Count), "2500");
        assert_eq!(tick_label(25_000.0, Unit::Count), "25k");
        assert_eq!(tick_label(0.5, Unit::S), "500 ms");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 1.0, 4), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(ticks(5.0, 5.0, 4), vec![5.0]);
    }

    #[test]
    fn labels_fit_or_go() {
        assert_eq!(fit("main", 100.0).as_deref(), Some("main"));
        assert_eq!(
            fit("a_long_function_name", 60.0).as_deref(),
            Some("a_long_…")
        );
        assert_eq!(fit("main", 10.0), None);
    }
}
