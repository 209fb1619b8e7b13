//! Fieller's interval for a ratio of two means, `θ = μa / μb`, from their
//! estimates, their (co)variances and a t quantile (Fieller, "Some problems
//! in interval estimation", JRSS B 16, 1954). It is exact when the two
//! estimates are jointly normal, correlated or not, which is why a step's
//! share of an attribution gap uses it: the step's per-round change and the
//! gap's per-round change move together with the round's drift.
//!
//! The interval is the set of `θ` where `(a - θb)² ≤ q² (vaa - 2θ vab + θ² vbb)`.
//! When the denominator is not significantly different from zero
//! (`b² ≤ q² vbb`), that set is unbounded: no finite interval is honest,
//! and `None` says so.

/// The interval of `a / b` at quantile `q`, given `vaa = Var(a)`,
/// `vbb = Var(b)`, `vab = Cov(a, b)`; `None` when it is unbounded.
pub(crate) fn fieller(a: f64, b: f64, vaa: f64, vbb: f64, vab: f64, q: f64) -> Option<(f64, f64)> {
    let q2 = q * q;
    let qa = b * b - q2 * vbb;
    let qb = a * b - q2 * vab;
    let qc = a * a - q2 * vaa;
    if qa.is_nan() || qa <= 0.0 {
        return None;
    }
    let disc = qb * qb - qa * qc;
    // With qa > 0 the discriminant is non-negative up to rounding (the point
    // estimate a/b always satisfies the inequality).
    let root = disc.max(0.0).sqrt();
    let (lo, hi) = ((qb - root) / qa, (qb + root) / qa);
    (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_noise_the_interval_is_the_ratio() {
        let (lo, hi) = fieller(3.0, 4.0, 0.0, 0.0, 0.0, 2.0).unwrap();
        assert!((lo - 0.75).abs() < 1e-12 && (hi - 0.75).abs() < 1e-12);
    }

    #[test]
    fn contains_the_estimate_and_widens_with_noise() {
        let (lo, hi) = fieller(3.0, 10.0, 0.25, 0.25, 0.1, 2.0).unwrap();
        assert!(lo < 0.3 && 0.3 < hi, "{lo} {hi}");
        let (lo2, hi2) = fieller(3.0, 10.0, 1.0, 1.0, 0.4, 2.0).unwrap();
        assert!(lo2 < lo && hi2 > hi);
    }

    #[test]
    fn a_denominator_within_noise_gives_no_interval() {
        // b = 1 with standard error 1: b is not distinguishable from 0.
        assert!(fieller(3.0, 1.0, 1.0, 1.0, 0.0, 2.0).is_none());
    }
}
