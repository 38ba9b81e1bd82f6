//! The memory report as data ([`tracekit_report::Report`]): what the text
//! report says, section by section (each carries its part of the text,
//! which the tests pin byte for byte), plus what the HTML page draws:
//! usage over time, flame graphs per view, the costliest backtraces.
//! `docs/report-json.md` (`rtrace`) lists the section ids and columns.

use std::collections::HashMap;

use tracekit_report::{
    Column, Flame, Item, Level, Line, MoreStacks, Note, Report as Page, Section, Series, Stack,
    Table, TextForm, Unit, Value,
};

use super::text::SUB_TRACES;
use super::{Cost, Frames, Metric, RecordingReport, Report, Trace};

/// The most stacks a flame graph keeps (the heaviest).
pub const FLAME_STACKS: usize = 2000;

/// A frame of a flame graph whose weight (with its callees) is under this
/// share of the total (1/500, two pixels of the page's 960) is cut off.
pub const FLAME_MIN_SHARE: f64 = 0.002;

/// The last frame of a stack whose callees were cut off (each under
/// [`FLAME_MIN_SHARE`]): it weighs them together.
pub const PRUNED_FRAME: &str = "…";

/// The most points of the consumption series: the analysis's plot
/// points (up to [`super::PLOT_POINTS`]) thinned to the lowest and the
/// highest of each run, in call order.
pub const SERIES_POINTS: usize = 250;

/// A recording's images whose pages show charts and views; the others
/// (fewer allocation calls) show their totals only on the page (text and
/// JSON hold them all).
pub const PAGE_IMAGES: usize = 8;

/// The flame graphs of each resource type, in heaptrack's order.
const FLAMES: [Metric; 5] = [
    Metric::Allocations,
    Metric::Temporary,
    Metric::Peak,
    Metric::Leaked,
    Metric::Allocated,
];

/// The cost columns, in [`cost_values`]' order.
fn cost_columns() -> Vec<Column> {
    vec![
        Column::new("allocations", "calls", Unit::Count),
        Column::new("allocated", "allocated", Unit::Bytes),
        Column::new("peak", "at the peak", Unit::Bytes),
        Column::new("leaked", "leaked", Unit::Bytes),
        Column::new("leaked_blocks", "leaked blocks", Unit::Count),
        Column::new("temporary", "temporary", Unit::Count),
        Column::new("largest", "largest", Unit::Bytes),
    ]
}

/// The columns whose rest a table's `more` sums (`largest` is a maximum).
const SUMMED: [&str; 6] = [
    "allocations",
    "allocated",
    "peak",
    "leaked",
    "leaked_blocks",
    "temporary",
];

fn cost_values(c: &Cost) -> Vec<Value> {
    vec![
        c.allocations.into(),
        c.allocated.into(),
        c.peak.into(),
        c.leaked.into(),
        c.leaked_blocks.into(),
        c.temporary.into(),
        c.largest.into(),
    ]
}

/// One frame as the text prints it: `function at file:line (inlined)`.
fn frame_text(f: &(u64, String, Option<String>, bool)) -> String {
    let mut s = f.1.clone();
    if let Some(p) = &f.2 {
        s.push_str(" at ");
        s.push_str(p);
    }
    if f.3 {
        s.push_str(" (inlined)");
    }
    s
}

/// A backtrace as a stack value: outermost frame first.
fn stack(frames: &Frames) -> Value {
    Value::List(frames.iter().rev().map(frame_text).collect())
}

/// A section id from a resource type's name.
fn id_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn view_title(m: Metric) -> &'static str {
    match m {
        Metric::Allocations => "Most calls to allocation functions",
        Metric::Allocated => "Most bytes allocated",
        Metric::Peak => "Peak consumers (allocated at the time of the peak)",
        Metric::Leaked => "Leaks (never freed)",
        Metric::Temporary => "Most temporary allocations (freed by the next call)",
        Metric::Largest => "Largest allocations",
    }
}

fn flame_measure(m: Metric) -> (&'static str, Unit) {
    match m {
        Metric::Allocations => ("calls to allocation functions", Unit::Count),
        Metric::Allocated => ("bytes allocated", Unit::Bytes),
        Metric::Peak => ("bytes in use at the peak", Unit::Bytes),
        Metric::Leaked => ("bytes never freed", Unit::Bytes),
        Metric::Temporary => ("temporary allocations", Unit::Count),
        Metric::Largest => ("largest allocation", Unit::Bytes),
    }
}

impl Report {
    /// The report of one trace as data; `file` is what the trace is called.
    pub fn to_report(&self, file: &str) -> Page {
        let mut page = Page::new("rtrace", format!("sp-rtrace trace {file}"));
        page.input(file, None);
        page.text = TextForm::Omit;
        page.push(self.summary_section(file));
        page.push(self.resources_section());
        if let Some(s) = self.markers_section() {
            page.push(s);
        }
        if let Some(s) = self.usage_section() {
            page.push(s);
        }
        for (ri, r) in self.resources.iter().enumerate() {
            if r.allocs == 0 {
                continue;
            }
            let name = id_part(&r.name);
            let mut group = Section::group(
                format!("views-{name}"),
                format!("{} ({})", r.name, r.description),
            )
            .omit_text();
            for m in FLAMES {
                let f = self.flame_section(ri, m);
                // Allocated bytes: in JSON; the page has the other four
                // (heaptrack's), which keeps it small.
                group = group.child(if m == Metric::Allocated {
                    f.omit_html()
                } else {
                    f
                });
            }
            for m in Metric::VIEWS {
                group = group.child(self.view_section(ri, m));
            }
            page.push(group);
        }
        // The page's views list each place's costliest backtrace already.
        page.push(
            self.sites_section("top_sites", "Costliest backtraces", false)
                .omit_html(),
        );
        page.push(self.sites_section("leak_sites", "Leaking backtraces", true));
        if self.warnings.total() > 0 {
            page.push(
                Section::warnings("warnings", "Warnings while reading", &self.warnings)
                    .verbatim(self.warnings_text()),
            );
        }
        page
    }

    fn summary_section(&self, file: &str) -> Section {
        let h = &self.header;
        let text = |k: &str| Value::from(h.get(k).map(str::to_string));
        let items = vec![
            Item::new("process", "process", text("process"), Unit::Text),
            Item::new(
                "pid",
                "pid",
                h.get("pid").and_then(|p| p.trim().parse::<i64>().ok()),
                Unit::Id,
            ),
            Item::new("arch", "architecture", text("arch"), Unit::Text),
            Item::new(
                "recorded",
                "recorded",
                h.timestamp().map(str::to_string),
                Unit::Text,
            ),
            Item::new("origin", "origin", text("origin"), Unit::Text),
            Item::new(
                "backtrace_depth",
                "backtrace depth",
                h.get("backtrace depth")
                    .and_then(|d| d.trim().parse::<u64>().ok()),
                Unit::Count,
            ),
            Item::new("calls", "calls", self.calls, Unit::Count),
            Item::new("runtime_ms", "run time", self.runtime_ms, Unit::Ms),
            Item::new(
                "attached",
                "attached to a running process",
                self.attached(),
                Unit::Text,
            ),
        ];
        let mut header = Table::new(vec![
            Column::new("key", "field", Unit::Text),
            Column::new("value", "value", Unit::Text),
        ]);
        for f in &h.fields {
            header.row(vec![f.key.clone().into(), f.value.clone().into()]);
        }
        let mut s = Section::summary("summary", "Trace", items)
            .verbatim(self.header_text(file))
            .child(Section::table("header", "Header", header).omit_text());
        if !self.notes.is_empty() {
            let notes = self
                .notes
                .iter()
                .map(|n| Note {
                    level: Level::Info,
                    text: n.clone(),
                })
                .collect();
            s = s.child(Section::notes("recorder_notes", "Recorder's notes", notes).omit_text());
        }
        s
    }

    fn resources_section(&self) -> Section {
        let mut t = Table::new(vec![
            Column::new("name", "resource", Unit::Text),
            Column::new("description", "description", Unit::Text),
            Column::new("allocations", "allocations", Unit::Count),
            Column::new("allocated_bytes", "allocated", Unit::Bytes),
            Column::new("frees", "frees", Unit::Count),
            Column::new(
                "unmatched_frees",
                if self.attached() {
                    "frees of blocks allocated before recording"
                } else {
                    "frees of unknown blocks"
                },
                Unit::Count,
            ),
            Column::new("null_frees", "free(NULL)", Unit::Count),
            Column::new("peak_bytes", "peak", Unit::Bytes),
            Column::new("peak_blocks", "blocks at the peak", Unit::Count),
            Column::new("peak_at_call", "peak at call", Unit::Id),
            Column::new("leaked_blocks", "never freed (blocks)", Unit::Count),
            Column::new("leaked_bytes", "never freed", Unit::Bytes),
            Column::new("temporary", "temporary", Unit::Count),
            Column::new("largest", "largest allocation", Unit::Bytes),
        ]);
        for r in &self.resources {
            t.row(vec![
                r.name.clone().into(),
                r.description.clone().into(),
                r.allocs.into(),
                r.allocated_bytes.into(),
                r.frees.into(),
                r.unmatched_frees.into(),
                r.null_frees.into(),
                r.peak_bytes.into(),
                r.peak_blocks.into(),
                r.peak_at_index.into(),
                r.leaked_blocks.into(),
                r.leaked_bytes.into(),
                r.temporary.into(),
                r.largest.into(),
            ]);
        }
        Section::table("resources", "Resource types", t).verbatim(self.resources_text())
    }

    /// The markers the program made (none: no section, and the text is
    /// what it was before markers existed). Snapshots carry the live
    /// memory at their point and the backtraces holding the most of it.
    fn markers_section(&self) -> Option<Section> {
        if self.markers.is_empty() && self.markers_omitted == 0 {
            return None;
        }
        let mut t = Table::new(vec![
            Column::new("index", "index", Unit::Id),
            Column::new("elapsed_ms", "time", Unit::Ms),
            Column::new("thread", "thread", Unit::Id),
            Column::new("kind", "kind", Unit::Text),
            Column::new("name", "name", Unit::Text),
            Column::new("name_length", "name's length (cut)", Unit::Bytes),
            Column::new("calls_before", "calls before", Unit::Count),
            Column::new("live_bytes", "live", Unit::Bytes),
            Column::new("live_blocks", "live blocks", Unit::Count),
            Column::new("stack", "called from", Unit::Stack),
        ]);
        let mut sites = Table::new(vec![
            Column::new("index", "marker", Unit::Id),
            Column::new("name", "snapshot", Unit::Text),
            Column::new("bytes", "live", Unit::Bytes),
            Column::new("blocks", "live blocks", Unit::Count),
            Column::new("stack", "backtrace", Unit::Stack),
        ]);
        for m in &self.markers {
            let k = &m.marker;
            t.row(vec![
                k.index.into(),
                m.elapsed_ms.into(),
                u64::from(k.thread).into(),
                k.kind.name().into(),
                k.name.clone().into(),
                k.cut_from.into(),
                m.calls_before.into(),
                m.live.map(|l| l.0).into(),
                m.live.map(|l| l.1).into(),
                stack(&m.frames),
            ]);
            for s in &m.sites {
                sites.row(vec![
                    k.index.into(),
                    k.name.clone().into(),
                    s.bytes.into(),
                    s.blocks.into(),
                    stack(&s.frames),
                ]);
            }
        }
        let mut section = Section::table("markers", "Markers", t).verbatim(self.markers_text());
        if !sites.rows.is_empty() {
            section = section.child(
                Section::table("snapshot_sites", "Live at each snapshot", sites).omit_text(),
            );
        }
        Some(section)
    }

    /// Bytes in use of the first resource type over time (or over calls
    /// when some plotted call has no timestamp).
    fn usage_section(&self) -> Option<Section> {
        if self.timeline.is_empty() {
            return None;
        }
        let name = self.resources.first().map_or("memory", |r| r.name.as_str());
        let points = thin(&self.timeline, SERIES_POINTS);
        let timed = points.iter().all(|p| p.elapsed_ms.is_some());
        let (x, x_label, x_unit) = if timed {
            (
                points
                    .iter()
                    .map(|p| p.elapsed_ms.unwrap_or(0) as f64 / 1000.0)
                    .collect(),
                "time since the first call",
                Unit::S,
            )
        } else {
            (
                points.iter().map(|p| p.call as f64).collect(),
                "call",
                Unit::Count,
            )
        };
        let series = Series {
            x_label: x_label.to_string(),
            x_unit,
            x,
            bucket: None,
            y_label: format!("{name} in use (the most in each stretch of calls)"),
            y_unit: Unit::Bytes,
            stacked: false,
            lines: vec![Line {
                name: name.to_string(),
                values: points.iter().map(|p| p.live_bytes as f64).collect(),
            }],
            folded: 0,
        };
        Some(
            Section::new(
                "usage",
                format!("Consumption over time ({name})"),
                tracekit_report::Body::Series(series),
            )
            .omit_text(),
        )
    }

    /// A flame graph of resource `ri`'s backtraces weighted by `m`:
    /// function names, outermost first. A frame under
    /// [`FLAME_MIN_SHARE`] of the total (with everything it called) is
    /// cut off with its callees: its caller's stack ends in
    /// [`PRUNED_FRAME`], weighing them all, so the total stays exact. At
    /// most [`FLAME_STACKS`] stacks, the heaviest; the rest counted.
    fn flame_section(&self, ri: usize, m: Metric) -> Section {
        let mut merged: HashMap<Vec<&str>, f64> = HashMap::new();
        for t in self.traces.iter().filter(|t| t.resource == ri) {
            let v = t.cost.get(m);
            if v <= 0 {
                continue;
            }
            let frames: Vec<&str> = t.frames.iter().rev().map(|f| f.1.as_str()).collect();
            *merged.entry(frames).or_default() += v as f64;
        }
        let total: f64 = merged.values().sum();
        // The call tree's inclusive weights.
        let mut kids: Vec<HashMap<&str, usize>> = vec![HashMap::new()];
        let mut incl: Vec<f64> = vec![0.0];
        let mut paths: Vec<Vec<usize>> = Vec::with_capacity(merged.len());
        let merged: Vec<(Vec<&str>, f64)> = merged.into_iter().collect();
        for (frames, w) in &merged {
            let mut at = 0;
            let mut path = Vec::with_capacity(frames.len());
            for f in frames {
                at = match kids[at].get(f) {
                    Some(&n) => n,
                    None => {
                        kids.push(HashMap::new());
                        incl.push(0.0);
                        let n = kids.len() - 1;
                        kids[at].insert(f, n);
                        n
                    }
                };
                incl[at] += w;
                path.push(at);
            }
            paths.push(path);
        }
        let min = total * FLAME_MIN_SHARE;
        let mut pruned: HashMap<Vec<&str>, f64> = HashMap::new();
        for ((frames, w), path) in merged.iter().zip(&paths) {
            let key = match path.iter().position(|&n| incl[n] < min) {
                None => frames.clone(),
                Some(k) => {
                    let mut f = frames[..k].to_vec();
                    f.push(PRUNED_FRAME);
                    f
                }
            };
            *pruned.entry(key).or_default() += w;
        }
        let mut stacks: Vec<(Vec<&str>, f64)> = pruned.into_iter().collect();
        stacks.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let keep = stacks.len().min(FLAME_STACKS);
        let rest = &stacks[keep..];
        let more = (!rest.is_empty()).then(|| MoreStacks {
            stacks: rest.len() as u64,
            weight: rest.iter().map(|s| s.1).sum(),
        });
        let (measure, unit) = flame_measure(m);
        let flame = Flame {
            measure: measure.to_string(),
            unit,
            stacks: stacks[..keep]
                .iter()
                .map(|(f, w)| Stack {
                    frames: f.iter().map(|s| s.to_string()).collect(),
                    weight: *w,
                })
                .collect(),
            more,
        };
        let name = id_part(&self.resources[ri].name);
        Section::new(
            format!("{name}-flame-{}", m.name()),
            format!("Flame graph: {measure}"),
            tracekit_report::Body::Flame(flame),
        )
        .omit_text()
    }

    /// One view of resource `ri`: its locations ranked by `m` (`top`
    /// rows, the rest counted), each with its costliest backtrace; a child
    /// table holds the backtraces the text lists under each location.
    fn view_section(&self, ri: usize, m: Metric) -> Section {
        let mut columns = vec![
            Column::new("rank", "#", Unit::Id),
            Column::new("function", "function", Unit::Text),
            Column::new("source", "source", Unit::Text),
            Column::new("module", "module", Unit::Text),
        ];
        columns.extend(cost_columns());
        columns.push(Column::new("backtraces", "backtraces", Unit::Count));
        columns.push(Column::new("stack", "costliest backtrace", Unit::Stack));
        let mut t = Table::new(columns).sorted_by(m.name(), true);
        let mut bt_columns = vec![Column::new("rank", "location #", Unit::Id)];
        bt_columns.extend(cost_columns());
        bt_columns.push(Column::new("stack", "backtrace", Unit::Stack));
        let mut bt = Table::new(bt_columns);
        for (i, (loc, traces)) in self.view(ri, m, usize::MAX).into_iter().enumerate() {
            // Rows past `top` only count towards `more`'s totals.
            let shown = i < self.top;
            let mut row: Vec<Value> = if shown {
                vec![
                    (i + 1).into(),
                    loc.function.clone().into(),
                    loc.position.clone().into(),
                    loc.module.clone().into(),
                ]
            } else {
                vec![Value::Null; 4]
            };
            row.extend(cost_values(&loc.cost));
            row.push(traces.len().into());
            row.push(match traces.first() {
                Some(t) if shown => stack(&t.frames),
                _ => Value::Null,
            });
            t.row(row);
            if i < self.top {
                for tr in traces.iter().take(SUB_TRACES) {
                    bt.row(backtrace_row(i + 1, tr));
                }
            }
        }
        t.keep(self.top, &SUMMED);
        let name = &self.resources[ri].name;
        Section::table(
            format!("{}-{}", id_part(name), m.name()),
            format!("{} [{name}]", view_title(m)),
            t,
        )
        .verbatim(self.view_text(ri, m))
        .child(
            Section::table(
                format!("{}-{}-backtraces", id_part(name), m.name()),
                format!("{} [{name}]: backtraces of each place", view_title(m)),
                bt,
            )
            .omit_text()
            .omit_html(),
        )
    }

    /// Backtraces ranked by calls (`leaks`: by leaked bytes, leaking ones
    /// only), every resource type; `top` rows, the rest counted.
    fn sites_section(&self, id: &str, title: &str, leaks: bool) -> Section {
        let mut traces: Vec<&Trace> = self
            .traces
            .iter()
            .filter(|t| !leaks || t.cost.leaked_blocks > 0)
            .collect();
        if leaks {
            traces.sort_by(|a, b| {
                b.cost
                    .leaked
                    .cmp(&a.cost.leaked)
                    .then(b.cost.leaked_blocks.cmp(&a.cost.leaked_blocks))
                    .then(a.resource.cmp(&b.resource))
            });
        } else {
            traces.sort_by(|a, b| {
                b.cost
                    .allocations
                    .cmp(&a.cost.allocations)
                    .then(b.cost.allocated.cmp(&a.cost.allocated))
                    .then(a.resource.cmp(&b.resource))
            });
        }
        let mut columns = vec![Column::new("resource", "resource", Unit::Text)];
        columns.extend(cost_columns());
        columns.push(Column::new("stack", "backtrace", Unit::Stack));
        let mut t =
            Table::new(columns).sorted_by(if leaks { "leaked" } else { "allocations" }, true);
        for (i, tr) in traces.into_iter().enumerate() {
            // Rows past `top` only count towards `more`'s totals.
            let mut row: Vec<Value> = vec![self.resources[tr.resource].name.clone().into()];
            row.extend(cost_values(&tr.cost));
            row.push(if i < self.top {
                stack(&tr.frames)
            } else {
                Value::Null
            });
            t.row(row);
        }
        t.keep(self.top, &SUMMED);
        Section::table(id, title, t).omit_text()
    }
}

/// At most `n` of `points`: each run of consecutive points becomes its
/// lowest and its highest, in call order (peaks and troughs survive).
fn thin(points: &[super::Point], n: usize) -> Vec<super::Point> {
    if points.len() <= n {
        return points.to_vec();
    }
    let run = points.len().div_ceil(n / 2);
    let mut out = Vec::with_capacity(n);
    for chunk in points.chunks(run) {
        let lo = chunk.iter().min_by_key(|p| p.live_bytes);
        let hi = chunk.iter().max_by_key(|p| p.live_bytes);
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let (a, b) = if lo.call <= hi.call {
                (lo, hi)
            } else {
                (hi, lo)
            };
            out.push(*a);
            if b.call != a.call {
                out.push(*b);
            }
        }
    }
    out
}

fn backtrace_row(rank: usize, t: &Trace) -> Vec<Value> {
    let mut row: Vec<Value> = vec![rank.into()];
    row.extend(cost_values(&t.cost));
    row.push(stack(&t.frames));
    row
}

impl RecordingReport<'_> {
    /// The recording as data: a report of the recording (its command and
    /// a table of its process images), then each image's report (the same
    /// sections as a single trace's, after a summary of the image).
    pub fn to_reports(&self) -> Vec<Page> {
        let rec = self.recording;
        let path = rec.path.display().to_string();
        let mut head = Page::new("rtrace", format!("tracekit memory recording {path}"));
        head.input(
            path.clone(),
            Some(crate::recording::set::FORMAT.to_string()),
        );
        head.text = TextForm::Omit;
        let mut first = format!(
            "tracekit memory recording {}: {} process image(s)\n",
            path,
            rec.images.len()
        );
        if !rec.command.is_empty() {
            first.push_str(&format!("  command: {}\n", rec.command.join(" ")));
        }
        head.push(
            Section::summary(
                "recording",
                "Recording",
                vec![
                    Item::new("images", "process images", rec.images.len(), Unit::Count),
                    Item::new(
                        "command",
                        "command",
                        (!rec.command.is_empty()).then(|| Value::List(rec.command.clone())),
                        Unit::Text,
                    ),
                    Item::new("pid", "the command's pid", rec.pid, Unit::Id),
                ],
            )
            .verbatim(first),
        );
        let mut t = Table::new(vec![
            Column::new("pid", "pid", Unit::Id),
            Column::new("image", "image", Unit::Id),
            Column::new("ppid", "parent", Unit::Id),
            Column::new("executable", "program", Unit::Text),
            Column::new("calls", "calls", Unit::Count),
            Column::new("allocations", "allocations", Unit::Count),
            Column::new("peak_bytes", "peak", Unit::Bytes),
            Column::new("leaked_bytes", "never freed", Unit::Bytes),
            Column::new("leaked_blocks", "never freed (blocks)", Unit::Count),
            Column::new("end", "how it ended", Unit::Text),
        ]);
        let mut lines = String::new();
        for (i, (_, r)) in rec.images.iter().zip(&self.reports) {
            lines.push_str(&format!("  {}", i.label()));
            if let Some(pp) = i.ppid {
                lines.push_str(&format!(", parent {pp}"));
            }
            let mem = r.resource("memory").map(|k| &r.resources[k]);
            match mem {
                Some(m) => lines.push_str(&format!(
                    ": {} allocations, peak {}, never freed {} in {} blocks",
                    m.allocs,
                    super::human_bytes(m.peak_bytes),
                    super::human_bytes(m.leaked_bytes),
                    m.leaked_blocks
                )),
                None => lines.push_str(&format!(": {} calls", r.calls)),
            }
            match &i.end {
                Some(e) => lines.push_str(&format!("; {e}\n")),
                None => lines.push('\n'),
            }
            t.row(vec![
                i.pid.into(),
                i.n.into(),
                i.ppid.into(),
                i.executable.clone().into(),
                r.calls.into(),
                mem.map(|m| m.allocs).into(),
                mem.map(|m| m.peak_bytes).into(),
                mem.map(|m| m.leaked_bytes).into(),
                mem.map(|m| m.leaked_blocks).into(),
                i.end.clone().into(),
            ]);
        }
        head.push(Section::table("processes", "Process images", t).verbatim(lines));
        // The images whose pages show everything: the most allocation
        // calls first.
        let mut busiest: Vec<usize> = (0..self.reports.len()).collect();
        busiest.sort_by_key(|&k| {
            let r = &self.reports[k].1;
            std::cmp::Reverse(r.resources.iter().map(|x| x.allocs).sum::<u64>())
        });
        let mut full = vec![false; self.reports.len()];
        for &k in busiest.iter().take(PAGE_IMAGES) {
            full[k] = true;
        }
        let pruned = self.reports.len().saturating_sub(PAGE_IMAGES);
        if pruned > 0 {
            head.push(
                Section::notes(
                    "page_images",
                    "On this page",
                    vec![Note {
                        level: Level::Info,
                        text: format!(
                            "the {PAGE_IMAGES} process images with the most allocation calls are shown whole; {pruned} other(s) show their totals only (the text report and --json hold everything)"
                        ),
                    }],
                )
                .omit_text(),
            );
        }
        let mut pages = vec![head];
        for (k, (i, (file, r))) in rec.images.iter().zip(&self.reports).enumerate() {
            let mut page = r.to_report(file);
            if !full[k] {
                for s in &mut page.sections {
                    if !matches!(s.id.as_str(), "summary" | "resources" | "warnings") {
                        s.html = false;
                    }
                }
            }
            page.title = format!("{} — {}", i.label(), path);
            let image = Section::summary(
                "image",
                "Process image",
                vec![
                    Item::new("pid", "pid", i.pid, Unit::Id),
                    Item::new("image", "image", i.n, Unit::Id),
                    Item::new("ppid", "parent", i.ppid, Unit::Id),
                    Item::new("executable", "program", i.executable.clone(), Unit::Text),
                    Item::new("end", "how it ended", i.end.clone(), Unit::Text),
                ],
            )
            .verbatim(format!("\n==== {} ====\n", i.label()));
            page.sections.insert(0, image);
            pages.push(page);
        }
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Point, ResourceStats};
    use super::*;

    fn trace(i: u64, allocations: i64) -> Trace {
        Trace {
            resource: 0,
            cost: Cost {
                allocations,
                ..Cost::default()
            },
            frames: vec![
                (i, format!("leaf{i}"), None, false),
                (1, "main".into(), None, false),
            ],
            key: Vec::new(),
            module: None,
        }
    }

    #[test]
    fn flames_keep_the_heaviest_stacks_and_count_the_rest() {
        let mut r = Report {
            resources: vec![ResourceStats {
                name: "memory".into(),
                allocs: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        // One heavy stack, 3000 of weight 1 from one caller: each under
        // the threshold, together in one stack ending in the pruned frame.
        r.traces.push(trace(0, 1_000_000));
        for i in 1..=3000 {
            r.traces.push(trace(i, 1));
        }
        let s = r.flame_section(0, Metric::Allocations);
        let tracekit_report::Body::Flame(f) = &s.body else {
            panic!("{s:?}")
        };
        assert_eq!(f.stacks.len(), 2);
        assert_eq!(f.stacks[0].frames, ["main", "leaf0"]);
        assert_eq!(f.stacks[0].weight, 1_000_000.0);
        assert_eq!(f.stacks[1].frames, ["main", PRUNED_FRAME]);
        assert_eq!(f.stacks[1].weight, 3000.0);
        assert!(f.more.is_none());
        // 400 equal stacks are each over the threshold: all kept.
        r.traces.truncate(0);
        for i in 1..=400 {
            r.traces.push(trace(i, 3));
        }
        let s = r.flame_section(0, Metric::Allocations);
        let tracekit_report::Body::Flame(f) = &s.body else {
            panic!("{s:?}")
        };
        assert_eq!(f.stacks.len(), 400);
        assert!(f
            .stacks
            .iter()
            .all(|s| s.frames.len() == 2 && s.weight == 3.0));
        assert!(f.more.is_none());
    }

    #[test]
    fn thinning_keeps_peaks_and_troughs_in_order() {
        let points: Vec<Point> = (1..=1000u64)
            .map(|call| Point {
                call,
                timestamp: None,
                elapsed_ms: None,
                live_bytes: match call {
                    500 => 1_000_000,
                    501 => -5,
                    c => (c % 7) as i64,
                },
            })
            .collect();
        let t = thin(&points, SERIES_POINTS);
        assert!(t.len() <= SERIES_POINTS, "{}", t.len());
        assert!(t.windows(2).all(|w| w[0].call < w[1].call));
        assert!(t.iter().any(|p| p.live_bytes == 1_000_000));
        assert!(t.iter().any(|p| p.live_bytes == -5));
        assert_eq!(thin(&points[..10], SERIES_POINTS).len(), 10);
    }
}
