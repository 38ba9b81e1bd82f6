//! tracekit's reports as data, and the renderers that draw them.
//!
//! A dialect crate builds a [`Report`] from its analysis's aggregates: a
//! dialect name, a title, the inputs, and a tree of typed [`Section`]s
//! ([`Body`]: key/value summaries, tables whose columns carry a [`Unit`],
//! weighted folded stacks, time series, spans for process trees and Gantt
//! lanes, histograms, notes). The renderers never see a dialect's types,
//! only the model:
//!
//! * [`text::write`]: the human report. A section may carry its
//!   dialect's pre-rendered text ([`TextForm::Verbatim`], the layouts the
//!   tests pin byte for byte) or be left out of the text
//!   ([`TextForm::Omit`], charts); otherwise a generic layout (aligned
//!   tables with units, sparklines, indented trees) draws it.
//! * [`json::write`]: one structure for every dialect, an envelope whose
//!   `schema` is [`SCHEMA`] (`docs/report-json.md` documents it field by
//!   field; [`json::parse`] reads it back).
//! * [`html::write`]: one self-contained page (inline CSS and SVG, a small
//!   inline script for sorting tables; no URL of any kind, and a
//!   Content-Security-Policy that forbids loading anything).
//!
//! [`series::TimeBuckets`] counts events over time in one streaming pass
//! with a bounded number of buckets, for dialects that draw time series.
//!
//! # Moving a dialect's report to the model
//!
//! As `tracekit_xray::report` and `tracekit_posix::report` do:
//! 1. In the dialect crate, build a [`Report`] from the analysis's
//!    aggregates (`Report::new(dialect, title)`, `input`, `push`). Give each
//!    section a stable id; tables top-N with [`Table::keep`] (the rest and
//!    its totals in [`More`]); charts bounded (buckets, stacks, spans).
//! 2. Keep the text the tests pin: each section carries its part of
//!    today's text with [`Section::verbatim`] (the report's own header is
//!    [`Report::text`]); sections the text never showed get
//!    [`Section::omit_text`]. The body must still hold all the data.
//! 3. In `crates/tracekit-dialects/src/<dialect>.rs`, implement
//!    `Dialect::reports` (print the warnings there); `tracekit report`
//!    then renders text, `--json` and `--html`.
//! 4. Document the section ids, columns and items in
//!    `docs/report-json.md`; add the page to the browser test with
//!    `common::chromium::check_page(path, &[selectors])`.
//!
//! ```
//! use tracekit_report::{Column, Report, Section, Table, Unit};
//! let mut t = Table::new(vec![
//!     Column::new("event", "event type", Unit::Text),
//!     Column::new("events", "events", Unit::Count),
//! ]);
//! t.row(vec!["request".into(), 450u64.into()]);
//! let mut r = Report::new("posix", "POSIX trace log run.trace");
//! r.push(Section::table("event_types", "Event types", t));
//! let mut out = Vec::new();
//! tracekit_report::json::write(&mut out, &[r]).unwrap();
//! assert!(String::from_utf8(out).unwrap().contains("\"schema\": \"tracekit.report/1\""));
//! ```

pub mod diff;
pub mod format;
pub mod html;
pub mod json;
mod model;
pub mod series;
pub mod stats;
pub mod text;
mod value;

pub use model::*;
pub use value::{Unit, Value};

/// The version of the JSON structure: `tracekit.report/MAJOR`. The major
/// number changes when a field is renamed or removed or its meaning
/// changes; adding fields or section kinds does not change it.
pub const SCHEMA: &str = "tracekit.report/1";
