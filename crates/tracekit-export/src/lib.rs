//! Outputs shared by every dialect.
//!
//! * [`chrome::ChromeWriter`]: streaming Chrome Trace Event JSON (the JSON
//!   object form, `{"traceEvents":[...]}`) that Perfetto UI and
//!   chrome://tracing open.
//! * [`chrome_sink::ChromeSink`]: the timeline model (`tracekit_core::timeline`)
//!   as Chrome JSON.
//! * [`perfetto::PerfettoSink`]: the timeline model as a native Perfetto
//!   protobuf trace, streamed packet by packet.
//! * [`flame`]: folded stacks and SVG flame graphs (via inferno).
//!
//! **Architecture Invariant:** writers stream: memory does not grow with
//! the number of events written.

pub mod chrome;
pub mod chrome_sink;
pub mod flame;
pub mod json;
pub mod perfetto;
mod proto;
