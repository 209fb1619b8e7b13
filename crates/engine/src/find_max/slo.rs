//! Objectives (`--slo 'p99<10ms,errors<1%'`) and whether one load result
//! meets them.

use serde::{Deserialize, Serialize};
use tare_record::LoadResult;

use super::Probe;

/// One objective: a latency percentile or the error rate below a bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// `p50`, `p90`, `p99`, `p999` or `errors`.
    pub metric: String,
    /// Microseconds for percentiles, a fraction (0..1) for `errors`.
    pub below: f64,
}

/// A set of objectives, as `--slo` and `[load] slo` take them, with the
/// text they were given as (which plans and messages repeat).
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    text: String,
    objectives: Vec<Objective>,
}

impl Slo {
    pub fn objectives(&self) -> &[Objective] {
        &self.objectives
    }
}

impl std::str::FromStr for Slo {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(Slo {
            objectives: parse_slo(s)?,
            text: s.trim().to_string(),
        })
    }
}

impl std::fmt::Display for Slo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parses `p99<10ms`, `p50<500us,errors<1%`.
pub(crate) fn parse_slo(text: &str) -> Result<Vec<Objective>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (metric, bound) = part.split_once('<').ok_or_else(|| {
            format!("invalid objective {part:?}: expected e.g. p99<10ms or errors<1%")
        })?;
        let metric = metric.trim().to_ascii_lowercase();
        let bound = bound.trim();
        let below = match metric.as_str() {
            "p50" | "p90" | "p99" | "p999" => crate::units::parse_duration(bound)
                .map_err(|e| format!("invalid objective {part:?}: {e}"))?
                .as_secs_f64()
                * 1e6,
            "errors" => {
                let pct = bound
                    .strip_suffix('%')
                    .and_then(|p| p.trim().parse::<f64>().ok())
                    .ok_or_else(|| format!("invalid objective {part:?}: error ceiling as a percentage, e.g. errors<1%"))?;
                pct / 100.0
            }
            other => {
                return Err(format!(
                    "invalid objective {part:?}: unknown metric {other:?} (use p50, p90, p99, p999 or errors)"
                ))
            }
        };
        if !(below > 0.0 && below.is_finite()) {
            return Err(format!(
                "invalid objective {part:?}: the bound must be positive"
            ));
        }
        out.push(Objective { metric, below });
    }
    if out.is_empty() {
        return Err("empty objective: expected e.g. --slo 'p99<10ms'".into());
    }
    Ok(out)
}

/// Judges one run at target `rate` (`None`: the closed-loop capacity probe).
/// It passes when every objective holds on the *corrected* latency and the
/// generator kept its schedule (sent at least 98% of the target rate): a
/// generator that cannot keep up must never pass as a server that can.
pub(crate) fn judge(r: &LoadResult, rate: Option<f64>, slo: &[Objective]) -> Probe {
    let error_rate = r.error_rate();
    let mut failures = Vec::new();
    for o in slo {
        let value = match o.metric.as_str() {
            "p50" => r.latency_us.p50,
            "p90" => r.latency_us.p90,
            "p99" => r.latency_us.p99,
            "p999" => r.latency_us.p999,
            _ => error_rate,
        };
        if value >= o.below {
            failures.push(if o.metric == "errors" {
                format!("errors {:.2}% >= {:.2}%", value * 100.0, o.below * 100.0)
            } else {
                format!("{} {:.0}us >= {:.0}us", o.metric, value, o.below)
            });
        }
    }
    if let (Some(target), Some(s)) = (rate, r.schedule.as_ref()) {
        if s.achieved_send_rate < target * 0.98 {
            failures.push(format!(
                "sent {:.0}/s of {:.0}/s: behind schedule",
                s.achieved_send_rate, target
            ));
        }
    }
    if r.requests == 0 {
        failures.push("no request completed".into());
    }
    Probe {
        rate,
        passed: failures.is_empty(),
        failures,
        rps: r.throughput(),
        p50_us: r.latency_us.p50,
        p99_us: r.latency_us.p99,
        p999_us: r.latency_us.p999,
        error_rate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_objectives() {
        let o = parse_slo("p99<10ms, p50<500us,errors<1%").unwrap();
        assert_eq!(o.len(), 3);
        assert_eq!(
            o[0],
            Objective {
                metric: "p99".into(),
                below: 10_000.0
            }
        );
        assert_eq!(o[1].below, 500.0);
        assert!((o[2].below - 0.01).abs() < 1e-12);
        assert_eq!(parse_slo("P90<1s").unwrap()[0].metric, "p90");
        assert_eq!(parse_slo("p999<2ms").unwrap()[0].below, 2_000.0);
        for bad in [
            "",
            ",",
            "p99",
            "p98<1ms",
            "p99<fast",
            "errors<1",
            "p99<0ms",
            "errors<x%",
        ] {
            assert!(parse_slo(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn judging_names_each_failure() {
        let mut r = LoadResult {
            engine: "fake".into(),
            requests: 100,
            ..Default::default()
        };
        r.latency_us.p99 = 12_000.0;
        r.errors.timeout = 5;
        let slo = parse_slo("p99<10ms,errors<1%").unwrap();
        let p = judge(&r, None, &slo);
        assert!(!p.passed);
        assert_eq!(p.failures.len(), 2, "{:?}", p.failures);
        r.latency_us.p99 = 9_000.0;
        r.errors.timeout = 0;
        assert!(judge(&r, None, &slo).passed);
    }

    /// Failed transactions are not among the completed ones: 98 done and 2
    /// failed is a 2% error rate, not 2/98.
    #[test]
    fn failed_transactions_count_once_in_the_error_rate() {
        let mut r = LoadResult {
            engine: "fake".into(),
            unit: Some(tare_record::Unit::Transactions),
            requests: 98,
            ..Default::default()
        };
        r.errors.status = 2;
        let p = judge(&r, None, &parse_slo("errors<1%").unwrap());
        assert!((p.error_rate - 0.02).abs() < 1e-12, "{}", p.error_rate);
        assert!(!p.passed);
    }

    #[test]
    fn a_generator_behind_schedule_fails() {
        let mut r = LoadResult {
            engine: "fake".into(),
            requests: 900,
            ..Default::default()
        };
        r.schedule = Some(tare_record::ScheduleReport {
            achieved_send_rate: 900.0,
            ..Default::default()
        });
        let p = judge(&r, Some(1000.0), &parse_slo("p99<1s").unwrap());
        assert!(!p.passed);
        assert!(
            p.failures[0].contains("behind schedule"),
            "{:?}",
            p.failures
        );
    }
}
