//! Disturbed trials: the ones the runner flagged because the monitor saw
//! noise around them (steal, other processes' CPU, the clock moving:
//! `TrialRecord::disturbed`, docs/monitor.md "Noise"). They stay in the
//! statistics by default; [`Run::exclude_disturbed`] (`[trials]
//! exclude_disturbed = true`, `tare report --exclude-disturbed`) moves them
//! out, into [`Run::excluded`], so reports can still list them.

use std::collections::BTreeMap;

use serde::Serialize;
use tare_record::TrialRecord;

use crate::run::Run;

/// One disturbed trial, for reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DisturbedTrial {
    pub cell: String,
    pub trial: u32,
    /// Its position in the run's execution order.
    pub order: u64,
    pub reasons: Vec<String>,
    /// Left out of the statistics.
    pub excluded: bool,
}

impl Run {
    /// Moves every disturbed trial out of [`Run::trials`] into
    /// [`Run::excluded`] and says how many it moved (again: none).
    pub fn exclude_disturbed(&mut self) -> usize {
        let (out, kept): (Vec<TrialRecord>, Vec<TrialRecord>) = std::mem::take(&mut self.trials)
            .into_iter()
            .partition(|t| t.disturbed.as_ref().is_some_and(|r| !r.is_empty()));
        self.trials = kept;
        let n = out.len();
        self.excluded.extend(out);
        n
    }

    /// Every disturbed trial, kept or excluded, in execution order.
    pub fn disturbed(&self) -> Vec<DisturbedTrial> {
        let kept = self.trials.iter().map(|t| (t, false));
        let out = self.excluded.iter().map(|t| (t, true));
        let mut v: Vec<DisturbedTrial> = kept
            .chain(out)
            .filter_map(|(t, excluded)| {
                let reasons = t.disturbed.as_ref().filter(|r| !r.is_empty())?;
                Some(DisturbedTrial {
                    cell: t.cell.clone(),
                    trial: t.trial,
                    order: t.order,
                    reasons: reasons.clone(),
                    excluded,
                })
            })
            .collect();
        v.sort_by_key(|d| d.order);
        v
    }

    /// Per cell: (disturbed trials, all its trials), for cells with any
    /// disturbed trial, kept or excluded.
    pub fn disturbed_per_cell(&self) -> BTreeMap<String, (usize, usize)> {
        let mut all: BTreeMap<&str, usize> = BTreeMap::new();
        for t in self.trials.iter().chain(&self.excluded) {
            *all.entry(&t.cell).or_default() += 1;
        }
        let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for d in self.disturbed() {
            let total = all.get(d.cell.as_str()).copied().unwrap_or(0);
            out.entry(d.cell).or_insert((0, total)).0 += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(cell: &str, n: u32, order: u64, rps: f64, reasons: &[&str]) -> TrialRecord {
        TrialRecord {
            cell: cell.into(),
            factors: [("placement".to_string(), cell.replace("placement=", ""))].into(),
            trial: n,
            order,
            result: Some(tare_record::LoadResult {
                requests: (rps * 2.0) as u64,
                duration_s: 2.0,
                rps: Some(rps),
                ..Default::default()
            }),
            disturbed: (!reasons.is_empty())
                .then(|| reasons.iter().map(|r| r.to_string()).collect()),
            ..TrialRecord::default()
        }
    }

    #[test]
    fn exclusion_drops_exactly_the_flagged_trials() {
        let steal = ["steal 6.1% of CPU"];
        let mut run = Run::from_trials(vec![
            trial("placement=native", 1, 0, 1000.0, &[]),
            trial("placement=docker", 1, 1, 800.0, &[]),
            trial("placement=native", 2, 2, 400.0, &steal),
            trial("placement=docker", 2, 3, 810.0, &[]),
            trial("placement=native", 3, 4, 1010.0, &[]),
            trial(
                "placement=docker",
                3,
                5,
                790.0,
                &["other processes 0.34 cores"],
            ),
            trial("placement=native", 4, 6, 990.0, &[]),
        ]);
        let before = run.cells();
        assert_eq!(before[0].trials, 4, "kept by default");
        assert_eq!(
            run.disturbed_per_cell(),
            BTreeMap::from([
                ("placement=docker".to_string(), (1, 3)),
                ("placement=native".to_string(), (1, 4)),
            ])
        );
        assert_eq!(run.exclude_disturbed(), 2);
        assert_eq!(run.exclude_disturbed(), 0, "once");
        let after = run.cells();
        let samples = |c: &crate::CellStats| c.throughput_samples.clone();
        assert_eq!(samples(&after[0]), [1000.0, 1010.0, 990.0]);
        assert_eq!(samples(&after[1]), [800.0, 810.0]);
        assert!(after[0].throughput.median > before[0].throughput.median);
        // Still listed, now as excluded; the per-cell counts do not change.
        let d = run.disturbed();
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].cell.as_str(), d[0].trial), ("placement=native", 2));
        assert!(d.iter().all(|d| d.excluded));
        assert_eq!(d[0].reasons, steal);
        assert_eq!(run.disturbed_per_cell()["placement=native"], (1, 4));
    }
}
