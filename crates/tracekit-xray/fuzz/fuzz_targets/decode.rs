//! Any bytes through every XRay decoder and analysis: FDR/basic framing,
//! block index, per-thread expansion, the time-sorted merge, fdr-dump,
//! account, stack, graph and the writers. Errors are fine; panics are not.
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
