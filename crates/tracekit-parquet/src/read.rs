//! Reading tables back, defensively: what `tracekit sql` reads of a Parquet
//! file goes through here, so a damaged or hostile file gives an error
//! naming what is wrong, never a panic.
//!
//! The Parquet and Arrow crates panic on some malformed input: the
//! embedded Arrow schema (`ARROW:schema`, an IPC flatbuffer) decodes with
//! `panic!` on unknown type widths, and column chunk or page offsets that
//! point outside the file trip assertions and overflows. [`sanitize`] is
//! applied to a file's footer before anything else looks at it:
//!
//! * the `ARROW:schema` entry is dropped: tracekit has its own schema
//!   ([`Table::schema`]); the columns' Arrow types come from their Parquet
//!   types alone, so the IPC schema is never decoded;
//! * the page indexes are dropped: pages are read in order from their
//!   headers (tracekit writes no column index, so page-level pruning has
//!   nothing to work with anyway; a damaged offset index made the reader
//!   overflow);
//! * every column chunk must lie inside the file, its data page inside the
//!   chunk; row and value counts must not be negative;
//! * a column the table knows must have a type of that column's kind
//!   (`pid` an integer of the same width, `name` text, ...), and the
//!   columns that are never null must all be there, so a file of another
//!   shape fails here, naming the column, not later in a cast or as a
//!   column of nulls;
//! * bloom filter and page index offsets are dropped from the column
//!   chunks (tracekit writes neither): nothing reads those structures
//!   later without these checks.
//!
//! [`check`] reads a whole file the way the engine does (footer,
//! statistics of every column, every page of every column): it is what
//! `tracekit sql` runs on the files a failed query read, to name the one at
//! fault, and what the fuzz target (`crates/tracekit-parquet/fuzz`) runs.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::file::metadata::{FileMetaData, KeyValue, PageIndexPolicy};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::ChunkReader;

use crate::schema::{ColType, Table};

/// The key under which Arrow writers embed their schema.
pub const ARROW_SCHEMA_KEY: &str = "ARROW:schema";

/// Parquet's magic bytes before the first column chunk and after the footer.
const MAGIC_LEN: i64 = 4;

/// `meta` without what tracekit does not read (the embedded Arrow schema,
/// the page indexes), after checking that its column chunks lie inside a
/// file of `file_len` bytes and, given a `table`, that the columns it
/// knows have types of their kind. The error says what is wrong (the
/// caller names the file).
pub fn sanitize(
    meta: &ParquetMetaData,
    file_len: u64,
    table: Option<Table>,
) -> Result<ParquetMetaData, String> {
    let fm = meta.file_metadata();
    if fm.num_rows() < 0 {
        return Err(format!("negative row count {}", fm.num_rows()));
    }
    // Data ends before the footer, its length and the closing magic.
    let data_end = i64::try_from(file_len)
        .unwrap_or(i64::MAX)
        .saturating_sub(8);
    for (g, rg) in meta.row_groups().iter().enumerate() {
        if rg.num_rows() < 0 {
            return Err(format!(
                "row group {g}: negative row count {}",
                rg.num_rows()
            ));
        }
        for c in rg.columns() {
            let what = || format!("row group {g}, column {}", c.column_path());
            let data = c.data_page_offset();
            let start = c.dictionary_page_offset().unwrap_or(data);
            let len = c.compressed_size();
            let end = start.checked_add(len);
            if start < MAGIC_LEN
                || len <= 0
                || end.is_none_or(|end| end > data_end)
                || data < start
                || end.is_some_and(|end| data >= end)
            {
                return Err(format!(
                    "{}: column chunk at bytes {start}+{len} (data page at {data}) is not inside \
                     the file's {file_len} bytes",
                    what()
                ));
            }
            if c.num_values() < 0 {
                return Err(format!(
                    "{}: negative value count {}",
                    what(),
                    c.num_values()
                ));
            }
        }
    }
    let kv: Option<Vec<KeyValue>> = fm.key_value_metadata().map(|kv| {
        kv.iter()
            .filter(|e| e.key != ARROW_SCHEMA_KEY)
            .cloned()
            .collect()
    });
    // Chunks without their page index and bloom filter offsets: nothing
    // reads those structures later, unchecked.
    let mut groups = Vec::with_capacity(meta.num_row_groups());
    for rg in meta.row_groups() {
        let columns = rg
            .columns()
            .iter()
            .map(|c| {
                c.clone()
                    .into_builder()
                    .set_offset_index_offset(None)
                    .set_offset_index_length(None)
                    .set_column_index_offset(None)
                    .set_column_index_length(None)
                    .set_bloom_filter_offset(None)
                    .set_bloom_filter_length(None)
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let group = rg
            .clone()
            .into_builder()
            .set_column_metadata(columns)
            .build()
            .map_err(|e| e.to_string())?;
        groups.push(group);
    }
    let clean = ParquetMetaData::new(
        FileMetaData::new(
            fm.version(),
            fm.num_rows(),
            fm.created_by().map(str::to_owned),
            kv,
            fm.schema_descr_ptr(),
            fm.column_orders().cloned(),
        ),
        groups,
    );
    if let Some(table) = table {
        check_types(&clean, table)?;
    }
    Ok(clean)
}

/// Whether each column of `meta` that `table` knows has a type of that
/// column's kind.
fn check_types(meta: &ParquetMetaData, table: Table) -> Result<(), String> {
    let fm = meta.file_metadata();
    let schema = parquet::arrow::parquet_to_arrow_schema(fm.schema_descr(), None)
        .map_err(|e| format!("schema: {e}"))?;
    for col in table.columns() {
        match schema.field_with_name(col.name) {
            Ok(field) if !of_kind(field.data_type(), col.ty) => {
                return Err(format!(
                    "column {} is {}, tracekit's {}.{} is {}",
                    col.name,
                    field.data_type(),
                    table.name(),
                    col.name,
                    col.ty.sql_name()
                ));
            }
            _ => {}
        }
    }
    // An older file without a newer column reads as nulls: columns added
    // later are nullable. One that is never null (`file`, `dialect`, ids)
    // is in every file of the table.
    if let Some(col) = table
        .columns()
        .find(|c| !c.nullable && schema.field_with_name(c.name).is_err())
    {
        return Err(format!(
            "no column {}: not a table of tracekit's {}",
            col.name,
            table.name()
        ));
    }
    Ok(())
}

/// Whether a file's column of type `dt` reads as a column of type `ty`
/// without a cast that could fail.
fn of_kind(dt: &DataType, ty: ColType) -> bool {
    match ty {
        ColType::Str => matches!(
            dt,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
        ),
        ColType::Time => matches!(dt, DataType::Timestamp(TimeUnit::Nanosecond, _)),
        _ => *dt == ty.data_type(),
    }
}

/// Reads the whole Parquet file `file` as `tracekit sql` would read it as
/// `table`: the footer (through [`sanitize`]), the statistics of every
/// column (what the engine prunes row groups with), every page of every
/// column. Returns the rows read, or what is wrong.
pub fn check<R: ChunkReader + 'static>(file: R, table: Option<Table>) -> Result<u64, String> {
    let meta = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Skip)
        .parse_and_finish(&file)
        .map_err(|e| e.to_string())?;
    let meta = Arc::new(sanitize(&meta, file.len(), table)?);
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let mut arrow =
        ArrowReaderMetadata::try_new(meta.clone(), options.clone()).map_err(|e| e.to_string())?;
    // Text the table declares as such is read as text (checked as UTF-8),
    // as the engine reads it.
    if let Some(table) = table {
        if let Some(schema) = as_text(arrow.schema(), table) {
            arrow = ArrowReaderMetadata::try_new(meta.clone(), options.with_schema(schema))
                .map_err(|e| e.to_string())?;
        }
    }
    for field in arrow.schema().fields() {
        let Ok(conv) = StatisticsConverter::try_new(
            field.name(),
            arrow.schema(),
            arrow.metadata().file_metadata().schema_descr(),
        ) else {
            continue;
        };
        let groups = meta.row_groups();
        conv.row_group_mins(groups).map_err(|e| e.to_string())?;
        conv.row_group_maxes(groups).map_err(|e| e.to_string())?;
        conv.row_group_null_counts(groups)
            .map_err(|e| e.to_string())?;
        conv.row_group_row_counts(groups)
            .map_err(|e| e.to_string())?;
    }
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, arrow)
        .build()
        .map_err(|e| e.to_string())?;
    let mut rows = 0u64;
    for batch in reader {
        rows += batch.map_err(|e| e.to_string())?.num_rows() as u64;
    }
    Ok(rows)
}

/// `schema` with the binary columns that `table` declares as text read as
/// text; `None` if there are none.
fn as_text(schema: &Schema, table: Table) -> Option<Arc<Schema>> {
    let mut changed = false;
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let text = table
                .columns()
                .any(|c| c.name == f.name() && c.ty == ColType::Str);
            if text && matches!(f.data_type(), DataType::Binary | DataType::LargeBinary) {
                changed = true;
                f.as_ref().clone().with_data_type(DataType::Utf8)
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    changed.then(|| Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::{Source, Tables};
    use arrow_array::RecordBatch;

    /// A small `threads` table as `convert --to parquet` writes it.
    fn threads_file() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let mut out = crate::ParquetDir::new(dir.path(), "t");
        {
            let mut tables = Tables::new(&mut out, 4);
            tables
                .set_source(Source {
                    file: "a.xray".into(),
                    host: None,
                    dialect: "xray",
                })
                .unwrap();
            for i in 0..10u64 {
                tables
                    .push(Table::Threads, |r| {
                        r.u64(i)
                            .opt_u64(None)
                            .i64(7)
                            .i64(i as i64)
                            .str("thread")
                            .opt_bytes(Some(&b"worker"[..]))
                            .opt_i64(None);
                    })
                    .unwrap();
            }
            tables.flush().unwrap();
        }
        out.finish().unwrap();
        std::fs::read(out.path_of(Table::Threads)).unwrap()
    }

    #[test]
    fn a_written_table_checks_and_loses_only_the_arrow_schema() {
        let bytes = bytes::Bytes::from(threads_file());
        assert_eq!(check(bytes.clone(), Some(Table::Threads)), Ok(10));
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .unwrap();
        let has_arrow = |m: &ParquetMetaData| {
            m.file_metadata()
                .key_value_metadata()
                .is_some_and(|kv| kv.iter().any(|e| e.key == ARROW_SCHEMA_KEY))
        };
        assert!(has_arrow(&meta));
        let clean = sanitize(&meta, bytes.len() as u64, Some(Table::Threads)).unwrap();
        assert!(!has_arrow(&clean));
        assert_eq!(clean.row_groups().len(), meta.row_groups().len());
    }

    #[test]
    fn a_column_of_another_kind_is_named() {
        use arrow_array::{ArrayRef, StringArray};
        let batch = RecordBatch::try_from_iter([(
            "pid",
            Arc::new(StringArray::from(vec!["1", "x"])) as ArrayRef,
        )])
        .unwrap();
        let mut buf = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let bytes = bytes::Bytes::from(buf);
        assert_eq!(check(bytes.clone(), None), Ok(2));
        let err = check(bytes.clone(), Some(Table::Threads)).unwrap_err();
        assert_eq!(err, "column pid is Utf8, tracekit's threads.pid is BIGINT");
        let err = check(bytes, Some(Table::Flows)).unwrap_err();
        assert_eq!(err, "no column file: not a table of tracekit's flows");
    }

    #[test]
    fn a_chunk_outside_the_file_is_an_error() {
        let bytes = bytes::Bytes::from(threads_file());
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .unwrap();
        // The same footer, as if the file had been cut short.
        let err = sanitize(&meta, 64, None).unwrap_err();
        assert!(err.contains("is not inside the file's 64 bytes"), "{err}");
    }
}
