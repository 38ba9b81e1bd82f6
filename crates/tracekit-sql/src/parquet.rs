//! Parquet directories as DataFusion tables, read defensively.
//!
//! DataFusion's own Parquet format and reader do the work; [`Format`] wraps
//! them so that every footer goes through
//! [`tracekit_parquet::read::sanitize`] before the engine sees it (no
//! embedded Arrow schema decoded, no page index, no bloom filter, chunk
//! ranges checked, column types checked against the table), and so that an
//! error reading a file's footer or bytes names the file. Errors found
//! later, decoding pages, come out of DataFusion without a file name:
//! [`Opened`] remembers which files a query opened, and the engine checks
//! them one by one after such a failure to name the damaged one.

use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use bytes::Bytes;
use datafusion::catalog::Session;
use datafusion::common::Statistics;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::{FileFormat, FileMeta};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::parquet::{
    CachedParquetFileReaderFactory, ParquetFileReaderFactory,
};
use datafusion::datasource::physical_plan::{
    FileScanConfig, FileScanConfigBuilder, FileSource, ParquetSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::object_store::path::Path as StorePath;
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::ExecutionPlan;
use futures::future::BoxFuture;
use futures::FutureExt;

use tracekit_parquet::read::sanitize;
use tracekit_parquet::Table;

/// What is wrong with one input file, naming it (`FILE: what`).
#[derive(Debug, Clone)]
pub struct FileError {
    pub file: PathBuf,
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

impl std::error::Error for FileError {}

/// The Parquet files one engine's queries opened, most recent last, and
/// how to show a file's path as the user named its directory.
#[derive(Debug, Default)]
pub struct Opened {
    files: Mutex<Vec<(PathBuf, Table)>>,
    /// (the directory's absolute and canonical forms, as the user named it)
    dirs: Mutex<Vec<(Vec<PathBuf>, PathBuf)>>,
}

impl Opened {
    pub fn add_dir(&self, dir: &Path) {
        let mut forms = Vec::new();
        if let Ok(a) = std::path::absolute(dir) {
            forms.push(a);
        }
        if let Ok(c) = dir.canonicalize() {
            forms.push(c);
        }
        lock(&self.dirs).push((forms, dir.to_path_buf()));
    }

    /// Forgets the files of the previous query.
    pub fn clear(&self) {
        lock(&self.files).clear();
    }

    fn opened(&self, file: PathBuf, table: Table) {
        let mut files = lock(&self.files);
        files.retain(|(f, _)| *f != file);
        files.push((file, table));
    }

    /// The files opened since [`Opened::clear`], the latest first.
    pub fn latest_first(&self) -> Vec<(PathBuf, Table)> {
        lock(&self.files).iter().rev().cloned().collect()
    }

    /// `location` as a path on this machine, under the directory as the
    /// user named it where it is under one.
    fn display(&self, location: &StorePath) -> PathBuf {
        let abs = datafusion::object_store::local::LocalFileSystem::new()
            .path_to_filesystem(location)
            .unwrap_or_else(|_| PathBuf::from(format!("/{location}")));
        for (forms, named) in lock(&self.dirs).iter() {
            for f in forms {
                if let Ok(rest) = abs.strip_prefix(f) {
                    return named.join(rest);
                }
            }
        }
        abs
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A panic's message, from its payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// `meta` of the file at `location` (of `size` bytes), sanitized, or an
/// error naming the file.
fn sanitized(
    meta: &ParquetMetaData,
    size: u64,
    table: Table,
    file: &Path,
) -> Result<Arc<ParquetMetaData>, FileError> {
    sanitize(meta, size, Some(table))
        .map(Arc::new)
        .map_err(|message| FileError {
            file: file.to_path_buf(),
            message: format!("damaged Parquet file: {message}"),
        })
}

/// `fut`, with a panic inside it turned into an error naming `file`.
async fn unpanicked<T>(
    file: &Path,
    fut: impl std::future::Future<Output = Result<T, FileError>>,
) -> Result<T, FileError> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(p) => Err(FileError {
            file: file.to_path_buf(),
            message: format!(
                "damaged Parquet file: the reader failed: {}",
                panic_message(&*p)
            ),
        }),
    }
}

/// DataFusion's Parquet format for one of tracekit's tables: footers
/// sanitized, files named in errors, opened files remembered.
#[derive(Debug)]
pub struct Format {
    inner: ParquetFormat,
    table: Table,
    opened: Arc<Opened>,
}

impl Format {
    pub fn new(inner: ParquetFormat, table: Table, opened: Arc<Opened>) -> Format {
        Format {
            inner,
            table,
            opened,
        }
    }

    /// The sanitized footer of `object`, through the session's metadata
    /// cache, or an error naming the file.
    async fn metadata(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        object: &ObjectMeta,
    ) -> Result<Arc<ParquetMetaData>> {
        let file = self.opened.display(&object.location);
        let cache = state.runtime_env().cache_manager.get_file_metadata_cache();
        let got = unpanicked(&file, async {
            let meta = DFParquetMetadata::new(store.as_ref(), object)
                .with_metadata_size_hint(self.inner.metadata_size_hint())
                .with_file_metadata_cache(Some(cache))
                .with_page_index_policy(Some(PageIndexPolicy::Skip))
                .fetch_metadata()
                .await
                .map_err(|e| FileError {
                    file: file.clone(),
                    message: format!("not a readable Parquet file: {}", e.strip_backtrace()),
                })?;
            sanitized(&meta, object.size, self.table, &file)
        })
        .await;
        got.map_err(|e| DataFusionError::External(Box::new(e)))
    }
}

#[async_trait]
impl FileFormat for Format {
    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }

    fn get_ext_with_compression(&self, c: &FileCompressionType) -> Result<String> {
        self.inner.get_ext_with_compression(c)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner.compression_type()
    }

    /// The table's own schema: files are never asked for theirs.
    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        Ok(self.table.schema())
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let meta = self.metadata(state, store, object).await?;
        DFParquetMetadata::statistics_from_parquet_metadata(&meta, &table_schema).map_err(|e| {
            DataFusionError::External(Box::new(FileError {
                file: self.opened.display(&object.location),
                message: format!("damaged Parquet statistics: {}", e.strip_backtrace()),
            }))
        })
    }

    async fn infer_stats_and_ordering(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<FileMeta> {
        // tracekit's files declare no sort order.
        Ok(FileMeta::new(
            self.infer_stats(state, store, table_schema, object).await?,
        ))
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = self.inner.create_physical_plan(state, conf).await?;
        let Some((conf, source)) = plan
            .downcast_ref::<DataSourceExec>()
            .and_then(|e| e.downcast_to_file_source::<ParquetSource>())
        else {
            return Err(DataFusionError::Internal(
                "DataFusion's Parquet plan is not a Parquet scan".into(),
            ));
        };
        let store = state
            .runtime_env()
            .object_store(conf.object_store_url.clone())?;
        let cache = state.runtime_env().cache_manager.get_file_metadata_cache();
        let factory = Readers {
            inner: Arc::new(CachedParquetFileReaderFactory::new(store, cache)),
            table: self.table,
            opened: self.opened.clone(),
        };
        let source = source
            .clone()
            .with_parquet_file_reader_factory(Arc::new(factory));
        let conf = FileScanConfigBuilder::from(conf.clone())
            .with_source(Arc::new(source))
            .build();
        Ok(DataSourceExec::from_data_source(conf))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        self.inner.file_source(table_schema)
    }
}

/// DataFusion's cached readers, each wrapped in a [`Reader`].
#[derive(Debug)]
struct Readers {
    inner: Arc<dyn ParquetFileReaderFactory>,
    table: Table,
    opened: Arc<Opened>,
}

impl ParquetFileReaderFactory for Readers {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> Result<Box<dyn AsyncFileReader + Send>> {
        let path = self.opened.display(&file.object_meta.location);
        let size = file.object_meta.size;
        self.opened.opened(path.clone(), self.table);
        let inner = self
            .inner
            .create_reader(partition_index, file, metadata_size_hint, metrics)?;
        Ok(Box::new(Reader {
            inner,
            path,
            size,
            table: self.table,
        }))
    }
}

/// One file's reader: its footer sanitized, its errors naming it.
struct Reader {
    inner: Box<dyn AsyncFileReader + Send>,
    path: PathBuf,
    size: u64,
    table: Table,
}

impl Reader {
    fn named(&self, e: ParquetError) -> ParquetError {
        ParquetError::External(Box::new(FileError {
            file: self.path.clone(),
            message: e.to_string(),
        }))
    }
}

impl AsyncFileReader for Reader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes, ParquetError>> {
        async move {
            let got = self.inner.get_bytes(range).await;
            got.map_err(|e| self.named(e))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, Result<Vec<Bytes>, ParquetError>> {
        async move {
            let got = self.inner.get_byte_ranges(ranges).await;
            got.map_err(|e| self.named(e))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>, ParquetError>> {
        async move {
            let path = self.path.clone();
            let (size, table) = (self.size, self.table);
            let inner = &mut self.inner;
            unpanicked(&path, async {
                let meta = inner.get_metadata(options).await.map_err(|e| FileError {
                    file: path.clone(),
                    message: format!("not a readable Parquet file: {e}"),
                })?;
                sanitized(&meta, size, table, &path)
            })
            .await
            .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }
}

/// The [`FileError`] inside `e`, if reading a file failed.
pub fn file_error(e: &DataFusionError) -> Option<FileError> {
    fn from_dyn(e: &(dyn std::error::Error + 'static)) -> Option<FileError> {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(x) = cur {
            if let Some(f) = x.downcast_ref::<FileError>() {
                return Some(f.clone());
            }
            if let Some(ParquetError::External(inner)) = x.downcast_ref::<ParquetError>() {
                if let Some(f) = from_dyn(inner.as_ref()) {
                    return Some(f);
                }
            }
            cur = x.source();
        }
        None
    }
    match e.find_root() {
        DataFusionError::External(x) => from_dyn(x.as_ref()),
        DataFusionError::ParquetError(p) => from_dyn(p.as_ref()),
        DataFusionError::ArrowError(a, _) => from_dyn(a.as_ref()),
        _ => None,
    }
}
