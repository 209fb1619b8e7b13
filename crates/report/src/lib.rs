//! Reports: terminal tables, JSON for machines, and the self-contained HTML
//! report. Reports know nothing of how load is made: they lay out what
//! [`tare_analysis`] computed from a run directory.
//!
//! - `report`: [`Report`], everything one run's report shows, computed once.
//! - `export`: the [`Exporter`] trait, one implementation per format.
//! - `text`: the text layout (cells, attribution waterfall, comparisons).
//! - [`html`]: the HTML document and its charts.
//! - `resources`: where the CPU went, from the trials' resource monitoring,
//!   and each step's differential profile with its intervals.
//! - `remedy`: what removes a step's known cause (docker-proxy, the image's
//!   overlay, seccomp, conntrack), and the experiment lines that measure it.
//! - `where_ran`: where each process ran (the monitor's `cpus_seen`), and
//!   which helpers shared the server's CPU.
//! - `noise`: which trials were disturbed, and whether the statistics keep them.
//! - `table`, `units`: aligned columns and how numbers are written.
//!
//! The runner calls [`render_text`] (or an [`exporter`]) at the end of
//! `tare run`; `tare report` and `tare compare` go through [`exporter`].

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod export;
pub mod html;
mod noise;
mod remedy;
mod report;
mod resources;
mod table;
mod text;
mod units;
mod where_ran;

pub use export::{exporter, Exporter, Format};
pub use noise::Noise;
pub use report::{AttributionOutcome, Report};

use tare_analysis::{Comparison, Run};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot serialize the report: {0}")]
    Json(serde_json::Error),
}

/// The text report of `run`, attribution along its plan's chain.
pub fn render_text(run: &Run) -> String {
    text::report(&Report::new(run))
}

/// The text comparison of two runs.
pub fn render_comparison_text(comparison: &Comparison) -> String {
    text::comparison(comparison)
}
