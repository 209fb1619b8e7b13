//! Attribution: seed 000's waterfall, computed (docs/studies.md, seed 000,
//! "The post's attribution"). Along an ordered chain of cells, each differing
//! from the one before by exactly one factor, the total throughput gap (last -
//! first) is split into the steps' changes; each step's share of the gap
//! carries a bootstrap interval, and each step a Mann-Whitney call against the
//! step before.
//!
//! Seed 000's results read as a chain, by hand, in that section: 9.9k
//! (bridge + published port) → 27.5k (host network) → 30k (tuned config) →
//! 36.5k (access_log off) → 39k (native): the published port is 60% of the
//! gap, the container itself 9% (its computed shares; the post itself states
//! ~30-40% and ~7-8%).
//!
//! Shares telescope: the step deltas add up to the gap exactly, so the shares
//! sum to 100% whatever the noise; their *intervals* come from one joint
//! bootstrap of every chain cell, so a step between two noisy cells shows it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::cell::CellStats;
use crate::error::AttributionError;
use crate::run::Run;
use crate::stats::bootstrap::{MedianReplicates, RESAMPLES, SEED};
use crate::stats::{contrast, Contrast, MedianCi, CONFIDENCE};

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
    pub throughput: MedianCi,
    pub p99_us: MedianCi,
    /// Throughput median minus the previous step's (0 for the baseline).
    pub delta: f64,
    /// Throughput against the previous step: ratio, interval, p-value, call.
    pub vs_previous: Option<Contrast>,
    /// p99 latency against the previous step.
    pub p99_vs_previous: Option<Contrast>,
    /// `delta / gap`; `None` for the baseline or when the gap is zero.
    pub share: Option<f64>,
    /// Bootstrap percentile interval of the share.
    pub share_ci: Option<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub unit: String,
    pub steps: Vec<Step>,
    /// Last step's median throughput minus the first's.
    pub gap: f64,
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
pub fn attribution_of_cells(
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
    let changes = chain_cells
        .windows(2)
        .enumerate()
        .map(|(i, pair)| one_factor_change(i + 1, pair[0], pair[1]))
        .collect::<Result<Vec<_>, _>>()?;

    let first = chain_cells[0];
    let last = chain_cells[chain_cells.len() - 1];
    let gap = last.throughput.median - first.throughput.median;
    let samples: Vec<&[f64]> = chain_cells
        .iter()
        .map(|c| c.throughput_samples.as_slice())
        .collect();
    let replicates = MedianReplicates::new(&samples, RESAMPLES, SEED);
    let k = chain_cells.len() - 1;

    let steps = chain_cells
        .iter()
        .enumerate()
        .map(|(i, cell)| {
            let prev = i.checked_sub(1).map(|p| chain_cells[p]);
            let delta = prev.map_or(0.0, |p| cell.throughput.median - p.throughput.median);
            let share = (i > 0 && gap != 0.0).then(|| delta / gap);
            let share_ci = share.and_then(|_| {
                replicates
                    .as_ref()?
                    .interval(CONFIDENCE, |m| (m[i] - m[i - 1]) / (m[k] - m[0]))
            });
            Step {
                cell: cell.cell.clone(),
                change: i.checked_sub(1).map(|p| changes[p].clone()),
                throughput: cell.throughput,
                p99_us: cell.p99_us,
                delta,
                vs_previous: prev
                    .and_then(|p| contrast(&p.throughput_samples, &cell.throughput_samples)),
                p99_vs_previous: prev
                    .and_then(|p| contrast(&p.p99_samples_us, &cell.p99_samples_us)),
                share,
                share_ci,
            }
        })
        .collect();
    Ok(Attribution {
        unit: first.unit.clone(),
        steps,
        gap,
        overall: contrast(&first.throughput_samples, &last.throughput_samples),
    })
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
