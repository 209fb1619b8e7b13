//! sysbench 1.0's text report for `cpu` and `memory` (it has no
//! machine-readable format for these tests): events per second (`cpu`),
//! MiB per second (`memory`), total events, and the event latency in
//! milliseconds (min, avg, max, 95th percentile).

use tare_record::{Better, LatencySummary, Metric};

use crate::parsed::{ParseError, Parsed};

/// Parses `sysbench cpu run` or `sysbench memory run` output.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut out = Parsed {
        version: text
            .lines()
            .next()
            .filter(|l| l.starts_with("sysbench "))
            .and_then(|l| l.split_whitespace().take(2).last())
            .map(|v| format!("sysbench {v}"))
            .unwrap_or_default(),
        ..Parsed::default()
    };
    // `key: value` after the label, the value's first word a number.
    let value_of = |label: &str| -> Option<f64> {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(label))
            .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
            .and_then(|v| v.trim_end_matches('s').parse::<f64>().ok())
            .filter(|v| v.is_finite())
    };
    if let Some(eps) = value_of("events per second") {
        out.metrics
            .push(Metric::new("events_per_s", eps, "events/s", Better::Higher));
    }
    // `24785.00 MiB transferred (12361.66 MiB/sec)`
    if let Some(mib_s) = text
        .lines()
        .find(|l| l.contains("MiB transferred ("))
        .and_then(|l| l.split_once('(')?.1.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite())
    {
        out.metrics
            .push(Metric::new("mib_per_s", mib_s, "MiB/s", Better::Higher));
    }
    if out.metrics.is_empty() {
        return Err(ParseError::new(
            "sysbench printed neither events per second nor MiB/sec",
        ));
    }
    if let Some(events) = value_of("total number of events") {
        out.operations = events as u64;
    }
    // The latency block is in milliseconds.
    let after_latency = text.find("Latency (ms):").map(|i| &text[i..]);
    if let Some(block) = after_latency {
        let ms = |label: &str| -> Option<f64> {
            block
                .lines()
                .map(str::trim)
                .find_map(|l| l.strip_prefix(label))
                .and_then(|r| r.trim_start_matches(':').trim().parse::<f64>().ok())
                .map(|v| v * 1e3)
                // After the scaling: 1.8e308 ms is finite, its µs are not.
                .filter(|v| v.is_finite())
        };
        if let (Some(avg), Some(p95)) = (ms("avg"), ms("95th percentile")) {
            out.latency = Some(LatencySummary {
                min: ms("min").unwrap_or(0.0),
                mean: avg,
                max: ms("max").unwrap_or(0.0),
                ..LatencySummary::default()
            });
            out.metrics
                .push(Metric::new("latency_p95_us", p95, "µs", Better::Lower));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_too_large_for_microseconds_is_left_out() {
        // Found by the `outputs` fuzz target.
        let text = "sysbench 1.0.20\nCPU speed:\n    events per second:  2013.41\n\n\
                    Latency (ms):\n         avg: 0.50\n         95th percentile: 1.797693e+308\n";
        let p = parse(text).unwrap();
        assert!(
            p.metrics.iter().all(|m| m.value.is_finite()),
            "{:?}",
            p.metrics
        );
        assert!(!p.metrics.iter().any(|m| m.name == "latency_p95_us"));
    }

    #[test]
    fn output_with_no_rate_is_an_error() {
        assert!(parse("sysbench 1.0.20\nFATAL: unknown test\n").is_err());
    }
}
