//! sysbench 1.0's text output (its OLTP tests against MySQL/MariaDB):
//! `transactions: N (X per sec.)` (else, for a test without transactions,
//! `total number of events`), `ignored errors` (deadlocks and lock waits
//! sysbench retried: not failures, as tare mysql keeps them apart from
//! its errors) and `reconnects`, both in `errors_by_kind` only (sysbench
//! counts no failed transactions: any other error ends the run, which
//! exits non-zero), `total time`, and the
//! `Latency (ms)` block: min, avg, max and the one percentile it was asked
//! for (`95th percentile` by default; `--percentile=99`: p99). With
//! `--histogram=on` its latency histogram (a value in milliseconds and a
//! count per line) gives p50 to p99.99, each the value of the bucket the
//! rank falls in (at most the printed max); the printed percentile wins
//! for its own key. With
//! `--report-interval=1` its `[ Ns ] ... tps: X` lines are the timeline.

use super::units::{count, number};
use super::Reported;
use crate::parsed::ParseError;

/// Reads sysbench's stdout.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported::default();
    let (mut events, mut transactions) = (None, None);
    let mut histogram: Vec<(f64, u64)> = Vec::new();
    let mut section = "";
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            section = "";
            continue;
        }
        if t == "Latency (ms):" {
            section = "latency";
            continue;
        }
        if t.starts_with("Latency histogram") {
            section = "histogram";
            continue;
        }
        if section == "histogram" {
            let bucket = histogram_line(t)?;
            if histogram.len() < 100_000 {
                histogram.extend(bucket);
            }
            continue;
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if section == "latency" {
            latency_line(t, key.trim(), value, &mut r)?;
            continue;
        }
        match key.trim() {
            "transactions" => {
                let n = first(value).and_then(count).ok_or_else(|| bad(t))?;
                transactions = Some(n);
                r.rps = Some(per_sec(value).ok_or_else(|| bad(t))?);
            }
            "ignored errors" => {
                let n = first(value).and_then(count).ok_or_else(|| bad(t))?;
                r.errors_by_kind.insert("ignored".into(), n);
            }
            "reconnects" => {
                let n = first(value).and_then(count).ok_or_else(|| bad(t))?;
                r.errors_by_kind.insert("reconnects".into(), n);
            }
            "total time" => {
                let s = value
                    .strip_suffix('s')
                    .and_then(number)
                    .ok_or_else(|| bad(t))?;
                r.duration_s = Some(s);
            }
            "total number of events" => {
                events = Some(count(value).ok_or_else(|| bad(t))?);
            }
            _ => {}
        }
    }
    r.requests = transactions.or(events);
    if transactions.is_none() {
        // Events per second are not transactions per second: the count
        // over the time stands.
        r.rps = None;
    }
    histogram_percentiles(&histogram, &mut r);
    Ok(r)
}

/// A line of the latency histogram, `0.954 |*     3`: its value and
/// count; `None` for its header.
fn histogram_line(t: &str) -> Result<Option<(f64, u64)>, ParseError> {
    if t.starts_with("value ") {
        return Ok(None);
    }
    let mut parts = t.split('|');
    let value = parts.next().and_then(number);
    let n = parts
        .next()
        .and_then(|rest| rest.split_whitespace().last())
        .and_then(count);
    let (Some(v), Some(n)) = (value, n) else {
        return Err(bad(t));
    };
    Ok(Some((v, n)))
}

/// A line of the `Latency (ms)` block (`key: value`) into `r`.
fn latency_line(t: &str, key: &str, value: &str, r: &mut Reported) -> Result<(), ParseError> {
    let name = match key {
        "min" => "min".to_string(),
        "avg" => "mean".to_string(),
        "max" => "max".to_string(),
        "sum" => return Ok(()),
        _ => match key.strip_suffix("th percentile").and_then(count) {
            Some(p) if (1..=100).contains(&p) => format!("p{p}"),
            _ => return Err(bad(t)),
        },
    };
    let ms = number(value).ok_or_else(|| bad(t))?;
    r.latency_us.insert(name, ms * 1e3);
    Ok(())
}

/// p50 to p99.99 from the histogram, where sysbench printed none of its own.
fn histogram_percentiles(histogram: &[(f64, u64)], r: &mut Reported) {
    for (name, q) in [
        ("p50", 0.5),
        ("p75", 0.75),
        ("p90", 0.9),
        ("p99", 0.99),
        ("p999", 0.999),
        ("p9999", 0.9999),
    ] {
        // A bucket's value may lie above the largest latency in it:
        // clamped to the printed max.
        let max = r.latency_us.get("max").copied().unwrap_or(f64::INFINITY);
        if let Some(v) = quantile(histogram, q) {
            r.latency_us
                .entry(name.into())
                .or_insert((v * 1e3).min(max));
        }
    }
}

/// The value of the bucket holding rank `ceil(q * total)`, as sysbench
/// computes its own percentile; `None` for an empty histogram.
fn quantile(h: &[(f64, u64)], q: f64) -> Option<f64> {
    let total: u64 = h.iter().fold(0u64, |a, (_, n)| a.saturating_add(*n));
    if total == 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0u64;
    for (v, n) in h {
        seen = seen.saturating_add(*n);
        if seen >= rank {
            return Some(*v);
        }
    }
    h.last().map(|(v, _)| *v)
}

/// Transactions in each second from `--report-interval=1`'s lines on
/// stdout (`[ 1s ] thds: 4 tps: 1686.86 qps: ...`); empty without them or
/// when their intervals are not seconds.
pub fn timeline(stdout: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut last = 0.0;
    for line in stdout.lines() {
        let Some(rest) = line.trim().strip_prefix('[') else {
            continue;
        };
        let Some((at, rest)) = rest.split_once("s ]") else {
            continue;
        };
        let Some(at) = number(at) else { continue };
        let tps = rest
            .split_once("tps: ")
            .and_then(|(_, v)| v.split_whitespace().next())
            .and_then(number);
        let Some(tps) = tps else { continue };
        if (at - last - 1.0).abs() > 0.01 || out.len() >= 1_000_000 {
            return Vec::new();
        }
        last = at;
        out.push(tps.round() as u64);
    }
    out
}

fn bad(line: &str) -> ParseError {
    super::unreadable("sysbench", line)
}

fn first(value: &str) -> Option<&str> {
    value.split_whitespace().next()
}

/// `2651   (1321.88 per sec.)`: the rate.
fn per_sec(value: &str) -> Option<f64> {
    let (_, rate) = value.split_once('(')?;
    number(rate.strip_suffix(" per sec.)")?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn report_lines_each_second_are_the_timeline() {
        let one = "[ 1s ] thds: 4 tps: 1686.86 qps: 27033.68 (r/w/o: 23655.96/0.00/3377.71) lat (ms,95%): 3.55 err/s: 0.00 reconn/s: 0.00\n";
        assert_eq!(super::timeline(one), [1687]);
        let two = format!("{one}[ 2s ] thds: 4 tps: 956.47 qps: 1\n");
        assert_eq!(super::timeline(&two), [1687, 956]);
        assert!(super::timeline("[ 5s ] thds: 4 tps: 1.0 qps: 1\n").is_empty());
    }

    #[test]
    fn a_quantile_is_the_bucket_its_rank_falls_in() {
        let h = [(1.0, 50), (2.0, 49), (9.0, 1)];
        assert_eq!(super::quantile(&h, 0.5), Some(1.0));
        assert_eq!(super::quantile(&h, 0.99), Some(2.0));
        assert_eq!(super::quantile(&h, 0.999), Some(9.0));
        assert_eq!(super::quantile(&[], 0.5), None);
    }
}
