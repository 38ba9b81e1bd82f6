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
/// Encoding and compression run on a thread of their own (the caller
/// builds the next batches meanwhile); a bounded channel keeps memory to
/// a few batches.
pub struct ParquetDir {
    dir: PathBuf,
    name: String,
    files: Option<Files>,
    to_writer: Option<SyncSender<(Table, RecordBatch)>>,
    writer: Option<JoinHandle<io::Result<Files>>>,
    only: Option<fn(Table) -> bool>,
    /// Files written, with their row counts (after [`ParquetDir::finish`]).
    pub written: Vec<(Table, PathBuf, u64)>,
}

/// Batches in flight between the caller and the writer thread.
const QUEUED_BATCHES: usize = 4;

/// The open files (owned by the writer thread once it runs).
struct Files {
    dir: PathBuf,
    name: String,
    writers: Vec<Option<ArrowWriter<File>>>,
    written: Vec<(Table, PathBuf, u64)>,
}

impl Files {
    fn path_of(&self, table: Table) -> PathBuf {
        self.dir
            .join(table.name())
            .join(format!("{}.parquet", self.name))
    }

    fn write(&mut self, table: Table, batch: &RecordBatch) -> io::Result<()> {
        let ti = table.index();
        let path = self.path_of(table);
        if self.writers[ti].is_none() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| perr(parent, e))?;
            }
            let f = File::create(&path).map_err(|e| perr(&path, e))?;
            let w = ArrowWriter::try_new(f, table.schema(), Some(properties(table)))
                .map_err(|e| perr(&path, e))?;
            self.writers[ti] = Some(w);
        }
        match self.writers[ti].as_mut() {
            Some(w) => w.write(batch).map_err(|e| perr(&path, e)),
            None => Ok(()),
        }
    }

    fn close(&mut self) -> io::Result<()> {
        for t in Table::ALL {
            if let Some(w) = self.writers[t.index()].take() {
                let meta = w.close().map_err(|e| perr(&self.path_of(t), e))?;
                self.written
                    .push((t, self.path_of(t), meta.file_metadata().num_rows() as u64));
            }
        }
        Ok(())
    }
}

impl ParquetDir {
    /// `name` is the file name (without `.parquet`) used in every table's
    /// directory; pick one that differs between runs that will be merged.
    pub fn new(dir: &Path, name: &str) -> ParquetDir {
        ParquetDir {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            files: Some(Files {
                dir: dir.to_path_buf(),
                name: name.to_string(),
                writers: Table::ALL.iter().map(|_| None).collect(),
                written: Vec::new(),
            }),
            to_writer: None,
            writer: None,
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

    /// Starts the writer thread on the first batch.
    fn sender(&mut self) -> io::Result<&SyncSender<(Table, RecordBatch)>> {
        if self.to_writer.is_none() {
            let Some(mut files) = self.files.take() else {
                return Err(io::Error::other("Parquet writer already finished"));
            };
            let (tx, rx) = sync_channel::<(Table, RecordBatch)>(QUEUED_BATCHES);
            let handle = std::thread::Builder::new()
                .name("parquet-writer".into())
                .spawn(move || -> io::Result<Files> {
                    for (table, batch) in rx {
                        files.write(table, &batch)?;
                    }
                    files.close()?;
                    Ok(files)
                })?;
            self.to_writer = Some(tx);
            self.writer = Some(handle);
        }
        self.to_writer
            .as_ref()
            .ok_or_else(|| io::Error::other("Parquet writer not started"))
    }

    /// Waits for the writer thread: its error, if it stopped on one.
    fn join(&mut self) -> io::Result<()> {
        self.to_writer = None;
        if let Some(h) = self.writer.take() {
            let files = h
                .join()
                .map_err(|_| io::Error::other("the Parquet writer thread panicked"))??;
            self.files = Some(files);
        }
        Ok(())
    }

    /// Closes every file (writes the footers).
    pub fn finish(&mut self) -> io::Result<()> {
        self.join()?;
        if let Some(files) = self.files.as_mut() {
            files.close()?;
            self.written = std::mem::take(&mut files.written);
        }
        Ok(())
    }
}

impl Drop for ParquetDir {
    /// Never leaves the thread writing after the owner is gone (a caller
    /// that removes the files on error must not see them come back).
    fn drop(&mut self) {
        let _ = self.join();
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
        if self.sender()?.send((table, batch)).is_err() {
            // The thread stopped on an error: that error.
            self.join()?;
            return Err(io::Error::other("the Parquet writer stopped"));
        }
        Ok(())
    }
}
