//! The JSON renderer: one structure for every dialect
//! (`docs/report-json.md`).

use std::io::{self, Write};

use serde::Serialize;

use crate::model::{Document, Report};
use crate::SCHEMA;

#[derive(Serialize)]
struct DocumentOut<'a> {
    schema: &'static str,
    generator: String,
    reports: &'a [Report],
}

/// What writes the documents: `tracekit VERSION`.
pub fn generator() -> String {
    format!("tracekit {}", env!("CARGO_PKG_VERSION"))
}

/// Writes `reports` as one document (pretty-printed, with a final
/// newline).
pub fn write<W: Write + ?Sized>(out: &mut W, reports: &[Report]) -> io::Result<()> {
    let doc = DocumentOut {
        schema: SCHEMA,
        generator: generator(),
        reports,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// Reads a document back. Refuses another schema's major version (a
/// document of `tracekit.report/2` may mean other things by the same
/// fields).
pub fn parse(bytes: &[u8]) -> Result<Document, String> {
    let doc: Document = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if doc.schema != SCHEMA {
        return Err(format!(
            "schema {:?}: this tracekit reads {SCHEMA:?}",
            doc.schema
        ));
    }
    Ok(doc)
}
