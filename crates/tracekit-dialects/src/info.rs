//! What `info --json` prints for one input, in every dialect: the facts the
//! dialects share under the same names (`tracekit.info/1`, docs/info-json.md),
//! and each dialect's own under `details`. A fact an input does not carry
//! is absent (never a made-up zero).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::{json, Map, Value};

use crate::input::Input;
use crate::options::InfoOptions;
use crate::registry;

/// `tracekit info`: inputs grouped by dialect (in the order first seen),
/// each group summarised by its dialect; the worst exit status wins.
pub fn run(inputs: Vec<Input>, options: &InfoOptions) -> Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    for (dialect, group) in registry::group(inputs)? {
        let c = dialect.info(&group, options)?;
        if c != ExitCode::SUCCESS {
            code = c;
        }
    }
    Ok(code)
}

/// One input's summary.
#[derive(Debug, Clone, Default)]
pub struct Info {
    /// The input as named on the command line (`<stdin>` for `-`).
    pub input: String,
    /// The dialect: `trace2`, `xray`, `build`, `ninja`, `rtrace`, `posix`.
    pub dialect: &'static str,
    /// The format, as a person names it ("Git Trace2 EVENT", "LLVM XRay FDR").
    pub format: String,
    /// The format's version, as the input states it.
    pub version: Option<String>,
    /// What wrote the input (a program and its version), as it says.
    pub producer: Option<String>,
    /// Records or events the input holds (the dialect's unit).
    pub events: Option<u64>,
    pub processes: Option<u64>,
    pub threads: Option<u64>,
    /// The first and last wall-clock times (RFC 3339, or a time of day
    /// where the input has no date).
    pub first_time: Option<String>,
    pub last_time: Option<String>,
    /// From the first to the last event.
    pub duration_s: Option<f64>,
    /// Warnings while reading.
    pub warnings: Option<u64>,
    /// Records lost or unreadable (the input's own count where it has one).
    pub lost: Option<u64>,
    /// The dialect's own fields (docs/info-json.md lists them).
    pub details: Value,
}

impl Info {
    /// The `tracekit.info/1` object.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("schema".into(), json!("tracekit.info/1"));
        m.insert("input".into(), json!(self.input));
        m.insert("dialect".into(), json!(self.dialect));
        m.insert("format".into(), json!(self.format));
        let optional = [
            ("version", self.version.as_ref().map(|v| json!(v))),
            ("producer", self.producer.as_ref().map(|v| json!(v))),
            ("events", self.events.map(|v| json!(v))),
            ("processes", self.processes.map(|v| json!(v))),
            ("threads", self.threads.map(|v| json!(v))),
            ("first_time", self.first_time.as_ref().map(|v| json!(v))),
            ("last_time", self.last_time.as_ref().map(|v| json!(v))),
            ("duration_s", self.duration_s.map(|v| json!(v))),
            ("warnings", self.warnings.map(|v| json!(v))),
            ("lost", self.lost.map(|v| json!(v))),
        ];
        for (k, v) in optional {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        }
        m.insert("details".into(), self.details.clone());
        Value::Object(m)
    }

    /// Writes the object as one line (JSON Lines: one input a line).
    pub fn write_line(&self, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, &self.to_json())?;
        writeln!(out)
    }
}

/// A JSON string or number as text (versions are either, by format).
pub fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_facts_are_left_out_and_details_kept() {
        let i = Info {
            input: "a".into(),
            dialect: "xray",
            format: "LLVM XRay FDR".into(),
            events: Some(3),
            details: json!({"mode": "FDR"}),
            ..Info::default()
        };
        let v = i.to_json();
        assert_eq!(v["schema"], "tracekit.info/1");
        assert_eq!(v["events"], 3);
        assert!(v.get("threads").is_none());
        assert_eq!(v["details"]["mode"], "FDR");
    }
}
