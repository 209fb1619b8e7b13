//! h2load's (nghttp2 1.52) text output: `finished in 1.00s, 22413.00
//! req/s, ...`, the `requests:` counts (`done`, `errored`, `timeout`),
//! `status codes:` by class, `traffic:` (its exact byte count in
//! parentheses), `Application protocol:` and the `time for request:` row
//! (min, max, mean, sd). h2load prints no percentiles: they are absent.
//! Its `--log-file` (a line per request: start, status, microseconds to
//! the end of the response) is the whole distribution ([`log`]).

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

/// The file `--log-file=PATH` (or `--log-file PATH`) in h2load's
/// arguments names, as given: relative to its working directory.
pub fn log_file(args: &[String]) -> Option<&str> {
    args.iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--log-file") {
            Some(rest) => match rest.strip_prefix('=') {
                Some(path) => Some(path),
                None if rest.is_empty() => args.get(i + 1).map(String::as_str),
                None => None,
            },
            None => None,
        })
}

/// h2load's `--log-file`: `start_us<TAB>status<TAB>latency_us` a line
/// (more columns may follow, h2load's help says): each completed
/// request's latency, as (µs, count) pairs in increasing order. A failed
/// stream (status -1) completed nothing and is not among them.
pub fn log(text: &str) -> Result<Vec<(u64, u64)>, ParseError> {
    let mut counts = std::collections::BTreeMap::<u64, u64>::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut cols = line.split('\t');
        let (Some(_start), Some(status), Some(us)) = (cols.next(), cols.next(), cols.next()) else {
            return Err(bad(line));
        };
        let status: i64 = status.trim().parse().map_err(|_| bad(line))?;
        let us: u64 = us.trim().parse().map_err(|_| bad(line))?;
        if status == -1 {
            continue;
        }
        *counts.entry(us).or_default() += 1;
    }
    Ok(counts.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_file_is_found_in_either_spelling() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            log_file(&args(&["-c4", "--log-file=r.tsv", "u"])),
            Some("r.tsv")
        );
        assert_eq!(
            log_file(&args(&["--log-file", "r.tsv", "u"])),
            Some("r.tsv")
        );
        assert_eq!(log_file(&args(&["--log-file"])), None);
        assert_eq!(log_file(&args(&["--log-files=x", "u"])), None);
    }

    #[test]
    fn a_log_gives_completed_requests_by_latency() {
        let text = "1700000000000000\t200\t120\n1700000000000100\t404\t95\n\
                    1700000000000200\t-1\t3000\n1700000000000300\t200\t120\n";
        assert_eq!(log(text).unwrap(), vec![(95, 1), (120, 2)]);
        assert!(log("1\t200\n").is_err());
        assert!(log("1\tOK\t3\n").is_err());
    }
}
