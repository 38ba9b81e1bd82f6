//! `stack`: call-stack tries per thread (llvm-xray's `StackTrie`) with its
//! top-10 reports and flame-graph ("folded") output, byte for byte.
//!
//! Deliberate difference: an exit with an empty stack on its thread (the
//! trace starts mid-call) is counted as a warning instead of failing the
//! run; llvm-xray needs `-k` for it.

use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::densemap;
use crate::names::FunctionNames;
use crate::record::Record;

#[derive(Debug, Clone, Default)]
pub struct Node {
    pub func_id: i32,
    pub parent: Option<usize>,
    pub callees: Vec<usize>,
    /// The callees' function ids (same order), searched on every entry.
    callee_ids: Vec<i32>,
    pub terminal_count: u64,
    pub terminal_sum: u64,
    pub intermediate_count: u64,
    pub intermediate_sum: u64,
}

/// A stack node's time: a call's duration counts as *terminal* when it
/// was the deepest call at its exit, else as *intermediate* (llvm-xray's
/// rule: an exit right after another exit closes an intermediate call).
trait Charge {
    fn charge(&mut self, duration: u64, intermediate: bool);
}

macro_rules! impl_charge {
    ($($t:ty),*) => {$(
        impl Charge for $t {
            #[inline]
            fn charge(&mut self, duration: u64, intermediate: bool) {
                if intermediate {
                    self.intermediate_count += 1;
                    self.intermediate_sum = self.intermediate_sum.wrapping_add(duration);
                } else {
                    self.terminal_count += 1;
                    self.terminal_sum = self.terminal_sum.wrapping_add(duration);
                }
            }
        }
    )*};
}
impl_charge!(Node, LocalNode);

/// A node index: `usize` in the whole trie, `u32` in a segment's.
trait NodeIx: Copy {
    fn ix(self) -> usize;
    fn from_ix(i: usize) -> Self;
}

impl NodeIx for usize {
    #[inline(always)]
    fn ix(self) -> usize {
        self
    }
    fn from_ix(i: usize) -> usize {
        i
    }
}

impl NodeIx for u32 {
    #[inline(always)]
    fn ix(self) -> usize {
        self as usize
    }
    /// (Segments hold far fewer than 2^32 nodes: a node per entry record
    /// of at most a few buffers.)
    fn from_ix(i: usize) -> u32 {
        i as u32
    }
}

/// An exit at `exit_tsc` returns from the open calls `closed` (node,
/// entry tsc, function; outermost first): all but the deepest as
/// intermediate, the deepest as intermediate or terminal.
fn charge_exit<N: Charge, I: NodeIx>(
    nodes: &mut [N],
    closed: &[(I, u64, i32)],
    exit_tsc: u64,
    deepest_intermediate: bool,
) {
    let Some((&(deepest, start, _), above)) = closed.split_last() else {
        return;
    };
    for &(n, tsc, _) in above {
        nodes[n.ix()].charge(tsc.abs_diff(exit_tsc), true);
    }
    nodes[deepest.ix()].charge(start.abs_diff(exit_tsc), deepest_intermediate);
}

/// The error of an exit without its entry on the stack (without -k).
fn unmatched_exit(tid: u32, func_id: i32, tsc: u64) -> Error {
    Error::malformed(
        Position::Unknown,
        format!(
            "thread {tid}: exit of function {func_id} at tsc {tsc} has no matching entry on the stack (use -k to keep going)"
        ),
    )
}

/// A trie node whose callees are found by function id.
trait TrieNode {
    type Ix: NodeIx;
    fn new(func_id: i32, parent: Option<Self::Ix>) -> Self;
    fn func_id(&self) -> i32;
    /// The callees and their function ids (same order).
    fn callees(&self) -> (&[Self::Ix], &[i32]);
    fn push_callee(&mut self, n: Self::Ix, func_id: i32);
}

impl TrieNode for Node {
    type Ix = usize;
    fn new(func_id: i32, parent: Option<usize>) -> Node {
        Node {
            func_id,
            parent,
            ..Default::default()
        }
    }
    #[inline(always)]
    fn func_id(&self) -> i32 {
        self.func_id
    }
    #[inline(always)]
    fn callees(&self) -> (&[usize], &[i32]) {
        (&self.callees, &self.callee_ids)
    }
    fn push_callee(&mut self, n: usize, func_id: i32) {
        self.callees.push(n);
        self.callee_ids.push(func_id);
    }
}

impl TrieNode for LocalNode {
    type Ix = u32;
    /// (The parent of a segment's node is implied by the trie's shape.)
    fn new(func_id: i32, _parent: Option<u32>) -> LocalNode {
        LocalNode {
            func_id,
            ..Default::default()
        }
    }
    #[inline(always)]
    fn func_id(&self) -> i32 {
        self.func_id
    }
    #[inline(always)]
    fn callees(&self) -> (&[u32], &[i32]) {
        (&self.callees, &self.callee_ids)
    }
    fn push_callee(&mut self, n: u32, func_id: i32) {
        self.callees.push(n);
        self.callee_ids.push(func_id);
    }
}

/// Where a call is made: under an open call's node, or at the bottom of
/// the stack among these roots.
enum Caller<'r, I> {
    Node(I),
    Root(&'r mut Vec<I>),
}

/// The node of a call of `func_id` from `caller`: the one of an earlier
/// such call, else a new one (callees and roots in first-call order).
#[inline(always)]
fn callee_node<N: TrieNode>(nodes: &mut Vec<N>, caller: Caller<'_, N::Ix>, func_id: i32) -> N::Ix {
    let found = match &caller {
        Caller::Node(p) => {
            let (callees, ids) = nodes[p.ix()].callees();
            ids.iter().position(|&f| f == func_id).map(|i| callees[i])
        }
        Caller::Root(roots) => roots
            .iter()
            .copied()
            .find(|&n| nodes[n.ix()].func_id() == func_id),
    };
    match found {
        Some(n) => n,
        None => new_callee(nodes, caller, func_id),
    }
}

#[cold]
fn new_callee<N: TrieNode>(nodes: &mut Vec<N>, caller: Caller<'_, N::Ix>, func_id: i32) -> N::Ix {
    let n = N::Ix::from_ix(nodes.len());
    match caller {
        Caller::Node(p) => {
            nodes.push(N::new(func_id, Some(p)));
            nodes[p.ix()].push_callee(n, func_id);
        }
        Caller::Root(roots) => {
            nodes.push(N::new(func_id, None));
            roots.push(n);
        }
    }
    n
}

/// The thread's roots (listing the thread at its first root).
fn thread_roots<'r>(
    roots: &'r mut HashMap<u32, Vec<usize>>,
    root_order: &mut Vec<u32>,
    tid: u32,
) -> &'r mut Vec<usize> {
    roots.entry(tid).or_insert_with(|| {
        root_order.push(tid);
        Vec::new()
    })
}

/// What the flame output aggregates (`-aggregation-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    Time,
    Count,
}

/// The tries of all threads.
#[derive(Default)]
pub struct StackTrie {
    pub nodes: Vec<Node>,
    /// Thread ids in first-root order, and their roots.
    root_order: Vec<u32>,
    roots: HashMap<u32, Vec<usize>>,
    /// Per thread: (node, entry tsc, function id) of the open calls.
    stacks: Vec<Vec<(usize, u64, i32)>>,
    stack_index: HashMap<u32, usize>,
    last_thread: Option<(u32, usize)>,
    was_last_exit: bool,
    pub keep_going: bool,
    pub warnings: Warnings,
    orphan_exits: u64,
    unmatched: u64,
    /// llvm-xray's rule: an exit on an empty stack is an error (without
    /// -k) like any exit without its entry, not a set-aside record. For
    /// inputs that cannot have lost their oldest records (YAML traces).
    pub orphan_exits_are_errors: bool,
    /// With `orphan_exits_are_errors`: (function id, thread, record type)
    /// of the exits skipped with -k (the first thousand), for the caller
    /// to report in llvm-xray's words.
    pub unmatched_records: Vec<(i32, u32, u16)>,
    /// The exit that made [`StackTrie::add`] fail.
    pub last_unmatched: Option<(i32, u32, u16)>,
    unmatched_pending: bool,
}

impl StackTrie {
    pub fn new(keep_going: bool) -> StackTrie {
        StackTrie {
            keep_going,
            ..Default::default()
        }
    }

    /// Adds one record (load order, as llvm-xray feeds them).
    pub fn add(&mut self, r: &Record<'_>) -> Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        let i = match self.last_thread {
            Some((t, i)) if t == r.tid => i,
            _ => self.stack_slot(r.tid),
        };
        let mut ts = std::mem::take(&mut self.stacks[i]);
        // A small error type on the hot path; the full error only when needed.
        let unmatched = self.add_inner(r, &mut ts);
        self.stacks[i] = ts;
        if unmatched {
            self.last_unmatched = Some((r.func_id, r.tid, r.record_type));
            return Err(unmatched_exit(r.tid, r.func_id, r.tsc));
        }
        if self.orphan_exits_are_errors && r.kind.is_exit() && self.unmatched_pending {
            self.unmatched_pending = false;
            if self.unmatched_records.len() < 1000 {
                self.unmatched_records
                    .push((r.func_id, r.tid, r.record_type));
            }
        }
        Ok(())
    }

    /// Returns true for an exit without a matching entry (without -k).
    #[inline]
    fn add_inner(&mut self, r: &Record<'_>, ts: &mut Vec<(usize, u64, i32)>) -> bool {
        if r.kind.is_entry() {
            self.was_last_exit = false;
            let caller = match ts.last() {
                Some(&(top, _, _)) => Caller::Node(top),
                None => Caller::Root(thread_roots(&mut self.roots, &mut self.root_order, r.tid)),
            };
            let node = callee_node(&mut self.nodes, caller, r.func_id);
            ts.push((node, r.tsc, r.func_id));
            return false;
        }
        let was_last_exit = self.was_last_exit;
        self.was_last_exit = true;
        if ts.is_empty() {
            if self.orphan_exits_are_errors {
                if !self.keep_going {
                    return true;
                }
                self.unmatched_pending = true;
                return false;
            }
            self.orphan_exits += 1;
            return false;
        }
        let matched = ts.iter().rposition(|&(_, _, f)| f == r.func_id);
        let from = matched.unwrap_or(0);
        charge_exit(&mut self.nodes, &ts[from..], r.tsc, was_last_exit);
        ts.truncate(from);
        if matched.is_none() {
            if !self.keep_going {
                return true;
            }
            if self.orphan_exits_are_errors {
                self.unmatched_pending = true;
            } else {
                self.unmatched += 1;
            }
        }
        false
    }

    /// Warnings about skipped records.
    pub fn finish_warnings(&mut self) -> Warnings {
        let mut w = std::mem::take(&mut self.warnings);
        let open: u64 = self.stacks.iter().map(|s| s.len() as u64).sum();
        if open > 0 {
            w.push(Position::Unknown, crate::record::open_calls_message(open));
        }
        if self.orphan_exits > 0 {
            w.push(
                Position::Unknown,
                crate::record::orphan_exits_message(self.orphan_exits),
            );
        }
        if self.unmatched > 0 {
            w.push(
                Position::Unknown,
                format!(
                    "{} exits with no matching entry on their stack (-k: the stack was unwound)",
                    self.unmatched
                ),
            );
        }
        w
    }

    pub fn is_empty(&self) -> bool {
        self.root_order.is_empty()
    }

    /// Threads in llvm-xray's order with their roots.
    pub fn threads(&self) -> Vec<(u32, Vec<usize>)> {
        let hashes: Vec<u32> = self
            .root_order
            .iter()
            .map(|&t| densemap::hash_u32(t))
            .collect();
        densemap::iteration_order(&hashes)
            .into_iter()
            .map(|i| {
                let t = self.root_order[i];
                (t, self.roots.get(&t).cloned().unwrap_or_default())
            })
            .collect()
    }

    /// All roots, threads in llvm-xray's order.
    pub fn all_roots(&self) -> Vec<usize> {
        self.threads().into_iter().flat_map(|(_, r)| r).collect()
    }

    /// Merges the tries of all threads by function (`-aggregate-threads`),
    /// adding merged nodes to the arena; returns the merged roots.
    pub fn merge_across_threads(&mut self) -> Vec<usize> {
        let mut merged: Vec<usize> = Vec::new();
        for (_, roots) in self.threads() {
            for n in roots {
                let f = self.nodes[n].func_id;
                match merged.iter().position(|&m| self.nodes[m].func_id == f) {
                    None => merged.push(n),
                    Some(at) => {
                        let left = merged.remove(at);
                        let m = self.merge_nodes(left, n, None);
                        merged.push(m);
                    }
                }
            }
        }
        merged
    }

    fn merge_nodes(&mut self, left: usize, right: usize, parent: Option<usize>) -> usize {
        let (l, r) = (&self.nodes[left], &self.nodes[right]);
        let node = Node {
            func_id: l.func_id,
            parent,
            callees: Vec::new(),
            callee_ids: Vec::new(),
            terminal_count: l.terminal_count + r.terminal_count,
            terminal_sum: l.terminal_sum.wrapping_add(r.terminal_sum),
            intermediate_count: l.intermediate_count + r.intermediate_count,
            intermediate_sum: l.intermediate_sum.wrapping_add(r.intermediate_sum),
        };
        let left_callees = l.callees.clone();
        let right_callees = r.callees.clone();
        self.nodes.push(node);
        let id = self.nodes.len() - 1;
        // Left callees by function id, in llvm-xray's DenseMap order.
        let mut pending: Vec<Option<usize>> = left_callees.iter().map(|&c| Some(c)).collect();
        for rc in right_callees {
            let f = self.nodes[rc].func_id;
            let hit = pending
                .iter()
                .position(|p| p.is_some_and(|c| self.nodes[c].func_id == f));
            let child = match hit {
                Some(i) => {
                    let lc = pending[i].take().unwrap_or(rc);
                    self.merge_nodes(lc, rc, Some(id))
                }
                None => rc,
            };
            self.nodes[id].callees.push(child);
            self.nodes[id].callee_ids.push(f);
        }
        let hashes: Vec<u32> = left_callees
            .iter()
            .map(|&c| densemap::hash_u32(self.nodes[c].func_id as u32))
            .collect();
        for i in densemap::iteration_order(&hashes) {
            if let Some(c) = pending[i] {
                let f = self.nodes[c].func_id;
                self.nodes[id].callees.push(c);
                self.nodes[id].callee_ids.push(f);
            }
        }
        id
    }

    fn value(&self, n: usize, agg: Aggregation) -> u64 {
        let node = &self.nodes[n];
        match agg {
            Aggregation::Time => node.terminal_sum.wrapping_add(node.intermediate_sum),
            Aggregation::Count => node.terminal_count + node.intermediate_count,
        }
    }

    /// Folded stacks for flame graphs (`-all-stacks -stack-format=flame`).
    pub fn write_flame<W: Write + ?Sized>(
        &self,
        out: &mut W,
        names: &FunctionNames,
        roots: &[usize],
        thread: Option<u32>,
        agg: Aggregation,
    ) -> std::io::Result<()> {
        let mut line = Vec::new();
        for &root in roots {
            let mut todo = vec![root];
            while let Some(n) = todo.pop() {
                line.clear();
                if let Some(t) = thread {
                    let _ = write!(line, "thread_{t};");
                }
                let mut lineage = vec![n];
                while let Some(p) = self.nodes[*lineage.last().unwrap_or(&n)].parent {
                    lineage.push(p);
                }
                for &m in lineage.iter().rev() {
                    line.extend_from_slice(
                        names.symbol_or_number(self.nodes[m].func_id).as_bytes(),
                    );
                    line.push(b';');
                }
                let _ = writeln!(line, " {}", self.value(n, agg));
                out.write_all(&line)?;
                todo.extend_from_slice(&self.nodes[n].callees);
            }
        }
        Ok(())
    }

    fn write_stack<W: Write + ?Sized>(
        &self,
        out: &mut W,
        leaf: usize,
        names: &FunctionNames,
    ) -> std::io::Result<()> {
        let mut chain = vec![leaf];
        while let Some(p) = self.nodes[*chain.last().unwrap_or(&leaf)].parent {
            chain.push(p);
        }
        writeln!(
            out,
            "{:<5} {:<60} {:>12} {:>16}",
            "lvl", "function", "count", "sum"
        )?;
        let fit = |s: &str| -> String {
            if s.len() > 60 {
                let mut cut = 57;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}...", &s[..cut])
            } else {
                s.to_string()
            }
        };
        let mut level = 0;
        for &n in chain[1..].iter().rev() {
            let node = &self.nodes[n];
            writeln!(
                out,
                "#{:<4} {:<60} {:>12} {:>16}",
                level,
                fit(&names.symbol_or_number(node.func_id)),
                node.intermediate_count,
                node.intermediate_sum as i64
            )?;
            level += 1;
        }
        let node = &self.nodes[leaf];
        writeln!(
            out,
            "#{:<4} {:<60} {:>12} {:>16}",
            level,
            fit(&names.symbol_or_number(node.func_id)),
            node.terminal_count,
            node.terminal_sum as i64
        )?;
        writeln!(out)
    }

    /// The human report: unique stacks and the top 10 by leaf sum and count.
    pub fn write_report<W: Write + ?Sized>(
        &self,
        out: &mut W,
        names: &FunctionNames,
        roots: &[usize],
    ) -> std::io::Result<()> {
        let mut by_sum: Vec<(usize, u64)> = Vec::new();
        let mut by_count: Vec<(usize, u64)> = Vec::new();
        let mut unique = 0u64;
        let insert = |v: &mut Vec<(usize, u64)>, e: (usize, u64)| {
            let at = v.partition_point(|x| x.1 > e.1);
            v.insert(at, e);
            if v.len() == 11 {
                v.pop();
            }
        };
        for &root in roots {
            let mut todo = vec![root];
            while let Some(n) = todo.pop() {
                let node = &self.nodes[n];
                if node.terminal_count > 0 {
                    unique += 1;
                    insert(&mut by_sum, (n, node.terminal_sum));
                    insert(&mut by_count, (n, node.terminal_count));
                }
                todo.extend_from_slice(&node.callees);
            }
        }
        writeln!(out)?;
        writeln!(out, "Unique Stacks: {unique}")?;
        writeln!(out, "Top 10 Stacks by leaf sum:\n")?;
        for &(n, s) in &by_sum {
            writeln!(out, "Sum: {s}")?;
            self.write_stack(out, n, names)?;
        }
        writeln!(out)?;
        writeln!(out, "Top 10 Stacks by leaf count:\n")?;
        for &(n, c) in &by_count {
            writeln!(out, "Count: {c}")?;
            self.write_stack(out, n, names)?;
        }
        writeln!(out)
    }
}

/// A node of one segment's trie. Its parent is a node of the segment or,
/// for a call opened on the segment's empty stack, the call that was
/// innermost in the whole trace then (known only at the merge).
#[derive(Default)]
struct LocalNode {
    func_id: i32,
    callees: Vec<u32>,
    callee_ids: Vec<i32>,
    terminal_count: u64,
    terminal_sum: u64,
    intermediate_count: u64,
    intermediate_sum: u64,
}

/// An exit that reached below the segment's own stack (or found it empty):
/// the merge applies it to the calls opened before the segment.
struct DeferredExit {
    func_id: i32,
    tsc: u64,
    /// The segment's own calls were open (and are closed already): the
    /// deepest call of the whole stack was one of them.
    had_local: bool,
    /// Whether the function record before was an exit; `None`: it lies in
    /// an earlier segment.
    was_last_exit: Option<bool>,
}

/// One segment's share of `stack`.
struct StackPart {
    tid: u32,
    nodes: Vec<LocalNode>,
    /// `contexts[i]`: the segment's roots opened after `i` deferred exits.
    contexts: Vec<Vec<u32>>,
    deferred: Vec<DeferredExit>,
    /// Calls still open at the segment's end, innermost last.
    open: Vec<(u32, u64)>,
    /// Whether the segment's last function record was an exit (`None`: it
    /// has none).
    last_was_exit: Option<bool>,
    error: Option<Error>,
    warnings: Warnings,
    /// See [`crate::trace::ThreadCursor::tid_switched`].
    tid_switched: bool,
}

/// The per-record work of [`stack_segment`].
struct SegmentTrie {
    nodes: Vec<LocalNode>,
    contexts: Vec<Vec<u32>>,
    deferred: Vec<DeferredExit>,
    /// (node, entry tsc, function id) of the segment's open calls.
    open: Vec<(u32, u64, i32)>,
    last_was_exit: Option<bool>,
}

impl crate::record::FunctionSink for SegmentTrie {
    #[inline(always)]
    fn function(&mut self, kind: crate::RecordKind, func_id: i32, tsc: u64) -> Result<()> {
        if kind.is_entry() {
            self.last_was_exit = Some(false);
            let caller = match self.open.last() {
                Some(&(top, _, _)) => Caller::Node(top),
                None => {
                    if self.contexts.is_empty() {
                        self.contexts.push(Vec::new());
                    }
                    let last = self.contexts.len() - 1;
                    Caller::Root(&mut self.contexts[last])
                }
            };
            let node = callee_node(&mut self.nodes, caller, func_id);
            self.open.push((node, tsc, func_id));
            return Ok(());
        }
        let was = self.last_was_exit;
        self.last_was_exit = Some(true);
        if let Some(&(deepest, start, f)) = self.open.last() {
            if f == func_id {
                // The common case: the innermost call returns.
                self.open.pop();
                self.nodes[deepest as usize].charge(start.abs_diff(tsc), was == Some(true));
                return Ok(());
            }
        }
        self.unwind(func_id, tsc, was);
        Ok(())
    }
}

impl SegmentTrie {
    /// An exit of another than the innermost call: the calls inside it
    /// return too; deferred when it reaches below the segment.
    #[cold]
    fn unwind(&mut self, func_id: i32, tsc: u64, was: Option<bool>) {
        let open = &mut self.open;
        let matched = open.iter().rposition(|&(_, _, f)| f == func_id);
        let had_local = !open.is_empty();
        if had_local {
            let from = matched.unwrap_or(0);
            // `was` is known: the open call came before in this segment.
            charge_exit(&mut self.nodes, &open[from..], tsc, was == Some(true));
            open.truncate(from);
        }
        if matched.is_none() {
            self.deferred.push(DeferredExit {
                func_id,
                tsc,
                had_local,
                was_last_exit: was,
            });
            self.contexts.push(Vec::new());
        }
    }
}

fn stack_segment(trace: &crate::Trace<'_>, segment: &crate::trace::Segment) -> StackPart {
    let mut sink = SegmentTrie {
        nodes: Vec::new(),
        contexts: vec![Vec::new()],
        deferred: Vec::new(),
        open: Vec::new(),
        last_was_exit: None,
    };
    let mut cursor = trace.segment_cursor(segment);
    let res = cursor.drive_functions(&mut sink);
    StackPart {
        tid: trace.threads[segment.thread].tid as u32,
        nodes: sink.nodes,
        contexts: sink.contexts,
        deferred: sink.deferred,
        open: sink.open.into_iter().map(|(n, t, _)| (n, t)).collect(),
        last_was_exit: sink.last_was_exit,
        error: res.err(),
        warnings: std::mem::take(&mut cursor.warnings),
        tid_switched: cursor.tid_switched,
    }
}

impl StackTrie {
    /// Adds the records of an FDR trace like [`StackTrie::add`] in load
    /// order, the load order cut into `parts` parts built on `workers`
    /// threads: each part builds a trie from an empty stack, deferring the
    /// exits that reach below it; the merge grafts the parts' tries, in
    /// order, onto the calls open then and replays the deferred exits.
    /// Returns the warnings of the record streams.
    pub fn add_fdr_parallel(
        &mut self,
        trace: &crate::Trace<'_>,
        workers: usize,
        parts: usize,
    ) -> Result<Warnings> {
        if !trace.is_fdr_log() {
            return trace.try_for_each(|r| self.add(r));
        }
        let results = trace.par_groups(
            workers,
            parts,
            |segments| {
                segments
                    .iter()
                    .map(|(_, s)| stack_segment(trace, s))
                    .collect::<Vec<_>>()
            },
            |parts| parts.iter().any(|p| p.tid_switched),
        );
        let Some(results) = results else {
            return trace.try_for_each(|r| self.add(r));
        };
        let mut warnings = Warnings::default();
        for part in results.into_iter().flatten() {
            self.merge_part(part, &mut warnings)?;
        }
        Ok(warnings)
    }

    /// The index of the thread's stack (made if new), remembered as the
    /// last thread.
    fn stack_slot(&mut self, tid: u32) -> usize {
        let n = self.stacks.len();
        let i = *self.stack_index.entry(tid).or_insert(n);
        if i == n {
            self.stacks.push(Vec::new());
        }
        self.last_thread = Some((tid, i));
        i
    }

    fn merge_part(&mut self, mut part: StackPart, warnings: &mut Warnings) -> Result<()> {
        let slot = self.stack_slot(part.tid);
        let mut stack = std::mem::take(&mut self.stacks[slot]);
        let res = self.merge_part_on(&part, &mut stack);
        self.stacks[slot] = stack;
        res?;
        // A decoding error ends the stream after the records before it.
        if let Some(e) = part.error.take() {
            return Err(e);
        }
        if let Some(w) = part.last_was_exit {
            self.was_last_exit = w;
        }
        warnings.extend(part.warnings);
        Ok(())
    }

    fn merge_part_on(
        &mut self,
        part: &StackPart,
        stack: &mut Vec<(usize, u64, i32)>,
    ) -> Result<()> {
        let mut map = vec![usize::MAX; part.nodes.len()];
        for (i, roots) in part.contexts.iter().enumerate() {
            let parent = stack.last().map(|&(n, _, _)| n);
            for &root in roots {
                self.graft(&part.nodes, root, parent, part.tid, &mut map);
            }
            let Some(d) = part.deferred.get(i) else {
                continue;
            };
            let was_last_exit = d.was_last_exit.unwrap_or(self.was_last_exit);
            if stack.is_empty() && !d.had_local {
                self.orphan_exits += 1;
                continue;
            }
            let matched = stack.iter().rposition(|&(_, _, f)| f == d.func_id);
            if !stack.is_empty() {
                let from = matched.unwrap_or(0);
                // The deepest open call was above the segment's own calls
                // (which returned first: intermediate) or is this one.
                charge_exit(
                    &mut self.nodes,
                    &stack[from..],
                    d.tsc,
                    was_last_exit || d.had_local,
                );
                stack.truncate(from);
            }
            if matched.is_none() {
                if !self.keep_going {
                    return Err(unmatched_exit(part.tid, d.func_id, d.tsc));
                }
                self.unmatched += 1;
            }
        }
        if part.error.is_some() {
            return Ok(());
        }
        for &(n, tsc) in &part.open {
            let local = n as usize;
            stack.push((map[local], tsc, part.nodes[local].func_id));
        }
        Ok(())
    }

    /// Adds the segment's subtrie at `root` under `parent` (a thread root
    /// when `None`), matching nodes by function like [`StackTrie::add`]
    /// would have, callees in the order they were first called.
    fn graft(
        &mut self,
        local: &[LocalNode],
        root: u32,
        parent: Option<usize>,
        tid: u32,
        map: &mut [usize],
    ) {
        let mut todo: Vec<(u32, Option<usize>)> = vec![(root, parent)];
        while let Some((l, p)) = todo.pop() {
            let ln = &local[l as usize];
            let caller = match p {
                Some(p) => Caller::Node(p),
                None => Caller::Root(thread_roots(&mut self.roots, &mut self.root_order, tid)),
            };
            let g = callee_node(&mut self.nodes, caller, ln.func_id);
            let node = &mut self.nodes[g];
            node.terminal_count += ln.terminal_count;
            node.terminal_sum = node.terminal_sum.wrapping_add(ln.terminal_sum);
            node.intermediate_count += ln.intermediate_count;
            node.intermediate_sum = node.intermediate_sum.wrapping_add(ln.intermediate_sum);
            map[l as usize] = g;
            for &c in ln.callees.iter().rev() {
                todo.push((c, Some(g)));
            }
        }
    }
}
