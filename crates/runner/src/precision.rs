//! Stopping at a precision (`[trials] precision`): after each round, the
//! run directory is read back and analysed as `tare report` analyses it
//! ([`tare_analysis::precision`]: each attribution step's change and each
//! part of a split step, or each cell's level without a chain; with a
//! target in points, each step's and part's share of the gap), and the
//! widest interval is compared with the target. Reading the run back, rather than keeping a second copy of
//! the statistics here, means the rule and the report never disagree.

use std::path::Path;

use tare_analysis::PrecisionUnit;

/// The interval furthest from the target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Widest {
    /// What it is the interval of: `step 2 (config: default → tuned)` or a
    /// cell id.
    pub label: String,
    /// Half the interval's width in the target's unit (0.031 for ±3.1%,
    /// or ±3.1 points of the gap); infinite while there is no interval yet.
    pub half_width: f64,
}

/// The widest interval in the run recorded in `dir`, or `None` when there
/// is nothing to measure yet (no cell with a successful trial).
pub(crate) fn widest(dir: &Path, unit: PrecisionUnit) -> Option<Widest> {
    let run = tare_analysis::load_run(dir).ok()?;
    let precision = tare_analysis::precision(&run);
    let worst = precision.worst(unit)?;
    Some(Widest {
        label: worst.label.clone(),
        half_width: worst.in_unit(unit).unwrap_or(f64::INFINITY),
    })
}

/// `±3.1%` or `±3.1 points`: a half-width as the run notes say it.
pub(crate) fn said(half_width: f64, unit: PrecisionUnit) -> String {
    if !half_width.is_finite() {
        return "no interval yet".to_string();
    }
    match unit {
        PrecisionUnit::Change => format!("±{:.1}%", half_width * 100.0),
        PrecisionUnit::Share => format!("±{:.1} points", half_width * 100.0),
    }
}
