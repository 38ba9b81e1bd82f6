//! LLVM XRay logs: the dialect behind `info`, `report`, `convert`, `diff`
//! and `sql`, and the work of `tracekit xray extract|account|stack|graph|
//! graph-diff|convert|fdr-dump` (llvm-xray's tools), from typed options.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use tracekit_core::timeline::Sink;
use tracekit_xray::commands;
use tracekit_xray::names::FunctionNames;
use tracekit_xray::summary::Summary;
use tracekit_xray::{LogKind, Trace};

use crate::input::Input;
use crate::options::{ConvertOptions, DiffOptions, InfoOptions, ReportOptions};
use crate::out::{output, print_warnings};
use crate::progress::Progress;
use crate::registry::{Dialect, Target, Writer};

/// `xray extract`: the instrumentation map of a binary as YAML.
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    pub binary: PathBuf,
    /// Fill in function names.
    pub symbolize: bool,
    pub demangle: bool,
    pub output: Option<PathBuf>,
}

pub fn extract(a: ExtractOptions) -> Result<ExitCode> {
    let names = FunctionNames::load(&a.binary, a.demangle)?;
    let mut out = output(a.output.as_deref())?;
    if let Some(map) = names.map() {
        map.write_yaml(&mut out, |id| {
            if a.symbolize {
                names.symbol_or_number(id).to_string()
            } else {
                String::new()
            }
        })?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `xray account`: per-function latency statistics.
#[derive(Debug, Clone)]
pub struct AccountOptions {
    pub input: PathBuf,
    pub instr_map: Option<PathBuf>,
    pub args: commands::AccountArgs,
    /// Rows as JSON.
    pub json: bool,
    pub output: Option<PathBuf>,
}

pub fn account(a: AccountOptions) -> Result<ExitCode> {
    let names = load_names(&a.instr_map, true)?;
    let bytes = open_bytes(&a.input)?;
    let rel = releaser(&bytes, &a.input);
    let trace = open_trace(&a.input, &bytes, &*rel)?;
    let mut out = output(a.output.as_deref())?;
    let (rows, total, w) = match commands::account_rows(&trace, &names, &a.args) {
        Err(tracekit_core::Error::Other(m)) if m.starts_with("Error processing record") => {
            // llvm-xray's report: the record and the threads'
            // stacks, then the failure.
            eprintln!("{m}");
            anyhow::bail!(
                "Failed accounting function calls in file '{}'.",
                a.input.display()
            );
        }
        r => in_file(r, &a.input)?,
    };
    if a.json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "funcid": r.func_id,
                    "count": r.count,
                    "min": r.min, "median": r.median, "p90": r.pct90,
                    "p99": r.pct99, "max": r.max, "sum": r.sum,
                    "debug": names.file_line_column(r.func_id),
                    "function": &*names.symbol_or_number(r.func_id),
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else if a.args.csv {
        tracekit_xray::account::write_csv(&mut out, &rows, &names)?;
    } else {
        tracekit_xray::account::write_text(&mut out, total, &rows, &names)?;
    }
    out.flush()?;
    print_warnings(a.input.display(), &w);
    Ok(ExitCode::SUCCESS)
}

/// `xray stack`: call-stack accounting over one or more traces.
#[derive(Debug, Clone)]
pub struct StackOptions {
    pub inputs: Vec<PathBuf>,
    pub instr_map: Option<PathBuf>,
    pub args: commands::StackArgs,
    pub output: Option<PathBuf>,
}

pub fn stack(a: StackOptions) -> Result<ExitCode> {
    let Some(first) = a.inputs.first() else {
        anyhow::bail!("xray stack: no trace given");
    };
    let names = load_names(&a.instr_map, true)?;
    let bytes: Vec<Bytes> = a
        .inputs
        .iter()
        .map(|p| open_bytes(p))
        .collect::<Result<_>>()?;
    let rels: Vec<_> = bytes
        .iter()
        .zip(&a.inputs)
        .map(|(b, p)| releaser(b, p))
        .collect();
    let traces: Vec<Trace<'_>> = a
        .inputs
        .iter()
        .zip(&bytes)
        .zip(&rels)
        .map(|((p, b), r)| open_trace(p, b, &**r))
        .collect::<Result<_>>()?;
    let mut out = output(a.output.as_deref())?;
    let w = in_file(commands::stack(&traces, &names, &a.args, &mut out), first)?;
    out.flush()?;
    print_warnings(first.display(), &w);
    Ok(ExitCode::SUCCESS)
}

/// `xray graph`: the call graph in Graphviz DOT.
#[derive(Debug, Clone)]
pub struct GraphOptions {
    pub input: PathBuf,
    pub instr_map: Option<PathBuf>,
    pub args: commands::GraphArgs,
    pub output: Option<PathBuf>,
}

pub fn graph(a: GraphOptions) -> Result<ExitCode> {
    let names = load_names(&a.instr_map, true)?;
    let bytes = open_bytes(&a.input)?;
    let rel = releaser(&bytes, &a.input);
    let trace = open_trace(&a.input, &bytes, &*rel)?;
    let mut out = output(a.output.as_deref())?;
    let w = in_file(commands::graph(&trace, &names, &a.args, &mut out), &a.input)?;
    out.flush()?;
    print_warnings(a.input.display(), &w);
    Ok(ExitCode::SUCCESS)
}

/// `xray graph-diff`: the difference of two traces' call graphs in DOT.
#[derive(Debug, Clone)]
pub struct GraphDiffOptions {
    pub first: PathBuf,
    pub second: PathBuf,
    /// How each trace is read (keep going, deduce sibling calls).
    pub sides: [commands::DiffSide; 2],
    pub style: tracekit_xray::graph::DiffStyle,
    pub output: Option<PathBuf>,
}

pub fn graph_diff(a: GraphDiffOptions) -> Result<ExitCode> {
    let paths = [&a.first, &a.second];
    let bytes: Vec<Bytes> = paths.iter().map(|p| open_bytes(p)).collect::<Result<_>>()?;
    let rels: Vec<_> = bytes
        .iter()
        .zip(paths)
        .map(|(b, p)| releaser(b, p))
        .collect();
    let mut traces = Vec::new();
    for ((p, b), r) in paths.iter().zip(&bytes).zip(&rels) {
        traces.push(
            open_trace(p, b, &**r)
                .map_err(|e| e.context(format!("Failed Loading Input File '{}'", p.display())))?,
        );
    }
    let mut out = output(a.output.as_deref())?;
    let w = commands::graph_diff([&traces[0], &traces[1]], a.sides, &a.style, &mut out)
        .map_err(|e| anyhow::Error::from(e.in_file(&a.first)))?;
    out.flush()?;
    print_warnings(a.first.display(), &w[0]);
    print_warnings(a.second.display(), &w[1]);
    Ok(ExitCode::SUCCESS)
}

/// `xray convert`: re-encode a trace (llvm-xray's formats).
#[derive(Debug, Clone)]
pub struct XrayConvertOptions {
    pub input: PathBuf,
    pub instr_map: Option<PathBuf>,
    pub demangle: bool,
    pub format: commands::ConvertFormat,
    /// Function names instead of ids.
    pub symbolize: bool,
    /// Records by timestamp (else in load order).
    pub sort: bool,
    pub output: Option<PathBuf>,
}

pub fn convert(a: XrayConvertOptions) -> Result<ExitCode> {
    let names = load_names(&a.instr_map, a.demangle)?;
    let bytes = open_bytes(&a.input)?;
    let rel = releaser(&bytes, &a.input);
    let trace = open_trace(&a.input, &bytes, &*rel)?;
    let mut out = output(a.output.as_deref())?;
    let w = commands::convert(&trace, &names, a.format, a.symbolize, a.sort, &mut out);
    let w = in_file(w, &a.input)?;
    out.flush()?;
    print_warnings(a.input.display(), &w);
    Ok(ExitCode::SUCCESS)
}

/// `xray fdr-dump`: the raw records of an FDR log.
pub fn fdr_dump(input: &Path, verify: bool) -> Result<ExitCode> {
    let bytes = open_bytes(input)?;
    let rel = releaser(&bytes, input);
    let trace = open_trace(input, &bytes, &*rel)?;
    let mut out = output(None)?;
    let res = tracekit_xray::fdr_dump::write_fdr_dump(&trace, verify, &mut out);
    out.flush()?;
    let w = in_file(res, input)?;
    print_warnings(input.display(), &w);
    Ok(ExitCode::SUCCESS)
}

fn load_names(map: &Option<PathBuf>, demangle: bool) -> Result<FunctionNames> {
    match map {
        Some(p) => Ok(FunctionNames::load(p, demangle)?),
        None => Ok(FunctionNames::none()),
    }
}

/// The trace's bytes: a memory map, or standard input read whole.
enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn get(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

fn open_bytes(path: &Path) -> Result<Bytes> {
    if path.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut v)
            .context("<stdin>: cannot read")?;
        return Ok(Bytes::Owned(v));
    }
    Ok(Bytes::Map(crate::input::mmap_file(path)?))
}

/// Drops finished ranges of a memory-mapped trace from the resident set,
/// and shows them done on a progress bar (big files on a terminal).
fn releaser<'a>(bytes: &'a Bytes, name: &Path) -> Box<dyn Fn(usize, usize) + Sync + 'a> {
    match bytes {
        Bytes::Map(m) => {
            let progress = Progress::bytes(m.len() as u64, &name.display().to_string());
            Box::new(move |off: usize, len: usize| {
                progress.inc(len as u64);
                const PAGE: usize = 4096;
                let start = off.div_ceil(PAGE) * PAGE;
                let end = (off + len) / PAGE * PAGE;
                if end > start {
                    // SAFETY: `m` is a read-only MAP_SHARED mapping of a file
                    // (memmap2's `Mmap::map`). MADV_DONTNEED only drops the
                    // pages; a later read faults them in again from the page
                    // cache with the same content, so slices into the range
                    // stay valid.
                    let _ = unsafe {
                        m.unchecked_advise_range(
                            memmap2::UncheckedAdvice::DontNeed,
                            start,
                            end - start,
                        )
                    };
                }
            })
        }
        Bytes::Owned(_) => Box::new(|_, _| {}),
    }
}

/// Opens a trace whose finished pages go back to the kernel through `rel`
/// (from [`releaser`]), from the indexing pass on.
fn open_trace<'a>(
    path: &Path,
    bytes: &'a Bytes,
    rel: &'a (dyn Fn(usize, usize) + Sync + 'a),
) -> Result<Trace<'a>> {
    Trace::open_releasing(bytes.get(), Some(rel)).map_err(|e| e.in_file(path).into())
}

fn in_file<T>(r: tracekit_core::Result<T>, path: &Path) -> Result<T> {
    r.map_err(|e| e.in_file(path).into())
}

/// The XRay dialect for `info`, `report` and `convert`.
pub struct Xray;

/// `tracekit diff` of two XRay logs of one binary (`instr_map`).
pub fn diff_report(
    before: &Input,
    after: &Input,
    instr_map: &Option<PathBuf>,
    top: usize,
) -> Result<tracekit_report::Report> {
    let names = names_for(instr_map)?;
    let (bb, ab) = (open_bytes(&before.path)?, open_bytes(&after.path)?);
    let (br, ar) = (releaser(&bb, &before.path), releaser(&ab, &after.path));
    let bt = open_trace(&before.path, &bb, &*br)?;
    let at = open_trace(&after.path, &ab, &*ar)?;
    let opts = tracekit_xray::diff::Options {
        top,
        ..Default::default()
    };
    use tracekit_xray::diff::Side;
    let (b, wb) = in_file(Side::read(&bt, &opts), &before.path)?;
    print_warnings(before.path.display(), &wb);
    let (a, wa) = in_file(Side::read(&at, &opts), &after.path)?;
    print_warnings(after.path.display(), &wa);
    Ok(tracekit_xray::diff::diff(
        &b,
        &before.display(),
        &a,
        &after.display(),
        &names,
        &opts,
    ))
}

fn names_for(map: &Option<PathBuf>) -> Result<FunctionNames> {
    load_names(map, true)
}

impl Dialect for Xray {
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        let r = diff_report(before, after, &options.instr_map, options.top)?;
        Ok((r, ExitCode::SUCCESS))
    }
    fn name(&self) -> &'static str {
        "LLVM XRay"
    }

    fn sniff(&self, input: &Input) -> bool {
        tracekit_xray::header::looks_like_xray(&input.head)
            || tracekit_xray::yaml_log::looks_like_yaml_log(&input.head)
    }

    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
        let mut all = Vec::new();
        let mut out = crate::out::stdout();
        for input in inputs {
            let bytes = open_bytes(&input.path)?;
            let rel = releaser(&bytes, &input.path);
            let trace = open_trace(&input.path, &bytes, &*rel)?;
            let h = trace.header;
            let mut summary = Summary::of(&trace);
            let total = summary.records();
            let span = summary.duration_secs(h.cycle_frequency);
            let error = summary
                .error
                .take()
                .map(|e| e.in_file(&input.path).to_string());
            let counts = &summary.records_by_kind;
            let warnings = &summary.warnings;
            let kind = match (h.kind, trace.yaml.is_some()) {
                (LogKind::Fdr, false) => "FDR",
                (LogKind::Basic, false) => "basic",
                (LogKind::Fdr, true) => "YAML trace of an FDR",
                (LogKind::Basic, true) => "YAML trace of a basic",
            };
            let v = serde_json::json!({
                "file": input.display(),
                "format": "LLVM XRay",
                "mode": kind,
                "version": h.version,
                "endian": format!("{:?}", h.endian).to_lowercase(),
                "cycle_frequency": h.cycle_frequency,
                "buffer_size": h.buffer_size,
                "buffers": trace.blocks.len(),
                "records": total,
                "records_by_kind": counts,
                "threads": summary.threads,
                "processes": summary.processes,
                "duration_s": span,
                "warnings": warnings.total(),
                "error": error,
            });
            if args.json {
                all.push(crate::info::Info {
                    input: input.display(),
                    dialect: "xray",
                    format: format!("LLVM XRay {kind} log"),
                    version: Some(h.version.to_string()),
                    events: Some(total),
                    processes: Some(summary.processes as u64),
                    threads: Some(summary.threads as u64),
                    duration_s: Some(span),
                    warnings: Some(warnings.total()),
                    details: v,
                    ..Default::default()
                });
            } else {
                writeln!(
                    out,
                    "{}: LLVM XRay {kind} log, version {} ({:?}-endian)",
                    input.display(),
                    h.version,
                    h.endian
                )?;
                writeln!(out, "  cycle frequency: {} Hz", h.cycle_frequency)?;
                if trace.is_fdr_log() {
                    writeln!(
                        out,
                        "  buffers:         {} (buffer size {} bytes)",
                        trace.blocks.len(),
                        h.buffer_size
                    )?;
                }
                writeln!(out, "  records:         {total}")?;
                for (k, n) in counts {
                    writeln!(out, "    {k:<20} {n}")?;
                }
                writeln!(out, "  threads:         {}", summary.threads)?;
                writeln!(out, "  processes:       {}", summary.processes)?;
                writeln!(out, "  time span:       {span:.6} s")?;
                out.flush()?;
                print_warnings(input.path.display(), warnings);
                if let Some(e) = error {
                    eprintln!("tracekit: {e}");
                }
            }
        }
        for info in &all {
            info.write_line(&mut out)?;
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        let names = names_for(&args.instr_map)?;
        let opts = tracekit_xray::report::Options {
            top: args.top,
            ..Default::default()
        };
        let mut reports = Vec::with_capacity(inputs.len());
        for input in inputs {
            let bytes = open_bytes(&input.path)?;
            let rel = releaser(&bytes, &input.path);
            let trace = open_trace(&input.path, &bytes, &*rel)?;
            let (rep, w) = in_file(
                tracekit_xray::report::build(&trace, &names, &input.display().to_string(), &opts),
                &input.path,
            )?;
            print_warnings(input.path.display(), &w);
            reports.push(rep);
        }
        Ok((reports, ExitCode::SUCCESS))
    }

    fn targets(&self) -> &'static [Target] {
        TARGETS
    }

    fn timeline(
        &self,
        input: &Input,
        args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        let mut run = || -> Result<ExitCode> {
            let names = names_for(&args.instr_map)?;
            let bytes = open_bytes(&input.path)?;
            let rel = releaser(&bytes, &input.path);
            let trace = open_trace(&input.path, &bytes, &*rel)?;
            let source = input.display().to_string();
            let w = in_file(
                tracekit_xray::timeline::map_trace(&trace, &names, &source, sink),
                &input.path,
            )?;
            print_warnings(input.path.display(), &w);
            Ok(ExitCode::SUCCESS)
        };
        run()
    }

    fn tables(
        &self,
        input: &Input,
        args: &ConvertOptions,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        let mut run = || -> Result<ExitCode> {
            let names = names_for(&args.instr_map)?;
            let bytes = open_bytes(&input.path)?;
            let rel = releaser(&bytes, &input.path);
            let trace = open_trace(&input.path, &bytes, &*rel)?;
            let source = input.display().to_string();
            let (w, stats) = in_file(
                tracekit_parquet::dialects::xray(&trace, &names, &source, tables),
                &input.path,
            )?;
            print_warnings(input.path.display(), &w);
            crate::registry::warn_row_stats(input, &stats);
            Ok(ExitCode::SUCCESS)
        };
        run()
    }

    fn tables_in_one_pass(&self, _path: &std::path::Path) -> bool {
        true
    }
}

/// The formats XRay traces convert to (`convert --to`).
static TARGETS: &[Target] = &[
    Target {
        names: &["folded"],
        about: "folded stacks of self time in ticks (flamegraph.pl, inferno, speedscope)",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Folded)),
    },
    Target {
        names: &["svg"],
        about: "a flame graph (SVG) of self time",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Svg)),
    },
    Target {
        names: &["yaml"],
        about: "llvm-xray's YAML trace (`llvm-xray convert -f yaml`)",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Yaml)),
    },
    Target {
        names: &["trace_event"],
        about: "llvm-xray's Chrome trace_event JSON (`llvm-xray convert -f trace_event`)",
        write: Writer::Own(|input, args| convert_to(input, args, Written::TraceEvent)),
    },
    Target {
        names: &["fdr"],
        about: "an FDR v5 log, laid out as compiler-rt writes it",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Fdr)),
    },
    Target {
        names: &["basic", "raw"],
        about: "a basic (naive) log (`llvm-xray convert -f raw`)",
        write: Writer::Own(|input, args| convert_to(input, args, Written::Basic)),
    },
];

#[derive(Clone, Copy, PartialEq)]
enum Written {
    Folded,
    Svg,
    Yaml,
    TraceEvent,
    Fdr,
    Basic,
}

fn convert_to(input: &Input, args: &ConvertOptions, to: Written) -> Result<ExitCode> {
    let names = names_for(&args.instr_map)?;
    let bytes = open_bytes(&input.path)?;
    let rel = releaser(&bytes, &input.path);
    let trace = open_trace(&input.path, &bytes, &*rel)?;
    let mut out = output(args.output.as_deref())?;
    let symbolized = args.instr_map.is_some();
    let w = match to {
        Written::Folded | Written::Svg => {
            let (p, w) = in_file(commands::profile(&trace), &input.path)?;
            let mut folded = Vec::new();
            in_file(commands::write_folded(&p, &names, &mut folded), &input.path)?;
            if to == Written::Folded {
                out.write_all(&folded)?;
            } else {
                let title = format!("{} (self time, ticks)", input.display());
                tracekit_export::flame::svg_from_folded(
                    &folded,
                    &tracekit_export::flame::FlameOptions {
                        title: &title,
                        count_name: "ticks",
                        inverted: false,
                    },
                    &mut out,
                )?;
            }
            w
        }
        Written::Yaml => in_file(
            commands::convert_yaml(&trace, &names, symbolized, true, &mut out),
            &input.path,
        )?,
        Written::TraceEvent => in_file(
            commands::convert_trace_event(&trace, &names, symbolized, true, &mut out),
            &input.path,
        )?,
        Written::Fdr => in_file(
            tracekit_xray::writer::convert_to_fdr(&trace, &mut out),
            &input.path,
        )?,
        Written::Basic => in_file(
            tracekit_xray::writer::convert_to_basic(&trace, &mut out),
            &input.path,
        )?,
    };
    out.flush()?;
    print_warnings(input.path.display(), &w);
    Ok(ExitCode::SUCCESS)
}
