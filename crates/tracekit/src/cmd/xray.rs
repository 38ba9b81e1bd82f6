//! LLVM XRay: `tracekit xray extract|account|stack|graph|graph-diff|convert|fdr-dump`
//! with llvm-xray's flag names, and the dialect behind
//! `tracekit info/report/convert` for XRay logs.
//!
//! llvm-xray spells long options with one dash (`-sort=sum`,
//! `-instr_map`); [`normalise`] rewrites those to clap's `--` form before
//! parsing, for this subcommand only.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use tracekit_core::timeline::Sink;
use tracekit_xray::account::SortField;
use tracekit_xray::commands;
use tracekit_xray::graph::Stat;
use tracekit_xray::names::FunctionNames;
use tracekit_xray::summary::Summary;
use tracekit_xray::{LogKind, Trace};

use crate::cmd::{convert, info, output, print_warnings, report};
use crate::formats::{Dialect, Target, Writer};
use crate::input::Input;
use crate::progress::Progress;

/// The raw arguments after `tracekit xray`, parsed by [`run`].
#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
pub struct RawArgs {
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<OsString>,
}

const ABOUT: &str = "LLVM XRay tools with llvm-xray's subcommands and flags.

Reads FDR logs (versions 1-5), basic-mode logs (versions 1-3) of either byte
order and llvm-xray's YAML traces (what `convert -f yaml` writes), detected from
their content, streaming, in memory bounded by threads x stack depth. Function
ids are named through the instrumented binary or an `extract` YAML map
(-m BIN / --instr-map BIN / -instr_map BIN). llvm-xray's single-dash long
options work as they are (-sort=sum, -top=10).

Binary logs may lack the entries of their first calls (recording began inside
them, or FDR mode reused its oldest buffers at buffer_max) and the exits of
their last: account, stack and graph analyse every call whose entry and exit
are both there and say how many records they set aside.

Examples:
  tracekit xray account -m ./app -sort=sum -sortorder=dsc -top=10 xray-log.app.XXXX
  tracekit xray account -m map.yaml trace.yaml
  tracekit xray stack -m ./app -all-stacks -stack-format=flame xray-log.app.XXXX
  tracekit xray graph -m ./app -e sum -v count xray-log.app.XXXX | dot -Tsvg > g.svg
  tracekit xray graph-diff -e sum -c sum before.xray after.xray > diff.dot
  tracekit xray convert -m ./app -symbolize -output-format=trace_event log > t.json
  tracekit xray fdr-dump -verify xray-log.app.XXXX
  tracekit xray extract --symbolize ./app";

#[derive(Parser, Debug)]
#[command(name = "tracekit xray", about = "LLVM XRay tools", long_about = ABOUT, max_term_width = 100)]
struct XrayCli {
    #[command(subcommand)]
    command: XrayCommand,
}

#[derive(clap::Subcommand, Debug)]
enum XrayCommand {
    /// Print the instrumentation map of a binary (sleds and function ids)
    /// as YAML.
    Extract(ExtractArgs),
    /// Per-function latency statistics (count, min, median, 90p, 99p,
    /// max, sum).
    Account(AccountArgs),
    /// Call-stack accounting: top stacks, or folded stacks for flame
    /// graphs.
    Stack(StackArgs),
    /// The function call graph in Graphviz DOT.
    Graph(GraphArgs),
    /// The difference of two traces' call graphs in Graphviz DOT.
    GraphDiff(GraphDiffArgs),
    /// Re-encode a trace: yaml, trace_event (Chrome JSON), or raw/fdr
    /// binary logs.
    Convert(ConvertArgs),
    /// List the raw records of an FDR log.
    FdrDump(FdrDumpArgs),
}

#[derive(clap::Args, Debug)]
struct MapArg {
    /// The instrumented binary (or `extract` YAML) that names function ids.
    #[arg(
        short = 'm',
        long = "instr-map",
        visible_alias = "instr_map",
        value_name = "BIN"
    )]
    instr_map: Option<PathBuf>,
}

/// `--demangle` (the default) and `--no-demangle`; the last one given wins.
#[derive(clap::Args, Debug)]
struct DemangleArgs {
    /// Demangle C++ and Rust names (the default).
    #[arg(long, overrides_with = "no_demangle")]
    demangle: bool,
    /// Keep names mangled.
    #[arg(long, overrides_with = "demangle")]
    no_demangle: bool,
}

impl DemangleArgs {
    fn on(&self) -> bool {
        !self.no_demangle
    }
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  tracekit xray extract --symbolize ./app")]
struct ExtractArgs {
    /// The instrumented binary.
    #[arg(value_name = "BIN")]
    binary: PathBuf,
    /// Fill in function names.
    #[arg(short = 's', long)]
    symbolize: bool,
    #[command(flatten)]
    demangle: DemangleArgs,
    /// Output file (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Sort fields: funcid count min med 90p 99p max sum func\n\nExamples:\n  tracekit xray account -m ./app trace.xray\n  tracekit xray account -m ./app -sort=sum -sortorder=dsc -top=5 -format=csv trace.xray\n  tracekit xray account -m ./app --json trace.xray"
)]
struct AccountArgs {
    /// The trace (`-` for standard input).
    #[arg(value_name = "TRACE")]
    input: PathBuf,
    #[command(flatten)]
    map: MapArg,
    /// Skip records that do not fit the call stack instead of failing.
    #[arg(short = 'k', long)]
    keep_going: bool,
    /// An exit of an outer function closes the calls above it.
    #[arg(short = 'd', long)]
    deduce_sibling_calls: bool,
    /// Only count calls of functions that (indirectly) recurse.
    #[arg(long)]
    recursive_calls_only: bool,
    /// Column to sort by.
    #[arg(short = 's', long, default_value = "funcid", value_name = "FIELD")]
    sort: String,
    /// asc or dsc.
    #[arg(short = 'r', long, default_value = "asc", value_name = "ORDER")]
    sortorder: String,
    /// Show only the first N rows (0: all).
    #[arg(short = 'p', long, default_value_t = 0, value_name = "N")]
    top: usize,
    /// text or csv.
    #[arg(short = 'f', long, default_value = "text", value_name = "FORMAT")]
    format: String,
    /// Rows as JSON (for scripts).
    #[arg(long)]
    json: bool,
    /// Output file (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit xray stack -m ./app trace.xray\n  tracekit xray stack -m ./app -all-stacks -stack-format=flame trace.xray > app.folded\n  tracekit xray stack -m ./app -per-thread-stacks trace.xray"
)]
struct StackArgs {
    /// Traces (their stacks are added up).
    #[arg(value_name = "TRACE", required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    map: MapArg,
    /// Keep going when an exit has no matching entry.
    #[arg(short = 'k', long)]
    keep_going: bool,
    /// Report the top stacks of each thread.
    #[arg(long)]
    per_thread_stacks: bool,
    /// Merge identical stacks of different threads.
    #[arg(long)]
    aggregate_threads: bool,
    /// Print every stack (needs -stack-format=flame).
    #[arg(long, visible_alias = "all")]
    all_stacks: bool,
    /// human or flame.
    #[arg(long, default_value = "human", value_name = "FORMAT")]
    stack_format: String,
    /// time or count.
    #[arg(long, default_value = "time", value_name = "TYPE")]
    aggregation_type: String,
    /// Output file (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Statistics: none count min med 90p 99p max sum\n\nExample:\n  tracekit xray graph -m ./app -e sum -c sum -v count -b count trace.xray | dot -Tsvg -o g.svg"
)]
struct GraphArgs {
    #[arg(value_name = "TRACE")]
    input: PathBuf,
    #[command(flatten)]
    map: MapArg,
    #[arg(short = 'k', long)]
    keep_going: bool,
    #[arg(short = 'd', long)]
    deduce_sibling_calls: bool,
    /// Edge label statistic.
    #[arg(short = 'e', long, default_value = "none", value_name = "STAT")]
    edge_label: String,
    /// Vertex label statistic.
    #[arg(short = 'v', long, default_value = "none", value_name = "STAT")]
    vertex_label: String,
    /// Edge colour statistic.
    #[arg(short = 'c', long, default_value = "none", value_name = "STAT")]
    color_edges: String,
    /// Vertex colour statistic.
    #[arg(short = 'b', long, default_value = "none", value_name = "STAT")]
    color_vertices: String,
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Statistics: none count min med 90p 99p max sum\n\nColours: green where the second trace is higher (#00FF00: only in the second), pink where it is lower (#FF0000: only in the first).\nVertices are named by function id (#12), as llvm-xray 14 names them whatever -m says.\n\nExample:\n  tracekit xray graph-diff -e sum -c sum -v sum -b sum before.xray after.xray | dot -Tsvg -o diff.svg"
)]
struct GraphDiffArgs {
    /// The first (before) trace.
    #[arg(value_name = "TRACE1")]
    first: PathBuf,
    /// The second (after) trace.
    #[arg(value_name = "TRACE2")]
    second: PathBuf,
    /// Instrumentation map for both traces (accepted; llvm-xray 14's
    /// graph-diff does not use it, nor do we).
    #[arg(
        short = 'm',
        long = "instr-map",
        visible_alias = "instr_map",
        value_name = "BIN"
    )]
    instr_map: Option<PathBuf>,
    /// Instrumentation map of the first trace (accepted, unused).
    #[arg(long = "instr-map-1", visible_alias = "m1", value_name = "BIN")]
    instr_map_1: Option<PathBuf>,
    /// Instrumentation map of the second trace (accepted, unused).
    #[arg(long = "instr-map-2", visible_alias = "m2", value_name = "BIN")]
    instr_map_2: Option<PathBuf>,
    /// Skip records that do not fit the call stack (both traces).
    #[arg(short = 'k', long)]
    keep_going: bool,
    /// -k for the first trace only.
    #[arg(long = "keep-going-1", visible_alias = "k1")]
    keep_going_1: bool,
    /// -k for the second trace only.
    #[arg(long = "keep-going-2", visible_alias = "k2")]
    keep_going_2: bool,
    /// Deduce sibling calls (both traces).
    #[arg(short = 'd', long)]
    deduce_sibling_calls: bool,
    /// -d for the first trace only.
    #[arg(long = "deduce-sibling-calls-1", visible_alias = "d1")]
    deduce_sibling_calls_1: bool,
    /// -d for the second trace only.
    #[arg(long = "deduce-sibling-calls-2", visible_alias = "d2")]
    deduce_sibling_calls_2: bool,
    /// Edge label: relative change of this statistic.
    #[arg(short = 'e', long, default_value = "none", value_name = "STAT")]
    edge_label: String,
    /// Edge colour (and width) by the relative change of this statistic.
    #[arg(short = 'c', long, default_value = "none", value_name = "STAT")]
    edge_color: String,
    /// Vertex label: relative change of this statistic.
    #[arg(short = 'v', long, default_value = "none", value_name = "STAT")]
    vertex_label: String,
    /// Vertex colour by the relative change of this statistic.
    #[arg(short = 'b', long, default_value = "none", value_name = "STAT")]
    vertex_color: String,
    /// Cut vertex labels to this length.
    #[arg(
        short = 't',
        long = "vertex-label-trun",
        default_value_t = 40,
        value_name = "N"
    )]
    vertex_label_trun: usize,
    /// Output file (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Formats:\n  yaml         llvm-xray's YAML\n  trace_event  llvm-xray's Chrome trace JSON\n  chrome       Chrome Trace Event JSON via tracekit's writer (fast, streaming, with args/events)\n  raw | basic  a basic-mode (naive) v3 log\n  fdr          an FDR v5 log\n\nExamples:\n  tracekit xray convert -m ./app -symbolize -output-format=yaml trace.xray\n  tracekit xray convert -output-format=fdr -o copy.xray trace.xray"
)]
struct ConvertArgs {
    #[arg(value_name = "TRACE")]
    input: PathBuf,
    #[command(flatten)]
    map: MapArg,
    /// Output format.
    #[arg(short = 'f', long, default_value = "yaml", value_name = "FORMAT")]
    output_format: String,
    /// Function names instead of ids.
    #[arg(short = 'y', long)]
    symbolize: bool,
    #[command(flatten)]
    demangle: DemangleArgs,
    /// Sort records by timestamp (default true; -sort=false keeps load order).
    #[arg(short = 's', long, default_value = "true", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    sort: String,
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  tracekit xray fdr-dump -verify trace.xray")]
struct FdrDumpArgs {
    #[arg(value_name = "TRACE")]
    input: PathBuf,
    /// Group records per buffer (llvm-xray's --verify layout).
    #[arg(long)]
    verify: bool,
}

/// Rewrites llvm-xray's single-dash long options (`-sort=sum`) to `--`.
pub fn normalise(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|a| {
            let Some(s) = a.to_str() else { return a };
            let b = s.as_bytes();
            if b.len() >= 3 && b[0] == b'-' && b[1].is_ascii_alphabetic() && {
                let name_end = s.find('=').unwrap_or(s.len());
                name_end > 2
            } {
                OsString::from(format!("-{s}"))
            } else {
                a
            }
        })
        .collect()
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

fn stat(s: &str) -> Result<Stat> {
    Stat::parse(s).with_context(|| {
        format!("unknown statistic {s:?} (none, count, min, med, 90p, 99p, max, sum)")
    })
}

/// `tracekit xray` as it parses its arguments (after [`normalise`]): its
/// subcommands and flags, for the man pages and shell completions.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    XrayCli::command()
}

pub fn run(raw: RawArgs) -> Result<ExitCode> {
    run_inner(raw)
}

fn run_inner(raw: RawArgs) -> Result<ExitCode> {
    if raw.args.is_empty() {
        // Like llvm-xray without a subcommand: the overview, exit 0.
        use clap::CommandFactory;
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "OVERVIEW: XRay Tools\n\n  tracekit's llvm-xray: the same subcommands and flags.\n"
        )?;
        write!(out, "{}", XrayCli::command().render_long_help())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut argv = vec![OsString::from("tracekit xray")];
    argv.extend(normalise(raw.args));
    let cli = match XrayCli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Ok(ExitCode::from(code));
        }
    };
    match cli.command {
        XrayCommand::Extract(a) => {
            let names = FunctionNames::load(&a.binary, a.demangle.on())?;
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
        }
        XrayCommand::Account(a) => {
            let names = load_names(&a.map.instr_map, true)?;
            let bytes = open_bytes(&a.input)?;
            let rel = releaser(&bytes, &a.input);
            let trace = open_trace(&a.input, &bytes, &*rel)?;
            let sort = SortField::parse(&a.sort).with_context(|| {
                format!(
                    "unknown -sort field {:?} (funcid, count, min, med, 90p, 99p, max, sum, func)",
                    a.sort
                )
            })?;
            let args = commands::AccountArgs {
                keep_going: a.keep_going,
                deduce_sibling_calls: a.deduce_sibling_calls,
                recursive_calls_only: a.recursive_calls_only,
                sort,
                descending: match a.sortorder.as_str() {
                    "asc" => false,
                    "dsc" => true,
                    o => anyhow::bail!("unknown -sortorder {o:?} (asc or dsc)"),
                },
                top: a.top,
                csv: match a.format.as_str() {
                    "text" => false,
                    "csv" => true,
                    o => anyhow::bail!("unknown -format {o:?} (text or csv)"),
                },
            };
            let mut out = output(a.output.as_deref())?;
            let (rows, total, w) = match commands::account_rows(&trace, &names, &args) {
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
            } else if args.csv {
                tracekit_xray::account::write_csv(&mut out, &rows, &names)?;
            } else {
                tracekit_xray::account::write_text(&mut out, total, &rows, &names)?;
            }
            out.flush()?;
            print_warnings(a.input.display(), &w);
        }
        XrayCommand::Stack(a) => {
            let names = load_names(&a.map.instr_map, true)?;
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
            let args = commands::StackArgs {
                keep_going: a.keep_going,
                per_thread: a.per_thread_stacks,
                aggregate_threads: a.aggregate_threads,
                all_stacks: a.all_stacks,
                flame: match a.stack_format.as_str() {
                    "human" => false,
                    "flame" => true,
                    o => anyhow::bail!("unknown -stack-format {o:?} (human or flame)"),
                },
                count: match a.aggregation_type.as_str() {
                    "time" => false,
                    "count" => true,
                    o => anyhow::bail!("unknown -aggregation-type {o:?} (time or count)"),
                },
            };
            let mut out = output(a.output.as_deref())?;
            let w = in_file(
                commands::stack(&traces, &names, &args, &mut out),
                &a.inputs[0],
            )?;
            out.flush()?;
            print_warnings(a.inputs[0].display(), &w);
        }
        XrayCommand::Graph(a) => {
            let names = load_names(&a.map.instr_map, true)?;
            let bytes = open_bytes(&a.input)?;
            let rel = releaser(&bytes, &a.input);
            let trace = open_trace(&a.input, &bytes, &*rel)?;
            let args = commands::GraphArgs {
                keep_going: a.keep_going,
                deduce_sibling_calls: a.deduce_sibling_calls,
                edge_label: stat(&a.edge_label)?,
                edge_color: stat(&a.color_edges)?,
                vertex_label: stat(&a.vertex_label)?,
                vertex_color: stat(&a.color_vertices)?,
            };
            let mut out = output(a.output.as_deref())?;
            let w = in_file(commands::graph(&trace, &names, &args, &mut out), &a.input)?;
            out.flush()?;
            print_warnings(a.input.display(), &w);
        }
        XrayCommand::GraphDiff(a) => {
            let paths = [&a.first, &a.second];
            let bytes: Vec<Bytes> = paths.iter().map(|p| open_bytes(p)).collect::<Result<_>>()?;
            let rels: Vec<_> = bytes
                .iter()
                .zip(paths)
                .map(|(b, p)| releaser(b, p))
                .collect();
            let mut traces = Vec::new();
            for ((p, b), r) in paths.iter().zip(&bytes).zip(&rels) {
                traces.push(open_trace(p, b, &**r).map_err(|e| {
                    e.context(format!("Failed Loading Input File '{}'", p.display()))
                })?);
            }
            let side = |k: bool, d: bool| commands::DiffSide {
                keep_going: a.keep_going || k,
                deduce_sibling_calls: a.deduce_sibling_calls || d,
            };
            let style = tracekit_xray::graph::DiffStyle {
                edge_label: stat(&a.edge_label)?,
                edge_color: stat(&a.edge_color)?,
                vertex_label: stat(&a.vertex_label)?,
                vertex_color: stat(&a.vertex_color)?,
                truncate: a.vertex_label_trun,
            };
            let mut out = output(a.output.as_deref())?;
            let w = commands::graph_diff(
                [&traces[0], &traces[1]],
                [
                    side(a.keep_going_1, a.deduce_sibling_calls_1),
                    side(a.keep_going_2, a.deduce_sibling_calls_2),
                ],
                &style,
                &mut out,
            )
            .map_err(|e| anyhow::Error::from(e.in_file(&a.first)))?;
            out.flush()?;
            print_warnings(a.first.display(), &w[0]);
            print_warnings(a.second.display(), &w[1]);
        }
        XrayCommand::Convert(a) => {
            let names = load_names(&a.map.instr_map, a.demangle.on())?;
            let bytes = open_bytes(&a.input)?;
            let rel = releaser(&bytes, &a.input);
            let trace = open_trace(&a.input, &bytes, &*rel)?;
            let sort = match a.sort.as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                o => anyhow::bail!("-sort takes true or false, not {o:?}"),
            };
            let mut out = output(a.output.as_deref())?;
            let format = commands::ConvertFormat::parse(&a.output_format).with_context(|| {
                format!(
                    "unknown -output-format {:?} ({})",
                    a.output_format,
                    commands::ConvertFormat::NAMES
                )
            })?;
            let w = commands::convert(&trace, &names, format, a.symbolize, sort, &mut out);
            let w = in_file(w, &a.input)?;
            out.flush()?;
            print_warnings(a.input.display(), &w);
        }
        XrayCommand::FdrDump(a) => {
            let bytes = open_bytes(&a.input)?;
            let rel = releaser(&bytes, &a.input);
            let trace = open_trace(&a.input, &bytes, &*rel)?;
            let mut out = output(None)?;
            let res = tracekit_xray::fdr_dump::write_fdr_dump(&trace, a.verify, &mut out);
            out.flush()?;
            let w = in_file(res, &a.input)?;
            print_warnings(a.input.display(), &w);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The XRay dialect for `info`, `report` and `convert`.
pub struct Xray;

fn names_for(map: &Option<PathBuf>) -> Result<FunctionNames> {
    load_names(map, true)
}

impl Dialect for Xray {
    fn name(&self) -> &'static str {
        "LLVM XRay"
    }

    fn sniff(&self, input: &Input) -> bool {
        tracekit_xray::header::looks_like_xray(&input.head)
            || tracekit_xray::yaml_log::looks_like_yaml_log(&input.head)
    }

    fn info(&self, inputs: &[Input], args: &info::Args) -> Result<ExitCode> {
        let mut all = Vec::new();
        let mut out = super::stdout();
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
                all.push(v);
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
        if args.json {
            let v = if all.len() == 1 {
                all.remove(0)
            } else {
                serde_json::Value::Array(all)
            };
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn reports_as_data(&self) -> bool {
        true
    }

    fn reports(
        &self,
        inputs: &[Input],
        args: &report::Args,
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
        args: &convert::Args,
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
        args: &convert::Args,
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
            crate::formats::warn_row_stats(input, &stats);
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

fn convert_to(input: &Input, args: &convert::Args, to: Written) -> Result<ExitCode> {
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

#[cfg(test)]
mod tests {
    use super::normalise;
    use std::ffi::OsString;

    #[test]
    fn single_dash_long_options_become_double_dash() {
        let v: Vec<OsString> = [
            "account",
            "-sort=sum",
            "-m",
            "bin",
            "-top",
            "3",
            "-k",
            "--json",
            "-",
            "-instr_map=x",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let n: Vec<String> = normalise(v)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(
            n,
            [
                "account",
                "--sort=sum",
                "-m",
                "bin",
                "--top",
                "3",
                "-k",
                "--json",
                "-",
                "--instr_map=x"
            ]
        );
    }
}
