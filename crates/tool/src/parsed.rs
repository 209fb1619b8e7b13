//! What a tool's parser makes of its output, whichever tool it is.

use tare_record::{LatencySummary, Metric};

/// One run's numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Every metric the output gives, named and with units.
    pub metrics: Vec<Metric>,
    /// A per-operation latency distribution when the tool reports one
    /// (fio's completion latency, sysbench's event latency).
    pub latency: Option<LatencySummary>,
    /// Operations the tool completed (fio's I/Os, sysbench's events; 0
    /// for a tool that counts none, hpcc).
    pub operations: u64,
    /// The tool's version as its output states it.
    pub version: String,
}

impl Parsed {
    /// The metric called `name`.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// Output a parser could not read, in one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

impl ParseError {
    pub(crate) fn new(msg: impl Into<String>) -> ParseError {
        ParseError(msg.into())
    }
}
