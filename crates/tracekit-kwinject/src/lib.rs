//! kwinject build traces for tracekit.
//!
//! * [`trace`]: the JSON-lines trace, streaming reader ([`trace::TraceReader`])
//!   and writer ([`trace::TraceWriter`]), tolerant of what real producers
//!   write (kwwrap records without `parent_id`, colliding ids, `parentid` /
//!   `workdir` spellings, pretty-printed objects, unknown keys).
//! * [`env`](mod@env): each process's full environment, folded down the parent chain.
//! * [`compiler`], [`cdb`], [`kwspec`]: compiler recognition and the two
//!   outputs, `compile_commands.json` (Bear 3.1.1's rules) and Klocwork's
//!   build specification; [`bear_config`]: Bear 3.1.1's configuration file
//!   and what it sets for the database.
//! * [`analysis`]: the build report (process tree, slowest compile units,
//!   critical path, job-slot waits, parallelism) and the Chrome trace
//!   conversion; [`steps`]: the steps, file dependencies, critical path and
//!   waits it reports, as data.
//! * [`record`]: running a build and recording every exec (ptrace or the
//!   `tracekit-preload` LD_PRELOAD shim).
//!
//! **Architecture Invariant:** a trace tracekit writes is a kwinject trace
//! any reader accepts: documented keys in the documented order, tracekit's
//! own data only under `tk_*` extension keys, every `env-diff` against the
//! parent record (top-level `env` for the root) and never holding the
//! recorder's variables. Readers keep what they do not know.
//!
//! **Architecture Invariant:** recording never changes the build: exit
//! status (a fatal signal is re-raised), stdout/stderr, signals, and the
//! environment apart from `LD_PRELOAD` / `TRACEKIT_PRELOAD_OUT`.
//!
//! **API Boundary:** [`trace::Trace`] / [`trace::TraceReader`] /
//! [`trace::TraceWriter`], [`EnvFolder`](crate::env::EnvFolder), [`cdb::CdbBuilder`]
//! (with [`cdb::read_database`] for `--append` and [`bear_config::BearConfig`]),
//! [`kwspec::SpecBuilder`], [`analysis::Build`], [`steps::StepGraph`] and
//! [`record::Assembler`] + [`record::ptrace::record`] /
//! [`record::preload::record`]; the record layout ([`record::events`]) and
//! the stream's fragment header ([`record::preload::Reassembler`]) are
//! shared with `tracekit-preload` only.

pub mod analysis;
pub mod bear_config;
pub mod buildlog;
pub mod cdb;
pub mod compiler;
pub mod env;
pub mod kwspec;
pub mod ninja;
pub mod record;
pub mod shell;
pub mod steps;
pub mod timeline;
pub mod trace;
