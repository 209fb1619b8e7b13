//! One [`Exporter`] per output format, as hyperfine's `src/export/`: the
//! report is computed once ([`Report`], [`Comparison`]) and each format only
//! lays it out. Text and JSON today; the HTML report (`--html PATH`) will
//! be one more file here implementing the same trait.

mod json;
mod text;

use tare_analysis::Comparison;

use crate::report::Report;
use crate::ReportError;

pub(crate) use json::JsonExporter;
pub(crate) use text::TextExporter;

/// Lays out a report in one format.
pub trait Exporter {
    /// One run's report.
    fn run(&self, report: &Report) -> Result<Vec<u8>, ReportError>;
    /// Two runs compared.
    fn comparison(&self, comparison: &Comparison) -> Result<Vec<u8>, ReportError>;
}

/// The formats there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned plain text for a terminal.
    Text,
    /// The analysis as JSON, for machines.
    Json,
}

/// The exporter for `format`.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Text => Box::new(TextExporter),
        Format::Json => Box::new(JsonExporter),
    }
}
