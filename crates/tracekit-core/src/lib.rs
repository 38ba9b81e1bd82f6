//! The pieces every tracekit dialect shares: where in an input something
//! happened ([`Position`]), the common error type ([`Error`]), loss
//! accounting ([`Warnings`]), small helpers for byte strings, and the
//! [`timeline`] model every dialect maps to and every cross-format sink
//! writes from.
//!
//! Dialect crates parse their own formats into their own event types; this
//! crate only holds what must be the same everywhere, so that the CLI can
//! report every problem as `tracekit: FILE:LINE: what is wrong`.

pub mod timeline;

use std::fmt;
use std::path::{Path, PathBuf};

/// A place in an input: a 1-based line for text formats, a byte offset for
/// binary ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    Line(u64),
    Offset(u64),
    Unknown,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Line(n) => write!(f, "{n}"),
            Position::Offset(n) => write!(f, "byte offset {n}"),
            Position::Unknown => Ok(()),
        }
    }
}

/// The one error type the CLI prints. Dialect crates convert their own
/// errors into it with the input's name attached.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not what its format says it must be.
    #[error("{}{}: {message}", file_label(.file), .position.after_file())]
    Malformed {
        file: Option<PathBuf>,
        position: Position,
        message: String,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", .path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "<stream>".into()))]
    Io {
        path: Option<PathBuf>,
        #[source]
        source: std::io::Error,
    },
    /// None of the known formats matched.
    #[error("{}: unknown format (tried: {tried})", .file.display())]
    UnknownFormat { file: PathBuf, tried: String },
    /// Anything else, already worded for the user.
    #[error("{0}")]
    Other(String),
}

fn file_label(file: &Option<PathBuf>) -> String {
    match file {
        Some(p) => p.display().to_string(),
        None => "<stdin>".to_string(),
    }
}

impl Position {
    /// How the position follows a file name in messages: `:LINE`,
    /// `: byte offset N`, or nothing.
    pub fn after_file(&self) -> String {
        match self {
            Position::Unknown => String::new(),
            Position::Line(n) => format!(":{n}"),
            p => format!(": {p}"),
        }
    }
}

impl Error {
    pub fn malformed(position: Position, message: impl Into<String>) -> Self {
        Error::Malformed {
            file: None,
            position,
            message: message.into(),
        }
    }

    pub fn io(path: Option<&Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.map(Path::to_path_buf),
            source,
        }
    }

    /// Attaches the input's name to an error that was raised without it.
    pub fn in_file(mut self, path: &Path) -> Self {
        match &mut self {
            Error::Malformed { file, .. } if file.is_none() => *file = Some(path.to_path_buf()),
            Error::Io { path: p, .. } if p.is_none() => *p = Some(path.to_path_buf()),
            _ => {}
        }
        self
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A problem that did not stop reading: the reader kept going and counts
/// what it could not use, so nothing is silently dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub position: Position,
    pub message: String,
}

/// Warnings collected while reading, capped so that a file of nothing but
/// garbage cannot grow memory without bound: past the cap only the count
/// grows.
#[derive(Debug, Default, Clone)]
pub struct Warnings {
    kept: Vec<Warning>,
    total: u64,
}

impl Warnings {
    pub const KEEP: usize = 100;

    pub fn push(&mut self, position: Position, message: impl Into<String>) {
        self.total += 1;
        if self.kept.len() < Self::KEEP {
            self.kept.push(Warning {
                position,
                message: message.into(),
            });
        }
    }

    /// The first [`Self::KEEP`] warnings.
    pub fn kept(&self) -> &[Warning] {
        &self.kept
    }

    /// How many warnings there were in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn extend(&mut self, other: Warnings) {
        let extra = other.total - other.kept.len() as u64;
        for w in other.kept {
            self.push(w.position, w.message);
        }
        self.total += extra;
    }
}

/// Renders bytes that are usually UTF-8 for a human, replacing what is not.
pub fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_file_and_line() {
        let e = Error::malformed(Position::Line(7), "unterminated string")
            .in_file(Path::new("a.jsonl"));
        assert_eq!(e.to_string(), "a.jsonl:7: unterminated string");
        let e = Error::malformed(Position::Offset(32), "bad record").in_file(Path::new("x.xray"));
        assert_eq!(e.to_string(), "x.xray: byte offset 32: bad record");
    }

    #[test]
    fn warnings_are_capped_but_counted() {
        let mut w = Warnings::default();
        for i in 0..(Warnings::KEEP as u64 + 5) {
            w.push(Position::Line(i), "x");
        }
        assert_eq!(w.total(), Warnings::KEEP as u64 + 5);
        assert_eq!(w.kept().len(), Warnings::KEEP);
    }
}
