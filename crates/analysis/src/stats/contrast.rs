//! A contrast of two samples (two cells, or one cell in two runs): a ratio,
//! its interval, a p-value and the significance call benchstat makes,
//! including "cannot tell". [`contrast`] here is the rank-based one (ratio
//! of medians, bootstrap interval, Mann-Whitney); the paired and Welch t
//! contrasts tare reports with are in [`super::paired`], and every contrast
//! says its [`Method`].

use serde::{Deserialize, Serialize};

use super::bootstrap::ratio_interval;
use super::mannwhitney::{mann_whitney, min_p_value, recommended_trials, MannWhitney};
use super::median_ci::median;

/// Significance level: benchstat's default (`-alpha 0.05`).
pub const ALPHA: f64 = 0.05;
/// Confidence of every interval tare prints.
pub const CONFIDENCE: f64 = 0.95;

/// What the test can say about a difference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Significance {
    /// p <= α: the two samples differ.
    Significant,
    /// p > α: no evidence of a difference (benchstat prints `~`).
    NotSignificant,
    /// Too few trials for any outcome to reach α (3 vs 3: smallest p is
    /// 0.1); `recommended` trials per side would do.
    TooFewTrials { min_p: f64, recommended: usize },
}

/// How a [`Contrast`] was computed (docs/analysis.md, "Statistics").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Within-round ratios of two cells of one run, paired on the round:
    /// geometric mean ratio, t interval on the mean log ratio, paired t test.
    PairedT,
    /// Two independent samples (two runs; trials not run in rounds): ratio
    /// of geometric means, Welch's t interval on logs, Welch's t test.
    WelchT,
    /// Ratio of medians, bootstrap interval, Mann-Whitney U (what reports
    /// before paired analysis printed; [`contrast`] still computes it).
    #[default]
    MannWhitneyBootstrap,
}

/// `b` relative to `a`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Contrast {
    /// `b / a`: the geometric mean of within-round ratios (paired), the
    /// ratio of geometric means (Welch), or of medians (Mann-Whitney).
    pub ratio: f64,
    /// The ratio's interval at [`CONFIDENCE`]; `None` when there are too
    /// few trials for one (or, for a bootstrap, a median can resample to 0).
    pub ratio_ci: Option<(f64, f64)>,
    /// The Mann-Whitney test, for [`Method::MannWhitneyBootstrap`] only.
    pub test: Option<MannWhitney>,
    pub significance: Significance,
    /// Sizes of `a` and `b` (for a paired contrast, both are the rounds
    /// where both cells succeeded).
    pub n: (usize, usize),
    #[serde(default)]
    pub method: Method,
    /// The two-sided p-value behind `significance`.
    #[serde(default)]
    pub p: Option<f64>,
    /// The smallest relative change this comparison could have detected
    /// (two-sided α = 0.05, 80% power; `super::paired::detectable`):
    /// 0.024 means a true ±2.4% would be found 4 times in 5.
    #[serde(default)]
    pub detectable: Option<f64>,
}

impl Contrast {
    /// The relative change `ratio - 1` (e.g. +0.12 for 12% more).
    pub fn change(&self) -> f64 {
        self.ratio - 1.0
    }

    pub fn change_ci(&self) -> Option<(f64, f64)> {
        self.ratio_ci.map(|(lo, hi)| (lo - 1.0, hi - 1.0))
    }

    pub fn p_value(&self) -> Option<f64> {
        self.p.or(self.test.map(|t| t.p_value))
    }

    /// Half the interval's width relative to the ratio (0.031 for ±3.1%);
    /// `None` without an interval.
    pub(crate) fn relative_half_width(&self) -> Option<f64> {
        let (lo, hi) = self.ratio_ci?;
        (self.ratio > 0.0).then(|| (hi - lo) / 2.0 / self.ratio)
    }

    pub fn is_significant(&self) -> bool {
        self.significance == Significance::Significant
    }
}

/// Compares sample `b` with sample `a`; `None` if either is empty.
pub fn contrast(a: &[f64], b: &[f64]) -> Option<Contrast> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let ratio = median(b) / median(a);
    let test = mann_whitney(a, b);
    let min_p = min_p_value(a.len(), b.len());
    let significance = match test {
        _ if min_p > ALPHA => Significance::TooFewTrials {
            min_p,
            recommended: recommended_trials(ALPHA),
        },
        Some(t) if t.p_value <= ALPHA => Significance::Significant,
        _ => Significance::NotSignificant,
    };
    Some(Contrast {
        ratio,
        ratio_ci: ratio_interval(a, b, CONFIDENCE),
        test,
        significance,
        n: (a.len(), b.len()),
        method: Method::MannWhitneyBootstrap,
        p: test.map(|t| t.p_value),
        detectable: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_difference_with_five_trials_is_significant() {
        let a = [100.0, 101.0, 99.0, 102.0, 98.0];
        let b = [120.0, 121.0, 119.0, 122.0, 118.0];
        let c = contrast(&a, &b).unwrap();
        assert!(c.is_significant(), "{c:?}");
        assert!((c.change() - 0.2).abs() < 1e-12);
        let (lo, hi) = c.change_ci().unwrap();
        assert!(lo > 0.15 && hi < 0.25 && lo < 0.2 && hi > 0.2, "{lo} {hi}");
    }

    #[test]
    fn three_vs_three_is_too_few_even_when_separated() {
        let c = contrast(&[1.0, 2.0, 3.0], &[10.0, 11.0, 12.0]).unwrap();
        match c.significance {
            Significance::TooFewTrials { min_p, recommended } => {
                assert!((min_p - 0.1).abs() < 1e-12);
                assert_eq!(recommended, 5);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn overlapping_samples_are_not_significant() {
        let a = [100.0, 110.0, 95.0, 105.0, 90.0];
        let b = [102.0, 108.0, 97.0, 111.0, 93.0];
        let c = contrast(&a, &b).unwrap();
        assert_eq!(c.significance, Significance::NotSignificant);
        assert!(c.p_value().unwrap() > 0.5);
    }

    #[test]
    fn empty_samples_have_no_contrast() {
        assert!(contrast(&[], &[1.0]).is_none());
    }
}
