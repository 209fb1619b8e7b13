//! The Mann-Whitney U test (Wilcoxon rank-sum), two-sided, as benchstat uses
//! it to say whether two sets of trials differ.
//!
//! Small samples get the *exact* permutation distribution of the rank sum,
//! conditional on the observed ties (midranks), counted by dynamic
//! programming over "choose m of the N ranks with this sum"; this is exact
//! with or without ties (Hollander & Wolfe, *Nonparametric Statistical
//! Methods*, §4.1, "exact conditional test"). Beyond [`EXACT_MAX_N`]
//! observations in all, the normal approximation with tie and continuity
//! corrections is used (same source, eq. 4.6), as benchstat does past its
//! exact-table limit.

use serde::{Deserialize, Serialize};

use super::median_ci::ln_choose;

/// Largest combined sample size for the exact distribution: the table is
/// `m × N(N+1)` counts, tiny at 64, and trials per cell never come near it.
pub(crate) const EXACT_MAX_N: usize = 64;

/// The outcome of one test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample: pairs `(a, b)` with `a > b`, ties counting ½.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` is exact or the normal approximation.
    pub exact: bool,
}

/// Tests whether `a` and `b` come from distributions with different
/// locations; `None` if either sample is empty.
pub(crate) fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let ranks2 = doubled_midranks(a, b);
    let w2: u64 = ranks2[..m].iter().sum();
    let u = w2 as f64 / 2.0 - (m * (m + 1)) as f64 / 2.0;
    if m + n <= EXACT_MAX_N {
        Some(MannWhitney {
            u,
            p_value: exact_two_sided(&ranks2, m, w2),
            exact: true,
        })
    } else {
        Some(MannWhitney {
            u,
            p_value: normal_two_sided(&ranks2, m, n, u),
            exact: false,
        })
    }
}

/// The smallest two-sided p-value any outcome can give with `m` and `n`
/// untied observations: `2 / C(m+n, m)`, capped at 1. With 3 vs 3 it is 0.1,
/// so no result can ever be significant at α = 0.05.
pub(crate) fn min_p_value(m: usize, n: usize) -> f64 {
    if m == 0 || n == 0 {
        return 1.0;
    }
    (2.0 * (-ln_choose(m + n, m)).exp()).min(1.0)
}

/// Trials per side for a test at `alpha` to stay significant even when one
/// pair of trials comes out in the "wrong" order (U = 1): with n vs n,
/// `P(U <= 1) = 2 / C(2n, n)`, so the two-sided p is `4 / C(2n, n)`:
/// 0.057 at n = 4, 0.016 at n = 5; hence 5 for α = 0.05.
pub(crate) fn recommended_trials(alpha: f64) -> usize {
    (2..=64)
        .find(|&n| 4.0 * (-ln_choose(2 * n, n)).exp() <= alpha)
        .unwrap_or(64)
}

/// Midranks of `a` then `b` in the pooled sample, doubled so that ties'
/// half ranks stay integers.
fn doubled_midranks(a: &[f64], b: &[f64]) -> Vec<u64> {
    let mut pooled: Vec<(f64, usize)> = a.iter().chain(b).copied().zip(0..).collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut ranks2 = vec![0u64; pooled.len()];
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        // Ranks i+1..=j+1 share their mean (i + j + 2) / 2; doubled: i + j + 2.
        for item in &pooled[i..=j] {
            ranks2[item.1] = (i + j + 2) as u64;
        }
        i = j + 1;
    }
    ranks2
}

/// Exact two-sided p of the doubled rank sum `w2` of the first `m` ranks.
fn exact_two_sided(ranks2: &[u64], m: usize, w2: u64) -> f64 {
    let max_sum: u64 = ranks2.iter().sum();
    let width = max_sum as usize + 1;
    // ways[k * width + s]: subsets of k ranks seen so far with doubled sum s.
    // Counts reach C(64, 32) ≈ 1.8e18: f64 keeps them to 16 digits, plenty
    // for a probability.
    let mut ways = vec![0f64; (m + 1) * width];
    ways[0] = 1.0;
    for &r in ranks2 {
        let r = r as usize;
        for k in (1..=m).rev() {
            let (lower, upper) = ways.split_at_mut(k * width);
            let prev = &lower[(k - 1) * width..];
            let cur = &mut upper[..width];
            for s in (r..width).rev() {
                cur[s] += prev[s - r];
            }
        }
    }
    let dist = &ways[m * width..];
    let total: f64 = dist.iter().sum();
    let w2 = w2 as usize;
    let lower: f64 = dist[..=w2].iter().sum::<f64>() / total;
    let upper: f64 = dist[w2..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Normal approximation with tie and continuity corrections.
fn normal_two_sided(ranks2: &[u64], m: usize, n: usize, u: f64) -> f64 {
    let (mf, nf) = (m as f64, n as f64);
    let big_n = mf + nf;
    // Tie correction: Σ (t³ - t) over groups of tied values.
    let mut sorted = ranks2.to_vec();
    sorted.sort_unstable();
    let mut ties = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|&&r| r == sorted[i]).count();
        let t = j as f64;
        ties += t * t * t - t;
        i += j;
    }
    let var = mf * nf / 12.0 * ((big_n + 1.0) - ties / (big_n * (big_n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mf * nf / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_upper_tail(z)).min(1.0)
}

/// `P(Z > z)` for a standard normal, via `erfc` (W. J. Cody's rational
/// approximation as in Numerical Recipes' `erfcc`, |error| < 1.2e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[f64], b: &[f64]) -> f64 {
        mann_whitney(a, b).unwrap().p_value
    }

    #[test]
    fn three_vs_three_can_never_reach_five_percent() {
        // Complete separation is the most extreme outcome: 2 / C(6, 3) = 0.1.
        assert!((p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        assert!((min_p_value(3, 3) - 0.1).abs() < 1e-12);
        assert!((min_p_value(4, 4) - 2.0 / 70.0).abs() < 1e-12);
    }

    #[test]
    fn five_vs_five_matches_the_exact_table() {
        // Null counts of U for m = n = 5 start 1, 1, 2, 3, 5 out of C(10, 5) = 252
        // (Mann & Whitney 1947, table I).
        let a = [1.0, 2.0, 3.0, 6.0, 7.0];
        let b = [4.0, 5.0, 8.0, 9.0, 10.0];
        let r = mann_whitney(&a, &b).unwrap();
        assert_eq!(r.u, 4.0);
        // P(U <= 4) = 12 / 252 for m = n = 5.
        assert!((r.p_value - 24.0 / 252.0).abs() < 1e-12, "{r:?}");
        // U = 2: P(U <= 2) = 4 / 252.
        let a = [1.0, 2.0, 4.0, 2.5, 3.5];
        let b = [3.0, 6.0, 7.0, 8.0, 9.0];
        assert!((p(&a, &b) - 8.0 / 252.0).abs() < 1e-12);
    }

    #[test]
    fn p_is_symmetric_in_its_arguments() {
        let a = [10.0, 12.0, 11.5, 13.0];
        let b = [9.0, 9.5, 11.0, 10.5, 8.0];
        assert!((p(&a, &b) - p(&b, &a)).abs() < 1e-12);
    }

    #[test]
    fn identical_samples_are_not_different() {
        assert_eq!(p(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]), 1.0);
        assert_eq!(p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 1.0);
    }

    #[test]
    fn ties_use_the_conditional_distribution() {
        // a = {1, 2, 2}, b = {2, 3, 4}: midranks 1, 3, 3 | 3, 5, 6. The exact
        // p counts the 20 ways of choosing 3 of those midranks, by brute force.
        let ranks2 = doubled_midranks(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]);
        assert_eq!(ranks2, vec![2, 6, 6, 6, 10, 12]);
        let all = [2u64, 6, 6, 6, 10, 12];
        let (mut le, mut total) = (0, 0);
        for i in 0..6 {
            for j in i + 1..6 {
                for k in j + 1..6 {
                    total += 1;
                    if all[i] + all[j] + all[k] <= 14 {
                        le += 1;
                    }
                }
            }
        }
        let expect = 2.0 * le as f64 / total as f64;
        assert!((p(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]) - expect).abs() < 1e-12);
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) + 20.5).collect();
        let r = mann_whitney(&a, &b).unwrap();
        assert!(!r.exact);
        // U = 190 (19 + 18 + ... + 1), mean 800, sd sqrt(1600 * 81 / 12) = 103.9:
        // z = 5.87, p ≈ 4.4e-9.
        assert_eq!(r.u, 190.0);
        assert!(r.p_value > 1e-9 && r.p_value < 1e-8, "{r:?}");
        let near: Vec<f64> = a.iter().map(|x| x + 0.25).collect();
        assert!(mann_whitney(&a, &near).unwrap().p_value > 0.5);
    }

    #[test]
    fn exact_and_normal_agree_near_the_limit() {
        let a: Vec<f64> = (0..32).map(|i| f64::from(i) * 1.1).collect();
        let b: Vec<f64> = (0..32).map(|i| f64::from(i) * 1.1 + 6.05).collect();
        let exact = mann_whitney(&a, &b).unwrap();
        assert!(exact.exact);
        let approx = normal_two_sided(&doubled_midranks(&a, &b), 32, 32, exact.u);
        assert!(
            (exact.p_value - approx).abs() < 0.01,
            "{exact:?} vs {approx}"
        );
    }

    #[test]
    fn five_trials_are_recommended_at_five_percent() {
        assert_eq!(recommended_trials(0.05), 5);
        assert!(mann_whitney(&[5.0], &[]).is_none());
    }
}
