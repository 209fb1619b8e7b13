//! JMeter's results file (JTL) in CSV, with its header line, as tare has
//! JMeter write it (`-l` and the `-J` settings of [`forced_args`]): a line
//! per sample with its start (`timeStamp`, ms since the epoch), its time
//! (`elapsed`, whole ms), `responseCode`, `responseMessage`, `success`,
//! `failureMessage` and `bytes`.
//!
//! Every sample is there, so unlike the other tools' summaries the JTL
//! gives the full latency histogram (each `elapsed` recorded as tare's
//! engines record theirs, [`tare_record::Latency`]) and the timeline
//! (completions in each second from the first sample's start), and the
//! throughput over JMeter's own window: the first sample's start to the
//! last sample's end.
//!
//! A sample with a numeric `responseCode` got a response: a completed
//! request, a status error from 400 up (as tare http counts them). Any
//! other code is JMeter's `Non HTTP response code: <exception>`: no
//! response, counted as a connect error (refused, unreachable, unknown
//! host), a timeout, or else a read error. A failed sample with a response
//! below 400 (an assertion's) is a completed request, named in
//! `errors_by_kind` only. A Transaction Controller's own line (`Number of
//! samples in transaction`) repeats its samples and is skipped.
//!
//! [`launcher`] starts Debian 12's JMeter 2.13, which cannot read any plan
//! on its own (docs/external.md, "JMeter").

pub mod launcher;

use std::collections::BTreeMap;

use tare_record::Latency;

use super::Reported;
use crate::parsed::ParseError;

/// The results file tare has JMeter write, in the tool's working directory.
pub const RESULTS: &str = "tare-results.jtl";
/// JMeter's own log, beside it (its last lines explain a failed run).
pub const LOG: &str = "tare-jmeter.log";

/// What tare adds to a JMeter command line: the results file, JMeter's
/// log, and the JTL settings this parser reads (CSV with its header,
/// epoch milliseconds, each sample stamped at its start), with `-n` (no
/// GUI) unless the arguments have it.
pub fn forced_args(dir: &std::path::Path, args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if !args.iter().any(|a| a == "-n" || a == "--nongui") {
        out.push("-n".to_string());
    }
    out.push("-l".into());
    out.push(dir.join(RESULTS).display().to_string());
    out.push("-j".into());
    out.push(dir.join(LOG).display().to_string());
    for (k, v) in [
        ("jmeter.save.saveservice.output_format", "csv"),
        ("jmeter.save.saveservice.print_field_names", "true"),
        ("jmeter.save.saveservice.default_delimiter", ","),
        ("jmeter.save.saveservice.timestamp_format", "ms"),
        ("jmeter.save.saveservice.time", "true"),
        ("jmeter.save.saveservice.successful", "true"),
        ("jmeter.save.saveservice.response_code", "true"),
        ("jmeter.save.saveservice.response_message", "true"),
        (
            "jmeter.save.saveservice.assertion_results_failure_message",
            "true",
        ),
        ("jmeter.save.saveservice.bytes", "true"),
        ("sampleresult.timestamp.start", "true"),
    ] {
        out.push(format!("-J{k}={v}"));
    }
    out
}

/// The arguments tare owns: the user's may not set them.
pub fn check_args(args: &[String]) -> Result<(), String> {
    for a in args {
        if ["-l", "--logfile", "-j", "--jmeterlogfile"].contains(&a.as_str()) {
            return Err(format!(
                "`{a}`: tare has JMeter write its results file and log itself (docs/external.md)"
            ));
        }
    }
    Ok(())
}

/// Errors in JMeter's words are keyed by at most this many kinds; the
/// rest are counted under `other`.
const MAX_KINDS: usize = 64;
/// A timeline of more seconds than this is not kept (a JTL spanning
/// years is a broken clock, not a run).
const MAX_SECONDS: u64 = 1_000_000;

/// The columns read, by their header names.
struct Columns {
    time_stamp: usize,
    elapsed: usize,
    code: usize,
    success: usize,
    message: Option<usize>,
    failure: Option<usize>,
    bytes: Option<usize>,
}

impl Columns {
    fn of(header: &[String]) -> Result<Columns, ParseError> {
        let at = |name: &str| header.iter().position(|h| h == name);
        let need = |name: &str| {
            at(name).ok_or_else(|| ParseError::new(format!("no `{name}` column in its header")))
        };
        Ok(Columns {
            time_stamp: need("timeStamp")?,
            elapsed: need("elapsed")?,
            code: need("responseCode")?,
            success: need("success")?,
            message: at("responseMessage"),
            failure: at("failureMessage"),
            bytes: at("bytes"),
        })
    }
}

/// Reads a JTL (CSV with its header line).
pub fn parse(text: &str) -> Result<Reported, ParseError> {
    let mut rows = Records { rest: text };
    let header = rows
        .next()
        .ok_or_else(|| ParseError::new("an empty results file: JMeter wrote no samples"))?;
    if header.first().map(String::as_str) != Some("timeStamp") {
        return Err(super::unreadable("jmeter", &header.join(",")));
    }
    let cols = Columns::of(&header)?;
    let mut r = Reported {
        error_kinds: vec!["connect", "read", "timeout", "status"],
        ..Reported::default()
    };
    let mut latency = Latency::new();
    // (end in ms since the epoch) of each completed sample, for the timeline.
    let mut ends: Vec<u64> = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (mut samples, mut requests, mut bytes) = (0u64, 0u64, 0u64);
    for row in rows {
        let field = |i: usize| row.get(i).map(String::as_str).unwrap_or("");
        let message = cols.message.map_or("", field);
        if message.starts_with("Number of samples in transaction") {
            continue;
        }
        let line = || row.join(",");
        let start: u64 = field(cols.time_stamp)
            .parse()
            .map_err(|_| super::unreadable("jmeter", &line()))?;
        let elapsed: u64 = field(cols.elapsed)
            .parse()
            .map_err(|_| super::unreadable("jmeter", &line()))?;
        let ok = match field(cols.success) {
            "true" => true,
            "false" => false,
            _ => return Err(super::unreadable("jmeter", &line())),
        };
        let end = start.saturating_add(elapsed);
        samples += 1;
        first = first.min(start);
        last = last.max(end);
        if let Some(b) = cols.bytes {
            bytes = bytes.saturating_add(field(b).parse().unwrap_or(0));
        }
        let code = field(cols.code);
        let failure = cols.failure.map_or("", field);
        if outcome(&mut r, code, message, ok, failure) {
            requests += 1;
            latency.record_ns(elapsed.saturating_mul(1_000_000));
            ends.push(end);
        }
    }
    if samples == 0 {
        return Err(ParseError::new(
            "a results file with no samples: JMeter wrote its header only",
        ));
    }
    r.requests = Some(requests);
    let window_ms = last.saturating_sub(first);
    r.duration_s = Some(window_ms as f64 / 1e3);
    if window_ms > 0 {
        r.rps = Some(requests as f64 / (window_ms as f64 / 1e3));
    }
    r.started_unix_s = Some(first as f64 / 1e3);
    if cols.bytes.is_some() {
        r.bytes_read = Some(bytes);
    }
    summarise(&mut r, &latency);
    r.timeline = timeline(first, window_ms, &ends);
    Ok(r)
}

/// Counts one sample's outcome into `r`; `true` when it got a response
/// (a completed request): a numeric `responseCode`, an error from 400 up.
/// Any other code is JMeter's `Non HTTP response code: <exception>`.
fn outcome(r: &mut Reported, code: &str, message: &str, ok: bool, failure: &str) -> bool {
    if let Ok(status) = code.parse::<u16>() {
        if status >= 400 {
            r.errors.status += 1;
            count(&mut r.errors_by_kind, code);
        } else if !ok {
            count(&mut r.errors_by_kind, &format!("assertion: {failure}"));
        }
        return true;
    }
    let text = format!("{code} {message}").to_ascii_lowercase();
    if text.contains("timeout") || text.contains("timed out") {
        r.errors.timeout += 1;
    } else if [
        "connectexception",
        "connection refused",
        "noroutetohost",
        "unknownhost",
    ]
    .iter()
    .any(|k| text.contains(k))
    {
        r.errors.connect += 1;
    } else {
        r.errors.read += 1;
    }
    count(&mut r.errors_by_kind, code);
    false
}

/// The histogram's summary and its serialized form, when a request completed.
fn summarise(r: &mut Reported, latency: &Latency) {
    if latency.is_empty() {
        return;
    }
    let s = latency.summary();
    for (k, v) in [
        ("min", s.min),
        ("mean", s.mean),
        ("stdev", s.stdev),
        ("max", s.max),
        ("p50", s.p50),
        ("p75", s.p75),
        ("p90", s.p90),
        ("p95", latency.quantile_us(0.95)),
        ("p99", s.p99),
        ("p999", s.p999),
        ("p9999", s.p9999),
    ] {
        r.latency_us.insert(k.into(), v);
    }
    r.encoded_hdr = latency.encode().ok();
}

/// Completions in each second from `first` (ms); `None` past
/// [`MAX_SECONDS`].
fn timeline(first: u64, window_ms: u64, ends: &[u64]) -> Option<Vec<u64>> {
    let seconds = window_ms.div_ceil(1000).max(1);
    if seconds > MAX_SECONDS {
        return None;
    }
    let mut out = vec![0u64; seconds as usize];
    for e in ends {
        let i = ((e - first) / 1000).min(seconds - 1) as usize;
        out[i] += 1;
    }
    Some(out)
}

/// One more error of `kind` (cut at 100 characters), or of `other` past
/// [`MAX_KINDS`] kinds.
fn count(kinds: &mut BTreeMap<String, u64>, kind: &str) {
    let k: String = kind.trim().chars().take(100).collect();
    let k = if kinds.contains_key(&k) || kinds.len() < MAX_KINDS {
        k
    } else {
        "other".to_string()
    };
    *kinds.entry(k).or_insert(0) += 1;
}

/// CSV records as JMeter writes them: fields split by commas, a field
/// holding a comma, a quote or a line break quoted with `"` and its
/// quotes doubled (CSVSaveService.quoteDelimiters); `\r\n` or `\n` ends a
/// record; empty lines are skipped.
struct Records<'a> {
    rest: &'a str,
}

impl Iterator for Records<'_> {
    type Item = Vec<String>;

    fn next(&mut self) -> Option<Vec<String>> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let (record, rest) = record(self.rest);
            self.rest = rest;
            if !(record.len() == 1 && record[0].is_empty()) {
                return Some(record);
            }
        }
    }
}

/// The first record of `text` and what follows it.
fn record(text: &str) -> (Vec<String>, &str) {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (quoted, c) {
            (true, '"') => {
                if chars.peek().map(|(_, c)| *c) == Some('"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            }
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (false, '\n') => {
                fields.push(field);
                return (fields, &text[i + 1..]);
            }
            (false, '\r') if chars.peek().map(|(_, c)| *c) == Some('\n') => {}
            (false, c) => field.push(c),
        }
    }
    fields.push(field);
    (fields, "")
}

#[cfg(test)]
mod tests {
    use super::{parse, record};

    const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes\n";

    #[test]
    fn quoted_fields_hold_commas_quotes_and_line_breaks() {
        let (r, rest) = record("1,\"a,b\",\"say \"\"hi\"\"\",\"x\ny\"\r\nnext");
        assert_eq!(r, ["1", "a,b", "say \"hi\"", "x\ny"]);
        assert_eq!(rest, "next");
    }

    #[test]
    fn samples_are_counted_by_what_came_back() {
        let text = format!(
            "{HEADER}1000,5,get,200,OK,t 1-1,text,true,,100\n\
             1002,8,get,404,Not Found,t 1-1,text,false,,50\n\
             1003,1,get,Non HTTP response code: java.net.ConnectException,\"Connection refused, said the kernel\",t 1-2,text,false,,0\n\
             1100,2000,get,Non HTTP response code: java.net.SocketTimeoutException,Read timed out,t 1-2,text,false,,0\n\
             2500,3,get,200,OK,t 1-1,text,false,Test failed: text expected to contain /x/,10\n\
             2600,9,tx,200,\"Number of samples in transaction : 2, number of failing samples : 0\",t 1-1,,true,,0\n"
        );
        let r = parse(&text).unwrap();
        assert_eq!(r.requests, Some(3));
        assert_eq!(
            (r.errors.status, r.errors.connect, r.errors.timeout),
            (1, 1, 1)
        );
        // From 1000 to 1100 + 2000.
        assert_eq!(r.duration_s, Some(2.1));
        assert_eq!(r.bytes_read, Some(160));
        assert_eq!(r.timeline, Some(vec![2, 1, 0]));
        assert_eq!(
            r.errors_by_kind
                .get("assertion: Test failed: text expected to contain /x/"),
            Some(&1)
        );
        assert_eq!(r.errors_by_kind.get("404"), Some(&1));
        assert!(
            (r.latency_us["max"] - 8000.0).abs() < 10.0,
            "{:?}",
            r.latency_us
        );
        let h = tare_record::Latency::decode(r.encoded_hdr.as_deref().unwrap()).unwrap();
        assert_eq!(h.count(), 3);
    }

    #[test]
    fn a_header_alone_or_nothing_is_no_run() {
        assert!(parse("").is_err());
        assert!(parse(HEADER).is_err());
        assert!(parse("1000,5,get,200\n").is_err(), "no header");
    }
}
