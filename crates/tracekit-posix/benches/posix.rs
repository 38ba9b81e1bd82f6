//! posix_trace_event cost (32-byte payload, running stream; filtered-out
//! type; two threads at once) and log reading speed with getnext_event.
//!
//! `cargo bench -p tracekit-posix --bench posix`
//!
//! "(cpu)" variants measure the thread's CPU time instead of wall time, so
//! the figures stay meaningful on a machine shared with other jobs.

use std::hint::black_box;
use std::os::fd::AsRawFd;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tracekit_posix::api::{self, Wait};
use tracekit_posix::consts::*;
use tracekit_posix::{traced, EventSet, TraceAttr};

/// CPU time of the calling thread: on a shared 2-core machine, wall time
/// mostly measures the other jobs; CPU time is what one event costs.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `f` `iters` times and returns the thread CPU time it took.
fn cpu_iter(iters: u64, mut f: impl FnMut()) -> Duration {
    let t = thread_cpu();
    for _ in 0..iters {
        f();
    }
    thread_cpu() - t
}

fn running_stream() -> (u64, u32) {
    let mut a = TraceAttr::default();
    a.stream_size = std::env::var("BENCH_STREAM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(tracekit_posix::attr::DEFAULT_STREAM_SIZE);
    // LOOP never stops, so every iteration does the full write.
    assert!(a.set_stream_policy(POSIX_TRACE_LOOP));
    let trid = api::create(0, Some(&a), None).unwrap();
    let id = traced::eventid_open(b"bench").unwrap();
    api::start(trid).unwrap();
    (trid, id)
}

fn event(c: &mut Criterion) {
    let (trid, id) = running_stream();
    let payload = [0x5au8; 32];
    let mut g = c.benchmark_group("posix_trace_event");
    let cal = tracekit_posix::clock::calibration();
    g.bench_function("clock read (cpu)", |b| {
        b.iter_custom(|n| {
            cpu_iter(n, || {
                black_box(tracekit_posix::clock::raw_now(black_box(cal.kind)));
            })
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("32B running", |b| {
        b.iter(|| traced::trace_event(black_box(id), black_box(&payload)))
    });
    g.bench_function("32B running (cpu)", |b| {
        b.iter_custom(|n| {
            cpu_iter(n, || {
                traced::trace_event(black_box(id), black_box(&payload))
            })
        })
    });
    let mut set = EventSet::empty();
    set.add(id);
    api::set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET).unwrap();
    g.bench_function("32B filtered out", |b| {
        b.iter(|| traced::trace_event(black_box(id), black_box(&payload)))
    });
    g.bench_function("32B filtered out (cpu)", |b| {
        b.iter_custom(|n| {
            cpu_iter(n, || {
                traced::trace_event(black_box(id), black_box(&payload))
            })
        })
    });
    api::set_filter(trid, &EventSet::empty(), POSIX_TRACE_SET_EVENTSET).unwrap();
    // Two writer threads at once: time per event per thread.
    g.bench_function("32B two threads at once (cpu, per event per thread)", |b| {
        b.iter_custom(|iters| {
            let go = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                let h: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            go.wait();
                            cpu_iter(iters, || {
                                traced::trace_event(black_box(id), black_box(&payload))
                            })
                        })
                    })
                    .collect();
                h.into_iter()
                    .map(|h| h.join().unwrap())
                    .max()
                    .unwrap_or_default()
            })
        })
    });
    g.finish();
    api::shutdown(trid).unwrap();
}

const LOG_EVENTS: u64 = 2_000_000;

fn log_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.trace");
    {
        let f = std::fs::File::create(&path).unwrap();
        let mut a = TraceAttr::default();
        a.stream_size = 256 << 20;
        assert!(a.set_stream_policy(POSIX_TRACE_UNTIL_FULL));
        assert!(a.set_log_policy(POSIX_TRACE_APPEND));
        let trid = api::create(0, Some(&a), Some(f.as_raw_fd())).unwrap();
        let id = traced::eventid_open(b"logbench").unwrap();
        api::start(trid).unwrap();
        let payload = [7u8; 32];
        for _ in 0..LOG_EVENTS {
            traced::trace_event(id, &payload);
        }
        api::shutdown(trid).unwrap();
    }
    let f = std::fs::File::open(&path).unwrap();
    let trid = api::open(f.as_raw_fd()).unwrap();
    let mut g = c.benchmark_group("log read");
    g.throughput(Throughput::Elements(LOG_EVENTS));
    g.measurement_time(Duration::from_secs(8));
    g.sample_size(10);
    g.bench_function("getnext_event, 2M events of 32 B (cpu)", |b| {
        let mut buf = [0u8; 64];
        b.iter_custom(|iters| {
            cpu_iter(iters, || {
                api::rewind(trid).unwrap();
                let mut n = 0u64;
                while let Some(e) = api::getnext_event(trid, &mut buf, Wait::Forever).unwrap() {
                    n += e.data_len as u64;
                }
                black_box(n);
            })
        })
    });
    g.bench_function("LogReader::next_event zero-copy, 2M events (cpu)", |b| {
        b.iter_custom(|iters| {
            cpu_iter(iters, || {
                let mut r = tracekit_posix::LogReader::open_path(&path).unwrap();
                let mut n = 0u64;
                while let Some(e) = r.next_event() {
                    n += e.unwrap().data.len() as u64;
                }
                black_box(n);
            })
        })
    });
    g.finish();
    api::close(trid).unwrap();
}

criterion_group!(benches, event, log_read);
criterion_main!(benches);
