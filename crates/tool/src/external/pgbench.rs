//! pgbench 15's text output: `number of transactions actually processed`
//! (`N`, or `N/M` with `-t`), `number of failed transactions` (pgbench
//! counts them apart from the processed ones, as tare pg does: errors of
//! kind status), `duration` (planned, seconds), `latency average` and, when
//! pgbench prints it, `latency stddev` (milliseconds), and `tps = ...
//! (without initial connection time)`. pgbench prints no percentiles.

use super::units::{count, number};
use super::Reported;
use crate::parsed::ParseError;

/// Reads pgbench's stdout.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported {
        error_kinds: vec!["status"],
        ..Reported::default()
    };
    for line in text.lines() {
        let t = line.trim();
        let Some((key, value)) = t.split_once([':', '=']) else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "number of transactions actually processed" => {
                let done = value.split('/').next().unwrap_or("");
                r.requests = Some(count(done).ok_or_else(|| bad(t))?);
            }
            "number of failed transactions" => {
                let n = first(value).and_then(count).ok_or_else(|| bad(t))?;
                r.errors.status = n;
                r.errors_by_kind.insert("failed".into(), n);
            }
            "duration" => {
                let s = value
                    .strip_suffix(" s")
                    .and_then(number)
                    .ok_or_else(|| bad(t))?;
                r.duration_s = Some(s);
            }
            "latency average" => {
                r.latency_us
                    .insert("mean".into(), ms(value).ok_or_else(|| bad(t))?);
            }
            "latency stddev" => {
                r.latency_us
                    .insert("stdev".into(), ms(value).ok_or_else(|| bad(t))?);
            }
            "tps" if value.ends_with("(without initial connection time)") => {
                r.rps = Some(first(value).and_then(number).ok_or_else(|| bad(t))?);
            }
            _ => {}
        }
    }
    Ok(r)
}

/// Transactions in each second from `-P 1`'s progress lines on stderr
/// (`progress: 1.0 s, 55298.0 tps, lat 0.051 ms stddev 0.269, 0 failed`:
/// the rate over the last interval); empty without `-P 1`, whose
/// intervals are not seconds.
pub fn timeline(stderr: &str) -> Vec<u64> {
    super::progress::per_second(stderr, |line| {
        let mut parts = line.strip_prefix("progress: ")?.split(", ");
        let at = parts.next()?.strip_suffix(" s")?;
        let tps = parts.next()?.strip_suffix(" tps")?;
        Some((number(at)?, number(tps)?))
    })
}

fn bad(line: &str) -> ParseError {
    super::unreadable("pgbench", line)
}

fn first(value: &str) -> Option<&str> {
    value.split_whitespace().next()
}

/// `0.165 ms` in microseconds.
fn ms(value: &str) -> Option<f64> {
    value.strip_suffix(" ms").and_then(number).map(|v| v * 1e3)
}

#[cfg(test)]
mod tests {
    #[test]
    fn progress_lines_each_second_are_the_timeline() {
        // As pgbench 15 printed it on this machine (-P 1 -T 1).
        let one = "progress: 1.0 s, 55298.0 tps, lat 0.051 ms stddev 0.269, 0 failed\n";
        assert_eq!(super::timeline(one), [55298]);
        let two = format!("{one}progress: 2.0 s, 100.4 tps, lat 1 ms stddev 0, 0 failed\n");
        assert_eq!(super::timeline(&two), [55298, 100]);
        let every_5 = "progress: 5.0 s, 10.0 tps, lat 1 ms stddev 0, 0 failed\n";
        assert!(super::timeline(every_5).is_empty(), "not seconds");
        assert!(super::timeline("pgbench: error\n").is_empty());
    }
}
