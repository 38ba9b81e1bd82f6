//! `convert --to chrome` on every trace of the corpus: valid JSON whose
//! begin/end events balance per thread and whose begins are exactly the
//! entry records (an independent count from the decoded records).

use std::collections::HashMap;
use std::path::Path;

use tracekit_xray::Trace;

mod common;
use common::{xray_files, CORPUS};

#[test]
fn chrome_events_balance_and_match_the_records() {
    let mut files = Vec::new();
    xray_files(Path::new(CORPUS), &mut files);
    files.sort();
    let names = tracekit_xray::names::FunctionNames::none();
    let mut checked = 0;
    for f in files {
        let data = std::fs::read(&f).unwrap();
        let Ok(trace) = Trace::open(&data) else {
            continue;
        };
        let mut out = Vec::new();
        if tracekit_xray::commands::convert_chrome(&trace, &names, &mut out).is_err() {
            continue;
        }
        let entries = match trace.try_for_each(|_| Ok(())) {
            Ok(_) => {
                let mut n = 0u64;
                trace
                    .try_for_each(|r| {
                        n += u64::from(r.kind.is_entry());
                        Ok(())
                    })
                    .unwrap();
                n
            }
            Err(_) => continue,
        };
        let doc: serde_json::Value = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", f.display()));
        let mut depth: HashMap<i64, i64> = HashMap::new();
        let mut begins = 0u64;
        for ev in doc["traceEvents"].as_array().unwrap() {
            let tid = ev["tid"].as_i64().unwrap();
            match ev["ph"].as_str().unwrap() {
                "B" => {
                    begins += 1;
                    *depth.entry(tid).or_default() += 1;
                }
                "E" => {
                    let d = depth.entry(tid).or_default();
                    *d -= 1;
                    assert!(*d >= 0, "{}: end without begin on {tid}", f.display());
                }
                _ => {}
            }
        }
        assert!(
            depth.values().all(|&d| d == 0),
            "{}: unbalanced {depth:?}",
            f.display()
        );
        assert_eq!(begins, entries, "{}", f.display());
        checked += 1;
    }
    assert!(checked >= 25, "{checked} traces checked");
}
