//! [`ScheduleReport`]: how load was paced, when it was not a plain closed loop.

use serde::{Deserialize, Serialize};

use crate::latency::LatencySummary;

/// Present when a run used an open-loop rate (`--rate`) or a ramp (`--ramp`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleReport {
    /// Intended requests (transactions) per second; `None` for a closed loop
    /// with a ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<f64>,
    /// `constant` or `poisson`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arrivals: String,
    /// Sends per second actually achieved during measurement.
    pub achieved_send_rate: f64,
    /// Latency from the *actual* send time. With a rate, the main
    /// `latency_us` is measured from the *intended* send time (corrected for
    /// coordinated omission); this is the uncorrected figure beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_us: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hdr_uncorrected: String,
    /// Sends that left more than 1 ms after their intended time: the
    /// generator (or its connection pool) fell behind its schedule.
    pub late_sends: u64,
    pub mean_lag_us: f64,
    pub max_lag_us: f64,
    /// Arrivals due by the deadline that were never sent (no free connection).
    pub unsent: u64,
    /// Seconds of ramp before measurement (excluded from the summary).
    pub ramp_s: f64,
    /// Completions in each second of the ramp.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ramp_timeline: Vec<u64>,
}
