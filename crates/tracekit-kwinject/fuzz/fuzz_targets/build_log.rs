//! Any bytes as a build log (make, ninja, shell lines, strace) and as a
//! shell script: through the reader, the shell splitter and the
//! compilation database. Errors and unparsed lines are fine, panics are
//! not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_kwinject::buildlog;
use tracekit_kwinject::cdb::{CdbBuilder, CdbOptions};
use tracekit_kwinject::shell;
use tracekit_kwinject::trace::Env;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = shell::commands(&text, "/w", shell::Dir::Start);
    let log = buildlog::read(&text, "/w");
    let mut b = CdbBuilder::new(CdbOptions {
        existing_only: false,
        drop_flags: vec!["-m*".into()],
        ..Default::default()
    });
    for (p, env) in log.processes(&Env::new(), &|name, _| name.to_string()) {
        b.add(&p, &env);
    }
    let _ = b.write(Vec::new());
});
