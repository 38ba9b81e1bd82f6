//! kwinject build traces for tracekit.
//!
//! * [`trace`]: the JSON-lines trace, streaming reader ([`trace::TraceReader`])
//!   and writer ([`trace::TraceWriter`]), tolerant of what real producers
//!   write (kwwrap records without `parent_id`, colliding ids, `parentid` /
//!   `workdir` spellings, pretty-printed objects, unknown keys).
//! * [`env`]: each process's full environment, folded down the parent chain.
//! * [`compiler`], [`cdb`], [`kwspec`]: compiler recognition and the two
//!   outputs, `compile_commands.json` (Bear 3.1.1's rules) and Klocwork's
//!   build specification.
//! * [`analysis`]: the build report (process tree, slowest compile units,
//!   critical path, parallelism) and the Chrome trace conversion.
//! * [`record`]: running a build and recording every exec (ptrace or the
//!   `tracekit-preload` LD_PRELOAD shim).

pub mod analysis;
pub mod cdb;
pub mod compiler;
pub mod env;
pub mod kwspec;
pub mod record;
pub mod trace;
