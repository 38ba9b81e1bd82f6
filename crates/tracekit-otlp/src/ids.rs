//! Trace and span ids, derived, never random, so that the same input gives
//! the same ids on every run (reproducible tests, re-sent spools) and
//! processes sent from independent connections join one trace.
//!
//! * Git Trace2 (as trace2receiver derives them, `trace2sids.go`): a
//!   session's trace id is the first 16 bytes of SHA-256 of the SID's
//!   first component (the top-level command); a process's span id is bytes
//!   16..24 of SHA-256 of its own (last) SID component, its parent span id
//!   the same of the component before it.
//! * Spans inside a process or a trace (threads, regions, children,
//!   slices) have no name in the input: their id is bytes 0..8 of SHA-256
//!   over the owner's id and the span's ordinal in the owner, so it
//!   depends only on the input.
//! * A trace of another dialect: SHA-256 over the dialect, host, source
//!   name and the first timestamp of the input ([`input_trace_id`]).

use sha2::{Digest, Sha256};

pub type TraceId = [u8; 16];
pub type SpanId = [u8; 8];

fn sha(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The trace id of a Trace2 session: SHA-256 of the SID's first component.
pub fn trace2_trace_id(sid: &[u8]) -> TraceId {
    let first = match memchr::memchr(b'/', sid) {
        Some(i) => &sid[..i],
        None => sid,
    };
    let h = sha(&[first]);
    let mut id = [0u8; 16];
    id.copy_from_slice(&h[..16]);
    id
}

/// The span id trace2receiver gives the process of one SID component.
pub fn trace2_component_span_id(component: &[u8]) -> SpanId {
    let h = sha(&[component]);
    let mut id = [0u8; 8];
    id.copy_from_slice(&h[16..24]);
    id
}

/// A process's span id and its parent's (none for a top-level command).
pub fn trace2_process_ids(sid: &[u8]) -> (SpanId, Option<SpanId>) {
    let mut parts = sid.rsplitn(3, |&b| b == b'/');
    let own = parts.next().unwrap_or(sid);
    let parent = parts.next().map(trace2_component_span_id);
    (trace2_component_span_id(own), parent)
}

/// The id of the `ordinal`-th span owned by `owner` (a process span, a
/// trace). Never zero (an all-zero span id is invalid in OTLP).
pub fn child_span_id(owner: &[u8], ordinal: u64) -> SpanId {
    let h = sha(&[owner, b"/", &ordinal.to_le_bytes()]);
    let mut id = [0u8; 8];
    id.copy_from_slice(&h[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

/// The trace id of one input of a dialect without sessions: what names the
/// input (dialect, host, source) and its first timestamp, so two runs of
/// the same program written to the same path still differ.
pub fn input_trace_id(dialect: &str, host: &[u8], source: &str, first_ns: i64) -> TraceId {
    let h = sha(&[
        dialect.as_bytes(),
        b"\0",
        host,
        b"\0",
        source.as_bytes(),
        b"\0",
        &first_ns.to_le_bytes(),
    ]);
    let mut id = [0u8; 16];
    id.copy_from_slice(&h[..16]);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn trace2_ids_follow_the_sid_components() {
        let root = b"20240101T000000.000000Z-H0123abcd-P00001234";
        let child = b"20240101T000000.000000Z-H0123abcd-P00001234/20240101T000000.100000Z-H0123abcd-P00001240";
        assert_eq!(trace2_trace_id(root), trace2_trace_id(child));
        let (root_span, root_parent) = trace2_process_ids(root);
        assert_eq!(root_parent, None);
        let (child_span, child_parent) = trace2_process_ids(child);
        assert_eq!(child_parent, Some(root_span));
        assert_ne!(child_span, root_span);
        // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad
        assert_eq!(
            hex(&trace2_trace_id(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223"
        );
        assert_eq!(hex(&trace2_component_span_id(b"abc")), "b00361a396177a9c");
        // A grandchild's parent is its parent's own component.
        let (_, p) = trace2_process_ids(b"a/b/c");
        assert_eq!(p, Some(trace2_component_span_id(b"b")));
    }
}
