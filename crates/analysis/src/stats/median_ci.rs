//! The median of a sample and its distribution-free confidence interval from
//! order statistics.
//!
//! Why order statistics rather than a bootstrap: with the 3-10 trials per cell
//! an experiment can afford, a bootstrap interval of the median only takes
//! values among the samples and its coverage is unknown; the order-statistic
//! interval `[x(l), x(n+1-l)]` has an *exact* coverage for any continuous
//! distribution, `P(l <= B <= n-l)` with `B ~ Binomial(n, 1/2)` (Lehmann,
//! *Nonparametrics*, 1975, pp. 182-183; benchstat v2's default "assume
//! nothing" summary is the same interval, hence its "need >= 6 samples for
//! confidence interval at level 0.95").
//! We pick the narrowest such interval whose coverage reaches the target and,
//! when no interval can (n < 6 for 95%), the widest one (min..max) with its
//! real, lower coverage, which the reports print instead of pretending.

use serde::{Deserialize, Serialize};

/// A median and its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MedianCi {
    pub median: f64,
    /// Lower bound: the `l`-th smallest sample.
    pub lo: f64,
    /// Upper bound: the `l`-th largest sample.
    pub hi: f64,
    /// The interval's exact coverage (0..=1); below the target when the
    /// sample is too small to reach it.
    pub confidence: f64,
    /// Sample size.
    pub n: usize,
}

impl MedianCi {
    /// Half the interval's width relative to the median (benchstat's `±x%`):
    /// the spread a reader compares with the effect they hope to see.
    pub fn relative_spread(&self) -> f64 {
        if self.median == 0.0 {
            return if self.hi > self.lo {
                f64::INFINITY
            } else {
                0.0
            };
        }
        (self.hi - self.lo) / 2.0 / self.median.abs()
    }
}

/// The median of samples in any order; `NaN` for an empty slice.
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// The median of an already sorted slice; `NaN` when empty.
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The median and its order-statistic interval at `target` confidence
/// (e.g. 0.95); `None` for an empty sample.
pub(crate) fn median_ci(samples: &[f64], target: f64) -> Option<MedianCi> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    // Coverage only grows as `l` shrinks, so walking from the narrowest
    // interval outwards, the first that reaches the target is the narrowest
    // that does; l = 1 (min..max) is the widest there is.
    let mut l = n.div_ceil(2);
    while l > 1 && coverage(n, l) < target {
        l -= 1;
    }
    Some(MedianCi {
        median: median_sorted(&v),
        lo: v[l - 1],
        hi: v[n - l],
        confidence: coverage(n, l),
        n,
    })
}

/// Exact coverage of `[x(l), x(n+1-l)]` for the median:
/// `P(l <= B <= n - l)`, `B ~ Binomial(n, 1/2)`.
pub(crate) fn coverage(n: usize, l: usize) -> f64 {
    if l == 0 || l > n - l {
        // A single order statistic (or none) covers a continuous median with
        // probability zero.
        return 0.0;
    }
    if n <= 100 {
        // Exact in integers (C(100, 50) < 2^97), so 5 trials give exactly
        // 30/32 = 0.9375 and reports round it as people expect.
        let mut c: u128 = 1; // C(n, k), walked from k = 0
        let mut inside: u128 = 0;
        for k in 0..=n - l {
            if k >= l {
                inside += c;
            }
            c = c * (n - k) as u128 / (k + 1) as u128;
        }
        return inside as f64 / 2f64.powi(n as i32);
    }
    (l..=n - l).map(|k| binomial_half_pmf(n, k)).sum()
}

/// `C(n, k) / 2^n`, computed in logs so large `n` neither overflows nor
/// underflows to zero before the division.
fn binomial_half_pmf(n: usize, k: usize) -> f64 {
    (ln_choose(n, k) - n as f64 * std::f64::consts::LN_2).exp()
}

/// `ln C(n, k)` as a sum of logs: exact enough for any trial count.
pub(crate) fn ln_choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k)
        .map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln())
        .sum()
}

/// The smallest sample size whose min..max interval reaches `target`
/// (6 for 95%: 1 - 2/2^6 = 96.9%, while 5 gives 93.75%).
pub fn trials_for_confidence(target: f64) -> usize {
    (2..=64).find(|&n| coverage(n, 1) >= target).unwrap_or(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn small_samples_get_min_max_at_their_true_confidence() {
        // n = 5: 1 - 2 / 32 = 0.9375; n = 3: 1 - 2 / 8 = 0.75.
        let ci = median_ci(&[10.0, 12.0, 11.0, 9.0, 13.0], 0.95).unwrap();
        assert_eq!((ci.lo, ci.median, ci.hi), (9.0, 11.0, 13.0));
        assert!((ci.confidence - 0.9375).abs() < 1e-12, "{ci:?}");
        let ci = median_ci(&[1.0, 2.0, 3.0], 0.95).unwrap();
        assert!((ci.confidence - 0.75).abs() < 1e-12);
        let ci = median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0.95).unwrap();
        assert!((ci.confidence - 62.0 / 64.0).abs() < 1e-12);
        assert_eq!((ci.lo, ci.hi), (1.0, 6.0));
    }

    #[test]
    fn larger_samples_narrow_to_the_binomial_bounds() {
        // n = 20: the 95% interval is [x(6), x(15)], coverage 0.9586
        // (1 - 2 * P(B <= 5) for B ~ Bin(20, 0.5) = 1 - 2 * 21700 / 2^20).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = median_ci(&v, 0.95).unwrap();
        assert_eq!((ci.lo, ci.hi), (6.0, 15.0));
        assert!((ci.confidence - 0.958610).abs() < 1e-5, "{ci:?}");
    }

    #[test]
    fn single_sample_has_no_coverage() {
        let ci = median_ci(&[7.0], 0.95).unwrap();
        assert_eq!(
            (ci.lo, ci.median, ci.hi, ci.confidence),
            (7.0, 7.0, 7.0, 0.0)
        );
        assert!(median_ci(&[], 0.95).is_none());
    }

    #[test]
    fn six_trials_reach_ninety_five_percent() {
        assert_eq!(trials_for_confidence(0.95), 6);
    }

    #[test]
    fn spread_is_half_width_over_median() {
        let ci = median_ci(&[90.0, 100.0, 110.0], 0.95).unwrap();
        assert!((ci.relative_spread() - 0.10).abs() < 1e-12);
    }
}
