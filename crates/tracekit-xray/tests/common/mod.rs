//! Shared by the integration tests: finding XRay logs.
// (Each test crate uses a part of this.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `tests/corpus/xray`.
pub const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/xray");

/// Every `*.xray` file below `dir`, appended to `out`.
pub fn xray_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("corpus dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            xray_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "xray") {
            out.push(p);
        }
    }
}
