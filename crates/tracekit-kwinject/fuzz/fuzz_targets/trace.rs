//! Any bytes through the trace reader, env folding and both spec builders:
//! errors and warnings are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_kwinject::cdb::{CdbBuilder, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::kwspec::SpecBuilder;
use tracekit_kwinject::trace::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = Trace::read(data) else { return };
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = tracekit_core::Warnings::default();
    let mut cdb = CdbBuilder::new(CdbOptions {
        existing_only: false,
        ..Default::default()
    });
    let none = |_: &str| None;
    let mut spec = SpecBuilder::new(&none);
    for p in &t.processes {
        let env = folder.fold(p, &mut w);
        cdb.add(p, &env);
        spec.add(p, &env);
    }
    let _ = cdb.write(Vec::new());
    let _ = spec.write(Vec::new());
    let b = tracekit_kwinject::analysis::Build::new(&t);
    let _ = tracekit_kwinject::analysis::to_chrome(&b, Vec::new());
    let mut text = Vec::new();
    tracekit_kwinject::analysis::report_text(&b, 5, &mut text).expect("to memory");
    // The report as data, through every renderer: the text is the same.
    let opts = tracekit_kwinject::report::Options {
        top: 5,
        ..Default::default()
    };
    let data = tracekit_kwinject::report::to_report(&b, "fuzz", &opts);
    let mut again = Vec::new();
    tracekit_report::text::write(&mut again, std::slice::from_ref(&data)).expect("to memory");
    assert_eq!(again, text, "the rendered text differs from report_text's");
    tracekit_report::json::write(&mut Vec::new(), std::slice::from_ref(&data)).expect("to memory");
    tracekit_report::html::write(&mut Vec::new(), std::slice::from_ref(&data)).expect("to memory");
});
