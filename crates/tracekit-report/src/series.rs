//! Counting over time in one pass, with bounded memory.
//!
//! [`TimeBuckets`] keeps, per key (an event type, a process), an amount
//! per time bucket. Buckets start one tick wide at the first timestamp and
//! double in width (merging neighbours, exactly) whenever the range seen
//! would need more than the maximum, so the input's span need not be known
//! in advance and memory is at most `max_buckets` amounts per key.
//! Timestamps may come in any order.

use std::collections::HashMap;
use std::hash::Hash;

use crate::model::{Line, Series};
use crate::value::Unit;

/// Amounts per key and time bucket (see the module documentation).
#[derive(Debug, Clone)]
pub struct TimeBuckets<K> {
    max: usize,
    origin: i64,
    /// Bucket width in ticks (a power of two).
    width: u64,
    /// Bucket indices seen: `lo..hi` (relative to `origin`, at `width`).
    lo: i64,
    hi: i64,
    keys: HashMap<K, usize>,
    /// Per key: its first-seen order and amounts for buckets `lo..`.
    series: Vec<(K, Vec<u64>)>,
}

/// The buckets of a finished [`TimeBuckets`].
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets<K> {
    /// Start of the first bucket, in ticks.
    pub start: i64,
    /// Width of a bucket, in ticks.
    pub width: u64,
    /// Number of buckets.
    pub len: usize,
    /// Per key (in first-seen order): `len` amounts.
    pub series: Vec<(K, Vec<u64>)>,
}

impl<K: Hash + Eq + Clone> TimeBuckets<K> {
    /// At most `max_buckets` (at least 2) buckets.
    pub fn new(max_buckets: usize) -> TimeBuckets<K> {
        TimeBuckets {
            max: max_buckets.max(2),
            origin: 0,
            width: 1,
            lo: 0,
            hi: 0,
            keys: HashMap::new(),
            series: Vec::new(),
        }
    }

    /// Adds `amount` to `key` at time `t` (ticks).
    pub fn add(&mut self, key: &K, t: i64, amount: u64) {
        if self.hi == self.lo {
            self.origin = t;
            self.lo = 0;
            self.hi = 1;
        }
        let mut i = self.index(t);
        if i < self.lo || i >= self.hi {
            let (mut lo, mut hi) = (self.lo.min(i), self.hi.max(i + 1));
            while (hi - lo) as u128 > self.max as u128 {
                self.coarsen();
                i = self.index(t);
                lo = self.lo.min(i);
                hi = self.hi.max(i + 1);
            }
            if lo < self.lo {
                let grow = (self.lo - lo) as usize;
                for (_, v) in &mut self.series {
                    if !v.is_empty() {
                        v.splice(0..0, std::iter::repeat_n(0, grow));
                    }
                }
                self.lo = lo;
            }
            self.hi = hi;
        }
        let k = match self.keys.get(key) {
            Some(&k) => k,
            None => {
                self.keys.insert(key.clone(), self.series.len());
                self.series.push((key.clone(), Vec::new()));
                self.series.len() - 1
            }
        };
        let at = (i - self.lo) as usize;
        let v = &mut self.series[k].1;
        if v.len() <= at {
            v.resize(at + 1, 0);
        }
        v[at] = v[at].saturating_add(amount);
    }

    fn index(&self, t: i64) -> i64 {
        let d = i128::from(t) - i128::from(self.origin);
        d.div_euclid(i128::from(self.width)) as i64
    }

    /// Doubles the bucket width: bucket `i` becomes `floor(i / 2)`.
    fn coarsen(&mut self) {
        let new_lo = self.lo.div_euclid(2);
        for (_, v) in &mut self.series {
            let mut w = vec![0u64; v.len().div_ceil(2) + 1];
            for (j, &a) in v.iter().enumerate() {
                let i = self.lo + j as i64;
                let at = (i.div_euclid(2) - new_lo) as usize;
                w[at] = w[at].saturating_add(a);
            }
            while w.last() == Some(&0) {
                w.pop();
            }
            *v = w;
        }
        self.lo = new_lo;
        self.hi = (self.hi - 1).div_euclid(2) + 1;
        self.width = self.width.saturating_mul(2);
    }

    /// The buckets, every key's amounts over the whole range.
    pub fn finish(self) -> Buckets<K> {
        let len = (self.hi - self.lo) as usize;
        let series = self
            .series
            .into_iter()
            .map(|(k, mut v)| {
                v.resize(len, 0);
                (k, v)
            })
            .collect();
        Buckets {
            start: (i128::from(self.origin) + i128::from(self.lo) * i128::from(self.width))
                .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
            width: self.width,
            len,
            series,
        }
    }
}

impl<K> Buckets<K> {
    /// A [`Series`] of the `top` keys by total amount (ties: first seen
    /// first) and, if more keys were seen, a line `other` with the rest.
    /// `name` names a key; `tick` is the length of one tick in `x_unit`,
    /// and x is measured from `zero` (ticks).
    #[allow(clippy::too_many_arguments)]
    pub fn to_series(
        &self,
        top: usize,
        name: impl Fn(&K) -> String,
        x_label: &str,
        x_unit: Unit,
        tick: f64,
        zero: i64,
        y_label: &str,
        y_unit: Unit,
    ) -> Series {
        let mut order: Vec<usize> = (0..self.series.len()).collect();
        let total = |i: usize| {
            self.series[i]
                .1
                .iter()
                .map(|&a| u128::from(a))
                .sum::<u128>()
        };
        order.sort_by_key(|&i| std::cmp::Reverse(total(i)));
        let mut lines: Vec<Line> = order
            .iter()
            .take(top)
            .map(|&i| Line {
                name: name(&self.series[i].0),
                values: self.series[i].1.iter().map(|&a| a as f64).collect(),
            })
            .collect();
        let rest = &order[order.len().min(top)..];
        if !rest.is_empty() {
            let mut values = vec![0.0; self.len];
            for &i in rest {
                for (a, &b) in values.iter_mut().zip(&self.series[i].1) {
                    *a += b as f64;
                }
            }
            lines.push(Line {
                name: "other".into(),
                values,
            });
        }
        let x = (0..self.len)
            .map(|i| {
                let t =
                    i128::from(self.start) + i as i128 * i128::from(self.width) - i128::from(zero);
                t as f64 * tick
            })
            .collect();
        Series {
            x_label: x_label.into(),
            x_unit,
            x,
            bucket: Some(self.width as f64 * tick),
            y_label: y_label.into(),
            y_unit,
            stacked: true,
            lines,
            folded: rest.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a direct count at the final width: every amount lands in
    /// the bucket `floor((t - start) / width)`.
    fn check(times: &[(u8, i64)], max: usize) {
        let mut b = TimeBuckets::new(max);
        for (k, t) in times {
            b.add(k, *t, 1);
        }
        let r = b.finish();
        assert!(r.len <= max.max(2), "{} buckets > {max}", r.len);
        let mut want: HashMap<u8, Vec<u64>> = HashMap::new();
        for (k, t) in times {
            let i = (i128::from(*t) - i128::from(r.start)).div_euclid(i128::from(r.width));
            assert!(i >= 0 && (i as usize) < r.len, "t {t} outside");
            want.entry(*k).or_insert_with(|| vec![0; r.len])[i as usize] += 1;
        }
        for (k, v) in &r.series {
            assert_eq!(Some(v), want.get(k), "key {k}");
        }
        assert_eq!(r.series.len(), want.len());
    }

    #[test]
    fn buckets_are_exact_whatever_the_order() {
        check(&[(1, 100)], 10);
        check(&[(1, 0), (1, 1), (2, 9), (1, 10)], 10);
        let mut t: Vec<(u8, i64)> = (0..5000)
            .map(|i| ((i % 7) as u8, i * i % 100_003))
            .collect();
        check(&t, 200);
        t.reverse();
        check(&t, 200);
        check(&[(0, -5), (1, i64::MAX / 2), (0, 7), (2, -1_000_000)], 16);
        check(&[(3, 42), (3, 42), (3, 42)], 2);
    }

    #[test]
    fn series_keeps_the_top_keys_and_folds_the_rest() {
        let mut b = TimeBuckets::new(4);
        for (k, n) in [(1u32, 5u64), (2, 9), (3, 1), (4, 2)] {
            for t in 0..n as i64 {
                b.add(&k, t, 1);
            }
        }
        let s = b.finish().to_series(
            2,
            |k| format!("k{k}"),
            "time",
            Unit::S,
            1e-9,
            0,
            "events",
            Unit::Count,
        );
        let names: Vec<&str> = s.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["k2", "k1", "other"]);
        assert_eq!(s.folded, 2);
        let other: f64 = s.lines[2].values.iter().sum();
        assert_eq!(other, 3.0);
        assert_eq!(s.x.len(), s.lines[0].values.len());
    }
}
