//! Statistics and attribution over recorded runs.
//!
//! Analysis only *reads* what the runner recorded (ARCHITECTURE.md, "Record,
//! then report"), so any old run directory can be re-analysed or compared
//! without generating load again. `docs/analysis.md` explains every method and why.
//!
//! - [`stats`]: pure functions on slices: the median and its exact
//!   order-statistic interval, the Mann-Whitney U test, a seeded bootstrap,
//!   and the contrast of two samples (ratio, interval, p-value, call).
//! - `run`: [`load_run`] reads a run directory into a [`Run`]
//!   (`trials.jsonl`, `plan.json`, `provenance.json`, `findings.json`).
//! - [`plan`]: the parts of the runner's files analysis reads, including the
//!   [`AttributionChain`].
//! - `cell`: [`CellStats`], one cell's trials summarised.
//! - `noise`: disturbed trials ([`DisturbedTrial`]), kept or excluded.
//! - [`mod@attribution`]: the waterfall along a chain of one-factor steps.
//! - [`compare`]: two runs side by side, benchstat-style.
//! - `precision`: [`precision()`], the half-widths the runner's stopping
//!   rule compares with `[trials] precision`.
//! - `synthetic`: deterministic fake runs for tests (here, in tare-report
//!   and in the runner). Always built, not behind a feature: a feature the
//!   tests turn on would make `cargo install` rebuild every crate above this
//!   one instead of reusing the test build (scripts/install-check.sh).
//!
//! ```no_run
//! let run = tare_analysis::load_run("runs/2026-11-22T02-30-00")?;
//! for cell in run.cells() {
//!     println!("{} {:.0} {}", cell.cell, cell.throughput.median, cell.unit);
//! }
//! if let Some(chain) = run.chain() {
//!     let waterfall = tare_analysis::attribution(&run, chain)?;
//!     println!("gap {:.0}", waterfall.gap);
//! }
//! # Ok::<(), tare_analysis::AnalysisError>(())
//! ```

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod attribution;
mod cell;
pub mod compare;
mod error;
mod factors;
mod levels;
mod noise;
mod pairs;
pub mod plan;
mod precision;
mod run;
pub mod stats;
pub mod synthetic;

pub use attribution::{
    attribution, attribution_of_cells, parts_of_gap, Attribution, FactorChange, GapShare, Step,
};
pub use cell::{CellStats, NOISY_SPREAD};
pub use compare::{compare, incomparable, load_notes, CompareRow, Comparison};
pub use error::{AnalysisError, AttributionError};
pub use factors::changed_factors;
pub use levels::{drift as levels_drift, Drift};
pub use noise::DisturbedTrial;
pub use pairs::{cell_contrast, paired_values, Metric};
pub use plan::{AttributionChain, Finding, PlanView, StepSplit};
pub use precision::{precision, Precision, PrecisionItem, PrecisionUnit};
pub use run::{load_run, FailedCell, Run};
