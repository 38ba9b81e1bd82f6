//! Any bytes through every XRay decoder and analysis: FDR/basic framing,
//! block index, per-thread expansion, the time-sorted merge, fdr-dump,
//! account (sequential and parallel, compared), stack, graph, the
//! conversions and the writers. Errors are fine; panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_xray::commands::{self, AccountArgs, GraphArgs, StackArgs};
use tracekit_xray::names::FunctionNames;
use tracekit_xray::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::open(data) else { return };
    for r in trace.records() {
        if r.is_err() {
            break;
        }
    }
    for r in trace.sorted_records() {
        if r.is_err() {
            break;
        }
    }
    let names = FunctionNames::none();
    let mut sink = Vec::new();
    let _ = tracekit_xray::fdr_dump::write_fdr_dump(&trace, true, &mut sink);
    sink.clear();
    let _ = tracekit_xray::fdr_dump::write_fdr_dump(&trace, false, &mut sink);
    sink.clear();
    let args = AccountArgs {
        keep_going: true,
        deduce_sibling_calls: true,
        ..Default::default()
    };
    let _ = commands::account(&trace, &names, &args, &mut sink);
    sink.clear();
    // The parallel FDR account (default matching) equals the sequential
    // accountant, wherever the load order is cut.
    if trace.is_fdr_log() {
        use tracekit_xray::account::{self, AccountOptions, Accountant};
        for keep_going in [false, true] {
            let mut acc = Accountant::new(AccountOptions {
                keep_going,
                deduce_sibling_calls: false,
                recursive_calls_only: false,
            });
            let want = trace.try_for_each(|r| acc.add(r)).map(|w| {
                let (rows, w2) = acc.rows(trace.header.cycle_frequency);
                (rows, w.total() + w2.total())
            });
            let got = account::account_fdr_parallel(&trace, keep_going, 2, 64, &names)
                .map(|(rows, w)| (rows, w.total()));
            match (want, got) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("sequential {a:?} vs parallel {b:?}"),
            }
        }
    }
    // So does the parallel FDR stack trie.
    if trace.is_fdr_log() {
        use tracekit_xray::stack::StackTrie;
        for keep_going in [false, true] {
            let report = |parallel: bool| -> Result<Vec<u8>, String> {
                let mut trie = StackTrie::new(keep_going);
                let w = if parallel {
                    trie.add_fdr_parallel(&trace, 2, 64)
                } else {
                    trace.try_for_each(|r| trie.add(r))
                }
                .map_err(|e| e.to_string())?;
                let mut out =
                    format!("{} {}\n", w.total(), trie.finish_warnings().total()).into_bytes();
                let roots = trie.all_roots();
                let _ = trie.write_report(&mut out, &names, &roots);
                Ok(out)
            };
            assert_eq!(report(false), report(true));
        }
    }
    let _ = commands::convert_chrome(&trace, &names, &mut sink);
    sink.clear();
    let _ = commands::stack(
        std::slice::from_ref(&trace),
        &names,
        &StackArgs {
            keep_going: true,
            ..Default::default()
        },
        &mut sink,
    );
    sink.clear();
    let _ = commands::graph(
        &trace,
        &names,
        &GraphArgs {
            keep_going: true,
            ..Default::default()
        },
        &mut sink,
    );
    sink.clear();
    let _ = commands::convert_yaml(&trace, &names, false, true, &mut sink);
    sink.clear();
    let _ = commands::convert_trace_event(&trace, &names, false, true, &mut sink);
    sink.clear();
    if tracekit_xray::writer::convert_to_fdr(&trace, &mut sink).is_ok() {
        // What we write must read back.
        let back = Trace::open(&sink).expect("our FDR output has a valid header");
        for r in back.records() {
            r.expect("our FDR output decodes");
        }
    }
    sink.clear();
    let _ = tracekit_xray::writer::convert_to_basic(&trace, &mut sink);
});
