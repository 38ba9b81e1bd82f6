//! `tracekit sql`: its flags (the work is `tracekit_dialects::sql`, SQL
//! over traces and Parquet directories with the embedded DataFusion of
//! `tracekit-sql`).
//!
//! The engine is the `sql` cargo feature (a default one): a build without it
//! keeps the command, which then says how to get it (`NOT_BUILT`).

#[cfg(feature = "sql")]
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

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
    use tracekit_sql::Format;
    tracekit_dialects::sql::run(&tracekit_dialects::sql::SqlOptions {
        query: args.query,
        inputs: args.inputs,
        format: match args.format {
            OutputFormat::Table => Format::Table,
            OutputFormat::Csv => Format::Csv,
            OutputFormat::Json => Format::Json,
        },
        schema: args.schema,
        output: args.output,
        instr_map: args.instr_map,
        memory_limit: args.memory_limit,
    })
}
