//! `tracekit record mem` without the CLI (and its SQL engine), for
//! measuring the recorder on its own: `record_mem [--raw] OUT CMD...`
//! runs CMD under the shim (memory; backtrace depth $DEPTH, default the
//! most, 64) and writes the recording directory OUT as `record mem` would
//! (text, or with `--raw` the raw recordings).

use std::path::PathBuf;
use std::process::Command;

use tracekit_rtrace::recording::capture::{Capture, Outputs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let raw = args.first().is_some_and(|a| a == "--raw");
    if raw {
        args.remove(0);
    }
    if args.len() < 2 {
        return Err("usage: record_mem [--raw] OUT CMD...".into());
    }
    let outputs = Outputs {
        dir: Some(PathBuf::from(&args[0])),
        raw,
        ..Outputs::default()
    };
    outputs.prepare(0)?;
    let depth = std::env::var("DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(tracekit_rtrace_preload::wire::MAX_DEPTH);
    let lib_dir = tempfile::tempdir()?;
    let lib = lib_dir.path().join("libtracekit_rtrace_shim.so");
    std::fs::write(&lib, tracekit_rtrace_preload::SHIM)?;
    let capture = Capture::start_for(&outputs, depth)?;
    let mut child = Command::new(&args[1])
        .args(&args[2..])
        .env("LD_PRELOAD", &lib)
        .envs(capture.env("memory"))
        .spawn()?;
    let root = child.id() as i32;
    let status = child.wait()?;
    let recorded = capture.finish_into(&outputs, root, status)?;
    recorded.write(|_, _| {})?;
    Ok(())
}
