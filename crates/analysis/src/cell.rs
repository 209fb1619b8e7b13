//! [`CellStats`]: one cell's trials summarised: the median and interval of
//! throughput and of each trial's p50 and p99, errors, and the generator's
//! own CPU cost, with a noise flag when the spread is too wide to resolve
//! the effects tare is asked about.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tare_record::{Better, Errors, ToolDetails, TrialRecord, Unit};

use crate::stats::{median_ci, Level, MedianCi, CONFIDENCE};

/// A cell whose throughput interval spans more than ±5% of its median is
/// flagged noisy (the 5% is tare's choice): seed 000 puts the true container
/// cost at 7-8%, and the project's hand measurements put seccomp at ~2 points
/// (docs/studies.md, seed 000 and "Reference measurements"), so a cell noisier
/// than ±5% cannot resolve the factors tare exists to measure.
pub const NOISY_SPREAD: f64 = 0.05;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    pub cell: String,
    pub factors: BTreeMap<String, String>,
    /// The primary metric's unit as the records name it (`req/s` for
    /// requests, `tps` for transactions: [`tare_record::Unit::rate_label`];
    /// a tool's `IOPS`, `GB/s`, `µs`).
    pub unit: String,
    /// The primary metric's name: `throughput` for the load engines, the
    /// record's `primary` for the tool engine (`read_iops`, `hpl_gflops`).
    /// Every `throughput` field below holds this metric's values.
    #[serde(default = "throughput_name")]
    pub metric: String,
    /// Which way the primary metric improves: reports read ratios and
    /// steps with it (a latency that falls is a gain).
    #[serde(default)]
    pub better: Better,
    /// The other metrics the records carry, each median over successful
    /// trials with its interval (the tool engine's STREAM and RandomAccess
    /// beside HPL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricCell>,
    /// The tool engine's account of the cell's first successful trial:
    /// the program, its version, the filesystem its data lived on, direct
    /// or buffered I/O.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolDetails>,
    /// Trials recorded, failed ones included.
    pub trials: usize,
    /// Failed trials' error messages, in trial order.
    pub failures: Vec<String>,
    /// Successful trials' throughput, in trial order: what the interval and
    /// every test is computed from.
    pub throughput_samples: Vec<f64>,
    /// Each successful trial's p50 and p99 latency (µs), in trial order.
    pub p50_samples_us: Vec<f64>,
    pub p99_samples_us: Vec<f64>,
    /// Medians over trials with their order-statistic intervals.
    pub throughput: MedianCi,
    pub p50_us: MedianCi,
    pub p99_us: MedianCi,
    /// The round (`TrialRecord::trial`) of each successful sample, aligned
    /// with `throughput_samples`; `None` when the run's trials were not run
    /// in rounds (then nothing is paired: docs/analysis.md).
    #[serde(default)]
    pub rounds: Option<Vec<u32>>,
    /// The cell's throughput level in this run with the rounds' drift
    /// removed (`stats::twoway`), what reports print; `None` when the run
    /// cannot be modelled (one cell, no rounds, too few trials): reports
    /// then print the median and its order-statistic interval.
    #[serde(default)]
    pub level: Option<Level>,
    /// The same for the trials' p99 latency.
    #[serde(default)]
    pub p99_level: Option<Level>,
    /// Completed requests over all successful trials.
    pub requests: u64,
    pub errors: Errors,
    /// Errors over attempts, each trial's attempts as its record counts them
    /// ([`tare_record::LoadResult::attempts`]): an HTTP 4xx is a completed
    /// request, a failed transaction is not a completed transaction.
    pub error_rate: f64,
    /// The load generator's user + system CPU per completed request, over all
    /// successful trials (total CPU / total requests, not a mean of ratios).
    pub generator_cpu_us_per_request: Option<f64>,
    /// When the unit is round trips (`tare net`): the transactions in
    /// flight (connections, one each), so a throughput is also a time per
    /// round trip, `1e6 x connections / throughput` µs
    /// ([`CellStats::round_trip_us`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_connections: Option<u64>,
    /// A request mix's counts and latency by request name, added over the
    /// successful trials (histograms merged, so percentiles are exact);
    /// empty without a mix (docs/http.md, "Request mixes").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_name: Vec<tare_record::NamedResult>,
}

/// One secondary metric of a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricCell {
    pub name: String,
    pub unit: String,
    pub better: Better,
    /// Median over the trials that report it, with its interval.
    pub value: MedianCi,
}

fn throughput_name() -> String {
    "throughput".into()
}

impl CellStats {
    /// `None` when no trial of the cell succeeded (the report lists it as
    /// failed, with its errors).
    pub fn from_trials(cell: &str, trials: &[&TrialRecord]) -> Option<CellStats> {
        let ok: Vec<_> = trials.iter().filter_map(|t| t.usable()).collect();
        let failures = trials
            .iter()
            .filter(|t| t.usable().is_none())
            .map(|t| {
                let why = t.error.as_deref().unwrap_or("nothing completed");
                format!("#{}: {why}", t.trial)
            })
            .collect();
        let primary = ok.first().map(|r| r.primary());
        let throughput_samples: Vec<f64> = ok.iter().map(|r| r.primary().value).collect();
        let mut metrics: Vec<MetricCell> = Vec::new();
        if let Some(first) = ok.first() {
            for m in first
                .metrics
                .iter()
                .filter(|m| primary.as_ref().is_none_or(|p| p.name != m.name))
            {
                let values: Vec<f64> = ok
                    .iter()
                    .filter_map(|r| r.metric(&m.name).map(|x| x.value))
                    .collect();
                if let Some(value) = median_ci(&values, CONFIDENCE) {
                    metrics.push(MetricCell {
                        name: m.name.clone(),
                        unit: m.unit.clone(),
                        better: m.better,
                        value,
                    });
                }
            }
        }
        let p50_samples_us: Vec<f64> = ok.iter().map(|r| r.latency_us.p50).collect();
        let p99_samples_us: Vec<f64> = ok.iter().map(|r| r.latency_us.p99).collect();
        let mut errors = Errors::default();
        ok.iter().for_each(|r| errors.add(&r.errors));
        let requests: u64 = ok.iter().map(|r| r.requests).sum();
        let attempts: u64 = ok.iter().map(|r| r.attempts()).sum();
        let cpu_s: f64 = ok.iter().map(|r| r.generator_cpu_s).sum();
        let unit = primary
            .as_ref()
            .map_or(Unit::Requests.rate_label().to_string(), |p| p.unit.clone());
        let mut by_name = Vec::new();
        for r in &ok {
            // An unreadable histogram (a damaged record) loses only the
            // names' breakdown, never the cell.
            if tare_record::named::add_named(&mut by_name, &r.by_name).is_err() {
                by_name.clear();
                break;
            }
        }
        Some(CellStats {
            by_name,
            cell: cell.to_string(),
            factors: trials.first()?.factors.clone(),
            unit,
            metric: primary
                .as_ref()
                .map_or_else(throughput_name, |p| p.name.clone()),
            better: primary.as_ref().map_or(Better::Higher, |p| p.better),
            metrics,
            tool: ok.first().and_then(|r| r.tool.clone()).map(|mut t| {
                t.command.clear();
                t
            }),
            trials: trials.len(),
            failures,
            throughput: median_ci(&throughput_samples, CONFIDENCE)?,
            p50_us: median_ci(&p50_samples_us, CONFIDENCE)?,
            p99_us: median_ci(&p99_samples_us, CONFIDENCE)?,
            rounds: Some(
                trials
                    .iter()
                    .filter(|t| t.usable().is_some())
                    .map(|t| t.trial)
                    .collect(),
            ),
            level: None,
            p99_level: None,
            throughput_samples,
            p50_samples_us,
            p99_samples_us,
            requests,
            errors,
            error_rate: if attempts == 0 {
                0.0
            } else {
                errors.total() as f64 / attempts as f64
            },
            generator_cpu_us_per_request: (requests > 0 && cpu_s > 0.0)
                .then(|| cpu_s * 1e6 / requests as f64),
            round_trip_connections: ok
                .first()
                .filter(|r| r.unit() == Unit::RoundTrips)
                .map(|r| r.connections),
        })
    }

    /// The shown throughput as microseconds per round trip of one
    /// connection (the interval's ends swap), for round-trip units only.
    pub fn round_trip_us(&self) -> Option<MedianCi> {
        let c = self.round_trip_connections? as f64;
        let tp = self.throughput_shown();
        let per = |x: f64| if x > 0.0 { 1e6 * c / x } else { f64::INFINITY };
        Some(MedianCi {
            median: per(tp.median),
            lo: per(tp.hi),
            hi: per(tp.lo),
            ..tp
        })
    }

    /// `metric (unit)`: what this cell's primary numbers are, to tell
    /// cells apart that cannot be compared (IOPS beside GFLOP/s).
    pub fn measure(&self) -> (&str, &str) {
        (&self.metric, &self.unit)
    }

    /// Successful trials.
    pub fn ok(&self) -> usize {
        self.throughput_samples.len()
    }

    /// True when the printed throughput interval is wider than
    /// ±[`NOISY_SPREAD`].
    pub fn is_noisy(&self) -> bool {
        self.throughput_shown().relative_spread() > NOISY_SPREAD
    }

    /// The throughput reports print: the level (drift removed) when the run
    /// could be modelled, else the median; in `MedianCi`'s shape, `median`
    /// holding the estimate.
    pub fn throughput_shown(&self) -> MedianCi {
        shown(self.level, self.throughput)
    }

    /// The p99 reports print, as [`CellStats::throughput_shown`].
    pub fn p99_shown(&self) -> MedianCi {
        shown(self.p99_level, self.p99_us)
    }

    /// `(round, throughput, p99)` of each successful trial, when the run
    /// ran in rounds.
    pub(crate) fn by_round(&self) -> Option<Vec<(u32, f64, f64)>> {
        let rounds = self.rounds.as_ref()?;
        Some(
            rounds
                .iter()
                .zip(&self.throughput_samples)
                .zip(&self.p99_samples_us)
                .map(|((r, t), p)| (*r, *t, *p))
                .collect(),
        )
    }
}

pub(crate) fn shown(level: Option<Level>, median: MedianCi) -> MedianCi {
    match level {
        Some(l) => MedianCi {
            median: l.estimate,
            lo: l.lo,
            hi: l.hi,
            confidence: l.confidence,
            n: l.n,
        },
        None => median,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tare_record::LoadResult;

    /// A pg trial of `ok` completed and `failed` failed transactions, as
    /// tare pg records it (failed ones only in `errors.status`), and as an
    /// older record without `unit` and `attempts` has it.
    fn pg_trials(ok: u64, failed: u64) -> Vec<TrialRecord> {
        let mut r = LoadResult {
            engine: "pg".into(),
            unit: Some(Unit::Transactions),
            attempts: Some(ok + failed),
            requests: ok,
            tps: Some(ok as f64),
            ..Default::default()
        };
        r.errors.status = failed;
        let mut old = r.clone();
        (old.unit, old.attempts) = (None, None);
        [r, old]
            .into_iter()
            .map(|r| TrialRecord {
                cell: "c".into(),
                result: Some(r),
                ..Default::default()
            })
            .collect()
    }

    /// Regression: `tare report` computed attempts as requests + errors -
    /// errors.status, http's rule, for pg too: 900 ok + 100 failed showed
    /// 11.1%, and a cell where every transaction failed showed 0% (now it
    /// has no statistics at all: nothing completed, nothing measured).
    #[test]
    fn report_pg_error_rate_counts_failed_transactions_once() {
        let none = pg_trials(0, 1000);
        let refs: Vec<&TrialRecord> = none.iter().collect();
        assert_eq!(CellStats::from_trials("c", &refs), None);
        let trials = pg_trials(900, 100);
        let refs: Vec<&TrialRecord> = trials.iter().collect();
        let s = CellStats::from_trials("c", &refs).unwrap();
        assert!(
            (s.error_rate - 0.10).abs() < 1e-12,
            "900+100: {}",
            s.error_rate
        );
        assert_eq!(s.unit, "tps");
    }

    /// A lower-is-better primary metric (a tool's latency) takes its name,
    /// unit and direction from the records, and its secondary metrics
    /// come with intervals.
    #[test]
    fn a_tool_cell_reads_its_primary_metric_and_direction() {
        use tare_record::{Better, Metric};
        let trials: Vec<TrialRecord> = [100.0, 120.0, 110.0]
            .into_iter()
            .map(|v| TrialRecord {
                cell: "c".into(),
                result: Some(LoadResult {
                    engine: "tool".into(),
                    unit: Some(Unit::Runs),
                    requests: 1,
                    primary: Some("p99_us".into()),
                    metrics: vec![
                        Metric::new("p99_us", v, "µs", Better::Lower),
                        Metric::new("iops", 1e6 / v, "IOPS", Better::Higher),
                    ],
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        let refs: Vec<&TrialRecord> = trials.iter().collect();
        let s = CellStats::from_trials("c", &refs).unwrap();
        assert_eq!(
            (s.metric.as_str(), s.unit.as_str(), s.better),
            ("p99_us", "µs", Better::Lower)
        );
        assert_eq!(s.throughput.median, 110.0);
        assert_eq!(s.metrics.len(), 1);
        assert_eq!(s.metrics[0].name, "iops");
    }

    /// Round trips (tare net) are also a time: 1e6 x connections / rate,
    /// the interval's ends swapped; other units have none.
    #[test]
    fn round_trip_cells_show_microseconds_per_round_trip() {
        let trials: Vec<TrialRecord> = [20_000.0, 25_000.0, 40_000.0]
            .into_iter()
            .map(|rate| TrialRecord {
                cell: "c".into(),
                result: Some(LoadResult {
                    engine: "net".into(),
                    unit: Some(Unit::RoundTrips),
                    connections: 2,
                    requests: rate as u64,
                    tps: Some(rate),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        let refs: Vec<&TrialRecord> = trials.iter().collect();
        let s = CellStats::from_trials("c", &refs).unwrap();
        let rt = s.round_trip_us().unwrap();
        assert_eq!(rt.median, 80.0);
        assert!(rt.lo <= rt.median && rt.median <= rt.hi);
        assert_eq!(s.unit, "rt/s");
        let pg = pg_trials(10, 0);
        let refs: Vec<&TrialRecord> = pg.iter().collect();
        assert!(CellStats::from_trials("c", &refs)
            .unwrap()
            .round_trip_us()
            .is_none());
    }
}
