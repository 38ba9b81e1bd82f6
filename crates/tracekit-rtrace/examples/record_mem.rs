//! `tracekit record mem` without the CLI (and its SQL engine), for
//! measuring the recorder on its own: `record_mem [--format F] OUT CMD...`
//! runs CMD under the shim (memory; backtrace depth $DEPTH, default the
//! most, 64) and writes OUT as `record mem` would: a `.tkmem` file
//! (`--format tkmem`, the default), or a recording directory of text
//! traces (`text`) or raw recordings (`raw`; `--raw` is the same);
//! `--addresses` keeps every heap block's address in the `.tkmem` file.

use std::path::PathBuf;
use std::process::Command;

use tracekit_rtrace::recording::capture::{Capture, Format, Outputs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut format = Format::Tkmem;
    let mut addresses = false;
    loop {
        match args.first().and_then(|a| a.to_str()) {
            Some("--raw") => {
                format = Format::Raw;
                args.remove(0);
            }
            Some("--addresses") => {
                addresses = true;
                args.remove(0);
            }
            Some("--format") if args.len() > 1 => {
                format = args[1]
                    .to_str()
                    .and_then(Format::parse)
                    .ok_or("--format: tkmem, text or raw")?;
                args.drain(..2);
            }
            _ => break,
        }
    }
    if args.len() < 2 {
        return Err("usage: record_mem [--format tkmem|text|raw] [--addresses] OUT CMD...".into());
    }
    let outputs = Outputs {
        path: Some(PathBuf::from(&args[0])),
        format,
        transient_addresses: addresses,
        command: args[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
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
