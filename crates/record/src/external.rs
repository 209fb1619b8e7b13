//! [`ExternalDetails`]: what an external load tool (wrk, ab, h2load,
//! pgbench) run
//! as a cell's load reported, in its own terms (docs/external.md).
//!
//! The record's common fields (`requests`, `rps`, `errors`, `latency_us`)
//! hold what the tool reported; a common field the tool does not report
//! stays at its zero and is named in `not_reported`, and the maps here hold
//! only what the tool printed: a latency percentile or an error kind the
//! tool does not give is absent, never zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One run of an external load tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExternalDetails {
    /// `wrk`, `ab`, `h2load`, `pgbench`, `redis-benchmark`, `sysbench`,
    /// `locust` or `jmeter`.
    pub tool: String,
    /// The command line as run, placeholders filled.
    pub command: Vec<String>,
    /// The script files the tool read (names in the run's `inputs/`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<String>,
    /// Wall seconds the tool ran, start to exit.
    pub wall_s: f64,
    /// The tool's own CPU seconds (its rusage, children included).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// The application protocol the tool said it spoke (h2load: `h2c`,
    /// `h2`, `http/1.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Latency in microseconds as the tool reported it: `min`, `mean`,
    /// `stdev`, `max` and percentiles (`p50`, `p66`, `p99`, `p999`);
    /// only the ones it gave.
    #[serde(default)]
    pub latency_us: BTreeMap<String, f64>,
    /// Errors in the tool's own words (`connect`, `read`, `non_2xx_3xx`,
    /// `length`, `errored`); only the kinds it gave.
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The record's common fields this tool does not report (`hdr`,
    /// `timeline`, `latency_us.p50`, `errors.write`): zero there means
    /// absent, not measured zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_reported: Vec<String>,
}
