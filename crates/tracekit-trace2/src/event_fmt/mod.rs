//! The EVENT format: one JSON object per line.
//!
//! The parser is a small byte scanner rather than a general JSON library
//! because git writes bytes >= 0x80 raw without validating UTF-8 (argv file
//! names), and because numbers must be kept exactly as written. The writer
//! reproduces git's json-writer byte for byte: fixed key order, `%.6f`
//! floats, git's string escapes.

use std::borrow::Cow;

use crate::event::{Body, Event, Kind, Region, Text, Time};
use crate::time::Micros;

mod parse;
mod scanner;
#[cfg(test)]
mod tests;
mod write;

pub use parse::parse;
pub use scanner::decode_json_string;
use scanner::{has_special, Scanner, Value};
pub use write::{write, write_json_string};

/// A record that could not be parsed, with the byte offset in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

impl ParseError {
    fn new(offset: usize, message: impl Into<String>) -> Self {
        ParseError {
            offset,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.offset == 0 {
            // Whole-record problems (a missing key) have no useful column.
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} (at column {})", self.message, self.offset + 1)
        }
    }
}
