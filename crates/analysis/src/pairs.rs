//! Two cells of one run compared, paired on the round when they can be:
//! the contrast every attribution step and every "vs ref" ratio uses
//! (docs/analysis.md, "Relative differences: paired on the round").

use crate::cell::CellStats;
use crate::stats::{paired_contrast, welch_contrast, Contrast};

/// Which of a cell's per-trial values to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Throughput,
    P99,
}

/// `b` against `a`: paired on the rounds where both succeeded when there
/// are at least two such rounds, otherwise Welch's unpaired contrast of
/// their trials (a run not in rounds, a cell with one trial); `None` when
/// either cell has no positive value.
pub fn cell_contrast(a: &CellStats, b: &CellStats, metric: Metric) -> Option<Contrast> {
    let pairs = paired_values(a, b, metric);
    if pairs.len() >= 2 {
        return paired_contrast(&pairs);
    }
    let samples = |c: &CellStats| match metric {
        Metric::Throughput => c.throughput_samples.clone(),
        Metric::P99 => c.p99_samples_us.clone(),
    };
    welch_contrast(&samples(a), &samples(b))
}

/// `(a, b)` values of the rounds where both cells succeeded, in round
/// order; empty when either cell has no rounds.
pub(crate) fn paired_values(a: &CellStats, b: &CellStats, metric: Metric) -> Vec<(f64, f64)> {
    let (Some(ra), Some(rb)) = (a.by_round(), b.by_round()) else {
        return Vec::new();
    };
    let pick = |x: &(u32, f64, f64)| match metric {
        Metric::Throughput => x.1,
        Metric::P99 => x.2,
    };
    let mut out: Vec<(u32, f64, f64)> = ra
        .iter()
        .filter_map(|x| {
            let y = rb.iter().find(|y| y.0 == x.0)?;
            Some((x.0, pick(x), pick(y)))
        })
        .collect();
    out.sort_by_key(|x| x.0);
    out.into_iter().map(|(_, a, b)| (a, b)).collect()
}
