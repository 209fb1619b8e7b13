//! Stopping at a precision (`[trials] precision`): after each round, the
//! run is analysed as `tare report` would analyse it, and the widest
//! interval that report would print is compared with the target.
//!
//! What is compared: with an attribution chain, each step's change interval
//! (the effects the experiment asks about); without one, each cell's
//! throughput interval. The half-width is in points of the change (a step
//! of +10% [+7%, +13%] is ±3 points), or relative to the cell's median.
//! Reading the run directory back, rather than keeping a second copy of the
//! statistics here, means the rule and the report can never disagree.

use std::path::Path;

/// The interval furthest from the target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Widest {
    /// What it is the interval of: `step placement: docker-host → native`
    /// or `cell placement=native`.
    pub label: String,
    /// Half the interval's width, as a fraction (0.031 for ±3.1 points);
    /// infinite when the interval cannot be computed yet.
    pub half_width: f64,
}

/// The widest interval in the run recorded in `dir`, or `None` when there
/// is nothing to measure yet (no cell with a successful trial).
pub(crate) fn widest(dir: &Path) -> Option<Widest> {
    let run = tare_analysis::load_run(dir).ok()?;
    if let Some(chain) = run.chain() {
        if let Ok(attribution) = tare_analysis::attribution(&run, chain) {
            return attribution
                .steps
                .iter()
                .filter_map(|s| {
                    let change = s.change.as_ref()?;
                    let half_width = s
                        .vs_previous
                        .and_then(|c| c.change_ci())
                        .map_or(f64::INFINITY, |(lo, hi)| (hi - lo) / 2.0);
                    Some(Widest {
                        label: format!("step {}: {} → {}", change.factor, change.from, change.to),
                        half_width,
                    })
                })
                .max_by(|a, b| a.half_width.total_cmp(&b.half_width));
        }
    }
    run.cells()
        .iter()
        .map(|c| Widest {
            label: format!("cell {}", c.cell),
            half_width: c.throughput.relative_spread(),
        })
        .max_by(|a, b| a.half_width.total_cmp(&b.half_width))
}
