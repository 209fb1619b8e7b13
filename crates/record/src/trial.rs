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
    /// Why the monitor calls this trial disturbed (`steal 6.1% of CPU`,
    /// `other processes 0.34 cores (cc1plus 0.30)`: docs/monitor.md,
    /// "Noise"); absent when it was clean or not monitored. A disturbed
    /// trial is kept: analysis drops it only when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<Vec<String>>,
    /// What the engine did to the server before this trial's warm-up, as
    /// the study it reproduces did between runs (redis: `FLUSHALL`, then
    /// the keys GET reads stored); absent when nothing was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<String>,
}

impl TrialRecord {
    /// The result analysis and reports may use: a trial that did not fail
    /// and completed something (docs/analysis.md, "Failed trials"). A
    /// failed or empty trial never feeds a ratio, a share or a level.
    pub fn usable(&self) -> Option<&LoadResult> {
        let r = self.result.as_ref().filter(|_| self.error.is_none())?;
        let counted = r.unit() != crate::result::Unit::Runs && r.metrics.is_empty();
        if counted && r.requests == 0 {
            return None;
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON contract (docs/json-schema.json, `$defs/trial`): a line
    /// written today, with or without `disturbed`, matches it; a line from
    /// before `disturbed` existed still reads.
    #[test]
    fn trial_lines_match_the_schema_and_old_lines_still_read() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/json-schema.json"
        ))
        .unwrap();
        let root: serde_json::Value = serde_json::from_str(&text).unwrap();
        let schema = serde_json::json!({
            "$schema": root["$schema"],
            "$defs": root["$defs"],
            "$ref": "#/$defs/trial",
        });
        let validator = jsonschema::validator_for(&schema).expect("schema compiles");
        let mut rec = TrialRecord {
            run_id: "r".into(),
            cell: "placement=native".into(),
            factors: [("placement".to_string(), "native".to_string())].into(),
            trial: 1,
            started_unix_s: 1.0,
            error: Some("load: refused".into()),
            ..TrialRecord::default()
        };
        let clean = serde_json::to_value(&rec).unwrap();
        assert!(clean.get("disturbed").is_none(), "absent when clean");
        rec.disturbed = Some(vec!["steal 6.1% of CPU".into()]);
        rec.prepared = Some("FLUSHALL".into());
        let flagged = serde_json::to_value(&rec).unwrap();
        for v in [&clean, &flagged] {
            let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{errors:?}");
        }
        let mut bad = flagged.clone();
        bad["disturbed"] = serde_json::json!("steal");
        assert!(!validator.is_valid(&bad), "a list of reasons, not a string");
        let mut bad = flagged.clone();
        bad["prepared"] = serde_json::json!(true);
        assert!(!validator.is_valid(&bad), "a sentence, not a flag");
        let old: TrialRecord = serde_json::from_value(clean).unwrap();
        assert_eq!((old.disturbed, old.prepared), (None, None));
        let back: TrialRecord = serde_json::from_value(flagged).unwrap();
        assert_eq!(back, rec);
    }
}
