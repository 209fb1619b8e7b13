//! Metrics beyond requests per second: what a benchmark program reports
//! (IOPS, GB/s, GFLOP/s, a latency), each named, with its unit and the
//! direction that is better, and which one of them is the record's primary
//! metric (the one a cell's statistics, attribution and comparison use).
//!
//! A record without metrics (every load engine's) has throughput as its
//! primary: [`crate::LoadResult::primary`] derives it, so analysis asks one
//! question of every record whichever engine made it.

use serde::{Deserialize, Serialize};

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughput, IOPS, bandwidth, GFLOP/s.
    #[default]
    Higher,
    /// Latency, time to completion.
    Lower,
}

impl Better {
    /// `higher is better` / `lower is better`, as reports say it.
    pub fn words(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }

    /// `value` as a speed: itself when higher is better, its reciprocal
    /// when lower is (a round that runs slow raises a latency and lowers a
    /// rate; on this scale both fall). Non-positive values stay as they are.
    pub fn as_speed(self, value: f64) -> f64 {
        match self {
            Better::Lower if value > 0.0 => 1.0 / value,
            _ => value,
        }
    }
}

/// One named measurement of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// A stable snake_case name (`read_iops`, `hpl_gflops`,
    /// `read_clat_p99_us`).
    pub name: String,
    pub value: f64,
    /// As reports print it: `IOPS`, `MB/s`, `GB/s`, `GFLOP/s`, `GUP/s`, `µs`.
    pub unit: String,
    pub better: Better,
}

impl Metric {
    pub fn new(name: &str, value: f64, unit: &str, better: Better) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
            better,
        }
    }
}

/// The tool engine's account of one run of a benchmark program: what ran,
/// where its data lived and how it went (docs/tools.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolDetails {
    /// `fio`, `hpcc` or `sysbench`.
    pub tool: String,
    /// The job that ran (`fio-randread`, `hpcc`, or a job file's name).
    pub job: String,
    /// The tool's own version line (`fio-3.33`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The command line, as run inside the placement.
    pub command: Vec<String>,
    /// Wall seconds the program ran.
    pub wall_s: f64,
    /// User and system CPU seconds of the program and its children.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// The filesystem the program's working directory (its test file) was
    /// on, as the program saw it (`ext4`, `fuse.fuse-overlayfs`, `tmpfs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_fs: Option<String>,
    /// fio: whether I/O bypassed the page cache (`direct=1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// What a reader must know to read the numbers (`direct I/O refused
    /// by fuse.fuse-overlayfs: buffered`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
