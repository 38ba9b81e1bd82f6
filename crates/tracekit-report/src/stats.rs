//! Statistics for comparisons: whether two sets of samples (a function's
//! call durations, a command's run times, before and after) differ beyond
//! their spread.
//!
//! [`mann_whitney`] is the two-sided Mann–Whitney U test (Wilcoxon rank
//! sum): it assumes nothing about the distributions' shape (durations are
//! skewed, with long tails) and asks whether a value drawn from one side
//! tends to be larger than one drawn from the other. Small samples without
//! ties get the exact distribution of U; others the normal approximation
//! with the tie correction and a continuity correction (as SciPy's
//! `mannwhitneyu(..., method="asymptotic")`).
//!
//! [`percentile`] is the nearest-rank percentile.

/// The result of [`mann_whitney`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// Samples before and after.
    pub n_before: usize,
    pub n_after: usize,
    /// U of the `after` side: the pairs (before, after) where after is the
    /// larger, ties counting one half.
    pub u_after: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (small samples, no ties) or the normal
    /// approximation's.
    pub exact: bool,
}

/// The largest `n_before × n_after` given the exact distribution.
const EXACT_PAIRS: usize = 2500;

/// The two-sided Mann–Whitney U test of `before` against `after`; `None`
/// when a side is empty or a value is not a number.
pub fn mann_whitney(before: &[f64], after: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (before.len(), after.len());
    if n1 == 0 || n2 == 0 || before.iter().chain(after).any(|x| x.is_nan()) {
        return None;
    }
    // Ranks of the pooled samples (ties get their mean rank).
    let mut all: Vec<(f64, bool)> = before
        .iter()
        .map(|&x| (x, false))
        .chain(after.iter().map(|&x| (x, true)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = all.len();
    let mut rank_after = 0.0;
    let mut ties = 0.0; // Σ (t³ − t)
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && all[j].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let mean_rank = (i + 1 + j) as f64 / 2.0;
        let in_after = all[i..j].iter().filter(|x| x.1).count() as f64;
        rank_after += mean_rank * in_after;
        ties += t * t * t - t;
        i = j;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u_after = rank_after - f2 * (f2 + 1.0) / 2.0;
    let u_before = f1 * f2 - u_after;
    if ties == 0.0 && n1 * n2 <= EXACT_PAIRS {
        let u = u_after.min(u_before).round() as usize;
        let dist = u_distribution(n1, n2);
        let total: f64 = dist.iter().sum();
        let tail: f64 = dist[..=u].iter().sum();
        return Some(MannWhitney {
            n_before: n1,
            n_after: n2,
            u_after,
            p: (2.0 * tail / total).min(1.0),
            exact: true,
        });
    }
    let mu = f1 * f2 / 2.0;
    let nf = n as f64;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    let p = if var <= 0.0 {
        1.0
    } else {
        let d = (u_after - mu).abs();
        // Continuity correction, never past the mean.
        let z = (d - 0.5).max(0.0) / var.sqrt();
        erfc(z / std::f64::consts::SQRT_2).min(1.0)
    };
    Some(MannWhitney {
        n_before: n1,
        n_after: n2,
        u_after,
        p,
        exact: false,
    })
}

/// How many arrangements of `n1` and `n2` distinct values give each U
/// (index = U), by the recurrence f(m, n, u) = f(m−1, n, u−n) + f(m, n−1, u).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // row[n] = f(m, n, ·) for the current m.
    let mut row: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for m in 1..=n1 {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        next.push(vec![1.0]); // f(m, 0, 0) = 1
        for n in 1..=n2 {
            let mut v = vec![0.0; m * n + 1];
            // f(m-1, n, u-n): shifted by n.
            for (u, c) in row[n].iter().enumerate() {
                v[u + n] += c;
            }
            // f(m, n-1, u).
            for (u, c) in next[n - 1].iter().enumerate() {
                v[u] += c;
            }
            next.push(v);
        }
        row = next;
    }
    row.swap_remove(n2)
}

/// The complementary error function, |error| < 1.2e-7 (Numerical Recipes'
/// Chebyshev fit).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The significance level the comparisons use.
pub const ALPHA: f64 = 0.05;

/// What a comparison of durations says, in words: `slower` or `faster`
/// when the test's p is below [`ALPHA`], `within spread` when it is not,
/// `too few samples` when no arrangement of this many samples could reach
/// [`ALPHA`] (e.g. 2 against 2, or a side of one), and `no samples`.
pub fn verdict(t: Option<&MannWhitney>) -> &'static str {
    let Some(t) = t else {
        return "no samples";
    };
    // The smallest two-sided p of the exact test: 2 / C(n1 + n2, n1).
    let mut arrangements = 1.0f64;
    let (k, n) = (t.n_before.min(t.n_after), t.n_before + t.n_after);
    for i in 0..k {
        arrangements = arrangements * (n - i) as f64 / (i + 1) as f64;
    }
    if 2.0 / arrangements > ALPHA {
        return "too few samples";
    }
    if t.p >= ALPHA {
        "within spread"
    } else if t.u_after > t.n_before as f64 * t.n_after as f64 / 2.0 {
        "slower"
    } else {
        "faster"
    }
}

/// The nearest-rank `q` percentile (0 < q ≤ 1) of `sorted` (ascending).
pub fn percentile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values: SciPy 1.10.1's (Debian 12 python3-scipy)
    // `scipy.stats.mannwhitneyu(before, after, alternative="two-sided",
    // method=...)`, p as printed by `repr`.

    #[test]
    fn exact_small_samples() {
        let before = [1.0, 2.0, 3.0, 4.0, 5.0];
        let after = [6.0, 7.0, 8.0, 9.0, 10.0];
        let t = mann_whitney(&before, &after).unwrap();
        assert!(t.exact);
        assert_eq!(t.u_after, 25.0);
        // method="exact": 0.007936507936507936 (2 / C(10, 5)).
        assert!((t.p - 0.007936507936507936).abs() < 1e-12, "{t:?}");
        assert_eq!(verdict(Some(&t)), "slower");
        let t = mann_whitney(&after, &before).unwrap();
        assert_eq!(verdict(Some(&t)), "faster");
        let t = mann_whitney(&[1.0, 4.0, 6.0, 9.0], &[2.0, 3.0, 7.0, 8.0]).unwrap();
        // method="exact": 1.0.
        assert_eq!(t.p, 1.0);
        assert_eq!(verdict(Some(&t)), "within spread");
        let odd = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0];
        let even = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0];
        let t = mann_whitney(&odd, &even).unwrap();
        // method="exact": 0.4452214452214452 (U of the first side 15).
        assert_eq!(t.u_after, 27.0);
        assert!((t.p - 0.4452214452214452).abs() < 1e-12, "{t:?}");
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]).unwrap();
        assert_eq!(verdict(Some(&t)), "too few samples");
    }

    #[test]
    fn normal_approximation_with_ties() {
        let before = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0];
        let after = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 7.0, 7.0];
        let t = mann_whitney(&before, &after).unwrap();
        assert!(!t.exact);
        assert_eq!(t.u_after, 56.5);
        // method="asymptotic": 0.010515245935858907.
        assert!((t.p - 0.010515245935858907).abs() < 1e-6, "{t:?}");
        assert_eq!(mann_whitney(&[1.0, 1.0], &[1.0, 1.0]).unwrap().p, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    #[test]
    fn nearest_rank() {
        let v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        assert_eq!(percentile(&v, 0.5), Some(5));
        assert_eq!(percentile(&v, 0.9), Some(9));
        assert_eq!(percentile(&v, 0.99), Some(10));
        assert_eq!(percentile::<u64>(&[], 0.5), None);
    }
}
