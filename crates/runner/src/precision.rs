//! Stopping at a precision (`[trials] precision`): after each round, the
//! run directory is read back and analysed as `tare report` analyses it
//! ([`tare_analysis::precision`]: each attribution step's change, or each
//! cell's level without a chain), and the widest interval is compared with
//! the target. Reading the run back, rather than keeping a second copy of
//! the statistics here, means the rule and the report never disagree.

use std::path::Path;

/// The interval furthest from the target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Widest {
    /// What it is the interval of: `step 2 (config: default → tuned)` or a
    /// cell id.
    pub label: String,
    /// Half the interval's width relative to its estimate (0.031 for
    /// ±3.1%); infinite while there is no interval yet.
    pub half_width: f64,
}

/// The widest interval in the run recorded in `dir`, or `None` when there
/// is nothing to measure yet (no cell with a successful trial).
pub(crate) fn widest(dir: &Path) -> Option<Widest> {
    let run = tare_analysis::load_run(dir).ok()?;
    let precision = tare_analysis::precision(&run);
    let worst = precision.worst()?;
    Some(Widest {
        label: worst.label.clone(),
        half_width: worst.half_width.unwrap_or(f64::INFINITY),
    })
}
