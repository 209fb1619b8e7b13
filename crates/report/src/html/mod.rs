//! The self-contained HTML report: one file that opens offline, with no
//! external scripts, fonts or styles, and no JavaScript at all (tooltips
//! are SVG `<title>`s), rendered from a run directory's records only.
//!
//! The numbers come from [`Report`] (the same statistics every format
//! shows); the percentile curves and timelines read the trials' HDR
//! histograms and per-second counts from [`Run`] directly.
//!
//! - [`Charts`]: every chart's data, computed once; snapshot-tested.
//! - [`waterfall`], [`round_trips`], [`bars`], [`percentiles`],
//!   [`concurrency`], [`timeline`]: one chart each, data then SVG.
//! - [`page`]: the document: sections, tables, notes, provenance.
//! - `cpu`: where the CPU goes, per cell and component, with the host
//!   each figure was measured on.
//! - [`escape`]: every recorded string passes through it.
//! - [`axis`], [`svg`]: scales, ticks and shared SVG pieces.

pub(crate) mod axis;
pub(crate) mod bars;
pub mod concurrency;
mod cpu;
pub mod escape;
mod flame;
pub mod page;
pub mod percentiles;
pub mod round_trips;
mod sections;
pub mod svg;
pub mod timeline;
pub mod waterfall;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use tare_analysis::stats::MedianCi;
use tare_analysis::{load_run, AnalysisError, CellStats, Comparison, Run};

use crate::export::Exporter;
use crate::report::{AttributionOutcome, Report};
use crate::ReportError;
use bars::{Bars, Metric};
use concurrency::Concurrency;
use percentiles::Percentiles;
use round_trips::RoundTrips;
use timeline::Timelines;
use waterfall::Waterfall;

#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error(transparent)]
    Load(#[from] AnalysisError),
    #[error("cannot write the HTML report to {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The HTML report of `run`, attribution along its plan's chain.
pub fn render(run: &Run) -> String {
    render_report(run, &Report::new(run))
}

/// The HTML report of `run` laid out from an already computed `report`
/// (`tare report --chain` computes it with another chain).
pub fn render_report(run: &Run, report: &Report) -> String {
    page::document(run, report, &Charts::new(run, report))
}

/// Reads the run directory `dir` and writes its HTML report to `path`
/// (what `tare run` does at the end of every run, as `report.html`).
pub fn write(dir: &Path, path: &Path) -> Result<(), HtmlError> {
    let run = load_run(dir)?;
    std::fs::write(path, render(&run)).map_err(|source| HtmlError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The HTML [`Exporter`]: it needs the [`Run`] as well as the report,
/// because histograms and timelines are not part of [`Report`].
pub struct HtmlExporter<'a> {
    pub run: &'a Run,
}

impl Exporter for HtmlExporter<'_> {
    fn run(&self, report: &Report) -> Result<Vec<u8>, ReportError> {
        Ok(render_report(self.run, report).into_bytes())
    }

    fn comparison(&self, comparison: &Comparison) -> Result<Vec<u8>, ReportError> {
        Ok(page::comparison_document(comparison).into_bytes())
    }
}

/// A median and its interval, as charts draw it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    /// The interval's actual confidence (exact order-statistic intervals
    /// cannot hit 95% exactly; with few trials it is lower).
    pub confidence: f64,
}

impl From<&MedianCi> for Interval {
    fn from(ci: &MedianCi) -> Interval {
        Interval {
            median: ci.median,
            lo: ci.lo,
            hi: ci.hi,
            confidence: ci.confidence,
        }
    }
}

/// Every chart's data. The page draws these; the tests snapshot them
/// (numbers, not pixels).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Charts {
    pub waterfall: Option<Waterfall>,
    /// The same chain in µs per round trip, when its unit is round trips
    /// (`tare net`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_trips: Option<RoundTrips>,
    pub throughput: Bars,
    pub p99: Bars,
    pub percentiles: Percentiles,
    pub concurrency: Option<Concurrency>,
    pub timelines: Timelines,
    /// What could not be drawn, or looks wrong in the raw data (histograms
    /// that do not decode, stalls, warm-up), one line each.
    pub warnings: Vec<String>,
}

impl Charts {
    pub fn new(run: &Run, report: &Report) -> Charts {
        let naming = Naming::new(&report.cells);
        let ids: Vec<String> = report.cells.iter().map(|c| c.cell.clone()).collect();
        let mut warnings = Vec::new();
        let percentiles = Percentiles::new(run, &ids, &naming, &mut warnings);
        let unit = report.cells.first().map_or("req/s", |c| c.unit.as_str());
        let timelines = Timelines::new(run, &ids, &naming, unit);
        warnings.extend(timelines.warnings());
        Charts {
            waterfall: match &report.attribution {
                AttributionOutcome::Computed { attribution, .. } => {
                    Some(Waterfall::new(attribution))
                }
                _ => None,
            },
            round_trips: match &report.attribution {
                AttributionOutcome::Computed { attribution, .. } => {
                    RoundTrips::new(attribution, &report.cells)
                }
                _ => None,
            },
            throughput: Bars::new(&report.cells, &naming, Metric::Throughput),
            p99: Bars::new(&report.cells, &naming, Metric::P99),
            percentiles,
            concurrency: Concurrency::new(run, &report.cells, &naming),
            timelines,
            warnings,
        }
    }
}

/// Short names for cells: factor levels in the experiment's factor order
/// (read from the cell ids, `key=value,...`; factor maps are sorted by
/// name and would lose that order).
#[derive(Clone, Debug, Default)]
pub struct Naming {
    pub order: Vec<String>,
}

impl Naming {
    pub(crate) fn new(cells: &[CellStats]) -> Naming {
        Naming {
            order: crate::report::factor_order(cells),
        }
    }

    /// `A, tuned, off`; the cell id when it has no factors.
    pub(crate) fn label_of(&self, factors: &BTreeMap<String, String>, id: &str) -> String {
        let v: Vec<&str> = self
            .order
            .iter()
            .filter_map(|k| factors.get(k).map(String::as_str))
            .collect();
        if v.is_empty() {
            id.to_string()
        } else {
            v.join(", ")
        }
    }

    /// The levels of every factor but `skip`, `key=value`-style so a row
    /// under a group heading says which factor each level belongs to.
    pub(crate) fn label_without(&self, cell: &CellStats, skip: Option<&str>) -> String {
        self.order
            .iter()
            .filter(|k| Some(k.as_str()) != skip)
            .filter_map(|k| cell.factors.get(k).map(|v| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
