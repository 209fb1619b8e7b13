//! Measurement behind a trait (after hyperfine's `Executor`; ARCHITECTURE.md, "Testing"): the
//! runner's scheduling, resume and record writing only ever talk to an
//! [`Executor`], so they are tested with `crate::mock::MockExecutor`
//! deterministically, and the real one ([`crate::real`]) deploys targets
//! with `tare-deploy` and loads them with `tare-http` / `tare-pg`.

use serde::{Deserialize, Serialize};
use tare_record::LoadResult;

use crate::experiment::{Cell, LoadSettings};
use crate::observer::LiveProgress;

/// Why a deployment or a load failed: one line, recorded in the trial.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExecError(pub String);

impl ExecError {
    pub fn new(msg: impl std::fmt::Display) -> Self {
        ExecError(msg.to_string())
    }
}

/// Deploys cells.
pub trait Executor {
    /// Readies what the run needs beyond this machine (remote hosts: tare
    /// installed and checked, clocks measured), before any load; its
    /// facts go into the provenance. A failure is one line and ends the
    /// run before it starts.
    fn prepare(&mut self) -> Result<serde_json::Value, ExecError> {
        Ok(serde_json::Value::Null)
    }

    /// Whether this machine can run `cell` at all (Docker reachable, nginx
    /// installed, ...). `Err(reason)` skips the cell with a one-line note:
    /// a missing placement is not a failed trial.
    fn can_run(&mut self, cell: &Cell) -> Result<(), String>;

    /// Starts the target as the cell says, ready for load.
    fn deploy(&mut self, cell: &Cell) -> Result<Box<dyn RunningCell>, ExecError>;

    /// The fairness check over the facts of one deployment per cell: what
    /// differs between cells besides the factors under test.
    fn fairness(&mut self, facts: &[(Cell, serde_json::Value)]) -> Vec<Finding>;
}

/// One deployed cell.
pub trait RunningCell {
    /// What this deployment is (binary, version, config hash, limits, ...),
    /// as JSON, for the fairness check.
    fn facts(&self) -> serde_json::Value;

    /// Readies the server for one trial before its warm-up, as the study
    /// an engine reproduces did between runs (redis: `FLUSHALL`, then the
    /// keys GET reads): what was done, for `TrialRecord::prepared`.
    fn prepare(&mut self, _settings: &LoadSettings) -> Result<Option<String>, ExecError> {
        Ok(None)
    }

    /// Applies load with `settings`. `measure = false` is a warm-up: the
    /// result is thrown away, so an executor may skip building it.
    fn load(&mut self, settings: &LoadSettings, measure: bool) -> Result<LoadResult, ExecError>;

    /// [`RunningCell::load`], telling `progress` how far it got while it
    /// runs, where its generators report that (remote ones do).
    fn load_observed(
        &mut self,
        settings: &LoadSettings,
        measure: bool,
        _progress: &mut dyn FnMut(&LiveProgress),
    ) -> Result<LoadResult, ExecError> {
        self.load(settings, measure)
    }

    /// Resource monitoring of the last measured load (`TrialRecord::monitor`),
    /// if the executor monitors.
    fn take_monitor(&mut self) -> Option<serde_json::Value> {
        None
    }

    /// `Ok` while the deployment still serves: its server alive, not
    /// stopped, answering its readiness probe; else why not
    /// (`server exited with signal 9`). Asked before a kept deployment's
    /// trial and after every measured load (docs/experiments.md, "Failed
    /// trials").
    fn check(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Stops and removes the deployment.
    fn stop(self: Box<Self>) -> Result<(), ExecError>;
}

/// A difference between cells that is not a factor under test (the
/// fairness check's output, as `tare_deploy::fairness` reports it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What differs: `binary_sha256`, `config_sha256`, `nofile`, `log_fs`, ...
    pub fact: String,
    /// Each cell's value of that fact, `(cell id, value)`.
    pub values: Vec<(String, String)>,
    /// One line for people.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
