//! Event timestamps.
//!
//! The hot path stores a raw tick count: the TSC on x86-64 when the CPU
//! says it is constant and non-stop (it is then the same in every process
//! and thread), otherwise `CLOCK_REALTIME` nanoseconds. A [`Calibration`]
//! kept in the stream header turns ticks into `CLOCK_REALTIME` time.

use std::sync::OnceLock;

/// How the raw timestamps of a stream are to be read.
pub use crate::producer::{CLOCK_REALTIME_NS, CLOCK_TSC};

/// The raw clock reader: one definition, in the `no_std` producer that
/// preload shims compile too.
pub use crate::producer::raw_now;

/// `CLOCK_REALTIME` in nanoseconds since the epoch (the producer's reader,
/// signed as the log's timestamps are).
#[inline]
pub fn realtime_ns() -> i64 {
    crate::producer::realtime_ns() as i64
}

/// Resolution of the clock we report, in ns (at least 1).
pub fn resolution_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_getres(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec * 1_000_000_000 + ts.tv_nsec).max(1)
}

/// Linear map from raw ticks to realtime ns: `ns = base_ns + (ticks -
/// base_ticks) * ns_per_tick`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    pub kind: u32,
    pub _pad: u32,
    pub base_ticks: u64,
    pub base_ns: i64,
    pub ns_per_tick: f64,
}

impl Calibration {
    pub fn to_ns(&self, ticks: u64) -> i64 {
        if self.kind != CLOCK_TSC {
            return ticks as i64;
        }
        let d = ticks.wrapping_sub(self.base_ticks) as i64;
        self.base_ns + (d as f64 * self.ns_per_tick) as i64
    }

    /// Refines the rate with a fresh (ticks, ns) sample far from the base,
    /// which is more precise than the short measurement made at start. The
    /// new map starts where the old one puts `from`, the ticks of the last
    /// event converted, so converted times go on without a jump from there
    /// (never back): an event read later has ticks at or past `from` (the
    /// reader takes events in tick order), so it gets a time at or past
    /// that event's. (Anchored at the sample instead, the new rate would
    /// also apply to the events stamped before the sample and not read
    /// yet, and move them before the last one read, by the lag times the
    /// rate's change.)
    pub fn refined(&self, from: u64) -> Calibration {
        if self.kind != CLOCK_TSC {
            return *self;
        }
        let (t, n) = sample();
        let dt = t.wrapping_sub(self.base_ticks) as f64;
        let dn = (n - self.base_ns) as f64;
        let mut c = *self;
        // Only trust a baseline of at least 100 ms.
        if dn > 1e8 && dt > 0.0 {
            c.ns_per_tick = dn / dt;
            c.base_ticks = from;
            c.base_ns = self.to_ns(from);
        }
        c
    }
}

fn sample() -> (u64, i64) {
    // Bracket the realtime read with two tick reads and keep the tightest
    // of a few tries, so a preemption in between does not skew the rate.
    let mut best = (u64::MAX, 0u64, 0i64);
    for _ in 0..8 {
        let a = raw_now(CLOCK_TSC);
        let n = realtime_ns();
        let b = raw_now(CLOCK_TSC);
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, n);
        }
    }
    (best.1, best.2)
}

fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") || std::env::var_os("TRACEKIT_POSIX_NO_TSC").is_some() {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let flags = info.lines().find(|l| l.starts_with("flags"));
    flags.is_some_and(|l| {
        let has = |w: &str| l.split_whitespace().any(|x| x == w);
        has("constant_tsc") && has("nonstop_tsc")
    })
}

/// The process-wide calibration, measured once (about 10 ms).
pub fn calibration() -> Calibration {
    static CAL: OnceLock<Calibration> = OnceLock::new();
    *CAL.get_or_init(|| {
        if !tsc_usable() {
            return Calibration {
                kind: CLOCK_REALTIME_NS,
                _pad: 0,
                base_ticks: 0,
                base_ns: 0,
                ns_per_tick: 1.0,
            };
        }
        let (t0, n0) = sample();
        std::thread::sleep(std::time::Duration::from_millis(10));
        let (t1, n1) = sample();
        let rate = (n1 - n0) as f64 / (t1.wrapping_sub(t0)).max(1) as f64;
        Calibration {
            kind: CLOCK_TSC,
            _pad: 0,
            base_ticks: t0,
            base_ns: n0,
            ns_per_tick: rate,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_ticks_track_realtime() {
        let c = calibration();
        let ns = realtime_ns();
        let converted = c.to_ns(raw_now(c.kind));
        // Within 50 ms of the real clock (calibration error over a short run).
        assert!((converted - ns).abs() < 50_000_000, "{converted} vs {ns}");
    }
}
