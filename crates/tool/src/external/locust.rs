//! Locust 2's final summary, which it logs on stderr when a headless run
//! ends (`--headless ... --only-summary`): the `Aggregated` row of the
//! request table (`# reqs`, `# fails`, Avg, Min, Max, Med in milliseconds,
//! `req/s`), the `Aggregated` row of `Response time percentiles
//! (approximated)` (50% to 100%, whole milliseconds), and the `Error
//! report` (occurrences of each error). Its `--csv` files are not read:
//! locust 2.12 rewrites them each second and writes none at the end, so
//! they miss the run's last second (docs/external.md).
//!
//! Locust counts a failed request among its requests; tare counts a
//! response with an error status as a completed request and a connection
//! or read failure as none, so `requests` is `# reqs` less the failures
//! that got no response. Errors: `BadStatusCode` and `HTTPError` are
//! status errors; connection refusals connect errors; time-outs timeout
//! errors; any other read errors.

use super::units::{count, number};
use super::Reported;
use crate::parsed::ParseError;

#[derive(PartialEq)]
enum Section {
    None,
    Requests,
    Percentiles(Vec<String>),
    Errors,
}

/// Reads locust's stderr.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported {
        error_kinds: vec!["connect", "read", "timeout", "status"],
        ..Reported::default()
    };
    let mut section = Section::None;
    let (mut reqs, mut fails) = (None, 0u64);
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Type ") && t.contains("# reqs") && t.contains("# fails") {
            section = Section::Requests;
            continue;
        }
        if t.starts_with("Type ") && t.contains("50%") {
            let names = t
                .split_whitespace()
                .filter(|w| w.ends_with('%'))
                .map(percentile_key)
                .collect();
            section = Section::Percentiles(names);
            continue;
        }
        if t.starts_with("# occurrences") {
            section = Section::Errors;
            continue;
        }
        if t.starts_with("--") || t.is_empty() {
            continue;
        }
        match &section {
            Section::Requests if t.starts_with("Aggregated") => {
                let (n, f) = requests_row(t, &mut r)?;
                (reqs, fails) = (Some(n), f);
            }
            Section::Percentiles(names) if t.starts_with("Aggregated") => {
                percentiles_row(t, names, &mut r)?;
            }
            // A line that is not `N  error` ends the report.
            Section::Errors if !error_line(t, &mut r) => section = Section::None,
            _ => {}
        }
    }
    if let Some(n) = reqs {
        // Failures the error report does not name count as read errors.
        let named = r.errors.total();
        if fails > named {
            r.errors.read = r.errors.read.saturating_add(fails - named);
        }
        let no_response = r.errors.total() - r.errors.status;
        r.requests = Some(n.saturating_sub(no_response));
    }
    Ok(r)
}

/// The request table's `Aggregated` row: its latencies and rate into
/// `r`; returns `# reqs` and `# fails`.
fn requests_row(t: &str, r: &mut Reported) -> Result<(u64, u64), ParseError> {
    let parts: Vec<&str> = t.split('|').map(str::trim).collect();
    let [counts, times, rates] = parts[..] else {
        return Err(bad(t));
    };
    let words: Vec<&str> = counts.split_whitespace().collect();
    let [_, n, f] = words[..] else {
        return Err(bad(t));
    };
    let reqs = count(n).ok_or_else(|| bad(t))?;
    let fails = f.split('(').next().and_then(count).ok_or_else(|| bad(t))?;
    let times: Vec<f64> = times.split_whitespace().filter_map(number).collect();
    let [avg, min, max, med] = times[..] else {
        return Err(bad(t));
    };
    for (k, v) in [("mean", avg), ("min", min), ("max", max), ("p50", med)] {
        r.latency_us.insert(k.into(), v * 1e3);
    }
    r.rps = Some(
        rates
            .split_whitespace()
            .next()
            .and_then(number)
            .ok_or_else(|| bad(t))?,
    );
    Ok((reqs, fails))
}

/// The percentile table's `Aggregated` row, its columns `names`.
fn percentiles_row(t: &str, names: &[String], r: &mut Reported) -> Result<(), ParseError> {
    let values: Vec<&str> = t.split_whitespace().skip(1).collect();
    if values.len() < names.len() {
        return Err(bad(t));
    }
    for (k, v) in names.iter().zip(values) {
        if v == "N/A" {
            continue;
        }
        let ms = number(v).ok_or_else(|| bad(t))?;
        r.latency_us.insert(k.clone(), ms * 1e3);
    }
    Ok(())
}

/// One line of the error report, `N  error`, counted by its kind; `false`
/// when the line is not one.
fn error_line(t: &str, r: &mut Reported) -> bool {
    let Some((n, what)) = t
        .split_once(char::is_whitespace)
        .and_then(|(n, w)| Some((count(n)?, w)))
    else {
        return false;
    };
    let what = what.trim();
    let e = &mut r.errors;
    let slot = if what.contains("BadStatusCode") || what.contains("HTTPError") {
        &mut e.status
    } else if what.contains("ConnectionRefused") {
        &mut e.connect
    } else if what.contains("Timeout") || what.contains("timed out") {
        &mut e.timeout
    } else {
        &mut e.read
    };
    *slot = slot.saturating_add(n);
    let key: String = what.chars().take(120).collect();
    let k = r.errors_by_kind.entry(key).or_insert(0);
    *k = k.saturating_add(n);
    true
}

/// `99.9%` as `p999`, `50%` as `p50`.
fn percentile_key(h: &str) -> String {
    format!("p{}", h.trim_end_matches('%').replace('.', ""))
}

fn bad(line: &str) -> ParseError {
    super::unreadable("locust", line)
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentile_headers_are_keys() {
        assert_eq!(super::percentile_key("99.9%"), "p999");
        assert_eq!(super::percentile_key("50%"), "p50");
        assert_eq!(super::percentile_key("100%"), "p100");
    }
}
