//! `--find-max --slo 'p99<10ms'`: the highest open-loop rate that meets a
//! latency objective, found by a bounded search over rates (as
//! PerfKitBenchmarker does over wrk2 runs, and as wrk2 issue #96 asks).
//! One search for every engine: it only needs "run one probe at this rate".
//!
//! 1. A closed-loop probe measures the capacity X with the same connections.
//! 2. Bisection between a passing and a failing rate, starting at X/2, up to
//!    1.1 X, geometric midpoints, until the bracket is narrower than the
//!    resolution or the run budget is spent.
//! 3. The answer is re-measured once; if it fails the second time, the search
//!    reports the next lower rate that passed, with that run (the failed
//!    confirmation stays in the probes: the noise is stated, not hidden).
//!
//! - `slo`: the objectives ([`Slo`]) and the verdict on one probe.
//! - `text`: the table of probes and the answer ([`render_for`]).

mod slo;
mod text;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tare_record::{LoadResult, Unit};

use crate::engine::Engine;

use slo::judge;
#[cfg(test)]
use slo::parse_slo;
pub use slo::{Objective, Slo};
use text::{render, Style};

/// One measured rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Target rate (`None` for the closed-loop capacity probe).
    pub rate: Option<f64>,
    pub passed: bool,
    /// Why it failed, in words (`p99 12.3ms >= 10ms`).
    pub failures: Vec<String>,
    /// Completions per second (requests or transactions).
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub error_rate: f64,
}

/// The search's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindMax {
    pub slo: Vec<Objective>,
    /// Highest rate that met the objectives (twice), if any did.
    pub best_rate: Option<f64>,
    /// Closed-loop capacity with the same connections.
    pub capacity_rps: f64,
    /// The passing and failing rates that bracket the answer.
    pub bracket: (Option<f64>, Option<f64>),
    /// Bracket width relative to its lower end: the answer's resolution.
    pub resolution: f64,
    pub probes: Vec<Probe>,
    /// The full result at `best_rate`: its confirming run, or, when that
    /// failed, the passing run of the lower rate that stands.
    pub best: Option<LoadResult>,
}

/// How much a search may spend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Most open-loop probes, beside the capacity probe and the confirmation.
    pub max_runs: usize,
    /// Stop when the bracket is narrower than this fraction (0.05 = 5%).
    pub resolution: f64,
}

impl Budget {
    /// At most `max_runs` open-loop probes, ending at a 5% bracket: finer
    /// than that, run-to-run noise on one machine decides the answer.
    pub fn runs(max_runs: usize) -> Budget {
        Budget {
            max_runs,
            resolution: 0.05,
        }
    }
}

/// Why a search could not give an answer at all.
#[derive(Debug)]
pub enum SearchError<E> {
    /// A probe could not run (the engine's own error).
    Probe(E),
    /// The closed-loop probe completed nothing (of this unit): there is no
    /// capacity to search below.
    NoCapacity(Unit),
    /// The config has no objectives to search for (`load.slo` unset).
    NoObjectives,
}

impl<E: std::fmt::Display> std::fmt::Display for SearchError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Probe(e) => e.fmt(f),
            SearchError::NoCapacity(unit) => {
                write!(f, "the capacity probe completed no {}", unit.noun())
            }
            SearchError::NoObjectives => f.write_str("a search needs objectives: --slo 'p99<10ms'"),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for SearchError<E> {}

/// The search for an engine: each probe is a run of `config` (its
/// connections, threads and duration) at one rate, or in a closed loop for
/// the capacity probe; the objectives are its `load.slo`. Every engine's
/// `--find-max` and every experiment's `slo` is this function.
pub fn find_max<E: Engine>(
    config: &E::Config,
    budget: Budget,
    stop: &Arc<AtomicBool>,
) -> Result<FindMax, SearchError<E::Error>> {
    let slo = match &E::load(config).slo {
        Some(slo) => slo.objectives().to_vec(),
        None => return Err(SearchError::NoObjectives),
    };
    search(&slo, budget, E::UNIT, |rate| {
        let mut probe = config.clone();
        let load = E::load_mut(&mut probe);
        load.slo = None;
        load.rate = rate;
        E::run(&probe, stop.clone())
    })
}

/// The text of a search in the engine's own units.
pub fn render_for<E: Engine>(f: &FindMax) -> String {
    render(
        f,
        Style {
            unit: E::UNIT.rate_label(),
            time: E::format_time,
        },
    )
}

/// Searches for the highest rate meeting `slo`. `probe(None)` runs the
/// closed loop, `probe(Some(rate))` an open loop at `rate`, each with the
/// same connections, threads and duration; `unit` is what they complete.
fn search<E>(
    slo: &[Objective],
    budget: Budget,
    unit: Unit,
    mut probe: impl FnMut(Option<f64>) -> Result<LoadResult, E>,
) -> Result<FindMax, SearchError<E>> {
    let mut probes = Vec::new();
    let capacity = probe(None).map_err(SearchError::Probe)?;
    let capacity_rps = capacity.throughput();
    probes.push(judge(&capacity, None, slo));
    if capacity.requests == 0 {
        return Err(SearchError::NoCapacity(unit));
    }

    let mut measure = |rate: f64| -> Result<(Probe, LoadResult), SearchError<E>> {
        let r = probe(Some(rate)).map_err(SearchError::Probe)?;
        Ok((judge(&r, Some(rate), slo), r))
    };

    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, Some(capacity_rps * 1.1));
    let floor = (capacity_rps / 64.0).max(1.0);
    let mut rate = capacity_rps / 2.0;
    // Every passing run, in order: each pass is above the ones before it.
    let mut passes: Vec<(f64, LoadResult)> = Vec::new();
    for _ in 0..budget.max_runs {
        let (p, r) = measure(rate)?;
        let passed = p.passed;
        probes.push(p);
        if passed {
            lo = Some(rate);
            passes.push((rate, r));
        } else {
            hi = Some(rate);
        }
        rate = match next_rate(lo, hi, floor, budget.resolution) {
            Some(next) => next,
            None => break,
        };
    }
    // Confirm the answer once: noise may have flattered it.
    let mut best = None;
    if let Some(&(rate, _)) = passes.last() {
        let (p, r) = measure(rate)?;
        let passed = p.passed;
        probes.push(p);
        if passed {
            best = Some((rate, r));
        } else {
            hi = Some(rate);
            // The highest other passing rate stands, unconfirmed but
            // measured: its passing run is the result at the answer.
            passes.retain(|(r, _)| *r < rate);
            best = passes.pop();
            lo = best.as_ref().map(|(r, _)| *r);
        }
    }
    let best_rate = best.as_ref().map(|(r, _)| *r);
    let resolution = match (lo, hi) {
        (Some(l), Some(h)) if l > 0.0 => h / l - 1.0,
        _ => f64::NAN,
    };
    Ok(FindMax {
        slo: slo.to_vec(),
        best_rate,
        capacity_rps,
        bracket: (lo, hi),
        resolution,
        probes,
        best: best.map(|(_, r)| r),
    })
}

/// The next rate to try, or `None` when the search is done: the geometric
/// midpoint of a bracket, a quarter of the lowest failure while nothing has
/// passed (down to `floor`), double the highest pass while nothing failed.
fn next_rate(lo: Option<f64>, hi: Option<f64>, floor: f64, resolution: f64) -> Option<f64> {
    match (lo, hi) {
        (Some(l), Some(h)) => (h / l - 1.0 > resolution).then(|| (l * h).sqrt()),
        (None, Some(h)) => (h > floor).then_some(h / 4.0),
        (Some(l), None) => Some(l * 2.0),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake engine whose p99 is 1 ms below `knee` and 50 ms above it, with
    /// a closed-loop capacity of `capacity`: the search must land just
    /// under the knee within its budget.
    fn fake(capacity: f64, knee: f64) -> impl FnMut(Option<f64>) -> Result<LoadResult, String> {
        move |rate| {
            let achieved = rate.unwrap_or(capacity).min(capacity);
            let mut r = LoadResult {
                engine: "fake".into(),
                requests: achieved as u64,
                tps: Some(achieved),
                duration_s: 1.0,
                ..Default::default()
            };
            r.latency_us.p99 = if achieved < knee { 1_000.0 } else { 50_000.0 };
            r.schedule = rate.map(|_| tare_record::ScheduleReport {
                achieved_send_rate: achieved,
                ..Default::default()
            });
            Ok(r)
        }
    }

    #[test]
    fn converges_under_the_knee_within_budget() {
        let slo = parse_slo("p99<10ms").unwrap();
        let budget = Budget {
            max_runs: 8,
            resolution: 0.05,
        };
        let f = search(&slo, budget, Unit::Transactions, fake(1000.0, 700.0)).unwrap();
        let best = f.best_rate.unwrap();
        assert!((650.0..700.0).contains(&best), "{best}");
        assert!(f.probes.len() <= 1 + 8 + 1);
        let (lo, hi) = f.bracket;
        assert_eq!(lo, Some(best));
        assert!(hi.unwrap() >= 700.0 && f.resolution <= 0.08, "{f:?}");
        assert!(f.best.is_some());
    }

    /// The answer fails its re-measure (noise): the next lower passing rate
    /// stands, with its own run, and the failure bounds the bracket.
    #[test]
    fn a_failed_confirmation_falls_back_to_a_measured_pass() {
        let slo = parse_slo("p99<10ms").unwrap();
        let budget = Budget {
            max_runs: 8,
            resolution: 0.05,
        };
        let mut engine = fake(1000.0, 700.0);
        let mut seen: Vec<f64> = Vec::new();
        let f = search(&slo, budget, Unit::Transactions, |rate| {
            let mut r = engine(rate)?;
            // The second run at any rate is slow.
            if let Some(x) = rate {
                if seen.contains(&x) {
                    r.latency_us.p99 = 50_000.0;
                }
                seen.push(x);
            }
            Ok::<_, String>(r)
        })
        .unwrap();
        let best = f.best_rate.unwrap();
        let confirmed = f.probes.last().unwrap();
        assert!(!confirmed.passed && confirmed.rate.unwrap() > best);
        assert_eq!(f.bracket, (Some(best), confirmed.rate));
        let run = f.best.expect("the standing rate's run");
        assert_eq!(run.tps, Some(best));
    }

    #[test]
    fn nothing_passes_when_even_low_rates_fail() {
        let slo = parse_slo("p99<10ms").unwrap();
        let budget = Budget {
            max_runs: 20,
            resolution: 0.05,
        };
        let f = search(&slo, budget, Unit::Transactions, fake(1000.0, 0.0)).unwrap();
        assert_eq!(f.best_rate, None);
        assert!(f.bracket.1.unwrap() <= 1000.0 / 64.0 * 4.0);
        assert!(f.probes.len() < 1 + 20, "the floor ends the search");
    }

    #[test]
    fn no_capacity_and_probe_errors_are_errors() {
        let slo = parse_slo("p99<10ms").unwrap();
        let budget = Budget {
            max_runs: 3,
            resolution: 0.05,
        };
        let e = search(&slo, budget, Unit::Requests, fake(0.0, 10.0)).unwrap_err();
        assert_eq!(e.to_string(), "the capacity probe completed no request");
        let e = search(&slo, budget, Unit::Requests, |_| {
            Err::<LoadResult, _>("down".to_string())
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "down");
    }
}
