//! [`TrialRecord`]: one trial of one cell of an experiment, as the runner
//! appends it to `trials.jsonl` in the run directory the moment it finishes.
//! Analysis and reports read these lines and nothing else.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::result::LoadResult;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// The run this trial belongs to (the run directory's id).
    pub run_id: String,
    /// Stable cell id: its factor levels, `key=value` joined by `,` in the
    /// experiment's factor order (e.g. `placement=native,access_log=off`).
    pub cell: String,
    /// The same levels as a map, for grouping by factor.
    pub factors: BTreeMap<String, String>,
    /// 1-based trial number within the cell.
    pub trial: u32,
    /// 0-based position in the run's execution order (interleaving is visible).
    pub order: u64,
    pub started_unix_s: f64,
    /// The load run's result; `None` when the trial failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<LoadResult>,
    /// Why the trial failed (the cell could not start, the load errored, ...).
    /// A failed trial never hides the results of the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Resource monitoring series and summaries (see docs), when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<serde_json::Value>,
}
