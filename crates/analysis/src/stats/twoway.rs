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
//!
//! **Each cell its own noise.** Cells are not equally noisy: on this
//! project's VM a Docker cell serving from fuse-overlayfs swings between
//! two speeds while the native cell beside it holds within 1%. One pooled
//! residual variance would give every cell the noisiest cells' interval.
//! So each cell's residual variance is estimated on its own and moderated
//! towards the pooled one by empirical Bayes:
//! - the per-cell variances solve `E[Σ_{i∈c} e_i²] = Σ_d M_cd σ_d²` with
//!   `M_cd = Σ_{i∈c, j∈d} (I - H)_ij²` (H the hat matrix): unbiased when
//!   cells differ, in any unbalanced design (in a balanced one this is
//!   Shukla's stability variance, *Heredity* 29, 1972); with two cells it
//!   has no solution (their residuals mirror each other) and the pooled
//!   variance stands;
//! - when the cells' variances scatter significantly more than chance
//!   would make them (a χ² check at 1%), each is moderated as limma does
//!   (Smyth, *Statistical Applications in Genetics and Molecular Biology*
//!   3(1), 2004, §6.2): a prior variance `s0²` on `d0` degrees of freedom
//!   estimated from the spread of the log variances; a cell never gets less
//!   than its own estimate (a noisy cell is not talked down by quiet ones),
//!   and its interval keeps its own degrees of freedom, `1 / (M⁻¹)_cc`
//!   (the prior, fitted to a handful of cells, is not trusted as data);
//!   otherwise the pooled model stands exactly;
//! - a level's variance is the sandwich `Σ_i w_i² σ̃²_cell(i)` over the
//!   weights `w` the least-squares estimate gives each trial, on
//!   Satterthwaite's degrees of freedom.
//!
//! `tests/it/coverage.rs` checks the intervals cover 95% ± 3% with equal and
//! with unequal cell noise.

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
    /// The interval's degrees of freedom (Satterthwaite's, rounded down).
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
    /// Residual standard deviation on the log scale, pooled over cells.
    pub sigma: f64,
    /// Per cell, its own residual standard deviation on the log scale
    /// (moderated; see the module doc); `None` for a cell with no
    /// observation.
    pub cell_sigma: Vec<Option<f64>>,
    /// Residual degrees of freedom of the fit.
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
        // Each observation's design row: its cell's column and, but in the
        // first round, its round's.
        let rows: Vec<(usize, Option<usize>)> = obs
            .iter()
            .map(|&(c, r, _)| {
                let ci = cell_index[c].unwrap_or(0);
                let ri = round_index(r)
                    .and_then(|i| i.checked_sub(1))
                    .map(|i| nc + i);
                (ci, ri)
            })
            .collect();
        let (xtx, xty) = normal_equations(&obs, &rows, p);
        let inv = invert(&xtx, p)?;
        let beta: Vec<f64> = (0..p)
            .map(|i| (0..p).map(|j| inv[i * p + j] * xty[j]).sum())
            .collect();
        let rss: f64 = obs
            .iter()
            .zip(&rows)
            .map(|(&(_, _, y), &(ci, ri))| {
                let fit = beta[ci] + ri.map_or(0.0, |ri| beta[ri]);
                (y - fit) * (y - fit)
            })
            .sum();
        let sigma2 = rss / df as f64;
        // Centre the round effects on their mean over the run's rounds.
        let round_effect = |i: usize| if i == 0 { 0.0 } else { beta[nc + i - 1] };
        let mean_round = (0..nr).map(round_effect).sum::<f64>() / nr as f64;
        let residuals: Vec<f64> = obs
            .iter()
            .zip(&rows)
            .map(|(o, &(ci, ri))| o.2 - beta[ci] - ri.map_or(0.0, |ri| beta[ri]))
            .collect();
        let noise = CellNoise::estimate(&inv, p, nc, &rows, &residuals, sigma2, df);
        let solved = Solved {
            inv: &inv,
            beta: &beta,
            rows: &rows,
            p,
            nc,
            nr,
            mean_round,
        };
        let levels = (0..cells)
            .map(|c| {
                let n = obs.iter().filter(|o| o.0 == c).count();
                Some(solved.level(cell_index[c]?, n, &noise))
            })
            .collect();
        Some(TwoWay {
            levels,
            rounds: (0..nr)
                .map(|i| (round_keys[i], (round_effect(i) - mean_round).exp()))
                .collect(),
            sigma: sigma2.sqrt(),
            cell_sigma: cell_index
                .iter()
                .map(|ci| ci.map(|ci| noise.sigma2[ci].sqrt()))
                .collect(),
            df,
        })
    }
}

/// X'X and X'y of the log values over the observations' design rows.
fn normal_equations(
    obs: &[(usize, u32, f64)],
    rows: &[(usize, Option<usize>)],
    p: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut xtx = vec![0.0; p * p];
    let mut xty = vec![0.0; p];
    for (&(_, _, y), &(ci, ri)) in obs.iter().zip(rows) {
        xtx[ci * p + ci] += 1.0;
        xty[ci] += y;
        if let Some(ri) = ri {
            xtx[ri * p + ri] += 1.0;
            xtx[ci * p + ri] += 1.0;
            xtx[ri * p + ci] += 1.0;
            xty[ri] += y;
        }
    }
    (xtx, xty)
}

/// The solved model: (X'X)⁻¹, the parameters, the design rows, the
/// parameters' layout (`nc` cells, then `nr - 1` rounds) and the mean
/// round effect.
struct Solved<'a> {
    inv: &'a [f64],
    beta: &'a [f64],
    rows: &'a [(usize, Option<usize>)],
    p: usize,
    nc: usize,
    nr: usize,
    mean_round: f64,
}

impl Solved<'_> {
    /// The level of the cell in column `ci` (with `n` observations) and
    /// its t interval.
    fn level(&self, ci: usize, n: usize, noise: &CellNoise) -> Level {
        let (p, nc, nr, inv) = (self.p, self.nc, self.nr, self.inv);
        // a = e_ci + (1/R) Σ_{r ≥ 1} e_r: θ_c + mean β, as a contrast.
        let mut a = vec![0.0; p];
        a[ci] = 1.0;
        for v in a.iter_mut().skip(nc) {
            *v = 1.0 / nr as f64;
        }
        // The estimate is Σ_i w_i y_i with w = X (X'X)⁻¹ a.
        let g: Vec<f64> = (0..p)
            .map(|i| (0..p).map(|j| inv[i * p + j] * a[j]).sum())
            .collect();
        let mut weight2 = vec![0.0; nc];
        for &(oci, ori) in self.rows {
            let w = g[oci] + ori.map_or(0.0, |r| g[r]);
            weight2[oci] += w * w;
        }
        let (var, dof) = noise.variance(&weight2);
        let est = self.beta[ci] + self.mean_round;
        let se = var.max(0.0).sqrt();
        let q = quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, dof);
        Level {
            estimate: est.exp(),
            lo: (est - q * se).exp(),
            hi: (est + q * se).exp(),
            confidence: CONFIDENCE,
            n,
            df: (dof.floor() as usize).max(1),
        }
    }
}

/// Each cell's residual variance (moderated) and its degrees of freedom,
/// indexed by the fit's cell columns.
struct CellNoise {
    sigma2: Vec<f64>,
    df: Vec<f64>,
}

impl CellNoise {
    /// See the module doc. `rows` are the observations' design rows,
    /// `residuals` their residuals, `pooled` the pooled variance on `df`.
    fn estimate(
        inv: &[f64],
        p: usize,
        nc: usize,
        rows: &[(usize, Option<usize>)],
        residuals: &[f64],
        pooled: f64,
        df: usize,
    ) -> CellNoise {
        let total = df as f64;
        let same = CellNoise {
            sigma2: vec![pooled; nc],
            df: vec![total; nc],
        };
        if nc < 3 || pooled <= 0.0 {
            return same;
        }
        // H_ij = x_i' (X'X)⁻¹ x_j over the sparse rows.
        let hat = |a: (usize, Option<usize>), b: (usize, Option<usize>)| {
            let mut h = inv[a.0 * p + b.0];
            if let Some(rb) = b.1 {
                h += inv[a.0 * p + rb];
            }
            if let Some(ra) = a.1 {
                h += inv[ra * p + b.0];
                if let Some(rb) = b.1 {
                    h += inv[ra * p + rb];
                }
            }
            h
        };
        let mut m = vec![0.0; nc * nc];
        let mut ss = vec![0.0; nc];
        for (i, &a) in rows.iter().enumerate() {
            ss[a.0] += residuals[i] * residuals[i];
            for (j, &b) in rows.iter().enumerate() {
                let r = f64::from(u8::from(i == j)) - hat(a, b);
                m[a.0 * nc + b.0] += r * r;
            }
        }
        let Some(minv) = invert(&m, nc) else {
            return same;
        };
        // Each estimate is a quadratic form e'Ae of normal residuals
        // (covariance σ²(I - H) when cells are alike); its Satterthwaite
        // degrees of freedom 2E²/Var = 1 / tr((A(I - H))²) reduce to
        // 1 / (M⁻¹)_cc.
        let dof: Vec<f64> = (0..nc).map(|c| 1.0 / minv[c * nc + c]).collect();
        // A cell whose estimate comes out at or below zero (it happens
        // with few rounds) is floored at a hundredth of the pooled
        // variance; the moderation below pulls it back up.
        let raw: Vec<f64> = (0..nc)
            .map(|c| {
                let v: f64 = (0..nc).map(|d| minv[c * nc + d] * ss[d]).sum();
                v.max(pooled / 100.0)
            })
            .collect();
        if dof.iter().any(|d| *d <= 0.0) {
            return same;
        }
        let Some((d0, s0)) = prior(&raw, &dof) else {
            return CellNoise {
                sigma2: vec![pooled; nc],
                df: vec![total; nc],
            };
        };
        CellNoise {
            sigma2: (0..nc)
                .map(|c| raw[c].max((d0 * s0 + dof[c] * raw[c]) / (d0 + dof[c])))
                .collect(),
            df: dof.iter().map(|d| d.min(total)).collect(),
        }
    }

    /// A level's variance `Σ_c σ̃_c² W_c` (`weight2[c]`: the sum of its
    /// squared weights over cell c's trials) and Satterthwaite's degrees
    /// of freedom.
    fn variance(&self, weight2: &[f64]) -> (f64, f64) {
        let parts: Vec<(f64, f64)> = weight2
            .iter()
            .zip(self.sigma2.iter().zip(&self.df))
            .filter(|(w, _)| **w > 0.0)
            .map(|(w, (s, d))| (w * s, *d))
            .collect();
        let var: f64 = parts.iter().map(|x| x.0).sum();
        let denominator: f64 = parts.iter().map(|(v, d)| v * v / d).sum();
        let dof = if denominator > 0.0 {
            var * var / denominator
        } else {
            self.df.iter().fold(f64::INFINITY, |a, b| a.min(*b))
        };
        (var, dof.max(1.0))
    }
}

/// limma's prior (Smyth 2004, §6.2): from variances `s2` on `df` degrees
/// of freedom, the prior degrees of freedom `d0` and variance `s0²`, or
/// `None` when the variances do not scatter significantly more than
/// chance would make them (an infinite `d0`: the pooled variance stands).
fn prior(s2: &[f64], df: &[f64]) -> Option<(f64, f64)> {
    let n = s2.len() as f64;
    let e: Vec<f64> = s2
        .iter()
        .zip(df)
        .map(|(s, d)| s.ln() - digamma(d / 2.0) + (d / 2.0).ln())
        .collect();
    let mean = e.iter().sum::<f64>() / n;
    let scatter = e.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>();
    let chance = df.iter().map(|d| trigamma(d / 2.0)).sum::<f64>() / n;
    // Cells alike scatter by chance alone: `scatter / chance` is then
    // about χ² on n - 1 degrees of freedom. Below its 95th percentile
    // (Wilson & Hilferty's approximation, PNAS 17, 1931) the cells are
    // not told apart: with a handful of cells, the prior fitted to chance
    // scatter would trust a few rounds' luck.
    let k = n - 1.0;
    let z = 2.326_347_874_040_841;
    let chi2_95 = k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3);
    if scatter / chance <= chi2_95 {
        return None;
    }
    let spread = scatter / k - chance;
    if spread <= 0.0 {
        return None;
    }
    let d0 = 2.0 * trigamma_inverse(spread);
    if d0 > 1e6 {
        return None;
    }
    Some((d0, (mean + digamma(d0 / 2.0) - (d0 / 2.0).ln()).exp()))
}

/// ψ(x), x > 0: the recurrence up to 10, then the asymptotic series
/// (Abramowitz & Stegun 6.3.5 and 6.3.18).
fn digamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 10.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    r + x.ln() - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0)))
}

/// ψ'(x), x > 0: the recurrence up to 10, then the asymptotic series
/// (Abramowitz & Stegun 6.4.6 and 6.4.12).
fn trigamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 10.0 {
        r += 1.0 / (x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    r + 1.0 / x
        + f / 2.0
        + f / x * (1.0 / 6.0 - f * (1.0 / 30.0 - f * (1.0 / 42.0 - f * (1.0 / 30.0))))
}

/// The x with ψ'(x) = y (ψ' falls monotonically): bisection on log x.
fn trigamma_inverse(y: f64) -> f64 {
    let (mut lo, mut hi) = (-20.0f64, 20.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if trigamma(mid.exp()) > y {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
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
    #[test]
    fn special_functions_match_their_known_values() {
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-10);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-10);
        let pi2_6 = std::f64::consts::PI.powi(2) / 6.0;
        assert!((trigamma(1.0) - pi2_6).abs() < 1e-10);
        assert!((trigamma(0.5) - 3.0 * pi2_6).abs() < 1e-9);
        for x in [0.3, 1.0, 3.7, 40.0, 900.0] {
            let back = trigamma_inverse(trigamma(x));
            assert!((back - x).abs() < 1e-6 * x, "{x} {back}");
        }
    }

    /// `cells` cells over `rounds` rounds with round drift ±10% and each
    /// cell's own log-normal noise `sd[c]`.
    fn noisy(sd: &[f64], rounds: u32, seed: u64) -> Vec<(usize, u32, f64)> {
        let mut rng = crate::stats::bootstrap::SplitMix64::new(seed);
        let mut normal = || {
            let u1 = rng.next_f64().max(f64::MIN_POSITIVE);
            let u2 = rng.next_f64();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let mut obs = Vec::new();
        for r in 1..=rounds {
            let drift = 1.0 + 0.1 * (f64::from(r) * 1.7).sin();
            for (c, s) in sd.iter().enumerate() {
                let x = 1000.0 * (c + 1) as f64 * drift * (s * normal()).exp();
                obs.push((c, r, x));
            }
        }
        obs
    }

    #[test]
    fn a_quiet_cell_keeps_a_narrow_interval_beside_a_noisy_one() {
        // Three quiet cells (1%) and one that swings (15%).
        let obs = noisy(&[0.01, 0.01, 0.01, 0.15], 12, 42);
        let m = TwoWay::fit(4, &obs).unwrap();
        let spread = |c: usize| m.levels[c].unwrap().relative_spread();
        for c in 0..3 {
            assert!(spread(c) < 0.03, "cell {c}: ±{:.1}%", 100.0 * spread(c));
            assert!(spread(c) * 3.0 < spread(3), "{} {}", spread(c), spread(3));
        }
        // The noisy cell's own spread is seen, the quiet ones' too.
        let sd = |c: usize| m.cell_sigma[c].unwrap();
        assert!(sd(3) > 0.08 && sd(0) < 0.03, "{:?}", m.cell_sigma);
        // Pooled, every cell would share one variance: the quiet cells'
        // intervals would be several times wider.
        let pooled = quantile(0.975, m.df as f64) * m.sigma * (1.0 / 12.0f64).sqrt();
        assert!(spread(0) * 3.0 < pooled, "{} {pooled}", spread(0));
    }

    #[test]
    fn cells_alike_give_the_pooled_model() {
        // Equal noise: the moderation finds nothing to tell the cells
        // apart (or next to nothing) and the intervals match the pooled
        // t interval closely.
        let obs = noisy(&[0.03, 0.03, 0.03, 0.03, 0.03], 8, 7);
        let m = TwoWay::fit(5, &obs).unwrap();
        let q = quantile(0.975, m.df as f64);
        let pooled = q * m.sigma * (1.0 / 8.0f64).sqrt();
        for l in m.levels.iter().flatten() {
            let half = (l.hi / l.lo).ln() / 2.0;
            assert!((half / pooled - 1.0).abs() < 0.35, "{half} {pooled}");
        }
    }
}
