//! `tracekit report` as data: the report's calls, timelines and account
//! statistics against the library's own analyses of the same trace, on
//! every trace of the corpus (the CLI tests compare with llvm-xray).

use std::path::Path;

use tracekit_report::{Body, Report, Value};
use tracekit_xray::account::{AccountOptions, Accountant};
use tracekit_xray::names::FunctionNames;
use tracekit_xray::report::{build, Options};
use tracekit_xray::Trace;

mod common;
use common::{xray_files, CORPUS};

fn report(data: &[u8], opts: &Options) -> Option<Report> {
    let t = Trace::open(data).ok()?;
    build(&t, &FunctionNames::none(), "t", opts)
        .ok()
        .map(|r| r.0)
}

#[test]
fn timelines_hold_every_call_until_the_cap() {
    let data = std::fs::read(format!("{CORPUS}/mt/mt.fdr.xray")).expect("corpus");
    let trace = Trace::open(&data).expect("trace");
    // The calls as the timeline pairs them.
    let (stats, _) = tracekit_xray::calls::for_each_call(&trace, |_| Ok(())).expect("calls");
    let r = report(&data, &Options::default()).expect("report");
    let Some(Body::Spans(s)) = r.find("timelines").map(|s| &s.body) else {
        panic!("no timelines")
    };
    assert_eq!(s.spans.len() as u64, stats.calls + stats.unfinished);
    assert_eq!(s.lanes.len(), 5);
    assert!(s
        .spans
        .iter()
        .all(|x| x.end >= x.start && (x.lane as usize) < s.lanes.len()));
    let Some(Body::Histogram(h)) = r.find("call_durations").map(|s| &s.body) else {
        panic!("no histogram")
    };
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), stats.calls);

    // One call over the cap: the lanes go, a note says why.
    let cap = (stats.calls + stats.unfinished - 1) as usize;
    let r = report(
        &data,
        &Options {
            timeline_calls: cap,
            ..Options::default()
        },
    )
    .expect("report");
    match r.find("timelines").map(|s| &s.body) {
        Some(Body::Notes { items, .. }) => {
            assert!(
                items[0].text.contains(&format!("at most {cap} calls")),
                "{items:?}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// The functions table's latency columns are `account -k`'s rows, on every
/// trace of the corpus the report accepts.
#[test]
fn functions_carry_account_statistics() {
    let mut files = Vec::new();
    xray_files(Path::new(CORPUS), &mut files);
    files.sort();
    let mut checked = 0;
    for f in files {
        let data = std::fs::read(&f).expect("corpus file");
        let Ok(trace) = Trace::open(&data) else {
            continue;
        };
        let Some(r) = report(&data, &Options::default()) else {
            continue;
        };
        let mut acc = Accountant::new(AccountOptions {
            keep_going: true,
            deduce_sibling_calls: false,
            recursive_calls_only: false,
        })
        .orphan_exits_are_errors(trace.yaml.is_some());
        if trace.try_for_each(|rec| acc.add(rec)).is_err() {
            continue;
        }
        let (rows, _) = acc.rows(trace.header.cycle_frequency);
        let Some(Body::Table(t)) = r.find("functions").map(|s| &s.body) else {
            panic!("{}: no functions table", f.display())
        };
        let col = |k: &str| t.column(k).expect(k);
        let (id, count, p99, sum) = (col("funcid"), col("count"), col("p99_s"), col("sum_s"));
        for row in &rows {
            let ours = t
                .rows
                .iter()
                .find(|x| x[id] == Value::Int(i64::from(row.func_id)))
                .unwrap_or_else(|| panic!("{}: function {}", f.display(), row.func_id));
            assert_eq!(ours[count], Value::UInt(row.count), "{}", f.display());
            assert_eq!(ours[p99], Value::Float(row.pct99), "{}", f.display());
            assert_eq!(ours[sum], Value::Float(row.sum), "{}", f.display());
            checked += 1;
        }
    }
    assert!(checked >= 50, "{checked} functions checked");
}
