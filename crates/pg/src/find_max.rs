//! `tare pg --find-max --slo 'p99<10ms'`: the shared search
//! ([`tare_engine::find_max`]) with pg probes, each a run of `base` with its
//! clients, threads, scripts and `-T`, closed loop or at a rate.

use tare_engine::find_max::{self as search, Budget, SearchError, Style};

pub use tare_engine::find_max::{parse_slo, FindMax, Objective, Probe, Slo};

use crate::config::PgConfig;
use crate::PgError;

/// Searches for the highest transaction rate meeting `slo`, with at most
/// `max_runs` open-loop probes (plus the capacity probe and the
/// confirmation). `resolution`: stop when the bracket is narrower than this
/// fraction (0.05 = 5%).
pub fn find_max(
    base: &PgConfig,
    slo: &[Objective],
    max_runs: usize,
    resolution: f64,
) -> Result<FindMax, PgError> {
    let budget = Budget {
        max_runs,
        resolution,
    };
    search::search(slo, budget, |rate| {
        let mut c = base.clone();
        c.rate = rate;
        crate::run(&c)
    })
    .map_err(|e| match e {
        SearchError::Probe(e) => e,
        SearchError::NoCapacity => {
            PgError::Config("the capacity probe completed no transaction".into())
        }
    })
}

/// Text summary of a search, in pgbench's milliseconds.
pub fn render(f: &FindMax) -> String {
    search::render(
        f,
        Style {
            unit: "tps",
            time: |us| format!("{:.3}ms", us / 1e3),
        },
    )
}
