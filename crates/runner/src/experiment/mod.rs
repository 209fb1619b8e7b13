//! The experiment file: what to measure, under which factor levels, with
//! which load, how many times. Parsed from TOML ([`raw`]), checked with
//! errors that name the file, line and key ([`validate`]), expanded into
//! [`Cell`]s. `docs/experiments.md` documents every key.

mod cpus;
pub(crate) mod error;
pub(crate) mod factor;
mod hosts;
mod image;
mod limits;
mod monitor;
mod raw;
mod service;
mod settings;
mod setup;
mod split;
mod validate;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_analysis::PrecisionUnit;
use tare_engine::Load;

use crate::engines::{ExperimentEngine, Table};

pub use cpus::{CpuChoice, CpuPlan, CpuPolicy, HelperChoice};
pub use error::ExperimentError;
pub(crate) use factor::FactorKind;
pub use hosts::Hosts;
pub use monitor::MonitorSettings;
pub(crate) use setup::Setup;
pub(crate) use split::StepSplit;
pub(crate) use tare_deploy::{PlacementKind, TargetKind};

/// The built-in quick experiment that `tare run` with no file runs.
pub(crate) const QUICK: &str = include_str!("../../../../examples/quick.toml");

/// A checked experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub description: Option<String>,
    /// Where it was read from (`<built-in quick>` for `QUICK`).
    pub path: PathBuf,
    /// The file's text, copied verbatim into the run directory.
    pub text: String,
    pub target: Target,
    /// The factors in the file's order, each with its canonical levels.
    pub factors: Vec<(FactorKind, Vec<String>)>,
    /// Every cell to run, in the file's order (product order or list order).
    pub cells: Vec<Cell>,
    pub load: LoadSettings,
    pub trials: TrialPolicy,
    /// Attribution chains as cell ids, baseline first: the chain, then its
    /// fallback (used when a cell of the chain cannot run on this machine).
    pub attribution: Vec<Vec<String>>,
    /// `[attribution] split = true`: each chain's container ↔ process steps
    /// split into their parts (aligned with `attribution`; empty without).
    pub splits: Vec<Vec<StepSplit>>,
    /// Which CPUs the server and the generator run on (`[cpus]`).
    pub cpus: CpuPolicy,
    /// Remote hosts, and which of them run the generators and the target.
    pub hosts: Hosts,
    /// `[monitor]`: whether every monitored trial is profiled, and how often.
    pub monitor: MonitorSettings,
}

/// Where a config variant's `file = ...` is looked for.
#[derive(Clone, Debug)]
pub enum ConfigSource {
    /// Relative to this directory (the experiment file's).
    RelativeTo(PathBuf),
    /// A run directory's `configs/NAME` copies (used by `--resume`, so a
    /// resumed run uses exactly the configs the run began with).
    RunDir(PathBuf),
}

impl Experiment {
    /// Reads and checks an experiment file.
    pub fn load(path: &Path) -> Result<Experiment, ExperimentError> {
        let text = limits::read_file(path).map_err(|cause| ExperimentError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Experiment::parse(&text, path, &ConfigSource::RelativeTo(dir))
    }

    /// The built-in quick experiment.
    pub fn quick() -> Experiment {
        Experiment::parse(
            QUICK,
            Path::new("<built-in quick>"),
            &ConfigSource::RelativeTo(PathBuf::from(".")),
        )
        .expect("the built-in quick experiment is valid (tested)")
    }

    /// Checks `text`; `path` is used in error messages and provenance.
    pub fn parse(
        text: &str,
        path: &Path,
        configs: &ConfigSource,
    ) -> Result<Experiment, ExperimentError> {
        validate::validate(text, path, configs)
    }

    pub fn cell(&self, id: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.id == id)
    }
}

/// The server under test, as `[target]` makes it.
#[derive(Clone, Debug)]
pub struct Target {
    /// The target as a value: its recipe and every setting it owns (its
    /// binary, port, protocol, variants, a user's command line).
    pub server: tare_deploy::Target,
    /// Container image; `None`: the image tare builds from the binary.
    pub image: Option<String>,
    /// The user rootless Podman runs as; `None`: tare's own `tare-rootless`.
    pub rootless_user: Option<String>,
    /// Config variants, in file order; empty: the target's defaults.
    pub configs: Vec<ConfigVariant>,
}

impl Target {
    /// Its recipe: what records name it by.
    pub fn kind(&self) -> TargetKind {
        self.server.kind
    }
}

/// One named config of the target, its text read when the file is loaded
/// (so a missing file fails at once, and the run dir keeps a copy).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConfigVariant {
    pub name: String,
    pub text: String,
}

/// A file the experiment names beyond configs (a request mix's URL or
/// requests file), read when the experiment is: the run directory keeps
/// a copy at `name` and the provenance its sha256.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Its place in the run directory (`inputs/load.http.urls`).
    pub name: String,
    /// The path as the experiment wrote it.
    pub written: String,
    pub text: String,
}

/// How load is applied in every trial (a cell's `connections` factor
/// overrides `connections`; see [`Cell::load_settings`]).
#[derive(Clone, Debug)]
pub struct LoadSettings {
    /// The engine `[load] engine` names (default: the target's), from
    /// `crate::engines::REGISTRY`.
    pub engine: &'static dyn ExperimentEngine,
    /// The shared settings of `[load]`, typed once. `warmup` is the
    /// runner's warm-up run before each measured one (its results thrown
    /// away: caches, connection pools and CPU frequency settle first);
    /// `duration` is always set.
    pub shared: Load,
    /// The engine's own table `[load.<engine>]`, checked.
    pub table: Arc<dyn Table>,
}

impl LoadSettings {
    /// The measured period of each trial.
    pub fn duration(&self) -> Duration {
        self.shared.duration.unwrap_or_default()
    }

    /// The settings as `plan.json` records them: the shared ones, the
    /// engine's name and its table under its name.
    pub fn snapshot(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.shared).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("engine".into(), self.engine.name().into());
            m.insert(self.engine.name().into(), self.table.snapshot());
        }
        v
    }
}

/// Which cells the rounds after `count` run when they continue to a
/// precision (`[trials] focus`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Focus {
    /// Every cell, every round.
    #[default]
    All,
    /// Only the cells the precision target is about: the attribution
    /// chains' cells and their splits' cells. The other cells keep their
    /// `count` trials, and the rounds are shorter, so a budget buys more
    /// of them where the steps' intervals are decided.
    Chain,
}

impl Focus {
    fn is_all(&self) -> bool {
        *self == Focus::All
    }
}

fn is_change(u: &PrecisionUnit) -> bool {
    *u == PrecisionUnit::Change
}

/// How many trials, in what order, with what pauses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialPolicy {
    /// Which cells the rounds `precision` adds run (after `count`).
    #[serde(default, skip_serializing_if = "Focus::is_all")]
    pub focus: Focus,
    /// Trials every cell gets.
    pub count: u32,
    /// Adaptive upper bound: a cell whose spread is above `max_rsd` after
    /// `count` trials gets more, up to `max` (equal to `count`: no adaptation).
    pub max: u32,
    /// Relative standard deviation of throughput (stdev / mean) under which
    /// a cell is considered settled.
    pub max_rsd: f64,
    /// Stop at a precision instead of a count: after `count` rounds, whole
    /// rounds continue until the widest interval tare prints (each
    /// attribution step's change, or each cell's throughput without a
    /// chain) has a half-width at most this fraction, `budget` is spent, or
    /// `max` rounds ran. Replaces the per-cell `max_rsd` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// What `precision` is a half-width of: each change relative to its
    /// ratio (`"3%"`), or each share of the chain's gap in points of it
    /// (`"5 points"`).
    #[serde(default, skip_serializing_if = "is_change")]
    pub precision_unit: PrecisionUnit,
    /// Wall time the run may take when `precision` is set; no round starts
    /// that would end after it.
    #[serde(default, with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub budget: Option<Duration>,
    /// Seed of the within-round order; `None`: drawn at run start (and recorded).
    pub seed: Option<u64>,
    /// Idle time after each trial, so heat and queues from one cell do not
    /// spill into the next.
    #[serde(with = "secs")]
    pub cooldown: Duration,
    pub deployment: DeploymentPolicy,
    /// Leave the trials the monitor flagged as disturbed out of the
    /// statistics (they stay in `trials.jsonl` and in the report's noise
    /// list). Default: keep them.
    #[serde(default)]
    pub exclude_disturbed: bool,
}

/// Whether a cell's deployment lives for one trial or for the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeploymentPolicy {
    /// Start, warm up, measure, stop, for every trial (the default): each
    /// trial sees a fresh server, so state that grows over time (logs,
    /// caches, connection tables) is never confounded with trial order.
    PerTrial,
    /// Deploy each cell once and keep every deployment up until the run
    /// ends: cheaper when deploying is slow, but idle servers share the host.
    Kept,
}

/// One combination of factor levels.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// `key=value` joined by `,` in the experiment's factor order.
    pub id: String,
    /// The same levels, in order, as their canonical text (what ids,
    /// records and reports show).
    pub levels: Vec<(String, String)>,
    /// The same levels typed, with the defaults of the factors the cell
    /// does not name: what the runner deploys and loads.
    pub setup: Setup,
}

impl Cell {
    /// A cell of canonical levels (`FactorKind::canonical`); `Err` when one
    /// does not parse into its type.
    pub fn new(levels: Vec<(String, String)>) -> Result<Cell, String> {
        let id = levels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let setup = Setup::of(&levels)?;
        Ok(Cell { id, levels, setup })
    }

    /// The level of `kind`, or its default when the experiment does not vary it.
    pub fn level(&self, kind: FactorKind) -> Option<&str> {
        self.levels
            .iter()
            .find(|(k, _)| k == kind.name())
            .map(|(_, v)| v.as_str())
            .or(kind.default_level())
    }

    /// The cell's placement.
    pub fn placement(&self) -> PlacementKind {
        self.setup.placement
    }

    /// The load settings for this cell: the `connections` and `workload`
    /// factors win (a workload level was checked with the engine when the
    /// file was read).
    pub(crate) fn load_settings(&self, load: &LoadSettings) -> LoadSettings {
        let mut out = load.clone();
        if let Some(c) = self.setup.connections {
            out.shared.connections = c;
        }
        if let Some(t) = self
            .setup
            .workload
            .as_deref()
            .and_then(|w| load.table.with_workload(w).ok())
        {
            out.table = t;
        }
        out
    }
}

/// Durations as seconds (a float) in JSON, as everything else in tare.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|secs| Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests;
