//! [`Report`]: everything one run's report shows, computed once from a
//! [`Run`] and then handed to any [`Exporter`](crate::Exporter) (text today,
//! JSON for machines, HTML later), so every format shows the same numbers.

use std::path::PathBuf;

use serde::Serialize;
use tare_analysis::stats::Contrast;
use tare_analysis::{
    attribution, cell_contrast, Attribution, CellStats, Drift, FailedCell, Finding, Metric, Run,
};

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub run_id: String,
    pub dir: Option<PathBuf>,
    /// `provenance.json` as recorded.
    pub provenance: Option<serde_json::Value>,
    /// Where the server and the generator ran (`plan.json`'s `cpus`).
    pub cpus: tare_analysis::plan::CpuSplit,
    /// Cells with at least one successful trial, in the plan's order.
    pub cells: Vec<CellStats>,
    /// How fast each round ran against the run's average (the machine's
    /// drift, removed from the cells' levels); `None` when the run cannot
    /// be modelled.
    pub drift: Option<Drift>,
    /// Cells whose every trial failed.
    pub failed_cells: Vec<FailedCell>,
    /// Planned cells this machine could not run, with the reason.
    pub skipped_cells: Vec<(String, String)>,
    pub attribution: AttributionOutcome,
    /// Every cell's throughput relative to one reference cell (the "vs
    /// native" column of docs/studies.md, "Reference measurements"); `None`
    /// with fewer than two cells.
    pub vs_reference: Option<VsReference>,
    /// `None`: the run has no `findings.json` (fairness was not checked).
    pub findings: Option<Vec<Finding>>,
    /// What reading the run directory skipped.
    pub warnings: Vec<String>,
    /// Where the CPU went (the trials' resource monitoring), if monitored.
    pub resources: Option<crate::resources::Resources>,
    /// Disturbed trials (steal, other processes, frequency), kept or excluded.
    pub noise: crate::noise::Noise,
}

/// Throughput of each cell relative to a reference cell.
#[derive(Clone, Debug, Serialize)]
pub struct VsReference {
    /// The reference: the attribution chain's last cell (the goal the
    /// waterfall climbs to, typically native), else the first cell with a
    /// `native` level, else the first cell.
    pub cell: String,
    /// `(cell, its throughput against the reference's)`, in cell order,
    /// paired on the round when possible (`tare_analysis::cell_contrast`);
    /// the reference itself is left out. A cell whose primary metric is
    /// not the reference's is compared with its own metric's reference
    /// (`references`).
    pub contrasts: Vec<(String, Contrast)>,
    /// `(cell, metric)`: the reference of each other primary metric in the
    /// run (a run of fio and hpcc jobs has one for IOPS, one for GFLOP/s);
    /// those cells print `1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<(String, String)>,
}

/// What became of the attribution chain.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
// Built once per report: the size of the computed variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum AttributionOutcome {
    /// Neither the plan nor the command line names a chain.
    NoChain,
    /// A chain was named but cannot be computed (a step changes two factors,
    /// a cell has no results, ...).
    Refused {
        chain: Vec<String>,
        /// Chain cells the runner skipped on this machine.
        dropped: Vec<String>,
        reason: String,
    },
    Computed {
        chain: Vec<String>,
        /// Chain cells the runner skipped here; the chain went around them.
        dropped: Vec<String>,
        attribution: Attribution,
        /// Steps split into their parts (`[attribution] split`).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        splits: Vec<SplitOutcome>,
        /// Steps that also change a fact a split would measure (storage,
        /// seccomp, ...) and were not split.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        hidden: Vec<HiddenFactors>,
    },
}

/// One step of the chain measured in parts: its sub-chain's attribution
/// (each part's change, interval and share of the step), or why not.
#[derive(Clone, Debug, Serialize)]
pub struct SplitOutcome {
    /// The step's number in the chain.
    pub step: usize,
    pub chain: Vec<String>,
    #[serde(flatten)]
    pub parts: PartsOutcome,
    /// Each part's share of the whole chain's gap (seed 000's unit, beside
    /// the other steps' shares), paired over the rounds where every cell of
    /// the chain and the split succeeded; absent with fewer than two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_shares: Option<Vec<tare_analysis::GapShare>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
// Built once per split step: the size of the computed variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum PartsOutcome {
    Computed { attribution: Attribution },
    Refused { reason: String },
}

/// A chain step whose two cells differ in facts a split measures.
#[derive(Clone, Debug, Serialize)]
pub struct HiddenFactors {
    pub step: usize,
    /// The facts (`content_fs`, `seccomp`, ...) that differ between the
    /// step's two cells, with their two values.
    pub facts: Vec<(String, String, String)>,
}

/// Facts that `[attribution] split` measures as parts of a step (the
/// container's storage and seccomp; the runner's `experiment/split.rs`).
const SPLIT_FACTS: &[&str] = &["storage", "content_fs", "log_fs", "seccomp"];

/// Steps of `a` whose cells differ in a split fact, unless already split.
fn hidden_factors(
    a: &Attribution,
    findings: Option<&[Finding]>,
    splits: &[SplitOutcome],
) -> Vec<HiddenFactors> {
    let Some(findings) = findings else {
        return Vec::new();
    };
    a.steps
        .windows(2)
        .enumerate()
        .filter(|(i, _)| !splits.iter().any(|s| s.step == i + 1))
        .filter_map(|(i, w)| {
            let facts: Vec<(String, String, String)> = findings
                .iter()
                .filter(|f| SPLIT_FACTS.contains(&f.fact.as_str()))
                .filter_map(|f| {
                    let (from, to) = (f.value_in(&w[0].cell)?, f.value_in(&w[1].cell)?);
                    (from != to).then(|| (f.fact.clone(), from.to_string(), to.to_string()))
                })
                .collect();
            (!facts.is_empty()).then_some(HiddenFactors { step: i + 1, facts })
        })
        .collect()
}

impl Report {
    /// The report of `run`, with the attribution chain from its plan.
    pub fn new(run: &Run) -> Report {
        let chain = run.chain().map(<[String]>::to_vec);
        Report::build(run, chain)
    }

    /// The report of `run` along `chain` instead of the plan's.
    pub fn with_chain(run: &Run, chain: &[String]) -> Report {
        Report::build(run, Some(chain.to_vec()))
    }

    fn build(run: &Run, chain: Option<Vec<String>>) -> Report {
        let cells = run.cells();
        let attribution = match chain {
            None => AttributionOutcome::NoChain,
            Some(chain) => match attribution(run, &chain) {
                Ok(attribution) => {
                    // Splits belong to the plan's chain, not to one given
                    // on the command line.
                    let splits: Vec<SplitOutcome> = if run.chain() == Some(chain.as_slice()) {
                        run.splits()
                            .iter()
                            .map(|s| SplitOutcome {
                                step: s.step,
                                chain: s.chain.clone(),
                                parts: match tare_analysis::attribution(run, &s.chain) {
                                    Ok(attribution) => PartsOutcome::Computed { attribution },
                                    Err(e) => PartsOutcome::Refused {
                                        reason: e.to_string(),
                                    },
                                },
                                gap_shares: tare_analysis::parts_of_gap(&cells, &chain, &s.chain),
                            })
                            .collect()
                    } else {
                        Vec::new()
                    };
                    AttributionOutcome::Computed {
                        hidden: hidden_factors(&attribution, run.findings.as_deref(), &splits),
                        chain,
                        dropped: run.chain_dropped().to_vec(),
                        attribution,
                        splits,
                    }
                }
                Err(e) => AttributionOutcome::Refused {
                    chain,
                    dropped: run.chain_dropped().to_vec(),
                    reason: e.to_string(),
                },
            },
        };
        let drift = tare_analysis::levels_drift(&cells);
        let chain_end = match &attribution {
            AttributionOutcome::Computed { chain, .. } => chain.last().cloned(),
            _ => None,
        };
        let chain_ids = match &attribution {
            AttributionOutcome::Computed { chain, .. } => Some(chain.clone()),
            _ => None,
        };
        Report {
            resources: crate::resources::resources(run, chain_ids.as_deref()),
            run_id: run.run_id.clone(),
            dir: run.dir.clone(),
            provenance: run.provenance.clone(),
            cpus: run
                .plan
                .as_ref()
                .map(|p| p.cpus.clone())
                .unwrap_or_default(),
            vs_reference: vs_reference(&cells, chain_end.or(run.reference().map(String::from))),
            cells,
            drift,
            failed_cells: run.failed_cells(),
            skipped_cells: run.skipped_cells(),
            attribution,
            findings: run.findings.clone(),
            warnings: run.warnings.clone(),
            noise: crate::noise::noise(run),
        }
    }
}

/// Every cell against one: the chain's end, else the plan's reference cell
/// (a plain process on the host), else the first cell.
fn vs_reference(cells: &[CellStats], reference: Option<String>) -> Option<VsReference> {
    if cells.len() < 2 {
        return None;
    }
    let reference = reference
        .and_then(|id| cells.iter().find(|c| c.cell == id))
        .unwrap_or(&cells[0]);
    let contrasts = cells
        .iter()
        .filter(|c| c.cell != reference.cell)
        .filter_map(|c| {
            let r = reference_for(cells, reference, c);
            if r.cell == c.cell {
                return None;
            }
            let k = cell_contrast(r, c, Metric::Throughput)?;
            Some((c.cell.clone(), k))
        })
        .collect();
    let references = cells
        .iter()
        .filter(|c| c.measure() != reference.measure())
        .map(|c| reference_for(cells, reference, c))
        .filter(|r| r.cell != reference.cell)
        .fold(Vec::new(), |mut v: Vec<(String, String)>, r| {
            let m = (r.cell.clone(), r.metric.clone());
            if !v.contains(&m) {
                v.push(m);
            }
            v
        });
    Some(VsReference {
        cell: reference.cell.clone(),
        contrasts,
        references,
    })
}

/// The cell `c` is compared with: among the cells that measure what it
/// measures (one metric, one unit: IOPS are never divided by GFLOP/s), the
/// one sharing the most factor levels with the reference (the same job on
/// the reference's placement), the earliest on a tie.
fn reference_for<'a>(
    cells: &'a [CellStats],
    reference: &'a CellStats,
    c: &'a CellStats,
) -> &'a CellStats {
    if c.measure() == reference.measure() {
        return reference;
    }
    let shared = |x: &CellStats| {
        reference
            .factors
            .iter()
            .filter(|(k, v)| x.factors.get(*k) == Some(*v))
            .count()
    };
    cells
        .iter()
        .filter(|x| x.measure() == c.measure())
        .fold(None::<&CellStats>, |best, x| match best {
            Some(b) if shared(b) >= shared(x) => Some(b),
            _ => Some(x),
        })
        .unwrap_or(c)
}

/// Factor names in the experiment's order, read from the cell ids
/// (`key=value,...` in factor order; the factor maps are sorted by name and
/// would lose that order). Shared by the text and HTML layouts.
pub(crate) fn factor_order(cells: &[CellStats]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for c in cells {
        let from_id = c
            .cell
            .split(',')
            .filter_map(|kv| kv.split_once('=').map(|(k, _)| k));
        for k in from_id.chain(c.factors.keys().map(String::as_str)) {
            if c.factors.contains_key(k) && !order.iter().any(|o| o == k) {
                order.push(k.to_string());
            }
        }
    }
    order
}
