//! LLVM XRay traces: reading FDR (versions 1-5) and basic-mode (versions
//! 1-3) logs of either byte order and llvm-xray's YAML traces as streams of
//! records, resolving function
//! ids through an instrumented binary's `xray_instr_map`, llvm-xray's
//! analyses (`account`, `stack`, `graph`, `graph-diff`) and outputs (`yaml`,
//! `trace_event`, `fdr-dump`), and writers for FDR v5 and basic v3 logs.
//!
//! Layers: [`header`] → [`fdr`] (record framing) / [`basic`] → [`trace`]
//! (block index, per-thread timestamp reconstruction, load-order and
//! time-sorted streams of [`record::Record`]) → analyses and writers.
//!
//! **Architecture Invariant:** readers work on a byte slice (a memory map)
//! and keep per-thread state only; memory is bounded by threads × stack
//! depth (plus one small entry per FDR buffer), never by the record count.
//!
//! **Architecture Invariant:** `account` and `stack` on FDR logs run on all
//! cores ([`trace::Trace::split_load_order`] cuts llvm-xray's load order at
//! buffer boundaries; each part starts from an empty stack and defers the
//! exits that reach below it; an in-order merge replays them) and give
//! exactly what the sequential [`account::Accountant`] / [`stack::StackTrie`]
//! give fed in load order (`tests/parallel.rs`, the fuzz target).

pub mod account;
pub mod basic;
pub mod calls;
pub mod commands;
pub mod densemap;
pub mod fdr;
pub mod fdr_dump;
pub mod graph;
pub mod header;
pub mod instr_map;
pub mod names;
pub mod profile;
pub mod record;
pub mod report;
pub mod stack;
pub mod summary;
pub mod timeline;
pub mod trace;
pub mod trace_event;
pub mod writer;
pub mod yaml;
pub mod yaml_log;

pub use header::{parse_header, Endian, FileHeader, LogKind};
pub use record::{Record, RecordKind};
pub use trace::Trace;
