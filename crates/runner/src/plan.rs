//! The plan of a run (`plan.json`): which cells, which are skipped and why,
//! the seed, and the interleaved order of trials.
//!
//! Order: round *r* runs trial *r* of every cell, so slow drift of the
//! machine (heat, background jobs, frequency) spreads over all cells
//! instead of landing on whichever ran last. Within a round the order is a
//! seeded shuffle, so no cell always follows the same neighbour. The
//! shuffle uses our own SplitMix64 + Fisher-Yates rather than `rand`, so a
//! seed recorded today gives the same order with any future build.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tare_engine::splitmix::SplitMix64;

use crate::experiment::{CpuPlan, Experiment, PlacementKind, StepSplit, TrialPolicy};

/// Everything `--resume` needs besides the experiment file and the trials.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub run_id: String,
    pub experiment: String,
    /// The target's name (its recipe's: `nginx`, `command`...).
    pub target: String,
    /// The within-round shuffle seed.
    pub seed: u64,
    pub cells: Vec<PlannedCell>,
    /// The order of the fixed rounds (trial 1..=count), as cell ids. Adaptive
    /// rounds beyond `count` depend on the results, so they are decided as
    /// the run goes (with the same seed) and visible in each record's `order`.
    pub rounds: Vec<Vec<String>>,
    pub trials: TrialPolicy,
    /// The load settings as run, for people and scripts: the shared ones,
    /// `engine`, and the engine's table under its name. A snapshot only:
    /// `--resume` re-reads the experiment copy, not this.
    pub load: serde_json::Value,
    /// The attribution chain as cell ids, baseline first; cells skipped on
    /// this machine are left out (`attribution_dropped` says which).
    pub attribution: Attribution,
    /// The cell reports compare the others with when no chain says: the
    /// first that runs here in the reference placement (a plain process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Which CPUs the server and the generator were given (`[cpus]`
    /// resolved on this machine); absent sides were not pinned.
    #[serde(default)]
    pub cpus: CpuPlan,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Attribution {
    pub chain: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// Steps of `chain` split into their parts (`[attribution] split`), each
    /// a sub-chain from the step's first cell to its second; only splits
    /// whose every cell runs here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splits: Vec<StepSplit>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PlannedCell {
    pub id: String,
    /// Factor levels in the experiment's order.
    pub factors: BTreeMap<String, String>,
    /// Why this machine cannot run the cell; `None`: it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Plan {
    /// `skipped[i]`: why cell *i* cannot run here, if it cannot.
    pub fn new(run_id: &str, exp: &Experiment, seed: u64, skipped: &[Option<String>]) -> Plan {
        let cells: Vec<PlannedCell> = exp
            .cells
            .iter()
            .zip(skipped)
            .map(|(c, s)| PlannedCell {
                id: c.id.clone(),
                factors: c.levels.iter().cloned().collect(),
                skipped: s.clone(),
            })
            .collect();
        let runnable: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i].skipped.is_none())
            .collect();
        let rounds = (1..=exp.trials.count)
            .map(|r| {
                round_order(seed, r, &runnable)
                    .into_iter()
                    .map(|i| cells[i].id.clone())
                    .collect()
            })
            .collect();
        let is_skipped = |id: &String| cells.iter().any(|c| &c.id == id && c.skipped.is_some());
        // The first chain this machine can run whole; else the first, minus
        // what cannot run (analysis refuses it if neighbours now differ by two).
        let whole = exp
            .attribution
            .iter()
            .position(|ch| !ch.iter().any(is_skipped));
        let splits: Vec<StepSplit> = whole
            .and_then(|i| exp.splits.get(i))
            .map(|s| {
                s.iter()
                    .filter(|s| !s.chain.iter().any(is_skipped))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let (dropped, mut chain): (Vec<String>, Vec<String>) = match whole {
            Some(i) => (Vec::new(), exp.attribution[i].clone()),
            None => exp
                .attribution
                .first()
                .map(|ch| ch.iter().cloned().partition(is_skipped))
                .unwrap_or_default(),
        };
        if chain.len() < 2 {
            chain.clear();
        }
        let reference = exp
            .cells
            .iter()
            .zip(&cells)
            .find(|(c, p)| p.skipped.is_none() && c.placement() == PlacementKind::reference())
            .map(|(c, _)| c.id.clone());
        Plan {
            run_id: run_id.to_string(),
            experiment: exp.name.clone(),
            target: exp.target.kind().name().to_string(),
            seed,
            cells,
            rounds,
            trials: exp.trials.clone(),
            load: exp.load.snapshot(),
            attribution: Attribution {
                chain,
                dropped,
                splits,
            },
            reference,
            cpus: exp.cpus.here(),
        }
    }

    /// Indices of the cells that run on this machine.
    pub(crate) fn runnable(&self) -> Vec<usize> {
        (0..self.cells.len())
            .filter(|&i| self.cells[i].skipped.is_none())
            .collect()
    }
}

/// The order of round `round` (1-based) over `candidates` (cell indices):
/// a Fisher-Yates shuffle driven by SplitMix64 seeded with `seed` and the
/// round, so each round is reproducible on its own (resume needs no state).
pub(crate) fn round_order(seed: u64, round: u32, candidates: &[usize]) -> Vec<usize> {
    let mut out = candidates.to_vec();
    let mut rng = SplitMix64::new(seed ^ (round as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    for i in (1..out.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        out.swap(i, j);
    }
    out
}

/// A fresh seed when the experiment does not fix one: time and pid mixed.
pub(crate) fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    SplitMix64::new(nanos ^ ((std::process::id() as u64) << 32)).next_u64() >> 11
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_permutations_reproducible_from_the_seed() {
        let cells: Vec<usize> = (0..8).collect();
        for round in 1..5 {
            let a = round_order(42, round, &cells);
            let mut sorted = a.clone();
            sorted.sort();
            assert_eq!(sorted, cells);
            assert_eq!(a, round_order(42, round, &cells));
        }
        assert_ne!(round_order(42, 1, &cells), round_order(42, 2, &cells));
        assert_ne!(round_order(42, 1, &cells), round_order(43, 1, &cells));
    }
}
