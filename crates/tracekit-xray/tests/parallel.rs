//! The parallel FDR analyses against the sequential ones (the reference
//! the golden tests pin to llvm-xray): the load order cut into every
//! number of parts, on every FDR trace of the corpus, including the ones
//! with orphan exits, mismatches, ring overwrite and decoding errors.

use std::path::{Path, PathBuf};

use tracekit_xray::account::{self, AccountOptions, Accountant};
use tracekit_xray::names::FunctionNames;
use tracekit_xray::{LogKind, Trace};

mod common;
use common::{xray_files, CORPUS};

/// The FDR traces of the corpus with their bytes.
fn fdr_traces() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    xray_files(Path::new(CORPUS), &mut files);
    // Our own inputs: fuzzer finds (a block whose NewBuffer records name
    // two threads).
    xray_files(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")),
        &mut files,
    );
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let data = std::fs::read(&f).expect("corpus file");
        if let Ok(t) = Trace::open(&data) {
            if t.header.kind == LogKind::Fdr && !t.blocks.is_empty() {
                out.push((f, data));
            }
        }
    }
    assert!(out.len() >= 15, "FDR traces in the corpus: {}", out.len());
    out
}

fn messages(w: &tracekit_core::Warnings) -> Vec<String> {
    w.kept().iter().map(|x| x.message.clone()).collect()
}

fn sequential_account(
    trace: &Trace<'_>,
    keep_going: bool,
) -> Outputs<(Vec<account::Row>, Vec<String>)> {
    let mut acc = Accountant::new(AccountOptions {
        keep_going,
        deduce_sibling_calls: false,
        recursive_calls_only: false,
    });
    let mut w = trace
        .try_for_each(|r| acc.add(r))
        .map_err(|e| e.to_string())?;
    let (rows, w2) = acc.rows(trace.header.cycle_frequency);
    w.extend(w2);
    Ok((rows, messages(&w)))
}

/// `account` rows and warnings, sequential (`None`) or on (workers,
/// parts).
fn account_outputs(
    trace: &Trace<'_>,
    keep_going: bool,
    parallel: Option<(usize, usize)>,
) -> Outputs<(Vec<account::Row>, Vec<String>)> {
    match parallel {
        None => sequential_account(trace, keep_going),
        Some((workers, parts)) => {
            account::account_fdr_parallel(trace, keep_going, workers, parts, &FunctionNames::none())
                .map(|(rows, w)| (rows, messages(&w)))
                .map_err(|e| e.to_string())
        }
    }
}

/// An analysis' outputs, or its error message.
type Outputs<T> = Result<T, String>;

/// `run` sequential (`None`) against `run` on (workers, parts), on every
/// FDR trace of the corpus cut into every number of parts up to 12, with
/// and without -k.
fn check_corpus<T: PartialEq + std::fmt::Debug>(
    run: impl Fn(&Trace<'_>, bool, Option<(usize, usize)>) -> Outputs<T>,
) {
    let mut compared = 0;
    for (path, data) in fdr_traces() {
        let trace = Trace::open(&data).unwrap();
        for keep_going in [false, true] {
            let want = run(&trace, keep_going, None);
            for parts in 1..=trace.blocks.len().min(12) {
                for workers in [1, 2, 3] {
                    let got = run(&trace, keep_going, Some((workers, parts)));
                    assert_eq!(
                        got,
                        want,
                        "{}: -k={keep_going} parts={parts} workers={workers}",
                        path.display()
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 100, "{compared} comparisons");
}

/// [`check_corpus`] on [`synthetic`] traces, cut anywhere.
fn check_tiny_buffers<T: PartialEq + std::fmt::Debug>(
    run: impl Fn(&Trace<'_>, bool, Option<(usize, usize)>) -> Outputs<T>,
) {
    for (seed, threads, noise) in [(1, 1, false), (2, 3, false), (3, 1, true), (4, 3, true)] {
        let data = synthetic(seed, threads, noise);
        let trace = Trace::open(&data).unwrap();
        assert!(trace.blocks.len() > 50, "{} blocks", trace.blocks.len());
        for keep_going in [false, true] {
            let want = run(&trace, keep_going, None);
            if !noise {
                assert!(want.is_ok(), "clean synthetic trace fails: {want:?}");
            }
            for parts in [1, 2, 3, 5, 17, trace.blocks.len()] {
                let got = run(&trace, keep_going, Some((2, parts)));
                assert_eq!(got, want, "seed {seed} -k={keep_going} parts={parts}");
            }
        }
    }
}

#[test]
fn parallel_account_equals_sequential() {
    check_corpus(account_outputs);
}

#[test]
fn parallel_account_equals_sequential_on_tiny_buffers() {
    check_tiny_buffers(account_outputs);
}

#[test]
fn parallel_stack_equals_sequential() {
    check_corpus(stack_outputs);
}

#[test]
fn parallel_stack_equals_sequential_on_tiny_buffers() {
    check_tiny_buffers(stack_outputs);
}

/// A synthetic FDR trace in tiny buffers (so the cuts fall everywhere):
/// `threads` threads of random call trees up to depth 12 with tail exits
/// and recursion, interleaved; `noise` adds orphan exits and exits that
/// do not match the innermost call.
fn synthetic(seed: u64, threads: u32, noise: bool) -> Vec<u8> {
    use tracekit_xray::record::{Record, RecordKind};
    let mut state = seed;
    let mut rand = move |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let mut per_thread: Vec<Vec<Record<'static>>> = Vec::new();
    for t in 0..threads {
        let tid = 100 + t;
        let mut tsc = 1_000_000u64 * u64::from(t + 1);
        let mut stack: Vec<i32> = Vec::new();
        let mut recs = Vec::new();
        let mut push = |kind: RecordKind, func_id: i32, tsc: u64| {
            recs.push(Record {
                record_type: 0,
                cpu: 0,
                kind,
                func_id,
                tsc,
                tid,
                pid: 7,
                args: Vec::new(),
                data: std::borrow::Cow::Borrowed(&[]),
            })
        };
        if noise {
            push(RecordKind::Exit, 3, tsc);
        }
        for _ in 0..2500 {
            tsc += 1 + rand(500);
            let r = rand(100);
            if noise && r < 2 {
                push(RecordKind::Exit, [1, 65, 129, 9][rand(4) as usize], tsc);
            } else if stack.is_empty() || (r < 52 && stack.len() < 12) {
                // Ids that share DenseMap buckets: row order then
                // depends on the order functions got their first latency.
                let f = [1, 65, 129, 2, 66, 3, 200, 7][rand(8) as usize];
                stack.push(f);
                let kind = if r % 7 == 0 {
                    RecordKind::EnterArg
                } else {
                    RecordKind::Enter
                };
                push(kind, f, tsc);
            } else if let Some(f) = stack.pop() {
                let kind = if r % 5 == 0 {
                    RecordKind::TailExit
                } else {
                    RecordKind::Exit
                };
                push(kind, f, tsc);
            }
        }
        per_thread.push(recs);
    }
    let header = tracekit_xray::FileHeader {
        version: 5,
        kind: LogKind::Fdr,
        constant_tsc: true,
        nonstop_tsc: true,
        cycle_frequency: 1_000_000,
        buffer_size: 256,
        endian: tracekit_xray::Endian::Little,
    };
    let mut w = tracekit_xray::writer::FdrWriter::new(Vec::new(), &header).unwrap();
    let mut at = vec![0usize; per_thread.len()];
    loop {
        let live: Vec<usize> = (0..per_thread.len())
            .filter(|&t| at[t] < per_thread[t].len())
            .collect();
        if live.is_empty() {
            break;
        }
        let t = live[rand(live.len() as u64) as usize];
        let n = 1 + rand(200) as usize;
        for r in per_thread[t].iter().skip(at[t]).take(n) {
            w.record(r).unwrap();
        }
        at[t] = (at[t] + n).min(per_thread[t].len());
    }
    w.finish().unwrap().0
}

/// Every `stack` output of a trie (reports, per thread, merged threads,
/// flame lines by time and count) and the warnings, as one text.
fn stack_outputs(
    trace: &Trace<'_>,
    keep_going: bool,
    parallel: Option<(usize, usize)>,
) -> Outputs<String> {
    use tracekit_xray::stack::{Aggregation, StackTrie};
    let names = tracekit_xray::names::FunctionNames::none();
    let mut trie = StackTrie::new(keep_going);
    let mut w = match parallel {
        None => trace.try_for_each(|r| trie.add(r)),
        Some((workers, parts)) => trie.add_fdr_parallel(trace, workers, parts),
    }
    .map_err(|e| e.to_string())?;
    w.extend(trie.finish_warnings());
    let mut out = Vec::new();
    for m in messages(&w) {
        out.extend_from_slice(m.as_bytes());
        out.push(b'\n');
    }
    let roots = trie.all_roots();
    trie.write_report(&mut out, &names, &roots).unwrap();
    for (tid, roots) in trie.threads() {
        trie.write_report(&mut out, &names, &roots).unwrap();
        for agg in [Aggregation::Time, Aggregation::Count] {
            trie.write_flame(&mut out, &names, &roots, Some(tid), agg)
                .unwrap();
        }
    }
    let merged = trie.merge_across_threads();
    trie.write_report(&mut out, &names, &merged).unwrap();
    trie.write_flame(&mut out, &names, &merged, None, Aggregation::Time)
        .unwrap();
    Ok(String::from_utf8(out).unwrap())
}

/// A function's calls of 1, 2^53 and 1 cycles, the long one replayed by
/// the merge (its entry and exit in different parts): adding the
/// durations as doubles would give 2^53 in load order but 2^53 + 2 in
/// the parallel order; both paths give the exact total, 2^53 + 2.
#[test]
fn parallel_account_sum_above_2_pow_53_is_order_free() {
    use tracekit_xray::record::{Record, RecordKind};
    let header = tracekit_xray::FileHeader {
        version: 5,
        kind: LogKind::Fdr,
        constant_tsc: true,
        nonstop_tsc: true,
        cycle_frequency: 0,
        buffer_size: 256,
        endian: tracekit_xray::Endian::Little,
    };
    let record = |kind: RecordKind, func_id: i32, tsc: u64| Record {
        record_type: 0,
        cpu: 0,
        kind,
        func_id,
        tsc,
        tid: 1,
        pid: 7,
        args: Vec::new(),
        data: std::borrow::Cow::Borrowed(&[]),
    };
    let long = 1u64 << 53;
    let mut records = vec![
        record(RecordKind::Enter, 5, 10),
        record(RecordKind::Exit, 5, 11),
        record(RecordKind::Enter, 5, 20),
    ];
    // Calls of another function, enough to fill several buffers.
    for i in 0..200u64 {
        records.push(record(RecordKind::Enter, 9, 30 + 2 * i));
        records.push(record(RecordKind::Exit, 9, 31 + 2 * i));
    }
    records.push(record(RecordKind::Exit, 5, 20 + long));
    records.push(record(RecordKind::Enter, 5, 30 + long));
    records.push(record(RecordKind::Exit, 5, 31 + long));
    let mut w = tracekit_xray::writer::FdrWriter::new(Vec::new(), &header).unwrap();
    for r in &records {
        w.record(r).unwrap();
    }
    let data = w.finish().unwrap().0;
    let trace = Trace::open(&data).unwrap();
    assert!(trace.blocks.len() > 3, "{} blocks", trace.blocks.len());
    let want = sequential_account(&trace, false).unwrap();
    let sum = want.0.iter().find(|r| r.func_id == 5).unwrap().sum;
    assert_eq!(sum, (long + 2) as f64);
    for parts in 1..=trace.blocks.len() {
        for workers in [1, 2] {
            let got = account::account_fdr_parallel(
                &trace,
                false,
                workers,
                parts,
                &FunctionNames::none(),
            )
            .map(|(rows, w)| (rows, messages(&w)))
            .unwrap();
            assert_eq!(got, want, "parts={parts} workers={workers}");
        }
    }
}
