//! llvm-xray YAML traces: the bytes after a valid header as the records,
//! through the YAML reader, the sorted merge and the analyses. Errors are
//! fine; panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_xray::commands::{self, AccountArgs, GraphArgs, StackArgs};
use tracekit_xray::names::FunctionNames;
use tracekit_xray::Trace;

const HEADER: &[u8] = b"---\nheader:\n  version: 1\n  type: 0\n  constant-tsc: true\n  nonstop-tsc: true\n  cycle-frequency: 1000\nrecords:\n";

fuzz_target!(|data: &[u8]| {
    // Half the inputs as whole documents, half as records under a header.
    let mut doc = Vec::with_capacity(HEADER.len() + data.len());
    if data.first().is_some_and(|b| b & 1 == 1) {
        doc.extend_from_slice(HEADER);
        doc.extend_from_slice(&data[1..]);
    } else {
        doc.extend_from_slice(data);
    }
    let Ok(trace) = Trace::open(&doc) else { return };
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
    for keep_going in [false, true] {
        let args = AccountArgs {
            keep_going,
            deduce_sibling_calls: true,
            ..Default::default()
        };
        let _ = commands::account(&trace, &names, &args, &mut sink);
        let args = StackArgs {
            keep_going,
            ..Default::default()
        };
        let _ = commands::stack(std::slice::from_ref(&trace), &names, &args, &mut sink);
    }
    let _ = commands::graph(&trace, &names, &GraphArgs::default(), &mut sink);
    let _ = commands::convert_yaml(&trace, &names, false, true, &mut sink);
    let _ = tracekit_xray::writer::convert_to_fdr(&trace, &mut sink);
});
