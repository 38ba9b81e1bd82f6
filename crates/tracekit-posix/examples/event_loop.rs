//! `posix_trace_event` in a loop, for instruction counts: N events of 32 B
//! on a running LOOP stream (`filtered`: with the type filtered out).
//! `bench/posix.sh --callgrind` runs it under callgrind twice (N and
//! N + 1 M) and prints the difference per event.
//!
//! `cargo run --release -p tracekit-posix --example event_loop -- N [filtered]`

use std::hint::black_box;

use tracekit_posix::api;
use tracekit_posix::consts::*;
use tracekit_posix::{traced, EventSet, TraceAttr};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(n) = args.next().and_then(|a| a.parse::<u64>().ok()) else {
        eprintln!("usage: event_loop N [filtered]");
        std::process::exit(2);
    };
    let filtered = args.next().as_deref() == Some("filtered");
    let mut a = TraceAttr::default();
    // LOOP never stops, so every event does the full write.
    assert!(a.set_stream_policy(POSIX_TRACE_LOOP));
    let trid = api::create(0, Some(&a), None).expect("create a stream");
    let id = traced::eventid_open(b"bench").expect("open an event type");
    api::start(trid).expect("start the stream");
    if filtered {
        let mut set = EventSet::empty();
        set.add(id);
        api::set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET).expect("set the filter");
    }
    let payload = [0x5au8; 32];
    for _ in 0..n {
        traced::trace_event(black_box(id), black_box(&payload));
    }
    api::shutdown(trid).expect("shut the stream down");
}
