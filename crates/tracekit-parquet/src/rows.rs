//! Rows into Arrow record batches, table by table, in bounded batches.
//!
//! A producer (the timeline sink, a dialect's row iterator) appends rows
//! through [`Tables::push`]; every `batch_rows` rows of a table become one
//! [`RecordBatch`] handed to the [`BatchSink`] (the Parquet writer, or a
//! channel into the SQL engine). Memory is one open batch per table.

use std::io;
use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, TimestampNanosecondType, UInt64Type,
};
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray, RecordBatch, StringArray};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::SchemaRef;

use crate::schema::{ColType, Column, Table};

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

/// Which values of a nullable column are set: one `bool` per value (a
/// store per append, no branch on the bitmap's state), packed into
/// Arrow's bitmap once per batch, and left out when nothing was null.
/// A required column keeps none until a null comes (a producer's bug):
/// then it keeps them too, and the batch fails Arrow's check of the
/// schema with an error naming the column, as it always did.
struct Validity {
    required: bool,
    /// Whether `set` holds one entry per value of the batch so far.
    tracking: bool,
    set: Vec<bool>,
    nulls: usize,
}

impl Validity {
    fn new(nullable: bool, rows: usize) -> Self {
        Validity {
            required: !nullable,
            tracking: nullable,
            set: Vec::with_capacity(if nullable { rows } else { 0 }),
            nulls: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self) {
        if self.tracking {
            self.set.push(true);
        }
    }

    /// A null after `before` values.
    #[inline(always)]
    fn push_null(&mut self, before: usize) {
        if !self.tracking {
            self.set.resize(before, true);
            self.tracking = true;
        }
        self.set.push(false);
        self.nulls += 1;
    }

    fn finish(&mut self) -> Option<NullBuffer> {
        let nulls = std::mem::take(&mut self.nulls);
        let buffer = (nulls > 0).then(|| NullBuffer::from(self.set.as_slice()));
        self.set.clear();
        self.tracking = !self.required;
        buffer
    }
}

/// A column of fixed-width values in a plain `Vec` (appending is a store
/// and a length bump, inlined into the caller).
pub(crate) struct Prim<T: ArrowNativeType> {
    values: Vec<T>,
    valid: Validity,
}

impl<T: ArrowNativeType> Prim<T> {
    fn with_capacity(rows: usize, nullable: bool) -> Self {
        Prim {
            values: Vec::with_capacity(rows),
            valid: Validity::new(nullable, rows),
        }
    }

    /// The builder of `table`'s own column `name`.
    pub(crate) fn of(table: Table, name: &str, rows: usize) -> Self {
        Prim::with_capacity(rows, own_column(table, name).nullable)
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, v: T) {
        self.values.push(v);
        self.valid.push();
    }

    #[inline(always)]
    pub(crate) fn push_option(&mut self, v: Option<T>) {
        match v {
            Some(v) => self.push(v),
            None => {
                self.valid.push_null(self.values.len());
                self.values.push(T::default());
            }
        }
    }

    fn finish<A: ArrowPrimitiveType<Native = T>>(&mut self) -> PrimitiveArray<A> {
        let rows = self.values.capacity();
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(rows));
        PrimitiveArray::new(ScalarBuffer::from(values), self.valid.finish())
    }

    /// The batch so far as an array of `A`; the builder starts empty.
    pub(crate) fn array<A: ArrowPrimitiveType<Native = T>>(&mut self) -> ArrayRef {
        Arc::new(self.finish::<A>())
    }
}

impl Prim<i64> {
    /// The batch so far as UTC timestamps (ns); the builder starts empty.
    pub(crate) fn time_array(&mut self) -> ArrayRef {
        Arc::new(
            self.finish::<TimestampNanosecondType>()
                .with_timezone("UTC"),
        )
    }
}

/// A boolean column, one `bool` per value until the batch is packed.
pub(crate) struct Flags {
    values: Vec<bool>,
}

impl Flags {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        Flags {
            values: Vec::with_capacity(rows),
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, v: bool) {
        self.values.push(v);
    }

    pub(crate) fn array(&mut self) -> ArrayRef {
        Arc::new(self.finish())
    }

    fn finish(&mut self) -> BooleanArray {
        let array = BooleanArray::new(BooleanBuffer::from(self.values.as_slice()), None);
        self.values.clear();
        array
    }
}

/// A text column: offsets, bytes and validity in plain `Vec`s. Bytes are
/// appended as they come and checked as UTF-8 once per batch (one pass
/// over the buffer, in [`Text::finish`]), and not at all when every value
/// came as a `&str`; only a batch that fails is rebuilt value by value
/// with the invalid bytes replaced.
pub(crate) struct Text {
    offsets: Vec<i32>,
    values: Vec<u8>,
    valid: Validity,
    /// Whether some value came as bytes (not known to be UTF-8).
    unchecked: bool,
}

impl Text {
    fn with_capacity(rows: usize, bytes: usize, nullable: bool) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Text {
            offsets,
            values: Vec::with_capacity(bytes),
            valid: Validity::new(nullable, rows),
            unchecked: false,
        }
    }

    /// The builder of `table`'s own text column `name`.
    pub(crate) fn of(table: Table, name: &str, rows: usize) -> Self {
        Text::with_capacity(rows, rows * 16, own_column(table, name).nullable)
    }

    pub(crate) fn array(&mut self) -> ArrayRef {
        Arc::new(self.finish())
    }

    #[inline(always)]
    fn end(&mut self) {
        match i32::try_from(self.values.len()) {
            Ok(end) => self.offsets.push(end),
            Err(_) => text_overflow(),
        }
    }

    #[inline(always)]
    pub(crate) fn push_str(&mut self, v: &str) {
        self.values.extend_from_slice(v.as_bytes());
        self.end();
        self.valid.push();
    }

    /// Bytes as text (invalid UTF-8 replaced when the batch is finished).
    #[inline(always)]
    pub(crate) fn push(&mut self, v: &[u8]) {
        self.unchecked = true;
        self.values.extend_from_slice(v);
        self.end();
        self.valid.push();
    }

    #[inline(always)]
    pub(crate) fn push_null(&mut self) {
        self.valid.push_null(self.offsets.len() - 1);
        self.end();
    }

    #[inline(always)]
    pub(crate) fn push_option(&mut self, v: Option<&[u8]>) {
        match v {
            Some(v) => self.push(v),
            None => self.push_null(),
        }
    }

    fn finish(&mut self) -> StringArray {
        let rows = self.offsets.len() - 1;
        let nulls = self.valid.finish();
        let next = Text::with_capacity(rows, self.values.len(), !self.valid.required);
        let Text {
            offsets,
            values,
            unchecked,
            ..
        } = std::mem::replace(self, next);
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        let values = Buffer::from_vec(values);
        if !unchecked {
            // SAFETY: every value was appended whole from a `&str`, so the
            // buffer is UTF-8 and every offset (0, then the buffer's length
            // after each value, so non-decreasing and in bounds) falls on a
            // character boundary.
            return unsafe { StringArray::new_unchecked(offsets, values, nulls) };
        }
        match StringArray::try_new(offsets.clone(), values.clone(), nulls.clone()) {
            Ok(a) => a,
            Err(_) => {
                // Invalid UTF-8 somewhere: every value again, replaced.
                let mut fixed = Text::with_capacity(rows, values.len(), false);
                for w in offsets.windows(2) {
                    let v = &values[w[0] as usize..w[1] as usize];
                    fixed
                        .values
                        .extend_from_slice(tracekit_core::lossy(v).as_bytes());
                    fixed.end();
                }
                let offsets = OffsetBuffer::new(ScalarBuffer::from(fixed.offsets));
                StringArray::new(offsets, Buffer::from_vec(fixed.values), nulls)
            }
        }
    }
}

/// `table`'s own column `name` (a typed builder naming a column the schema
/// lacks is a bug: the tests build every table).
fn own_column(table: Table, name: &str) -> &'static Column {
    match table.own_columns().iter().find(|c| c.name == name) {
        Some(c) => c,
        None => panic!("table {} has no column {name}", table.name()),
    }
}

#[cold]
#[inline(never)]
fn text_overflow() -> ! {
    panic!("a text column holds more than 2 GiB in one batch")
}

enum ColBuilder {
    Str(Text),
    I64(Prim<i64>),
    U64(Prim<u64>),
    I32(Prim<i32>),
    F64(Prim<f64>),
    Bool(Flags),
    Time(Prim<i64>),
}

impl ColBuilder {
    fn new(col: &Column, rows: usize) -> ColBuilder {
        let n = col.nullable;
        match col.ty {
            ColType::Str => ColBuilder::Str(Text::with_capacity(rows, rows * 16, n)),
            ColType::I64 => ColBuilder::I64(Prim::with_capacity(rows, n)),
            ColType::U64 => ColBuilder::U64(Prim::with_capacity(rows, n)),
            ColType::I32 => ColBuilder::I32(Prim::with_capacity(rows, n)),
            ColType::F64 => ColBuilder::F64(Prim::with_capacity(rows, n)),
            ColType::Bool => ColBuilder::Bool(Flags::with_capacity(rows)),
            ColType::Time => ColBuilder::Time(Prim::with_capacity(rows, n)),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ColBuilder::Str(b) => b.array(),
            ColBuilder::I64(b) => b.array::<Int64Type>(),
            ColBuilder::U64(b) => b.array::<UInt64Type>(),
            ColBuilder::I32(b) => b.array::<Int32Type>(),
            ColBuilder::F64(b) => b.array::<Float64Type>(),
            ColBuilder::Bool(b) => b.array(),
            ColBuilder::Time(b) => b.time_array(),
        }
    }
}

/// One row being appended: the table's own values in column order (the
/// source columns are filled per batch by [`Tables`]).
pub struct Row<'b> {
    cols: &'b mut [ColBuilder],
    at: usize,
    table: Table,
}

#[cold]
#[inline(never)]
fn too_many(table: Table) -> ! {
    panic!("table {}: more values than columns", table.name())
}

#[cold]
#[inline(never)]
fn mismatch(table: Table, at: usize) -> ! {
    panic!(
        "table {}: own column {} has another type",
        table.name(),
        at.wrapping_sub(1)
    )
}

impl Row<'_> {
    #[inline(always)]
    fn next(&mut self) -> &mut ColBuilder {
        let i = self.at;
        self.at += 1;
        match self.cols.get_mut(i) {
            Some(c) => c,
            None => too_many(self.table),
        }
    }

    #[inline(always)]
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.opt_str(Some(v))
    }

    #[inline(always)]
    pub fn opt_str(&mut self, v: Option<&str>) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::Str(b) => match v {
                Some(v) => b.push_str(v),
                None => b.push_null(),
            },
            _ => mismatch(table, at),
        }
        self
    }

    /// Bytes as text (invalid UTF-8 replaced).
    #[inline(always)]
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.opt_bytes(Some(v))
    }

    #[inline(always)]
    pub fn opt_bytes(&mut self, v: Option<&[u8]>) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::Str(b) => match v {
                Some(v) => b.push(v),
                None => b.push_null(),
            },
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn i64(&mut self, v: i64) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::I64(b) => b.push(v),
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn opt_i64(&mut self, v: Option<i64>) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::I64(b) => b.push_option(v),
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn u64(&mut self, v: u64) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::U64(b) => b.push(v),
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn opt_u64(&mut self, v: Option<u64>) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::U64(b) => b.push_option(v),
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn i32(&mut self, v: i32) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::I32(b) => b.push(v),
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn f64(&mut self, v: f64) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::F64(b) => b.push(v),
            _ => mismatch(table, at),
        }
        self
    }

    #[inline(always)]
    pub fn bool(&mut self, v: bool) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::Bool(b) => b.push(v),
            _ => mismatch(table, at),
        }
        self
    }

    /// Nanoseconds since the Unix epoch, or null.
    #[inline(always)]
    pub fn time(&mut self, unix_ns: Option<i64>) -> &mut Self {
        let (table, at) = (self.table, self.at + 1);
        match self.next() {
            ColBuilder::Time(b) => b.push_option(unix_ns),
            _ => mismatch(table, at),
        }
        self
    }
}

struct TableBuilder {
    schema: SchemaRef,
    /// The table's own columns (after the source columns).
    cols: Vec<ColBuilder>,
    rows: usize,
}

/// The source identity of every row.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub file: String,
    pub host: Option<String>,
    pub dialect: &'static str,
}

/// Open batches of every table, over a [`BatchSink`].
///
/// The source columns are constant within a batch (a batch never mixes
/// sources), so they are not appended row by row: each batch gets
/// constant arrays, built once per source and batch length and shared
/// (reference counted) by every batch of that length.
pub struct Tables<'o> {
    out: &'o mut dyn BatchSink,
    builders: Vec<Option<TableBuilder>>,
    wanted: Vec<bool>,
    source: Source,
    /// The source columns for batches of `.0` rows.
    source_arrays: Option<(usize, [ArrayRef; 3])>,
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
            source_arrays: None,
            batch_rows: batch_rows.max(1),
        }
    }

    /// Sets the source of the rows that follow (flushes what is open, so
    /// a batch never mixes sources).
    pub fn set_source(&mut self, source: Source) -> io::Result<()> {
        self.flush()?;
        self.source = source;
        self.source_arrays = None;
        Ok(())
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    pub fn wants(&self, table: Table) -> bool {
        self.wanted[table.index()]
    }

    /// Hands a batch of `rows` rows that a typed builder made to the sink:
    /// `own` holds every own column of `table` by name, in any order (the
    /// schema's order is taken here, so a builder cannot swap two columns
    /// of one type).
    fn emit(
        &mut self,
        table: Table,
        rows: usize,
        own: &[(&'static str, ArrayRef)],
    ) -> io::Result<()> {
        let columns = table.own_columns();
        if own.len() != columns.len() {
            wrong_count(table, own.len(), columns.len());
        }
        let own = columns
            .iter()
            .map(|c| match own.iter().find(|(n, _)| *n == c.name) {
                Some((_, a)) => Arc::clone(a),
                None => panic!("table {}: no array for column {}", table.name(), c.name),
            });
        let own: Vec<ArrayRef> = own.collect();
        self.send(table, &table.schema(), rows, own)
    }

    /// One batch of `table` to the sink: the source columns, then `own`.
    fn send(
        &mut self,
        table: Table,
        schema: &SchemaRef,
        rows: usize,
        own: impl IntoIterator<Item = ArrayRef>,
    ) -> io::Result<()> {
        let mut arrays: Vec<ArrayRef> = self.source_columns(rows).into();
        arrays.extend(own);
        let batch = RecordBatch::try_new(schema.clone(), arrays)
            .map_err(|e| io::Error::other(format!("table {}: {e}", table.name())))?;
        self.out.batch(table, batch)
    }

    /// Appends one row to `table`: `fill` appends the table's own columns
    /// in order. Nothing happens when the table is not wanted.
    #[inline]
    pub fn push(&mut self, table: Table, fill: impl FnOnce(&mut Row<'_>)) -> io::Result<()> {
        let ti = table.index();
        if !self.wanted[ti] {
            return Ok(());
        }
        let batch_rows = self.batch_rows;
        let b = self.builders[ti].get_or_insert_with(|| TableBuilder {
            schema: table.schema(),
            cols: table
                .own_columns()
                .iter()
                .map(|c| ColBuilder::new(c, batch_rows))
                .collect(),
            rows: 0,
        });
        let mut row = Row {
            cols: &mut b.cols,
            at: 0,
            table,
        };
        fill(&mut row);
        let filled = row.at;
        if filled != b.cols.len() {
            wrong_count(table, filled, b.cols.len());
        }
        b.rows += 1;
        if b.rows >= batch_rows {
            self.flush_table(table)?;
        }
        Ok(())
    }

    /// The source columns for a batch of `rows` rows.
    fn source_columns(&mut self, rows: usize) -> [ArrayRef; 3] {
        if let Some((n, arrays)) = &self.source_arrays {
            if *n == rows {
                return arrays.clone();
            }
        }
        let host: ArrayRef = match &self.source.host {
            Some(h) => Arc::new(StringArray::new_repeated(h, rows)),
            None => Arc::new(StringArray::new_null(rows)),
        };
        let arrays: [ArrayRef; 3] = [
            Arc::new(StringArray::new_repeated(&self.source.file, rows)),
            host,
            Arc::new(StringArray::new_repeated(self.source.dialect, rows)),
        ];
        self.source_arrays = Some((rows, arrays.clone()));
        arrays
    }

    fn flush_table(&mut self, table: Table) -> io::Result<()> {
        let rows = match self.builders[table.index()].as_ref() {
            Some(b) if b.rows > 0 => b.rows,
            _ => return Ok(()),
        };
        let Some(b) = self.builders[table.index()].as_mut() else {
            return Ok(());
        };
        let own: Vec<ArrayRef> = b.cols.iter_mut().map(|c| c.finish()).collect();
        b.rows = 0;
        let schema = b.schema.clone();
        self.send(table, &schema, rows, own)
    }

    /// Hands every open batch to the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        for t in Table::ALL {
            self.flush_table(t)?;
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn wrong_count(table: Table, filled: usize, cols: usize) -> ! {
    panic!(
        "table {}: {filled} values for {cols} own columns",
        table.name()
    )
}

/// One table's own columns as typed builders ([`Prim`], [`Text`],
/// [`Flags`]): for the tables filled most, a row is a store into each,
/// with no per-value dispatch on the column's type. [`TypedBatch`] counts
/// the rows and hands full batches to [`Tables`].
pub(crate) trait TypedColumns {
    const TABLE: Table;
    fn with_capacity(rows: usize) -> Self;
    /// The batch so far, each column by name; every builder starts empty.
    fn arrays(&mut self) -> Vec<(&'static str, ArrayRef)>;
}

/// The open batch of a [`TypedColumns`] table.
pub(crate) struct TypedBatch<C> {
    pub(crate) cols: C,
    rows: usize,
}

impl<C: TypedColumns> TypedBatch<C> {
    /// The table's batch, or `None` when `tables` does not want it.
    pub(crate) fn wanted(tables: &Tables<'_>) -> Option<Self> {
        tables.wants(C::TABLE).then(|| TypedBatch {
            cols: C::with_capacity(tables.batch_rows),
            rows: 0,
        })
    }

    /// Appends the row `fill` stores into the columns; a full batch goes
    /// to `tables`.
    #[inline]
    pub(crate) fn push(
        &mut self,
        tables: &mut Tables<'_>,
        fill: impl FnOnce(&mut C),
    ) -> io::Result<()> {
        fill(&mut self.cols);
        self.rows += 1;
        if self.rows >= tables.batch_rows {
            self.flush(tables)?;
        }
        Ok(())
    }

    /// Hands the open batch (if any row) to `tables`.
    pub(crate) fn flush(&mut self, tables: &mut Tables<'_>) -> io::Result<()> {
        let rows = std::mem::take(&mut self.rows);
        if rows == 0 {
            return Ok(());
        }
        let own = self.cols.arrays();
        tables.emit(C::TABLE, rows, &own)
    }
}

/// Batches kept in memory, in order (tests).
#[cfg(test)]
impl BatchSink for Vec<RecordBatch> {
    fn batch(&mut self, _: Table, batch: RecordBatch) -> io::Result<()> {
        self.push(batch);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    /// Text is checked once per batch; a batch with invalid bytes (here a
    /// character split between two values, and a stray byte) has them
    /// replaced in the values that hold them, the others kept as they are.
    #[test]
    fn invalid_utf8_is_replaced_per_value() {
        let names: [Option<&[u8]>; 5] = [
            Some("é".as_bytes()),
            Some(&[0xC3]),
            Some(&[0xA9, b'x']),
            None,
            Some(b"ok\xff"),
        ];
        let mut sink: Vec<RecordBatch> = Vec::new();
        {
            let mut tables = Tables::new(&mut sink, 64);
            for (i, name) in names.iter().enumerate() {
                tables
                    .push(Table::Processes, |r| {
                        r.u64(i as u64).i64(1).opt_bytes(*name).opt_i64(None);
                    })
                    .unwrap();
            }
            tables.flush().unwrap();
        }
        let batch = &sink[0];
        let col = batch.schema().index_of("name").unwrap();
        let a = batch
            .column(col)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let got: Vec<Option<&str>> = (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect();
        assert_eq!(
            got,
            [
                Some("é"),
                Some("\u{FFFD}"),
                Some("\u{FFFD}x"),
                None,
                Some("ok\u{FFFD}")
            ]
        );
    }

    /// A null in a column the schema says is never null is a producer's
    /// bug; the batch fails with an error naming the column, not a panic,
    /// and the next batch starts clean.
    #[test]
    fn a_null_in_a_required_column_is_an_error_naming_it() {
        let mut sink: Vec<RecordBatch> = Vec::new();
        let mut tables = Tables::new(&mut sink, 64);
        for pid in [Some(1), None, Some(3)] {
            tables
                .push(Table::Processes, |r| {
                    r.u64(7).opt_i64(pid).opt_str(None).opt_i64(None);
                })
                .unwrap();
        }
        let err = tables.flush().unwrap_err().to_string();
        assert!(err.contains("pid"), "{err}");
        tables
            .push(Table::Processes, |r| {
                r.u64(8).i64(4).str("p").opt_i64(Some(2));
            })
            .unwrap();
        tables.flush().unwrap();
        drop(tables);
        assert_eq!(sink.len(), 1);
        assert_eq!(sink[0].num_rows(), 1);
        assert_eq!(sink[0].column(4).null_count(), 0);
    }
}
