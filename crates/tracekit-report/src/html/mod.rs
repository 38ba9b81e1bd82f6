//! The HTML renderer: one self-contained page.
//!
//! Everything is inline: the style sheet, SVG charts drawn here (time
//! series, histograms, flame graphs, Gantt lanes), and a small script that
//! sorts tables and zooms flame graphs. The page works without the script
//! (tables come in the report's order, trees are `<details>`), names no URL
//! of any kind, and carries a Content-Security-Policy that forbids loading
//! anything, so it opens offline, from a mail or a CI artifact, and leaks
//! nothing when opened.

mod svg;

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::format;
use crate::model::*;
use crate::value::{Unit, Value};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// Escapes text for element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// Writes one page holding `reports`.
pub fn write<W: Write + ?Sized>(out: &mut W, reports: &[Report]) -> io::Result<()> {
    let title = match reports {
        [one] => one.title.clone(),
        _ => "tracekit report".to_string(),
    };
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"generator\" content=\"{}\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        esc(&crate::json::generator()),
        esc(&title)
    )?;
    writeln!(
        out,
        "<header class=\"tk-top\"><h1>{}</h1><div class=\"tk-gen\">{} · {}</div></header>",
        esc(&title),
        esc(&crate::json::generator()),
        crate::SCHEMA
    )?;
    // Table of contents: the reports and their top-level sections.
    let mut nav = String::from("<nav class=\"tk-toc\">");
    for (ri, r) in reports.iter().enumerate() {
        if reports.len() > 1 {
            let _ = write!(nav, "<b>{}</b>", esc(&r.title));
        }
        for s in r.sections.iter().filter(|s| s.html) {
            let _ = write!(
                nav,
                "<a href=\"#{}\">{}</a>",
                anchor(ri, &s.id),
                esc(&s.title)
            );
        }
    }
    nav.push_str("</nav>");
    writeln!(out, "{nav}\n<main>")?;
    for (ri, r) in reports.iter().enumerate() {
        writeln!(
            out,
            "<article class=\"tk-report\" id=\"r{ri}\" data-dialect=\"{}\">",
            esc(&r.dialect)
        )?;
        if reports.len() > 1 {
            writeln!(out, "<h2>{}</h2>", esc(&r.title))?;
        }
        let inputs: Vec<String> = r
            .inputs
            .iter()
            .map(|i| match &i.format {
                Some(f) => format!(
                    "<span class=\"tk-mono\">{}</span> ({})",
                    esc(&i.path),
                    esc(f)
                ),
                None => format!("<span class=\"tk-mono\">{}</span>", esc(&i.path)),
            })
            .collect();
        if !inputs.is_empty() {
            writeln!(out, "<p class=\"tk-inputs\">{}</p>", inputs.join(", "))?;
        }
        for s in &r.sections {
            let mut buf = String::new();
            section(&mut buf, ri, s);
            out.write_all(buf.as_bytes())?;
        }
        writeln!(out, "</article>")?;
    }
    write!(
        out,
        "</main>\n<footer>Made by {} from the trace alone: nothing on this page was loaded from elsewhere.</footer>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        esc(&crate::json::generator())
    )
}

fn anchor(report: usize, id: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("r{report}-{id}")
}

fn kind(b: &Body) -> &'static str {
    match b {
        Body::Group => "group",
        Body::Summary { .. } => "summary",
        Body::Table(_) => "table",
        Body::Flame(_) => "flame",
        Body::Series(_) => "series",
        Body::Histogram(_) => "histogram",
        Body::Spans(_) => "spans",
        Body::Notes { .. } => "notes",
    }
}

fn section(o: &mut String, ri: usize, s: &Section) {
    if !s.html {
        return;
    }
    let k = kind(&s.body);
    let _ = writeln!(
        o,
        "<section class=\"tk-section tk-kind-{k}\" id=\"{}\" data-id=\"{}\">\n<h3>{}</h3>",
        anchor(ri, &s.id),
        esc(&s.id),
        esc(&s.title)
    );
    match &s.body {
        Body::Group => {}
        Body::Summary { items } => summary(o, items),
        Body::Table(t) => table(o, t),
        Body::Notes { items, more } => notes(o, items, *more),
        Body::Flame(f) => svg::flame(o, f),
        Body::Series(x) => svg::series(o, x),
        Body::Histogram(h) => svg::histogram(o, h),
        Body::Spans(x) => match x.view {
            SpanView::Gantt => svg::gantt(o, x),
            SpanView::Tree => tree(o, x),
        },
    }
    for c in &s.sections {
        section(o, ri, c);
    }
    o.push_str("</section>\n");
}

fn summary(o: &mut String, items: &[Item]) {
    o.push_str("<dl class=\"tk-summary\">");
    for i in items {
        let value = if i.value.is_null() {
            "<span class=\"tk-null\">not known</span>".to_string()
        } else {
            cell_html(&i.value, i.unit)
        };
        let _ = write!(
            o,
            "<div data-key=\"{}\"><dt>{}</dt><dd>{value}</dd></div>",
            esc(&i.key),
            esc(&i.label),
        );
    }
    o.push_str("</dl>\n");
}

/// A value as HTML: stacks as frames with separators, numbers grouped.
fn cell_html(v: &Value, unit: Unit) -> String {
    match v {
        Value::List(frames) => {
            let parts: Vec<String> = frames.iter().map(|f| esc(f)).collect();
            format!("<span class=\"tk-stack\">{}</span>", parts.join("<i>›</i>"))
        }
        Value::UInt(_) | Value::Int(_) if unit == Unit::Count => {
            esc(&group_digits(&format::value(v, unit)))
        }
        _ => esc(&format::value(v, unit)),
    }
}

/// `1234567` as `1 234 567` (narrow no-break spaces).
pub(crate) fn group_digits(s: &str) -> String {
    let (sign, digits) = match s.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", s),
    };
    if digits.len() <= 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return s.to_string();
    }
    let mut o = String::from(sign);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            o.push('\u{202f}');
        }
        o.push(c);
    }
    o
}

/// The raw value a sortable cell carries.
fn sort_key(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some(u8::from(*b).to_string()),
        Value::UInt(n) => Some(n.to_string()),
        Value::Int(n) => Some(n.to_string()),
        Value::Float(x) if x.is_finite() => Some(format!("{x}")),
        Value::Float(_) => None,
        Value::Text(s) => Some(s.clone()),
        Value::List(f) => Some(f.join(";")),
    }
}

fn table(o: &mut String, t: &Table) {
    o.push_str("<div class=\"tk-scroll\"><table class=\"tk-table\">\n<thead><tr>");
    for c in &t.columns {
        let num = c.unit.is_numeric();
        let sorted = t.sort.as_ref().filter(|s| s.column == c.key);
        let _ = write!(
            o,
            "<th data-key=\"{}\" data-unit=\"{}\"{}{}>{}</th>",
            esc(&c.key),
            c.unit.name(),
            if num { " class=\"num\"" } else { "" },
            match sorted {
                Some(s) if s.descending => " aria-sort=\"descending\"",
                Some(_) => " aria-sort=\"ascending\"",
                None => "",
            },
            esc(&c.label)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.rows {
        o.push_str("<tr>");
        for (c, v) in t.columns.iter().zip(r) {
            let mut class = Vec::new();
            if c.unit.is_numeric() {
                class.push("num");
            }
            let pct = match (c.unit, v.as_f64()) {
                (Unit::Percent, Some(p)) => {
                    class.push("pct");
                    format!(" style=\"--p:{:.1}%\"", p.clamp(0.0, 100.0))
                }
                _ => String::new(),
            };
            let _ = write!(
                o,
                "<td{}{}{}>{}</td>",
                if class.is_empty() {
                    String::new()
                } else {
                    format!(" class=\"{}\"", class.join(" "))
                },
                sort_key(v).map_or(String::new(), |k| format!(" data-v=\"{}\"", esc(&k))),
                pct,
                cell_html(v, c.unit)
            );
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n");
    if let Some(m) = &t.more {
        o.push_str("<tfoot><tr class=\"tk-more\">");
        for (i, c) in t.columns.iter().enumerate() {
            let v = m.totals.get(i).cloned().unwrap_or_default();
            let text = if i == 0 && v.is_null() {
                format!("{} more row{}", m.rows, if m.rows == 1 { "" } else { "s" })
            } else {
                cell_html(&v, c.unit)
            };
            let _ = write!(
                o,
                "<td{}>{}</td>",
                if c.unit.is_numeric() {
                    " class=\"num\""
                } else {
                    ""
                },
                text
            );
        }
        o.push_str("</tr></tfoot>\n");
    }
    o.push_str("</table></div>\n");
    if let Some(m) = &t.more {
        let _ = writeln!(
            o,
            "<p class=\"tk-caption\">{} more row{} not shown; the last line holds their totals.</p>",
            m.rows,
            if m.rows == 1 { "" } else { "s" }
        );
    }
}

fn notes(o: &mut String, items: &[Note], more: u64) {
    o.push_str("<ul class=\"tk-notes\">");
    for n in items {
        let _ = write!(
            o,
            "<li class=\"{}\">{}</li>",
            match n.level {
                Level::Info => "info",
                Level::Warning => "warning",
            },
            esc(&n.text)
        );
    }
    if more > 0 {
        let _ = write!(o, "<li class=\"info\">{more} more not shown</li>");
    }
    o.push_str("</ul>\n");
}

/// Spans as a tree of `<details>` by parent, with each span's duration and
/// a bar scaled to the longest.
fn tree(o: &mut String, s: &Spans) {
    use std::collections::{HashMap, HashSet};
    let ids: HashSet<u64> = s.spans.iter().filter_map(|x| x.id).collect();
    let mut children: HashMap<Option<u64>, Vec<usize>> = HashMap::new();
    for (i, x) in s.spans.iter().enumerate() {
        children
            .entry(x.parent.filter(|p| ids.contains(p)))
            .or_default()
            .push(i);
    }
    let longest = s
        .spans
        .iter()
        .map(|x| x.end - x.start)
        .fold(0.0f64, f64::max);
    let _ = writeln!(o, "<div class=\"tk-treeview\">");
    // Depth-first with an explicit stack (deep trees must not recurse).
    enum Step {
        Open(usize, usize),
        Close,
    }
    let mut stack: Vec<Step> = children
        .get(&None)
        .map(|v| v.iter().rev().map(|&i| Step::Open(i, 0)).collect())
        .unwrap_or_default();
    let mut seen = vec![false; s.spans.len()];
    while let Some(step) = stack.pop() {
        let (i, depth) = match step {
            Step::Close => {
                o.push_str("</details>\n");
                continue;
            }
            Step::Open(i, d) => (i, d),
        };
        // Each span once, whatever the ids say (repeated ids, cycles).
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let x = &s.spans[i];
        let d = x.end - x.start;
        let w = if longest > 0.0 {
            d / longest * 100.0
        } else {
            0.0
        };
        let line = format!(
            "<span class=\"n\">{}</span><span class=\"d\">{}</span><span class=\"w\" style=\"--w:{w:.1}\"></span>{}",
            esc(&x.name),
            esc(&format::number(d, s.unit)),
            x.detail
                .as_ref()
                .map_or(String::new(), |t| format!("<span class=\"x\">{}</span>", esc(t)))
        );
        let hl = if x.highlight { " hl" } else { "" };
        match x.id.and_then(|id| children.get(&Some(id))) {
            Some(kids) => {
                let _ = writeln!(
                    o,
                    "<details class=\"tk-tree{hl}\"{}><summary>{line}</summary>",
                    if depth < 2 { " open" } else { "" }
                );
                stack.push(Step::Close);
                stack.extend(kids.iter().rev().map(|&c| Step::Open(c, depth + 1)));
            }
            None => {
                let _ = writeln!(o, "<div class=\"tk-tree leaf{hl}\">{line}</div>");
            }
        }
    }
    o.push_str("</div>\n");
    if s.more > 0 {
        let _ = writeln!(o, "<p class=\"tk-caption\">{} more not shown.</p>", s.more);
    }
    if let Some(h) = &s.highlight {
        if s.spans.iter().any(|x| x.highlight) {
            let _ = writeln!(
                o,
                "<p class=\"tk-caption\"><span class=\"tk-tree hl\"><span class=\"n\">Marked</span></span>: {}</p>",
                esc(h)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_groups() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(group_digits("1234567"), "1\u{202f}234\u{202f}567");
        assert_eq!(group_digits("1234"), "1234");
        assert_eq!(group_digits("-12345"), "-12\u{202f}345");
    }
}
