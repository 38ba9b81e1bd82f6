//! The text renderer.
//!
//! A section with [`TextForm::Verbatim`] text prints that text; one with
//! [`TextForm::Omit`] prints nothing of its own; the others get the
//! generic layout of their kind: a title line, then the body indented by
//! two spaces (aligned tables with units, `label: value` summaries,
//! sparklines for time series, bars for histograms, indented trees for
//! spans, the heaviest stacks of a flame graph). Children follow their
//! parent.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::format;
use crate::model::*;
use crate::value::{Unit, Value};

/// How many lines the generic layouts of flame data and spans print.
const LIST_LINES: usize = 20;

/// Writes `reports` one after the other.
pub fn write<W: Write + ?Sized>(out: &mut W, reports: &[Report]) -> io::Result<()> {
    for r in reports {
        write_report(out, r)?;
    }
    Ok(())
}

pub fn write_report<W: Write + ?Sized>(out: &mut W, r: &Report) -> io::Result<()> {
    match &r.text {
        TextForm::Verbatim(s) => out.write_all(s.as_bytes())?,
        TextForm::Omit => {}
        TextForm::Generic => {
            writeln!(out, "{}", r.title)?;
            for i in &r.inputs {
                match &i.format {
                    Some(f) => writeln!(out, "  input: {} ({f})", i.path)?,
                    None => writeln!(out, "  input: {}", i.path)?,
                }
            }
            writeln!(out)?;
        }
    }
    for s in &r.sections {
        write_section(out, s)?;
    }
    Ok(())
}

fn write_section<W: Write + ?Sized>(out: &mut W, s: &Section) -> io::Result<()> {
    match &s.text {
        TextForm::Verbatim(t) => out.write_all(t.as_bytes())?,
        TextForm::Omit => {}
        TextForm::Generic => {
            writeln!(out, "{}", s.title)?;
            body(out, &s.body)?;
            if !matches!(s.body, Body::Group) {
                writeln!(out)?;
            }
        }
    }
    for c in &s.sections {
        write_section(out, c)?;
    }
    Ok(())
}

fn body<W: Write + ?Sized>(out: &mut W, b: &Body) -> io::Result<()> {
    match b {
        Body::Group => Ok(()),
        Body::Summary { items } => summary(out, items),
        Body::Table(t) => table(out, t),
        Body::Notes { items, more } => {
            for n in items {
                let level = match n.level {
                    Level::Info => "note",
                    Level::Warning => "warning",
                };
                writeln!(out, "  {level}: {}", n.text)?;
            }
            if *more > 0 {
                writeln!(out, "  ... {more} more not shown")?;
            }
            Ok(())
        }
        Body::Flame(f) => flame(out, f),
        Body::Series(s) => series(out, s),
        Body::Histogram(h) => histogram(out, h),
        Body::Spans(s) => spans(out, s),
    }
}

fn summary<W: Write + ?Sized>(out: &mut W, items: &[Item]) -> io::Result<()> {
    let w = items
        .iter()
        .map(|i| i.label.chars().count())
        .max()
        .unwrap_or(0);
    for i in items {
        let pad = w - i.label.chars().count();
        let line = format!(
            "  {}:{:pad$} {}",
            i.label,
            "",
            format::value(&i.value, i.unit)
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn table<W: Write + ?Sized>(out: &mut W, t: &Table) -> io::Result<()> {
    let mut cells: Vec<Vec<String>> = Vec::with_capacity(t.rows.len() + 2);
    cells.push(t.columns.iter().map(|c| c.label.clone()).collect());
    for r in &t.rows {
        cells.push(
            t.columns
                .iter()
                .zip(r)
                .map(|(c, v)| format::value(v, c.unit))
                .collect(),
        );
    }
    if let Some(m) = &t.more {
        let mut row: Vec<String> = t
            .columns
            .iter()
            .zip(&m.totals)
            .map(|(c, v)| format::value(v, c.unit))
            .collect();
        row.resize(t.columns.len(), String::new());
        if let Some(first) = row.first_mut() {
            if first.is_empty() {
                *first = format!("({} more)", m.rows);
            }
        }
        cells.push(row);
    }
    let widths: Vec<usize> = (0..t.columns.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &cells {
        let mut line = String::from(" ");
        for (i, c) in r.iter().enumerate() {
            let w = widths[i];
            let pad = w.saturating_sub(c.chars().count());
            let last = i + 1 == r.len();
            line.push(' ');
            if t.columns[i].unit.is_numeric() {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                if !last {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    if let Some(m) = &t.more {
        writeln!(
            out,
            "  ({} more row{} not shown; their totals on the last line)",
            m.rows,
            if m.rows == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

fn flame<W: Write + ?Sized>(out: &mut W, f: &Flame) -> io::Result<()> {
    let total: f64 =
        f.stacks.iter().map(|s| s.weight).sum::<f64>() + f.more.as_ref().map_or(0.0, |m| m.weight);
    writeln!(
        out,
        "  {} in all: {}; the heaviest stacks:",
        f.measure,
        format::number(total, f.unit)
    )?;
    let mut order: Vec<&Stack> = f.stacks.iter().collect();
    order.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let shown: Vec<(String, &Stack)> = order
        .iter()
        .take(LIST_LINES)
        .map(|s| (format::number(s.weight, f.unit), *s))
        .collect();
    let w = shown
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    for (n, s) in &shown {
        writeln!(out, "  {n:>w$}  {}", s.frames.join(" > "))?;
    }
    let hidden =
        order.len().saturating_sub(LIST_LINES) as u64 + f.more.as_ref().map_or(0, |m| m.stacks);
    if hidden > 0 {
        writeln!(out, "  ... {hidden} more stacks")?;
    }
    Ok(())
}

/// Eight levels of a sparkline.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

fn series<W: Write + ?Sized>(out: &mut W, s: &Series) -> io::Result<()> {
    let (from, to) = (
        s.x.first().copied().unwrap_or(0.0),
        s.x.last().copied().unwrap_or(0.0) + s.bucket.unwrap_or(0.0),
    );
    writeln!(
        out,
        "  {} from {} to {}{}",
        s.x_label,
        format::number(from, s.x_unit),
        format::number(to, s.x_unit),
        match s.bucket {
            Some(b) => format!(", {} per bucket", format::number(b, s.x_unit)),
            None => String::new(),
        }
    )?;
    let w = s
        .lines
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(0);
    // At most 60 columns: neighbouring values are merged (summed when
    // they are per-bucket amounts, else their largest).
    let cols = s.x.len().clamp(1, 60);
    for l in &s.lines {
        let mut v = vec![0.0f64; cols];
        for (i, &y) in l.values.iter().enumerate() {
            let c = i * cols / l.values.len().max(1);
            if s.bucket.is_some() {
                v[c] += y;
            } else {
                v[c] = v[c].max(y);
            }
        }
        let max = v.iter().copied().fold(0.0, f64::max);
        let spark: String = v
            .iter()
            .map(|&y| {
                if max <= 0.0 || y <= 0.0 {
                    ' '
                } else {
                    BARS[((y / max) * 7.0).round().clamp(0.0, 7.0) as usize]
                }
            })
            .collect();
        let pad = w - l.name.chars().count();
        let sum: f64 = l.values.iter().sum();
        let peak = l.values.iter().copied().fold(0.0, f64::max);
        writeln!(
            out,
            "  {}{:pad$} |{spark}| {} {}",
            l.name,
            "",
            if s.stacked { "total" } else { "max" },
            format::number(if s.stacked { sum } else { peak }, s.y_unit)
        )?;
    }
    Ok(())
}

fn histogram<W: Write + ?Sized>(out: &mut W, h: &Histogram) -> io::Result<()> {
    let max = h.buckets.iter().map(|b| b.count).max().unwrap_or(0);
    let labels: Vec<String> = h
        .buckets
        .iter()
        .map(|b| {
            format!(
                "[{}, {})",
                format::number(b.lo, h.unit),
                format::number(b.hi, h.unit)
            )
        })
        .collect();
    let w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let cw = h
        .buckets
        .iter()
        .map(|b| b.count.to_string().len())
        .max()
        .unwrap_or(0);
    for (b, l) in h.buckets.iter().zip(&labels) {
        let bar = if max == 0 {
            0
        } else {
            ((b.count as f64 / max as f64) * 40.0).ceil() as usize
        };
        let pad = w - l.chars().count();
        writeln!(out, "  {l}{:pad$} {:>cw$} {}", "", b.count, "#".repeat(bar))?;
    }
    writeln!(out, "  ({} counted)", h.counted)
}

fn spans<W: Write + ?Sized>(out: &mut W, s: &Spans) -> io::Result<()> {
    let dur = |x: &Span| format::number(x.end - x.start, s.unit);
    let mark = |x: &Span| if x.highlight { " *" } else { "" };
    // Spans printed.
    let mut lines = 0usize;
    match s.view {
        SpanView::Tree => {
            let mut children: HashMap<Option<u64>, Vec<usize>> = HashMap::new();
            let ids: std::collections::HashSet<u64> = s.spans.iter().filter_map(|x| x.id).collect();
            for (i, x) in s.spans.iter().enumerate() {
                let parent = x.parent.filter(|p| ids.contains(p));
                children.entry(parent).or_default().push(i);
            }
            let mut stack: Vec<(usize, usize)> = children
                .get(&None)
                .map(|v| v.iter().rev().map(|&i| (i, 0)).collect())
                .unwrap_or_default();
            // Each span once, whatever the ids say (repeated ids, cycles).
            let mut seen = vec![false; s.spans.len()];
            while let Some((i, depth)) = stack.pop() {
                if lines == LIST_LINES * 5 {
                    break;
                }
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                let x = &s.spans[i];
                writeln!(
                    out,
                    "  {:indent$}{}  {}{}",
                    "",
                    x.name,
                    dur(x),
                    mark(x),
                    indent = depth * 2
                )?;
                lines += 1;
                if let Some(id) = x.id {
                    if let Some(c) = children.get(&Some(id)) {
                        stack.extend(c.iter().rev().map(|&c| (c, depth + 1)));
                    }
                }
            }
        }
        SpanView::Gantt => {
            for (li, lane) in s.lanes.iter().enumerate() {
                let mine: Vec<&Span> = s.spans.iter().filter(|x| x.lane as usize == li).collect();
                let busy: f64 = mine
                    .iter()
                    .filter(|x| x.depth == 0)
                    .map(|x| x.end - x.start)
                    .sum();
                writeln!(
                    out,
                    "  {}: {} span{}, {} at the top level",
                    lane.name,
                    mine.len(),
                    if mine.len() == 1 { "" } else { "s" },
                    format::number(busy, s.unit)
                )?;
            }
            writeln!(out, "  the longest:")?;
            let mut longest: Vec<&Span> = s.spans.iter().collect();
            longest.sort_by(|a, b| (b.end - b.start).total_cmp(&(a.end - a.start)));
            for x in longest.iter().take(LIST_LINES) {
                writeln!(
                    out,
                    "    {}  {}  at {}{}",
                    x.name,
                    dur(x),
                    format::number(x.start, s.unit),
                    mark(x)
                )?;
                lines += 1;
            }
        }
    }
    let hidden = s.spans.len().saturating_sub(lines) as u64 + s.more;
    if hidden > 0 {
        writeln!(out, "  ... {hidden} more spans")?;
    }
    if let Some(h) = &s.highlight {
        if s.spans.iter().any(|x| x.highlight) {
            writeln!(out, "  (* {h})")?;
        }
    }
    Ok(())
}

/// The generic text of one value (what a table cell shows).
pub fn cell(v: &Value, unit: Unit) -> String {
    format::value(v, unit)
}
