//! One module per verb and one per dialect.

pub mod build;
pub mod convert;
pub mod info;
pub mod otlp;
pub mod posix;
pub mod record;
pub mod report;
pub mod rtrace;
pub mod rtrace_attach;
pub mod sql;
pub mod trace2;
pub mod trace2_listen;
pub mod xray;
// Dialect modules: add yours above this line.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;

/// Prints a reader's warnings the way errors are printed
/// (`tracekit: NAME:LINE: warning: ...`), then how many were not kept.
pub fn print_warnings(name: impl std::fmt::Display, w: &tracekit_core::Warnings) {
    for x in w.kept() {
        eprintln!(
            "tracekit: {name}{}: warning: {}",
            x.position.after_file(),
            x.message
        );
    }
    let more = w.total() - w.kept().len() as u64;
    if more > 0 {
        eprintln!("tracekit: {name}: {more} more warning(s) not shown");
    }
}

/// Opens `-o PATH` for writing, or standard output for `-` or no path.
pub fn output(path: Option<&Path>) -> Result<Box<dyn Write>> {
    match path {
        None => Ok(Box::new(BufWriter::with_capacity(
            1 << 16,
            io::stdout().lock(),
        ))),
        Some(p) if p.as_os_str() == "-" => Ok(Box::new(BufWriter::with_capacity(
            1 << 16,
            io::stdout().lock(),
        ))),
        Some(p) => {
            // Trace content: private unless the user chose a mode.
            let f = tracekit_core::files::create(p)
                .map_err(|e| tracekit_core::Error::io(Some(p), e))?;
            Ok(Box::new(BufWriter::with_capacity(1 << 16, f)))
        }
    }
}
