//! `tare compare`: two runs side by side, as benchstat compares two sets of
//! benchmark results: per cell present in both, old and new levels with
//! their intervals, the change with its interval, the p-value, and `~` when
//! the difference is not significant.
//!
//! Two runs share no rounds, so nothing pairs: the change is the ratio of
//! geometric means with Welch's t interval on log values, whose spread
//! includes each run's drift (a re-run lands on another day's machine).

use serde::{Deserialize, Serialize};

use crate::cell::CellStats;
use crate::run::Run;
use crate::stats::{welch_contrast, Contrast};

/// One cell measured in both runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub cell: String,
    pub old: CellStats,
    pub new: CellStats,
    /// New throughput relative to old (Welch, unpaired).
    pub throughput: Contrast,
    /// New p99 latency relative to old.
    pub p99: Contrast,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub old_run: String,
    pub new_run: String,
    /// Cells in both runs, in the old run's order.
    pub rows: Vec<CompareRow>,
    /// Cells with results in only one of the runs.
    pub only_old: Vec<String>,
    pub only_new: Vec<String>,
    /// Geometric means over `rows` of each cell's printed throughput (its
    /// level, else its median; benchstat's `geomean` line): one number for
    /// "did the whole run move"; `None` when the rows' primary metrics
    /// differ (IOPS beside GFLOP/s).
    pub throughput_geomean: Option<(f64, f64)>,
    pub p99_geomean: Option<(f64, f64)>,
}

/// Compares `new` against `old`, matching cells by id.
pub fn compare(old: &Run, new: &Run) -> Comparison {
    let old_cells = old.cells();
    let new_cells = new.cells();
    let mut rows = Vec::new();
    let mut only_old = Vec::new();
    for o in &old_cells {
        let Some(n) = new_cells.iter().find(|n| n.cell == o.cell) else {
            only_old.push(o.cell.clone());
            continue;
        };
        let (Some(throughput), Some(p99)) = (
            welch_contrast(&o.throughput_samples, &n.throughput_samples),
            welch_contrast(&o.p99_samples_us, &n.p99_samples_us),
        ) else {
            continue;
        };
        rows.push(CompareRow {
            cell: o.cell.clone(),
            old: o.clone(),
            new: n.clone(),
            throughput,
            p99,
        });
    }
    let only_new = new_cells
        .iter()
        .filter(|n| !old_cells.iter().any(|o| o.cell == n.cell))
        .map(|n| n.cell.clone())
        .collect();
    let geomean_of = |f: fn(&CellStats) -> f64| {
        Some((
            geomean(rows.iter().map(|r| f(&r.old)))?,
            geomean(rows.iter().map(|r| f(&r.new)))?,
        ))
    };
    // A geomean over IOPS and GFLOP/s (or over a rate and a latency,
    // which move in opposite directions) says nothing: one metric only.
    let one_metric = rows.iter().all(|r| {
        r.old.measure() == rows[0].old.measure() && r.new.measure() == rows[0].old.measure()
    });
    Comparison {
        old_run: old.run_id.clone(),
        new_run: new.run_id.clone(),
        throughput_geomean: if one_metric {
            geomean_of(|c| c.throughput_shown().median)
        } else {
            None
        },
        p99_geomean: geomean_of(|c| c.p99_shown().median),
        rows,
        only_old,
        only_new,
    }
}

/// Geometric mean of positive values; `None` if there are none or any is
/// not positive (a zero throughput has no logarithm).
fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        if v <= 0.0 || !v.is_finite() {
            return None;
        }
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_of_ratios() {
        assert!((geomean([2.0, 8.0].into_iter()).unwrap() - 4.0).abs() < 1e-12);
        assert!(geomean([2.0, 0.0].into_iter()).is_none());
        assert!(geomean(std::iter::empty()).is_none());
    }
}
