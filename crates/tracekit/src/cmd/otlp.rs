//! Command-line options shared by the commands that send OTLP
//! (`trace2 listen --otlp-endpoint`, `convert --to otlp`): where, how, the
//! spool and redaction. The work is done by `tracekit_otlp`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use tracekit_otlp::exporter::ExporterConfig;
use tracekit_otlp::http::HttpConfig;

/// Compression of OTLP request bodies.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    Gzip,
    None,
}

/// How to send OTLP and what to hide (flattened into commands).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OtlpArgs {
    /// Send OpenTelemetry traces to this OTLP/HTTP endpoint (protobuf):
    /// `http://host:4318` posts to /v1/traces, a URL with a path is used
    /// as given.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// An HTTP header sent with every request (e.g. an API key); repeat
    /// for more.
    #[arg(long, value_name = "NAME=VALUE")]
    pub otlp_header: Vec<String>,
    /// Compression of request bodies.
    #[arg(long, value_enum, default_value_t = Compression::Gzip)]
    pub otlp_compression: Compression,
    /// Seconds one request may take (connect to answer).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "10")]
    pub otlp_timeout: Duration,
    /// Seconds a request is retried (with backoff, honouring Retry-After)
    /// before it is spooled and the collector counted as away.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "30")]
    pub otlp_retry: Duration,
    /// Directory where requests wait while the collector is away, replayed
    /// oldest first when it answers again (also by the next run).
    /// Default: $XDG_STATE_HOME/tracekit/otlp-spool
    /// (~/.local/state/tracekit/otlp-spool).
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
    /// Bound of the spool in MiB; past it the oldest requests are dropped
    /// (and counted).
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub spool_max: u64,
    /// No spool: what cannot be sent after --otlp-retry is dropped (and
    /// counted).
    #[arg(long, conflicts_with = "spool")]
    pub no_spool: bool,
    /// Replace matches of a regular expression in every string sent
    /// (`REGEX=REPLACEMENT`, `$1` for groups; e.g. `/home/[^/]+=/home/<user>`);
    /// repeat for more, applied in order.
    #[arg(long, value_name = "REGEX=REPLACEMENT")]
    pub redact: Vec<String>,
    /// Keep credentials in URLs (by default `scheme://user:pass@` becomes
    /// `scheme://<REDACTED>@` in everything sent).
    #[arg(long)]
    pub keep_url_credentials: bool,
}

/// The default spool directory.
fn default_spool() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(state.join("tracekit/otlp-spool"))
}

/// A clap value parser for a number of seconds >= 0 (fractions allowed),
/// at most a year.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    const YEAR: f64 = 86_400.0 * 365.0;
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Duration::from_secs_f64(v.min(YEAR))),
        _ => Err(format!("{s:?} is not a number of seconds >= 0")),
    }
}

impl OtlpArgs {
    /// What `convert --to otlp` needs: the redaction rules and, with an
    /// endpoint, the exporter's configuration.
    pub fn options(&self) -> Result<tracekit_dialects::options::OtlpOptions> {
        Ok(tracekit_dialects::options::OtlpOptions {
            redactor: tracekit_dialects::otlp::redactor(
                &self.redact,
                &[],
                !self.keep_url_credentials,
            )?,
            exporter: self.exporter_config()?,
        })
    }

    /// The exporter's configuration, when an endpoint is given.
    pub fn exporter_config(&self) -> Result<Option<ExporterConfig>> {
        let Some(endpoint) = &self.otlp_endpoint else {
            return Ok(None);
        };
        let url = HttpConfig::url_for(endpoint).map_err(anyhow::Error::msg)?;
        let mut headers = Vec::new();
        for h in &self.otlp_header {
            let Some((k, v)) = h.split_once('=') else {
                bail!("--otlp-header {h:?}: expected NAME=VALUE");
            };
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let mut config = ExporterConfig::new(HttpConfig {
            url,
            headers,
            gzip: self.otlp_compression == Compression::Gzip,
            timeout: self.otlp_timeout,
        });
        config.retry_for = self.otlp_retry;
        config.backoff_max = config
            .backoff_max
            .min(config.retry_for.max(Duration::from_secs(1)));
        config.spool_max_bytes = self.spool_max.saturating_mul(1 << 20);
        config.spool_dir = if self.no_spool {
            None
        } else {
            match (&self.spool, default_spool()) {
                (Some(dir), _) => Some(dir.clone()),
                (None, Some(dir)) => Some(dir),
                (None, None) => bail!("no spool directory: give --spool DIR (or --no-spool)"),
            }
        };
        Ok(Some(config))
    }
}
