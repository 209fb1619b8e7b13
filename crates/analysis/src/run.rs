//! A recorded run, read back from its directory: `trials.jsonl` (one
//! [`TrialRecord`] per line, appended as each trial ends), and beside it the
//! runner's `plan.json`, `provenance.json` and `findings.json`.
//!
//! Reading is forgiving where a run leaves marks, and says so: a truncated
//! *last* line (the runner was killed mid-write) is skipped with a warning;
//! a torn or corrupt line *inside* the file is skipped with a warning naming
//! its line, so the trial it held is not dropped silently and every other
//! trial still counts (one bad line never costs the whole run; `tare run
//! --resume` measures that trial again); a missing or unreadable side file
//! is a warning, since the trials alone still make a report.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tare_record::TrialRecord;

use crate::cell::CellStats;
use crate::error::AnalysisError;
use crate::plan::{parse_findings, Finding, PlanView};

/// Everything a report needs from one run directory.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Where it was read from (`None` for a run built in memory).
    pub dir: Option<PathBuf>,
    /// The run's id: from the plan, else from the trials, else the
    /// directory's name.
    pub run_id: String,
    /// Every trial in file order (duplicates resolved, see [`load_run`]).
    pub trials: Vec<TrialRecord>,
    pub plan: Option<PlanView>,
    /// `provenance.json` as written, shown in reports' headers.
    pub provenance: Option<serde_json::Value>,
    /// `findings.json`: `None` when the run has none (an older or
    /// hand-made run), so a report can tell "no findings" from "not checked".
    pub findings: Option<Vec<Finding>>,
    /// What reading skipped or could not use, one line each, for reports.
    pub warnings: Vec<String>,
    /// Disturbed trials left out of the statistics (`Run::exclude_disturbed`).
    pub excluded: Vec<TrialRecord>,
}

/// A cell with trials but no successful one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedCell {
    pub cell: String,
    pub factors: BTreeMap<String, String>,
    pub trials: usize,
    /// The first failed trial's error.
    pub error: String,
}

/// Reads a run directory; see the module doc for what is an error and what
/// is a warning.
pub fn load_run(dir: impl AsRef<Path>) -> Result<Run, AnalysisError> {
    let dir = dir.as_ref();
    if !dir.exists() {
        return Err(AnalysisError::NoRunDir(dir.to_path_buf()));
    }
    if !dir.is_dir() {
        return Err(AnalysisError::NotADir(dir.to_path_buf()));
    }
    let trials_path = dir.join("trials.jsonl");
    if !trials_path.is_file() {
        return Err(AnalysisError::NoTrials(dir.to_path_buf()));
    }
    let text = read(&trials_path)?;
    let mut warnings = Vec::new();
    let trials = parse_trials(&text, &mut warnings)?;

    let plan = side_file(dir, "plan.json", &mut warnings).and_then(|v| {
        serde_json::from_value::<PlanView>(v)
            .map_err(|e| warnings.push(format!("plan.json is not a plan ({e}); ignored")))
            .ok()
    });
    let provenance = side_file(dir, "provenance.json", &mut warnings);
    let findings = side_file(dir, "findings.json", &mut warnings).and_then(|v| {
        let parsed = parse_findings(&v);
        if parsed.is_none() {
            warnings.push("findings.json is not a list of findings; ignored".into());
        }
        parsed
    });

    let mut run = Run::from_trials(trials);
    run.dir = Some(dir.to_path_buf());
    run.warnings = warnings;
    run.provenance = provenance;
    run.findings = findings;
    if let Some(plan) = &plan {
        if !plan.run_id.is_empty() {
            run.run_id = plan.run_id.clone();
        }
    }
    run.plan = plan;
    if run
        .plan
        .as_ref()
        .is_some_and(|p| p.trials.exclude_disturbed)
    {
        run.exclude_disturbed();
    }
    if run.run_id.is_empty() {
        run.run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    Ok(run)
}

impl Run {
    /// A run from trials alone (the runner's in-memory view, tests).
    pub fn from_trials(trials: Vec<TrialRecord>) -> Run {
        Run {
            run_id: trials.first().map(|t| t.run_id.clone()).unwrap_or_default(),
            trials,
            ..Run::default()
        }
    }

    /// Per-cell statistics, in the plan's cell order, then any cell the plan
    /// does not name in the order its first trial ran.
    ///
    /// When the trials ran in rounds ([`Run::in_rounds`]), each cell also
    /// gets its level with the rounds' drift removed (`CellStats::level`).
    pub fn cells(&self) -> Vec<CellStats> {
        let in_rounds = self.in_rounds();
        let mut cells: Vec<CellStats> = self
            .cell_ids()
            .into_iter()
            .filter_map(|id| {
                let trials: Vec<&TrialRecord> =
                    self.trials.iter().filter(|t| t.cell == id).collect();
                let mut c = CellStats::from_trials(&id, &trials)?;
                if !in_rounds {
                    c.rounds = None;
                }
                Some(c)
            })
            .collect();
        crate::levels::fill(&mut cells);
        cells
    }

    /// How fast each round ran against the run's average, when the run
    /// can be modelled (docs/analysis.md, "Cell levels: drift removed").
    pub fn drift(&self) -> Option<crate::levels::Drift> {
        crate::levels::drift(&self.cells())
    }

    /// Whether the trials ran in rounds, so that trial `r` of every cell
    /// shared round `r`'s machine: every trial of round `r` ran before
    /// every trial of round `r + 1` (`TrialRecord::order`). Runs whose
    /// cells ran one after another (hand-made, or older runners) are not,
    /// and are analysed unpaired.
    pub fn in_rounds(&self) -> bool {
        let mut span: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for t in &self.trials {
            let s = span.entry(t.trial).or_insert((t.order, t.order));
            s.0 = s.0.min(t.order);
            s.1 = s.1.max(t.order);
        }
        span.values()
            .zip(span.values().skip(1))
            .all(|(a, b)| a.1 < b.0)
    }

    /// Cell ids with at least one trial, in report order.
    pub fn cell_ids(&self) -> Vec<String> {
        let mut first_order: HashMap<&str, u64> = HashMap::new();
        for t in &self.trials {
            let o = first_order.entry(&t.cell).or_insert(t.order);
            *o = (*o).min(t.order);
        }
        let mut ids: Vec<String> = Vec::new();
        if let Some(plan) = &self.plan {
            for c in &plan.cells {
                if first_order.contains_key(c.id.as_str()) {
                    ids.push(c.id.clone());
                }
            }
        }
        let mut rest: Vec<(&str, u64)> = first_order
            .iter()
            .filter(|(id, _)| !ids.iter().any(|i| i == *id))
            .map(|(id, o)| (*id, *o))
            .collect();
        rest.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
        ids.extend(rest.into_iter().map(|(id, _)| id.to_string()));
        ids
    }

    /// Cells whose every trial failed: they have no statistics, but a
    /// report must not hide them.
    pub fn failed_cells(&self) -> Vec<FailedCell> {
        let ok = self.cells();
        self.cell_ids()
            .into_iter()
            .filter(|id| !ok.iter().any(|c| &c.cell == id))
            .map(|id| {
                let trials: Vec<&TrialRecord> =
                    self.trials.iter().filter(|t| t.cell == id).collect();
                FailedCell {
                    factors: trials
                        .first()
                        .map(|t| t.factors.clone())
                        .unwrap_or_default(),
                    trials: trials.len(),
                    error: trials
                        .iter()
                        .find_map(|t| t.error.clone())
                        .unwrap_or_else(|| "nothing completed".into()),
                    cell: id,
                }
            })
            .collect()
    }

    /// Planned cells that this machine could not run, with the reason.
    pub fn skipped_cells(&self) -> Vec<(String, String)> {
        self.plan
            .iter()
            .flat_map(|p| &p.cells)
            .filter_map(|c| c.skipped.as_ref().map(|why| (c.id.clone(), why.clone())))
            .collect()
    }

    /// The cell the plan names as the reference for comparisons, if any.
    pub fn reference(&self) -> Option<&str> {
        self.plan.as_ref()?.reference.as_deref()
    }

    /// The attribution chain from the plan, if it names one.
    pub fn chain(&self) -> Option<&[String]> {
        let chain = &self.plan.as_ref()?.attribution.chain;
        (!chain.is_empty()).then_some(chain.as_slice())
    }

    /// Steps of the chain the plan splits into their parts.
    pub fn splits(&self) -> &[crate::plan::StepSplit] {
        self.plan
            .as_ref()
            .map(|p| p.attribution.splits.as_slice())
            .unwrap_or(&[])
    }

    /// Chain cells the runner dropped (skipped on this machine).
    pub fn chain_dropped(&self) -> &[String] {
        self.plan
            .as_ref()
            .map(|p| p.attribution.dropped.as_slice())
            .unwrap_or(&[])
    }
}

fn read(path: &Path) -> Result<String, AnalysisError> {
    std::fs::read_to_string(path).map_err(|source| AnalysisError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A JSON side file: absent is silent (older or hand-made runs), unreadable
/// or invalid is a warning.
fn side_file(dir: &Path, name: &str, warnings: &mut Vec<String>) -> Option<serde_json::Value> {
    let path = dir.join(name);
    if !path.exists() {
        return None;
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("cannot read {name} ({e}); ignored"));
            return None;
        }
    };
    serde_json::from_str(&text)
        .map_err(|e| warnings.push(format!("{name} is not valid JSON ({e}); ignored")))
        .ok()
}

/// Parses JSON lines: blank lines are ignored, an unparsable line is a
/// warning naming it (the last: incomplete; any other: torn); a (cell,
/// trial) recorded twice keeps its later line (a resumed run re-measured it).
fn parse_trials(text: &str, warnings: &mut Vec<String>) -> Result<Vec<TrialRecord>, AnalysisError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let mut trials: Vec<TrialRecord> = Vec::with_capacity(lines.len());
    let mut seen: HashMap<(String, u32), usize> = HashMap::new();
    for (k, (line, content)) in lines.iter().enumerate() {
        match serde_json::from_str::<TrialRecord>(content) {
            Ok(t) => match seen.get(&(t.cell.clone(), t.trial)) {
                Some(&i) => {
                    warnings.push(format!(
                        "trials.jsonl line {line}: cell `{}` trial {} recorded again; using the later record",
                        t.cell, t.trial
                    ));
                    trials[i] = t;
                }
                None => {
                    seen.insert((t.cell.clone(), t.trial), trials.len());
                    trials.push(t);
                }
            },
            Err(e) if k + 1 == lines.len() => warnings.push(format!(
                "trials.jsonl line {line} is incomplete (an interrupted run?); skipped: {e}"
            )),
            Err(e) => warnings.push(format!(
                "trials.jsonl line {line} is torn (not a trial record: {e}); skipped, the other trials kept"
            )),
        }
    }
    Ok(trials)
}
