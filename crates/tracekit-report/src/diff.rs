//! Building blocks of `tracekit diff` reports: a measure compared before
//! and after is four columns, `KEY_before`, `KEY_after`, `KEY_delta`
//! (after − before, in the measure's unit) and `KEY_ratio` (after / before,
//! [`Unit::Ratio`]; null when before is zero or either side is missing),
//! and where both sides hold samples, a test of whether the change is
//! beyond their spread ([`crate::stats::mann_whitney`]): `p_value`
//! ([`Unit::Number`]) and `significance` (the words of
//! [`crate::stats::verdict`]).

use crate::model::{Body, Column, Item, Section, Table};
use crate::stats::{self, MannWhitney};
use crate::value::{Unit, Value};

/// The four columns of a measure compared: `KEY_before`, `KEY_after`,
/// `KEY_delta`, `KEY_ratio`.
pub fn columns(key: &str, label: &str, unit: Unit) -> [Column; 4] {
    [
        Column::new(format!("{key}_before"), format!("{label} before"), unit),
        Column::new(format!("{key}_after"), format!("{label} after"), unit),
        Column::new(format!("{key}_delta"), format!("{label} change"), unit),
        Column::new(
            format!("{key}_ratio"),
            format!("{label} ratio"),
            Unit::Ratio,
        ),
    ]
}

/// The values of [`columns`] for integer measures (counts, integer
/// durations): the change is a signed integer.
pub fn uint(before: Option<u64>, after: Option<u64>) -> [Value; 4] {
    let delta = match (before, after) {
        (Some(b), Some(a)) => Value::Int(a as i64 - b as i64),
        _ => Value::Null,
    };
    [
        before.into(),
        after.into(),
        delta,
        ratio(before.map(|b| b as f64), after.map(|a| a as f64)),
    ]
}

/// The values of [`columns`] for measures that are not integers.
pub fn float(before: Option<f64>, after: Option<f64>) -> [Value; 4] {
    let delta = match (before, after) {
        (Some(b), Some(a)) => Value::Float(a - b),
        _ => Value::Null,
    };
    [before.into(), after.into(), delta, ratio(before, after)]
}

/// A measure compared, as summary items: `KEY_before`, `KEY_after`,
/// `KEY_delta` (in `unit`) and `KEY_ratio` ([`Unit::Ratio`]), from the
/// values of [`uint`] or [`float`].
pub fn items(key: &str, label: &str, unit: Unit, values: [Value; 4]) -> Vec<Item> {
    let [b, a, d, r] = values;
    vec![
        Item::new(format!("{key}_before"), format!("{label} before"), b, unit),
        Item::new(format!("{key}_after"), format!("{label} after"), a, unit),
        Item::new(format!("{key}_delta"), format!("{label} change"), d, unit),
        Item::new(
            format!("{key}_ratio"),
            format!("{label} ratio"),
            r,
            Unit::Ratio,
        ),
    ]
}

/// after / before, when both are known and before is not zero.
pub fn ratio(before: Option<f64>, after: Option<f64>) -> Value {
    match (before, after) {
        (Some(b), Some(a)) if b != 0.0 => Value::Float(a / b),
        _ => Value::Null,
    }
}

/// The columns of a test between two sets of samples: `p_value` and
/// `significance`.
pub fn test_columns() -> [Column; 2] {
    [
        Column::new("p_value", "p (Mann–Whitney U)", Unit::Number),
        Column::new("significance", "significance", Unit::Text),
    ]
}

/// The values of [`test_columns`] for samples `before` and `after` (any
/// unit, the same on both sides).
pub fn test(before: &[f64], after: &[f64]) -> [Value; 2] {
    let t: Option<MannWhitney> = stats::mann_whitney(before, after);
    [
        t.map_or(Value::Null, |t| Value::Float(t.p)),
        stats::verdict(t.as_ref()).into(),
    ]
}

/// How a row's change ranks: the absolute change of a total (a column
/// `impact`, in the total's unit, sorted descending).
pub fn impact_column(unit: Unit) -> Column {
    Column::new("impact", "impact (|total change|)", unit)
}

/// Gives a diff section a compact text form (JSON and HTML keep every
/// field): a summary's compared measures become rows of `before`, `after`,
/// `change`, `ratio` (other items keep a row of their own); a table loses
/// its ratio and impact columns. Other sections are left as they are.
pub fn compact_text(s: Section) -> Section {
    let mut out = Vec::new();
    let written = match &s.body {
        Body::Summary { items } => crate::text::table(&mut out, &measures_table(items)),
        Body::Table(t) => {
            let keep: Vec<usize> = t
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.key.ends_with("_ratio") && c.key != "impact")
                .map(|(i, _)| i)
                .collect();
            let pick = |r: &[Value]| -> Vec<Value> { keep.iter().map(|&i| r[i].clone()).collect() };
            let narrow = Table {
                columns: keep.iter().map(|&i| t.columns[i].clone()).collect(),
                rows: t.rows.iter().map(|r| pick(r)).collect(),
                more: t.more.as_ref().map(|m| crate::model::More {
                    rows: m.rows,
                    totals: if m.totals.is_empty() {
                        Vec::new()
                    } else {
                        pick(&m.totals)
                    },
                }),
                sort: t.sort.clone(),
            };
            crate::text::table(&mut out, &narrow)
        }
        _ => return s,
    };
    if written.is_err() {
        return s;
    }
    let text = format!("{}\n{}\n", s.title, String::from_utf8_lossy(&out));
    s.verbatim(text)
}

/// Summary items as rows: a measure's four items (`KEY_before`, ...) in
/// one row, formatted in their unit.
fn measures_table(items: &[Item]) -> Table {
    let col = |k: &str, l: &str, u: Unit| Column::new(k, l, u);
    let mut t = Table::new(vec![
        col("measure", "", Unit::Text),
        col("before", "before", Unit::Count),
        col("after", "after", Unit::Count),
        col("delta", "change", Unit::Count),
        col("ratio", "ratio", Unit::Count),
    ]);
    let fmt = |i: &Item| Value::Text(crate::format::value(&i.value, i.unit));
    let mut i = 0;
    while i < items.len() {
        let it = &items[i];
        if let Some(key) = it.key.strip_suffix("_before") {
            let group: Vec<&Item> = items[i..].iter().take(4).collect();
            let suffixes = ["_before", "_after", "_delta", "_ratio"];
            if group.len() == 4
                && group
                    .iter()
                    .zip(suffixes)
                    .all(|(g, s)| g.key == format!("{key}{s}"))
            {
                let label = it.label.strip_suffix(" before").unwrap_or(&it.label);
                let mut row = vec![Value::Text(label.to_string())];
                row.extend(group.iter().map(|g| fmt(g)));
                t.row(row);
                i += 4;
                continue;
            }
        }
        t.row(vec![Value::Text(it.label.clone()), fmt(it)]);
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_and_ratios() {
        assert_eq!(
            uint(Some(4), Some(6)),
            [
                Value::UInt(4),
                Value::UInt(6),
                Value::Int(2),
                Value::Float(1.5)
            ]
        );
        assert_eq!(
            uint(None, Some(6)),
            [Value::Null, Value::UInt(6), Value::Null, Value::Null]
        );
        assert_eq!(float(Some(0.0), Some(1.0))[3], Value::Null);
        assert_eq!(columns("p50", "p50", Unit::Us)[2].key, "p50_delta");
    }

    #[test]
    fn compact_text_puts_a_measure_on_one_line() {
        let mut items = items("events", "events", Unit::Count, uint(Some(10), Some(15)));
        items.push(Item::new("added", "types only after", 2u64, Unit::Count));
        let s = compact_text(Section::summary("totals", "Totals", items));
        let crate::model::TextForm::Verbatim(t) = &s.text else {
            panic!("{:?}", s.text)
        };
        assert_eq!(
            t,
            "Totals\n                   before after change ratio\n  events               10    15      5  1.5×\n  types only after      2\n\n"
        );
    }
}
