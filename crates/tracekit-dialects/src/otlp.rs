//! What an OTLP export says when it is over (`convert --to otlp`, `trace2
//! listen`).

use std::sync::Arc;

use anyhow::{bail, Result};
use tracekit_otlp::exporter::ExportStats;
use tracekit_otlp::redact::Redactor;

/// The redaction rules: `REGEX=REPLACEMENT` strings (the flags'), then
/// `extra` (a configuration file's); `url_credentials` hides
/// `user:pass@` in URLs.
pub fn redactor(
    rules: &[String],
    extra: &[(String, String)],
    url_credentials: bool,
) -> Result<Arc<Redactor>> {
    let mut all = Vec::new();
    for r in rules {
        let Some((pattern, replacement)) = r.split_once('=') else {
            bail!("--redact {r:?}: expected REGEX=REPLACEMENT");
        };
        all.push((pattern.to_string(), replacement.to_string()));
    }
    all.extend(extra.iter().cloned());
    let redactor = Redactor::new(url_credentials, &all).map_err(anyhow::Error::msg)?;
    Ok(Arc::new(redactor))
}

/// `N sessions sent (R replayed), S spooled, D dropped, ...`.
pub fn export_line(s: &ExportStats) -> String {
    let mut line = format!(
        "{} sessions sent ({} replayed from the spool) in {} requests ({} spans, {} bytes), \
         {} spooled, {} dropped past the spool bound, {} rejected by the collector; \
         {} sessions waiting in the spool",
        s.sessions_sent,
        s.sessions_replayed,
        s.requests_sent,
        s.spans_sent,
        s.bytes_sent,
        s.sessions_spooled,
        s.sessions_dropped,
        s.sessions_rejected,
        s.spool_pending_sessions
    );
    if s.outages > 0 {
        line.push_str(&format!(
            " ({} outage(s), {} retries)",
            s.outages, s.retries
        ));
    }
    line
}
