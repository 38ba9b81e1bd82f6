//! `stack`: call-stack tries per thread (llvm-xray's `StackTrie`) with its
//! top-10 reports and flame-graph ("folded") output, byte for byte.
//!
//! Deliberate difference: an exit with an empty stack on its thread (the
//! trace starts mid-call) is counted as a warning instead of failing the
//! run; llvm-xray needs `-k` for it.

use crate::fxhash::FxMap as HashMap;
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
}

impl StackTrie {
    pub fn new(keep_going: bool) -> StackTrie {
        StackTrie {
            keep_going,
            ..Default::default()
        }
    }

    fn new_node(&mut self, func_id: i32, parent: Option<usize>) -> usize {
        self.nodes.push(Node {
            func_id,
            parent,
            ..Default::default()
        });
        self.nodes.len() - 1
    }

    fn thread_roots(&mut self, tid: u32) -> &mut Vec<usize> {
        if !self.roots.contains_key(&tid) {
            self.root_order.push(tid);
        }
        self.roots.entry(tid).or_default()
    }

    /// Adds one record (load order, as llvm-xray feeds them).
    pub fn add(&mut self, r: &Record<'_>) -> Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        let i = match self.last_thread {
            Some((t, i)) if t == r.tid => i,
            _ => {
                let n = self.stacks.len();
                let i = *self.stack_index.entry(r.tid).or_insert(n);
                if i == n {
                    self.stacks.push(Vec::new());
                }
                self.last_thread = Some((r.tid, i));
                i
            }
        };
        let mut ts = std::mem::take(&mut self.stacks[i]);
        // A small error type on the hot path; the full error only when needed.
        let unmatched = self.add_inner(r, &mut ts);
        self.stacks[i] = ts;
        if unmatched {
            return Err(Error::malformed(
                Position::Unknown,
                format!(
                    "thread {}: exit of function {} at tsc {} has no matching entry on the stack (use -k to keep going)",
                    r.tid, r.func_id, r.tsc
                ),
            ));
        }
        Ok(())
    }

    /// Returns true for an exit without a matching entry (without -k).
    #[inline]
    fn add_inner(&mut self, r: &Record<'_>, ts: &mut Vec<(usize, u64, i32)>) -> bool {
        if r.kind.is_entry() {
            self.was_last_exit = false;
            let node = match ts.last() {
                None => {
                    let roots = self.thread_roots(r.tid).clone();
                    let found = roots
                        .into_iter()
                        .find(|&n| self.nodes[n].func_id == r.func_id);
                    match found {
                        Some(n) => n,
                        None => {
                            let n = self.new_node(r.func_id, None);
                            self.thread_roots(r.tid).push(n);
                            n
                        }
                    }
                }
                Some(&(top, _, _)) => {
                    let t = &self.nodes[top];
                    match t.callee_ids.iter().position(|&f| f == r.func_id) {
                        Some(i) => t.callees[i],
                        None => {
                            let n = self.new_node(r.func_id, Some(top));
                            self.nodes[top].callees.push(n);
                            self.nodes[top].callee_ids.push(r.func_id);
                            n
                        }
                    }
                }
            };
            ts.push((node, r.tsc, r.func_id));
            return false;
        }
        let was_last_exit = self.was_last_exit;
        self.was_last_exit = true;
        if ts.is_empty() {
            self.orphan_exits += 1;
            return false;
        }
        let matched = ts.iter().rposition(|&(_, _, f)| f == r.func_id);
        let from = matched.unwrap_or(0);
        let last = ts.len() - 1;
        for &(n, tsc, _) in &ts[from..last] {
            let node = &mut self.nodes[n];
            node.intermediate_count += 1;
            node.intermediate_sum = node.intermediate_sum.wrapping_add(tsc.abs_diff(r.tsc));
        }
        let (deepest, tsc, _) = ts[last];
        let d = tsc.abs_diff(r.tsc);
        let node = &mut self.nodes[deepest];
        if was_last_exit {
            node.intermediate_count += 1;
            node.intermediate_sum = node.intermediate_sum.wrapping_add(d);
        } else {
            node.terminal_count += 1;
            node.terminal_sum = node.terminal_sum.wrapping_add(d);
        }
        ts.truncate(from);
        if matched.is_none() {
            if !self.keep_going {
                return true;
            }
            self.unmatched += 1;
        }
        false
    }

    /// Warnings about skipped records.
    pub fn finish_warnings(&mut self) -> Warnings {
        let mut w = std::mem::take(&mut self.warnings);
        if self.orphan_exits > 0 {
            w.push(
                Position::Unknown,
                format!(
                    "{} exits without a matching entry skipped (the trace starts in the middle of calls)",
                    self.orphan_exits
                ),
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
