//! What the verbs ask of a dialect, as typed options: the binary turns its
//! flags into these once (ripgrep's `HiArgs`), and nothing below it sees a
//! flag. Field names follow the flags they come from.

use std::path::PathBuf;
use std::sync::Arc;

use tracekit_otlp::exporter::ExporterConfig;
use tracekit_otlp::redact::Redactor;

/// `info`: what is this trace?
#[derive(Debug, Clone, Default)]
pub struct InfoOptions {
    /// JSON instead of text, one object per input.
    pub json: bool,
    /// The instrumented binary, for formats that need it to name things
    /// (XRay function ids).
    pub instr_map: Option<PathBuf>,
}

/// `report`: analyse traces.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// `tracekit.report/1` JSON instead of text.
    pub json: bool,
    /// One self-contained HTML page.
    pub html: bool,
    /// Where the report goes (`None` or `-`: standard output).
    pub output: Option<PathBuf>,
    /// How many entries the ranked tables show.
    pub top: usize,
    /// The instrumented binary (XRay function ids).
    pub instr_map: Option<PathBuf>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            json: false,
            html: false,
            output: None,
            top: 20,
            instr_map: None,
        }
    }
}

/// `diff`: what changed between two traces of one dialect.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// How many rows the ranked tables show (the rest are counted).
    pub top: usize,
    /// The instrumented binary both XRay logs come from.
    pub instr_map: Option<PathBuf>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            top: 20,
            instr_map: None,
        }
    }
}

/// OTLP: how to send and what to hide.
#[derive(Debug, Clone, Default)]
pub struct OtlpOptions {
    /// Applied to every string sent or written.
    pub redactor: Arc<Redactor>,
    /// Where to send (`None`: write the protobuf to the output).
    pub exporter: Option<ExporterConfig>,
}

/// `convert`: one trace to another format.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// The trace to convert (`-` reads standard input).
    pub input: PathBuf,
    /// More inputs (`--to parquet` only).
    pub more_inputs: Vec<PathBuf>,
    /// The target's name, as the user gave it (any of its names).
    pub to: String,
    /// Where to write (`None` or `-`: standard output).
    pub output: Option<PathBuf>,
    /// The brief variant (Trace2 targets).
    pub brief: bool,
    /// The full variant even from brief input (Trace2 targets).
    pub full: bool,
    /// The instrumented binary (XRay function ids).
    pub instr_map: Option<PathBuf>,
    pub otlp: OtlpOptions,
}
