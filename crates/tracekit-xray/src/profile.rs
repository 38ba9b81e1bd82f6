//! Our own analyses (not llvm-xray's): per-function total (inclusive) and
//! self time with call counts, the deepest call stacks, and a call-path
//! tree with self time per path that becomes correct flame graphs (llvm-xray
//! puts inclusive times into folded stacks, LLVM issue #63676).
//!
//! Memory: one node per distinct call path plus per-thread stacks.

use rustc_hash::FxHashMap as HashMap;

use tracekit_core::{Position, Warnings};

use crate::record::Record;

/// Totals of one function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionTotals {
    pub calls: u64,
    /// Inclusive ticks, recursion counted once (outermost frame).
    pub total: u64,
    /// Ticks in the function itself, callees excluded.
    pub self_time: u64,
}

/// A distinct call path.
#[derive(Debug, Clone)]
pub struct PathNode {
    pub func_id: i32,
    pub parent: Option<usize>,
    pub depth: u32,
    pub self_time: u64,
    pub calls: u64,
    children: HashMap<i32, usize>,
}

struct Frame {
    node: usize,
    func_id: i32,
    enter: u64,
    child_time: u64,
}

#[derive(Default)]
struct ThreadState {
    frames: Vec<Frame>,
    last_tsc: u64,
    /// Open frames per function (recursion).
    open: HashMap<i32, u32>,
}

/// Accumulates a profile from records (each thread in time order).
#[derive(Default)]
pub struct Profile {
    pub functions: HashMap<i32, FunctionTotals>,
    pub nodes: Vec<PathNode>,
    roots: HashMap<i32, usize>,
    threads: Vec<ThreadState>,
    thread_index: HashMap<u32, usize>,
    last_thread: Option<(u32, usize)>,
    pub records: u64,
    pub events: u64,
    pub orphan_exits: u64,
    pub unwound_frames: u64,
    pub unfinished_calls: u64,
    pub first_tsc: Option<u64>,
    pub last_tsc: Option<u64>,
}

impl Profile {
    fn node(&mut self, parent: Option<usize>, func_id: i32) -> usize {
        let found = match parent {
            None => self.roots.get(&func_id).copied(),
            Some(p) => self.nodes[p].children.get(&func_id).copied(),
        };
        if let Some(n) = found {
            return n;
        }
        let depth = parent.map(|p| self.nodes[p].depth + 1).unwrap_or(1);
        self.nodes.push(PathNode {
            func_id,
            parent,
            depth,
            self_time: 0,
            calls: 0,
            children: HashMap::default(),
        });
        let n = self.nodes.len() - 1;
        match parent {
            None => {
                self.roots.insert(func_id, n);
            }
            Some(p) => {
                self.nodes[p].children.insert(func_id, n);
            }
        }
        n
    }

    pub fn add(&mut self, r: &Record<'_>) {
        self.records += 1;
        self.first_tsc = Some(self.first_tsc.map_or(r.tsc, |t| t.min(r.tsc)));
        self.last_tsc = Some(self.last_tsc.map_or(r.tsc, |t| t.max(r.tsc)));
        if r.kind.is_event() {
            self.events += 1;
            return;
        }
        let ti = match self.last_thread {
            Some((t, i)) if t == r.tid => i,
            _ => {
                let n = self.threads.len();
                let i = *self.thread_index.entry(r.tid).or_insert(n);
                if i == n {
                    self.threads.push(ThreadState::default());
                }
                self.last_thread = Some((r.tid, i));
                i
            }
        };
        let mut ts = std::mem::take(&mut self.threads[ti]);
        ts.last_tsc = ts.last_tsc.max(r.tsc);
        if r.kind.is_entry() {
            let parent = ts.frames.last().map(|f| f.node);
            let node = self.node(parent, r.func_id);
            self.nodes[node].calls += 1;
            *ts.open.entry(r.func_id).or_default() += 1;
            ts.frames.push(Frame {
                node,
                func_id: r.func_id,
                enter: r.tsc,
                child_time: 0,
            });
        } else {
            match ts.frames.iter().rposition(|f| f.func_id == r.func_id) {
                None => self.orphan_exits += 1,
                Some(at) => {
                    let unwound = (ts.frames.len() - at - 1) as u64;
                    self.unwound_frames += unwound;
                    while ts.frames.len() > at {
                        self.close(&mut ts, r.tsc);
                    }
                }
            }
        }
        self.threads[ti] = ts;
    }

    fn close(&mut self, ts: &mut ThreadState, at: u64) {
        let Some(f) = ts.frames.pop() else { return };
        let dur = at.saturating_sub(f.enter);
        let self_time = dur.saturating_sub(f.child_time);
        if let Some(parent) = ts.frames.last_mut() {
            parent.child_time = parent.child_time.saturating_add(dur);
        }
        let open = ts.open.entry(f.func_id).or_default();
        *open = open.saturating_sub(1);
        let outermost = *open == 0;
        let t = self.functions.entry(f.func_id).or_default();
        t.calls += 1;
        t.self_time = t.self_time.saturating_add(self_time);
        if outermost {
            t.total = t.total.saturating_add(dur);
        }
        self.nodes[f.node].self_time = self.nodes[f.node].self_time.saturating_add(self_time);
    }

    /// Closes calls still open at the end of the trace at their thread's
    /// last timestamp, and returns the warnings about what was odd.
    pub fn finish(&mut self) -> Warnings {
        let mut threads = std::mem::take(&mut self.threads);
        for ts in threads.iter_mut() {
            while !ts.frames.is_empty() {
                self.unfinished_calls += 1;
                let last = ts.last_tsc;
                self.close(ts, last);
            }
        }
        let mut w = Warnings::default();
        if self.orphan_exits > 0 {
            w.push(
                Position::Unknown,
                crate::record::orphan_exits_message(self.orphan_exits),
            );
        }
        if self.unfinished_calls > 0 {
            w.push(
                Position::Unknown,
                format!(
                    "{} calls never returned before the trace ended; closed at their thread's last timestamp",
                    self.unfinished_calls
                ),
            );
        }
        if self.unwound_frames > 0 {
            w.push(
                Position::Unknown,
                format!(
                    "{} frames had no exit of their own and ended with an outer function's exit",
                    self.unwound_frames
                ),
            );
        }
        w
    }

    /// Function ids of a path, outermost first.
    pub fn path(&self, node: usize) -> Vec<i32> {
        let mut v = Vec::new();
        let mut n = Some(node);
        while let Some(i) = n {
            v.push(self.nodes[i].func_id);
            n = self.nodes[i].parent;
        }
        v.reverse();
        v
    }

    /// The `n` deepest distinct call paths (leaves), deepest first.
    pub fn deepest(&self, n: usize) -> Vec<usize> {
        let mut leaves: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].children.is_empty())
            .collect();
        leaves.sort_by(|&a, &b| {
            self.nodes[b]
                .depth
                .cmp(&self.nodes[a].depth)
                .then(a.cmp(&b))
        });
        leaves.truncate(n);
        leaves
    }
}

/// The hottest functions of a [`Profile`], each list at most `top` long.
#[derive(Debug, Clone, Default)]
pub struct Hottest {
    /// By total (inclusive) time, then function id.
    pub by_total: Vec<(i32, FunctionTotals)>,
    /// By self time, then function id.
    pub by_self: Vec<(i32, FunctionTotals)>,
    /// By calls, then function id.
    pub by_calls: Vec<(i32, FunctionTotals)>,
}

impl Profile {
    /// The `top` functions by total time, self time and calls.
    pub fn hottest(&self, top: usize) -> Hottest {
        let mut funcs: Vec<(i32, &FunctionTotals)> =
            self.functions.iter().map(|(k, v)| (*k, v)).collect();
        let mut pick = |key: fn(&FunctionTotals) -> u64| {
            funcs.sort_by(|a, b| key(b.1).cmp(&key(a.1)).then(a.0.cmp(&b.0)));
            funcs
                .iter()
                .take(top)
                .map(|&(id, t)| (id, t.clone()))
                .collect::<Vec<_>>()
        };
        Hottest {
            by_total: pick(|t| t.total),
            by_self: pick(|t| t.self_time),
            by_calls: pick(|t| t.calls),
        }
    }
}
