//! Allocations as rows: every allocation call with its backtrace id and
//! what became of its block (freed by which call, or leaked), by the same
//! rules as the report (a refcount resource is released by its last free;
//! an id allocated again without a free leaves the older block leaked).
//! What SQL tables (`rtrace_allocations`, `rtrace_backtraces`) need.
//!
//! **Architecture Invariant:** a row is handed out when its block is freed
//! (leaks at the end), so memory is the live set plus one entry per
//! distinct backtrace, as for the report.

use std::sync::Arc;

use tracekit_core::{Result, Warnings};

use crate::live::{resource_index, Allocated, Backtraces, Freed, LiveSet};
use crate::reader::{IntoItems, Item, Items};
use crate::record::{Frame, Header};
use crate::report::Clock as DayClock;

/// One allocation call.
#[derive(Debug, Clone)]
pub struct Allocation {
    /// The traced process (the header's `pid`).
    pub pid: Option<i64>,
    /// The resource type's name (shared by its rows, not copied per row).
    pub resource: Arc<str>,
    pub call_index: i64,
    pub function: compact_str::CompactString,
    pub size: i64,
    /// The block's address or the handle's value (`None`: a heap block
    /// freed soon after, in a `.tkmem` recorded without `--addresses`).
    pub address: Option<u64>,
    /// Milliseconds of the recorder's clock (time of day, unwrapped at
    /// midnight), when the call has a time.
    pub time_ms: Option<u64>,
    /// Distinct backtraces are numbered from 0 in order of first use.
    pub backtrace_id: u64,
    /// False for a reference added to a live refcounted block.
    pub new_block: bool,
    pub freed_index: Option<i64>,
    pub leaked: bool,
}

/// What [`for_each_allocation`] reports besides the rows.
#[derive(Debug, Default)]
pub struct AllocationStats {
    pub header: Option<Header>,
    pub calls: u64,
    pub unmatched_frees: u64,
}

/// Reads the trace from `input`; calls `on_backtrace(id, frames)` once per
/// distinct backtrace (before the first allocation that uses it is
/// handed out) and `on_allocation` once per allocation call.
pub fn for_each_allocation<R, B, A>(
    input: R,
    mut on_backtrace: B,
    mut on_allocation: A,
) -> Result<(AllocationStats, Warnings)>
where
    R: IntoItems,
    B: FnMut(u64, &[Frame]) -> Result<()>,
    A: FnMut(&Allocation) -> Result<()>,
{
    let mut asm = input.into_items();
    let mut stats = AllocationStats::default();
    let mut resources: Vec<(Arc<str>, bool)> = Vec::new();
    let mut traces = Backtraces::default();
    let mut live: LiveSet<Allocation> = LiveSet::default();
    let mut clock = DayClock::default();
    let mut addrs: Vec<u64> = Vec::new();
    let mut pid: Option<i64> = None;
    while let Some(item) = asm.next_item()? {
        match item {
            Item::Header(h) if stats.header.is_none() => {
                pid = h.get("pid").and_then(|p| p.trim().parse::<i64>().ok());
                stats.header = Some(h);
            }
            Item::Resource(r) if !resources.iter().any(|x| *x.0 == r.name) => {
                let refcount = r.is_refcount();
                resources.push((r.name.into(), refcount));
            }
            Item::Call(fc) => {
                stats.calls += 1;
                let time_ms = fc.call.timestamp.map(|t| clock.tick(t));
                let ri = resource_index(
                    resources.iter().map(|r| &*r.0),
                    fc.call.resource_type.as_deref(),
                );
                let ri = match ri {
                    Some(i) => i,
                    None => {
                        let name = fc
                            .call
                            .resource_type
                            .clone()
                            .unwrap_or_else(|| "memory".to_string());
                        resources.push((name.into(), false));
                        resources.len() - 1
                    }
                };
                let refcount = resources[ri].1;
                let key = (ri, fc.call.id);
                if fc.call.is_alloc() {
                    addrs.clear();
                    addrs.extend(fc.frames.iter().map(|f| f.addr));
                    let (id, new) = traces.intern(&addrs);
                    let backtrace_id = u64::from(id);
                    if new {
                        on_backtrace(backtrace_id, &fc.frames)?;
                    }
                    let row = Allocation {
                        pid,
                        resource: resources[ri].0.clone(),
                        call_index: fc.call.index,
                        function: fc.call.name.clone(),
                        size: fc.call.size(),
                        address: fc.call.address(),
                        time_ms,
                        backtrace_id,
                        new_block: true,
                        freed_index: None,
                        leaked: false,
                    };
                    match live.alloc(key, refcount, row) {
                        // A reference added to a live block is handed out
                        // at once (the block's own row waits for its end).
                        Allocated::Referenced(mut row) => {
                            row.new_block = false;
                            on_allocation(&row)?;
                        }
                        Allocated::New {
                            replaced: Some(mut old),
                        } => {
                            old.leaked = true;
                            on_allocation(&old)?;
                        }
                        Allocated::New { replaced: None } => {}
                    }
                } else {
                    match live.free(key, refcount) {
                        Freed::Released(mut row) => {
                            row.freed_index = Some(fc.call.index);
                            on_allocation(&row)?;
                        }
                        Freed::Unreferenced => {}
                        Freed::Unmatched => stats.unmatched_frees += 1,
                    }
                }
            }
            _ => {}
        }
    }
    let mut rest: Vec<Allocation> = live.into_values().collect();
    rest.sort_by_key(|row| row.call_index);
    for mut row in rest {
        row.leaked = true;
        on_allocation(&row)?;
    }
    let warnings = asm.take_warnings();
    Ok((stats, warnings))
}
