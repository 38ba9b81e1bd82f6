//! OTLP/HTTP with protobuf: one `POST` of an `ExportTraceServiceRequest`
//! to `/v1/traces`, `Content-Type: application/x-protobuf`, gzip-compressed
//! unless turned off, and what the answer means (the OTLP specification's
//! "OTLP/HTTP Response" and "Failures" sections): 2xx is accepted (maybe
//! partially: the response says how many spans were rejected); 429, 502,
//! 503 and 504 are retryable, honouring `Retry-After` in seconds; other
//! statuses are permanent rejections; connection failures and time-outs
//! are retryable (the collector is away).

use std::io::Write;
use std::time::Duration;

use prost::Message;

use crate::proto::ExportTraceServiceResponse;

/// Where and how to send.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The full URL requests go to (`.../v1/traces`).
    pub url: String,
    /// Extra headers (e.g. an API key), sent with every request.
    pub headers: Vec<(String, String)>,
    /// gzip request bodies (`Content-Encoding: gzip`).
    pub gzip: bool,
    /// Limit for one request, connect to answer.
    pub timeout: Duration,
}

impl HttpConfig {
    /// The URL for `endpoint`, read the way OpenTelemetry SDKs read
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: a URL without a path (or with `/`)
    /// gets `/v1/traces` appended; a URL with a path is used as given (like
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub fn url_for(endpoint: &str) -> Result<String, String> {
        let rest = endpoint
            .strip_prefix("http://")
            .or_else(|| endpoint.strip_prefix("https://"))
            .ok_or_else(|| {
                format!("{endpoint}: an OTLP/HTTP endpoint starts with http:// or https://")
            })?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(format!("{endpoint}: no host in the endpoint"));
        }
        if endpoint.starts_with("https://") && !cfg!(feature = "tls") {
            return Err(format!(
                "{endpoint}: https needs tracekit built with the `tls` feature"
            ));
        }
        Ok(match rest.find('/') {
            None => format!("{endpoint}/v1/traces"),
            Some(i) if &rest[i..] == "/" => format!("{}v1/traces", endpoint),
            Some(_) => endpoint.to_string(),
        })
    }
}

/// What became of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Accepted; the collector may have rejected some spans (partial
    /// success), with its message.
    Accepted {
        rejected_spans: i64,
        message: String,
    },
    /// Try again later (after `after` if the collector said).
    Retry {
        after: Option<Duration>,
        why: String,
    },
    /// The collector refuses this request for good (e.g. 400): sending it
    /// again would not help.
    Rejected { why: String },
}

/// A reusable HTTP client for one endpoint (keeps its connection alive).
pub struct HttpSender {
    config: HttpConfig,
    agent: ureq::Agent,
    gzip_buf: Vec<u8>,
}

impl HttpSender {
    pub fn new(config: HttpConfig) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("tracekit/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        HttpSender {
            config,
            agent,
            gzip_buf: Vec::new(),
        }
    }

    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// Sends one request body (an encoded `ExportTraceServiceRequest`);
    /// returns the outcome and the bytes put on the wire.
    pub fn send(&mut self, request: &[u8]) -> (Outcome, usize) {
        let mut req = self
            .agent
            .post(&self.config.url)
            .header("Content-Type", "application/x-protobuf");
        for (k, v) in &self.config.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let body: &[u8] = if self.config.gzip {
            self.gzip_buf.clear();
            let mut enc = flate2::write::GzEncoder::new(
                std::mem::take(&mut self.gzip_buf),
                flate2::Compression::fast(),
            );
            // Writing into a Vec cannot fail.
            let _ = enc.write_all(request);
            self.gzip_buf = enc.finish().unwrap_or_default();
            req = req.header("Content-Encoding", "gzip");
            &self.gzip_buf
        } else {
            request
        };
        let sent = body.len();
        let mut resp = match req.send(body) {
            Ok(r) => r,
            Err(e) => {
                return (
                    Outcome::Retry {
                        after: None,
                        why: format!("{}: {e}", self.config.url),
                    },
                    sent,
                )
            }
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let answer = resp
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_vec()
            .unwrap_or_default();
        let outcome = match status {
            200..=299 => match ExportTraceServiceResponse::decode(&answer[..]) {
                Ok(r) => {
                    let p = r.partial_success.unwrap_or_default();
                    Outcome::Accepted {
                        rejected_spans: p.rejected_spans,
                        message: p.error_message,
                    }
                }
                // A JSON or empty answer to a protobuf request: accepted
                // all the same.
                Err(_) => Outcome::Accepted {
                    rejected_spans: 0,
                    message: String::new(),
                },
            },
            429 | 502 | 503 | 504 => Outcome::Retry {
                after: retry_after,
                why: format!("{}: HTTP {status}", self.config.url),
            },
            _ => Outcome::Rejected {
                why: format!(
                    "{}: HTTP {status}: {}",
                    self.config.url,
                    String::from_utf8_lossy(&answer[..answer.len().min(300)]).trim()
                ),
            },
        };
        (outcome, sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_read_like_the_sdks_read_them() {
        assert_eq!(
            HttpConfig::url_for("http://localhost:4318").unwrap(),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            HttpConfig::url_for("http://localhost:4318/").unwrap(),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            HttpConfig::url_for("http://c:4318/custom/path").unwrap(),
            "http://c:4318/custom/path"
        );
        assert!(HttpConfig::url_for("localhost:4318").is_err());
        assert!(HttpConfig::url_for("http://").is_err());
    }
}
