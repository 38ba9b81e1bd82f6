//! OpenTelemetry traces (OTLP) from tracekit.
//!
//! * [`sink::OtlpSink`]: the timeline model (`tracekit_core::timeline`) as
//!   OTLP spans, for `tracekit convert --to otlp` of any dialect.
//! * [`trace2`]: Git Trace2 sessions as OTLP traces the way
//!   git-ecosystem's trace2receiver shapes them (its span model and
//!   attribute names), fed by `tracekit trace2 listen` (an
//!   [`tracekit_trace2::receiver::Observer`]), with command filters and
//!   redaction.
//! * [`exporter::Exporter`]: OTLP/HTTP with protobuf, batching, gzip,
//!   retries with backoff and a bounded disk [`spool`] for when the
//!   collector is away; [`http`] is one request.
//! * [`proto`]: the OTLP messages (`opentelemetry-proto`'s field numbers,
//!   encoded with `prost`); [`batch`]: requests built by concatenating
//!   encoded `ResourceSpans`; [`ids`]: trace and span ids derived, never
//!   random; [`redact`]: URL credentials and user patterns.
//!
//! **Architecture Invariant:** dialect crates do not depend on this crate
//! (their fuzz targets stay light); it depends on `tracekit-core` and, for
//! the receiver path, `tracekit-trace2`. **Architecture Invariant:**
//! memory is bounded by open spans and the exporter's queue, never by the
//! input: a span is encoded when it ends and a batch when it is full.

pub mod batch;
pub mod exporter;
pub mod http;
pub mod ids;
pub mod proto;
pub mod redact;
pub mod sink;
pub mod spool;
pub mod trace2;
