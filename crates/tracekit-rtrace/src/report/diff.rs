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

/// `tracekit diff A B` on two memory traces, as data
/// ([`tracekit_report::Report`]): per resource type the totals before and
/// after, and per view (allocations, peak, never freed, temporary) the
/// places whose cost changed most, with every cost's change (backtraces
/// matched as [`diff`] matches them). The text form is the one
/// `report --diff` prints.
pub fn diff_report(
    base: &Report,
    new: &Report,
    base_name: &str,
    new_name: &str,
    top: usize,
) -> tracekit_report::Report {
    use tracekit_report::diff as d;
    use tracekit_report::{Column, Section, Table, TextForm, Unit, Value as V};

    let dd = diff(base, new, top);
    let mut rep = tracekit_report::Report::new(
        "rtrace",
        format!("sp-rtrace traces {base_name} → {new_name}"),
    );
    rep.input(base_name, Some("sp-rtrace text".into()));
    rep.input(new_name, Some("sp-rtrace text".into()));
    rep.text = TextForm::Omit;
    let mut legacy = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = dd.write_text(&mut legacy, base_name, new_name);

    const MEASURES: [(&str, &str, Unit); 6] = [
        ("allocations", "allocations", Unit::Count),
        ("allocated", "bytes allocated", Unit::Bytes),
        ("peak", "peak", Unit::Bytes),
        ("leaked", "never freed", Unit::Bytes),
        ("leaked_blocks", "blocks never freed", Unit::Count),
        ("temporary", "temporary allocations", Unit::Count),
    ];
    fn pick(c: &Cost, key: &str) -> i64 {
        match key {
            "allocations" => c.allocations,
            "allocated" => c.allocated,
            "peak" => c.peak,
            "leaked" => c.leaked,
            "leaked_blocks" => c.leaked_blocks,
            _ => c.temporary,
        }
    }
    let mut cols = vec![Column::new("resource", "resource type", Unit::Text)];
    for (k, l, u) in MEASURES {
        cols.extend(d::columns(k, l, u));
    }
    let mut t = Table::new(cols);
    for name in &dd.resources {
        let (b, a) = (totals(base, name), totals(new, name));
        let mut row: Vec<V> = vec![name.as_str().into()];
        for (k, _, _) in MEASURES {
            let (x, y) = (pick(&b, k), pick(&a, k));
            let mut v = d::uint(Some(x.max(0) as u64), Some(y.max(0) as u64));
            v[2] = V::Int(y - x);
            row.extend(v);
        }
        t.row(row);
    }
    rep.push(
        Section::table("totals", "Totals per resource type", t)
            .verbatim(String::from_utf8_lossy(&legacy).into_owned()),
    );

    for (ri, name) in dd.resources.iter().enumerate() {
        for m in DIFF_VIEWS {
            let view = ranked(&dd.locations, &dd.traces, ri, m, usize::MAX);
            if view.is_empty() {
                continue;
            }
            let mut cols = vec![
                Column::new("function", "function", Unit::Text),
                Column::new("source", "source", Unit::Text),
                Column::new("module", "module", Unit::Text),
            ];
            for (k, l, u) in MEASURES {
                cols.push(Column::new(format!("{k}_delta"), format!("{l} change"), u));
            }
            let mut t = Table::new(cols);
            for (loc, _) in &view {
                let mut row: Vec<V> = vec![
                    loc.function.as_str().into(),
                    loc.position.clone().into(),
                    loc.module.clone().into(),
                ];
                for (k, _, _) in MEASURES {
                    row.push(V::Int(pick(&loc.cost, k)));
                }
                t.row(row);
            }
            let keys: Vec<String> = MEASURES.iter().map(|m| format!("{}_delta", m.0)).collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            t.keep(top, &keys);
            rep.push(
                Section::table(
                    format!("{}-{}", m.name(), name),
                    format!("{} [{name}], change", super::text::title(m)),
                    t,
                )
                .omit_text(),
            );
        }
    }
    rep
}
