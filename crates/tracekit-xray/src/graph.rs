//! `graph`: the function call graph in Graphviz DOT, as llvm-xray's
//! `GraphRenderer` writes it (statistics, labels, OrRd colours, DenseMap
//! order of edges and vertices).
//!
//! Deliberate difference: llvm-xray compares every record's timestamp
//! with the *first* record's and rejects older ones as "not in order",
//! which loses records of multi-threaded traces; we account each thread
//! in its own time order.

use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::account::fmt_exp;
use crate::densemap;
use crate::names::FunctionNames;
use crate::record::Record;

/// A statistic to label or colour by (`-e`, `-v`, `-c`, `-b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    None,
    Count,
    Min,
    Med,
    Pct90,
    Pct99,
    Max,
    Sum,
}

impl Stat {
    pub fn parse(s: &str) -> Option<Stat> {
        Some(match s {
            "none" => Stat::None,
            "count" => Stat::Count,
            "min" => Stat::Min,
            "med" => Stat::Med,
            "90p" => Stat::Pct90,
            "99p" => Stat::Pct99,
            "max" => Stat::Max,
            "sum" => Stat::Sum,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct TimeStat {
    count: i64,
    min: f64,
    median: f64,
    pct90: f64,
    pct99: f64,
    max: f64,
    sum: f64,
}

impl TimeStat {
    fn update(&mut self, d: u64) {
        let l = d as i64 as f64;
        self.count += 1;
        if self.min > l || self.min == 0.0 {
            self.min = l;
        }
        if self.max < l {
            self.max = l;
        }
        self.sum += l;
    }
    fn get(&self, s: Stat) -> f64 {
        match s {
            Stat::None => 0.0,
            Stat::Count => self.count as f64,
            Stat::Min => self.min,
            Stat::Med => self.median,
            Stat::Pct90 => self.pct90,
            Stat::Pct99 => self.pct99,
            Stat::Max => self.max,
            Stat::Sum => self.sum,
        }
    }
    fn text(&self, s: Stat) -> String {
        match s {
            Stat::None => String::new(),
            Stat::Count => self.count.to_string(),
            other => fmt_exp(self.get(other)),
        }
    }
    fn percentiles<T: Copy + Ord + Into<u64>>(&mut self, t: &mut [T]) {
        if t.is_empty() {
            return;
        }
        let n = self.count.max(0) as usize;
        let mut pick = |k: usize| -> f64 {
            let k = k.min(t.len() - 1);
            let (_, x, _) = t.select_nth_unstable(k);
            (*x).into() as i64 as f64
        };
        self.median = pick(n / 2);
        self.pct90 = pick(n * 9 / 10);
        self.pct99 = pick(n * 99 / 100);
    }
    fn max_with(&mut self, o: &TimeStat) {
        self.count = self.count.max(o.count);
        self.min = self.min.max(o.min);
        self.median = self.median.max(o.median);
        self.pct90 = self.pct90.max(o.pct90);
        self.pct99 = self.pct99.max(o.pct99);
        self.max = self.max.max(o.max);
        self.sum = self.sum.max(o.sum);
    }
    fn scale(&mut self, f: f64) {
        self.min /= f;
        self.median /= f;
        self.pct90 /= f;
        self.pct99 /= f;
        self.max /= f;
        self.sum /= f;
    }
}

/// Call durations of an edge: u32 while they fit (halves memory), u64
/// after.
#[derive(Default)]
enum Timings {
    #[default]
    Empty,
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Timings {
    fn push(&mut self, d: u64) {
        match self {
            Timings::Empty => {
                *self = match u32::try_from(d) {
                    Ok(x) => Timings::Narrow(vec![x]),
                    Err(_) => Timings::Wide(vec![d]),
                }
            }
            Timings::Narrow(v) => match u32::try_from(d) {
                Ok(x) => v.push(x),
                Err(_) => {
                    let mut w: Vec<u64> = v.iter().map(|&x| u64::from(x)).collect();
                    w.push(d);
                    *self = Timings::Wide(w);
                }
            },
            Timings::Wide(v) => v.push(d),
        }
    }
    fn append_to(&self, out: &mut Vec<u64>) {
        match self {
            Timings::Empty => {}
            Timings::Narrow(v) => out.extend(v.iter().map(|&x| u64::from(x))),
            Timings::Wide(v) => out.extend_from_slice(v),
        }
    }
    fn percentiles_into(&mut self, s: &mut TimeStat) {
        match self {
            Timings::Empty => {}
            Timings::Narrow(v) => s.percentiles(v),
            Timings::Wide(v) => s.percentiles(v),
        }
    }
}

/// Builds the call graph from records in load order.
pub struct GraphBuilder {
    keep_going: bool,
    deduce_sibling_calls: bool,
    /// Per thread (index from `stack_index`, the last one remembered):
    /// the open calls.
    stacks: Vec<Vec<(i32, u64)>>,
    stack_index: HashMap<u32, usize>,
    last_thread: Option<(u32, usize)>,
    vertex_order: Vec<i32>,
    vertices: HashMap<i32, TimeStat>,
    edge_order: Vec<(i32, i32)>,
    edges: HashMap<(i32, i32), (TimeStat, Timings)>,
    skipped: u64,
    orphans: u64,
    /// llvm-xray's rule for inputs that cannot have lost records (YAML):
    /// an exit on an empty stack is an error (a warning with -k).
    pub orphan_exits_are_errors: bool,
    strict_warnings: Warnings,
}

impl GraphBuilder {
    pub fn new(keep_going: bool, deduce_sibling_calls: bool) -> GraphBuilder {
        GraphBuilder {
            keep_going,
            deduce_sibling_calls,
            stacks: Vec::new(),
            stack_index: HashMap::default(),
            last_thread: None,
            vertex_order: Vec::new(),
            vertices: HashMap::default(),
            edge_order: Vec::new(),
            edges: HashMap::default(),
            skipped: 0,
            orphans: 0,
            orphan_exits_are_errors: false,
            strict_warnings: Warnings::default(),
        }
    }

    fn vertex(&mut self, id: i32) -> &mut TimeStat {
        use std::collections::hash_map::Entry;
        match self.vertices.entry(id) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                self.vertex_order.push(id);
                v.insert(TimeStat::default())
            }
        }
    }

    fn edge(&mut self, from: i32, to: i32, d: u64) {
        match self.edges.get_mut(&(from, to)) {
            Some(e) => {
                e.0.update(d);
                e.1.push(d);
            }
            None => {
                // llvm's Graph::operator[]: the edge, then both ends.
                self.edge_order.push((from, to));
                self.vertex(from);
                self.vertex(to);
                let mut e = (TimeStat::default(), Timings::default());
                e.0.update(d);
                e.1.push(d);
                self.edges.insert((from, to), e);
            }
        }
        self.vertex(to).update(d);
    }

    /// The index of the thread's stack (made if new).
    fn stack_slot(&mut self, tid: u32) -> usize {
        if let Some((t, i)) = self.last_thread {
            if t == tid {
                return i;
            }
        }
        let n = self.stacks.len();
        let i = *self.stack_index.entry(tid).or_insert(n);
        if i == n {
            self.stacks.push(Vec::new());
        }
        self.last_thread = Some((tid, i));
        i
    }

    pub fn add(&mut self, r: &Record<'_>) -> Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        if r.kind.is_entry() {
            if r.func_id != 0 {
                self.vertex(r.func_id);
            }
            let i = self.stack_slot(r.tid);
            self.stacks[i].push((r.func_id, r.tsc));
            return Ok(());
        }
        let i = self.stack_slot(r.tid);
        let mut stack = std::mem::take(&mut self.stacks[i]);
        let res = self.exit(r, &mut stack);
        self.stacks[i] = stack;
        res
    }

    fn exit(&mut self, r: &Record<'_>, stack: &mut Vec<(i32, u64)>) -> Result<()> {
        if stack.is_empty() {
            if self.orphan_exits_are_errors {
                let why = format!(
                    "No matching ENTRY record (thread {}, function {}, tsc {})",
                    r.tid, r.func_id, r.tsc
                );
                if !self.keep_going {
                    return Err(Error::Other(format!(
                        "Error encountered generating the call graph.\n{why}"
                    )));
                }
                self.strict_warnings.push(Position::Unknown, why);
                return Ok(());
            }
            self.orphans += 1;
            return Ok(());
        }
        if stack.last().map(|f| f.0) != Some(r.func_id) {
            let found = stack.iter().any(|f| f.0 == r.func_id);
            if !self.deduce_sibling_calls || !found {
                if self.keep_going {
                    self.skipped += 1;
                    return Ok(());
                }
                // llvm-xray's two reasons; the hint names what was not
                // asked for.
                let why = if self.deduce_sibling_calls {
                    "has no matching entry on its thread's stack (-k skips such records)"
                } else {
                    "has no matching entry on top of the stack (use -d to deduce sibling calls or -k to skip)"
                };
                return Err(Error::malformed(
                    Position::Unknown,
                    format!(
                        "thread {}: exit of function {} at tsc {} {why}",
                        r.tid, r.func_id, r.tsc
                    ),
                ));
            }
            while let Some(&(top, tsc)) = stack.last() {
                if top == r.func_id {
                    break;
                }
                stack.pop();
                let parent = stack.last().map(|f| f.0).unwrap_or(0);
                self.edge(parent, top, tsc.abs_diff(r.tsc));
            }
        }
        let Some((_, tsc)) = stack.pop() else {
            return Ok(());
        };
        let parent = stack.last().map(|f| f.0).unwrap_or(0);
        self.edge(parent, r.func_id, tsc.abs_diff(r.tsc));
        Ok(())
    }

    /// Computes the statistics: vertices and edges in llvm-xray's order
    /// (its DenseMaps'), durations in seconds when the frequency is known.
    pub fn statistics(mut self, cycle_frequency: u64) -> GraphStats {
        let mut warnings = std::mem::take(&mut self.strict_warnings);
        if self.orphans > 0 {
            warnings.push(
                Position::Unknown,
                crate::record::orphan_exits_message(self.orphans),
            );
        }
        if self.skipped > 0 {
            warnings.push(
                Position::Unknown,
                format!(
                    "{} exits not matching the open call skipped (-k)",
                    self.skipped
                ),
            );
        }
        let open: u64 = self.stacks.iter().map(|s| s.len() as u64).sum();
        if open > 0 {
            warnings.push(Position::Unknown, crate::record::open_calls_message(open));
        }
        let mut edge_max = TimeStat::default();
        let mut vertex_max = TimeStat::default();
        // Vertex percentiles over the timings of their incoming edges, one
        // vertex at a time (no second copy of every timing).
        let mut incoming: HashMap<i32, Vec<(i32, i32)>> = HashMap::default();
        for k in self.edges.keys() {
            incoming.entry(k.1).or_default().push(*k);
        }
        let mut scratch: Vec<u64> = Vec::new();
        for (&v, s) in self.vertices.iter_mut() {
            if v != 0 {
                scratch.clear();
                for k in incoming.get(&v).map(Vec::as_slice).unwrap_or(&[]) {
                    if let Some((_, t)) = self.edges.get(k) {
                        t.append_to(&mut scratch);
                    }
                }
                s.percentiles(&mut scratch);
                vertex_max.max_with(s);
            }
        }
        drop(scratch);
        for (s, t) in self.edges.values_mut() {
            t.percentiles_into(s);
            edge_max.max_with(s);
        }
        if cycle_frequency != 0 {
            let f = cycle_frequency as f64;
            for (s, _) in self.edges.values_mut() {
                s.scale(f);
            }
            for s in self.vertices.values_mut() {
                s.scale(f);
            }
            edge_max.scale(f);
            vertex_max.scale(f);
        }
        let eh: Vec<u32> = self
            .edge_order
            .iter()
            .map(|&(a, b)| {
                densemap::hash_pair(densemap::hash_u32(a as u32), densemap::hash_u32(b as u32))
            })
            .collect();
        let edges = densemap::iteration_order(&eh)
            .into_iter()
            .map(|i| {
                let k = self.edge_order[i];
                (k, self.edges[&k].0)
            })
            .collect();
        let vh: Vec<u32> = self
            .vertex_order
            .iter()
            .map(|&v| densemap::hash_u32(v as u32))
            .collect();
        let vertices = densemap::iteration_order(&vh)
            .into_iter()
            .map(|i| {
                let v = self.vertex_order[i];
                (v, self.vertices[&v])
            })
            .collect();
        GraphStats {
            vertices,
            edges,
            vertex_max,
            edge_max,
            warnings,
        }
    }

    /// Computes the statistics and writes DOT.
    #[allow(clippy::too_many_arguments)]
    pub fn write_dot<W: Write + ?Sized>(
        self,
        out: &mut W,
        names: &FunctionNames,
        cycle_frequency: u64,
        edge_label: Stat,
        edge_color: Stat,
        vertex_label: Stat,
        vertex_color: Stat,
    ) -> Result<Warnings> {
        let g = self.statistics(cycle_frequency);
        let (edge_max, vertex_max) = (g.edge_max, g.vertex_max);
        let io = |e: std::io::Error| Error::io(None, e);
        out.write_all(b"digraph xray {\n").map_err(io)?;
        if vertex_label != Stat::None {
            out.write_all(b"node [shape=record];\n").map_err(io)?;
        }
        for (k, s) in &g.edges {
            write!(
                out,
                "F{} -> F{} [label=\"{}\"",
                k.0,
                k.1,
                s.text(edge_label)
            )
            .map_err(io)?;
            if edge_color != Stat::None {
                let c = color((s.get(edge_color) / edge_max.get(edge_color)).sqrt());
                write!(out, " color=\"{c}\"").map_err(io)?;
            }
            out.write_all(b"];\n").map_err(io)?;
        }
        for (v, s) in &g.vertices {
            let v = *v;
            if v == 0 {
                continue;
            }
            let name = names.symbol_or_number(v);
            let shown = if name.len() > 40 {
                let mut cut = 40;
                while !name.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}...", &name[..cut])
            } else {
                name.to_string()
            };
            let shown = shown
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            write!(out, "F{v} [label=\"").map_err(io)?;
            if vertex_label != Stat::None {
                write!(out, "{{{shown}|{}}}\"", s.text(vertex_label)).map_err(io)?;
            } else {
                write!(out, "{shown}\"").map_err(io)?;
            }
            if vertex_color != Stat::None {
                let c = color((s.get(vertex_color) / vertex_max.get(vertex_color)).sqrt());
                write!(out, " color=\"{c}\"").map_err(io)?;
            }
            out.write_all(b"];\n").map_err(io)?;
        }
        out.write_all(b"}\n").map_err(io)?;
        Ok(g.warnings)
    }
}

/// A call graph's statistics, in llvm-xray's order.
pub struct GraphStats {
    /// Function id (0: the root) and its statistics.
    vertices: Vec<(i32, TimeStat)>,
    /// (caller, callee) and the statistics of the callee's calls there.
    edges: Vec<((i32, i32), TimeStat)>,
    vertex_max: TimeStat,
    edge_max: TimeStat,
    pub warnings: Warnings,
}

/// `graph-diff` options (llvm-xray's `-e`, `-c`, `-v`, `-b`, `-t`).
#[derive(Debug, Clone, Copy)]
pub struct DiffStyle {
    pub edge_label: Stat,
    pub edge_color: Stat,
    pub vertex_label: Stat,
    pub vertex_color: Stat,
    /// Vertex labels longer than this are cut (`...` added).
    pub truncate: usize,
}

/// `graph-diff`: the union of two call graphs in DOT, as llvm-xray's
/// `GraphDiffRenderer` writes it: vertices and edges matched by name (the
/// root is `F0`), labelled and coloured by the relative change of a
/// statistic from the first graph to the second (PiYG colours; green: only
/// in the second, red: only in the first), in the order of its
/// `StringRef`-keyed DenseMaps. llvm-xray 14 names vertices by id
/// (`#12`) whatever map it is given; so do we, for identical output.
pub fn write_diff<W: Write + ?Sized>(
    graphs: [&GraphStats; 2],
    style: &DiffStyle,
    out: &mut W,
) -> std::io::Result<()> {
    let name = |v: i32| -> String {
        if v == 0 {
            String::new()
        } else {
            format!("#{v}")
        }
    };
    // Distinct names in first-insertion order, with each graph's stats.
    let mut vertex_names: Vec<String> = Vec::new();
    let mut vertex_at: HashMap<String, usize> = HashMap::default();
    let mut vertex_stats: Vec<[Option<TimeStat>; 2]> = Vec::new();
    let mut edge_keys: Vec<(usize, usize)> = Vec::new();
    let mut edge_at: HashMap<(usize, usize), usize> = HashMap::default();
    let mut edge_stats: Vec<[Option<TimeStat>; 2]> = Vec::new();
    let mut vertex =
        |n: String, names: &mut Vec<String>, stats: &mut Vec<[Option<TimeStat>; 2]>| -> usize {
            *vertex_at.entry(n.clone()).or_insert_with(|| {
                names.push(n);
                stats.push([None, None]);
                names.len() - 1
            })
        };
    for (i, g) in graphs.iter().enumerate() {
        for (v, s) in &g.vertices {
            let at = vertex(name(*v), &mut vertex_names, &mut vertex_stats);
            vertex_stats[at][i] = Some(*s);
        }
        for ((a, b), s) in &g.edges {
            // The edge first, then its ends (llvm's Graph::operator[]).
            let ka = vertex(name(*a), &mut vertex_names, &mut vertex_stats);
            let kb = vertex(name(*b), &mut vertex_names, &mut vertex_stats);
            let e = *edge_at.entry((ka, kb)).or_insert_with(|| {
                edge_keys.push((ka, kb));
                edge_stats.push([None, None]);
                edge_keys.len() - 1
            });
            edge_stats[e][i] = Some(*s);
        }
    }
    let vertex_hash: Vec<u32> = vertex_names
        .iter()
        .map(|n| densemap::hash_str(n.as_bytes()))
        .collect();
    let vertex_order = densemap::iteration_order(&vertex_hash);
    let mut number = vec![0usize; vertex_names.len()];
    for (no, &v) in vertex_order.iter().enumerate() {
        number[v] = no;
    }
    let edge_hash: Vec<u32> = edge_keys
        .iter()
        .map(|&(a, b)| densemap::hash_pair(vertex_hash[a], vertex_hash[b]))
        .collect();
    let rel = |s: &[Option<TimeStat>; 2], t: Stat| -> Option<f64> {
        match s {
            [Some(l), Some(r)] => Some(r.get(t) / l.get(t) - 1.0),
            _ => None,
        }
    };
    let diff_color = |s: &[Option<TimeStat>; 2], t: Stat| -> String {
        match s {
            [None, _] => diverging_color(2.0),
            [_, None] => diverging_color(-2.0),
            _ if t == Stat::None => "black".into(),
            _ => diverging_color(rel(s, t).unwrap_or(0.0).clamp(-1.0, 1.0)),
        }
    };
    out.write_all(b"digraph xrayDiff {\n")?;
    if style.vertex_label != Stat::None {
        out.write_all(b"node [shape=record]\n")?;
    }
    for e in densemap::iteration_order(&edge_hash) {
        let (a, b) = edge_keys[e];
        let s = &edge_stats[e];
        let label = match (style.edge_label, rel(s, style.edge_label)) {
            (Stat::None, _) | (_, None) => String::new(),
            (_, Some(d)) => llvm_percent(d),
        };
        let width = match (style.edge_color, rel(s, style.edge_color)) {
            (Stat::None, _) | (_, None) => 1.0,
            (_, Some(d)) => {
                if d > 1.0 {
                    d
                } else {
                    1.0
                }
            }
        };
        let c = diff_color(s, style.edge_color);
        let head = if vertex_names[a].is_empty() {
            "F0"
        } else {
            &vertex_names[a]
        };
        writeln!(
            out,
            "F{} -> F{} [tooltip=\"{head} -> {}\" label=\"{label}\" color=\"{c}\" labelfontcolor=\"{c}\" penwidth={}]",
            number[a],
            number[b],
            vertex_names[b],
            llvm_fixed(width)
        )?;
    }
    for &v in &vertex_order {
        let n = &vertex_names[v];
        if n.is_empty() {
            writeln!(out, "F{} [label=\"F0\"]", number[v])?;
            continue;
        }
        let shown = if n.len() > style.truncate {
            let mut cut = style.truncate;
            while !n.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}...", &n[..cut])
        } else {
            n.clone()
        };
        let s = &vertex_stats[v];
        let label = match (style.vertex_label, rel(s, style.vertex_label)) {
            (Stat::None, _) | (_, None) => shown,
            (_, Some(d)) => format!("{{{shown}|{}}}", llvm_percent(d)),
        };
        writeln!(
            out,
            "F{} [label=\"{label}\" color=\"{}\"]",
            number[v],
            diff_color(s, style.vertex_color)
        )?;
    }
    out.write_all(b"}\n")
}

/// LLVM's `formatv("{0}")` of a double: fixed, 2 decimals.
fn llvm_fixed(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v < 0.0 { "-INF" } else { "INF" }.into()
    } else {
        format!("{v:.2}")
    }
}

/// LLVM's `formatv("{0:P}")` of a double: a percentage, 2 decimals.
fn llvm_percent(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        llvm_fixed(v)
    } else {
        format!("{:.2}%", v * 100.0)
    }
}

/// PiYG, llvm-xray's diverging scheme for `graph-diff`.
const PI_YG: [(u8, u8, u8); 11] = [
    (142, 1, 82),
    (197, 27, 125),
    (222, 119, 174),
    (241, 182, 218),
    (253, 224, 239),
    (247, 247, 247),
    (230, 245, 208),
    (184, 225, 134),
    (127, 188, 65),
    (77, 146, 33),
    (39, 100, 25),
];

/// llvm-xray's PiYG colour of a point in [-1, 1] (below: red, above:
/// green, its marks for an element missing from one side).
pub fn diverging_color(point: f64) -> String {
    let c = if point < -1.0 {
        (255, 0, 0)
    } else if point > 1.0 {
        (0, 255, 0)
    } else {
        gradient(&PI_YG, point + 1.0, 2.0)
    };
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The colour at `offset` into a map spread over `width` (llvm-xray's
/// `ColorHelper::getColorTuple`, HSV interpolation).
fn gradient(map: &[(u8, u8, u8)], offset: f64, width: f64) -> (u8, u8, u8) {
    let max_index = map.len() - 1;
    let section_width = width / max_index as f64;
    let section = ((offset / section_width).floor().max(0.0) as usize).min(max_index);
    let t = (offset - section as f64 * section_width) / section_width;
    let c0 = to_hsv(map[section]);
    let c1 = to_hsv(map[(section + 1).min(max_index)]);
    let h = interpolate_hue(c0.0, c1.0, t);
    let s = c0.1 + t * (c1.1 - c0.1);
    let v = c0.2 + t * (c1.2 - c0.2);
    to_rgb((h, s, v))
}

const OR_RD: [(u8, u8, u8); 9] = [
    (255, 247, 236),
    (254, 232, 200),
    (253, 212, 158),
    (253, 187, 132),
    (252, 141, 89),
    (239, 101, 72),
    (215, 48, 31),
    (179, 0, 0),
    (127, 0, 0),
];

fn to_hsv(c: (u8, u8, u8)) -> (f64, f64, f64) {
    let s = [c.0 as f64 / 255.0, c.1 as f64 / 255.0, c.2 as f64 / 255.0];
    let (mut min, mut max) = (0usize, 0usize);
    for i in 1..3 {
        if s[i] < s[min] {
            min = i;
        }
        if s[i] > s[max] {
            max = i;
        }
    }
    let chroma = s[max] - s[min];
    let mut hp = if chroma == 0.0 {
        0.0
    } else {
        (s[(max + 1) % 3] - s[(max + 2) % 3]) / chroma
    };
    hp += 2.0 * max as f64;
    let h = if hp < 0.0 {
        (hp + 6.0) * 60.0
    } else {
        hp * 60.0
    };
    let v = s[max];
    let sat = if v == 0.0 { 0.0 } else { chroma / v };
    (h, sat, v)
}

fn to_byte(b: f64) -> u8 {
    (255.0 * b.clamp(0.0, 1.0) + 0.5) as u8
}

fn to_rgb(c: (f64, f64, f64)) -> (u8, u8, u8) {
    let (h, s, v) = c;
    let chroma = v * s;
    let hp = h / 60.0;
    let x = chroma * (1.0 - ((hp % 2.0) - 1.0).abs());
    let mut rgb = [0.0f64; 3];
    let hi = hp as i64;
    let base = ((hi / 2) % 3) as usize;
    if hi % 2 == 0 {
        rgb[base] = chroma;
        rgb[(base + 1) % 3] = x;
    } else {
        rgb[base] = x;
        rgb[(base + 1) % 3] = chroma;
    }
    rgb[(base + 2) % 3] = 0.0;
    let m = v - chroma;
    (
        to_byte(rgb[0] + m),
        to_byte(rgb[1] + m),
        to_byte(rgb[2] + m),
    )
}

fn interpolate_hue(mut h0: f64, mut h1: f64, mut t: f64) -> f64 {
    let mut d = h1 - h0;
    if h0 > h1 {
        std::mem::swap(&mut h0, &mut h1);
        d = -d;
        t = 1.0 - t;
    }
    if d <= 180.0 {
        h0 + t * (h1 - h0)
    } else {
        h0 += 360.0;
        (h0 + t * (h1 - h0) + 720.0) % 360.0
    }
}

/// llvm-xray's OrRd gradient colour of a point in [0, 1].
pub fn color(point: f64) -> String {
    let c = if point < 0.0 {
        OR_RD[0]
    } else if point > 1.0 {
        OR_RD[8]
    } else if point.is_nan() {
        OR_RD[0]
    } else {
        gradient(&OR_RD, point, 1.0)
    };
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}
