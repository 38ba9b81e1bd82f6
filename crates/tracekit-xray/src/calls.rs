//! Function calls as rows: each call that has both its entry and its exit,
//! with its thread, function id, entry time, duration and depth. What SQL
//! tables (`xray_calls`) and other row consumers need; `account`'s
//! statistics are aggregates of exactly these calls (as `account -d`).
//!
//! An exit closes the open calls up to its function (tail calls, unwinding:
//! llvm-xray's `-d`); an exit with no such call on its thread's stack, and
//! calls still open at the end, are counted, never guessed at.
//!
//! **Architecture Invariant:** streams in llvm-xray's load order; memory is
//! each thread's open calls.

use rustc_hash::FxHashMap;
use tracekit_core::{Result, Warnings};

use crate::trace::Trace;

/// One finished call.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub pid: u32,
    pub tid: u32,
    pub function_id: i32,
    pub entry_tsc: u64,
    /// Exit minus entry (as `account` measures it).
    pub duration_tsc: u64,
    /// Calls open below it on its thread when it was entered.
    pub depth: u32,
    /// Ended by the exit of an enclosing call, not by its own.
    pub closed_by_parent: bool,
    /// Arguments logged at entry (FDR `-fxray-instrument` with args).
    pub args: &'a [u64],
}

/// What could not form a call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CallStats {
    pub calls: u64,
    /// Exits with no matching entry on their thread.
    pub orphan_exits: u64,
    /// Calls never returned.
    pub unfinished: u64,
}

struct Frame {
    function_id: i32,
    tsc: u64,
    args: Vec<u64>,
}

/// Calls `f` with every finished call of `trace`, in exit order per thread.
pub fn for_each_call<F>(trace: &Trace<'_>, mut f: F) -> Result<(CallStats, Warnings)>
where
    F: FnMut(&Call<'_>) -> Result<()>,
{
    let mut stats = CallStats::default();
    let mut stacks: FxHashMap<u32, Vec<Frame>> = FxHashMap::default();
    let mut current: Option<u32> = None;
    let mut stack: Vec<Frame> = Vec::new();
    let warnings = trace.try_for_each(|r| {
        if r.kind.is_event() {
            return Ok(());
        }
        if current != Some(r.tid) {
            if let Some(t) = current {
                std::mem::swap(stacks.entry(t).or_default(), &mut stack);
            }
            stack = std::mem::take(stacks.entry(r.tid).or_default());
            current = Some(r.tid);
        }
        if r.kind.is_entry() {
            stack.push(Frame {
                function_id: r.func_id,
                tsc: r.tsc,
                args: r.args.clone(),
            });
            return Ok(());
        }
        let Some(at) = stack.iter().rposition(|fr| fr.function_id == r.func_id) else {
            stats.orphan_exits += 1;
            return Ok(());
        };
        while stack.len() > at {
            let depth = stack.len() - 1;
            let Some(fr) = stack.pop() else { break };
            stats.calls += 1;
            f(&Call {
                pid: r.pid,
                tid: r.tid,
                function_id: fr.function_id,
                entry_tsc: fr.tsc,
                duration_tsc: r.tsc.abs_diff(fr.tsc),
                depth: depth as u32,
                closed_by_parent: depth != at,
                args: &fr.args,
            })?;
        }
        Ok(())
    })?;
    stats.unfinished = stack.len() as u64 + stacks.values().map(|s| s.len() as u64).sum::<u64>();
    Ok((stats, warnings))
}
