//! Any bytes as an instrumentation map (ELF `xray_instr_map` or extract
//! YAML) and through symbolization.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_xray::names::FunctionNames;

fuzz_target!(|data: &[u8]| {
    if let Ok(names) = FunctionNames::from_bytes(data, true) {
        let n = names.map().map(|m| m.functions.len()).unwrap_or(0).min(64);
        for id in 0..=n as i32 {
            let _ = names.symbol_or_number(id);
            let _ = names.file_line_column(id);
        }
        let mut out = Vec::new();
        if let Some(m) = names.map() {
            let _ = m.write_yaml(&mut out, |id| names.symbol_or_number(id).to_string());
        }
    }
});
