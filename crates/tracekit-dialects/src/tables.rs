//! The SQL tables of traces (docs/sql.md): which inputs a list of paths
//! holds, and the rows of one, for `tracekit sql` and `convert --to
//! parquet`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use tracekit_parquet::{BatchSink, Tables};

use crate::input::{dir_files, Input};
use crate::options::ConvertOptions;
use crate::registry::{self, Dialect};

/// The inputs to read, opened and detected: files as they are; a
/// directory of Git Trace2 files as one input (sessions span its files);
/// any other directory as its files, one by one. Standard input cannot be
/// read twice, so it is refused.
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, &'static dyn Dialect)>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            anyhow::bail!("<stdin>: tables are written from files (name the file or directory)");
        }
        let input = Input::open(p)?;
        let d = registry::detect(&input)?;
        // Trace2 directories and ninja build directories are read whole.
        let whole =
            d.name() == crate::trace2::Trace2.name() || d.name() == crate::ninja::NinjaLog.name();
        if input.is_dir && !whole {
            for f in dir_files(p)? {
                let d = registry::detect(&Input::open(&f)?)?;
                out.push((f, d));
            }
        } else {
            out.push((p.clone(), d));
        }
    }
    Ok(out)
}

/// Writes the tables of the trace at `path` (of `dialect`) that `sink` wants.
pub fn produce_from(
    path: &Path,
    dialect: &dyn Dialect,
    args: &ConvertOptions,
    sink: &mut dyn BatchSink,
    batch_rows: usize,
) -> Result<ExitCode> {
    let input = Input::open(path)?;
    let mut tables = Tables::new(sink, batch_rows);
    let code = dialect.tables(&input, args, &mut tables)?;
    tables.flush()?;
    Ok(code)
}
