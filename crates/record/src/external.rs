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

use crate::latency::Latency;

/// The record's latency fields, as `not_reported` names them.
const LATENCY: [&str; 10] = [
    "min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p999", "p9999",
];

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
    /// The tool's process id on the machine it ran on: the monitor's
    /// generator names it (docs/monitor.md). Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
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

impl ExternalDetails {
    /// The details of several generators' runs of one tool (`[load]
    /// hosts`, docs/remote.md): the first one's tool, command and
    /// scripts, the longest wall time, their CPU and error counts added,
    /// and, with `latency` (every part's histogram, merged), the latency
    /// read from it. Without it (a part without a histogram) the tool's
    /// percentiles do not merge: no latency, and `not_reported` says so.
    pub fn merged(parts: &[&ExternalDetails], latency: Option<&Latency>) -> ExternalDetails {
        let Some(first) = parts.first() else {
            return ExternalDetails::default();
        };
        let mut out = ExternalDetails {
            tool: first.tool.clone(),
            command: first.command.clone(),
            scripts: first.scripts.clone(),
            protocol: first.protocol.clone(),
            ..ExternalDetails::default()
        };
        for p in parts {
            out.wall_s = out.wall_s.max(p.wall_s);
            out.cpu_user_s += p.cpu_user_s;
            out.cpu_system_s += p.cpu_system_s;
            if p.protocol != out.protocol {
                out.protocol = None;
            }
            for (k, n) in &p.errors_by_kind {
                let sum = out.errors_by_kind.entry(k.clone()).or_default();
                *sum = sum.saturating_add(*n);
            }
            for n in &p.not_reported {
                if !out.not_reported.contains(n) {
                    out.not_reported.push(n.clone());
                }
            }
        }
        match latency {
            Some(h) if !h.is_empty() => {
                let s = h.summary();
                let values = [
                    s.min, s.mean, s.stdev, s.max, s.p50, s.p75, s.p90, s.p99, s.p999, s.p9999,
                ];
                for (k, v) in LATENCY.iter().zip(values) {
                    out.latency_us.insert((*k).to_string(), v);
                }
                out.not_reported.retain(|n| {
                    n != "hdr"
                        && !n
                            .strip_prefix("latency_us.")
                            .is_some_and(|k| LATENCY.contains(&k))
                });
            }
            Some(_) => {}
            None => {
                let absent = std::iter::once("hdr".to_string())
                    .chain(LATENCY.iter().map(|k| format!("latency_us.{k}")));
                for n in absent {
                    if !out.not_reported.contains(&n) {
                        out.not_reported.push(n);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(hdr: bool, read: u64) -> ExternalDetails {
        let mut not_reported = vec!["in_flight".to_string(), "latency_us.p9999".to_string()];
        if !hdr {
            not_reported.push("hdr".into());
        }
        ExternalDetails {
            tool: "wrk".into(),
            command: vec!["wrk".into(), "-c2".into()],
            pid: Some(42),
            wall_s: 1.5,
            cpu_user_s: 0.25,
            cpu_system_s: 0.5,
            errors_by_kind: BTreeMap::from([("read".to_string(), read)]),
            latency_us: BTreeMap::from([("p50".to_string(), 99.0)]),
            not_reported,
            ..ExternalDetails::default()
        }
    }

    #[test]
    fn generators_details_add_and_their_histogram_gives_the_latency() {
        let mut h = Latency::new();
        (1..=100u64).for_each(|us| h.record_ns(us * 1000));
        let (a, b) = (part(true, 1), part(true, 2));
        let m = ExternalDetails::merged(&[&a, &b], Some(&h));
        assert_eq!(m.pid, None, "two processes on two hosts");
        assert_eq!(m.cpu_user_s, 0.5);
        assert_eq!(m.errors_by_kind["read"], 3);
        assert!(
            (m.latency_us["p50"] - 50.0).abs() < 0.1,
            "{:?}",
            m.latency_us
        );
        assert_eq!(m.not_reported, ["in_flight"]);
    }

    #[test]
    fn without_every_histogram_no_latency_is_reported() {
        let (a, b) = (part(true, 1), part(false, 2));
        let m = ExternalDetails::merged(&[&a, &b], None);
        assert!(m.latency_us.is_empty());
        assert!(m.not_reported.contains(&"hdr".to_string()));
        assert!(m.not_reported.contains(&"latency_us.p50".to_string()));
        assert_eq!(
            m.not_reported
                .iter()
                .filter(|n| *n == "latency_us.p9999")
                .count(),
            1
        );
    }
}
