//! `account`'s row order and llvm-xray's text and CSV tables.

use std::io::Write;

use super::{Row, SortField};
use crate::names::FunctionNames;

/// Sorts rows like llvm-xray (stable, so ties keep its map order) and
/// keeps the first `top` (0: all).
pub fn sort_rows(rows: &mut Vec<Row>, field: SortField, descending: bool, top: usize) {
    let key = |r: &Row| -> f64 {
        match field {
            SortField::FuncId => r.func_id as f64,
            SortField::Count => r.count as f64,
            SortField::Min => r.min,
            SortField::Med => r.median,
            SortField::Pct90 => r.pct90,
            SortField::Pct99 => r.pct99,
            SortField::Max => r.max,
            SortField::Sum => r.sum,
            SortField::Func => 0.0,
        }
    };
    if field != SortField::Func {
        rows.sort_by(|a, b| {
            let (x, y) = (key(a), key(b));
            let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
            if descending {
                o.reverse()
            } else {
                o
            }
        });
    }
    if top > 0 {
        rows.truncate(top);
    }
}

/// C's `%e` (as LLVM's `raw_ostream << double` prints).
pub fn fmt_exp(v: f64) -> String {
    let s = format!("{v:.6e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// The text table (`-format=text`).
pub fn write_text<W: Write + ?Sized>(
    out: &mut W,
    total_functions: usize,
    rows: &[Row],
    names: &FunctionNames,
) -> std::io::Result<()> {
    writeln!(out, "Functions with latencies: {total_functions}")?;
    writeln!(
        out,
        "{:>9} {:>10} [{:>9}, {:>9}, {:>9}, {:>9}, {:>9}] {:>9}  {:<12}",
        "funcid", "count", "min", "med", "90p", "99p", "max", "sum", "function"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:>9} {:>10} [{:>9.6}, {:>9.6}, {:>9.6}, {:>9.6}, {:>9.6}] {:>9.6}  {}: {}",
            r.func_id,
            r.count,
            r.min,
            r.median,
            r.pct90,
            r.pct99,
            r.max,
            r.sum,
            names.file_line_column(r.func_id),
            names.symbol_or_number(r.func_id)
        )?;
    }
    Ok(())
}

/// The CSV table (`-format=csv`).
pub fn write_csv<W: Write + ?Sized>(
    out: &mut W,
    rows: &[Row],
    names: &FunctionNames,
) -> std::io::Result<()> {
    writeln!(
        out,
        "funcid,count,min,median,90%ile,99%ile,max,sum,debug,function"
    )?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},\"{}\",\"{}\"",
            r.func_id,
            r.count,
            fmt_exp(r.min),
            fmt_exp(r.median),
            fmt_exp(r.pct90),
            fmt_exp(r.pct99),
            fmt_exp(r.max),
            fmt_exp(r.sum),
            names.file_line_column(r.func_id),
            names.symbol_or_number(r.func_id)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fmt_exp;

    #[test]
    fn exponent_format_is_c_like() {
        assert_eq!(fmt_exp(3.47e-7), "3.470000e-07");
        assert_eq!(fmt_exp(0.0), "0.000000e+00");
        assert_eq!(fmt_exp(1.717987), "1.717987e+00");
        assert_eq!(fmt_exp(123456.0), "1.234560e+05");
    }
}
