//! SQL over tracekit's tables (`tracekit_parquet::schema`) with an
//! embedded Apache DataFusion.
//!
//! Two kinds of sources make one set of tables:
//! * traces, scanned in place: each table is a DataFusion streaming table
//!   with one partition per trace; running a partition starts the trace's
//!   producer (the dialect mapping, asked for that table only) on a thread
//!   of its own, which sends bounded batches through a channel of
//!   [`CHANNEL_BATCHES`]. A query that stops early (LIMIT) closes the
//!   channel and the producer stops.
//! * directories written by `tracekit convert --to parquet`, read with
//!   DataFusion's own Parquet reader (`DIR/<table>/*.parquet`).
//!
//! Every table exists in every query (empty where no source has rows), so
//! one query runs on any mix of inputs.
//!
//! Queries often come from elsewhere (pasted, built by a script), so the
//! engine is safe under hostile ones:
//! * **read only**: a query is planned, then checked with DataFusion's own
//!   [`SQLOptions`] (no DDL, no DML, no `COPY`, no `SET`): anything but a
//!   read is [`Error::ReadOnly`], naming the statement, and nothing runs;
//! * **bounded memory**: one memory pool of [`Options::memory_limit`]
//!   bytes; sorts and aggregations spill to a private directory (0700,
//!   removed with the engine), what cannot spill fails with DataFusion's
//!   "Resources exhausted" ([`Error::MemoryLimit`]);
//! * **damaged Parquet** gives an error naming the file, never a panic
//!   (`parquet.rs`, [`tracekit_parquet::read`], `guard.rs`).
//!
//! **Architecture Invariant:** no table is materialised by the engine
//! unless the query itself needs it (a sort, a join's build side).

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::ListingOptions;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement, WriteOp};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use futures::{SinkExt, StreamExt};

use tracekit_parquet::{BatchSink, Table};

mod guard;
pub mod memory;
mod parquet;

pub use guard::quiet as quiet_engine_panics;
pub use parquet::FileError;

/// Batches a producer may have in flight per partition.
pub const CHANNEL_BATCHES: usize = 4;

/// Rows per batch of a scanned trace.
pub const BATCH_ROWS: usize = 16 * 1024;

/// Writes one trace's rows into the sink (which says which tables it
/// wants). Errors are messages naming the input.
pub type Producer = Arc<dyn Fn(&mut dyn BatchSink) -> Result<(), String> + Send + Sync>;

/// One trace named for a query.
#[derive(Clone)]
pub struct TraceSource {
    pub name: String,
    pub produce: Producer,
}

impl std::fmt::Debug for TraceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceSource")
            .field("name", &self.name)
            .finish()
    }
}

#[derive(Debug)]
struct TracePartition {
    source: TraceSource,
    table: Table,
    schema: SchemaRef,
}

/// The producer's side of a partition's channel.
struct ChannelSink {
    table: Table,
    tx: futures::channel::mpsc::Sender<Result<RecordBatch, DataFusionError>>,
    closed: bool,
}

impl BatchSink for ChannelSink {
    fn wants(&self, table: Table) -> bool {
        table == self.table
    }

    fn batch(&mut self, table: Table, batch: RecordBatch) -> io::Result<()> {
        if table != self.table {
            return Ok(());
        }
        if futures::executor::block_on(self.tx.send(Ok(batch))).is_err() {
            self.closed = true;
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the query needs no more rows",
            ));
        }
        Ok(())
    }
}

impl PartitionStream for TracePartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (tx, rx) = futures::channel::mpsc::channel(CHANNEL_BATCHES);
        let source = self.source.clone();
        let table = self.table;
        let spawned = std::thread::Builder::new()
            .name(format!("sql:{}", table.name()))
            .spawn(move || {
                guard::mark_engine_thread();
                let mut sink = ChannelSink {
                    table,
                    tx: tx.clone(),
                    closed: false,
                };
                // A panic would end the partition early, as if the trace
                // had no more rows: it becomes the query's error instead.
                let got =
                    std::panic::catch_unwind(AssertUnwindSafe(|| (source.produce)(&mut sink)));
                let err = match got {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(p) => Some(format!(
                        "{}: internal error reading this input: {}",
                        source.name,
                        guard::take_last().unwrap_or_else(|| parquet::panic_message(&*p))
                    )),
                };
                if let Some(e) = err {
                    if !sink.closed {
                        let mut tx = tx;
                        let _ = futures::executor::block_on(
                            tx.send(Err(DataFusionError::Execution(e))),
                        );
                    }
                }
            });
        let rx: futures::stream::BoxStream<'static, _> = match spawned {
            Ok(_) => Box::pin(rx),
            Err(e) => Box::pin(futures::stream::once(async move {
                Err(DataFusionError::Execution(format!(
                    "cannot start a thread: {e}"
                )))
            })),
        };
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), rx))
    }
}

/// How to print results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An aligned text table.
    Table,
    Csv,
    /// One JSON object per row, one per line.
    Json,
}

/// An error of the engine, with DataFusion's message; an input's own
/// error (a producer's, which names the file) is shown as it is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}", datafusion_message(.0))]
    DataFusion(#[from] DataFusionError),
    #[error("{0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The query would change something (`COPY`, `CREATE`, `INSERT`,
    /// `DROP`, `SET`, ...): refused before anything ran. A usage error.
    #[error(
        "{statement}: refused: tracekit sql only reads (SELECT, WITH, EXPLAIN, SHOW, DESCRIBE); \
         nothing was run"
    )]
    ReadOnly {
        /// The statement's kind, in SQL's words (`COPY`, `CREATE EXTERNAL TABLE`).
        statement: String,
    },
    /// The query needed more memory than the limit and could not spill.
    #[error(
        "{message}\nhint: the query needs more memory than --memory-limit allows ({}): raise \
         it (e.g. --memory-limit 8G, or a share of the machine's memory such as 75%), or make \
         the query hold less at once (filter, aggregate or select fewer columns before a join, \
         a sort or DISTINCT)",
        memory::human(*.limit)
    )]
    MemoryLimit { message: String, limit: u64 },
    /// An input file is damaged or is not one of tracekit's tables.
    #[error("{0}")]
    File(FileError),
    /// The engine panicked, and no input file was found at fault.
    #[error("internal error in the query engine: {0}")]
    Panic(String),
}

impl Error {
    /// Whether the output went away (`| head`): not an error of the query.
    pub fn is_broken_pipe(&self) -> bool {
        fn arrow(e: &arrow_schema::ArrowError) -> bool {
            matches!(e, arrow_schema::ArrowError::IoError(_, io) if io.kind() == io::ErrorKind::BrokenPipe)
        }
        match self {
            Error::Io(e) => e.kind() == io::ErrorKind::BrokenPipe,
            Error::Arrow(e) => arrow(e),
            Error::DataFusion(e) => match e.find_root() {
                DataFusionError::IoError(io) => io.kind() == io::ErrorKind::BrokenPipe,
                DataFusionError::ArrowError(a, _) => arrow(a),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether this is a usage error (exit code 2): a statement that is
    /// not a read.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::ReadOnly { .. })
    }
}

/// DataFusion's message, without the "Execution error: " it puts before
/// what a producer said (`FILE: what is wrong`).
fn datafusion_message(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::Execution(msg) => msg.clone(),
        _ => e.strip_backtrace(),
    }
}

/// How the engine runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Bytes the query's operators may hold (see [`memory`]); sorts and
    /// aggregations spill beyond it, the rest fails.
    pub memory_limit: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            memory_limit: memory::default_limit(),
        }
    }
}

/// The engine: sources, then queries.
pub struct Engine {
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    traces: Vec<TraceSource>,
    parquet: Vec<PathBuf>,
    registered: bool,
    options: Options,
    /// The Parquet files the current query opened.
    opened: Arc<parquet::Opened>,
    /// Where sorts and aggregations spill: private, removed with the engine.
    spill: tempfile::TempDir,
}

/// Whether `dir` holds tables written by `convert --to parquet`.
pub fn is_parquet_dir(dir: &Path) -> bool {
    Table::ALL.iter().any(|t| {
        std::fs::read_dir(dir.join(t.name())).is_ok_and(|mut rd| {
            rd.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet")))
        })
    })
}

/// What the default merge reservation of a spilling sort is (DataFusion's).
const SORT_SPILL_RESERVATION: u64 = 10 << 20;

impl Engine {
    /// An engine with the default [`Options`].
    pub fn new() -> Result<Engine, Error> {
        Engine::with_options(Options::default())
    }

    pub fn with_options(options: Options) -> Result<Engine, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tracekit-sql")
            .on_thread_start(guard::mark_engine_thread)
            .enable_all()
            .build()?;
        let mut spill = tempfile::Builder::new();
        spill.prefix("tracekit-sql-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            spill.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let tmp = std::env::temp_dir();
        let spill = spill.tempdir_in(&tmp).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: cannot create a spill directory: {e}", tmp.display()),
            )
        })?;
        let limit = usize::try_from(options.memory_limit).unwrap_or(usize::MAX);
        let pool = TrackConsumersPool::new(
            FairSpillPool::new(limit),
            NonZeroUsize::new(5).unwrap_or(NonZeroUsize::MIN),
        );
        let env = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(pool))
            .with_temp_file_path(spill.path())
            .build_arc()?;
        let mut config = SessionConfig::new()
            .with_information_schema(true)
            .with_batch_size(BATCH_ROWS);
        // A spilling sort first reserves room for its merge, per partition:
        // DataFusion's 10 MiB each, less where that would take more than a
        // quarter of a small limit.
        let partitions = config.target_partitions().max(1) as u64;
        let reservation = (options.memory_limit / (4 * partitions)).min(SORT_SPILL_RESERVATION);
        config = config.with_sort_spill_reservation_bytes(reservation as usize);
        // tracekit writes neither page indexes nor bloom filters, and the
        // footers the engine sees have them removed (parquet.rs).
        config.options_mut().execution.parquet.enable_page_index = false;
        config.options_mut().execution.parquet.bloom_filter_on_read = false;
        Ok(Engine {
            ctx: SessionContext::new_with_config_rt(config, env),
            runtime,
            traces: Vec::new(),
            parquet: Vec::new(),
            registered: false,
            options,
            opened: Arc::default(),
            spill,
        })
    }

    /// The directory the engine spills to (under the system's temporary
    /// directory, mode 0700, removed when the engine is dropped).
    pub fn spill_dir(&self) -> &Path {
        self.spill.path()
    }

    pub fn add_trace(&mut self, source: TraceSource) {
        self.traces.push(source);
    }

    /// A directory with `<table>/*.parquet` (see [`is_parquet_dir`]).
    pub fn add_parquet_dir(&mut self, dir: &Path) {
        self.opened.add_dir(dir);
        self.parquet.push(dir.to_path_buf());
    }

    fn register(&mut self) -> Result<(), Error> {
        if self.registered {
            return Ok(());
        }
        self.registered = true;
        for table in Table::ALL {
            let schema = table.schema();
            let mut parts: Vec<String> = Vec::new();
            if !self.traces.is_empty() {
                let partitions: Vec<Arc<dyn PartitionStream>> = self
                    .traces
                    .iter()
                    .map(|s| {
                        Arc::new(TracePartition {
                            source: s.clone(),
                            table,
                            schema: schema.clone(),
                        }) as Arc<dyn PartitionStream>
                    })
                    .collect();
                let name = format!("__{}_traces", table.name());
                self.ctx.register_table(
                    name.as_str(),
                    Arc::new(StreamingTable::try_new(schema.clone(), partitions)?),
                )?;
                parts.push(name);
            }
            for (i, dir) in self.parquet.iter().enumerate() {
                let tdir = dir.join(table.name());
                if !tdir.is_dir() {
                    continue;
                }
                let name = format!("__{}_parquet{i}", table.name());
                let path = format!("{}/", tdir.display());
                let format =
                    ParquetFormat::new().with_options(self.ctx.copied_table_options().parquet);
                let format = parquet::Format::new(format, table, self.opened.clone());
                let opts = ListingOptions::new(Arc::new(format)).with_file_extension(".parquet");
                self.runtime.block_on(self.ctx.register_listing_table(
                    name.as_str(),
                    &path,
                    opts,
                    Some(schema.clone()),
                    None,
                ))?;
                parts.push(name);
            }
            match parts.len() {
                0 => {
                    self.ctx.register_table(
                        table.name(),
                        Arc::new(MemTable::try_new(schema.clone(), vec![vec![]])?),
                    )?;
                }
                _ => {
                    let cols: Vec<String> =
                        table.columns().map(|c| format!("\"{}\"", c.name)).collect();
                    let cols = cols.join(", ");
                    let union: Vec<String> = parts
                        .iter()
                        .map(|p| format!("SELECT {cols} FROM \"{p}\""))
                        .collect();
                    let view = format!(
                        "CREATE VIEW \"{}\" AS {}",
                        table.name(),
                        union.join(" UNION ALL ")
                    );
                    // The engine's own statement: not through the
                    // read-only check that user queries go through.
                    self.runtime.block_on(self.ctx.sql(&view))?;
                }
            }
        }
        Ok(())
    }

    /// Runs `sql` and hands each result batch to `each` as it comes.
    ///
    /// The query is planned, then checked with DataFusion's [`SQLOptions`]
    /// (what `SessionContext::sql_with_options` does), so that a refusal
    /// is [`Error::ReadOnly`], typed, rather than a planning error's text.
    pub fn query_each(
        &mut self,
        sql: &str,
        mut each: impl FnMut(&SchemaRef, RecordBatch) -> Result<(), Error>,
    ) -> Result<SchemaRef, Error> {
        self.register()?;
        self.opened.clear();
        let ctx = self.ctx.clone();
        let run = async move {
            let plan = ctx.state().create_logical_plan(sql).await?;
            if read_only().verify_plan(&plan).is_err() {
                return Err(Error::ReadOnly {
                    statement: statement_kind(&plan),
                });
            }
            let df = ctx.execute_logical_plan(plan).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let mut stream = df.execute_stream().await?;
            while let Some(batch) = stream.next().await {
                each(&schema, batch?)?;
            }
            Ok(schema)
        };
        let got = {
            let _inside = guard::Inside::enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| self.runtime.block_on(run)))
        };
        let result = match got {
            Ok(r) => r,
            Err(p) => Err(Error::Panic(
                guard::take_last().unwrap_or_else(|| parquet::panic_message(&*p)),
            )),
        };
        result.map_err(|e| self.explain(e))
    }

    /// `e` as the user is best told it: a file a reader named, the file a
    /// decoding error or panic came from (found by reading the Parquet
    /// files the query opened, the latest first), the memory limit.
    fn explain(&self, e: Error) -> Error {
        if e.is_broken_pipe() {
            return e;
        }
        let from_files = match &e {
            Error::Panic(_) => true,
            Error::DataFusion(d) => {
                if let Some(f) = parquet::file_error(d) {
                    return Error::File(f);
                }
                match d.find_root() {
                    DataFusionError::ResourcesExhausted(_) => {
                        return Error::MemoryLimit {
                            message: d.strip_backtrace(),
                            limit: self.options.memory_limit,
                        };
                    }
                    DataFusionError::ParquetError(_)
                    | DataFusionError::ArrowError(..)
                    | DataFusionError::External(_)
                    | DataFusionError::ObjectStore(_)
                    | DataFusionError::IoError(_) => true,
                    _ => false,
                }
            }
            _ => false,
        };
        if from_files {
            if let Some(f) = self.find_damaged() {
                return Error::File(f);
            }
        }
        e
    }

    /// The first of the Parquet files the last query opened (the latest
    /// first) that does not read whole, with what is wrong.
    fn find_damaged(&self) -> Option<FileError> {
        let _inside = guard::Inside::enter();
        for (path, table) in self.opened.latest_first() {
            let file = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) => {
                    return Some(FileError {
                        file: path,
                        message: e.to_string(),
                    })
                }
            };
            let got = std::panic::catch_unwind(AssertUnwindSafe(|| {
                tracekit_parquet::read::check(file, Some(table))
            }));
            let message = match got {
                Ok(Ok(_)) => continue,
                Ok(Err(m)) => format!("damaged Parquet file: {m}"),
                Err(p) => format!(
                    "damaged Parquet file: the reader failed: {}",
                    guard::take_last().unwrap_or_else(|| parquet::panic_message(&*p))
                ),
            };
            return Some(FileError {
                file: path,
                message,
            });
        }
        None
    }

    /// Runs `sql` and collects the result.
    pub fn query(&mut self, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>), Error> {
        let mut all = Vec::new();
        let schema = self.query_each(sql, |_, b| {
            all.push(b);
            Ok(())
        })?;
        Ok((schema, all))
    }

    /// Runs `sql` and prints the result in `format`: CSV and JSON stream,
    /// the table waits for every row (its columns are aligned).
    pub fn print(&mut self, sql: &str, format: Format, out: &mut dyn Write) -> Result<(), Error> {
        use datafusion::arrow::csv::WriterBuilder;
        use datafusion::arrow::json::LineDelimitedWriter;
        match format {
            Format::Table => {
                let (schema, batches) = self.query(sql)?;
                let text = if batches.is_empty() {
                    datafusion::arrow::util::pretty::pretty_format_batches(&[
                        RecordBatch::new_empty(schema),
                    ])?
                } else {
                    datafusion::arrow::util::pretty::pretty_format_batches(&batches)?
                };
                writeln!(out, "{text}")?;
            }
            Format::Csv => {
                let mut w = WriterBuilder::new().with_header(true).build(&mut *out);
                let schema = self.query_each(sql, |_, b| Ok(w.write(&b)?))?;
                drop(w);
                let _ = schema;
            }
            Format::Json => {
                let mut w = LineDelimitedWriter::new(&mut *out);
                self.query_each(sql, |_, b| Ok(w.write(&b)?))?;
                w.finish()?;
            }
        }
        out.flush()?;
        Ok(())
    }
}

/// What user queries may do: read. DataFusion's own check, on the plan.
fn read_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// The first statement in `plan` that [`read_only`] refuses, in SQL's
/// words.
fn statement_kind(plan: &LogicalPlan) -> String {
    let mut kind: Option<&'static str> = None;
    let _ = plan.apply_with_subqueries(|p| {
        kind = match p {
            LogicalPlan::Ddl(d) => Some(match d {
                DdlStatement::CreateExternalTable(_) => "CREATE EXTERNAL TABLE",
                DdlStatement::CreateMemoryTable(_) => "CREATE TABLE",
                DdlStatement::CreateView(_) => "CREATE VIEW",
                DdlStatement::CreateCatalogSchema(_) => "CREATE SCHEMA",
                DdlStatement::CreateCatalog(_) => "CREATE DATABASE",
                DdlStatement::CreateIndex(_) => "CREATE INDEX",
                DdlStatement::DropTable(_) => "DROP TABLE",
                DdlStatement::DropView(_) => "DROP VIEW",
                DdlStatement::DropCatalogSchema(_) => "DROP SCHEMA",
                DdlStatement::CreateFunction(_) => "CREATE FUNCTION",
                DdlStatement::DropFunction(_) => "DROP FUNCTION",
            }),
            LogicalPlan::Dml(d) => Some(match &d.op {
                WriteOp::Insert(datafusion::logical_expr::dml::InsertOp::Append) => "INSERT INTO",
                WriteOp::Insert(datafusion::logical_expr::dml::InsertOp::Overwrite) => {
                    "INSERT OVERWRITE"
                }
                WriteOp::Insert(datafusion::logical_expr::dml::InsertOp::Replace) => "REPLACE INTO",
                WriteOp::Delete => "DELETE",
                WriteOp::Update => "UPDATE",
                WriteOp::Ctas => "CREATE TABLE AS",
                WriteOp::Truncate => "TRUNCATE",
                WriteOp::MergeInto(_) => "MERGE INTO",
                _ => "a statement that writes",
            }),
            LogicalPlan::Copy(_) => Some("COPY"),
            LogicalPlan::Statement(s) => Some(match s {
                Statement::TransactionStart(_) => "START TRANSACTION",
                Statement::TransactionEnd(_) => "COMMIT or ROLLBACK",
                Statement::SetVariable(_) => "SET",
                Statement::ResetVariable(_) => "RESET",
                Statement::Prepare(_) => "PREPARE",
                Statement::Execute(_) => "EXECUTE",
                Statement::Deallocate(_) => "DEALLOCATE",
            }),
            _ => None,
        };
        Ok(if kind.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    kind.unwrap_or("this statement").to_string()
}

/// What `tracekit sql --schema` prints: every table and column.
pub fn write_schema(out: &mut dyn Write) -> io::Result<()> {
    for t in Table::ALL {
        writeln!(out, "{}: {}", t.name(), t.doc())?;
        for c in t.columns() {
            writeln!(
                out,
                "  {:<18} {:<20} {}{}",
                c.name,
                c.ty.sql_name(),
                c.doc,
                if c.nullable { " (may be null)" } else { "" }
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The schema as JSON (`--schema --format json`).
pub fn schema_json() -> String {
    let tables: Vec<serde_json::Value> = Table::ALL
        .iter()
        .map(|t| {
            let columns: Vec<serde_json::Value> = t
                .columns()
                .map(|c| {
                    serde_json::json!({
                        "name": c.name,
                        "type": c.ty.sql_name(),
                        "nullable": c.nullable,
                        "doc": c.doc,
                    })
                })
                .collect();
            serde_json::json!({ "table": t.name(), "doc": t.doc(), "columns": columns })
        })
        .collect();
    serde_json::Value::Array(tables).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    fn corpus(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/corpus/parquet")
            .join(rel)
    }

    fn engine(limit: u64) -> Engine {
        quiet_engine_panics();
        Engine::with_options(Options {
            memory_limit: limit,
        })
        .expect("engine")
    }

    /// The query's rows as text, one line per row.
    fn rows(e: &mut Engine, sql: &str) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        e.print(sql, Format::Csv, &mut out)?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect())
    }

    #[test]
    fn user_sql_only_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("copied.csv");
        let mut e = engine(256 << 20);
        // The tables are views over the Parquet files: the engine's own
        // CREATE VIEW still runs.
        e.add_parquet_dir(&corpus("written"));
        assert_eq!(rows(&mut e, "SELECT count(*) FROM threads").unwrap(), ["7"]);
        let refused = [
            (
                format!(
                    "COPY (SELECT 1 AS a) TO '{}' STORED AS CSV",
                    target.display()
                ),
                "COPY",
            ),
            (
                "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION '/etc/passwd'".into(),
                "CREATE EXTERNAL TABLE",
            ),
            (
                "INSERT INTO threads SELECT * FROM threads".into(),
                "INSERT INTO",
            ),
            ("CREATE VIEW v AS SELECT 1".into(), "CREATE VIEW"),
            ("CREATE TABLE t AS SELECT 1".into(), "CREATE TABLE"),
            ("DROP VIEW threads".into(), "DROP VIEW"),
            ("SET datafusion.execution.batch_size = 1".into(), "SET"),
            (
                format!("EXPLAIN ANALYZE COPY (SELECT 1) TO '{}'", target.display()),
                "COPY",
            ),
        ];
        for (sql, kind) in refused {
            match rows(&mut e, &sql) {
                Err(err @ Error::ReadOnly { .. }) => {
                    assert!(err.is_usage());
                    assert!(
                        err.to_string().starts_with(&format!("{kind}: refused: ")),
                        "{sql}: {err}"
                    );
                }
                other => panic!("{sql}: {other:?}"),
            }
            assert!(!target.exists(), "{sql} wrote {}", target.display());
        }
        // The views are still there, unchanged.
        assert_eq!(rows(&mut e, "SELECT count(*) FROM threads").unwrap(), ["7"]);
        for sql in [
            "WITH t AS (SELECT pid FROM threads) SELECT count(DISTINCT pid) FROM t",
            "EXPLAIN SELECT * FROM threads",
            "SHOW TABLES",
            "DESCRIBE threads",
            "SHOW ALL",
        ] {
            assert!(rows(&mut e, sql).is_ok_and(|r| !r.is_empty()), "{sql}");
        }
    }

    #[test]
    fn a_query_that_cannot_fit_fails_with_a_hint() {
        let mut e = engine(1 << 20);
        let err = rows(
            &mut e,
            "SELECT max(a.value + b.value) FROM generate_series(1, 200000) a \
             CROSS JOIN generate_series(1, 3) b",
        )
        .unwrap_err();
        assert!(matches!(err, Error::MemoryLimit { limit, .. } if limit == 1 << 20));
        let msg = err.to_string();
        assert!(msg.starts_with("Resources exhausted: "), "{msg}");
        assert!(
            msg.contains("\nhint: ") && msg.contains("--memory-limit"),
            "{msg}"
        );
        assert!(!err.is_usage());
    }

    #[test]
    fn a_sort_spills_to_a_private_directory_removed_afterwards() {
        let mut e = engine(4 << 20);
        let spill = e.spill_dir().to_path_buf();
        assert!(spill.starts_with(std::env::temp_dir()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&spill).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        // 300 000 rows sorted in full (a window over all of them): more
        // than 4 MiB, so the sort spills, and the answer is still right.
        let q = "SELECT count(*), sum(x) FROM (SELECT value AS x, \
                 row_number() OVER (ORDER BY value DESC) AS r FROM generate_series(1, 300000)) \
                 WHERE r <= 3";
        assert_eq!(rows(&mut e, q).unwrap(), ["3,899997"]);
        let plan = rows(&mut e, &format!("EXPLAIN ANALYZE {q}"))
            .unwrap()
            .join("\n");
        let spills: u64 = plan
            .split("spill_count=")
            .skip(1)
            .filter_map(|s| {
                s.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .sum();
        assert!(spills > 0, "{plan}");
        drop(e);
        assert!(!spill.exists(), "{} left behind", spill.display());
    }

    /// Each copy of a written table with one bit flipped, every few bytes
    /// across the file: the query answers or fails naming the file, never
    /// panics, never fails without naming it.
    #[test]
    fn damaged_parquet_is_named_never_a_panic() {
        let original = std::fs::read(corpus("written/threads/event.jsonl.parquet")).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        std::fs::create_dir_all(dir.join("threads")).unwrap();
        let file = dir.join("threads/flipped.parquet");
        let (mut answered, mut named) = (0, 0);
        for pos in (0..original.len()).step_by(29) {
            let mut bytes = original.clone();
            bytes[pos] ^= 1 << (pos % 8);
            std::fs::write(&file, &bytes).unwrap();
            let mut e = engine(64 << 20);
            e.add_parquet_dir(&dir);
            match rows(&mut e, "SELECT * FROM threads") {
                Ok(_) => answered += 1,
                Err(Error::File(f)) => {
                    assert_eq!(f.file, file, "byte {pos}: {}", f.message);
                    named += 1;
                }
                Err(other) => panic!("byte {pos}: not named: {other}"),
            }
        }
        assert!(
            answered > 0 && named > 0,
            "{answered} answered, {named} named"
        );
    }

    #[test]
    fn the_regression_samples_read_or_name_the_file() {
        // A damaged embedded Arrow schema: not read at all, the file reads.
        let mut e = engine(64 << 20);
        e.add_parquet_dir(&corpus("damaged-arrow-schema"));
        assert_eq!(
            rows(&mut e, "SELECT count(*) FROM processes").unwrap(),
            ["6"]
        );
        assert_eq!(
            rows(&mut e, "SELECT count(DISTINCT file) FROM processes").unwrap(),
            ["1"]
        );
        // A page that panics the parquet crate's decoder.
        let mut e = engine(64 << 20);
        e.add_parquet_dir(&corpus("damaged-page"));
        match rows(&mut e, "SELECT sum(pid) FROM threads") {
            Err(Error::File(f)) => {
                assert!(f.file.ends_with("damaged-page/threads/event.jsonl.parquet"));
                assert!(
                    f.message.starts_with("damaged Parquet file: "),
                    "{}",
                    f.message
                );
            }
            other => panic!("{other:?}"),
        }
    }

    /// A producer that panics fails the query, naming its input; it does
    /// not end its partition early as if the trace were shorter.
    #[test]
    fn a_panicking_producer_is_an_error_not_fewer_rows() {
        let mut e = engine(64 << 20);
        e.add_trace(TraceSource {
            name: "broken.trace".into(),
            produce: Arc::new(|_sink: &mut dyn BatchSink| panic!("boom")),
        });
        let err = e.query("SELECT count(*) FROM slices").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("broken.trace: internal error reading this input: boom"),
            "{msg}"
        );
        let (_, batches) = e.query("SELECT 1 AS one").unwrap();
        assert_eq!(
            batches[0]
                .column(0)
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(0),
            1
        );
    }
}
