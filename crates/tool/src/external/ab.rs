//! ApacheBench 2.3's text output: `Complete requests`, `Failed requests`
//! with its breakdown (`Connect`, `Receive`, `Length`, `Exceptions`),
//! `Write errors`, `Non-2xx responses`, `Total transferred`, `Time taken
//! for tests`, `Requests per second`, `Time per request` (the mean), the
//! `Total:` row of its connection times (min, sd, median, max) and its
//! percentage table, all in milliseconds as ab prints them (the table and
//! the row in whole milliseconds: ab's resolution, docs/external.md).

use super::units::{count, number};
use super::Reported;
use crate::parsed::ParseError;

/// Reads ab's stdout.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported {
        error_kinds: vec!["connect", "read", "write", "status"],
        ..Reported::default()
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some((key, value)) = t.split_once(':') {
            field(key.trim(), value.trim(), t, &mut r)?;
        } else if let Some((p, v)) = t.split_once('%') {
            // `50%      0` and `100%      5 (longest request)`.
            let v = v.trim().trim_end_matches("(longest request)");
            if let (Some(p), Some(ms)) = (count(p), number(v)) {
                if p <= 100 {
                    r.latency_us.insert(format!("p{p}"), ms * 1e3);
                }
            }
        }
    }
    Ok(r)
}

fn bad(line: &str) -> ParseError {
    super::unreadable("ab", line)
}

/// The first number of `value` (`26453.03 [#/sec] (mean)`, `1.002 seconds`).
fn first(value: &str, line: &str) -> Result<f64, ParseError> {
    value
        .split_whitespace()
        .next()
        .and_then(number)
        .ok_or_else(|| bad(line))
}

fn whole(value: &str, line: &str) -> Result<u64, ParseError> {
    value
        .split_whitespace()
        .next()
        .and_then(count)
        .ok_or_else(|| bad(line))
}

fn field(key: &str, value: &str, line: &str, r: &mut Reported) -> Result<(), ParseError> {
    match key {
        "Complete requests" => r.requests = Some(whole(value, line)?),
        "Time taken for tests" => r.duration_s = Some(first(value, line)?),
        "Requests per second" => r.rps = Some(first(value, line)?),
        "Total transferred" => r.bytes_read = Some(whole(value, line)?),
        "Time per request" if value.ends_with("[ms] (mean)") => {
            r.latency_us
                .insert("mean".into(), first(value, line)? * 1e3);
        }
        "Failed requests" => {
            r.errors_by_kind
                .insert("failed".into(), whole(value, line)?);
        }
        "(Connect" => failed_breakdown(line, r)?,
        "Write errors" => {
            let n = whole(value, line)?;
            r.errors.write = n;
            r.errors_by_kind.insert("write".into(), n);
        }
        "Non-2xx responses" => {
            let n = whole(value, line)?;
            r.errors.status = n;
            r.errors_by_kind.insert("non_2xx".into(), n);
        }
        "Total" => total_row(value, r),
        _ => {}
    }
    Ok(())
}

/// `(Connect: 0, Receive: 0, Length: 2964, Exceptions: 0)`.
fn failed_breakdown(line: &str, r: &mut Reported) -> Result<(), ParseError> {
    let inner = line.trim_start_matches('(').trim_end_matches(')');
    for part in inner.split(',') {
        let (k, n) = part.split_once(':').ok_or_else(|| bad(line))?;
        let n = count(n).ok_or_else(|| bad(line))?;
        let kind = k.trim().to_ascii_lowercase();
        match kind.as_str() {
            "connect" => r.errors.connect = n,
            "receive" => r.errors.read = n,
            "length" | "exceptions" => {}
            _ => return Err(bad(line)),
        }
        r.errors_by_kind.insert(kind, n);
    }
    Ok(())
}

/// The connection times' `Total:` row: min, mean, sd, median, max (ms).
fn total_row(value: &str, r: &mut Reported) {
    let f: Vec<f64> = value.split_whitespace().filter_map(number).collect();
    if let [min, _mean, sd, _median, max] = f[..] {
        r.latency_us.insert("min".into(), min * 1e3);
        r.latency_us.insert("stdev".into(), sd * 1e3);
        r.latency_us.insert("max".into(), max * 1e3);
    }
}
