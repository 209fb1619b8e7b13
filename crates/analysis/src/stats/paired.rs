//! Contrasts on the log scale with t intervals: **paired** (two cells
//! measured in the same rounds: the round's drift cancels in each
//! within-round ratio) and **Welch** (two independent samples: two runs,
//! or a run whose trials were not run in rounds).
//!
//! Why logs: throughput effects are multiplicative (a proxy costs a share
//! of the requests, not a fixed number), and so is a machine's drift, so
//! `ln(b / a)` within a round is the effect plus noise, whatever the
//! round's speed. The estimate is the geometric mean of the ratios,
//! `exp(mean ln(b/a))`; the interval is Student's t on the mean log ratio,
//! exponentiated, and the p-value is the matching t test, so "significant"
//! is exactly "the 95% interval excludes no change". The coverage
//! simulation (`tests/it/coverage.rs`) measures these intervals at 3, 5 and
//! 10 rounds with drift, noise and outliers; docs/analysis.md has its
//! table.

use super::contrast::{Contrast, Method, Significance, ALPHA, CONFIDENCE};
use super::tdist::{quantile, two_sided_p};

/// Power the minimum detectable effect is quoted at (the usual 80%: Cohen,
/// *Statistical Power Analysis for the Behavioral Sciences*, 1988, §1.5).
pub(crate) const POWER: f64 = 0.80;

/// Rounds (paired) or trials per side (Welch) below which a t interval
/// does not exist (one value has no spread), and what the report
/// recommends instead: 3 gives 2 degrees of freedom, where the 95% t
/// quantile (4.30) is a third of what 2 trials need (12.7).
pub(crate) const RECOMMENDED_TRIALS: usize = 3;

/// The smallest true change (relative, e.g. 0.024 for ±2.4%) a two-sided
/// test at [`ALPHA`] finds with [`POWER`], given the standard error `se` of
/// a mean log ratio on `df` degrees of freedom:
/// `exp((t(1-α/2) + t(power)) · se) - 1` (the normal-theory formula with t
/// quantiles; Cohen 1988, §2.3).
pub fn detectable(se: f64, df: f64) -> Option<f64> {
    if !(se.is_finite() && df > 0.0) {
        return None;
    }
    let k = quantile(1.0 - ALPHA / 2.0, df) + quantile(POWER, df);
    Some((k * se).exp() - 1.0)
}

/// `b` against `a` where `pairs[i] = (a_i, b_i)` were measured in the same
/// round; `None` when no pair has two positive values.
pub(crate) fn paired_contrast(pairs: &[(f64, f64)]) -> Option<Contrast> {
    let d: Vec<f64> = pairs
        .iter()
        .filter(|(a, b)| *a > 0.0 && *b > 0.0 && a.is_finite() && b.is_finite())
        .map(|(a, b)| (b / a).ln())
        .collect();
    if d.is_empty() {
        return None;
    }
    let n = d.len();
    let mean = d.iter().sum::<f64>() / n as f64;
    let se = (n >= 2).then(|| (variance(&d) / n as f64).sqrt());
    Some(t_contrast(
        mean,
        se,
        (n - 1) as f64,
        (n, n),
        Method::PairedT,
    ))
}

/// `b` against `a`, independent samples: Welch's t on log values (unequal
/// variances, Satterthwaite's degrees of freedom); `None` when either
/// sample has no positive value.
pub(crate) fn welch_contrast(a: &[f64], b: &[f64]) -> Option<Contrast> {
    let logs = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect()
    };
    let (la, lb) = (logs(a), logs(b));
    if la.is_empty() || lb.is_empty() {
        return None;
    }
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let diff = mean(&lb) - mean(&la);
    let (se, df) = if la.len() >= 2 && lb.len() >= 2 {
        let (va, vb) = (variance(&la) / na, variance(&lb) / nb);
        let se2 = va + vb;
        // Welch-Satterthwaite; with both variances zero any df will do.
        let df = if se2 > 0.0 {
            se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0))
        } else {
            na + nb - 2.0
        };
        (Some(se2.sqrt()), df)
    } else {
        (None, 0.0)
    };
    Some(t_contrast(
        diff,
        se,
        df,
        (la.len(), lb.len()),
        Method::WelchT,
    ))
}

/// The contrast of a mean log ratio `mean` with standard error `se` (`None`:
/// too few values for one) on `df` degrees of freedom.
fn t_contrast(mean: f64, se: Option<f64>, df: f64, n: (usize, usize), method: Method) -> Contrast {
    let ratio = mean.exp();
    let Some(se) = se.filter(|s| s.is_finite()) else {
        return Contrast {
            ratio,
            ratio_ci: None,
            test: None,
            significance: Significance::TooFewTrials {
                min_p: 1.0,
                recommended: RECOMMENDED_TRIALS,
            },
            n,
            method,
            p: None,
            detectable: None,
        };
    };
    let q = quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, df);
    let p = if se > 0.0 {
        two_sided_p(mean / se, df)
    } else if mean == 0.0 {
        1.0
    } else {
        0.0
    };
    Contrast {
        ratio,
        ratio_ci: Some(((mean - q * se).exp(), (mean + q * se).exp())),
        test: None,
        significance: if p <= ALPHA {
            Significance::Significant
        } else {
            Significance::NotSignificant
        },
        n,
        method,
        p: Some(p),
        detectable: detectable(se, df),
    }
}

/// The unbiased sample variance (n - 1 in the denominator); 0 for n < 2.
pub(crate) fn variance(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_shared_by_a_round_cancels() {
        // b is 10% above a in every round while the rounds drift ±15%: the
        // paired interval is tight; the unpaired one cannot see it.
        let drift = [1.0, 1.15, 0.85, 1.1, 0.9];
        let pairs: Vec<(f64, f64)> = drift
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let wobble = 1.0 + 0.002 * (i as f64 - 2.0);
                (100.0 * d, 110.0 * d * wobble)
            })
            .collect();
        let c = paired_contrast(&pairs).unwrap();
        assert!(c.is_significant(), "{c:?}");
        let (lo, hi) = c.ratio_ci.unwrap();
        assert!(lo > 1.09 && hi < 1.11, "{lo} {hi}");
        assert!(c.detectable.unwrap() < 0.02, "{c:?}");
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let w = welch_contrast(&a, &b).unwrap();
        assert_eq!(w.significance, Significance::NotSignificant, "{w:?}");
    }

    #[test]
    fn significance_matches_the_interval() {
        let pairs = [(100.0, 103.0), (100.0, 99.0), (100.0, 104.0)];
        let c = paired_contrast(&pairs).unwrap();
        let (lo, hi) = c.ratio_ci.unwrap();
        assert_eq!(c.is_significant(), lo > 1.0 || hi < 1.0, "{c:?}");
        assert_eq!(c.method, Method::PairedT);
    }

    #[test]
    fn one_pair_is_too_few() {
        let c = paired_contrast(&[(100.0, 120.0)]).unwrap();
        assert!((c.ratio - 1.2).abs() < 1e-12);
        assert!(c.ratio_ci.is_none());
        assert!(matches!(
            c.significance,
            Significance::TooFewTrials { recommended: 3, .. }
        ));
        assert!(paired_contrast(&[(0.0, 1.0)]).is_none());
        assert!(welch_contrast(&[1.0], &[]).is_none());
    }

    #[test]
    fn welch_on_two_clear_samples() {
        let a = [100.0, 101.0, 99.0, 102.0, 98.0];
        let b = [120.0, 121.0, 119.0, 122.0, 118.0];
        let c = welch_contrast(&a, &b).unwrap();
        assert!(c.is_significant());
        assert!((c.ratio - 1.2).abs() < 0.001, "{c:?}");
        let (lo, hi) = c.ratio_ci.unwrap();
        assert!(lo > 1.17 && hi < 1.23 && lo < c.ratio && c.ratio < hi);
    }
}
