//! Cell levels with the machine's drift removed, and the drift itself:
//! the two-way model of `stats::twoway` fitted over every cell of a run,
//! once on log throughput and once on log p99 (docs/analysis.md, "Cell
//! levels: drift removed").

use serde::{Deserialize, Serialize};

use crate::cell::CellStats;
use tare_record::Better;

use crate::stats::{Level, TwoWay};

/// How fast each round ran relative to the run's average (from the
/// throughput model's round effects).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// `(round, speed)`: 1.06 is a round 6% faster than the run's average.
    pub rounds: Vec<(u32, f64)>,
    /// The slowest and fastest round, as relative changes (-0.08, +0.06).
    pub min: f64,
    pub max: f64,
    /// The model's residual standard deviation on the log scale: the
    /// trial-to-trial noise left once cells and rounds are accounted for.
    pub residual_sd: f64,
}

/// Fills each cell's `level` and `p99_level` when the cells ran in rounds
/// and the model has residual degrees of freedom; leaves them `None`
/// otherwise.
///
/// The primary metric is fitted as a speed: a lower-is-better metric (a
/// latency, a time) enters as its reciprocal, so a slow round lowers every
/// cell and the round effects mean one thing in a run that mixes IOPS and
/// latency cells; its level is turned back into the metric's own units.
pub(crate) fn fill(cells: &mut [CellStats]) {
    let Some(tp) = fit_primary(cells) else {
        return;
    };
    let p99 = fit(cells, |_, (_, _, p)| p);
    for (i, c) in cells.iter_mut().enumerate() {
        c.level = tp.levels[i].map(|l| match c.better {
            Better::Higher => l,
            Better::Lower => Level {
                estimate: 1.0 / l.estimate,
                lo: 1.0 / l.hi,
                hi: 1.0 / l.lo,
                ..l
            },
        });
        c.p99_level = p99.as_ref().and_then(|m| m.levels[i]);
    }
}

/// The round-to-round drift of a run's cells (as [`crate::Run::cells`]
/// returns them), when it can be modelled.
pub fn drift(cells: &[CellStats]) -> Option<Drift> {
    let m = fit_primary(cells)?;
    let speeds = m.rounds.iter().map(|r| r.1);
    Some(Drift {
        min: speeds.clone().fold(f64::INFINITY, f64::min) - 1.0,
        max: speeds.fold(f64::NEG_INFINITY, f64::max) - 1.0,
        rounds: m.rounds,
        residual_sd: m.sigma,
    })
}

/// The primary metric on the speed scale (`Better::as_speed`).
fn fit_primary(cells: &[CellStats]) -> Option<TwoWay> {
    fit(cells, |c, (_, t, _)| c.better.as_speed(t))
}

fn fit(cells: &[CellStats], value: fn(&CellStats, (u32, f64, f64)) -> f64) -> Option<TwoWay> {
    let mut obs = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        for x in c.by_round()? {
            obs.push((i, x.0, value(c, x)));
        }
    }
    TwoWay::fit(cells.len(), &obs)
}
