//! h2load's (nghttp2 1.52) text output: `finished in 1.00s, 22413.00
//! req/s, ...`, the `requests:` counts (`done`, `errored`, `timeout`),
//! `status codes:` by class, `traffic:` (its exact byte count in
//! parentheses), `Application protocol:` and the `time for request:` row
//! (min, max, mean, sd). h2load prints no percentiles: they are absent.

use super::units::{count, duration_us, number};
use super::Reported;
use crate::parsed::ParseError;

/// Reads h2load's stdout.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported {
        error_kinds: vec!["read", "timeout", "status"],
        ..Reported::default()
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("finished in ") {
            finished(rest, &mut r).ok_or_else(|| bad(t))?;
        } else if let Some(rest) = t.strip_prefix("requests: ") {
            requests(rest, &mut r).ok_or_else(|| bad(t))?;
        } else if let Some(rest) = t.strip_prefix("status codes: ") {
            status(rest, &mut r).ok_or_else(|| bad(t))?;
        } else if let Some(rest) = t.strip_prefix("traffic: ") {
            let exact = rest.split_once('(').and_then(|(_, b)| b.split_once(')'));
            r.bytes_read = Some(exact.and_then(|(n, _)| count(n)).ok_or_else(|| bad(t))?);
        } else if let Some(rest) = t.strip_prefix("Application protocol: ") {
            r.protocol = Some(rest.trim().chars().take(32).collect());
        } else if let Some(rest) = t.strip_prefix("time for request:") {
            let f: Vec<f64> = rest.split_whitespace().filter_map(duration_us).collect();
            if let [min, max, mean, sd] = f[..] {
                for (k, v) in [("min", min), ("max", max), ("mean", mean), ("stdev", sd)] {
                    r.latency_us.insert(k.into(), v);
                }
            }
        }
    }
    if r.requests == Some(0) {
        // h2load prints 0us for a run that completed nothing: no latency.
        r.latency_us.clear();
    }
    Ok(r)
}

fn bad(line: &str) -> ParseError {
    super::unreadable("h2load", line)
}

/// `1.00s, 22413.00 req/s, 2.91MB/s`.
fn finished(rest: &str, r: &mut Reported) -> Option<()> {
    let mut parts = rest.split(", ");
    r.duration_s = Some(duration_us(parts.next()?)? / 1e6);
    r.rps = Some(number(parts.next()?.strip_suffix(" req/s")?)?);
    Some(())
}

/// `N total, N started, N done, N succeeded, N failed, N errored, N timeout`.
fn requests(rest: &str, r: &mut Reported) -> Option<()> {
    let mut errored = None;
    for part in rest.split(", ") {
        let (n, what) = part.trim().split_once(' ')?;
        let n = count(n)?;
        match what {
            "done" => r.requests = Some(n),
            "errored" => errored = Some(n),
            "timeout" => {
                r.errors.timeout = n;
                r.errors_by_kind.insert("timeout".into(), n);
            }
            "failed" => {
                r.errors_by_kind.insert("failed".into(), n);
            }
            _ => {}
        }
    }
    // A timed-out request is among the errored ones (h2load.cc,
    // `Client::timeout` abandons its streams as errors).
    let errored = errored?;
    r.errors_by_kind.insert("errored".into(), errored);
    r.errors.read = errored.saturating_sub(r.errors.timeout);
    Some(())
}

/// `N 2xx, N 3xx, N 4xx, N 5xx`: 4xx and 5xx are status errors.
fn status(rest: &str, r: &mut Reported) -> Option<()> {
    for part in rest.split(", ") {
        let (n, class) = part.trim().split_once(' ')?;
        let n = count(n)?;
        if class == "4xx" || class == "5xx" {
            r.errors.status += n;
            r.errors_by_kind.insert(class.into(), n);
        }
    }
    Some(())
}
