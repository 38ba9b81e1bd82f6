//! The Parquet sink: one directory per table under an output directory,
//! one zstd-compressed file per table and run (`OUTDIR/slices/NAME.parquet`),
//! written row group by row group as batches come.
//!
//! Engines read a table as its directory (`read_parquet('OUTDIR/slices/*.parquet')`,
//! Spark's `spark.read.parquet("OUTDIR/slices")`), so directories from many
//! machines and runs merge by copying their files side by side.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use crate::rows::{BatchSink, DEFAULT_BATCH_ROWS};
use crate::schema::{ColType, Table};

/// Rows per row group: about 10–100 MB uncompressed for these tables,
/// what Spark, DuckDB and DataFusion scan well.
pub const ROW_GROUP_ROWS: usize = 1024 * 1024;

/// Writes each table's batches to `DIR/<table>/<name>.parquet`.
///
/// Each table is encoded and compressed on a thread of its own, started
/// with its first batch: the caller builds the next rows meanwhile, and
/// the two big tables of one pass (XRay's `slices` and `xray_calls`)
/// encode side by side instead of taking turns on one writer thread.
/// A bounded channel per table keeps memory to a few batches each.
pub struct ParquetDir {
    dir: PathBuf,
    name: String,
    writers: Vec<Option<TableWriter>>,
    /// Constant column chunks, shared by the table writers.
    constants: Arc<ConstantChunks>,
    only: Option<fn(Table) -> bool>,
    /// Files written, with their row counts (after [`ParquetDir::finish`]).
    pub written: Vec<(Table, PathBuf, u64)>,
}

/// Batches in flight between the caller and one table's writer thread.
const QUEUED_BATCHES: usize = 4;

/// One table's writer thread: it returns the file's row count.
struct TableWriter {
    to_writer: Option<SyncSender<RecordBatch>>,
    thread: Option<JoinHandle<io::Result<u64>>>,
}

impl TableWriter {
    fn start(
        table: Table,
        path: PathBuf,
        constants: Arc<ConstantChunks>,
    ) -> io::Result<TableWriter> {
        let (tx, rx) = sync_channel::<RecordBatch>(QUEUED_BATCHES);
        let thread = std::thread::Builder::new()
            .name(format!("parquet-{}", table.name()))
            .spawn(move || -> io::Result<u64> {
                // Tables carry command lines and paths: private like every
                // trace file (0600, directories 0700, unless --file-mode).
                if let Some(parent) = path.parent() {
                    tracekit_core::files::create_private_dir(parent)
                        .map_err(|e| perr(parent, e))?;
                }
                let f = tracekit_core::files::create(&path).map_err(|e| perr(&path, e))?;
                let mut w = TableFile::new(table, f, ROW_GROUP_ROWS, constants)
                    .map_err(|e| perr(&path, e))?;
                for batch in rx {
                    w.write(batch).map_err(|e| perr(&path, e))?;
                }
                w.close().map_err(|e| perr(&path, e))
            })?;
        Ok(TableWriter {
            to_writer: Some(tx),
            thread: Some(thread),
        })
    }

    /// Ends the input and waits for the thread: the rows written, or its error.
    fn join(&mut self) -> io::Result<Option<u64>> {
        self.to_writer = None;
        match self.thread.take() {
            Some(h) => h
                .join()
                .map_err(|_| io::Error::other("a Parquet writer thread panicked"))?
                .map(Some),
            None => Ok(None),
        }
    }
}

/// One table's Parquet file, written row group by row group.
///
/// A column that holds one value in a whole row group (the source
/// columns `file`, `host` and `dialect` always do, as a single-threaded
/// trace's `pid` and `tid` do) is not encoded value by value: the Parquet
/// crate would hash and compare every value (its dictionary and its
/// min/max statistics), a sixth of all the work on the XRay trace.
/// Instead such a column chunk is encoded once per value and row count
/// ([`ConstantChunks`]) and copied into each row group. When a column
/// stops being constant within a row group, the rows so far are encoded
/// as usual and the column goes on value by value: the file is the same
/// either way.
struct TableFile {
    file: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    props: WriterProperties,
    group: Option<Group>,
    groups: usize,
    /// Rows per row group ([`ROW_GROUP_ROWS`]; fewer in tests).
    group_rows: usize,
    constants: Arc<ConstantChunks>,
}

/// The row group being filled.
struct Group {
    writers: Vec<ArrowColumnWriter>,
    /// Per column: `Some(value)` while every row so far holds `value`
    /// (nothing written to its writer yet), `None` once its values go
    /// through its column writer.
    constant: Vec<Option<Constant>>,
    rows: usize,
}

impl TableFile {
    fn new(
        table: Table,
        f: File,
        group_rows: usize,
        constants: Arc<ConstantChunks>,
    ) -> parquet::errors::Result<TableFile> {
        let schema = table.schema();
        let props = properties(table);
        let (file, factory) = ArrowWriter::try_new(f, schema.clone(), Some(props.clone()))?
            .into_serialized_writer()?;
        Ok(TableFile {
            file,
            factory,
            schema,
            props,
            group: None,
            groups: 0,
            group_rows: group_rows.max(1),
            constants,
        })
    }

    fn write(&mut self, mut batch: RecordBatch) -> parquet::errors::Result<()> {
        while batch.num_rows() > 0 {
            let group = match &mut self.group {
                Some(g) => g,
                None => self.group.insert(Group {
                    writers: self.factory.create_column_writers(self.groups)?,
                    constant: Vec::new(),
                    rows: 0,
                }),
            };
            let take = batch.num_rows().min(self.group_rows - group.rows);
            let now = batch.slice(0, take);
            batch = batch.slice(take, batch.num_rows() - take);
            if group.rows == 0 {
                group.constant = now.columns().iter().map(Constant::of).collect();
            }
            for (i, (field, array)) in self.schema.fields().iter().zip(now.columns()).enumerate() {
                if let Some(c) = &group.constant[i] {
                    if c.holds_all(array) {
                        continue;
                    }
                    // Not constant any more: the rows so far as usual.
                    let mut left = group.rows;
                    let step = left.min(DEFAULT_BATCH_ROWS);
                    let repeated = c.array(step);
                    while left > 0 {
                        let n = left.min(step);
                        for leaf in compute_leaves(field, &repeated.slice(0, n))? {
                            group.writers[i].write(&leaf)?;
                        }
                        left -= n;
                    }
                    group.constant[i] = None;
                }
                for leaf in compute_leaves(field, array)? {
                    group.writers[i].write(&leaf)?;
                }
            }
            group.rows += take;
            if group.rows >= self.group_rows {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Writes the open row group.
    fn flush(&mut self) -> parquet::errors::Result<()> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let mut rg = self.file.next_row_group()?;
        for (i, (writer, constant)) in group.writers.into_iter().zip(&group.constant).enumerate() {
            match constant {
                Some(value) => {
                    let field = self.schema.field(i);
                    let chunk = self.constants.get(field, value, group.rows, &self.props)?;
                    rg.append_column(&chunk.0, chunk.1.clone())?;
                }
                None => writer.close()?.append_to_row_group(&mut rg)?,
            }
        }
        rg.close()?;
        self.groups += 1;
        Ok(())
    }

    /// Writes the footer: the file's row count.
    fn close(mut self) -> parquet::errors::Result<u64> {
        self.flush()?;
        let meta = self.file.close()?;
        Ok(meta.file_metadata().num_rows() as u64)
    }
}

/// The one value of a column (null: `None`), for the types where
/// constant columns occur: text and integers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Constant {
    Text(Option<String>),
    I64(Option<i64>),
    U64(Option<u64>),
    I32(Option<i32>),
}

impl Constant {
    /// The value of `array` when all its rows hold it (looking no further
    /// than the first difference).
    fn of(array: &ArrayRef) -> Option<Constant> {
        if array.is_empty() {
            return None;
        }
        let all_null = array.null_count() == array.len();
        let first = |c: Constant| c.holds_all(array).then_some(c);
        match array.data_type() {
            DataType::Utf8 => {
                let a = array.as_any().downcast_ref::<StringArray>()?;
                first(Constant::Text((!all_null).then(|| a.value(0).to_string())))
            }
            DataType::Int64 => {
                let a = array.as_any().downcast_ref::<Int64Array>()?;
                first(Constant::I64((!all_null).then(|| a.value(0))))
            }
            DataType::UInt64 => {
                let a = array.as_any().downcast_ref::<UInt64Array>()?;
                first(Constant::U64((!all_null).then(|| a.value(0))))
            }
            DataType::Int32 => {
                let a = array.as_any().downcast_ref::<Int32Array>()?;
                first(Constant::I32((!all_null).then(|| a.value(0))))
            }
            _ => None,
        }
    }

    /// Whether every row of `array` holds this value.
    fn holds_all(&self, array: &ArrayRef) -> bool {
        let nulls = array.null_count();
        match self {
            Constant::Text(None)
            | Constant::I64(None)
            | Constant::U64(None)
            | Constant::I32(None) => nulls == array.len(),
            _ if nulls > 0 => false,
            Constant::Text(Some(v)) => array
                .as_any()
                .downcast_ref::<StringArray>()
                .is_some_and(|a| all_text(a, v.as_bytes())),
            Constant::I64(Some(v)) => array
                .as_any()
                .downcast_ref::<Int64Array>()
                .is_some_and(|a| all_equal(a.values(), v)),
            Constant::U64(Some(v)) => array
                .as_any()
                .downcast_ref::<UInt64Array>()
                .is_some_and(|a| all_equal(a.values(), v)),
            Constant::I32(Some(v)) => array
                .as_any()
                .downcast_ref::<Int32Array>()
                .is_some_and(|a| all_equal(a.values(), v)),
        }
    }

    /// `rows` copies, as an array of the column's type.
    fn array(&self, rows: usize) -> ArrayRef {
        match self {
            Constant::Text(Some(v)) => Arc::new(StringArray::new_repeated(v, rows)),
            Constant::Text(None) => Arc::new(StringArray::new_null(rows)),
            Constant::I64(v) => Arc::new(Int64Array::from(vec![*v; rows])),
            Constant::U64(v) => Arc::new(UInt64Array::from(vec![*v; rows])),
            Constant::I32(v) => Arc::new(Int32Array::from(vec![*v; rows])),
        }
    }
}

/// Whether every value is `v`: blocks compared without early exit within
/// a block, which the compiler turns into vector compares.
fn all_equal<T: PartialEq + Copy>(values: &[T], v: &T) -> bool {
    values
        .chunks(256)
        .all(|block| block.iter().fold(true, |same, x| same & (x == v)))
}

/// Whether every value of `a` (no nulls) is `v`. Equal lengths first,
/// then one comparison of the values buffer with itself shifted by one
/// value: value `i` equals value `i + 1` for every `i` exactly then.
fn all_text(a: &StringArray, v: &[u8]) -> bool {
    let len = v.len();
    let offsets = a.value_offsets();
    // Value `i` starts at `offsets[0] + i * len` for every `i`.
    let (base, step) = (i64::from(offsets[0]), len as i64);
    let equal_lengths = offsets.chunks(256).enumerate().all(|(b, block)| {
        let first = (b * 256) as i64;
        block.iter().enumerate().fold(true, |same, (j, &o)| {
            same & (i64::from(o) == base + (first + j as i64) * step)
        })
    });
    if !equal_lengths {
        return false;
    }
    let Ok(start) = usize::try_from(offsets[0]) else {
        return false;
    };
    let values = &a.values()[start..start + len * a.len()];
    values.get(..len) == Some(v) && values[len..] == values[..values.len() - len]
}

/// Column chunks of one value repeated, encoded once and copied into
/// every row group that has that value and row count. Shared by the
/// tables of one output: `file`, `host` and `dialect` are the same
/// columns in each (a column's encoding depends only on its name and
/// type, see [`properties`]).
#[derive(Default)]
struct ConstantChunks {
    chunks: Mutex<HashMap<(Field, Constant, usize), Arc<EncodedChunk>>>,
}

/// A column chunk's bytes (from its first page) and its metadata.
type EncodedChunk = (Bytes, ColumnCloseResult);

impl ConstantChunks {
    fn get(
        &self,
        field: &Field,
        value: &Constant,
        rows: usize,
        props: &WriterProperties,
    ) -> parquet::errors::Result<Arc<EncodedChunk>> {
        let key = (field.clone(), value.clone(), rows);
        let lock = || {
            self.chunks
                .lock()
                .map_err(|_| ParquetError::General("a Parquet writer thread panicked".into()))
        };
        if let Some(chunk) = lock()?.get(&key) {
            return Ok(Arc::clone(chunk));
        }
        // Encoded without the lock held: another table may encode the same
        // chunk meanwhile, and the first one kept is as good as the other.
        let chunk = Arc::new(encode_constant(field, value, rows, props)?);
        Ok(Arc::clone(lock()?.entry(key).or_insert(chunk)))
    }
}

/// A one-column Parquet file in memory holding `rows` times `value`,
/// encoded as the table's writer would, in batches: its bytes and its
/// column chunk, to splice into a row group.
fn encode_constant(
    field: &Field,
    value: &Constant,
    rows: usize,
    props: &WriterProperties,
) -> parquet::errors::Result<EncodedChunk> {
    let schema = Arc::new(Schema::new(vec![field.clone()]));
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema.clone(), Some(props.clone()))?;
    let step = rows.min(DEFAULT_BATCH_ROWS);
    let batch = RecordBatch::try_new(schema, vec![value.array(step)])?;
    let mut left = rows;
    while left > 0 {
        let n = left.min(step);
        w.write(&batch.slice(0, n))?;
        left -= n;
    }
    let meta = w.close()?;
    if meta.num_row_groups() != 1 {
        return Err(ParquetError::General(format!(
            "a constant column of {rows} rows took {} row groups",
            meta.num_row_groups()
        )));
    }
    let chunk = meta.row_group(0).column(0).clone();
    // The file's other chunks carry page locations (an offset index), and
    // the footer needs them for every chunk or none.
    let offset_index = meta
        .offset_index()
        .and_then(|groups| groups.first()?.first())
        .cloned();
    if offset_index.is_none() {
        return Err(ParquetError::General(
            "a constant column chunk has no page locations".into(),
        ));
    }
    let close = ColumnCloseResult {
        bytes_written: chunk.compressed_size() as u64,
        rows_written: rows as u64,
        metadata: chunk,
        bloom_filter: None,
        column_index: None,
        offset_index,
    };
    Ok((Bytes::from(buf), close))
}

impl ParquetDir {
    /// `name` is the file name (without `.parquet`) used in every table's
    /// directory; pick one that differs between runs that will be merged.
    pub fn new(dir: &Path, name: &str) -> ParquetDir {
        ParquetDir {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            writers: Table::ALL.iter().map(|_| None).collect(),
            constants: Arc::default(),
            only: None,
            written: Vec::new(),
        }
    }

    /// Writes only the tables `keep` accepts (the others are not built).
    pub fn only(mut self, keep: fn(Table) -> bool) -> Self {
        self.only = Some(keep);
        self
    }

    pub fn path_of(&self, table: Table) -> PathBuf {
        self.dir
            .join(table.name())
            .join(format!("{}.parquet", self.name))
    }

    /// Closes every file (writes the footers), waiting for every writer
    /// thread; the first error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        let mut first_err = None;
        for t in Table::ALL {
            if let Some(w) = self.writers[t.index()].as_mut() {
                match w.join() {
                    Ok(Some(rows)) => self.written.push((t, self.path_of(t), rows)),
                    Ok(None) => {}
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for ParquetDir {
    /// Never leaves a thread writing after the owner is gone (a caller
    /// that removes the files on error must not see them come back).
    fn drop(&mut self) {
        for w in self.writers.iter_mut().flatten() {
            let _ = w.join();
        }
    }
}

/// zstd level 1: a profile of the 259 MB XRay trace spent a fifth of the
/// time in level 3's compressor for files a few percent smaller.
/// Dictionary pages only for text columns: ids, times and durations are
/// (nearly) all distinct, and trying a dictionary for them (interning
/// every value until the dictionary overflows) cost another seventh.
/// Ids, times and addresses are DELTA_BINARY_PACKED: counters and
/// near-sorted times shrink to a few bits per value before zstd sees
/// them, which took a quarter off the writer's time on the XRay trace and
/// made its files 10–40 % smaller.
/// Signed durations and [`SMALL_INTS`] are BYTE_STREAM_SPLIT: the bytes of
/// each significance go together, so zstd meets long runs of zero high
/// bytes. Durations are not ordered (the differences of neighbours are
/// wider than the values: delta made files a third bigger), and small
/// numbers gain nothing from deltas. On the 4-thread XRay trace this cut
/// 6 % of the CPU and 15 % of the bytes against PLAIN durations and delta
/// small numbers (PLAIN small numbers: 4 % more instructions, bigger
/// files). Readers need BYTE_STREAM_SPLIT for integers (Parquet format
/// 2.11): arrow-rs/DataFusion, DuckDB, pyarrow and Spark 4 read it (the
/// tests read every table with DuckDB). Spark 4.3 cannot read an
/// unsigned 64-bit column split (`readUnsignedLongs`), so unsigned
/// durations (`dur_tsc`) stay PLAIN and unsigned ids delta-encoded.
/// Statistics (min/max) per column chunk only: the per-page column index
/// cost time and these tables are scanned, not point-looked-up. None for
/// the [`FREE_TEXT`] columns.
/// Text columns without min/max statistics: names and arguments span
/// the alphabet in every row group, so their bounds never let an engine
/// skip one, and computing them compared every value twice (3 % of the
/// work on the XRay trace).
/// Signed integer columns of small numbers (process, thread and function
/// ids, depths).
const SMALL_INTS: [&str; 4] = ["pid", "tid", "depth", "function_id"];
const FREE_TEXT: [&str; 4] = ["name", "function", "args", "argv"];

fn properties(table: Table) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("tracekit {}", env!("CARGO_PKG_VERSION")))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        // Pages of about 1 MiB (the size limit, not the crate's 20,000-row
        // limit, ends them) filled 8 Ki values at a time: 3 % fewer
        // instructions and slightly smaller files than the defaults.
        .set_data_page_row_count_limit(128 * 1024)
        .set_write_batch_size(8 * 1024);
    for c in table.columns() {
        match c.ty {
            ColType::Str => {
                let path = ColumnPath::from(c.name);
                b = b.set_column_dictionary_enabled(path.clone(), true);
                if FREE_TEXT.contains(&c.name) {
                    b = b.set_column_statistics_enabled(path, EnabledStatistics::None);
                }
            }
            // Not for unsigned columns: Spark (4.3) cannot read them split.
            ColType::I64 | ColType::I32
                if c.name.starts_with("dur_") || SMALL_INTS.contains(&c.name) =>
            {
                b = b.set_column_encoding(ColumnPath::from(c.name), Encoding::BYTE_STREAM_SPLIT);
            }
            ColType::U64 if c.name.starts_with("dur_") => {}
            ColType::I64 | ColType::U64 | ColType::I32 | ColType::Time => {
                b = b.set_column_encoding(ColumnPath::from(c.name), Encoding::DELTA_BINARY_PACKED);
            }
            ColType::F64 | ColType::Bool => {}
        }
    }
    b.build()
}

fn perr(path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: {e}", path.display()))
}

impl BatchSink for ParquetDir {
    fn wants(&self, table: Table) -> bool {
        self.only.is_none_or(|keep| keep(table))
    }

    fn batch(&mut self, table: Table, batch: RecordBatch) -> io::Result<()> {
        let ti = table.index();
        if self.writers[ti].is_none() {
            self.writers[ti] = Some(TableWriter::start(
                table,
                self.path_of(table),
                Arc::clone(&self.constants),
            )?);
        }
        let Some(w) = self.writers[ti].as_mut() else {
            return Err(io::Error::other("Parquet writer not started"));
        };
        let sent = match &w.to_writer {
            Some(tx) => tx.send(batch).is_ok(),
            None => false,
        };
        if !sent {
            // The thread stopped on an error: that error.
            w.join()?;
            return Err(io::Error::other(format!(
                "the Parquet writer of table {} stopped",
                table.name()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::{Source, Tables};
    use arrow_array::{Int64Array, UInt64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::statistics::Statistics;

    /// Every value of every row, as text, to compare batches cut anywhere.
    fn rows(batches: &[RecordBatch]) -> Vec<Vec<Option<String>>> {
        let mut out = Vec::new();
        for b in batches {
            for r in 0..b.num_rows() {
                out.push(
                    b.columns()
                        .iter()
                        .map(|c| {
                            if c.is_null(r) {
                                return None;
                            }
                            let any = c.as_any();
                            Some(if let Some(a) = any.downcast_ref::<StringArray>() {
                                a.value(r).to_string()
                            } else if let Some(a) = any.downcast_ref::<Int64Array>() {
                                a.value(r).to_string()
                            } else if let Some(a) = any.downcast_ref::<UInt64Array>() {
                                a.value(r).to_string()
                            } else {
                                panic!("unexpected column type {}", c.data_type())
                            })
                        })
                        .collect(),
                );
            }
        }
        out
    }

    /// Columns constant over a row group, constant for a few batches and
    /// then not, and a source change inside a row group: read back, every
    /// row is as written, and a constant chunk carries its statistics.
    #[test]
    fn constant_columns_read_back_as_written() {
        let mut sink: Vec<RecordBatch> = Vec::new();
        {
            let mut tables = Tables::new(&mut sink, 3);
            let source = |file: &str| Source {
                file: file.into(),
                host: None,
                dialect: "xray",
            };
            tables.set_source(source("a.xray")).unwrap();
            for i in 0..17u64 {
                // pid constant for 10 rows (three batches, into the second
                // row group), then changing; name null, then set.
                let pid = if i < 10 { 7 } else { i as i64 };
                let name = (i >= 13).then_some(&b"worker"[..]);
                tables
                    .push(Table::Threads, |r| {
                        r.u64(i)
                            .opt_u64(None)
                            .i64(pid)
                            .i64(1)
                            .str("thread")
                            .opt_bytes(name)
                            .opt_i64(None);
                    })
                    .unwrap();
            }
            tables.set_source(source("b.xray")).unwrap();
            for i in 0..5u64 {
                tables
                    .push(Table::Threads, |r| {
                        r.u64(100 + i)
                            .opt_u64(Some(1))
                            .i64(9)
                            .i64(2)
                            .str("lane")
                            .opt_bytes(None)
                            .opt_i64(Some(3));
                    })
                    .unwrap();
            }
            tables.flush().unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("threads.parquet");
        let mut w = TableFile::new(
            Table::Threads,
            File::create(&path).unwrap(),
            8,
            Arc::default(),
        )
        .unwrap();
        for b in &sink {
            w.write(b.clone()).unwrap();
        }
        assert_eq!(w.close().unwrap(), 22);

        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata().clone();
        let back: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
        assert_eq!(rows(&back), rows(&sink));
        assert_eq!(meta.num_row_groups(), 3);
        let pid = Table::Threads.schema().index_of("pid").unwrap();
        match meta.row_group(0).column(pid).statistics() {
            Some(Statistics::Int64(s)) => {
                assert_eq!((s.min_opt(), s.max_opt()), (Some(&7), Some(&7)));
            }
            other => panic!("pid statistics: {other:?}"),
        }
        let file = Table::Threads.schema().index_of("file").unwrap();
        match meta.row_group(2).column(file).statistics() {
            Some(Statistics::ByteArray(s)) => {
                assert_eq!(s.min_opt().map(|v| v.data()), Some(&b"a.xray"[..]));
                assert_eq!(s.max_opt().map(|v| v.data()), Some(&b"b.xray"[..]));
            }
            other => panic!("file statistics: {other:?}"),
        }
    }
}
