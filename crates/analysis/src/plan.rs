//! What analysis reads from the runner's `plan.json` and `findings.json`.
//!
//! The runner owns both files (`tare_runner::plan::Plan`); analysis cannot
//! depend on the runner (the runner calls analysis at the end of `tare run`),
//! so this is a *view*: only the fields analysis needs, each defaulted, so a
//! plan with more fields, or an older plan with fewer, still reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The parts of `plan.json` analysis uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanView {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub experiment: String,
    /// The target's name (`nginx`, `command`...); absent in older plans.
    #[serde(default)]
    pub target: Option<String>,
    /// The load settings as run (engine, connections, duration...), as the
    /// runner wrote them; absent in older plans.
    #[serde(default)]
    pub load: Option<serde_json::Value>,
    /// Every planned cell in the experiment's order: reports list cells in
    /// this order, and say why skipped ones have no trials.
    #[serde(default)]
    pub cells: Vec<PlannedCellView>,
    #[serde(default)]
    pub attribution: AttributionChain,
    /// The cell others are compared with when no chain says (the runner
    /// picks one in the reference placement).
    #[serde(default)]
    pub reference: Option<String>,
    /// Where the server and the generator ran (`[cpus]` resolved), as CPU
    /// lists; absent: not pinned.
    #[serde(default)]
    pub cpus: CpuSplit,
    #[serde(default)]
    pub trials: TrialsView,
}

/// `plan.json`'s `trials`: what analysis needs of the trial policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialsView {
    /// `[trials] exclude_disturbed`: leave flagged trials out of the statistics.
    #[serde(default)]
    pub exclude_disturbed: bool,
}

/// `plan.json`'s `cpus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub generator: Option<String>,
    /// The placement's helper processes (docker-proxy, fuse-overlayfs...).
    #[serde(default)]
    pub helpers: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlannedCellView {
    pub id: String,
    #[serde(default)]
    pub factors: BTreeMap<String, String>,
    /// Why this machine could not run the cell.
    #[serde(default)]
    pub skipped: Option<String>,
}

/// The ordered chain of cells for the attribution waterfall, baseline first:
/// each cell differs from the one before by exactly one factor. This is the
/// `attribution` object of `plan.json`: `{"chain": [cell ids],
/// "dropped": [cell ids skipped on this machine]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AttributionChain {
    #[serde(default)]
    pub chain: Vec<String>,
    /// Chain cells the runner could not run here; with any dropped, the
    /// remaining neighbours may differ by two factors and the chain is
    /// refused with that reason.
    #[serde(default)]
    pub dropped: Vec<String>,
    /// Steps split into their parts (`[attribution] split`): each a
    /// sub-chain from the step's first cell to its second.
    #[serde(default)]
    pub splits: Vec<StepSplit>,
}

/// One step of the chain split into its parts: `plan.json`'s
/// `attribution.splits[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSplit {
    /// The step's number in the chain (1: first cell → second).
    pub step: usize,
    /// Cell ids from the step's first cell to its second, one factor at a time.
    pub chain: Vec<String>,
}

/// A fairness finding: a difference between cells that no factor under test
/// explains (`tare_deploy::facts::Finding` as the runner writes it to
/// `findings.json`). Read leniently: plain strings and objects with only a
/// message are findings too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The fact that differs (`binary_sha256`, `log_fs`, ...), when known.
    #[serde(default)]
    pub fact: String,
    pub message: String,
    /// Each cell's value of the fact, `(cell id, value)`, when recorded.
    #[serde(default)]
    pub values: Vec<(String, String)>,
}

impl Finding {
    /// The fact's value in `cell`, when recorded.
    pub fn value_in(&self, cell: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(c, _)| c == cell)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads `findings.json`: an array of findings, or an object holding one
/// under `findings`. Anything else is `None` (the caller warns).
pub(crate) fn parse_findings(value: &serde_json::Value) -> Option<Vec<Finding>> {
    let list = match value {
        serde_json::Value::Array(list) => list,
        serde_json::Value::Object(map) => map.get("findings")?.as_array()?,
        _ => return None,
    };
    list.iter()
        .map(|item| match item {
            serde_json::Value::String(s) => Some(Finding {
                fact: String::new(),
                message: s.clone(),
                values: Vec::new(),
            }),
            serde_json::Value::Object(o) => {
                let text = |k: &str| o.get(k).and_then(|v| v.as_str()).map(str::to_string);
                Some(Finding {
                    fact: text("fact").unwrap_or_default(),
                    message: text("message").or_else(|| text("text"))?,
                    values: o
                        .get("values")
                        .and_then(|v| serde_json::from_value(v.clone()).ok())
                        .unwrap_or_default(),
                })
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runner_plan_reads_with_unknown_fields() {
        let plan: PlanView = serde_json::from_value(json!({
            "run_id": "r1", "experiment": "quick", "seed": 7, "target": "serve",
            "cells": [{"id": "placement=native", "factors": {"placement": "native"}},
                      {"id": "placement=docker-host", "factors": {"placement": "docker-host"},
                       "skipped": "docker is not running"}],
            "rounds": [["placement=native"]],
            "attribution": {"chain": ["placement=native", "placement=docker-host"]}
        }))
        .unwrap();
        assert_eq!(plan.cells.len(), 2);
        assert_eq!(
            plan.cells[1].skipped.as_deref(),
            Some("docker is not running")
        );
        assert_eq!(plan.attribution.chain.len(), 2);
        assert!(plan.attribution.dropped.is_empty());
    }

    #[test]
    fn findings_in_every_shape_the_runner_may_write() {
        let deploy_shape =
            json!([{"fact": "log_fs", "values": [["a", "ext4"]], "message": "log_fs differs"}]);
        let f = parse_findings(&deploy_shape).unwrap();
        assert_eq!(
            (f[0].fact.as_str(), f[0].message.as_str()),
            ("log_fs", "log_fs differs")
        );
        assert_eq!(f[0].value_in("a"), Some("ext4"));
        assert_eq!(f[0].value_in("b"), None);
        let wrapped = json!({"findings": ["binary differs"]});
        assert_eq!(
            parse_findings(&wrapped).unwrap()[0].message,
            "binary differs"
        );
        assert!(parse_findings(&json!(42)).is_none());
        assert!(parse_findings(&json!([{"fact": "x"}])).is_none());
    }
}
