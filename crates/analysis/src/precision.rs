//! How precisely a run has measured what it was asked, for the runner's
//! stopping rule (`[trials] precision = "3%"`: rounds continue until the
//! worst half-width is at most the target, within the time budget).
//!
//! With an attribution chain, the quantities are the steps' changes (paired
//! t intervals) and the parts of the steps it splits; without one, the
//! cells' throughput levels (drift removed).
//! Each is the interval's half-width relative to its estimate: 0.031 for
//! ±3.1% (for a change, relative to the ratio new/old, so a +176% step at
//! [+174%, +183%] is ±1.6%); with `precision = "5 points"`, the half-width
//! of each step's share of the gap instead, in points of the gap. The parts
//! of a split step count as steps. docs/analysis.md, "Precision".

use serde::{Deserialize, Serialize};

use crate::attribution::{attribution_of_cells, parts_of_gap, Attribution};
use crate::run::Run;

/// What a precision target is a half-width of (`[trials] precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrecisionUnit {
    /// `"3%"`: each step's (and part's) change, relative to its ratio; each
    /// cell's level without a chain.
    #[default]
    Change,
    /// `"5 points"`: each step's (and part's) share of the chain's gap, in
    /// points of the gap: seed 000's unit ("~30-40%", docs/studies.md).
    Share,
}

/// One measured quantity's precision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrecisionItem {
    /// What it is: `step 2 (config: default → tuned)`, `step 4 part 2
    /// (storage: image → host-path)`, or a cell id.
    pub label: String,
    /// Half the 95% interval relative to the estimate; `None` while there
    /// is no interval yet (fewer than two rounds): not yet precise at all.
    pub half_width: Option<f64>,
    /// Half the 95% interval of the step's share of the chain's gap, as a
    /// fraction of the gap (0.05: ±5 points); `None` for a cell, and while
    /// the interval is unbounded (the gap not yet significant).
    #[serde(default)]
    pub share_half_width: Option<f64>,
}

impl PrecisionItem {
    /// The half-width in `unit`.
    pub fn in_unit(&self, unit: PrecisionUnit) -> Option<f64> {
        match unit {
            PrecisionUnit::Change => self.half_width,
            PrecisionUnit::Share => self.share_half_width,
        }
    }
}

/// Every quantity's precision and the worst of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    pub items: Vec<PrecisionItem>,
}

impl Precision {
    /// The least precise item in `unit` (one with no interval counts as
    /// worst); `None` when there is nothing to measure yet.
    pub fn worst(&self, unit: PrecisionUnit) -> Option<&PrecisionItem> {
        self.items.iter().max_by(|a, b| {
            let key = |i: &PrecisionItem| i.in_unit(unit).unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b))
        })
    }

    /// Whether every item's half-width in `unit` is at most `target` (0.03
    /// for 3%, or for 3 points); false when there is nothing to measure.
    pub fn meets(&self, target: f64, unit: PrecisionUnit) -> bool {
        !self.items.is_empty()
            && self
                .items
                .iter()
                .all(|i| i.in_unit(unit).is_some_and(|h| h <= target))
    }
}

/// The precision of `run`: its chain's steps (`run.chain()`) and the parts
/// of the steps it splits, or its cells when it has no chain or the chain
/// cannot be computed yet.
pub fn precision(run: &Run) -> Precision {
    let cells = run.cells();
    if let Some(chain) = run.chain() {
        if let Ok(a) = attribution_of_cells(&cells, chain) {
            let mut items = steps(&a, |i| format!("step {i}"));
            for split in run.splits() {
                let Ok(parts) = attribution_of_cells(&cells, &split.chain) else {
                    continue;
                };
                let of_gap = parts_of_gap(&cells, chain, &split.chain);
                let mut part_items = steps(&parts, |i| format!("step {} part {i}", split.step));
                for (k, item) in part_items.iter_mut().enumerate() {
                    item.share_half_width = of_gap
                        .as_ref()
                        .and_then(|g| g.get(k)?.ci)
                        .map(|(lo, hi)| (hi - lo) / 2.0);
                }
                items.extend(part_items);
            }
            return Precision { items };
        }
    }
    Precision {
        items: cells
            .into_iter()
            .map(|c| PrecisionItem {
                half_width: match c.level {
                    Some(l) => Some(l.relative_spread()),
                    None if c.ok() >= 2 => Some(c.throughput.relative_spread()),
                    None => None,
                },
                label: c.cell,
                share_half_width: None,
            })
            .collect(),
    }
}

/// One item per step of `a` after its baseline, named by `name(i)` and the
/// factor it changes.
fn steps(a: &Attribution, name: impl Fn(usize) -> String) -> Vec<PrecisionItem> {
    a.steps
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, s)| PrecisionItem {
            label: match &s.change {
                Some(c) => format!("{} ({}: {} → {})", name(i), c.factor, c.from, c.to),
                None => name(i),
            },
            half_width: s.vs_previous.and_then(|v| v.relative_half_width()),
            share_half_width: s.share_ci.map(|(lo, hi)| (hi - lo) / 2.0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::StepSplit;
    use crate::synthetic::{plan, seed000_cells, trials, SynthCell};

    #[test]
    fn more_rounds_are_more_precise_and_the_worst_is_reported() {
        let cells = seed000_cells(0.04);
        let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
        let at = |n: u32| {
            let mut run = Run::from_trials(trials("p", &cells, n, 7));
            run.plan = Some(plan("p", &cells, &chain));
            precision(&run)
        };
        let (p3, p10) = (at(3), at(10));
        assert_eq!(p3.items.len(), 4);
        let change = PrecisionUnit::Change;
        let w3 = p3.worst(change).unwrap().half_width.unwrap();
        let w10 = p10.worst(change).unwrap().half_width.unwrap();
        assert!(w10 < w3, "{w3} {w10}");
        assert!(p3.items.iter().all(|i| i.half_width.unwrap() <= w3));
        assert!(p10.meets(w10, change) && !p10.meets(w10 * 0.99, change));
        // One round: no interval anywhere, never precise enough.
        let p1 = at(1);
        assert!(p1.worst(change).unwrap().half_width.is_none() && !p1.meets(1.0, change));
        // No chain: the cells' levels.
        let run = Run::from_trials(trials("p", &cells, 5, 7));
        let p = precision(&run);
        assert_eq!(p.items.len(), 5);
        assert!(p.items.iter().all(|i| i.half_width.is_some()));
        // Cells have no share: a points target is never met without a chain.
        assert!(!p.meets(1.0, PrecisionUnit::Share));
    }

    /// Seed 000's chain with its last step split through two more cells:
    /// the parts are items too, and in points each item is the half-width
    /// of its share of the whole gap, which more rounds narrow.
    #[test]
    fn split_parts_count_and_points_are_shares_of_the_gap() {
        let mut cells = seed000_cells(0.03);
        let (host, native) = (cells[3].id(), cells[4].id());
        let f = |k: &str| {
            cells[3]
                .factors
                .iter()
                .find(|(n, _)| n == k)
                .unwrap()
                .1
                .clone()
        };
        let (config, log) = (f("config"), f("access_log"));
        let mid = SynthCell::new(
            &[
                ("placement", "docker-host"),
                ("config", &config),
                ("access_log", &log),
                ("storage", "host-path"),
            ],
            37_000.0,
            0.03,
        );
        cells.push(mid.clone());
        let chain: Vec<String> = cells[..5].iter().map(|c| c.id()).collect();
        let at = |n: u32| {
            let mut run = Run::from_trials(trials("p", &cells, n, 11));
            let mut plan = plan("p", &cells, &chain);
            plan.attribution.splits = vec![StepSplit {
                step: 4,
                chain: vec![host.clone(), mid.id(), native.clone()],
            }];
            run.plan = Some(plan);
            precision(&run)
        };
        let (p3, p12) = (at(3), at(12));
        assert_eq!(p3.items.len(), 6, "{:?}", p3.items);
        assert!(
            p3.items[4].label.starts_with("step 4 part 1 (storage"),
            "{}",
            p3.items[4].label
        );
        assert!(
            p3.items[5].label.starts_with("step 4 part 2"),
            "{}",
            p3.items[5].label
        );
        let share = PrecisionUnit::Share;
        for p in [&p3, &p12] {
            assert!(p
                .items
                .iter()
                .all(|i| i.half_width.is_some() && i.share_half_width.is_some()));
        }
        let (w3, w12) = (
            p3.worst(share).unwrap().share_half_width.unwrap(),
            p12.worst(share).unwrap().share_half_width.unwrap(),
        );
        assert!(w12 < w3 && w3 < 1.0, "{w3} {w12}");
        assert!(p12.meets(w12, share) && !p12.meets(w12 * 0.99, share));
    }
}
