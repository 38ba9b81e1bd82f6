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
    stacks: HashMap<u32, Vec<(i32, u64)>>,
    vertex_order: Vec<i32>,
    vertices: HashMap<i32, TimeStat>,
    edge_order: Vec<(i32, i32)>,
    edges: HashMap<(i32, i32), (TimeStat, Timings)>,
    skipped: u64,
    orphans: u64,
}

impl GraphBuilder {
    pub fn new(keep_going: bool, deduce_sibling_calls: bool) -> GraphBuilder {
        GraphBuilder {
            keep_going,
            deduce_sibling_calls,
            stacks: HashMap::default(),
            vertex_order: Vec::new(),
            vertices: HashMap::default(),
            edge_order: Vec::new(),
            edges: HashMap::default(),
            skipped: 0,
            orphans: 0,
        }
    }

    fn vertex(&mut self, id: i32) -> &mut TimeStat {
        if !self.vertices.contains_key(&id) {
            self.vertex_order.push(id);
        }
        self.vertices.entry(id).or_default()
    }

    fn edge(&mut self, from: i32, to: i32, d: u64) {
        if !self.edges.contains_key(&(from, to)) {
            self.edge_order.push((from, to));
        }
        self.vertex(from);
        self.vertex(to);
        let e = self.edges.entry((from, to)).or_default();
        e.0.update(d);
        e.1.push(d);
        self.vertex(to).update(d);
    }

    pub fn add(&mut self, r: &Record<'_>) -> Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        if r.kind.is_entry() {
            if r.func_id != 0 {
                self.vertex(r.func_id);
            }
            self.stacks
                .entry(r.tid)
                .or_default()
                .push((r.func_id, r.tsc));
            return Ok(());
        }
        let mut stack = self.stacks.remove(&r.tid).unwrap_or_default();
        let res = self.exit(r, &mut stack);
        self.stacks.insert(r.tid, stack);
        res
    }

    fn exit(&mut self, r: &Record<'_>, stack: &mut Vec<(i32, u64)>) -> Result<()> {
        if stack.is_empty() {
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
                return Err(Error::malformed(
                    Position::Unknown,
                    format!(
                        "thread {}: exit of function {} at tsc {} has no matching entry on top of the stack (use -d to deduce sibling calls or -k to skip)",
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

    /// Computes the statistics and writes DOT.
    #[allow(clippy::too_many_arguments)]
    pub fn write_dot<W: Write + ?Sized>(
        mut self,
        out: &mut W,
        names: &FunctionNames,
        cycle_frequency: u64,
        edge_label: Stat,
        edge_color: Stat,
        vertex_label: Stat,
        vertex_color: Stat,
    ) -> Result<Warnings> {
        let mut warnings = Warnings::default();
        if self.orphans > 0 {
            warnings.push(
                Position::Unknown,
                format!(
                    "{} exits without a matching entry skipped (the trace starts in the middle of calls)",
                    self.orphans
                ),
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
        let io = |e: std::io::Error| Error::io(None, e);
        out.write_all(b"digraph xray {\n").map_err(io)?;
        if vertex_label != Stat::None {
            out.write_all(b"node [shape=record];\n").map_err(io)?;
        }
        let eh: Vec<u32> = self
            .edge_order
            .iter()
            .map(|&(a, b)| {
                densemap::hash_pair(densemap::hash_u32(a as u32), densemap::hash_u32(b as u32))
            })
            .collect();
        for i in densemap::iteration_order(&eh) {
            let k = self.edge_order[i];
            let s = &self.edges[&k].0;
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
        let vh: Vec<u32> = self
            .vertex_order
            .iter()
            .map(|&v| densemap::hash_u32(v as u32))
            .collect();
        for i in densemap::iteration_order(&vh) {
            let v = self.vertex_order[i];
            if v == 0 {
                continue;
            }
            let s = &self.vertices[&v];
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
        Ok(warnings)
    }
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
        let max_index = 8usize;
        let width = 1.0 / max_index as f64;
        let section = ((point / width).floor() as usize).min(max_index);
        let t = (point - section as f64 * width) / width;
        let c0 = to_hsv(OR_RD[section]);
        let c1 = to_hsv(OR_RD[(section + 1).min(max_index)]);
        let h = interpolate_hue(c0.0, c1.0, t);
        let s = c0.1 + t * (c1.1 - c0.1);
        let v = c0.2 + t * (c1.2 - c0.2);
        to_rgb((h, s, v))
    };
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}
