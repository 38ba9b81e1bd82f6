//! `tracekit report --diff A B`: what grew between two recordings of the
//! same program. Backtraces are matched by their functions and source
//! positions, not addresses (ASLR moves those between runs), as
//! heaptrack_print's `--diff` matches them.

use std::collections::HashMap;
use std::io::Write;

use serde_json::{json, Value};

use super::text::{human_bytes, location_json, title, write_location};
use super::{merge_locations, ranked, Cost, Location, Metric, Report, Trace, TraceKey};

/// The differences `new - base`.
#[derive(Debug)]
pub struct Diff {
    /// Resource type names.
    pub resources: Vec<String>,
    /// Per resource type: the total cost of `new` minus that of `base`
    /// (`peak` is the difference of the peaks, `largest` of the largest
    /// allocations).
    pub totals: Vec<Cost>,
    /// Backtraces whose cost changed, with the difference.
    pub traces: Vec<Trace>,
    pub locations: Vec<Location>,
    pub top: usize,
}

fn totals(r: &Report, name: &str) -> Cost {
    match r.resource(name) {
        Some(i) => {
            let s = &r.resources[i];
            Cost {
                allocations: s.allocs as i64,
                allocated: s.allocated_bytes,
                peak: s.peak_bytes,
                leaked: s.leaked_bytes,
                leaked_blocks: s.leaked_blocks as i64,
                temporary: s.temporary as i64,
                largest: s.largest,
            }
        }
        None => Cost::default(),
    }
}

/// What changed from `base` to `new`; `top` limits the ranked lists.
pub fn diff(base: &Report, new: &Report, top: usize) -> Diff {
    let mut resources: Vec<String> = new.resources.iter().map(|r| r.name.clone()).collect();
    for r in &base.resources {
        if !resources.contains(&r.name) {
            resources.push(r.name.clone());
        }
    }
    let totals = resources
        .iter()
        .map(|n| totals(new, n).minus(&totals(base, n)))
        .collect();
    // (resource type, backtrace key) → index in `traces`.
    let mut index: HashMap<(&str, &TraceKey), usize> = HashMap::new();
    let mut traces: Vec<Trace> = Vec::new();
    for (sign, r) in [(1i64, new), (-1, base)] {
        for t in &r.traces {
            let name = r.resources[t.resource].name.as_str();
            let ri = resources.iter().position(|n| n == name).unwrap_or(0);
            let i = *index.entry((name, &t.key)).or_insert_with(|| {
                traces.push(Trace {
                    resource: ri,
                    cost: Cost::default(),
                    frames: t.frames.clone(),
                    key: t.key.clone(),
                    module: t.module.clone(),
                });
                traces.len() - 1
            });
            let c = &mut traces[i].cost;
            let d = if sign > 0 {
                t.cost
            } else {
                Cost::default().minus(&t.cost)
            };
            c.allocations += d.allocations;
            c.allocated += d.allocated;
            c.peak += d.peak;
            c.leaked += d.leaked;
            c.leaked_blocks += d.leaked_blocks;
            c.temporary += d.temporary;
            c.largest += d.largest;
        }
    }
    traces.retain(|t| t.cost != Cost::default());
    let locations = merge_locations(&traces);
    Diff {
        resources,
        totals,
        traces,
        locations,
        top,
    }
}

fn signed(v: i64, bytes: bool) -> String {
    let s = if bytes { human_bytes(v) } else { v.to_string() };
    if v > 0 {
        format!("+{s}")
    } else {
        s
    }
}

/// The views of a diff (largest allocation makes no sense as a sum).
const DIFF_VIEWS: [Metric; 4] = [
    Metric::Allocations,
    Metric::Peak,
    Metric::Leaked,
    Metric::Temporary,
];

impl Diff {
    pub fn write_text<W: Write>(&self, mut out: W, base: &str, new: &str) -> std::io::Result<()> {
        writeln!(
            out,
            "sp-rtrace diff: {base} -> {new} (what grew is positive)"
        )?;
        for (name, c) in self.resources.iter().zip(&self.totals) {
            writeln!(out)?;
            writeln!(out, "{name}:")?;
            writeln!(
                out,
                "  allocations {} ({}), peak {}, never freed {} in {} blocks, temporary {}",
                signed(c.allocations, false),
                signed(c.allocated, true),
                signed(c.peak, true),
                signed(c.leaked, true),
                signed(c.leaked_blocks, false),
                signed(c.temporary, false),
            )?;
        }
        for (ri, name) in self.resources.iter().enumerate() {
            for m in DIFF_VIEWS {
                let view = ranked(&self.locations, &self.traces, ri, m, self.top);
                if view.is_empty() {
                    continue;
                }
                writeln!(out)?;
                writeln!(out, "{} [{name}], change", title(m))?;
                for (loc, traces) in view {
                    write_location(&mut out, loc, &traces, m)?;
                }
            }
        }
        Ok(())
    }

    pub fn to_json(&self, base: &str, new: &str) -> Value {
        let mut views = serde_json::Map::new();
        for (ri, name) in self.resources.iter().enumerate() {
            let mut per = serde_json::Map::new();
            for m in DIFF_VIEWS {
                let list: Vec<Value> = ranked(&self.locations, &self.traces, ri, m, self.top)
                    .into_iter()
                    .map(|(l, ts)| location_json(l, &ts))
                    .collect();
                per.insert(m.name().to_string(), Value::Array(list));
            }
            views.insert(name.clone(), Value::Object(per));
        }
        json!({
            "base": base,
            "file": new,
            "format": "sp-rtrace diff",
            "totals": self.resources.iter().zip(&self.totals).map(|(n, c)| {
                let mut v = super::text::cost_json(c);
                v["resource"] = json!(n);
                v
            }).collect::<Vec<_>>(),
            "views": views,
        })
    }
}
