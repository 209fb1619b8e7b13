//! fio's `--output-format=json`: per direction IOPS, bandwidth and the
//! completion-latency percentiles (the IBM study's block I/O rows, fio
//! 2.0.8 with libaio and direct=1: docs/studies.md, seed 002).
//!
//! fio may print lines before the JSON object (warnings such as `note: both
//! iodepth >= 1 and synchronous I/O engine are selected`); the object starts
//! at the first line that opens with `{`. Several jobs (no
//! `group_reporting`) add up: IOPS and bandwidth sum, latency is the
//! I/O-weighted mean and the worst job's percentile (fio's JSON has no
//! histogram to merge).

use serde_json::Value;
use tare_record::{Better, LatencySummary, Metric};

use crate::parsed::{ParseError, Parsed};

/// The percentiles fio prints by default that the record keeps, with the
/// suffix of their metric names.
const PERCENTILES: &[(&str, &str)] = &[
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("99.000000", "p99"),
    ("99.900000", "p999"),
];

/// Parses fio's JSON output. A job that reports an error (`"error" : 22`)
/// makes the run an error, with fio's own message if it printed one.
pub fn parse(stdout: &str) -> Result<Parsed, ParseError> {
    // Offsets over whole lines, terminators included (`lines()` drops a
    // `\r\n` as one character short: a CRLF line then put the offset
    // inside a UTF-8 character, found by the outputs fuzz target).
    let start = stdout
        .split_inclusive('\n')
        .scan(0usize, |at, line| {
            let here = *at;
            *at += line.len();
            Some((here, line))
        })
        .find(|(_, l)| l.starts_with('{'))
        .map(|(at, _)| at)
        .ok_or_else(|| ParseError::new("fio printed no JSON object"))?;
    let doc: Value = serde_json::from_str(stdout[start..].trim_end())
        .map_err(|e| ParseError::new(format!("fio's JSON does not parse: {e}")))?;
    let version = doc
        .get("fio version")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .filter(|j| !j.is_empty())
        .ok_or_else(|| ParseError::new("fio's JSON has no jobs"))?;
    for job in jobs {
        let code = job.get("error").and_then(Value::as_i64).unwrap_or(0);
        if code != 0 {
            let name = job.get("jobname").and_then(Value::as_str).unwrap_or("?");
            return Err(ParseError::new(format!(
                "fio job {name} failed with error {code} ({})",
                errno_text(code)
            )));
        }
    }
    let mut out = Parsed {
        version,
        ..Parsed::default()
    };
    let mut total_iops = 0.0;
    let mut directions = 0;
    for dir in ["read", "write"] {
        let Some(d) = Direction::sum(jobs, dir) else {
            continue;
        };
        directions += 1;
        total_iops += d.iops;
        out.operations += d.ios;
        out.metrics.extend([
            Metric::new(&format!("{dir}_iops"), d.iops, "IOPS", Better::Higher),
            Metric::new(
                &format!("{dir}_mb_s"),
                d.bw_bytes / 1e6,
                "MB/s",
                Better::Higher,
            ),
            Metric::new(
                &format!("{dir}_clat_mean_us"),
                d.latency.mean,
                "µs",
                Better::Lower,
            ),
        ]);
        for (p, (_, suffix)) in d.percentiles.iter().zip(PERCENTILES) {
            out.metrics.push(Metric::new(
                &format!("{dir}_clat_{suffix}_us"),
                *p,
                "µs",
                Better::Lower,
            ));
        }
        // The first direction with I/O is the record's latency (a mixed
        // job's read side, as fio lists it first).
        if out.latency.is_none() {
            out.latency = Some(d.latency);
        }
    }
    if directions == 0 {
        return Err(ParseError::new("fio completed no I/O"));
    }
    if directions == 2 {
        out.metrics
            .push(Metric::new("iops", total_iops, "IOPS", Better::Higher));
    }
    Ok(out)
}

/// One direction summed over jobs.
struct Direction {
    ios: u64,
    iops: f64,
    bw_bytes: f64,
    latency: LatencySummary,
    percentiles: Vec<f64>,
}

impl Direction {
    /// `None` when no job did I/O in this direction.
    fn sum(jobs: &[Value], dir: &str) -> Option<Direction> {
        let mut d = Direction {
            ios: 0,
            iops: 0.0,
            bw_bytes: 0.0,
            latency: LatencySummary::default(),
            percentiles: vec![0.0; PERCENTILES.len()],
        };
        let mut weighted_mean = 0.0;
        for job in jobs {
            let Some(side) = job.get(dir) else { continue };
            let ios = side.get("total_ios").and_then(Value::as_u64).unwrap_or(0);
            if ios == 0 {
                continue;
            }
            let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            d.ios += ios;
            d.iops += f(side, "iops");
            d.bw_bytes += f(side, "bw_bytes");
            let clat = side.get("clat_ns").unwrap_or(&Value::Null);
            let us = |ns: f64| ns / 1e3;
            weighted_mean += f(clat, "mean") * ios as f64;
            d.latency.max = d.latency.max.max(us(f(clat, "max")));
            d.latency.stdev = d.latency.stdev.max(us(f(clat, "stddev")));
            let min = us(f(clat, "min"));
            d.latency.min = if d.latency.min == 0.0 {
                min
            } else {
                d.latency.min.min(min)
            };
            let pct = clat.get("percentile").unwrap_or(&Value::Null);
            for (slot, (key, _)) in d.percentiles.iter_mut().zip(PERCENTILES) {
                *slot = slot.max(us(f(pct, key)));
            }
        }
        if d.ios == 0 {
            return None;
        }
        d.latency.mean = weighted_mean / d.ios as f64 / 1e3;
        d.latency.p50 = d.percentiles[0];
        d.latency.p90 = d.percentiles[1];
        d.latency.p99 = d.percentiles[2];
        d.latency.p999 = d.percentiles[3];
        Some(d)
    }
}

/// The errno fio reports a job failed with, in words (the ones a benchmark
/// meets: a filesystem refusing O_DIRECT is EINVAL).
fn errno_text(code: i64) -> &'static str {
    match code {
        1 => "EPERM",
        2 => "ENOENT: no such file",
        5 => "EIO",
        12 => "ENOMEM",
        13 => "EACCES: permission denied",
        22 => "EINVAL: invalid argument, e.g. a filesystem that refuses direct I/O",
        28 => "ENOSPC: no space left",
        95 => "EOPNOTSUPP: not supported by the filesystem",
        _ => "see fio's message",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_error_is_an_error_with_its_errno_in_words() {
        let text = r#"{"fio version":"fio-3.33","jobs":[{"jobname":"r","error":22}]}"#;
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains("error 22") && e.contains("direct I/O"), "{e}");
    }

    #[test]
    fn lines_before_the_object_are_skipped_and_no_io_is_an_error() {
        let text = "note: something\n{\"jobs\":[{\"jobname\":\"r\",\"error\":0,\"read\":{\"total_ios\":0}}]}\n";
        assert!(parse(text).unwrap_err().to_string().contains("no I/O"));
        assert!(parse("fio: engine libaio not loadable\n").is_err());
    }

    #[test]
    fn crlf_lines_before_the_object_are_skipped_too() {
        let text = "note\r\n\r\né\r\n{\"jobs\":[{\"jobname\":\"r\",\"error\":0,\"read\":{\"total_ios\":0}}]}\r\n";
        assert!(parse(text).unwrap_err().to_string().contains("no I/O"));
    }
}
