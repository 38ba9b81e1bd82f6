//! tracekit's tables: the timeline model and the dialects' own rows as
//! Arrow record batches, one documented schema for every dialect
//! (`docs/sql.md`), and the Apache Parquet sink that writes them.
//!
//! Data flow: a dialect's timeline mapping feeds [`TimelineRows`] (a
//! `timeline::Sink`), and the dialect row APIs feed the functions of
//! [`dialects`]; both append rows to [`Tables`], which hands bounded
//! batches to a [`BatchSink`]: [`ParquetDir`] here, a channel into the SQL
//! engine in `tracekit-sql`.
//!
//! **Architecture Invariant:** streaming: one open batch per table, row
//! groups written as they fill; no table is ever held whole.
//! **API Boundary:** [`schema::Table`] (names, columns, docs) is the
//! contract with SQL users and other engines; columns are only added.

#[cfg(feature = "dialects")]
pub mod dialects;
pub mod read;
pub mod rows;
pub mod schema;
pub mod timeline;
pub mod writer;

pub use rows::{BatchSink, Source, Tables, DEFAULT_BATCH_ROWS};
pub use schema::{Column, Table};
pub use timeline::TimelineRows;
pub use writer::ParquetDir;

/// Re-exported so that users of the batches need no arrow dependency of
/// their own.
pub use arrow_array::RecordBatch;
