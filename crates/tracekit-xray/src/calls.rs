//! Function calls: entries and exits paired per thread ([`CallStacks`]),
//! each call that has both its records with its thread, function id,
//! entry time, duration and depth. The timeline mapping
//! (`timeline::map_trace`) pairs with it, and so do SQL tables
//! (`xray_calls`, written from that same pass); `account`'s statistics are
//! aggregates of exactly these calls (as `account -d`).
//!
//! An exit closes the open calls up to its function (tail calls, unwinding:
//! llvm-xray's `-d`); an exit with no such call on its thread's stack, and
//! calls still open at the end, are counted, never guessed at.
//!
//! **Architecture Invariant:** streams in llvm-xray's load order; memory is
//! each thread's open calls.

use rustc_hash::FxHashMap;
use tracekit_core::{Result, Warnings};

use crate::record::Record;
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

/// An open call.
#[derive(Debug, Clone)]
pub struct Frame {
    pub function_id: i32,
    pub tsc: u64,
    pub args: Vec<u64>,
}

/// Every thread's open calls (keyed by thread id, as llvm-xray keys them).
/// The thread being read is kept out of the map (FDR logs come thread by
/// thread) and put back when a record of another thread comes.
#[derive(Default)]
pub struct CallStacks {
    parked: FxHashMap<u32, Vec<Frame>>,
    current: Option<u32>,
    stack: Vec<Frame>,
    pub stats: CallStats,
}

impl CallStacks {
    pub fn new() -> Self {
        Self::default()
    }

    fn switch_to(&mut self, tid: u32) {
        if self.current != Some(tid) {
            if let Some(t) = self.current {
                std::mem::swap(self.parked.entry(t).or_default(), &mut self.stack);
            }
            self.stack = std::mem::take(self.parked.entry(tid).or_default());
            self.current = Some(tid);
        }
    }

    /// Opens a call (an entry record).
    pub fn enter(&mut self, r: &Record<'_>) {
        self.switch_to(r.tid);
        self.stack.push(Frame {
            function_id: r.func_id,
            tsc: r.tsc,
            args: r.args.clone(),
        });
    }

    /// Closes the calls an exit record ends, innermost first, handing each
    /// to `each`. Returns false for an exit without a matching open call
    /// (counted in [`CallStats::orphan_exits`]).
    pub fn exit<E>(
        &mut self,
        r: &Record<'_>,
        mut each: impl FnMut(&Call<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<bool, E> {
        self.switch_to(r.tid);
        let Some(at) = self
            .stack
            .iter()
            .rposition(|fr| fr.function_id == r.func_id)
        else {
            self.stats.orphan_exits += 1;
            return Ok(false);
        };
        while self.stack.len() > at {
            let depth = self.stack.len() - 1;
            let Some(fr) = self.stack.pop() else { break };
            self.stats.calls += 1;
            each(&Call {
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
        Ok(true)
    }

    /// The calls still open, per thread seen (in the map's order); counted
    /// in [`CallStats::unfinished`].
    pub fn finish(mut self) -> (CallStats, Vec<(u32, Vec<Frame>)>) {
        if let Some(t) = self.current.take() {
            std::mem::swap(self.parked.entry(t).or_default(), &mut self.stack);
        }
        // The map's order (as the timeline has always closed them): every
        // thread seen has its entry, so the order depends on the ids only.
        let open: Vec<(u32, Vec<Frame>)> = self.parked.into_iter().collect();
        self.stats.unfinished = open.iter().map(|(_, s)| s.len() as u64).sum();
        (self.stats, open)
    }
}

/// Calls `f` with every finished call of `trace`, in exit order per thread.
pub fn for_each_call<F>(trace: &Trace<'_>, mut f: F) -> Result<(CallStats, Warnings)>
where
    F: FnMut(&Call<'_>) -> Result<()>,
{
    let mut stacks = CallStacks::new();
    let warnings = trace.try_for_each(|r| {
        if r.kind.is_entry() {
            stacks.enter(r);
        } else if !r.kind.is_event() {
            stacks.exit(r, &mut f)?;
        }
        Ok(())
    })?;
    let (stats, _) = stacks.finish();
    Ok((stats, warnings))
}
