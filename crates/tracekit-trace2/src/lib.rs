//! Git Trace2: the NORMAL, PERF and EVENT formats as git writes them
//! (checked on git 2.47.3 and 2.39.5).
//!
//! * [`Event`] is one trace2 event, whatever format it came from. Strings
//!   are byte strings borrowed from the input where possible (git does not
//!   validate UTF-8, so neither do we).
//! * [`event_fmt`], [`perf`], [`normal`]: parse one record of a format and
//!   write one back exactly as git does.
//! * [`reader`]: splits an input into records (PERF and NORMAL records may
//!   span several lines) and detects the format.
//! * [`convert::Converter`]: writes events of any format in another format,
//!   keeping the per-thread state (region depth) the target formats need;
//!   its docs say what is exact, what is derived (from git's version), and
//!   what fails because the input does not carry it.
//! * [`receiver`]: the af_unix listener behind `tracekit trace2 listen`.
//!
//! **Architecture Invariant:** parsing a record allocates only for argv-like
//! lists and for strings with JSON escapes; everything else borrows from the
//! input line.

pub mod chrome;
pub mod convert;
pub mod diff;
pub mod event;
pub mod event_fmt;
pub mod normal;
pub mod perf;
pub mod quote;
pub mod reader;
pub mod receiver;
pub mod report;
pub mod summary;
pub mod time;
pub mod timeline;

pub use event::{Body, Event, Kind, Text, Time};
pub use reader::{Format, Record, RecordIter};
