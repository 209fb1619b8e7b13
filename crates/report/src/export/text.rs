//! The terminal format: see [`crate::text`].

use tare_analysis::Comparison;

use super::Exporter;
use crate::report::Report;
use crate::{text, ReportError};

pub(crate) struct TextExporter;

impl Exporter for TextExporter {
    fn run(&self, report: &Report) -> Result<Vec<u8>, ReportError> {
        Ok(text::report(report).into_bytes())
    }

    fn comparison(&self, comparison: &Comparison) -> Result<Vec<u8>, ReportError> {
        Ok(text::comparison(comparison).into_bytes())
    }
}
