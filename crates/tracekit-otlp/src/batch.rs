//! Requests built by concatenation.
//!
//! `ExportTraceServiceRequest` has a single field, `repeated ResourceSpans
//! resource_spans = 1`, and protobuf merges repeated fields of
//! concatenated messages: so a request is the concatenation of encoded
//! `ResourceSpans` records, each with its field-1 tag. A [`Piece`] is such
//! a record (or several), encoded once when its spans are complete;
//! batching and spooling only append bytes.

use prost::Message;

use crate::proto::ResourceSpans;

/// Encoded `resource_spans` records ready to be sent, with what they hold.
#[derive(Debug, Default, Clone)]
pub struct Piece {
    /// Field-1 records of an `ExportTraceServiceRequest`.
    pub bytes: Vec<u8>,
    pub spans: u64,
    /// Sessions (traces) this piece completes: a session sent in several
    /// pieces counts in its last one, so the counts add up to sessions.
    pub sessions: u64,
}

impl Piece {
    /// Appends one `ResourceSpans` as a field-1 record.
    pub fn push(&mut self, rs: &ResourceSpans) {
        self.spans += rs
            .scope_spans
            .iter()
            .map(|s| s.spans.len() as u64)
            .sum::<u64>();
        prost::encoding::message::encode(1, rs, &mut self.bytes);
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Appends another piece (batching).
    pub fn append(&mut self, other: Piece) {
        if self.bytes.is_empty() {
            *self = other;
            return;
        }
        self.bytes.extend_from_slice(&other.bytes);
        self.spans += other.spans;
        self.sessions += other.sessions;
    }
}

/// The encoded size of a `ResourceSpans` record (for batch limits).
pub fn record_len(rs: &ResourceSpans) -> usize {
    let len = rs.encoded_len();
    1 + prost::encoding::encoded_len_varint(len as u64) + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{kv_str, ExportTraceServiceRequest, Resource, ScopeSpans, Span};

    fn rs(name: &str) -> ResourceSpans {
        ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv_str("service.name", name)],
                dropped_attributes_count: 0,
            }),
            scope_spans: vec![ScopeSpans {
                scope: None,
                spans: vec![Span {
                    name: name.into(),
                    ..Span::default()
                }],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }
    }

    #[test]
    fn concatenated_records_decode_as_one_request() {
        let mut a = Piece::default();
        a.push(&rs("a"));
        assert_eq!(a.bytes.len(), record_len(&rs("a")));
        let mut b = Piece::default();
        b.push(&rs("b"));
        b.sessions = 1;
        a.append(b);
        let req = ExportTraceServiceRequest::decode(&a.bytes[..]).unwrap();
        assert_eq!(req.resource_spans, vec![rs("a"), rs("b")]);
        assert_eq!((a.spans, a.sessions), (2, 1));
    }
}
