//! What can go wrong reading a run or analysing it; each message is one line
//! that names the file or the cell, because the CLI prints exactly this.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("run directory {0} does not exist")]
    NoRunDir(PathBuf),
    #[error("{0} is not a directory")]
    NotADir(PathBuf),
    #[error("{0} has no trials.jsonl: not a tare run directory")]
    NoTrials(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Attribution(#[from] AttributionError),
}

/// Why an attribution chain cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttributionError {
    #[error("an attribution chain needs at least two cells, got {0}")]
    TooShort(usize),
    #[error("attribution cell `{0}` is not in this run")]
    UnknownCell(String),
    #[error("attribution cell `{0}` has no successful trial")]
    NoResults(String),
    #[error("cell `{0}` is in the attribution chain twice")]
    Repeated(String),
    #[error(
        "attribution step {step} ({from} → {to}) changes {} factors ({}); each step must change exactly one",
        changed.len(),
        changed.join(", ")
    )]
    NotOneFactor {
        step: usize,
        from: String,
        to: String,
        changed: Vec<String>,
    },
    #[error(
        "attribution cells measure different things: `{first}` in {first_metric}, `{other}` in {other_metric}; a gap is split only within one metric"
    )]
    MixedMetrics {
        first: String,
        first_metric: String,
        other: String,
        other_metric: String,
    },
}
