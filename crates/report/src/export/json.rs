//! The machine format: the computed report as pretty JSON, every number at
//! full precision, samples included, so scripts need not redo the analysis.

use tare_analysis::Comparison;

use super::Exporter;
use crate::report::Report;
use crate::ReportError;

pub(crate) struct JsonExporter;

impl Exporter for JsonExporter {
    fn run(&self, report: &Report) -> Result<Vec<u8>, ReportError> {
        pretty(report)
    }

    fn comparison(&self, comparison: &Comparison) -> Result<Vec<u8>, ReportError> {
        pretty(comparison)
    }
}

fn pretty(value: &impl serde::Serialize) -> Result<Vec<u8>, ReportError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(ReportError::Json)?;
    bytes.push(b'\n');
    Ok(bytes)
}
