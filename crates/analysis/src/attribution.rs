//! Attribution: seed 000's waterfall, computed (docs/studies.md, seed 000,
//! "The post's attribution"). Along an ordered chain of cells, each differing
//! from the one before by exactly one factor, the total throughput gap (last -
//! first) is split into the steps' changes; each step's change against the
//! step before is paired on the round (a paired t interval on the
//! within-round log ratios), and its share of the gap carries Fieller's
//! interval (docs/analysis.md, "Attribution").
//!
//! Seed 000's results read as a chain, by hand, in that section: 9.9k
//! (bridge + published port) → 27.5k (host network) → 30k (tuned config) →
//! 36.5k (access_log off) → 39k (native): the published port is 60% of the
//! gap, the container itself 9% (its computed shares; the post itself states
//! ~30-40% and ~7-8%).
//!
//! Shares telescope: per round, the step deltas add up to that round's gap
//! exactly, so over the rounds where every chain cell succeeded the mean
//! deltas add up to the mean gap and the shares sum to 100% whatever the
//! noise. A share is a ratio of two correlated means; Fieller's interval is
//! exact for it under normality, and unbounded (`None`) when the gap is not
//! significant.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::cell::{shown, CellStats};
use crate::error::AttributionError;
use crate::pairs::{cell_contrast, Metric};
use crate::run::Run;
use crate::stats::fieller::fieller;
use crate::stats::paired::variance;
use crate::stats::tdist::quantile;
use crate::stats::{Contrast, Level, MedianCi, CONFIDENCE};

/// The one factor a step changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactorChange {
    pub factor: String,
    pub from: String,
    pub to: String,
}

/// One cell of the chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub cell: String,
    /// What changed from the previous step; `None` for the baseline.
    pub change: Option<FactorChange>,
    /// The cell's medians and their order-statistic intervals.
    pub throughput: MedianCi,
    pub p99_us: MedianCi,
    /// The cell's levels with the drift removed (`CellStats::level`).
    #[serde(default)]
    pub level: Option<Level>,
    #[serde(default)]
    pub p99_level: Option<Level>,
    /// The change from the previous step in throughput units (0 for the
    /// baseline): the mean per-round change over the rounds where every
    /// chain cell succeeded, or, unpaired, the difference of the mean
    /// throughputs.
    pub delta: f64,
    /// Throughput against the previous step: ratio, interval, p-value, call,
    /// detectable effect (paired on the round when possible).
    pub vs_previous: Option<Contrast>,
    /// p99 latency against the previous step.
    pub p99_vs_previous: Option<Contrast>,
    /// `delta / gap`; `None` for the baseline or when the gap is zero.
    pub share: Option<f64>,
    /// Fieller's interval of the share; `None` when it is unbounded (the
    /// gap is not significant) or there are too few trials.
    pub share_ci: Option<(f64, f64)>,
}

impl Step {
    /// The throughput reports print: the level when modelled, else the median.
    pub fn throughput_shown(&self) -> MedianCi {
        shown(self.level, self.throughput)
    }

    /// The p99 reports print.
    pub fn p99_shown(&self) -> MedianCi {
        shown(self.p99_level, self.p99_us)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub unit: String,
    /// The metric the chain compares (`throughput`, `read_iops`) and its
    /// direction: with `lower`, a step that lowers the value is a gain.
    #[serde(default = "throughput_name")]
    pub metric: String,
    #[serde(default)]
    pub better: tare_record::Better,
    pub steps: Vec<Step>,
    /// Last step's throughput minus the first's: the mean per-round gap
    /// over complete rounds, or, unpaired, the difference of the means.
    pub gap: f64,
    /// Rounds where every chain cell succeeded, which `gap`, the deltas and
    /// the shares are computed over; `None` when they are unpaired.
    #[serde(default)]
    pub complete_rounds: Option<usize>,
    /// Last against first: is there a gap to attribute at all?
    pub overall: Option<Contrast>,
}

impl Attribution {
    /// Whether the gap itself is significant; when it is not, shares split
    /// noise and the reports say so.
    pub fn gap_is_significant(&self) -> bool {
        self.overall.is_some_and(|c| c.is_significant())
    }

    /// Whether steps' shares of the gap mean anything: not when the gap
    /// itself is not significant (a share of noise is not an effect; a
    /// chain between two equal cells once printed 1032% [-3040%, 8954%]).
    pub fn shares_mean_something(&self) -> bool {
        self.overall
            .as_ref()
            .is_none_or(|o| o.significance != crate::stats::Significance::NotSignificant)
    }
}

/// The attribution of `chain` (cell ids, baseline first) in `run`.
pub fn attribution(run: &Run, chain: &[String]) -> Result<Attribution, AttributionError> {
    let cells = run.cells();
    for id in chain {
        if !cells.iter().any(|c| &c.cell == id) {
            return Err(if run.trials.iter().any(|t| &t.cell == id) {
                AttributionError::NoResults(id.clone())
            } else {
                AttributionError::UnknownCell(id.clone())
            });
        }
    }
    attribution_of_cells(&cells, chain)
}

/// The attribution of `chain` over already summarised cells.
pub(crate) fn attribution_of_cells(
    cells: &[CellStats],
    chain: &[String],
) -> Result<Attribution, AttributionError> {
    if chain.len() < 2 {
        return Err(AttributionError::TooShort(chain.len()));
    }
    let mut seen = BTreeSet::new();
    let mut chain_cells: Vec<&CellStats> = Vec::with_capacity(chain.len());
    for id in chain {
        if !seen.insert(id) {
            return Err(AttributionError::Repeated(id.clone()));
        }
        let cell = cells
            .iter()
            .find(|c| &c.cell == id)
            .ok_or_else(|| AttributionError::UnknownCell(id.clone()))?;
        if cell.ok() == 0 {
            return Err(AttributionError::NoResults(id.clone()));
        }
        chain_cells.push(cell);
    }
    if let Some(other) = chain_cells
        .iter()
        .find(|c| c.measure() != chain_cells[0].measure())
    {
        let said = |c: &CellStats| format!("{} ({})", c.metric, c.unit);
        return Err(AttributionError::MixedMetrics {
            first: chain_cells[0].cell.clone(),
            first_metric: said(chain_cells[0]),
            other: other.cell.clone(),
            other_metric: said(other),
        });
    }
    let changes = chain_cells
        .windows(2)
        .enumerate()
        .map(|(i, pair)| one_factor_change(i + 1, pair[0], pair[1]))
        .collect::<Result<Vec<_>, _>>()?;

    let first = chain_cells[0];
    let last = chain_cells[chain_cells.len() - 1];
    let split = split_gap(&chain_cells);

    let steps = chain_cells
        .iter()
        .enumerate()
        .map(|(i, cell)| {
            let prev = i.checked_sub(1).map(|p| chain_cells[p]);
            let delta = if i == 0 { 0.0 } else { split.deltas[i - 1] };
            let share = (i > 0 && split.gap != 0.0).then(|| delta / split.gap);
            Step {
                cell: cell.cell.clone(),
                change: i.checked_sub(1).map(|p| changes[p].clone()),
                throughput: cell.throughput,
                p99_us: cell.p99_us,
                level: cell.level,
                p99_level: cell.p99_level,
                delta,
                vs_previous: prev.and_then(|p| cell_contrast(p, cell, Metric::Throughput)),
                p99_vs_previous: prev.and_then(|p| cell_contrast(p, cell, Metric::P99)),
                share,
                share_ci: share.and_then(|_| split.share_ci[i - 1]),
            }
        })
        .collect();
    Ok(Attribution {
        unit: first.unit.clone(),
        metric: first.metric.clone(),
        better: first.better,
        steps,
        gap: split.gap,
        complete_rounds: split.complete_rounds,
        overall: cell_contrast(first, last, Metric::Throughput),
    })
}

fn throughput_name() -> String {
    "throughput".into()
}

/// The gap, each step's delta and the interval of each step's share.
struct GapSplit {
    gap: f64,
    deltas: Vec<f64>,
    share_ci: Vec<Option<(f64, f64)>>,
    complete_rounds: Option<usize>,
}

/// Paired over the rounds where every chain cell succeeded (at least two),
/// else unpaired from each cell's mean and variance, else from the printed
/// estimates without intervals.
fn split_gap(chain: &[&CellStats]) -> GapSplit {
    let k = chain.len() - 1;
    let q = |df: f64| quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, df);
    if let Some(rows) = complete_rounds(chain).filter(|r| r.len() >= 2) {
        let steps: Vec<(usize, usize)> = (1..=k).map(|i| (i - 1, i)).collect();
        let (gap, shares) = paired_shares(&rows, (0, k), &steps);
        return GapSplit {
            gap,
            deltas: shares.iter().map(|s| s.0).collect(),
            share_ci: shares.into_iter().map(|s| s.1).collect(),
            complete_rounds: Some(rows.len()),
        };
    }
    // Unpaired: the steps' deltas are differences of independent means.
    let means: Vec<f64> = chain
        .iter()
        .map(|c| c.throughput_samples.iter().sum::<f64>() / c.ok().max(1) as f64)
        .collect();
    let vars: Vec<f64> = chain
        .iter()
        .map(|c| variance(&c.throughput_samples) / c.ok().max(1) as f64)
        .collect();
    let min_n = chain.iter().map(|c| c.ok()).min().unwrap_or(0);
    let gap = means[k] - means[0];
    let deltas: Vec<f64> = (1..=k).map(|i| means[i] - means[i - 1]).collect();
    let share_ci = (1..=k)
        .map(|i| {
            if min_n < 2 {
                return None;
            }
            let vab = if i == k { vars[k] } else { 0.0 } + if i == 1 { vars[0] } else { 0.0 };
            // min(n) - 1 degrees of freedom: conservative for unequal sizes.
            fieller(
                deltas[i - 1],
                gap,
                vars[i] + vars[i - 1],
                vars[k] + vars[0],
                vab,
                q((min_n - 1) as f64),
            )
        })
        .collect();
    GapSplit {
        gap,
        deltas,
        share_ci,
        complete_rounds: None,
    }
}

/// A step's mean delta and Fieller's interval of its share of the gap.
type DeltaShare = (f64, Option<(f64, f64)>);

/// Paired over `rows` (one round's throughputs each, at least two rounds):
/// the mean gap `row[gap.1] - row[gap.0]`, and for each `(from, to)` in
/// `steps` its mean delta `row[to] - row[from]` with Fieller's interval of
/// its share of the gap (the delta and the gap move together with the
/// round's drift: their covariance enters the interval).
fn paired_shares(
    rows: &[Vec<f64>],
    gap: (usize, usize),
    steps: &[(usize, usize)],
) -> (f64, Vec<DeltaShare>) {
    let n = rows.len() as f64;
    let q = quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, n - 1.0);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let gaps: Vec<f64> = rows.iter().map(|x| x[gap.1] - x[gap.0]).collect();
    let (b, vbb) = (mean(&gaps), variance(&gaps) / n);
    let shares = steps
        .iter()
        .map(|&(from, to)| {
            let d: Vec<f64> = rows.iter().map(|x| x[to] - x[from]).collect();
            let a = mean(&d);
            let cov = d
                .iter()
                .zip(&gaps)
                .map(|(x, g)| (x - a) * (g - b))
                .sum::<f64>()
                / (n - 1.0);
            (a, fieller(a, b, variance(&d) / n, vbb, cov / n, q))
        })
        .collect();
    (b, shares)
}

/// One part of a split step as a share of the whole chain's gap: seed
/// 000's unit ("only ~7-8% true container cost", docs/studies.md), so a
/// step's parts read beside the other steps' shares.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GapShare {
    pub share: f64,
    /// Fieller's interval; `None` when unbounded (the gap is not
    /// significant over these rounds).
    pub ci: Option<(f64, f64)>,
}

/// Each part of `parts` (a split's sub-chain, from one cell of `chain` to
/// the next) as a share of `chain`'s gap, paired over the rounds where
/// every cell of both succeeded; `None` with fewer than two such rounds,
/// or when a cell is unknown or has no rounds.
pub fn parts_of_gap(
    cells: &[CellStats],
    chain: &[String],
    parts: &[String],
) -> Option<Vec<GapShare>> {
    if chain.len() < 2 || parts.len() < 2 {
        return None;
    }
    let mut ids: Vec<&String> = chain.iter().collect();
    ids.extend(parts.iter().filter(|p| !chain.contains(p)));
    let picked: Vec<&CellStats> = ids
        .iter()
        .map(|id| cells.iter().find(|c| &&c.cell == id))
        .collect::<Option<_>>()?;
    let rows = complete_rounds(&picked).filter(|r| r.len() >= 2)?;
    let at = |id: &String| ids.iter().position(|x| *x == id);
    let steps: Vec<(usize, usize)> = parts
        .windows(2)
        .map(|w| Some((at(&w[0])?, at(&w[1])?)))
        .collect::<Option<_>>()?;
    let (gap, shares) = paired_shares(&rows, (0, chain.len() - 1), &steps);
    (gap != 0.0).then(|| {
        shares
            .into_iter()
            .map(|(delta, ci)| GapShare {
                share: delta / gap,
                ci,
            })
            .collect()
    })
}

/// Each round where every chain cell succeeded, as the chain's throughputs
/// in chain order; `None` when a cell has no rounds.
fn complete_rounds(chain: &[&CellStats]) -> Option<Vec<Vec<f64>>> {
    let by_round: Vec<Vec<(u32, f64, f64)>> =
        chain.iter().map(|c| c.by_round()).collect::<Option<_>>()?;
    let mut rounds: Vec<u32> = by_round[0].iter().map(|x| x.0).collect();
    rounds.sort_unstable();
    rounds.dedup();
    Some(
        rounds
            .into_iter()
            .filter_map(|r| {
                by_round
                    .iter()
                    .map(|c| c.iter().find(|x| x.0 == r).map(|x| x.1))
                    .collect::<Option<Vec<f64>>>()
            })
            .collect(),
    )
}

/// The single factor `b` changes relative to `a`, or why the step is refused.
fn one_factor_change(
    step: usize,
    a: &CellStats,
    b: &CellStats,
) -> Result<FactorChange, AttributionError> {
    let level = |c: &CellStats, k: &str| {
        c.factors
            .get(k)
            .cloned()
            .unwrap_or_else(|| "(unset)".into())
    };
    let changed = crate::factors::changed_factors(&a.factors, &b.factors);
    match changed.as_slice() {
        [one] => Ok(FactorChange {
            factor: (*one).clone(),
            from: level(a, one),
            to: level(b, one),
        }),
        _ => Err(AttributionError::NotOneFactor {
            step,
            from: a.cell.clone(),
            to: b.cell.clone(),
            changed,
        }),
    }
}
