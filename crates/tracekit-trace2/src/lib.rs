//! Git Trace2.
