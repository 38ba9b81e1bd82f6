//! Where `account` keeps each function's call durations, and the
//! statistics of a row.

use rustc_hash::FxHashMap as HashMap;

/// Durations of one function: listed, as u32 while they fit (halves
/// memory on big traces), u64 after; counted once there are many.
pub(super) enum Durations {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
    Hist(Box<Histogram>),
}

/// Functions with this many durations switch to a [`Histogram`] (whose
/// table of counts then costs what the listed durations did; the long
/// durations stay listed, 8 bytes each).
const HIST_FROM: usize = 1 << 17;
/// Durations below this are counted by value, exactly.
const HIST_LEN: usize = 1 << 16;

/// The durations of a much-called function: a count per small value (the
/// common case: short calls) and the longer ones listed. Exact: order
/// statistics are read off the counts.
pub(super) struct Histogram {
    counts: Vec<u64>,
    big: Vec<u64>,
    n: u64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            counts: vec![0; HIST_LEN],
            big: Vec::new(),
            n: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, d: u64) {
        self.n += 1;
        match self.counts.get_mut(d as usize) {
            Some(c) if d < HIST_LEN as u64 => *c += 1,
            _ => self.big.push(d),
        }
    }

    /// Adds the durations of `d`.
    fn absorb(&mut self, d: Durations) {
        match d {
            Durations::Narrow(v) => v.iter().for_each(|&x| self.push(u64::from(x))),
            Durations::Wide(v) => v.iter().for_each(|&x| self.push(x)),
            Durations::Hist(h) => {
                for (a, b) in self.counts.iter_mut().zip(&h.counts) {
                    *a += b;
                }
                self.big.extend_from_slice(&h.big);
                self.n += h.n;
            }
        }
    }

    /// (min, median, 90th, 99th percentile, max, sum) as [`stats`] gives
    /// them on the listed durations.
    fn stats(&mut self) -> (f64, f64, f64, f64, f64, f64) {
        let n = self.n as usize;
        if n == 0 {
            return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        }
        let small: u64 = self.counts.iter().sum();
        let mut total: u128 = self.big.iter().map(|&x| u128::from(x)).sum();
        for (v, &c) in self.counts.iter().enumerate() {
            total += v as u128 * u128::from(c);
        }
        let first_small = self.counts.iter().position(|&c| c > 0);
        let last_small = self.counts.iter().rposition(|&c| c > 0);
        let min = match first_small {
            Some(v) => v as u64,
            None => self.big.iter().copied().min().unwrap_or(0),
        };
        let max = match self.big.iter().copied().max() {
            Some(m) => m,
            None => last_small.unwrap_or(0) as u64,
        };
        let ranks = [
            n / 2,
            ((n as f64 * 0.9).floor() as usize).min(n - 1),
            ((n as f64 * 0.99).floor() as usize).min(n - 1),
        ];
        let mut at = [0u64; 3];
        for (i, &k) in ranks.iter().enumerate() {
            let k = k as u64;
            at[i] = if k < small {
                let mut seen = 0u64;
                let mut value = 0u64;
                for (v, &c) in self.counts.iter().enumerate() {
                    seen += c;
                    if seen > k {
                        value = v as u64;
                        break;
                    }
                }
                value
            } else {
                let k = (k - small) as usize;
                if k < self.big.len() {
                    *self.big.select_nth_unstable(k).1
                } else {
                    0
                }
            };
        }
        (
            min as f64,
            at[0] as f64,
            at[1] as f64,
            at[2] as f64,
            max as f64,
            total as f64,
        )
    }
}

impl Durations {
    #[inline(always)]
    fn push(&mut self, d: u64) {
        match self {
            Durations::Narrow(v) if v.len() < HIST_FROM => match u32::try_from(d) {
                Ok(x) => v.push(x),
                Err(_) => self.push_slow(d),
            },
            Durations::Wide(v) if v.len() < HIST_FROM => v.push(d),
            Durations::Hist(h) => h.push(d),
            _ => self.push_slow(d),
        }
    }

    #[cold]
    fn push_slow(&mut self, d: u64) {
        match self {
            Durations::Narrow(v) if v.len() < HIST_FROM => {
                let mut w: Vec<u64> = v.iter().map(|&x| u64::from(x)).collect();
                w.push(d);
                *self = Durations::Wide(w);
            }
            Durations::Narrow(_) | Durations::Wide(_) => {
                let mut h = Box::new(Histogram::new());
                h.absorb(std::mem::replace(self, Durations::Narrow(Vec::new())));
                h.push(d);
                *self = Durations::Hist(h);
            }
            Durations::Hist(h) => h.push(d),
        }
    }
}
/// One output row, durations in seconds when the frequency is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub func_id: i32,
    pub count: u64,
    pub min: f64,
    pub median: f64,
    pub pct90: f64,
    pub pct99: f64,
    pub max: f64,
    pub sum: f64,
}

fn stats<T: Copy + Ord + Into<u64>>(v: &mut [T]) -> (f64, f64, f64, f64, f64, f64) {
    let n = v.len();
    if n == 0 {
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    }
    let (mut min, mut max, mut total) = (u64::MAX, 0u64, 0u128);
    for &x in v.iter() {
        let x: u64 = x.into();
        min = min.min(x);
        max = max.max(x);
        total += u128::from(x);
    }
    // The exact total, rounded once. llvm-xray adds the durations as
    // doubles in load order: the same number while the total stays below
    // 2^53 cycles (every partial sum is exact); above, its result depends
    // on the order, which the parallel path does not keep, so ours is the
    // exactly rounded sum instead (a deliberate difference, see the module
    // documentation).
    let sum = total as f64;
    // Order statistics: each later rank is selected among the elements
    // above the previous one only.
    let k_med = n / 2;
    let k90 = ((n as f64 * 0.9).floor() as usize).min(n - 1);
    let k99 = ((n as f64 * 0.99).floor() as usize).min(n - 1);
    let mut select = |from: usize, k: usize| -> u64 {
        let (_, x, _) = v[from..].select_nth_unstable(k - from);
        (*x).into()
    };
    let med = select(0, k_med);
    // (k_med <= k90 <= k99; an equal rank is the element selected.)
    let p90 = if k90 > k_med {
        select(k_med + 1, k90)
    } else {
        med
    };
    let p99 = if k99 > k90 { select(k90 + 1, k99) } else { p90 };
    (
        min as f64, med as f64, p90 as f64, p99 as f64, max as f64, sum,
    )
}
/// Durations by function id: a dense table for the small ids the runtime
/// hands out (from 1), a map for the rest.
#[derive(Default)]
pub(super) struct Store {
    dense: Vec<Option<Durations>>,
    sparse: HashMap<i32, Durations>,
}

/// Function ids below this are kept in [`Store::dense`].
const DENSE_IDS: i32 = 1 << 22;

impl Store {
    /// Adds a duration; true when `id` is new to the store.
    #[inline(always)]
    pub(super) fn push(&mut self, id: i32, d: u64) -> bool {
        if (0..DENSE_IDS).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            return match &mut self.dense[i] {
                Some(v) => {
                    v.push(d);
                    false
                }
                slot @ None => {
                    let mut v = Durations::Narrow(Vec::new());
                    v.push(d);
                    *slot = Some(v);
                    true
                }
            };
        }
        match self.sparse.get_mut(&id) {
            Some(v) => {
                v.push(d);
                false
            }
            None => {
                let mut v = Durations::Narrow(Vec::new());
                v.push(d);
                self.sparse.insert(id, v);
                true
            }
        }
    }

    pub(super) fn take(&mut self, id: i32) -> Option<Durations> {
        if (0..DENSE_IDS).contains(&id) {
            self.dense.get_mut(id as usize).and_then(Option::take)
        } else {
            self.sparse.remove(&id)
        }
    }
}

impl Durations {
    pub(super) fn len(&self) -> usize {
        match self {
            Durations::Narrow(v) => v.len(),
            Durations::Wide(v) => v.len(),
            Durations::Hist(h) => h.n as usize,
        }
    }

    /// Adds `other`'s durations.
    pub(super) fn append(&mut self, other: Durations) {
        let listed = self.len() + other.len() <= HIST_FROM;
        match (self, other) {
            (Durations::Narrow(a), Durations::Narrow(b)) if listed => a.extend_from_slice(&b),
            (Durations::Wide(a), Durations::Wide(b)) if listed => a.extend_from_slice(&b),
            (Durations::Wide(a), Durations::Narrow(b)) if listed => {
                a.extend(b.iter().map(|&x| u64::from(x)))
            }
            (Durations::Hist(h), other) => h.absorb(other),
            (this, other) => {
                let mine = std::mem::replace(this, Durations::Narrow(Vec::new()));
                *this = match (mine, other) {
                    (Durations::Narrow(a), Durations::Wide(b)) if listed => {
                        let mut w: Vec<u64> = Vec::with_capacity(a.len() + b.len());
                        w.extend(a.iter().map(|&x| u64::from(x)));
                        w.extend_from_slice(&b);
                        Durations::Wide(w)
                    }
                    (mine, Durations::Hist(mut h)) => {
                        h.absorb(mine);
                        Durations::Hist(h)
                    }
                    (mine, other) => {
                        let mut h = Box::new(Histogram::new());
                        h.absorb(mine);
                        h.absorb(other);
                        Durations::Hist(h)
                    }
                };
            }
        }
    }
}

/// The output row of one function's durations.
pub(super) fn row(func_id: i32, mut d: Durations, cycle_frequency: u64) -> Row {
    let (count, s) = match &mut d {
        Durations::Narrow(v) => (v.len(), stats(v)),
        Durations::Wide(v) => (v.len(), stats(v)),
        Durations::Hist(h) => (h.n as usize, h.stats()),
    };
    let f = if cycle_frequency != 0 {
        cycle_frequency as f64
    } else {
        1.0
    };
    Row {
        func_id,
        count: count as u64,
        min: s.0 / f,
        median: s.1 / f,
        pct90: s.2 / f,
        pct99: s.3 / f,
        max: s.4 / f,
        sum: s.5 / f,
    }
}

#[cfg(test)]
mod tests {
    use super::{stats, Durations, HIST_FROM};

    /// The histogram gives the listed durations' statistics, whatever the
    /// mix of short and long calls, and so does merging parts.
    #[test]
    fn histogram_statistics_equal_list_statistics() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 20
        };
        for (n, spread) in [
            (HIST_FROM + 5, 300u64),
            (300_000, 70_000),
            (200_000, 1 << 33),
        ] {
            let values: Vec<u64> = (0..n).map(|_| next() % spread).collect();
            let mut listed = values.clone();
            let want = stats(&mut listed);
            let mut one = Durations::Narrow(Vec::new());
            for &v in &values {
                one.push(v);
            }
            assert!(matches!(one, Durations::Hist(_)));
            let mut parts = Durations::Narrow(Vec::new());
            for chunk in values.chunks(n / 3 + 1) {
                let mut p = Durations::Narrow(Vec::new());
                for &v in chunk {
                    p.push(v);
                }
                parts.append(p);
            }
            for d in [one, parts] {
                let Durations::Hist(mut h) = d else {
                    panic!("not a histogram");
                };
                assert_eq!(h.n as usize, n);
                assert_eq!(h.stats(), want, "n={n} spread={spread}");
            }
        }
    }
}
