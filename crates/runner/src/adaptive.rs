//! Adaptive trials: after the fixed trials, a cell whose results still
//! scatter gets more, up to a limit, as the Phoronix Test Suite does
//! (it re-runs a test while the standard deviation exceeds a threshold,
//! `DynamicRunCount` with `StandardDeviationThreshold`, 3.5% by default).
//! The measure here is the relative standard deviation (sample stdev /
//! mean) of the cell's throughput over its successful trials.

use tare_record::TrialRecord;

/// Sample relative standard deviation of `xs`; `None` with fewer than two.
pub(crate) fn rsd(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean)
}

/// Throughputs of the successful trials of `cell` numbered below `before`.
pub(crate) fn throughputs(records: &[TrialRecord], cell: &str, before: u32) -> Vec<f64> {
    let mut xs: Vec<(u32, f64)> = records
        .iter()
        .filter(|r| r.cell == cell && r.trial < before)
        .filter_map(|r| r.usable().map(|res| (r.trial, res.throughput())))
        .collect();
    xs.sort_by_key(|(t, _)| *t);
    xs.into_iter().map(|(_, x)| x).collect()
}

/// Whether `cell` needs trial `round` (beyond the fixed count): every
/// earlier trial succeeded (a failing cell is not retried forever) and
/// their spread is above `max_rsd`. Decided only from trials before
/// `round`, so a resumed run makes the same decision.
pub(crate) fn needs_more(records: &[TrialRecord], cell: &str, round: u32, max_rsd: f64) -> bool {
    let xs = throughputs(records, cell, round);
    if xs.len() + 1 < round as usize {
        return false;
    }
    rsd(&xs).is_some_and(|s| s > max_rsd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsd_of_known_samples() {
        // mean 10, sample stdev sqrt(((−1)^2 + 0 + 1^2)/2) = 1
        let s = rsd(&[9.0, 10.0, 11.0]).unwrap();
        assert!((s - 0.1).abs() < 1e-12, "{s}");
        assert_eq!(rsd(&[5.0]), None);
        assert_eq!(rsd(&[0.0, 0.0]), None);
    }
}
