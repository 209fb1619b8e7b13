//! Additive differences with t intervals: `b - a` in the values' own unit
//! (µs of CPU per request), where a ratio would not do because either side
//! may be zero (a kernel subsystem no request of `a` touched).
//!
//! The same two designs as [`super::paired`]: **paired** on the round
//! (the mean of the within-round differences, Student's t on it: a
//! round's drift, shared by both cells, cancels) and **Welch** (two
//! independent samples, Satterthwaite's degrees of freedom). Used for the
//! differential profile of each attribution step (docs/profiles.md).

use serde::{Deserialize, Serialize};

use super::contrast::{Method, CONFIDENCE};
use super::paired::variance;
use super::tdist::quantile;

/// `b - a`: its estimate and 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The mean difference (paired), or the difference of the means.
    pub mean: f64,
    /// The [`CONFIDENCE`] t interval; `None` with too few values for a
    /// spread (one round, or one trial on a side).
    pub ci: Option<(f64, f64)>,
    /// `PairedT` or `WelchT`.
    pub method: Method,
}

impl Difference {
    /// Whether the interval excludes no change.
    pub fn is_significant(&self) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

fn t_interval(mean: f64, se: f64, df: f64) -> Option<(f64, f64)> {
    if !(se.is_finite() && df > 0.0) {
        return None;
    }
    let q = quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, df);
    Some((mean - q * se, mean + q * se))
}

/// `b - a` where `pairs[i] = (a_i, b_i)` were measured in the same round;
/// `None` when no pair is finite.
pub fn paired_difference(pairs: &[(f64, f64)]) -> Option<Difference> {
    let d: Vec<f64> = pairs
        .iter()
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .map(|(a, b)| b - a)
        .collect();
    if d.is_empty() {
        return None;
    }
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let ci = (d.len() >= 2)
        .then(|| t_interval(mean, (variance(&d) / n).sqrt(), n - 1.0))
        .flatten();
    Some(Difference {
        mean,
        ci,
        method: Method::PairedT,
    })
}

/// `mean(b) - mean(a)`, independent samples: Welch's t interval; `None`
/// when either side has no finite value.
pub fn welch_difference(a: &[f64], b: &[f64]) -> Option<Difference> {
    let finite = |v: &[f64]| -> Vec<f64> { v.iter().copied().filter(|x| x.is_finite()).collect() };
    let (a, b) = (finite(a), finite(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let mean = b.iter().sum::<f64>() / nb - a.iter().sum::<f64>() / na;
    let ci = if a.len() >= 2 && b.len() >= 2 {
        let (va, vb) = (variance(&a) / na, variance(&b) / nb);
        let se2 = va + vb;
        // Welch-Satterthwaite; with both variances zero any df will do.
        let df = if se2 > 0.0 {
            se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0))
        } else {
            na + nb - 2.0
        };
        t_interval(mean, se2.sqrt(), df)
    } else {
        None
    };
    Some(Difference {
        mean,
        ci,
        method: Method::WelchT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_shared_by_the_rounds_cancels_when_paired() {
        // b is 1.0 above a in every round while the rounds drift by ±3: the
        // paired interval holds 1.0 tightly; the unpaired one spans zero.
        let drift = [0.0, 3.0, -3.0, 2.0, -2.0];
        let pairs: Vec<(f64, f64)> = drift
            .iter()
            .enumerate()
            .map(|(i, d)| (10.0 + d, 11.0 + d + 0.01 * (i as f64 - 2.0)))
            .collect();
        let p = paired_difference(&pairs).unwrap();
        let (lo, hi) = p.ci.unwrap();
        assert!((p.mean - 1.0).abs() < 1e-9 && lo > 0.9 && hi < 1.1, "{p:?}");
        assert!(p.is_significant());
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let w = welch_difference(&a, &b).unwrap();
        assert!((w.mean - 1.0).abs() < 1e-9);
        assert!(!w.is_significant(), "{w:?}");
        assert_eq!(w.method, Method::WelchT);
    }

    #[test]
    fn zeros_are_values_and_one_round_has_no_interval() {
        // A subsystem absent from a (0 µs) is a difference, not a missing ratio.
        let p = paired_difference(&[(0.0, 0.9), (0.0, 1.1), (0.0, 1.0)]).unwrap();
        assert!((p.mean - 1.0).abs() < 1e-12);
        let (lo, hi) = p.ci.unwrap();
        // t(0.975, 2) = 4.303, sd 0.1, se 0.0577: ±0.248.
        assert!(
            (lo - 0.7516).abs() < 1e-3 && (hi - 1.2484).abs() < 1e-3,
            "{lo} {hi}"
        );
        let one = paired_difference(&[(1.0, 2.0)]).unwrap();
        assert_eq!((one.mean, one.ci), (1.0, None));
        assert!(paired_difference(&[(f64::NAN, 1.0)]).is_none());
        assert!(welch_difference(&[], &[1.0]).is_none());
        assert_eq!(welch_difference(&[1.0], &[2.0, 3.0]).unwrap().ci, None);
    }
}
