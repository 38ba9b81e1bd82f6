//! LLVM XRay: `tracekit xray extract|account|stack|graph|graph-diff|convert|fdr-dump`
//! with llvm-xray's flag names, turned into the typed options of
//! `tracekit_dialects::xray` (which does the work, and is the dialect
//! behind `info`, `report` and `convert`).
//!
//! llvm-xray spells long options with one dash (`-sort=sum`,
//! `-instr_map`); [`normalise`] rewrites those to clap's `--` form before
//! parsing, for this subcommand only.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use tracekit_dialects::xray;
use tracekit_xray::account::SortField;
use tracekit_xray::commands;
use tracekit_xray::graph::Stat;

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
        XrayCommand::Extract(a) => xray::extract(xray::ExtractOptions {
            binary: a.binary,
            symbolize: a.symbolize,
            demangle: a.demangle.on(),
            output: a.output,
        }),
        XrayCommand::Account(a) => {
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
            xray::account(xray::AccountOptions {
                input: a.input,
                instr_map: a.map.instr_map,
                args,
                json: a.json,
                output: a.output,
            })
        }
        XrayCommand::Stack(a) => {
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
            xray::stack(xray::StackOptions {
                inputs: a.inputs,
                instr_map: a.map.instr_map,
                args,
                output: a.output,
            })
        }
        XrayCommand::Graph(a) => {
            let args = commands::GraphArgs {
                keep_going: a.keep_going,
                deduce_sibling_calls: a.deduce_sibling_calls,
                edge_label: stat(&a.edge_label)?,
                edge_color: stat(&a.color_edges)?,
                vertex_label: stat(&a.vertex_label)?,
                vertex_color: stat(&a.color_vertices)?,
            };
            xray::graph(xray::GraphOptions {
                input: a.input,
                instr_map: a.map.instr_map,
                args,
                output: a.output,
            })
        }
        XrayCommand::GraphDiff(a) => {
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
            let sides = [
                side(a.keep_going_1, a.deduce_sibling_calls_1),
                side(a.keep_going_2, a.deduce_sibling_calls_2),
            ];
            xray::graph_diff(xray::GraphDiffOptions {
                first: a.first,
                second: a.second,
                sides,
                style,
                output: a.output,
            })
        }
        XrayCommand::Convert(a) => {
            let sort = match a.sort.as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                o => anyhow::bail!("-sort takes true or false, not {o:?}"),
            };
            let format = commands::ConvertFormat::parse(&a.output_format).with_context(|| {
                format!(
                    "unknown -output-format {:?} ({})",
                    a.output_format,
                    commands::ConvertFormat::NAMES
                )
            })?;
            xray::convert(xray::XrayConvertOptions {
                input: a.input,
                instr_map: a.map.instr_map,
                demangle: a.demangle.on(),
                format,
                symbolize: a.symbolize,
                sort,
                output: a.output,
            })
        }
        XrayCommand::FdrDump(a) => xray::fdr_dump(&a.input, a.verify),
    }
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
