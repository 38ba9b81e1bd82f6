//! What `tracekit info` shows of an XRay log: records per kind, threads,
//! processes, time span, warnings, and the error that stopped the read.

use std::collections::{BTreeMap, BTreeSet};

use tracekit_core::{Error, Warnings};

use crate::trace::Trace;

/// A log's contents at a glance.
#[derive(Debug, Default)]
pub struct Summary {
    /// Records by llvm-xray's YAML kind name.
    pub records_by_kind: BTreeMap<&'static str, u64>,
    pub threads: usize,
    pub processes: usize,
    /// Smallest and largest timestamp (ticks), when there are records.
    pub tsc_range: Option<(u64, u64)>,
    /// The trace's warnings and the record stream's.
    pub warnings: Warnings,
    /// The error that ended the read early, if any (records before it are
    /// counted).
    pub error: Option<Error>,
}

impl Summary {
    /// Reads every record of `trace` once (load order).
    pub fn of(trace: &Trace<'_>) -> Summary {
        let mut s = Summary::default();
        let mut threads = BTreeSet::new();
        let mut processes = BTreeSet::new();
        let (mut first, mut last) = (u64::MAX, 0u64);
        let mut records = trace.records();
        for r in records.by_ref() {
            match r {
                Ok(r) => {
                    *s.records_by_kind.entry(r.kind.yaml_name()).or_default() += 1;
                    threads.insert(r.tid);
                    processes.insert(r.pid);
                    first = first.min(r.tsc);
                    last = last.max(r.tsc);
                }
                Err(e) => s.error = Some(e),
            }
        }
        s.warnings = trace.warnings.clone();
        s.warnings.extend(records.warnings());
        s.threads = threads.len();
        s.processes = processes.len();
        if s.records() > 0 {
            s.tsc_range = Some((first, last));
        }
        s
    }

    /// All records.
    pub fn records(&self) -> u64 {
        self.records_by_kind.values().sum()
    }

    /// The time from the first to the last record, in seconds.
    pub fn duration_secs(&self, cycle_frequency: u64) -> f64 {
        self.tsc_range
            .map_or(0.0, |(a, b)| ticks_to_secs(cycle_frequency, b - a))
    }
}

/// Ticks in seconds; a frequency of 0 (unknown) is taken as nanoseconds.
pub fn ticks_to_secs(cycle_frequency: u64, ticks: u64) -> f64 {
    if cycle_frequency == 0 {
        ticks as f64 / 1e9
    } else {
        ticks as f64 / cycle_frequency as f64
    }
}
