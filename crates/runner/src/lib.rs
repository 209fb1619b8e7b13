//! Experiments: the TOML file, the interleaved runner, run directories and
//! provenance. The pipeline, in the order a run uses it:
//!
//! - `experiment`: the experiment file, checked, expanded into cells.
//! - `engines`: the load engines an experiment can name, one file each,
//!   in one registry (their `[load.<engine>]` tables and their runs).
//! - [`plan`]: which cells run here, the seed, the interleaved order (`plan.json`).
//! - `executor`: the measurement trait (deploy a cell, load it), with
//!   `mock::MockExecutor` for tests, [`real::RealExecutor`] for real runs
//!   and [`debug::DebugExecutor`] for `tare run --debug-mode` (real cells,
//!   specs and fairness; a mock placement and engine).
//! - `schedule`: runs the trials, records each durably, adds rounds until
//!   a precision is met (`precision`) or adaptive trials (`adaptive`),
//!   stops cleanly on an interrupt.
//! - `rundir`: the run directory and its files; [`provenance`]: what
//!   produced the run; [`observer`]: progress for people.
//! - [`remote`]: remote hosts in a run: generators and targets over SSH,
//!   their records merged (`tare-remote` holds the SSH side).
//! - [`session`]: the above wired together for `tare run` and `--resume`.
//! - [`starter`]: `tare init`'s commented starter experiments.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod adaptive;
pub mod debug;
mod engines;
mod executor;
mod experiment;
pub mod interrupt;
mod live;
#[cfg(test)]
mod mock;
pub mod observer;
pub mod plan;
mod precision;
pub mod provenance;
pub mod real;
pub mod remote;
mod rundir;
mod schedule;
pub mod session;
pub mod starter;

pub use executor::{ExecError, Executor, Finding, RunningCell};
pub use experiment::{
    Cell, ConfigSource, CpuChoice, CpuPlan, CpuPolicy, Experiment, ExperimentError, HelperChoice,
    Hosts, InputFile, LoadSettings, MonitorSettings,
};
pub use plan::Plan;
pub use rundir::RunDir;
pub use schedule::{Outcome, Schedule, Summary};
