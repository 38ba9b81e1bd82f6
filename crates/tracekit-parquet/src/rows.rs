//! Rows into Arrow record batches, table by table, in bounded batches.
//!
//! A producer (the timeline sink, a dialect's row iterator) appends rows
//! through [`Tables::push`]; every `batch_rows` rows of a table become one
//! [`RecordBatch`] handed to the [`BatchSink`] (the Parquet writer, or a
//! channel into the SQL engine). Memory is one open batch per table.

use std::io;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampNanosecondBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use crate::schema::{ColType, Table};

/// Where finished batches go.
pub trait BatchSink {
    /// Whether rows of `table` are wanted at all (a query reads one table:
    /// the others are not built).
    fn wants(&self, table: Table) -> bool {
        let _ = table;
        true
    }
    fn batch(&mut self, table: Table, batch: RecordBatch) -> io::Result<()>;
}

impl<S: BatchSink + ?Sized> BatchSink for &mut S {
    fn wants(&self, table: Table) -> bool {
        (**self).wants(table)
    }
    fn batch(&mut self, table: Table, batch: RecordBatch) -> io::Result<()> {
        (**self).batch(table, batch)
    }
}

/// Rows per record batch unless told otherwise.
pub const DEFAULT_BATCH_ROWS: usize = 64 * 1024;

enum ColBuilder {
    Str(StringBuilder),
    I64(Int64Builder),
    U64(UInt64Builder),
    I32(Int32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Time(TimestampNanosecondBuilder),
}

impl ColBuilder {
    fn new(ty: ColType, rows: usize) -> ColBuilder {
        match ty {
            ColType::Str => ColBuilder::Str(StringBuilder::with_capacity(rows, rows * 16)),
            ColType::I64 => ColBuilder::I64(Int64Builder::with_capacity(rows)),
            ColType::U64 => ColBuilder::U64(UInt64Builder::with_capacity(rows)),
            ColType::I32 => ColBuilder::I32(Int32Builder::with_capacity(rows)),
            ColType::F64 => ColBuilder::F64(Float64Builder::with_capacity(rows)),
            ColType::Bool => ColBuilder::Bool(BooleanBuilder::with_capacity(rows)),
            ColType::Time => ColBuilder::Time(
                TimestampNanosecondBuilder::with_capacity(rows).with_timezone("UTC"),
            ),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ColBuilder::Str(b) => Arc::new(b.finish()),
            ColBuilder::I64(b) => Arc::new(b.finish()),
            ColBuilder::U64(b) => Arc::new(b.finish()),
            ColBuilder::I32(b) => Arc::new(b.finish()),
            ColBuilder::F64(b) => Arc::new(b.finish()),
            ColBuilder::Bool(b) => Arc::new(b.finish()),
            ColBuilder::Time(b) => Arc::new(b.finish()),
        }
    }
}

/// One row being appended: values in column order, after the source
/// columns (which [`Tables::push`] fills in).
pub struct Row<'b> {
    cols: &'b mut [ColBuilder],
    at: usize,
    table: Table,
}

fn utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

impl Row<'_> {
    fn next(&mut self) -> &mut ColBuilder {
        let i = self.at;
        self.at += 1;
        match self.cols.get_mut(i) {
            Some(c) => c,
            None => panic!("table {}: more values than columns", self.table.name()),
        }
    }

    fn mismatch(&self) -> ! {
        panic!(
            "table {}: column {} has another type",
            self.table.name(),
            self.at - 1
        )
    }

    pub fn str(&mut self, v: &str) -> &mut Self {
        self.opt_str(Some(v))
    }

    pub fn opt_str(&mut self, v: Option<&str>) -> &mut Self {
        match self.next() {
            ColBuilder::Str(b) => b.append_option(v),
            _ => self.mismatch(),
        }
        self
    }

    /// Bytes as text (invalid UTF-8 replaced).
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.opt_bytes(Some(v))
    }

    pub fn opt_bytes(&mut self, v: Option<&[u8]>) -> &mut Self {
        match self.next() {
            ColBuilder::Str(b) => match v {
                Some(v) => b.append_value(utf8(v)),
                None => b.append_null(),
            },
            _ => self.mismatch(),
        }
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.opt_i64(Some(v))
    }

    pub fn opt_i64(&mut self, v: Option<i64>) -> &mut Self {
        match self.next() {
            ColBuilder::I64(b) => b.append_option(v),
            _ => self.mismatch(),
        }
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.opt_u64(Some(v))
    }

    pub fn opt_u64(&mut self, v: Option<u64>) -> &mut Self {
        match self.next() {
            ColBuilder::U64(b) => b.append_option(v),
            _ => self.mismatch(),
        }
        self
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        match self.next() {
            ColBuilder::I32(b) => b.append_value(v),
            _ => self.mismatch(),
        }
        self
    }

    pub fn f64(&mut self, v: f64) -> &mut Self {
        match self.next() {
            ColBuilder::F64(b) => b.append_value(v),
            _ => self.mismatch(),
        }
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        match self.next() {
            ColBuilder::Bool(b) => b.append_value(v),
            _ => self.mismatch(),
        }
        self
    }

    /// Nanoseconds since the Unix epoch, or null.
    pub fn time(&mut self, unix_ns: Option<i64>) -> &mut Self {
        match self.next() {
            ColBuilder::Time(b) => b.append_option(unix_ns),
            _ => self.mismatch(),
        }
        self
    }
}

struct TableBuilder {
    schema: SchemaRef,
    cols: Vec<ColBuilder>,
    rows: usize,
}

/// The source identity written into every row.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub file: String,
    pub host: Option<String>,
    pub dialect: &'static str,
}

/// Open batches of every table, over a [`BatchSink`].
pub struct Tables<'o> {
    out: &'o mut dyn BatchSink,
    builders: Vec<Option<TableBuilder>>,
    wanted: Vec<bool>,
    source: Source,
    batch_rows: usize,
}

impl<'o> Tables<'o> {
    pub fn new(out: &'o mut dyn BatchSink, batch_rows: usize) -> Tables<'o> {
        let wanted = Table::ALL.iter().map(|&t| out.wants(t)).collect();
        Tables {
            out,
            builders: Table::ALL.iter().map(|_| None).collect(),
            wanted,
            source: Source::default(),
            batch_rows: batch_rows.max(1),
        }
    }

    /// Sets the source of the rows that follow (flushes what is open, so
    /// a batch never mixes sources).
    pub fn set_source(&mut self, source: Source) -> io::Result<()> {
        self.flush()?;
        self.source = source;
        Ok(())
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    pub fn wants(&self, table: Table) -> bool {
        self.wanted[table.index()]
    }

    /// Appends one row to `table`: `fill` appends the table's own columns
    /// in order. Nothing happens when the table is not wanted.
    pub fn push(&mut self, table: Table, fill: impl FnOnce(&mut Row<'_>)) -> io::Result<()> {
        let ti = table.index();
        if !self.wanted[ti] {
            return Ok(());
        }
        let batch_rows = self.batch_rows;
        let b = self.builders[ti].get_or_insert_with(|| TableBuilder {
            schema: table.schema(),
            cols: table
                .columns()
                .map(|c| ColBuilder::new(c.ty, batch_rows))
                .collect(),
            rows: 0,
        });
        let mut row = Row {
            cols: &mut b.cols,
            at: 0,
            table,
        };
        row.str(&self.source.file)
            .opt_str(self.source.host.as_deref())
            .str(self.source.dialect);
        fill(&mut row);
        let filled = row.at;
        if filled != b.cols.len() {
            panic!(
                "table {}: {filled} values for {} columns",
                table.name(),
                b.cols.len()
            );
        }
        b.rows += 1;
        if b.rows >= batch_rows {
            self.flush_table(table)?;
        }
        Ok(())
    }

    fn flush_table(&mut self, table: Table) -> io::Result<()> {
        let Some(b) = self.builders[table.index()].as_mut() else {
            return Ok(());
        };
        if b.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = b.cols.iter_mut().map(|c| c.finish()).collect();
        b.rows = 0;
        let batch = RecordBatch::try_new(b.schema.clone(), arrays)
            .map_err(|e| io::Error::other(format!("table {}: {e}", table.name())))?;
        self.out.batch(table, batch)
    }

    /// Hands every open batch to the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        for t in Table::ALL {
            self.flush_table(t)?;
        }
        Ok(())
    }
}
