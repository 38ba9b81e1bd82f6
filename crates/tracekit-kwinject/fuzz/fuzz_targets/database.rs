//! Any bytes as a Bear configuration file and as an existing compilation
//! database (`--append`), then through the filters and both output forms:
//! errors are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_kwinject::bear_config::BearConfig;
use tracekit_kwinject::cdb::{read_database, CdbBuilder, CdbOptions};

fuzz_target!(|data: &[u8]| {
    let mut opts = CdbOptions {
        existing_only: false,
        ..Default::default()
    };
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = BearConfig::parse(text) {
            c.apply(&mut opts, "/w");
            opts.existing_only = false;
        }
    }
    let Ok(old) = read_database(data) else { return };
    for command_as_array in [true, false] {
        let mut b = CdbBuilder::new(CdbOptions {
            command_as_array,
            ..opts.clone()
        });
        b.append(old.clone());
        let _ = b.write(Vec::new());
    }
});
