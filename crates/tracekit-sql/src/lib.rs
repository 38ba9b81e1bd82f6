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
//! **Architecture Invariant:** no table is materialised by the engine
//! unless the query itself needs it (a sort, a join's build side).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use futures::{SinkExt, StreamExt};

use tracekit_parquet::{BatchSink, Table};

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
                let mut sink = ChannelSink {
                    table,
                    tx: tx.clone(),
                    closed: false,
                };
                if let Err(e) = (source.produce)(&mut sink) {
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
        }
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

/// The engine: sources, then queries.
pub struct Engine {
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    traces: Vec<TraceSource>,
    parquet: Vec<PathBuf>,
    registered: bool,
}

/// Whether `dir` holds tables written by `convert --to parquet`.
pub fn is_parquet_dir(dir: &Path) -> bool {
    Table::ALL.iter().any(|t| {
        std::fs::read_dir(dir.join(t.name())).is_ok_and(|mut rd| {
            rd.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet")))
        })
    })
}

impl Engine {
    pub fn new() -> Result<Engine, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let config = SessionConfig::new()
            .with_information_schema(true)
            .with_batch_size(BATCH_ROWS);
        Ok(Engine {
            ctx: SessionContext::new_with_config(config),
            runtime,
            traces: Vec::new(),
            parquet: Vec::new(),
            registered: false,
        })
    }

    pub fn add_trace(&mut self, source: TraceSource) {
        self.traces.push(source);
    }

    /// A directory with `<table>/*.parquet` (see [`is_parquet_dir`]).
    pub fn add_parquet_dir(&mut self, dir: &Path) {
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
                let opts = ParquetReadOptions::default().schema(&schema);
                self.runtime
                    .block_on(self.ctx.register_parquet(name.as_str(), &path, opts))?;
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
                    self.runtime.block_on(self.ctx.sql(&view))?;
                }
            }
        }
        Ok(())
    }

    /// Runs `sql` and hands each result batch to `each` as it comes.
    pub fn query_each(
        &mut self,
        sql: &str,
        mut each: impl FnMut(&SchemaRef, RecordBatch) -> Result<(), Error>,
    ) -> Result<SchemaRef, Error> {
        self.register()?;
        let ctx = self.ctx.clone();
        self.runtime.block_on(async move {
            let df = ctx.sql(sql).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let mut stream = df.execute_stream().await?;
            while let Some(batch) = stream.next().await {
                each(&schema, batch?)?;
            }
            Ok(schema)
        })
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
