//! redis-benchmark 7's default text: one block per test (`====== GET
//! ======`), each with `N requests completed in S seconds`, `throughput
//! summary: X requests per second` and its `latency summary (msec)` (avg,
//! min, p50, p95, p99, max). Several tests run one after another: their
//! counts and seconds add, and the latency (a summary per test, which do
//! not merge) is recorded only for a run of one test. Its progress lines
//! end in `\r`, so lines are split there too. redis-benchmark counts no
//! errors.

use super::units::{count, number};
use super::Reported;
use crate::parsed::ParseError;

/// Reads redis-benchmark's stdout.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported::default();
    let (mut tests, mut requests, mut seconds) = (0u32, 0u64, 0f64);
    let mut lines = text.split(['\n', '\r']).map(str::trim);
    while let Some(t) = lines.next() {
        if t.starts_with("======") && t.ends_with("======") {
            tests += 1;
        } else if let Some((n, rest)) = t.split_once(" requests completed in ") {
            let s = rest.strip_suffix(" seconds").and_then(number);
            let (Some(n), Some(s)) = (count(n), s) else {
                return Err(bad(t));
            };
            requests = requests.saturating_add(n);
            seconds += s;
        } else if t == "latency summary (msec):" {
            // A header line, then the values.
            let names: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
            let values: Vec<f64> = lines
                .next()
                .unwrap_or("")
                .split_whitespace()
                .filter_map(number)
                .collect();
            if names.len() != values.len() {
                return Err(bad(t));
            }
            for (n, v) in names.iter().zip(values) {
                let key = if *n == "avg" { "mean" } else { n };
                r.latency_us.insert(key.to_string(), v * 1e3);
            }
        }
    }
    if tests > 0 || requests > 0 {
        r.requests = Some(requests);
        r.duration_s = Some(seconds);
        if seconds > 0.0 {
            r.rps = Some(requests as f64 / seconds);
        }
    }
    if tests > 1 {
        r.latency_us.clear();
    }
    Ok(r)
}

fn bad(line: &str) -> ParseError {
    super::unreadable("redis-benchmark", line)
}
