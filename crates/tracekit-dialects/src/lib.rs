//! tracekit's dialects behind one interface.
//!
//! Every trace format tracekit reads is a [`registry::Dialect`]: it says
//! whether an input is its own (`sniff`), and gives its `info`, its reports
//! as data (`tracekit_report::Report`), its timeline (into any
//! `tracekit_core::timeline::Sink`) and its SQL tables. The verbs of the
//! `tracekit` binary are thin: they turn flags into the typed options of
//! [`options`] once, pick the dialect of each [`input::Input`] and hand
//! what it yields to a renderer.
//!
//! API Boundary: this crate is what a front end (the CLI, a test, another
//! program) uses; it never parses a command line.

pub mod build;
pub mod buildlog;
pub mod convert;
pub mod info;
pub mod input;
pub mod ninja;
pub mod options;
pub mod otlp;
pub mod out;
pub mod posix;
pub mod progress;
pub mod registry;
pub mod report;
pub mod rtrace;
pub mod rtrace_attach;
#[cfg(feature = "sql")]
pub mod sql;
pub mod tables;
pub mod trace2;
pub mod trace2_listen;
pub mod xray;
