//! How precisely a run has measured what it was asked, for the runner's
//! stopping rule (`[trials] precision = "3%"`: rounds continue until the
//! worst half-width is at most the target, within the time budget).
//!
//! With an attribution chain, the quantities are the steps' changes (paired
//! t intervals); without one, the cells' throughput levels (drift removed).
//! Each is the interval's half-width relative to its estimate: 0.031 for
//! ±3.1% (for a change, relative to the ratio new/old, so a +176% step at
//! [+174%, +183%] is ±1.6%). docs/analysis.md, "Precision".

use serde::{Deserialize, Serialize};

use crate::attribution::attribution;
use crate::run::Run;

/// One measured quantity's precision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrecisionItem {
    /// What it is: `step 2 (config: default → tuned)` or a cell id.
    pub label: String,
    /// Half the 95% interval relative to the estimate; `None` while there
    /// is no interval yet (fewer than two rounds): not yet precise at all.
    pub half_width: Option<f64>,
}

/// Every quantity's precision and the worst of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    pub items: Vec<PrecisionItem>,
}

impl Precision {
    /// The least precise item (one with no interval counts as worst);
    /// `None` when there is nothing to measure yet.
    pub fn worst(&self) -> Option<&PrecisionItem> {
        self.items.iter().max_by(|a, b| {
            let key = |i: &PrecisionItem| i.half_width.unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b))
        })
    }

    /// Whether every item's half-width is at most `target` (0.03 for 3%);
    /// false when there is nothing to measure.
    pub fn meets(&self, target: f64) -> bool {
        !self.items.is_empty()
            && self
                .items
                .iter()
                .all(|i| i.half_width.is_some_and(|h| h <= target))
    }
}

/// The precision of `run`: its chain's steps (`run.chain()`), or its cells
/// when it has no chain or the chain cannot be computed yet.
pub fn precision(run: &Run) -> Precision {
    if let Some(a) = run.chain().and_then(|c| attribution(run, c).ok()) {
        return Precision {
            items: a
                .steps
                .iter()
                .enumerate()
                .skip(1)
                .map(|(i, s)| PrecisionItem {
                    label: match &s.change {
                        Some(c) => format!("step {i} ({}: {} → {})", c.factor, c.from, c.to),
                        None => format!("step {i}"),
                    },
                    half_width: s.vs_previous.and_then(|v| v.relative_half_width()),
                })
                .collect(),
        };
    }
    Precision {
        items: run
            .cells()
            .into_iter()
            .map(|c| PrecisionItem {
                half_width: match c.level {
                    Some(l) => Some(l.relative_spread()),
                    None if c.ok() >= 2 => Some(c.throughput.relative_spread()),
                    None => None,
                },
                label: c.cell,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{plan, seed000_cells, trials};

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
        let w3 = p3.worst().unwrap().half_width.unwrap();
        let w10 = p10.worst().unwrap().half_width.unwrap();
        assert!(w10 < w3, "{w3} {w10}");
        assert!(p3.items.iter().all(|i| i.half_width.unwrap() <= w3));
        assert!(p10.meets(w10) && !p10.meets(w10 * 0.99));
        // One round: no interval anywhere, never precise enough.
        let p1 = at(1);
        assert!(p1.worst().unwrap().half_width.is_none() && !p1.meets(1.0));
        // No chain: the cells' levels.
        let run = Run::from_trials(trials("p", &cells, 5, 7));
        let p = precision(&run);
        assert_eq!(p.items.len(), 5);
        assert!(p.items.iter().all(|i| i.half_width.is_some()));
    }
}
