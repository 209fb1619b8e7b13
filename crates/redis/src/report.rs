//! redis-benchmark 7's text for one test (the `====== SET ======` block,
//! its latency by percentile, its summary), its `-q` line and its `--csv`
//! rows, from a [`LoadResult`], plus what it lacks: p99.9, the errors by
//! kind and the generator's CPU per command.

use std::fmt::Write;

use tare_record::{Latency, LoadResult};

/// redis-benchmark's milliseconds, 3 decimals.
fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

/// The percentile of `lat` (from the record's histogram) in microseconds.
fn p(lat: Option<&Latency>, q: f64) -> f64 {
    lat.map_or(0.0, |l| l.quantile_us(q))
}

/// The server's persistence settings, as redis-benchmark prints them
/// under each test's title (from `CONFIG GET save` and `appendonly`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    pub save: String,
    pub appendonly: String,
}

/// The full block redis-benchmark 7 prints for a test titled `title`;
/// `host`: the server's persistence settings when it told them.
pub fn text(r: &LoadResult, title: &str, host: Option<&HostConfig>) -> String {
    let mut out = String::new();
    let lat = Latency::decode(&r.hdr).ok();
    let answered = r.requests + r.errors.status;
    let _ = writeln!(out, "====== {title} ======");
    let _ = writeln!(
        out,
        "  {answered} requests completed in {:.2} seconds",
        r.duration_s
    );
    let _ = writeln!(out, "  {} parallel clients", r.connections);
    if let Some(d) = &r.redis {
        let _ = writeln!(out, "  {} bytes payload", d.data_size);
    }
    let _ = writeln!(out, "  keep alive: 1");
    if let Some(h) = host {
        let _ = writeln!(out, "  host configuration \"save\": {}", h.save);
        let _ = writeln!(out, "  host configuration \"appendonly\": {}", h.appendonly);
    }
    if let Some(d) = &r.redis {
        if d.pipeline > 1 {
            let _ = writeln!(out, "  pipeline: {}", d.pipeline);
        }
    }
    let _ = writeln!(
        out,
        "  multi-thread: {}",
        if r.threads > 1 { "yes" } else { "no" }
    );
    if r.threads > 1 {
        let _ = writeln!(out, "  threads: {}", r.threads);
    }
    if let Some(l) = lat.as_ref().filter(|l| !l.is_empty()) {
        out.push_str("\nLatency by percentile distribution:\n");
        let h = l.histogram();
        let total = h.len();
        // redis-benchmark halves the distance to 100% at each line, and
        // ends with the 100% line.
        let mut pct = 0.0f64;
        let mut step = 50.0f64;
        let line = |out: &mut String, pct: f64, v: u64| {
            let _ = writeln!(
                out,
                "{pct:.3}% <= {} milliseconds (cumulative count {})",
                ms(h.highest_equivalent(v) as f64 / 1e3),
                h.count_between(0, v)
            );
        };
        while step >= 0.0005 {
            let v = h.value_at_quantile(pct / 100.0);
            line(&mut out, pct, v);
            if h.count_between(0, v) >= total {
                break;
            }
            pct += step;
            step /= 2.0;
        }
        line(&mut out, 100.0, h.max());
        cumulative(&mut out, h);
    }
    out.push_str("\nSummary:\n");
    let _ = writeln!(
        out,
        "  throughput summary: {:.2} requests per second",
        r.throughput()
    );
    let s = &r.latency_us;
    out.push_str("  latency summary (msec):\n");
    let _ = writeln!(
        out,
        "  {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "avg", "min", "p50", "p95", "p99", "p99.9", "max"
    );
    let _ = writeln!(
        out,
        "  {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        ms(s.mean),
        ms(s.min),
        ms(s.p50),
        ms(p(lat.as_ref(), 0.95)),
        ms(s.p99),
        ms(s.p999),
        ms(s.max)
    );
    out.push_str(&errors_text(r));
    if let Some(w) = r.wakeups.as_ref().and_then(|w| w.summary()) {
        let _ = writeln!(out, "  wake-ups: {w}");
    }
    let _ = writeln!(
        out,
        "  generator CPU: {:.2}s ({:.2} us per command)",
        r.generator_cpu_s,
        r.generator_cpu_us_per_request()
    );
    out.push('\n');
    out
}

/// redis-benchmark's `Cumulative distribution of latencies:` lines: the
/// share of commands at or below each 0.1 ms step, then each 1 ms step
/// past 2 ms, a line where the count grew and one at the end (its linear
/// iteration over the histogram). Values are nanoseconds.
fn cumulative(out: &mut String, h: &hdrhistogram::Histogram<u64>) {
    const FINE: u64 = 100_000;
    const COARSE: u64 = 1_000_000;
    out.push_str("\nCumulative distribution of latencies:\n");
    let total = h.len().max(1);
    let mut upto = FINE;
    let mut previous = None;
    // Bounded by the largest latency: at most 20 fine steps, then one
    // per millisecond up to it.
    while upto <= h.max().saturating_add(COARSE) {
        let count = h.count_between(0, upto);
        if previous != Some(count) || count >= total {
            let _ = writeln!(
                out,
                "{:.3}% <= {} milliseconds (cumulative count {count})",
                count as f64 / total as f64 * 100.0,
                ms(h.highest_equivalent(upto) as f64 / 1e3),
            );
        }
        if count >= total {
            break;
        }
        previous = Some(count);
        upto += if upto > 2_000_000 { COARSE } else { FINE };
    }
}

/// Lines for the errors, when there were any.
fn errors_text(r: &LoadResult) -> String {
    let e = &r.errors;
    if e.total() == 0 {
        return String::new();
    }
    let mut out = format!(
        "  errors: {} error replies, {} lost (read {}, write {}), {} timeouts, {} connect\n",
        e.status,
        e.read + e.write,
        e.read,
        e.write,
        e.timeout,
        e.connect
    );
    if let Some(d) = &r.redis {
        if !d.errors_by_kind.is_empty() {
            let kinds: Vec<String> = d
                .errors_by_kind
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(out, "  error replies by kind: {}", kinds.join(", "));
        }
        if d.dropped_connections > 0 {
            let _ = writeln!(out, "  connections dropped: {}", d.dropped_connections);
        }
    }
    out
}

/// `-q`: one line per test, as redis-benchmark prints it.
pub fn quiet_line(r: &LoadResult, title: &str) -> String {
    format!(
        "{title}: {:.2} requests per second, p50={} msec\n",
        r.throughput(),
        ms(r.latency_us.p50)
    )
}

/// `--csv`'s header row.
pub fn csv_header() -> &'static str {
    "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n"
}

/// `--csv`: one row per test.
pub fn csv_row(r: &LoadResult, title: &str) -> String {
    let s = &r.latency_us;
    let lat = Latency::decode(&r.hdr).ok();
    let fields = [
        title.replace('"', "\"\""),
        format!("{:.2}", r.throughput()),
        ms(s.mean),
        ms(s.min),
        ms(s.p50),
        ms(p(lat.as_ref(), 0.95)),
        ms(s.p99),
        ms(s.max),
    ];
    let quoted: Vec<String> = fields.iter().map(|f| format!("\"{f}\"")).collect();
    quoted.join(",") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> LoadResult {
        let mut l = Latency::new();
        for us in [100u64, 200, 300, 400, 1000] {
            l.record_ns(us * 1000);
        }
        LoadResult {
            engine: "redis".into(),
            requests: 5,
            duration_s: 0.5,
            connections: 50,
            threads: 1,
            rps: Some(10.0),
            latency_us: l.summary(),
            hdr: l.encode().unwrap(),
            redis: Some(tare_record::RedisDetails {
                data_size: 3,
                pipeline: 1,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_block_has_redis_benchmarks_lines() {
        let t = text(&result(), "SET", None);
        assert!(t.starts_with("====== SET ======\n  5 requests completed in 0.50 seconds\n  50 parallel clients\n  3 bytes payload\n"), "{t}");
        assert!(t.contains("Latency by percentile distribution:\n0.000% <= 0.100 milliseconds (cumulative count 1)\n50.000% <= 0.300 milliseconds (cumulative count 3)\n"), "{t}");
        assert!(
            t.contains("100.000% <= 1.000 milliseconds (cumulative count 5)"),
            "{t}"
        );
        assert!(
            t.contains("  throughput summary: 10.00 requests per second\n"),
            "{t}"
        );
        assert!(t.contains("\nCumulative distribution of latencies:\n20.000% <= 0.100 milliseconds (cumulative count 1)\n40.000% <= 0.200 milliseconds (cumulative count 2)\n"), "{t}");
        assert!(t.contains("80.000% <= 0.400 milliseconds (cumulative count 4)\n100.000% <= 1.000 milliseconds (cumulative count 5)\n\nSummary:"), "{t}");
        let host = HostConfig {
            save: String::new(),
            appendonly: "no".into(),
        };
        let t = text(&result(), "SET", Some(&host));
        assert!(t.contains("  keep alive: 1\n  host configuration \"save\": \n  host configuration \"appendonly\": no\n  multi-thread: no\n"), "{t}");
    }

    #[test]
    fn quiet_and_csv() {
        let r = result();
        assert_eq!(
            quiet_line(&r, "GET"),
            "GET: 10.00 requests per second, p50=0.300 msec\n"
        );
        let row = csv_row(&r, "GET");
        assert!(
            row.starts_with("\"GET\",\"10.00\",\"0.400\",\"0.100\",\"0.300\","),
            "{row}"
        );
        assert!(csv_header().starts_with("\"test\",\"rps\""));
    }
}
