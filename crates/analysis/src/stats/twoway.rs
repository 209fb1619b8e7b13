//! Cell levels with the machine's drift removed: the additive two-way model
//! `ln y = θ_cell + β_round + ε` on log throughput (or log p99), fitted by
//! least squares on whatever trials exist (unbalanced designs allowed:
//! failed trials, extra rounds), with the round effects constrained to
//! average zero over the run's rounds (Scheffé, *The Analysis of Variance*,
//! 1959, ch. 4: the additive two-way layout, any cell counts).
//!
//! A cell's **level** is `exp(θ_cell)`: what the cell scores in a round of
//! average speed *for this run*. Its interval, `exp(θ̂ ± t·se)` with the
//! residual variance on `N - cells - rounds + 1` degrees of freedom, covers
//! the cell's true level times the run's realised (geometric) mean drift:
//! it says how well this run pins the cell down on this machine as it ran,
//! not how a re-run on another day would come out (that is `tare compare`'s
//! question, answered by Welch intervals that carry the drift).

use serde::{Deserialize, Serialize};

use super::contrast::CONFIDENCE;
use super::tdist::quantile;

/// An estimate with its interval (a cell level, drift removed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
    /// The interval's confidence (the t interval's nominal level).
    pub confidence: f64,
    /// The cell's trials in the fit.
    pub n: usize,
    /// Residual degrees of freedom of the fit.
    pub df: usize,
}

impl Level {
    /// Half the interval's width relative to the estimate.
    pub fn relative_spread(&self) -> f64 {
        if self.estimate == 0.0 {
            return f64::INFINITY;
        }
        (self.hi - self.lo) / 2.0 / self.estimate.abs()
    }
}

/// The fitted model.
#[derive(Clone, Debug, PartialEq)]
pub struct TwoWay {
    /// Per cell (in the caller's indices), its level; `None` for a cell
    /// with no observation.
    pub levels: Vec<Option<Level>>,
    /// Per round (the caller's round keys, sorted), `exp(β_round)`: 1.08
    /// means that round ran 8% faster than the run's average.
    pub rounds: Vec<(u32, f64)>,
    /// Residual standard deviation on the log scale.
    pub sigma: f64,
    pub df: usize,
}

impl TwoWay {
    /// Fits `obs = (cell index, round, value)` (values must be positive;
    /// others are ignored). `None` when the model leaves no residual degree
    /// of freedom (one cell, one trial per cell...) or the design is not
    /// connected (two groups of cells that never shared a round).
    pub fn fit(cells: usize, obs: &[(usize, u32, f64)]) -> Option<TwoWay> {
        let obs: Vec<(usize, u32, f64)> = obs
            .iter()
            .filter(|(c, _, v)| *c < cells && *v > 0.0 && v.is_finite())
            .map(|&(c, r, v)| (c, r, v.ln()))
            .collect();
        let mut round_keys: Vec<u32> = obs.iter().map(|o| o.1).collect();
        round_keys.sort_unstable();
        round_keys.dedup();
        let present: Vec<bool> = (0..cells).map(|c| obs.iter().any(|o| o.0 == c)).collect();
        // Parameters: θ for each present cell, β for every round but the
        // first (β_first = 0 while solving; re-centred below).
        let cell_index: Vec<Option<usize>> = present
            .iter()
            .scan(0usize, |k, &p| {
                Some(p.then(|| {
                    *k += 1;
                    *k - 1
                }))
            })
            .collect();
        let nc = present.iter().filter(|p| **p).count();
        let nr = round_keys.len();
        if nc == 0 {
            return None;
        }
        let p = nc + nr - 1;
        let df = obs.len().checked_sub(p).filter(|d| *d >= 1)?;
        let round_index = |r: u32| round_keys.binary_search(&r).ok();
        let columns = |c: usize, r: u32| -> (usize, Option<usize>) {
            let ci = cell_index[c].unwrap_or(0);
            let ri = round_index(r)
                .and_then(|i| i.checked_sub(1))
                .map(|i| nc + i);
            (ci, ri)
        };
        let mut xtx = vec![0.0; p * p];
        let mut xty = vec![0.0; p];
        for &(c, r, y) in &obs {
            let (ci, ri) = columns(c, r);
            xtx[ci * p + ci] += 1.0;
            xty[ci] += y;
            if let Some(ri) = ri {
                xtx[ri * p + ri] += 1.0;
                xtx[ci * p + ri] += 1.0;
                xtx[ri * p + ci] += 1.0;
                xty[ri] += y;
            }
        }
        let inv = invert(&xtx, p)?;
        let beta: Vec<f64> = (0..p)
            .map(|i| (0..p).map(|j| inv[i * p + j] * xty[j]).sum())
            .collect();
        let rss: f64 = obs
            .iter()
            .map(|&(c, r, y)| {
                let (ci, ri) = columns(c, r);
                let fit = beta[ci] + ri.map_or(0.0, |ri| beta[ri]);
                (y - fit) * (y - fit)
            })
            .sum();
        let sigma2 = rss / df as f64;
        // Centre the round effects on their mean over the run's rounds.
        let round_effect = |i: usize| if i == 0 { 0.0 } else { beta[nc + i - 1] };
        let mean_round = (0..nr).map(round_effect).sum::<f64>() / nr as f64;
        let q = quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, df as f64);
        let levels = (0..cells)
            .map(|c| {
                let ci = cell_index[c]?;
                // a = e_ci + (1/R) Σ_{r ≥ 1} e_r: θ_c + mean β, as a contrast.
                let mut a = vec![0.0; p];
                a[ci] = 1.0;
                for v in a.iter_mut().skip(nc) {
                    *v = 1.0 / nr as f64;
                }
                let var: f64 = (0..p)
                    .map(|i| a[i] * (0..p).map(|j| inv[i * p + j] * a[j]).sum::<f64>())
                    .sum::<f64>()
                    * sigma2;
                let est = beta[ci] + mean_round;
                let se = var.max(0.0).sqrt();
                Some(Level {
                    estimate: est.exp(),
                    lo: (est - q * se).exp(),
                    hi: (est + q * se).exp(),
                    confidence: CONFIDENCE,
                    n: obs.iter().filter(|o| o.0 == c).count(),
                    df,
                })
            })
            .collect();
        Some(TwoWay {
            levels,
            rounds: (0..nr)
                .map(|i| (round_keys[i], (round_effect(i) - mean_round).exp()))
                .collect(),
            sigma: sigma2.sqrt(),
            df,
        })
    }
}

/// The inverse of a symmetric `p × p` matrix by Gauss-Jordan with partial
/// pivoting; `None` when it is singular (a disconnected design).
fn invert(m: &[f64], p: usize) -> Option<Vec<f64>> {
    let mut a = m.to_vec();
    let mut inv = vec![0.0; p * p];
    for i in 0..p {
        inv[i * p + i] = 1.0;
    }
    let scale = m.iter().fold(0.0f64, |s, v| s.max(v.abs())).max(1.0);
    for col in 0..p {
        let pivot =
            (col..p).max_by(|&x, &y| a[x * p + col].abs().total_cmp(&a[y * p + col].abs()))?;
        if a[pivot * p + col].abs() < 1e-10 * scale {
            return None;
        }
        if pivot != col {
            for j in 0..p {
                a.swap(pivot * p + j, col * p + j);
                inv.swap(pivot * p + j, col * p + j);
            }
        }
        let d = a[col * p + col];
        for j in 0..p {
            a[col * p + j] /= d;
            inv[col * p + j] /= d;
        }
        for row in 0..p {
            if row == col {
                continue;
            }
            let f = a[row * p + col];
            if f == 0.0 {
                continue;
            }
            for j in 0..p {
                a[row * p + j] -= f * a[col * p + j];
                inv[row * p + j] -= f * inv[col * p + j];
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_levels_are_geometric_means_and_drift_is_found() {
        // Two cells, three rounds, round speeds 0.9, 1.0, 1.1 (× noise).
        let drift = [0.9, 1.0, 1.1];
        let noise = [[1.01, 0.99], [0.995, 1.005], [1.0, 1.002]];
        let mut obs = Vec::new();
        for (r, d) in drift.iter().enumerate() {
            obs.push((0, r as u32 + 1, 100.0 * d * noise[r][0]));
            obs.push((1, r as u32 + 1, 200.0 * d * noise[r][1]));
        }
        let m = TwoWay::fit(2, &obs).unwrap();
        assert_eq!(m.df, 2);
        let gm = |c: usize| {
            (obs.iter()
                .filter(|o| o.0 == c)
                .map(|o| o.2.ln())
                .sum::<f64>()
                / 3.0)
                .exp()
        };
        for c in 0..2 {
            let l = m.levels[c].unwrap();
            assert!((l.estimate - gm(c)).abs() < 1e-9 * gm(c), "{l:?}");
            assert!(l.lo < l.estimate && l.estimate < l.hi);
            // The drift (±10%) is not in the interval: the noise is ~1%.
            assert!(l.relative_spread() < 0.05, "{l:?}");
        }
        assert!(
            m.rounds[0].1 < 0.92 && m.rounds[2].1 > 1.08,
            "{:?}",
            m.rounds
        );
    }

    #[test]
    fn unbalanced_designs_fit_and_degenerate_ones_do_not() {
        // Cell 1 failed in round 2.
        let obs = [
            (0, 1, 100.0),
            (1, 1, 50.0),
            (0, 2, 110.0),
            (0, 3, 90.0),
            (1, 3, 46.0),
        ];
        let m = TwoWay::fit(2, &obs).unwrap();
        assert_eq!(m.df, 1);
        assert_eq!(m.levels[1].unwrap().n, 2);
        // One cell: no residual degree of freedom once rounds are fitted.
        assert!(TwoWay::fit(1, &[(0, 1, 1.0), (0, 2, 2.0)]).is_none());
        // Two cells that never shared a round: not connected.
        let apart = [
            (0, 1, 1.0),
            (0, 2, 1.1),
            (0, 2, 1.12),
            (1, 3, 2.0),
            (1, 4, 2.1),
            (1, 4, 2.05),
            (0, 1, 1.05),
        ];
        assert!(TwoWay::fit(2, &apart).is_none());
    }
}
