//! Text output of a [`Report`].

use super::*;

fn join_argv(argv: &[String]) -> String {
    let mut out = Vec::new();
    crate::quote::sq_quote_argv(&mut out, argv);
    text(&out)
}

/// Escapes control characters only (messages and values stay readable).
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn fmt_secs(s: Option<f64>) -> String {
    match s {
        Some(s) => format!("{s:.6}s"),
        None => "?".to_string(),
    }
}

fn command_label(name: &str, mode: Option<&str>) -> String {
    match mode {
        Some(m) => format!("{name}#{m}"),
        None => name.to_string(),
    }
}

/// Writes the report for a human. `top` limits the ranked tables (the
/// session detail was already limited by the builder).
pub fn write_text(report: &Report, out: &mut dyn Write, top: usize) -> io::Result<()> {
    writeln!(
        out,
        "Git Trace2 report: {} events, {} processes in {} sessions",
        report.events, report.processes, report.sessions
    )?;
    if report.unfinished_processes > 0 {
        writeln!(
            out,
            "  {} processes did not end (no exit, signal or exec: crashed, killed or cut off)",
            report.unfinished_processes
        )?;
    }
    if report.late_processes > 0 {
        writeln!(
            out,
            "  {} processes arrived after their session was summarised (counted as separate sessions)",
            report.late_processes
        )?;
    }
    let a = &report.anomalies;
    if a.unmatched_region_leave + a.unclosed_regions + a.unmatched_child_exit > 0 {
        writeln!(
            out,
            "  anomalies: {} region_leave without enter, {} regions never left, {} child_exit without child_start",
            a.unmatched_region_leave, a.unclosed_regions, a.unmatched_child_exit
        )?;
    }

    writeln!(out)?;
    writeln!(out, "Commands (by total time)")?;
    writeln!(
        out,
        "  {:<28} {:>7} {:>6} {:>11} {:>11} {:>11} {:>11} {:>12}",
        "command", "count", "failed", "p50", "p90", "p99", "max", "total"
    )?;
    for c in report.commands.iter().take(top.max(1)) {
        let mut label = command_label(&c.name, c.mode.as_deref());
        if c.unfinished > 0 {
            label.push_str(&format!(" ({} unfinished)", c.unfinished));
        }
        let q = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |s| format!("{s:.6}s"));
        writeln!(
            out,
            "  {:<28} {:>7} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11.6}s",
            label,
            c.count,
            c.failed,
            q(c.p50_s),
            q(c.p90_s),
            q(c.p99_s),
            q(c.max_s),
            c.total_s
        )?;
    }
    if report.commands.len() > top.max(1) {
        writeln!(out, "  ... {} more", report.commands.len() - top.max(1))?;
    }

    if !report.regions.is_empty() {
        writeln!(out)?;
        writeln!(out, "Regions (by total time over all processes)")?;
        writeln!(
            out,
            "  {:<48} {:>8} {:>12} {:>12} {:>11}",
            "category/label", "count", "total", "self", "max"
        )?;
        for r in report.regions.iter().take(top.max(1)) {
            writeln!(
                out,
                "  {:<48} {:>8} {:>11.6}s {:>11.6}s {:>10.6}s",
                format!("{}/{}", r.category, r.label),
                r.count,
                r.total_s,
                r.self_s,
                r.max_s
            )?;
        }
        if report.regions.len() > top.max(1) {
            writeln!(out, "  ... {} more", report.regions.len() - top.max(1))?;
        }
    }

    if report.commands.iter().any(|c| !c.top_regions.is_empty()) {
        writeln!(out)?;
        writeln!(out, "Costliest regions per command")?;
        for c in report.commands.iter().take(top.max(1)) {
            if c.top_regions.is_empty() {
                continue;
            }
            writeln!(out, "  {}", command_label(&c.name, c.mode.as_deref()))?;
            for r in &c.top_regions {
                let share = if c.total_s > 0.0 {
                    format!("{:5.1}%", r.total_s / c.total_s * 100.0)
                } else {
                    "     ?".to_string()
                };
                writeln!(
                    out,
                    "    {:<46} {:>8} {:>11.6}s {share}",
                    format!("{}/{}", r.category, r.label),
                    r.count,
                    r.total_s
                )?;
            }
        }
    }

    if !report.errors.is_empty() {
        writeln!(out)?;
        writeln!(out, "Errors (by format)")?;
        for e in report.errors.iter().take(top.max(1)) {
            writeln!(out, "  {:>6}  {}", e.count, printable(&e.format))?;
        }
        if report.errors.len() > top.max(1) {
            writeln!(out, "  ... {} more", report.errors.len() - top.max(1))?;
        }
    }

    if !report.sessions_shown.is_empty() {
        writeln!(out)?;
        if (report.sessions_shown.len() as u64) < report.sessions {
            writeln!(
                out,
                "Sessions (the {} slowest of {}, in order of appearance)",
                report.sessions_shown.len(),
                report.sessions
            )?;
        } else {
            writeln!(out, "Sessions")?;
        }
        for s in &report.sessions_shown {
            writeln!(out)?;
            writeln!(
                out,
                "Session {}  start {}  elapsed {}",
                s.session,
                s.start.as_deref().unwrap_or("?"),
                fmt_secs(s.elapsed_s)
            )?;
            for p in &s.processes {
                write_process(out, p, 1)?;
            }
        }
    }
    Ok(())
}

fn end_label(p: &ProcessReport) -> String {
    match p.end {
        "exit" => format!("exit {}", p.exit_code.unwrap_or(0)),
        "signal" => format!("signal {}", p.signal.unwrap_or(0)),
        "exec" => "exec".to_string(),
        _ => "NO EXIT (crashed, killed or cut off)".to_string(),
    }
}

fn write_process(out: &mut dyn Write, p: &ProcessReport, depth: usize) -> io::Result<()> {
    let ind = "  ".repeat(depth);
    let cmd = command_label(
        p.cmd_name.as_deref().unwrap_or("(no cmd_name)"),
        p.cmd_mode.as_deref(),
    );
    let own = p.sid.rsplit('/').next().unwrap_or(&p.sid);
    let id = if p.fork > 0 {
        format!("{own} fork {}", p.fork)
    } else {
        own.to_string()
    };
    writeln!(
        out,
        "{ind}{cmd}  {}  {}  [{id}]",
        end_label(p),
        fmt_secs(p.elapsed_s)
    )?;
    writeln!(out, "{ind}  argv: {}", join_argv(&p.argv))?;
    if !p.source.is_empty() {
        writeln!(out, "{ind}  file: {}", p.source)?;
    }
    if let Some(a) = &p.alias {
        writeln!(out, "{ind}  alias: {} -> {}", a.alias, join_argv(&a.argv))?;
    }
    for t in &p.threads {
        writeln!(out, "{ind}  regions ({}):", t.thread)?;
        write_regions(out, &t.regions, depth + 2)?;
    }
    for d in &p.data {
        writeln!(
            out,
            "{ind}  data: {}/{} = {}{}",
            d.category,
            d.key,
            printable(&d.value),
            if d.thread != "main" {
                format!("  ({})", d.thread)
            } else {
                String::new()
            }
        )?;
    }
    if p.data_omitted > 0 {
        writeln!(out, "{ind}  data: ... {} more", p.data_omitted)?;
    }
    for c in &p.counters {
        writeln!(
            out,
            "{ind}  counter: {}/{} = {}  ({})",
            c.category, c.name, c.count, c.thread
        )?;
    }
    for t in &p.timers {
        writeln!(
            out,
            "{ind}  timer: {}/{}  intervals {}  total {:.6}s  min {:.6}s  max {:.6}s  ({})",
            t.category, t.name, t.intervals, t.total_s, t.min_s, t.max_s, t.thread
        )?;
    }
    for e in &p.errors {
        writeln!(out, "{ind}  error: {}", printable(e))?;
    }
    if p.errors_omitted > 0 {
        writeln!(out, "{ind}  error: ... {} more", p.errors_omitted)?;
    }
    for c in &p.children {
        let status = match (c.exit_code, c.pid) {
            (Some(-1), Some(-1)) => "not started".to_string(),
            (Some(code), _) => format!("exit {code}"),
            (None, _) => "no child_exit".to_string(),
        };
        let class = match (&c.class, &c.hook) {
            (Some(cl), Some(h)) => format!("{cl}:{h}"),
            (Some(cl), None) => cl.clone(),
            (None, _) => "?".to_string(),
        };
        writeln!(
            out,
            "{ind}  child [{}] {class}  {status}  {}  {}",
            c.child_id,
            fmt_secs(c.elapsed_s),
            join_argv(&c.argv)
        )?;
        if let Some(cp) = &c.process {
            write_process(out, cp, depth + 2)?;
        }
    }
    if p.children_omitted > 0 {
        writeln!(out, "{ind}  child ... {} more", p.children_omitted)?;
    }
    for e in &p.exec {
        writeln!(out, "{ind}  exec'd into:")?;
        write_process(out, e, depth + 2)?;
    }
    for f in &p.forked {
        writeln!(
            out,
            "{ind}  forked (went on under this SID after this process exited):"
        )?;
        write_process(out, f, depth + 2)?;
    }
    for d in &p.descendants {
        writeln!(out, "{ind}  descendant (not matched to a child):")?;
        write_process(out, d, depth + 2)?;
    }
    Ok(())
}

fn write_regions(out: &mut dyn Write, nodes: &[RegionNode], depth: usize) -> io::Result<()> {
    let ind = "  ".repeat(depth);
    for n in nodes {
        let name = format!("{ind}{}/{}", n.category, n.label);
        let share = n
            .share
            .map(|s| format!("{:5.1}%", s * 100.0))
            .unwrap_or_else(|| "     ?".into());
        let count = if n.count == 1 {
            String::new()
        } else {
            format!("  x{}", n.count)
        };
        writeln!(out, "{name:<56} {:>11.6}s {share}{count}", n.total_s)?;
        write_regions(out, &n.children, depth + 1)?;
    }
    Ok(())
}
