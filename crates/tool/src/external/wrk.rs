//! wrk 4's text output (`wrk --latency`, with or without a Lua script):
//! the count, duration and bytes line, `Socket errors`, `Non-2xx or 3xx
//! responses` (wrk counts status > 399), `Requests/sec`, the `Latency`
//! row of its thread stats (mean, stdev, max) and, with `--latency`, its
//! 50/75/90/99% distribution. A Lua `done()` that prints tare's summary
//! lines (`tare-done p99.9=1234`, microseconds; docs/external.md) adds the
//! percentiles and the minimum wrk's text lacks, and its `hist` lines the
//! whole distribution: every distinct latency wrk kept (a count per
//! microsecond) and its count, closed by a `hist-end` line that says
//! whether the walk was whole.

use super::units::{bytes, count, duration_us, number};
use super::Reported;
use crate::parsed::ParseError;

/// Reads wrk's stdout.
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut r = Reported {
        error_kinds: vec!["connect", "read", "write", "timeout", "status"],
        ..Reported::default()
    };
    let mut in_distribution = false;
    let mut hist = Hist::default();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("tare-done hist ") {
            hist.read_pairs(rest)?;
            continue;
        }
        if let Some(rest) = t.strip_prefix("tare-done hist-end ") {
            hist.read_end(rest)?;
            continue;
        }
        if let Some(rest) = t.strip_prefix("tare-done ") {
            done_line(rest, &mut r);
            continue;
        }
        if t == "Latency Distribution" {
            in_distribution = true;
            continue;
        }
        if in_distribution {
            if let Some((p, v)) = distribution_line(t) {
                r.latency_us.insert(p, v);
                continue;
            }
            in_distribution = false;
        }
        if let Some(rest) = t.strip_prefix("Latency ") {
            thread_stats(rest, &mut r);
        } else if t.contains(" requests in ") {
            totals(t, &mut r)?;
        } else if let Some(rest) = t.strip_prefix("Socket errors:") {
            socket_errors(rest, &mut r)?;
        } else if let Some(rest) = t.strip_prefix("Non-2xx or 3xx responses:") {
            let n = count(rest).ok_or_else(|| bad(t))?;
            r.errors.status = n;
            r.errors_by_kind.insert("non_2xx_3xx".into(), n);
        } else if let Some(rest) = t.strip_prefix("Requests/sec:") {
            r.rps = Some(number(rest).ok_or_else(|| bad(t))?);
        }
    }
    if r.requests == Some(0) {
        // wrk prints 0.00us for a run that completed nothing: no latency.
        r.latency_us.clear();
    }
    r.histogram = hist.finish()?;
    Ok(r)
}

/// The `hist` lines read so far and the `hist-end` line.
#[derive(Default)]
struct Hist {
    /// (µs, count), distinct values in increasing order.
    pairs: Vec<(u64, u64)>,
    /// The sum of the counts.
    total: u64,
    /// `hist-end`: how many distinct values wrk had, and the count when
    /// the walk was whole (`None`: cut at its budget).
    end: Option<(u64, Option<u64>)>,
}

impl Hist {
    /// `33:1 34:5 35:120`.
    fn read_pairs(&mut self, rest: &str) -> Result<(), ParseError> {
        if self.end.is_some() {
            return Err(bad(rest));
        }
        for pair in rest.split_whitespace() {
            let parsed = pair
                .split_once(':')
                .and_then(|(v, c)| Some((v.parse::<u64>().ok()?, c.parse::<u64>().ok()?)));
            let Some((v, c)) = parsed else {
                return Err(bad(pair));
            };
            // wrk gives each distinct value once, in order, with a count.
            if c == 0 || self.pairs.last().is_some_and(|(last, _)| *last >= v) {
                return Err(bad(pair));
            }
            self.total = self.total.checked_add(c).ok_or_else(|| bad(pair))?;
            self.pairs.push((v, c));
        }
        Ok(())
    }

    /// `values=5 count=44` (the walk was whole) or `values=5 cut=3`.
    fn read_end(&mut self, rest: &str) -> Result<(), ParseError> {
        let mut values = None;
        let mut count = None;
        let mut cut = None;
        for kv in rest.split_whitespace() {
            let (k, v) = kv.split_once('=').ok_or_else(|| bad(rest))?;
            let v = v.parse::<u64>().map_err(|_| bad(rest))?;
            match k {
                "values" => values = Some(v),
                "count" => count = Some(v),
                "cut" => cut = Some(v),
                _ => return Err(bad(rest)),
            }
        }
        match (values, count, cut) {
            (Some(n), Some(c), None) => self.end = Some((n, Some(c))),
            (Some(n), None, Some(_)) => self.end = Some((n, None)),
            _ => return Err(bad(rest)),
        }
        Ok(())
    }

    /// The whole distribution, `None` when the script printed none or
    /// cut its walk; an error when what it printed does not add up.
    fn finish(self) -> Result<Option<Vec<(u64, u64)>>, ParseError> {
        match self.end {
            None if self.pairs.is_empty() => Ok(None),
            None => Err(ParseError::new(
                "wrk: the done() histogram has no `hist-end` line",
            )),
            Some((_, None)) => Ok(None),
            Some((n, Some(c))) if n == self.pairs.len() as u64 && c == self.total => {
                Ok(Some(self.pairs))
            }
            Some((n, Some(c))) => Err(ParseError::new(format!(
                "wrk: the done() histogram does not add up: {} of {n} values, a count of {} for {c}",
                self.pairs.len(),
                self.total
            ))),
        }
    }
}

fn bad(line: &str) -> ParseError {
    super::unreadable("wrk", line)
}

/// `Latency   505.84us  745.88us   5.76ms   90.89%`: mean, stdev, max.
fn thread_stats(rest: &str, r: &mut Reported) {
    let f: Vec<&str> = rest.split_whitespace().collect();
    for (name, at) in [("mean", 0), ("stdev", 1), ("max", 2)] {
        if let Some(v) = f.get(at).and_then(|s| duration_us(s)) {
            r.latency_us.entry(name.into()).or_insert(v);
        }
    }
}

/// `50%  283.00us` of `--latency`'s distribution.
fn distribution_line(t: &str) -> Option<(String, f64)> {
    let (p, v) = t.split_once('%')?;
    let p = percentile_name(number(p)?)?;
    Some((p, duration_us(v)?))
}

/// `p50`, `p99`, `p999` (99.9), `p9999` (99.99), `p100`.
fn percentile_name(p: f64) -> Option<String> {
    if !(0.0..=100.0).contains(&p) {
        return None;
    }
    let s = format!("{p}").replace('.', "");
    Some(format!("p{s}"))
}

/// `31384 requests in 1.01s, 7.42MB read`.
fn totals(t: &str, r: &mut Reported) -> Result<(), ParseError> {
    let (n, rest) = t.split_once(" requests in ").ok_or_else(|| bad(t))?;
    let (d, rest) = rest.split_once(", ").ok_or_else(|| bad(t))?;
    let b = rest.strip_suffix(" read").ok_or_else(|| bad(t))?;
    r.requests = Some(count(n).ok_or_else(|| bad(t))?);
    r.duration_s = Some(duration_us(d).ok_or_else(|| bad(t))? / 1e6);
    r.bytes_read = Some(bytes(b).ok_or_else(|| bad(t))?);
    Ok(())
}

/// `connect 0, read 8942, write 0, timeout 0`.
fn socket_errors(rest: &str, r: &mut Reported) -> Result<(), ParseError> {
    for part in rest.split(',') {
        let (kind, n) = part.trim().split_once(' ').ok_or_else(|| bad(rest))?;
        let n = count(n).ok_or_else(|| bad(rest))?;
        match kind {
            "connect" => r.errors.connect = n,
            "read" => r.errors.read = n,
            "write" => r.errors.write = n,
            "timeout" => r.errors.timeout = n,
            _ => return Err(bad(rest)),
        }
        r.errors_by_kind.insert(kind.into(), n);
    }
    Ok(())
}

/// `p99.9=3473` or `min=33 max=4252 mean=143.9 stdev=243.1` (µs), or the
/// counts line (`requests=...`), which the text already gives.
fn done_line(rest: &str, r: &mut Reported) {
    for kv in rest.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let Some(v) = number(v) else {
            continue;
        };
        let name = match k {
            "min" | "max" | "mean" | "stdev" => Some(k.to_string()),
            _ => k
                .strip_prefix('p')
                .and_then(number)
                .and_then(percentile_name),
        };
        if let Some(name) = name {
            // The script's exact figures win over the text's rounded ones.
            r.latency_us.insert(name, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_is_whole_cut_or_an_error() {
        let whole =
            "tare-done hist 3:1 5:2\ntare-done hist 9:1\ntare-done hist-end values=3 count=4\n";
        assert_eq!(
            parse(whole).unwrap().histogram,
            Some(vec![(3, 1), (5, 2), (9, 1)])
        );
        let cut = "tare-done hist 3:1\ntare-done hist-end values=3 cut=1\n";
        assert_eq!(parse(cut).unwrap().histogram, None);
        assert_eq!(parse("").unwrap().histogram, None);
        let overflow = format!(
            "tare-done hist 3:{} 4:1\ntare-done hist-end values=2 count=0\n",
            u64::MAX
        );
        for bad in [
            "tare-done hist 3:1\n",
            "tare-done hist 3:1 5:2\ntare-done hist-end values=3 count=3\n",
            "tare-done hist 3:1 5:2\ntare-done hist-end values=2 count=4\n",
            "tare-done hist 5:1 3:2\ntare-done hist-end values=2 count=3\n",
            "tare-done hist 3:0\ntare-done hist-end values=1 count=0\n",
            "tare-done hist 3:x\ntare-done hist-end values=1 count=1\n",
            "tare-done hist-end values=0 count=0\ntare-done hist 3:1\n",
            "tare-done hist-end values=0\n",
            overflow.as_str(),
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentiles_are_named_as_the_record_names_them() {
        assert_eq!(percentile_name(50.0).as_deref(), Some("p50"));
        assert_eq!(percentile_name(99.9).as_deref(), Some("p999"));
        assert_eq!(percentile_name(99.99).as_deref(), Some("p9999"));
        assert_eq!(percentile_name(101.0), None);
    }
}
