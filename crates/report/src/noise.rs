//! Noise: which trials the monitor saw disturbed (steal, other processes'
//! CPU, the CPU clock moving: docs/monitor.md "Noise"), how many each cell
//! had, and whether the statistics keep them (the default) or leave them
//! out (`[trials] exclude_disturbed`, `tare report --exclude-disturbed`).

use std::collections::BTreeMap;

use serde::Serialize;
use tare_analysis::{DisturbedTrial, Run};
use tare_monitor::{FREQUENCY_MOVED_MAX, OTHERS_CORES_MAX, STEAL_FRACTION_MAX};

#[derive(Clone, Debug, Default, Serialize)]
pub struct Noise {
    /// Every disturbed trial with its reasons, in execution order.
    pub trials: Vec<DisturbedTrial>,
    /// Per cell with any: (disturbed trials, all its trials).
    pub per_cell: BTreeMap<String, (usize, usize)>,
    /// How many of them the statistics leave out.
    pub excluded: usize,
    /// Every recorded trial, kept or excluded.
    pub total: usize,
    /// Trials the monitor judged (their record has a disturbance).
    pub judged: usize,
    /// Of those, how many ran where the CPU frequency is not exposed.
    pub frequency_not_exposed: usize,
    /// The thresholds, for readers: steal share of the machine's CPU,
    /// other processes' cores, frequency move.
    pub thresholds: Thresholds,
}

#[derive(Clone, Debug, Serialize)]
pub struct Thresholds {
    pub steal_fraction: f64,
    pub others_cores: f64,
    pub frequency_moved: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            steal_fraction: STEAL_FRACTION_MAX,
            others_cores: OTHERS_CORES_MAX,
            frequency_moved: FREQUENCY_MOVED_MAX,
        }
    }
}

pub(crate) fn noise(run: &Run) -> Noise {
    let trials = run.disturbed();
    let mut judged = 0;
    let mut not_exposed = 0;
    for t in run.trials.iter().chain(&run.excluded) {
        let Some(d) = t.monitor.as_ref().and_then(|m| m.get("disturbance")) else {
            continue;
        };
        judged += 1;
        if d.get("frequency_moved")
            .is_none_or(serde_json::Value::is_null)
        {
            not_exposed += 1;
        }
    }
    Noise {
        excluded: trials.iter().filter(|t| t.excluded).count(),
        per_cell: run.disturbed_per_cell(),
        trials,
        total: run.trials.len() + run.excluded.len(),
        judged,
        frequency_not_exposed: not_exposed,
        thresholds: Thresholds::default(),
    }
}

impl Noise {
    /// The cells table's note for `cell`: `2/5 disturbed`, `(excluded)` when
    /// the statistics leave them out.
    pub(crate) fn cell_note(&self, cell: &str) -> Option<String> {
        let (d, n) = self.per_cell.get(cell)?;
        let excluded = self.trials.iter().any(|t| t.cell == cell && t.excluded);
        Some(format!(
            "{d}/{n} disturbed{}",
            if excluded { " (excluded)" } else { "" }
        ))
    }

    /// One line on what the statistics did with them.
    pub(crate) fn headline(&self) -> Option<String> {
        if self.judged == 0 && self.trials.is_empty() {
            return None;
        }
        let t = &self.thresholds;
        let limits = format!(
            "steal > {:.0}% of CPU, other processes > {:.2} cores, CPU frequency moved > {:.0}%",
            t.steal_fraction * 100.0,
            t.others_cores,
            t.frequency_moved * 100.0
        );
        let n = self.trials.len();
        let mut line = if n == 0 {
            format!(
                "none of the {} monitored trials disturbed ({limits})",
                self.judged
            )
        } else if self.excluded > 0 {
            format!(
                "{n} of {} trials disturbed ({limits}); {} excluded from the statistics",
                self.total, self.excluded
            )
        } else {
            format!(
                "{n} of {} trials disturbed ({limits}); kept in the statistics (`tare report --exclude-disturbed` leaves them out)",
                self.total
            )
        };
        if self.frequency_not_exposed > 0 {
            line.push_str("; CPU frequency not exposed on this machine");
        }
        Some(line)
    }
}
