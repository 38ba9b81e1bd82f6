//! The dialects of this binary, in detection order, and detection over
//! them (the interface is `tracekit_dialects::registry`).

use anyhow::Result;

use tracekit_dialects::input::Input;
pub use tracekit_dialects::registry::*;

/// The dialects, in detection order (most specific first).
pub static DIALECTS: &[&dyn Dialect] = &[
    &tracekit_dialects::trace2::Trace2,
    &tracekit_dialects::rtrace::Rtrace,
    &tracekit_dialects::xray::Xray,
    &tracekit_dialects::build::Kwinject,
    &tracekit_dialects::ninja::NinjaLog,
    &tracekit_dialects::posix::PosixLog,
    // Add your dialect above this line (one entry).
];

/// Finds the dialect of `input`, or says which formats were tried.
pub fn detect(input: &Input) -> Result<&'static dyn Dialect> {
    for d in DIALECTS {
        if d.sniff(input) {
            return Ok(*d);
        }
    }
    let tried: Vec<&str> = DIALECTS.iter().map(|d| d.name()).collect();
    Err(tracekit_core::Error::UnknownFormat {
        file: input.path.clone(),
        tried: tried.join(", "),
    }
    .into())
}

/// Groups inputs by dialect, keeping the order of first appearance, so a
/// report over several files of one dialect sees them together.
pub fn group(inputs: Vec<Input>) -> Result<Vec<(&'static dyn Dialect, Vec<Input>)>> {
    let mut groups: Vec<(&'static dyn Dialect, Vec<Input>)> = Vec::new();
    for input in inputs {
        let d = detect(&input)?;
        // By name: the dialects are zero-sized statics, which may share
        // one address.
        match groups.iter_mut().find(|(g, _)| g.name() == d.name()) {
            Some((_, v)) => v.push(input),
            None => groups.push((d, vec![input])),
        }
    }
    Ok(groups)
}
