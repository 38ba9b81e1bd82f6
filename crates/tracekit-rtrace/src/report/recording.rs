//! The report of a whole recording (`record mem`'s directory, see
//! [`crate::recording::set`]): a table of its processes, then each
//! image's report; as text and as JSON.

use std::io::Write;

use serde_json::{json, Value};

use super::text::human_bytes;
use super::Report;
use crate::recording::set::Recording;

/// The reports of a recording's images, in its order, with the name each
/// trace is shown under.
pub struct RecordingReport<'a> {
    pub recording: &'a Recording,
    pub reports: Vec<(String, Report)>,
}

impl RecordingReport<'_> {
    /// A line per process image (parent, program, allocations, peak,
    /// leaks, how it ended), then each image's report.
    pub fn write_text<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        let rec = self.recording;
        writeln!(
            out,
            "tracekit memory recording {}: {} process image(s)",
            rec.path.display(),
            rec.images.len()
        )?;
        if !rec.command.is_empty() {
            writeln!(out, "  command: {}", rec.command.join(" "))?;
        }
        for (i, (_, r)) in rec.images.iter().zip(&self.reports) {
            write!(out, "  {}", i.label())?;
            if let Some(pp) = i.ppid {
                write!(out, ", parent {pp}")?;
            }
            match r.resource("memory").map(|k| &r.resources[k]) {
                Some(m) => write!(
                    out,
                    ": {} allocations, peak {}, never freed {} in {} blocks",
                    m.allocs,
                    human_bytes(m.peak_bytes),
                    human_bytes(m.leaked_bytes),
                    m.leaked_blocks
                )?,
                None => write!(out, ": {} calls", r.calls)?,
            }
            match &i.end {
                Some(e) => writeln!(out, "; {e}")?,
                None => writeln!(out)?,
            }
        }
        for (i, (file, r)) in rec.images.iter().zip(&self.reports) {
            writeln!(out)?;
            writeln!(out, "==== {} ====", i.label())?;
            r.write_text(&mut out, file)?;
        }
        Ok(())
    }

    /// The same as JSON: each image's report under `processes`.
    pub fn to_json(&self) -> Value {
        let rec = self.recording;
        let processes: Vec<Value> = rec
            .images
            .iter()
            .zip(&self.reports)
            .map(|(i, (file, r))| {
                json!({
                    "pid": i.pid, "image": i.n, "ppid": i.ppid,
                    "executable": i.executable, "end": i.end,
                    "report": r.to_json(file),
                })
            })
            .collect();
        json!({
            "recording": rec.path.display().to_string(),
            "format": crate::recording::set::FORMAT,
            "command": rec.command,
            "pid": rec.pid,
            "processes": processes,
        })
    }
}
