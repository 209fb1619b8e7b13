//! `tare http --find-max --slo 'p99<10ms'`: the shared search
//! ([`tare_engine::find_max`]) with HTTP probes, each a run of `base` with
//! its connections, threads and duration, closed loop or at a rate.

use tare_engine::find_max::{self as search, Budget, SearchError, Style};

pub use tare_engine::find_max::{parse_slo, FindMax, Objective, Probe, Slo};

use crate::config::HttpConfig;
use crate::HttpError;

/// Searches for the highest rate meeting `slo`, with at most `max_runs` open-loop
/// probes (plus the capacity probe and the confirmation). `resolution`: stop
/// when the bracket is narrower than this fraction (0.05 = 5%).
pub fn find_max(
    base: &HttpConfig,
    slo: &[Objective],
    max_runs: usize,
    resolution: f64,
) -> Result<FindMax, HttpError> {
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
            HttpError::Config("the capacity probe completed no request".into())
        }
    })
}

/// Text summary of a search, in wrk's units.
pub fn render(f: &FindMax) -> String {
    search::render(
        f,
        Style {
            unit: "req/s",
            time: crate::wrk_text::format_time_us,
        },
    )
}
