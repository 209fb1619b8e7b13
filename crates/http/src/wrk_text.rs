//! wrk 4.x's text layout, so scripts that read wrk output read tare's.
//!
//! The number formatting follows wrk's `src/units.c` (`format_units`: scale
//! up while the amount is at least 0.85 of the next unit, one step for time
//! units) and the column layout `src/wrk.c` (`print_stats`, `print_units`,
//! `print_stats_latency`). Extensions: `--latency` adds p99.9 and p99.99, and
//! a connection-per-request run adds `Connect` and `TTFB` rows (http_load's
//! msecs/connect and msecs/first-response).

use std::fmt::Write as _;
use std::time::Duration;

use tare_record::{Latency, LatencySummary, LoadResult};

struct Units {
    scale: f64,
    base: &'static str,
    units: &'static [&'static str],
}

const TIME_US: Units = Units {
    scale: 1000.0,
    base: "us",
    units: &["ms", "s"],
};
const TIME_S: Units = Units {
    scale: 60.0,
    base: "s",
    units: &["m", "h"],
};
const BINARY: Units = Units {
    scale: 1024.0,
    base: "",
    units: &["K", "M", "G", "T", "P"],
};
const METRIC: Units = Units {
    scale: 1000.0,
    base: "",
    units: &["k", "M", "G", "T", "P"],
};

fn format_units(n: f64, m: &Units, precision: usize) -> String {
    let mut amt = n;
    let mut unit = m.base;
    let threshold = m.scale * 0.85;
    let mut i = 0;
    while i + 1 < m.units.len() && amt >= threshold {
        amt /= m.scale;
        unit = m.units[i];
        i += 1;
    }
    format!("{amt:.precision$}{unit}")
}

/// wrk's `format_time_us`.
pub(crate) fn format_time_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format_units(us / 1_000_000.0, &TIME_S, 2)
    } else {
        format_units(us, &TIME_US, 2)
    }
}

/// wrk's `format_time_s` (the "Running 10s test" line).
pub(crate) fn format_time_s(s: f64) -> String {
    format_units(s, &TIME_S, 0)
}

pub(crate) fn format_binary(n: f64) -> String {
    format_units(n, &BINARY, 2)
}

pub(crate) fn format_metric(n: f64) -> String {
    format_units(n, &METRIC, 2)
}

/// wrk's `print_units`: right-aligned in `width`, units eating the padding.
fn units_cell(out: &mut String, msg: &str, width: usize) {
    let b = msg.as_bytes();
    let mut pad = 2usize;
    if b.last().is_some_and(|c| c.is_ascii_alphabetic()) {
        pad -= 1;
    }
    if b.len() >= 2 && b[b.len() - 2].is_ascii_alphabetic() {
        pad -= 1;
    }
    let w = width - pad;
    let _ = write!(out, "{msg:>w$}{}", &"  "[..pad]);
}

fn stats_row(out: &mut String, name: &str, cells: [String; 3], within: f64) {
    let _ = write!(out, "    {name:<10}");
    units_cell(out, &cells[0], 8);
    units_cell(out, &cells[1], 10);
    units_cell(out, &cells[2], 9);
    let _ = writeln!(out, "{within:8.2}%");
}

fn latency_row(out: &mut String, name: &str, s: &LatencySummary, within: f64) {
    stats_row(
        out,
        name,
        [
            format_time_us(s.mean),
            format_time_us(s.stdev),
            format_time_us(s.max),
        ],
        within,
    );
}

/// Share of recorded values within one standard deviation of the mean, from
/// the histogram, as wrk's `stats_within_stdev`.
fn within_stdev(hdr: &str, s: &LatencySummary) -> f64 {
    let Ok(l) = Latency::decode(hdr) else {
        return 0.0;
    };
    let h = l.histogram();
    if h.is_empty() {
        return 0.0;
    }
    let (lo, hi) = ((s.mean - s.stdev) * 1e3, (s.mean + s.stdev) * 1e3);
    let inside: u64 = h
        .iter_recorded()
        .filter(|v| {
            let x = h.median_equivalent(v.value_iterated_to()) as f64;
            x >= lo && x <= hi
        })
        .map(|v| v.count_at_value())
        .sum();
    inside as f64 / h.len() as f64 * 100.0
}

/// The wrk-style report of `r`. `planned`: the `-d` given (wrk prints it in
/// the first line), `latency`: print the distribution.
pub fn render(r: &LoadResult, planned: Option<Duration>, latency: bool) -> String {
    let mut out = String::new();
    match planned {
        Some(d) => {
            let _ = writeln!(
                out,
                "Running {} test @ {}",
                format_time_s(d.as_secs_f64()),
                r.target
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Running {} requests @ {}",
                r.requests + r.errors.connect,
                r.target
            );
        }
    }
    let _ = writeln!(
        out,
        "  {} threads and {} connections",
        r.threads, r.connections
    );
    let _ = writeln!(
        out,
        "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
        "Avg", "Stdev", "Max", "+/- Stdev"
    );
    latency_row(
        &mut out,
        "Latency",
        &r.latency_us,
        within_stdev(&r.hdr, &r.latency_us),
    );
    let t = &r.thread_rate;
    stats_row(
        &mut out,
        "Req/Sec",
        [
            format_metric(t.mean),
            format_metric(t.stdev),
            format_metric(t.max),
        ],
        t.within_stdev_pct,
    );
    if let Some(c) = &r.connect_us {
        latency_row(&mut out, "Connect", c, f64::NAN);
        fix_nan(&mut out);
    }
    if let Some(c) = &r.first_byte_us {
        latency_row(&mut out, "TTFB", c, f64::NAN);
        fix_nan(&mut out);
    }
    if latency {
        distribution(&mut out, &r.latency_us);
    }
    if let Some(sch) = &r.schedule {
        schedule_lines(&mut out, sch);
    }
    totals(&mut out, r);
    let secs = r.duration_s.max(1e-9);
    let _ = writeln!(out, "Requests/sec: {:9.2}", r.requests as f64 / secs);
    let _ = writeln!(
        out,
        "Transfer/sec: {:>10}B",
        format_binary(r.bytes_read as f64 / secs)
    );
    out
}

/// wrk's `--latency`: the latency at its percentiles.
fn distribution(out: &mut String, s: &tare_record::LatencySummary) {
    let _ = writeln!(out, "  Latency Distribution");
    for (label, v) in [
        ("50", s.p50),
        ("75", s.p75),
        ("90", s.p90),
        ("99", s.p99),
        ("99.9", s.p999),
        ("99.99", s.p9999),
    ] {
        let _ = write!(out, "{label:>7}%");
        units_cell(out, &format_time_us(v), 10);
        out.push('\n');
    }
}

/// The run's totals: requests and bytes, the errors by kind, what was in
/// flight at the end, the wake-ups and the connections.
fn totals(out: &mut String, r: &LoadResult) {
    let _ = writeln!(
        out,
        "  {} requests in {}, {}B read",
        r.requests,
        format_time_us(r.duration_s * 1e6),
        format_binary(r.bytes_read as f64)
    );
    let e = &r.errors;
    if e.connect + e.read + e.write + e.timeout > 0 {
        let _ = writeln!(
            out,
            "  Socket errors: connect {}, read {}, write {}, timeout {}",
            e.connect, e.read, e.write, e.timeout
        );
    }
    if e.status > 0 {
        let _ = writeln!(out, "  Non-2xx or 3xx responses: {}", e.status);
    }
    if r.in_flight > 0 {
        let _ = writeln!(
            out,
            "  {} requests in flight at the deadline (not counted)",
            r.in_flight
        );
    }
    if let Some(w) = r.wakeups.as_ref().and_then(|w| w.summary()) {
        let _ = writeln!(out, "  Wake-ups: {w}");
    }
    if let Some(c) = r.connect_phase.as_ref().filter(|_| r.keepalive) {
        let _ = writeln!(out, "  Connections: {}", c.summary());
    }
}

/// Open loop and ramp: what the schedule asked, what was sent, how late, and
/// the latency without the coordinated-omission correction (wrk2 prints the
/// same pair: "Recorded Latency" and "Uncorrected Latency").
fn schedule_lines(out: &mut String, s: &tare_record::ScheduleReport) {
    if let Some(rate) = s.target_rate {
        let _ = writeln!(
            out,
            "  Schedule: {rate:.0} req/s {}, sent {:.0}/s, {} sends late (> 1ms), lag mean {} max {}, {} unsent",
            s.arrivals,
            s.achieved_send_rate,
            s.late_sends,
            format_time_us(s.mean_lag_us),
            format_time_us(s.max_lag_us),
            s.unsent
        );
        if let Some(u) = &s.latency_uncorrected_us {
            let _ = writeln!(
                out,
                "  Uncorrected latency (from actual send): p50 {} p90 {} p99 {} p99.9 {} max {}",
                format_time_us(u.p50),
                format_time_us(u.p90),
                format_time_us(u.p99),
                format_time_us(u.p999),
                format_time_us(u.max)
            );
        }
    }
    if s.ramp_s > 0.0 {
        let per_s: Vec<String> = s.ramp_timeline.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(
            out,
            "  Ramp: {} (not in the summary), completions per second: {}",
            format_time_us(s.ramp_s * 1e6),
            per_s.join(" ")
        );
    }
}

/// Connect/TTFB rows have no meaningful "+/- Stdev" share: print a dash.
fn fix_nan(out: &mut String) {
    if out.ends_with("NaN%\n") {
        let cut = out.len() - "     NaN%\n".len();
        out.truncate(cut);
        out.push_str("        -\n");
    }
}

/// A request mix's counts by name (`LoadResult::by_name`), after wrk's
/// text: one row a name with its weight, completed requests, errors,
/// share and latency. Empty without a mix.
pub fn render_names(r: &LoadResult) -> String {
    if r.by_name.is_empty() {
        return String::new();
    }
    let width = r
        .by_name
        .iter()
        .map(|n| n.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 40);
    let mut out = String::new();
    let _ = writeln!(out, "  Requests by name:");
    let _ = writeln!(
        out,
        "    {:<width$} {:>7} {:>10} {:>7} {:>7} {:>9} {:>9} {:>9}",
        "name", "weight", "requests", "errors", "share", "mean", "p50", "p99"
    );
    let total = r.requests.max(1) as f64;
    for n in &r.by_name {
        let name: String = n.name.chars().take(40).collect();
        let _ = writeln!(
            out,
            "    {name:<width$} {:>7} {:>10} {:>7} {:>6.1}% {:>9} {:>9} {:>9}",
            n.weight,
            n.requests,
            n.errors.total(),
            n.requests as f64 * 100.0 / total,
            format_time_us(n.latency_us.mean),
            format_time_us(n.latency_us.p50),
            format_time_us(n.latency_us.p99),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_match_wrk() {
        assert_eq!(format_time_us(635.91), "635.91us");
        assert_eq!(format_time_us(890.0), "0.89ms");
        assert_eq!(format_time_us(12_920.0), "12.92ms");
        assert_eq!(format_time_us(1_500_000.0), "1.50s");
        assert_eq!(format_time_us(10_100_000.0), "10.10s");
        assert_eq!(format_time_s(10.0), "10s");
        assert_eq!(format_time_s(60.0), "1m");
        assert_eq!(format_metric(56_200.0), "56.20k");
        assert_eq!(format_metric(8.0), "8.00");
        assert_eq!(format_binary(136.18 * 1024.0 * 1024.0), "136.18M");
    }

    #[test]
    fn rows_have_wrks_columns() {
        let mut out = String::new();
        stats_row(
            &mut out,
            "Latency",
            ["635.91us".into(), "0.89ms".into(), "12.92ms".into()],
            93.69,
        );
        assert_eq!(out, "    Latency   635.91us    0.89ms  12.92ms   93.69%\n");
        let mut out = String::new();
        stats_row(
            &mut out,
            "Req/Sec",
            ["56.20k".into(), "8.07k".into(), "62.00k".into()],
            86.54,
        );
        assert_eq!(out, "    Req/Sec    56.20k     8.07k   62.00k    86.54%\n");
        let mut out = String::new();
        let _ = write!(out, "{:>7}%", "50");
        units_cell(&mut out, "250.00us", 10);
        assert_eq!(out, "     50%  250.00us");
    }

    #[test]
    fn header_line_matches_wrk() {
        let h = format!(
            "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
            "Avg", "Stdev", "Max", "+/- Stdev"
        );
        assert_eq!(h, "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    }
}
