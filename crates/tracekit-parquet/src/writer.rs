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

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::rows::BatchSink;
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
    fn start(table: Table, path: PathBuf) -> io::Result<TableWriter> {
        let (tx, rx) = sync_channel::<RecordBatch>(QUEUED_BATCHES);
        let thread = std::thread::Builder::new()
            .name(format!("parquet-{}", table.name()))
            .spawn(move || -> io::Result<u64> {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| perr(parent, e))?;
                }
                let f = File::create(&path).map_err(|e| perr(&path, e))?;
                let mut w = ArrowWriter::try_new(f, table.schema(), Some(properties(table)))
                    .map_err(|e| perr(&path, e))?;
                for batch in rx {
                    w.write(&batch).map_err(|e| perr(&path, e))?;
                }
                let meta = w.close().map_err(|e| perr(&path, e))?;
                Ok(meta.file_metadata().num_rows() as u64)
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

impl ParquetDir {
    /// `name` is the file name (without `.parquet`) used in every table's
    /// directory; pick one that differs between runs that will be merged.
    pub fn new(dir: &Path, name: &str) -> ParquetDir {
        ParquetDir {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            writers: Table::ALL.iter().map(|_| None).collect(),
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
/// Integer and time columns other than durations are DELTA_BINARY_PACKED:
/// constant columns (pid, tid), counters (ids) and near-sorted times
/// shrink to a few bits per value before zstd sees them, which took a
/// quarter off the writer's time on the XRay trace and made its files
/// 10–40 % smaller.
/// Statistics (min/max) per column chunk only: the per-page column index
/// cost time and these tables are scanned, not point-looked-up.
fn properties(table: Table) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("tracekit {}", env!("CARGO_PKG_VERSION")))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk);
    for c in table.columns() {
        match c.ty {
            ColType::Str => {
                b = b.set_column_dictionary_enabled(ColumnPath::from(c.name), true);
            }
            // Durations are not ordered: the differences of neighbours
            // are wider than the values (a third bigger files on XRay).
            ColType::I64 | ColType::U64 | ColType::I32 if c.name.starts_with("dur_") => {}
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
            self.writers[ti] = Some(TableWriter::start(table, self.path_of(table))?);
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
