//! The advisor's recommendations, each applied alone to the baseline config.

use std::path::Path;

use tare_nginx::advise::{self, LocalHost};
use tare_nginx::{parse, BuildOptions, ParseOptions, Payload, Status};

use crate::TuneError;

/// One recommendation as a complete config.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    /// Its level name in the experiment (the rule id, e.g. `worker-connections`).
    pub name: String,
    pub rule: String,
    pub priority: String,
    pub change: advise::Change,
    /// The baseline with only this change, as one file (includes spliced in).
    pub text: String,
}

/// The baseline and its candidates.
#[derive(Clone, Debug)]
pub(crate) struct CandidateSet {
    pub payload: Payload,
    /// The baseline rebuilt as one file, so every level is built the same way.
    pub baseline_text: String,
    pub candidates: Vec<Candidate>,
    /// Recommendations that need a person (`rule: title`).
    pub manual: Vec<String>,
}

fn build_one(payload: &Payload) -> String {
    let combined = tare_nginx::combine::combine(payload.clone());
    let statements = combined
        .config
        .first()
        .map(|c| c.parsed.clone())
        .unwrap_or_default();
    tare_nginx::build(
        &statements,
        &BuildOptions {
            header: false,
            ..BuildOptions::default()
        },
    ) + "\n"
}

/// Parses `config`, asks the advisor, and builds one config per applicable change.
pub(crate) fn prepare(config: &Path) -> Result<CandidateSet, TuneError> {
    let path = config
        .to_str()
        .ok_or_else(|| TuneError::Config(format!("{}: not a UTF-8 path", config.display())))?;
    if !config.is_file() {
        return Err(TuneError::Config(format!("{path}: no such file")));
    }
    let payload = parse(path, &ParseOptions::default());
    if payload.status == Status::Failed {
        let first = payload
            .errors
            .first()
            .map(|e| format!("{}:{}: {}", e.file, e.line.unwrap_or(0), e.error))
            .unwrap_or_else(|| "parse failed".into());
        return Err(TuneError::Config(format!(
            "cannot tune an invalid config: {first}"
        )));
    }
    let report = advise::advise(&payload, &LocalHost);
    let mut candidates = Vec::new();
    let mut manual = Vec::new();
    for a in report.advice {
        if a.change.is_manual() {
            manual.push(format!("{}: {}", a.rule, a.title));
            continue;
        }
        let mut p = payload.clone();
        if let Err(e) = a.change.apply(&mut p) {
            manual.push(format!("{}: {} (could not apply: {e})", a.rule, a.title));
            continue;
        }
        candidates.push(Candidate {
            name: a.rule.clone(),
            rule: a.rule,
            priority: a.priority.as_str().to_string(),
            change: a.change,
            text: build_one(&p),
        });
    }
    Ok(CandidateSet {
        baseline_text: build_one(&payload),
        payload,
        candidates,
        manual,
    })
}

/// The baseline with every kept change applied in turn; a change that no
/// longer applies after the others is reported and left out.
pub(crate) fn combine(
    set: &CandidateSet,
    kept: &[&Candidate],
) -> Result<(String, Vec<String>), TuneError> {
    let mut p = set.payload.clone();
    let mut skipped = Vec::new();
    for c in kept {
        let mut next = p.clone();
        match c.change.apply(&mut next) {
            Ok(()) => p = next,
            Err(e) => skipped.push(format!("{} left out of the combination: {e}", c.rule)),
        }
    }
    Ok((build_one(&p), skipped))
}
