//! Outputs shared by every dialect.
//!
//! * [`chrome::ChromeWriter`]: streaming Chrome Trace Event JSON (the JSON
//!   object form, `{"traceEvents":[...]}`) that Perfetto UI and
//!   chrome://tracing open.
//! * [`flame`]: folded stacks and SVG flame graphs (via inferno).
//!
//! **Architecture Invariant:** writers stream: memory does not grow with
//! the number of events written.

pub mod chrome;
pub mod flame;
pub mod json;
