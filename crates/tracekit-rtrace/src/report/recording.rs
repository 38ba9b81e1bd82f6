//! The report of a whole recording (`record mem`'s directory, see
//! [`crate::recording::set`]): a table of its processes, then each
//! image's report; as text and as JSON.

use std::io::Write;

use serde_json::{json, Value};

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
    /// leaks, how it ended), then each image's report: the text of
    /// [`RecordingReport::to_reports`].
    pub fn write_text<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        tracekit_report::text::write(&mut out, &self.to_reports())
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
