//! One module per verb and one per dialect.

pub mod build;
pub mod convert;
pub mod diff;
pub mod info;
pub mod otlp;
pub mod posix;
pub mod record;
pub mod report;
pub mod rtrace;
pub mod sql;
pub mod trace2;
pub mod trace2_listen;
pub mod xray;
// Dialect modules: add yours above this line.

pub use tracekit_dialects::out::{closed_stdout, is_usage};
