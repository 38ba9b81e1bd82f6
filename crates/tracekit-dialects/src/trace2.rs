//! Git Trace2: the dialect behind `info`, `report`, `convert` and `sql`
//! (EVENT, PERF and NORMAL files, and directories of them).

use crate::options::DiffOptions;
use crate::options::{ConvertOptions, InfoOptions, ReportOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_core::timeline::Sink;
use tracekit_core::{Position, Warnings};
use tracekit_trace2::convert::Converter;
use tracekit_trace2::reader::{self, for_each_record, Format};
use tracekit_trace2::report::{self, ReportBuilder};
use tracekit_trace2::summary::Summary;
use tracekit_trace2::timeline::Trace2Timeline;
use tracekit_trace2::Event;

use crate::input::{dir_files, mmap_file, Input};
use crate::out::output;
use crate::progress::Progress;
use crate::registry::{Dialect, Target, Writer};

pub struct Trace2;

/// One file of a trace2 input (a directory contributes each of its files).
struct Source {
    name: String,
    path: Option<PathBuf>,
}

fn sources(input: &Input) -> Result<Vec<Source>> {
    if input.is_stdin() {
        return Ok(vec![Source {
            name: input.display(),
            path: None,
        }]);
    }
    let files = if input.is_dir {
        dir_files(&input.path)?
    } else {
        vec![input.path.clone()]
    };
    Ok(files
        .into_iter()
        .map(|p| Source {
            name: p.display().to_string(),
            path: Some(p),
        })
        .collect())
}

/// One source's content, as [`for_each_source`] opened it.
pub(crate) enum Content<'a> {
    Mapped(&'a memmap2::Mmap),
    Stream(Box<dyn std::io::BufRead>),
}

/// Opens every source of `input` (each file of a directory target, or
/// standard input), detects its format and hands it to `f` with its
/// warnings to fill. Empty files are skipped; a file that is not Trace2 is
/// a warning, standard input that is not Trace2 an error.
pub(crate) fn for_each_source(
    input: &Input,
    mut f: impl FnMut(&str, Format, Content<'_>, &mut Warnings) -> Result<()>,
) -> Result<Vec<(String, Warnings)>> {
    let mut all = Vec::new();
    for src in sources(input)? {
        let mut warnings = Warnings::default();
        match &src.path {
            Some(path) => {
                let map = mmap_file(path)?;
                if map.is_empty() {
                    continue;
                }
                match reader::detect(&map[..map.len().min(64 * 1024)]) {
                    Some(format) => f(&src.name, format, Content::Mapped(&map), &mut warnings)?,
                    None => warnings.push(
                        Position::Line(1),
                        "not a Git Trace2 file (EVENT, PERF or NORMAL)",
                    ),
                }
            }
            None => {
                let Some(format) = reader::detect(&input.head) else {
                    anyhow::bail!("<stdin>: not a Git Trace2 stream (EVENT, PERF or NORMAL)");
                };
                f(
                    &src.name,
                    format,
                    Content::Stream(input.reader()?),
                    &mut warnings,
                )?;
            }
        }
        all.push((src.name, warnings));
    }
    Ok(all)
}

/// Calls `f` with every event of every source (and the line its record
/// starts at), and collects unreadable records as warnings (per source
/// name). `on_source` learns each source's format and size.
fn read_events(
    input: &Input,
    mut f: impl FnMut(&Event<'_>, u64) -> Result<()>,
    mut on_source: impl FnMut(Format, u64),
) -> Result<Vec<(String, Warnings)>> {
    for_each_source(input, |name, format, content, warnings| {
        let one = |rec: reader::Record<'_>| -> Result<()> {
            match rec.parse_or_warn(format, warnings) {
                Some(ev) => f(&ev, rec.line),
                None => Ok(()),
            }
        };
        if let Content::Mapped(map) = &content {
            on_source(format, map.len() as u64);
        }
        if let Some(bytes) = each_record(name, format, content, one)? {
            on_source(format, bytes);
        }
        Ok(())
    })
}

/// Calls `one` with every record of one source, a mapped file with a
/// progress bar (its pages released behind the reader), a stream as it
/// comes. Returns the bytes read from a stream (`None` for a mapped file,
/// whose size is known beforehand).
fn each_record(
    name: &str,
    format: Format,
    content: Content<'_>,
    one: impl FnMut(reader::Record<'_>) -> Result<()>,
) -> Result<Option<u64>> {
    match content {
        Content::Mapped(map) => {
            let progress = Progress::bytes(map.len() as u64, name);
            reader::for_each_in(
                map,
                format,
                |r| {
                    progress.set(r.end as u64);
                    reader::release_pages(map, r)
                },
                one,
            )?;
            Ok(None)
        }
        Content::Stream(r) => for_each_record(r, format, one).map(Some),
    }
}

/// Calls `one` with the event of every record of one source and its line,
/// in order, and warns (in `warnings`) at each record that does not parse: a mapped
/// file through [`reader::for_each_event_parsed_ahead`] (parsed on a
/// thread of its own, ahead of `one`, with a progress bar), a stream as it
/// comes, on the caller's thread.
fn each_event_parsed_ahead(
    name: &str,
    format: Format,
    content: Content<'_>,
    warnings: &mut Warnings,
    mut one: impl FnMut(&Event<'_>, u64) -> Result<()>,
) -> Result<()> {
    match content {
        Content::Mapped(map) => {
            let progress = Progress::bytes(map.len() as u64, name);
            reader::for_each_event_parsed_ahead(
                map,
                format,
                warnings,
                |done| progress.set(done as u64),
                one,
            )
        }
        stream => {
            each_record(name, format, stream, |rec| {
                match rec.parse_or_warn(format, warnings) {
                    Some(ev) => one(&ev, rec.line),
                    None => Ok(()),
                }
            })?;
            Ok(())
        }
    }
}

/// Feeds every record of every source of `input` to `builder` (mapped
/// files parsed by two threads, pages handed back behind them); each
/// source's warnings, not yet printed.
fn feed_report(input: &Input, builder: &mut ReportBuilder) -> Result<Vec<(String, Warnings)>> {
    for_each_source(input, |name, format, content, warnings| {
        let id = builder.source(name);
        match content {
            Content::Mapped(map) => report::report_mmap(map, format, id, builder, warnings),
            Content::Stream(r) => {
                for_each_record(r, format, |rec| -> Result<()> {
                    if let Some(ev) = rec.parse_or_warn(format, warnings) {
                        builder.add(&ev, id);
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    })
}

/// Prints each source's warnings (as [`crate::out::print_warnings`] does) and
/// says whether any record was lost.
pub(crate) fn print_all_warnings(all: &[(String, Warnings)]) -> bool {
    let mut lost = false;
    for (name, w) in all {
        crate::out::print_warnings(name, w);
        if !w.is_empty() {
            lost = true;
            eprintln!(
                "tracekit: {name}: {} records could not be read and were skipped",
                w.total()
            );
        }
    }
    lost
}

/// Says which records the timeline drew otherwise than the model wants (a
/// `region_leave` with no region open, ...): drawn as instants, so nothing
/// is lost, but the input is not what git writes.
fn print_placement_warnings(all: &[(String, Warnings)]) {
    for (name, w) in all {
        if w.is_empty() {
            continue;
        }
        crate::out::print_warnings(name, w);
        eprintln!(
            "tracekit: {name}: {} records did not fit the timeline as they are and were drawn as instants",
            w.total()
        );
    }
}

fn exit_code(lost: bool) -> ExitCode {
    if lost {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

impl Dialect for Trace2 {
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        compare(before, after, options.top)
    }
    fn name(&self) -> &'static str {
        "Git Trace2 (EVENT, PERF, NORMAL)"
    }

    fn sniff(&self, input: &Input) -> bool {
        reader::detect(&input.head).is_some()
    }

    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
        let mut lost = false;
        let mut out = output(None)?;
        for input in inputs {
            let mut summary = Summary::default();
            let mut formats: Vec<Format> = Vec::new();
            let mut bytes = 0u64;
            let warnings = read_events(
                input,
                |ev, _| {
                    summary.add(ev);
                    Ok(())
                },
                |f, n| {
                    bytes += n;
                    if !formats.contains(&f) {
                        formats.push(f)
                    }
                },
            )?;
            summary.bytes = bytes;
            summary.finish();
            let files = warnings.len();
            if args.json {
                let warned: u64 = warnings.iter().map(|(_, w)| w.total()).sum();
                info_json(input, &summary, &formats, files, warned).write_line(&mut out)?;
            } else {
                write_info_text(&mut out, input, &summary, &formats, files)?;
            }
            lost |= print_all_warnings(&warnings);
        }
        out.flush()?;
        Ok(exit_code(lost))
    }

    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        let mut builder = ReportBuilder::new(args.top);
        let mut all = Vec::new();
        for input in inputs {
            all.extend(feed_report(input, &mut builder)?);
        }
        let rep = builder.finish();
        // Records the report could not pair are in it (anomalies); said
        // here too, like every record a verb cannot place.
        let a = &rep.anomalies;
        if a.unmatched_region_leave + a.unmatched_child_exit > 0 {
            eprintln!(
                "tracekit: warning: {} region_leave records without region_enter and {} child_exit records without child_start \
                 (kept in their processes, counted in the report's anomalies)",
                a.unmatched_region_leave, a.unmatched_child_exit
            );
        }
        let names: Vec<String> = inputs.iter().map(|i| i.display().to_string()).collect();
        let data = report::to_report(&rep, &names, args.top);
        Ok((vec![data], exit_code(print_all_warnings(&all))))
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        let source = input.display().to_string();
        let mut tl = Trace2Timeline::new(sink, &source);
        let mut placed = Vec::new();
        let warnings = for_each_source(input, |name, format, content, warnings| {
            each_record(name, format, content, |rec| -> Result<()> {
                if let Some(ev) = rec.parse_or_warn(format, warnings) {
                    tl.add_at(&ev, Position::Line(rec.line))?;
                }
                Ok(())
            })?;
            placed.push((name.to_string(), tl.take_warnings()));
            Ok(())
        })?;
        tl.finish()?;
        let lost = print_all_warnings(&warnings);
        print_placement_warnings(&placed);
        Ok(exit_code(lost))
    }

    fn tables(
        &self,
        input: &Input,
        args: &ConvertOptions,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        use tracekit_parquet::dialects::{trace2_process, OwnedProcessRow};
        use tracekit_parquet::Table;
        let generic = Table::ALL
            .iter()
            .any(|&t| t.is_generic() && tables.wants(t));
        if generic && tables.wants(Table::Trace2Processes) && self.tables_in_one_pass(&input.path) {
            return tables_one_pass(input, tables);
        }
        let timeline = crate::registry::timeline_tables(self, input, args, tables)?;
        if !tables.wants(tracekit_parquet::Table::Trace2Processes) {
            return Ok(timeline.unwrap_or(ExitCode::SUCCESS));
        }
        if input.is_stdin() {
            anyhow::bail!("<stdin>: the trace2_processes table needs a file or directory");
        }
        // The report runs on a thread of its own (it parses with two more)
        // and hands each process over as its session is folded; this
        // thread writes the rows. The channel's bound keeps memory flat.
        let path = input.path.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel::<OwnedProcessRow>(4096);
        let (report, written) = std::thread::scope(|s| {
            let worker = s.spawn(move || -> Result<Vec<(String, Warnings)>> {
                let input = Input::open(&path)?;
                let mut builder = ReportBuilder::new(0);
                builder.on_process(move |p| {
                    let _ = tx.send(OwnedProcessRow::from(p));
                });
                let all = feed_report(&input, &mut builder)?;
                drop(builder.finish());
                Ok(all)
            });
            let mut written = Ok(());
            for row in rx {
                if written.is_ok() {
                    written = trace2_process(tables, &row.row());
                }
            }
            let report = worker
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the report thread panicked")));
            (report, written)
        });
        let warnings = report?;
        written?;
        tables.flush()?;
        match timeline {
            Some(code) => Ok(code),
            None => Ok(exit_code(print_all_warnings(&warnings))),
        }
    }

    /// A single file: its timeline and its `trace2_processes` rows come
    /// from one parse (a directory's files are named apart in
    /// `trace2_processes`, so it keeps the two passes).
    fn tables_in_one_pass(&self, path: &std::path::Path) -> bool {
        path.is_file()
    }

    fn targets(&self) -> &'static [Target] {
        TARGETS
    }
}

/// The formats Git Trace2 converts to itself (`convert --to`).
static TARGETS: &[Target] = &[
    Target {
        names: &["trace2-event", "event"],
        about: "Git Trace2 EVENT (JSON lines)",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Event)),
    },
    Target {
        names: &["trace2-perf", "perf"],
        about: "Git Trace2 PERF, as git writes it",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Perf)),
    },
    Target {
        names: &["trace2-normal", "normal"],
        about: "Git Trace2 NORMAL, as git writes it",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Normal)),
    },
];

#[derive(Clone, Copy)]
enum Written {
    Event,
    Perf,
    Normal,
}

/// `convert --to trace2-*`: every record in the `target` format.
fn convert_to(input: &Input, args: &ConvertOptions, target: Written) -> Result<ExitCode> {
    let mut out = output(args.output.as_deref())?;
    // Created at the first source: the variant follows its input's
    // unless --brief/--full say otherwise.
    let mut conv: Option<Converter> = None;
    let mut buf = Vec::with_capacity(1 << 16);
    // Records the target cannot be written from (a value it needs that
    // the input lacks), per source: said at their line and skipped; the
    // records after them are converted as usual.
    let mut unconverted: Vec<(String, Warnings)> = Vec::new();
    let mut notes = Vec::new();
    let warnings = for_each_source(input, |name, format, content, warnings| {
        let conv = conv.get_or_insert_with(|| {
            let brief = if args.brief {
                true
            } else if args.full {
                false
            } else {
                match format {
                    Format::Perf { brief } | Format::Normal { brief } => brief,
                    Format::Event => reader::event_is_brief(match &content {
                        Content::Mapped(map) => &map[..map.len().min(64 * 1024)],
                        Content::Stream(_) => &input.head,
                    }),
                }
            };
            Converter::new(match target {
                Written::Event => Format::Event,
                Written::Perf => Format::Perf { brief },
                Written::Normal => Format::Normal { brief },
            })
        });
        let mut skipped = Warnings::default();
        let mut one = |rec: reader::Record<'_>| -> Result<()> {
            let Some(ev) = rec.parse_or_warn(format, warnings) else {
                return Ok(());
            };
            if let Err(e) = conv.write(&ev, &mut buf) {
                skipped.push(Position::Line(rec.line), e.message);
            }
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
            Ok(())
        };
        let read = each_record(name, format, content, &mut one).map(|_| ());
        // Values derived less exactly (a git version not in the table):
        // said, but the conversion is complete.
        notes.extend(
            conv.take_notes()
                .into_iter()
                .map(|n| format!("{name}: warning: {n}")),
        );
        if !skipped.is_empty() {
            unconverted.push((name.to_string(), skipped));
        }
        read
    })?;
    out.write_all(&buf)?;
    out.flush()?;
    for note in notes {
        eprintln!("tracekit: {note}");
    }
    let mut lost = print_all_warnings(&warnings);
    for (name, w) in &unconverted {
        crate::out::print_warnings(name, w);
        eprintln!(
            "tracekit: {name}: {} records could not be converted to {} and were skipped",
            w.total(),
            args.to
        );
        lost = true;
    }
    Ok(exit_code(lost))
}

fn fmt_utc(u: tracekit_trace2::time::UnixMicros) -> String {
    let mut v = Vec::new();
    u.write_iso(&mut v);
    String::from_utf8_lossy(&v).into_owned()
}

fn fmt_tod(t: tracekit_trace2::time::TimeOfDay) -> String {
    let mut v = Vec::new();
    t.write(&mut v);
    String::from_utf8_lossy(&v).into_owned()
}

fn span_secs(s: &Summary) -> Option<f64> {
    match (s.first_utc, s.last_utc, s.first_of_day, s.last_of_day) {
        (Some(a), Some(b), _, _) => Some((b.0 - a.0) as f64 / 1e6),
        (_, _, Some(a), Some(b)) => Some(b.0.wrapping_sub(a.0) as i64 as f64 / 1e6),
        _ => None,
    }
}

fn format_names(formats: &[Format]) -> String {
    if formats.is_empty() {
        return "Git Trace2 (empty)".into();
    }
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    format!("Git Trace2 {}", names.join(" + "))
}

fn write_info_text(
    out: &mut dyn Write,
    input: &Input,
    s: &Summary,
    formats: &[Format],
    files: usize,
) -> Result<()> {
    writeln!(out, "{}", input.display())?;
    writeln!(out, "  format:     {}", format_names(formats))?;
    if !s.evt_versions.is_empty() {
        let v: Vec<&str> = s.evt_versions.iter().map(String::as_str).collect();
        writeln!(out, "  version:    evt {}", v.join(", "))?;
    }
    if !s.producers.is_empty() {
        let p: Vec<&str> = s.producers.iter().map(String::as_str).collect();
        writeln!(out, "  producer:   {}", p.join(", "))?;
    }
    if input.is_dir {
        writeln!(out, "  files:      {files}")?;
    }
    writeln!(out, "  size:       {} bytes", s.bytes)?;
    writeln!(out, "  events:     {}", s.records)?;
    for (k, n) in &s.by_kind {
        writeln!(out, "    {k:<15} {n:>10}")?;
    }
    match (s.first_utc, s.last_utc) {
        (Some(a), Some(b)) => writeln!(out, "  time span:  {} .. {}", fmt_utc(a), fmt_utc(b))?,
        _ => {
            if let (Some(a), Some(b)) = (s.first_of_day, s.last_of_day) {
                writeln!(
                    out,
                    "  time span:  {} .. {} (local time of day)",
                    fmt_tod(a),
                    fmt_tod(b)
                )?;
            }
        }
    }
    if let Some(secs) = span_secs(s) {
        writeln!(out, "  duration:   {secs:.6} s")?;
    }
    writeln!(
        out,
        "  processes:  {} ({} without atexit/signal)",
        s.processes, s.unfinished
    )?;
    writeln!(out, "  threads:    {}", s.threads)?;
    Ok(())
}

fn info_json(
    input: &Input,
    s: &Summary,
    formats: &[Format],
    files: usize,
    warnings: u64,
) -> crate::info::Info {
    let first = s.first_utc.map(fmt_utc).or(s.first_of_day.map(fmt_tod));
    let last = s.last_utc.map(fmt_utc).or(s.last_of_day.map(fmt_tod));
    crate::info::Info {
        input: input.display(),
        dialect: "trace2",
        format: format_names(formats),
        version: (!s.evt_versions.is_empty()).then(|| {
            s.evt_versions
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        }),
        producer: (!s.producers.is_empty())
            .then(|| s.producers.iter().cloned().collect::<Vec<_>>().join(", ")),
        events: Some(s.records),
        processes: Some(s.processes),
        threads: Some(s.threads),
        first_time: first,
        last_time: last,
        duration_s: span_secs(s),
        warnings: Some(warnings),
        lost: None,
        details: serde_json::json!({
            "formats": formats.iter().map(|f| f.name()).collect::<Vec<_>>(),
            "evt_versions": s.evt_versions,
            "producers": s.producers,
            "files": files,
            "bytes": s.bytes,
            "events_by_kind": s.by_kind,
            "unfinished_processes": s.unfinished,
        }),
    }
}

/// The timeline's rows, handing over the `trace2_processes` rows the
/// report folded meanwhile after each event (so they wait for one event
/// at most, and memory stays flat).
struct WithProcesses<'r, 't, 'o> {
    rows: &'r mut tracekit_parquet::TimelineRows<'t, 'o>,
    pending: &'r std::sync::Mutex<Vec<tracekit_parquet::dialects::OwnedProcessRow>>,
}

impl WithProcesses<'_, '_, '_> {
    fn drain(&mut self) -> std::io::Result<()> {
        let rows = match self.pending.lock() {
            Ok(mut v) if !v.is_empty() => std::mem::take(&mut *v),
            Ok(_) => return Ok(()),
            Err(_) => return Err(std::io::Error::other("the process rows' lock is poisoned")),
        };
        for row in rows {
            tracekit_parquet::dialects::trace2_process(self.rows.tables(), &row.row())?;
        }
        Ok(())
    }
}

impl Sink for WithProcesses<'_, '_, '_> {
    fn start(&mut self, info: &tracekit_core::timeline::TraceInfo<'_>) -> std::io::Result<()> {
        self.rows.start(info)
    }
    fn event(&mut self, event: &tracekit_core::timeline::Event<'_>) -> std::io::Result<()> {
        self.rows.event(event)?;
        self.drain()
    }
    fn finish(&mut self) -> std::io::Result<()> {
        self.drain()?;
        self.rows.finish()
    }
}

/// Every table of one Trace2 file from one parse: each event goes to the
/// timeline (the generic tables) and to the report (`trace2_processes`).
fn tables_one_pass(input: &Input, tables: &mut tracekit_parquet::Tables<'_>) -> Result<ExitCode> {
    use std::sync::{Arc, Mutex};
    use tracekit_parquet::dialects::OwnedProcessRow;
    let pending: Arc<Mutex<Vec<OwnedProcessRow>>> = Arc::default();
    let mut builder = ReportBuilder::new(0);
    {
        let pending = Arc::clone(&pending);
        builder.on_process(move |p| {
            if let Ok(mut v) = pending.lock() {
                v.push(OwnedProcessRow::from(p));
            }
        });
    }
    let source = input.display();
    let mut rows = tracekit_parquet::TimelineRows::new(tables);
    let mut sink = WithProcesses {
        rows: &mut rows,
        pending: &pending,
    };
    let mut tl = Trace2Timeline::new(&mut sink, &source);
    let mut placed = Vec::new();
    let warnings = for_each_source(input, |name, format, content, warnings| {
        let id = builder.source(name);
        each_event_parsed_ahead(name, format, content, warnings, |ev, line| {
            builder.add(ev, id);
            Ok(tl.add_at(ev, Position::Line(line))?)
        })?;
        placed.push((name.to_string(), tl.take_warnings()));
        Ok(())
    })?;
    tl.finish()?;
    print_placement_warnings(&placed);
    // The sessions still open at the end.
    drop(builder.finish());
    sink.drain()?;
    crate::registry::warn_row_stats(input, &rows.stats);
    rows.tables().flush()?;
    Ok(exit_code(print_all_warnings(&warnings)))
}

/// One side of a Trace2 comparison: the report of every source of `input`
/// (a file, a directory target, standard input), with the run times per
/// command; the warnings are printed.
fn trace2_side(
    input: &Input,
) -> Result<(
    tracekit_trace2::report::Report,
    std::collections::BTreeMap<tracekit_trace2::diff::CommandKey, Vec<i64>>,
    bool,
)> {
    let mut builder = ReportBuilder::new(0);
    let samples = tracekit_trace2::diff::Samples::attach(&mut builder);
    let warnings = feed_report(input, &mut builder)?;
    let rep = builder.finish();
    let lost = print_all_warnings(&warnings);
    Ok((rep, samples.take(), lost))
}

fn compare(
    before: &Input,
    after: &Input,
    top: usize,
) -> Result<(tracekit_report::Report, ExitCode)> {
    use tracekit_trace2::diff::{diff, Side};
    let (rb, sb, lb) = trace2_side(before)?;
    let (ra, sa, la) = trace2_side(after)?;
    let (nb, na) = (before.display(), after.display());
    let r = diff(
        &Side {
            name: &nb,
            report: &rb,
            samples: &sb,
        },
        &Side {
            name: &na,
            report: &ra,
            samples: &sa,
        },
        top,
    );
    // As `report`: records lost or unreadable make the exit status 1.
    Ok((r, ExitCode::from(u8::from(lb || la))))
}
