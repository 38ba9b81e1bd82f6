//! Any bytes as EVENT lines into the Trace2 forwarder (what `trace2 listen
//! --otlp-endpoint` runs on every line a client sends): it must not panic,
//! and everything it sends must decode as an ExportTraceServiceRequest
//! with well-formed ids and times.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use prost::Message;
use tracekit_otlp::batch::Piece;
use tracekit_otlp::proto::ExportTraceServiceRequest;
use tracekit_otlp::sink::PieceOutput;
use tracekit_otlp::trace2::{Forwarder, ForwarderConfig};

#[derive(Default)]
struct Collect(Vec<Piece>);

impl PieceOutput for Collect {
    fn put(&mut self, piece: Piece) -> std::io::Result<()> {
        self.0.push(piece);
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let config = ForwarderConfig {
        max_buffered_spans: 64,
        ..ForwarderConfig::default()
    };
    let mut f = Forwarder::new(config, Collect::default());
    let t0 = Instant::now();
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        // Some lines come on "connections" that then close.
        let conn = (i % 3 != 0).then_some((i % 5) as u64);
        f.line(line, conn, Some(1000), t0);
        if i % 7 == 0 {
            f.connection_closed((i % 5) as u64, t0);
            f.tick(t0 + Duration::from_secs(i as u64));
        }
    }
    let (out, _) = f.finish();
    for piece in &out.0 {
        let req = ExportTraceServiceRequest::decode(&piece.bytes[..]).expect("decodes");
        for rs in &req.resource_spans {
            for ss in &rs.scope_spans {
                for s in &ss.spans {
                    assert_eq!(s.trace_id.len(), 16);
                    assert_eq!(s.span_id.len(), 8);
                    assert!(s.parent_span_id.is_empty() || s.parent_span_id.len() == 8);
                    assert!(s.end_time_unix_nano >= s.start_time_unix_nano);
                }
            }
        }
    }
});
