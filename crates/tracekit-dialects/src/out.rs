//! What every verb writes with: standard output that a closed pipe ends
//! quietly, outputs that are private files, warnings printed the way errors
//! are, and usage errors (exit status 2).

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;

/// A wrong command line found after clap's parsing (an unknown `--to`
/// target, an option that does not apply): printed as every error, exit
/// status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Fails with a [`UsageError`].
pub fn usage<T>(message: impl Into<String>) -> Result<T> {
    Err(UsageError(message.into()).into())
}

/// Whether `err` is a [`UsageError`].
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.is::<UsageError>())
}

/// Whether `err` comes from a closed pipe (`EPIPE`: standard output's
/// reader went away, as `| head` does), wherever it was wrapped: in
/// anyhow's context, `tracekit_core::Error::Io`, an `io::Error` around
/// another error, serde_json's or a library's error with a source.
pub fn closed_stdout(err: &anyhow::Error) -> bool {
    fn io_broken(e: &io::Error) -> bool {
        e.kind() == io::ErrorKind::BrokenPipe || e.get_ref().is_some_and(|inner| broken(inner))
    }
    fn broken(e: &(dyn std::error::Error + 'static)) -> bool {
        let mut cur = Some(e);
        while let Some(e) = cur {
            if let Some(io) = e.downcast_ref::<io::Error>() {
                if io_broken(io) {
                    return true;
                }
            } else if let Some(j) = e.downcast_ref::<serde_json::Error>() {
                if j.io_error_kind() == Some(io::ErrorKind::BrokenPipe) {
                    return true;
                }
            }
            cur = e.source();
        }
        false
    }
    err.chain().any(broken)
}

/// Standard output, buffered, for what a verb prints (never `println!`,
/// which panics on a closed pipe).
pub fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(1 << 16, io::stdout().lock())
}

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
        None => Ok(Box::new(stdout())),
        Some(p) if p.as_os_str() == "-" => Ok(Box::new(stdout())),
        Some(p) => {
            // Trace content: private unless the user chose a mode.
            let f = tracekit_core::files::create(p)
                .map_err(|e| tracekit_core::Error::io(Some(p), e))?;
            Ok(Box::new(BufWriter::with_capacity(1 << 16, f)))
        }
    }
}
