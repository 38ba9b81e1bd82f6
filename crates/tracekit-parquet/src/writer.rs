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

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::rows::BatchSink;
use crate::schema::{ColType, Table};

/// Rows per row group: about 10–100 MB uncompressed for these tables,
/// what Spark, DuckDB and DataFusion scan well.
pub const ROW_GROUP_ROWS: usize = 1024 * 1024;

/// Writes each table's batches to `DIR/<table>/<name>.parquet`.
pub struct ParquetDir {
    dir: PathBuf,
    name: String,
    writers: Vec<Option<ArrowWriter<File>>>,
    only: Option<fn(Table) -> bool>,
    /// Files written, with their row counts (after [`ParquetDir::finish`]).
    pub written: Vec<(Table, PathBuf, u64)>,
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

    /// Closes every file (writes the footers).
    pub fn finish(&mut self) -> io::Result<()> {
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

/// zstd level 1: a profile of the 259 MB XRay trace spent a fifth of the
/// time in level 3's compressor for files a few percent smaller.
/// Dictionary pages only for text columns: ids, times and durations are
/// (nearly) all distinct, and trying a dictionary for them (interning
/// every value until the dictionary overflows) cost another seventh.
fn properties(table: Table) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("tracekit {}", env!("CARGO_PKG_VERSION")))
        .set_dictionary_enabled(false);
    for c in table.columns() {
        if c.ty == ColType::Str {
            b = b.set_column_dictionary_enabled(ColumnPath::from(c.name), true);
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
            let path = self.path_of(table);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| perr(parent, e))?;
            }
            let f = File::create(&path).map_err(|e| perr(&path, e))?;
            let w = ArrowWriter::try_new(f, table.schema(), Some(properties(table)))
                .map_err(|e| perr(&path, e))?;
            self.writers[ti] = Some(w);
        }
        let path = self.path_of(table);
        match self.writers[ti].as_mut() {
            Some(w) => w.write(&batch).map_err(|e| perr(&path, e)),
            None => Ok(()),
        }
    }
}
