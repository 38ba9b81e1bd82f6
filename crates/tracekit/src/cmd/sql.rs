//! `tracekit sql`: SQL over traces and Parquet directories, with the
//! embedded DataFusion of `tracekit-sql`; and what `convert --to parquet`
//! shares with it (which inputs, how one input's rows are produced).
//!
//! The engine is the `sql` cargo feature (a default one): a build without it
//! keeps the command, which then says how to get it (`NOT_BUILT`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
#[cfg(feature = "sql")]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(feature = "sql")]
use std::sync::Arc;
use tracekit_dialects::options::ConvertOptions;

use anyhow::Result;
use tracekit_parquet::{BatchSink, Tables};
#[cfg(feature = "sql")]
use tracekit_sql::{Engine, Format, TraceSource};

#[cfg(feature = "sql")]
use crate::cmd::output;
use crate::formats::{self, Dialect};
use tracekit_dialects::input::{dir_files, Input};

/// What `tracekit sql` says in a build without the `sql` feature.
#[cfg(not(feature = "sql"))]
pub const NOT_BUILT: &str = "This tracekit was built without its SQL engine \
(the `sql` cargo feature). Build it with the engine (the default features):
  cargo install --path crates/tracekit
or add it to a build without default features:
  cargo install --path crates/tracekit --no-default-features --features sql
(`tracekit convert --to parquet` works in this build: DuckDB, Spark or DataFusion read its tables.)";

/// A build without the engine takes any arguments and says how to get it.
#[cfg(not(feature = "sql"))]
#[derive(clap::Args, Debug)]
#[command(after_help = NOT_BUILT)]
pub struct Args {
    /// The arguments of `tracekit sql` (a query, then traces and Parquet
    /// directories; --schema): not available in this build.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<std::ffi::OsString>,
}

#[cfg(not(feature = "sql"))]
pub fn run(_args: Args) -> Result<ExitCode> {
    eprintln!("tracekit: sql: {NOT_BUILT}");
    Ok(ExitCode::from(2))
}

#[cfg(feature = "sql")]
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Tables (`tracekit sql --schema` lists every column; docs/sql.md explains them):\n  processes, threads, slices, instants, counters, flows     every dialect, from the timeline\n  trace2_processes                                         one row per git process\n  build_processes                                          build traces: compile units, outputs\n  xray_calls                                               XRay calls with function ids and names\n  rtrace_allocations, rtrace_backtraces                    sp-rtrace allocations, leaks, backtraces\n\nInputs are traces of any dialect, scanned in place (nothing is converted first), and\ndirectories written by `tracekit convert --to parquet -o DIR`, read as they are. Every\ntable exists in every query; it is empty where no input has rows for it.\n\nQueries only read: SELECT, WITH, EXPLAIN, SHOW and DESCRIBE run; COPY, CREATE, INSERT,\nDROP, SET and the like are refused (exit 2) and nothing is written.\n\nExamples:\n  tracekit sql 'SELECT function, count(*) AS calls, sum(dur_ns)/1e9 AS total_s\n                FROM xray_calls GROUP BY function ORDER BY total_s DESC LIMIT 10' trace.xray -m ./app\n  tracekit sql 'SELECT command, count(*), median(elapsed_ns)/1e9 AS p50_s, max(elapsed_ns)/1e9 AS max_s\n                FROM trace2_processes GROUP BY command ORDER BY 2 DESC' /var/log/git-trace2/\n  tracekit sql --format csv 'SELECT source, dur_ns FROM build_processes WHERE is_compile\n                ORDER BY dur_ns DESC LIMIT 20' build.kwinject\n  tracekit convert fleet/*.xray --to parquet -o pq/ && tracekit sql 'SELECT count(*) FROM slices' pq/\n  tracekit sql --memory-limit 2G 'SELECT * FROM slices ORDER BY dur_ns DESC' pq/ > slowest.txt\n  tracekit sql --schema"
)]
pub struct Args {
    /// The query (DataFusion's SQL dialect: PostgreSQL-like).
    #[arg(value_name = "SQL", required_unless_present = "schema")]
    pub query: Option<String>,
    /// Traces (files or directories of traces) and Parquet directories.
    #[arg(value_name = "FILE|DIR", required_unless_present = "schema")]
    pub inputs: Vec<PathBuf>,
    /// Output format (json: one object per line).
    #[arg(long, value_enum, default_value_t = OutputFormat::Table, value_name = "FORMAT")]
    pub format: OutputFormat,
    /// List the tables and their columns (with --format json: as JSON).
    #[arg(long)]
    pub schema: bool,
    /// Write here instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The instrumented binary, to name XRay function ids.
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
    /// Memory the query may hold (sorts, joins, aggregations): a size
    /// (512M, 2G) or a share of the machine's memory (25%). Sorts and
    /// aggregations spill to a private directory under $TMPDIR beyond it;
    /// what cannot spill fails with a hint. Default: half of the memory
    /// (or of the cgroup's limit, if lower).
    #[arg(long, value_name = "SIZE", value_parser = tracekit_sql::memory::parse_limit)]
    pub memory_limit: Option<u64>,
}

/// `--format`.
#[cfg(feature = "sql")]
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// An aligned text table.
    Table,
    Csv,
    /// One JSON object per row, one per line.
    Json,
}

#[cfg(feature = "sql")]
pub fn run(args: Args) -> Result<ExitCode> {
    let format = match args.format {
        OutputFormat::Table => Format::Table,
        OutputFormat::Csv => Format::Csv,
        OutputFormat::Json => Format::Json,
    };
    let mut out = output(args.output.as_deref())?;
    if args.schema {
        if format == Format::Json {
            writeln!(out, "{}", tracekit_sql::schema_json())?;
        } else {
            tracekit_sql::write_schema(&mut out)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(query) = args.query.as_deref() else {
        eprintln!("tracekit: sql needs a query (or --schema)");
        return Ok(ExitCode::from(2));
    };
    let mut options = tracekit_sql::Options::default();
    if let Some(limit) = args.memory_limit {
        options.memory_limit = limit;
    }
    // A panic inside the engine becomes the query's error (naming the
    // file at fault), not a crash report.
    tracekit_sql::quiet_engine_panics();
    let mut engine = Engine::with_options(options)?;
    let convert_args = convert_args(args.instr_map.clone());
    // Set when a trace had unreadable records (warned on stderr as they
    // are met): the answer is printed, and the exit code says it is partial.
    let unreadable = Arc::new(AtomicBool::new(false));
    for path in &args.inputs {
        if path.is_dir() && tracekit_sql::is_parquet_dir(path) {
            engine.add_parquet_dir(path);
            continue;
        }
        // An input of no known format fails here, naming it, whether or
        // not the query reads a table it would fill.
        for (p, dialect) in expand_inputs(std::slice::from_ref(path))? {
            let a = convert_args.clone();
            let file = p.clone();
            let unreadable = unreadable.clone();
            engine.add_trace(TraceSource {
                name: p.display().to_string(),
                produce: Arc::new(move |sink: &mut dyn BatchSink| {
                    let code = produce_from(&file, dialect, &a, sink, tracekit_sql::BATCH_ROWS)
                        .map_err(|e| format!("{e:#}"))?;
                    if code != ExitCode::SUCCESS {
                        unreadable.store(true, Ordering::Relaxed);
                    }
                    Ok(())
                }),
            });
        }
    }
    match engine.print(query, format, &mut out) {
        Ok(()) if unreadable.load(Ordering::Relaxed) => Ok(ExitCode::from(1)),
        Ok(()) => Ok(ExitCode::SUCCESS),
        // A broken pipe (`| head`) is not an error.
        Err(e) if e.is_broken_pipe() => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("tracekit: sql: {e}");
            Ok(ExitCode::from(if e.is_usage() { 2 } else { 1 }))
        }
    }
}

#[cfg(feature = "sql")]
use std::io::Write as _;

/// The arguments the dialects' table producers read (`-m`).
#[cfg(feature = "sql")]
pub fn convert_args(instr_map: Option<PathBuf>) -> ConvertOptions {
    ConvertOptions {
        input: PathBuf::from("-"),
        to: "parquet".into(),
        instr_map,
        ..ConvertOptions::default()
    }
}

/// The inputs to read, opened and detected: files as they are; a
/// directory of Git Trace2 files as one input (sessions span its files);
/// any other directory as its files, one by one. Standard input cannot be
/// read twice, so it is refused.
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, &'static dyn Dialect)>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            anyhow::bail!("<stdin>: tables are written from files (name the file or directory)");
        }
        let input = Input::open(p)?;
        let d = formats::detect(&input)?;
        // Trace2 directories and ninja build directories are read whole.
        let whole = d.name() == tracekit_dialects::trace2::Trace2.name()
            || d.name() == tracekit_dialects::ninja::NinjaLog.name();
        if input.is_dir && !whole {
            for f in dir_files(p)? {
                let d = formats::detect(&Input::open(&f)?)?;
                out.push((f, d));
            }
        } else {
            out.push((p.clone(), d));
        }
    }
    Ok(out)
}

/// Writes the tables of the trace at `path` (of `dialect`) that `sink` wants.
pub fn produce_from(
    path: &Path,
    dialect: &dyn Dialect,
    args: &ConvertOptions,
    sink: &mut dyn BatchSink,
    batch_rows: usize,
) -> Result<ExitCode> {
    let input = Input::open(path)?;
    let mut tables = Tables::new(sink, batch_rows);
    let code = dialect.tables(&input, args, &mut tables)?;
    tables.flush()?;
    Ok(code)
}
