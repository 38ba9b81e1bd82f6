//! Git Trace2.
pub mod receiver;
