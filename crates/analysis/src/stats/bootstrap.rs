//! A seeded percentile bootstrap of medians, for statistics that have no
//! closed-form interval: the ratio of two cells' medians, and a step's share
//! of an attribution chain's total gap (a function of several cells at once).
//!
//! Deterministic by construction: a fixed seed, a small built-in generator
//! (SplitMix64, Steele, Lea & Flood, OOPSLA 2014; the seeding generator of
//! xoshiro), and samples sorted before resampling, so the same trials give the
//! same interval on every machine, in any line order: snapshot tests and two
//! runs of `tare report` agree to the last digit.
//!
//! Honesty about small samples: with n trials a resampled median can only be
//! one of the n values, so with 3-5 trials the percentile interval of a ratio
//! is close to (min/max .. max/min) of the samples; it is wide, as it should
//! be, but its coverage is not exact. The reports say so.

/// Resamples per bootstrap: 10,000 keeps the Monte Carlo error of a 2.5%
/// percentile near ±0.3 percentage points (Efron & Tibshirani, *An
/// Introduction to the Bootstrap*, 1993, §13.3 recommends ≥ 1,000 for
/// percentile intervals) and costs a few milliseconds per cell pair.
pub(crate) const RESAMPLES: usize = 10_000;

/// The fixed seed: any constant works; this one is the golden-ratio
/// increment SplitMix64 itself uses.
pub const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// The workspace's generator (one home, in `tare-record`): 64 bits of
/// state, passes BigCrush, and is all we need to draw indices; not
/// cryptographic.
pub use tare_record::splitmix::SplitMix64;

/// Bootstrap replicates of the medians of several groups, resampled
/// independently: `replicate(r)[g]` is group `g`'s median in resample `r`.
#[derive(Clone, Debug)]
pub(crate) struct MedianReplicates {
    groups: usize,
    medians: Vec<f64>,
}

impl MedianReplicates {
    /// `groups` must each be non-empty; returns `None` otherwise.
    pub(crate) fn new(groups: &[&[f64]], resamples: usize, seed: u64) -> Option<Self> {
        if groups.is_empty() || groups.iter().any(|g| g.is_empty()) {
            return None;
        }
        let sorted: Vec<Vec<f64>> = groups
            .iter()
            .map(|g| {
                let mut v = g.to_vec();
                v.sort_by(f64::total_cmp);
                v
            })
            .collect();
        let mut rng = SplitMix64::new(seed);
        let mut counts = Vec::new();
        let mut medians = Vec::with_capacity(resamples * groups.len());
        for _ in 0..resamples {
            for g in &sorted {
                // The group is sorted, so a resample is how often each
                // index was drawn: its median is found by counting, with
                // no sort (the same draws and the same median as sorting
                // the resampled values; most of `tare report`'s time).
                counts.clear();
                counts.resize(g.len(), 0u32);
                for _ in 0..g.len() {
                    counts[rng.below(g.len())] += 1;
                }
                medians.push(median_of_counts(g, &counts));
            }
        }
        Some(Self {
            groups: groups.len(),
            medians,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.medians.len() / self.groups
    }

    pub(crate) fn replicate(&self, r: usize) -> &[f64] {
        &self.medians[r * self.groups..(r + 1) * self.groups]
    }

    /// The percentile interval of `stat(medians)` at `confidence`, over the
    /// replicates where the statistic is finite. `None` when more than 1% of
    /// replicates give no finite value (e.g. a ratio over a median that can
    /// resample to zero): then no interval would be honest.
    pub(crate) fn interval(
        &self,
        confidence: f64,
        stat: impl Fn(&[f64]) -> f64,
    ) -> Option<(f64, f64)> {
        let mut values: Vec<f64> = (0..self.len())
            .map(|r| stat(self.replicate(r)))
            .filter(|v| v.is_finite())
            .collect();
        if values.is_empty() || values.len() * 100 < self.len() * 99 {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let tail = (1.0 - confidence) / 2.0;
        Some((percentile(&values, tail), percentile(&values, 1.0 - tail)))
    }
}

/// The median of the multiset holding `sorted[i]` `counts[i]` times
/// (`counts` sums to `sorted.len()`).
fn median_of_counts(sorted: &[f64], counts: &[u32]) -> f64 {
    let n = sorted.len();
    // 0-based ranks of the middle value(s) in the resample, sorted.
    let (lo, hi) = ((n - 1) / 2, n / 2);
    let (mut seen, mut low) = (0usize, None);
    for (value, &c) in sorted.iter().zip(counts) {
        seen += c as usize;
        if low.is_none() && seen > lo {
            low = Some(*value);
        }
        if seen > hi {
            let low = low.unwrap_or(*value);
            return if lo == hi { low } else { (low + value) / 2.0 };
        }
    }
    f64::NAN
}

/// Linear-interpolated percentile of sorted values (`q` in 0..=1), the
/// definition R calls type 7.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + frac * (next - sorted[i]),
        None => sorted[i],
    }
}

/// The ratio `median(b) / median(a)` and its bootstrap percentile interval.
pub(crate) fn ratio_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<(f64, f64)> {
    MedianReplicates::new(&[a, b], RESAMPLES, SEED)?.interval(confidence, |m| m[1] / m[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_gives_the_median_of_the_sorted_resample() {
        let mut rng = SplitMix64::new(7);
        for n in 1..=12 {
            for _ in 0..500 {
                let mut g: Vec<f64> = (0..n).map(|_| (rng.below(5) as f64) * 1.5).collect();
                g.sort_by(f64::total_cmp);
                let mut counts = vec![0u32; n];
                let mut resample = Vec::new();
                for _ in 0..n {
                    let i = rng.below(n);
                    counts[i] += 1;
                    resample.push(g[i]);
                }
                resample.sort_by(f64::total_cmp);
                let want = super::super::median_ci::median_sorted(&resample);
                assert_eq!(median_of_counts(&g, &counts).to_bits(), want.to_bits());
            }
        }
    }

    #[test]
    fn same_input_in_any_order_gives_the_same_interval() {
        let a = [100.0, 104.0, 98.0, 101.0, 99.0];
        let b = [120.0, 118.0, 125.0, 121.0, 119.0];
        let shuffled = [101.0, 99.0, 104.0, 100.0, 98.0];
        let x = ratio_interval(&a, &b, 0.95).unwrap();
        assert_eq!(x, ratio_interval(&shuffled, &b, 0.95).unwrap());
        assert!(x.0 < 1.21 && x.1 > 1.19 && x.0 > 1.1 && x.1 < 1.3, "{x:?}");
    }

    #[test]
    fn three_trials_give_nearly_the_extreme_ratios() {
        // The resampled median of 3 is the min or the max with probability
        // 7/27 each, so the 2.5% and 97.5% points are the extreme ratios.
        let (lo, hi) = ratio_interval(&[9.0, 10.0, 11.0], &[20.0, 21.0, 22.0], 0.95).unwrap();
        assert!((lo - 20.0 / 11.0).abs() < 1e-12, "{lo}");
        assert!((hi - 22.0 / 9.0).abs() < 1e-12, "{hi}");
    }

    #[test]
    fn a_statistic_that_is_mostly_undefined_has_no_interval() {
        let reps = MedianReplicates::new(&[&[0.0, 0.0, 1.0], &[1.0]], 1000, SEED).unwrap();
        assert!(reps.interval(0.95, |m| m[1] / m[0]).is_none());
        assert!(MedianReplicates::new(&[&[], &[1.0]], 10, SEED).is_none());
    }
}
