//! The external load tools' parsers on real output captured from Debian
//! 12's packages on this project's machine against a loopback nginx 1.22
//! (tests/data/external): wrk 4.1.0 (default, `--latency`, a Lua script
//! answered 404, tare's `done()` summary, a server closing every
//! connection), ab 2.3 (keep-alive, 404s, varying lengths, closed
//! connections) and h2load (nghttp2 1.52: h2c, 404s, HTTP/1.1, an h2c
//! client refused by an HTTP/1.1 port). What a tool does not print is
//! absent, never zero.

use crate::support::data;

use tare_tool::external::LoadTool;

#[test]
fn wrk_text_gives_counts_rate_bytes_and_its_latency_rows() {
    let r = LoadTool::Wrk.parse(&data("wrk-default.txt")).unwrap();
    assert_eq!(r.requests, Some(31384));
    assert_eq!(r.duration_s, Some(1.01));
    assert_eq!(r.rps, Some(31222.08));
    assert_eq!(r.bytes_read, Some((7.42f64 * 1024.0 * 1024.0) as u64));
    assert_eq!(r.latency_us["mean"], 505.84);
    assert_eq!(r.latency_us["stdev"], 745.88);
    assert_eq!(r.latency_us["max"], 5760.0);
    assert!(
        !r.latency_us.contains_key("p50"),
        "no --latency, no percentiles"
    );
    assert_eq!(r.errors.total(), 0);

    let l = LoadTool::Wrk.parse(&data("wrk-latency.txt")).unwrap();
    assert_eq!(l.latency_us["p50"], 283.0);
    assert_eq!(l.latency_us["p75"], 344.0);
    assert_eq!(l.latency_us["p90"], 403.0);
    assert_eq!(l.latency_us["p99"], 1780.0);
    assert!(!l.latency_us.contains_key("p999"));
}

#[test]
fn wrk_status_and_socket_errors_are_counted_by_kind() {
    let r = LoadTool::Wrk.parse(&data("wrk-lua-404.txt")).unwrap();
    assert_eq!(r.requests, Some(41057));
    assert_eq!(r.errors.status, 41057);
    assert_eq!(r.errors_by_kind["non_2xx_3xx"], 41057);
    let c = LoadTool::Wrk.parse(&data("wrk-close.txt")).unwrap();
    assert_eq!(c.requests, Some(0));
    assert_eq!(c.errors.read, 8942);
    assert_eq!(c.errors_by_kind["connect"], 0);
    assert!(
        c.latency_us.is_empty(),
        "0.00us of no request is no latency"
    );
}

#[test]
fn wrk_done_summary_adds_exact_percentiles_and_the_minimum() {
    let r = LoadTool::Wrk.parse(&data("wrk-done.txt")).unwrap();
    assert_eq!(r.requests, Some(33573));
    assert_eq!(r.latency_us["p50"], 110.0);
    assert_eq!(
        r.latency_us["p99"], 1275.0,
        "the script's figure wins over 1.27ms"
    );
    assert_eq!(r.latency_us["p999"], 3473.0);
    assert_eq!(r.latency_us["p9999"], 4177.0);
    assert_eq!(r.latency_us["min"], 33.0);
    assert_eq!(r.latency_us["mean"], 143.887641);
}

/// tare's `done()` with its histogram (wrk 4.1.0, a 1 s run against a
/// loopback nginx beside a build): every distinct latency wrk kept and
/// its count. wrk's own percentiles come from it, rank for rank; its
/// count is more than the requests: wrk's coordinated-omission
/// correction adds values before `done()` runs (docs/external.md).
#[test]
fn wrk_done_histogram_is_the_distribution_wrk_computes_its_percentiles_from() {
    let r = LoadTool::Wrk.parse(&data("wrk-done-hist.txt")).unwrap();
    assert_eq!(r.requests, Some(21160));
    let h = r.histogram.as_ref().unwrap();
    assert_eq!(h.len(), 5732);
    assert_eq!((h[0], h[h.len() - 1]), ((17, 42), (19898, 1)));
    let total: u64 = h.iter().map(|(_, n)| n).sum();
    assert_eq!(total, 31342, "wrk's count, its corrections included");
    // wrk's percentile: the value at rank round(p/100 * count + 0.5).
    for (name, p) in [
        ("p50", 50.0),
        ("p90", 90.0),
        ("p99", 99.0),
        ("p999", 99.9),
        ("p9999", 99.99),
    ] {
        let rank = (p / 100.0 * total as f64 + 0.5).round() as u64;
        let mut seen = 0;
        let at = h.iter().find(|(_, n)| {
            seen += n;
            seen >= rank
        });
        assert_eq!(
            at.map(|(v, _)| *v as f64),
            Some(r.latency_us[name]),
            "{name}"
        );
    }
    // The record's histogram: the same counts, in nanoseconds, HDR's
    // 0.1% resolution.
    let l = tare_record::Latency::decode(&r.hdr().unwrap()).unwrap();
    assert_eq!(l.count(), total);
    assert!(
        (l.summary().max - 19898.0).abs() < 20.0,
        "{:?}",
        l.summary()
    );
    assert!((l.quantile_us(0.5) - 54.0).abs() < 1.0, "{:?}", l.summary());
}

/// h2load 1.52 `--log-file` (2000 requests, `-n`, over HTTP/1.1): a
/// line per request, its latency the record's histogram.
#[test]
fn h2load_log_file_is_every_requests_latency() {
    let text = data("h2load-log.tsv");
    let h = tare_tool::external::h2load::log(&text).unwrap();
    assert_eq!(h.iter().map(|(_, n)| n).sum::<u64>(), 2000);
    let r = LoadTool::H2load.parse(&data("h2load-log.txt")).unwrap();
    assert_eq!(r.requests, Some(2000), "one line per completed request");
    assert_eq!((h[0].0, h[h.len() - 1].0), (16, 3861));
    assert_eq!(r.latency_us["min"], 16.0);
    assert_eq!(r.latency_us["max"], 3860.0, "printed rounded: 3.86ms");
}

#[test]
fn ab_text_gives_counts_rate_failures_and_its_millisecond_table() {
    let r = LoadTool::Ab.parse(&data("ab-keepalive.txt")).unwrap();
    assert_eq!(r.requests, Some(26519));
    assert_eq!(r.duration_s, Some(1.002));
    assert_eq!(r.rps, Some(26453.03));
    assert_eq!(r.bytes_read, Some(6576612));
    assert_eq!(r.latency_us["mean"], 378.0);
    assert_eq!(r.latency_us["p50"], 0.0, "ab's whole milliseconds");
    assert_eq!(r.latency_us["p66"], 0.0);
    assert_eq!(r.latency_us["p95"], 1000.0);
    assert_eq!(r.latency_us["p100"], 5000.0);
    assert_eq!(r.latency_us["max"], 5000.0);
    assert_eq!(r.latency_us["stdev"], 300.0);
    assert!(!r.latency_us.contains_key("p999"));
    assert_eq!(r.errors_by_kind["failed"], 0);

    let s = LoadTool::Ab.parse(&data("ab-404.txt")).unwrap();
    assert_eq!(s.errors.status, 8027);
    let l = LoadTool::Ab.parse(&data("ab-length.txt")).unwrap();
    assert_eq!(l.errors_by_kind["length"], 2964);
    assert_eq!(
        l.errors.total(),
        0,
        "a length change is no error of tare's kinds"
    );
    let c = LoadTool::Ab.parse(&data("ab-close.txt")).unwrap();
    assert_eq!(c.requests, Some(2000));
}

#[test]
fn h2load_text_gives_counts_rate_errors_protocol_and_no_percentiles() {
    let r = LoadTool::H2load.parse(&data("h2load-default.txt")).unwrap();
    assert_eq!(r.requests, Some(22413));
    assert_eq!(r.rps, Some(22413.0));
    assert_eq!(r.duration_s, Some(1.0));
    assert_eq!(r.bytes_read, Some(3048658));
    assert_eq!(r.protocol.as_deref(), Some("h2c"));
    assert_eq!(r.latency_us["min"], 102.0);
    assert_eq!(r.latency_us["max"], 1170.0);
    assert_eq!(r.latency_us["mean"], 379.0);
    assert_eq!(r.latency_us["stdev"], 139.0);
    assert!(
        !r.latency_us.contains_key("p50"),
        "h2load prints no percentiles"
    );

    let s = LoadTool::H2load.parse(&data("h2load-404.txt")).unwrap();
    assert_eq!(s.errors.status, 38106);
    let h1 = LoadTool::H2load.parse(&data("h2load-h1.txt")).unwrap();
    assert_eq!(h1.protocol.as_deref(), Some("http/1.1"));
    assert_eq!(h1.duration_s, Some(0.03947));
    let refused = LoadTool::H2load.parse(&data("h2load-h1port.txt")).unwrap();
    assert_eq!(refused.requests, Some(0));
    assert_eq!(refused.errors.read, 1000);
    assert!(refused.latency_us.is_empty());
}

#[test]
fn output_with_no_count_is_an_error_naming_what_is_missing() {
    // JMeter's is its results file, whose header line is read first.
    for tool in LoadTool::ALL.iter().filter(|t| **t != LoadTool::Jmeter) {
        let e = tool.parse("Usage: something\n").unwrap_err().to_string();
        assert!(
            e.contains("no count of completed requests"),
            "{tool:?}: {e}"
        );
    }
    let e = LoadTool::Jmeter.parse("Usage: something\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("jmeter: cannot read `Usage: something`"),
        "{e}"
    );
    let e = LoadTool::Wrk
        .parse("  12 requests in 1.00s, lots read\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("wrk: cannot read `12 requests in 1.00s, lots read`"),
        "{e}"
    );
}

#[test]
fn pgbench_text_gives_transactions_failures_tps_and_its_mean_latency() {
    let r = LoadTool::Pgbench
        .parse(&data("pgbench-select1.txt"))
        .unwrap();
    assert_eq!(r.requests, Some(55300));
    assert_eq!(r.duration_s, Some(1.0));
    assert_eq!(r.rps, Some(55808.470979));
    assert_eq!(r.latency_us["mean"], 51.0);
    assert_eq!(r.latency_us["stdev"], 269.0);
    assert_eq!(r.errors_by_kind["failed"], 0);
    assert!(
        !r.latency_us.contains_key("p50"),
        "pgbench prints no percentiles"
    );
    let s = LoadTool::Pgbench
        .parse(&data("pgbench-select-only.txt"))
        .unwrap();
    assert_eq!(s.requests, Some(23855));
    assert!(
        !s.latency_us.contains_key("stdev"),
        "printed only with -P or a rate"
    );
    let t = LoadTool::Pgbench
        .parse(&data("pgbench-transactions.txt"))
        .unwrap();
    assert_eq!(t.requests, Some(1000), "N/M with -t");
    assert_eq!(t.duration_s, None);
    // An aborted run (a script error) prints its counts and no rate; its
    // exit status 2 is what fails the trial.
    let a = LoadTool::Pgbench
        .parse(&data("pgbench-aborted.txt"))
        .unwrap();
    assert_eq!((a.requests, a.rps), (Some(0), None));
}

#[test]
fn redis_benchmark_text_gives_commands_seconds_and_one_tests_latency() {
    let r = LoadTool::RedisBenchmark
        .parse(&data("redis-benchmark-get.txt"))
        .unwrap();
    assert_eq!(r.requests, Some(20000));
    assert_eq!(r.duration_s, Some(0.68));
    assert_eq!(r.latency_us["mean"], 99.0);
    assert_eq!(r.latency_us["min"], 24.0);
    assert_eq!(r.latency_us["p50"], 71.0);
    assert_eq!(r.latency_us["p95"], 119.0);
    assert_eq!(r.latency_us["p99"], 1367.0);
    assert_eq!(r.latency_us["max"], 6063.0);
    let two = LoadTool::RedisBenchmark
        .parse(&data("redis-benchmark-get-set.txt"))
        .unwrap();
    assert_eq!(two.requests, Some(40000));
    assert_eq!(two.duration_s, Some(0.66 + 0.54));
    assert!(
        two.latency_us.is_empty(),
        "two tests' summaries do not merge"
    );
    assert_eq!(
        LoadTool::from_name("redis-benchmark"),
        Some(LoadTool::RedisBenchmark)
    );
}

/// sysbench 1.0.20 (Debian 12) against a throw-away MariaDB 10.11:
/// oltp_read_only with `--histogram=on` and `--report-interval=1`,
/// oltp_read_write, and oltp_point_select with `--percentile=99`.
#[test]
fn sysbench_text_gives_transactions_ignored_errors_and_its_percentiles() {
    let r = LoadTool::Sysbench
        .parse(&data("sysbench-histogram.txt"))
        .unwrap();
    assert_eq!(r.requests, Some(2651));
    assert_eq!(r.rps, Some(1321.88));
    assert_eq!(r.duration_s, Some(2.0051));
    assert_eq!(r.latency_us["min"], 900.0);
    assert_eq!(r.latency_us["mean"], 3020.0);
    assert_eq!(r.latency_us["max"], 101970.0);
    assert_eq!(r.latency_us["p95"], 5880.0, "as printed");
    // From the histogram: the bucket each rank falls in (its p95 bucket,
    // 5.879 ms, is the 5.88 sysbench printed).
    assert!((r.latency_us["p50"] - 2477.0).abs() < 1e-6);
    assert!((r.latency_us["p99"] - 12984.0).abs() < 1e-6);
    assert!((r.latency_us["p999"] - 28162.0).abs() < 1e-6);
    assert_eq!(r.errors_by_kind["ignored"], 0);
    assert_eq!(r.errors_by_kind["reconnects"], 0);
    // Its histogram is the record's: every transaction, in its buckets.
    let h = r.histogram.as_ref().unwrap();
    assert_eq!(h.len(), 158);
    assert_eq!(h.iter().map(|(_, n)| n).sum::<u64>(), 2651);
    assert_eq!((h[0], h[h.len() - 1].0), ((904, 1), 101132));
    let l = tare_record::Latency::decode(&r.hdr().unwrap()).unwrap();
    assert_eq!(l.count(), 2651);
    assert!(
        (l.quantile_us(0.99) - 12984.0).abs() < 13.0,
        "within HDR's 0.1%"
    );
    let text = data("sysbench-histogram.txt");
    assert_eq!(tare_tool::external::sysbench::timeline(&text), [1687, 956]);

    let rw = LoadTool::Sysbench
        .parse(&data("sysbench-read-write.txt"))
        .unwrap();
    assert_eq!((rw.requests, rw.rps), (Some(500), Some(498.84)));
    assert_eq!(rw.latency_us["p95"], 10840.0);
    assert!(
        !rw.latency_us.contains_key("p50"),
        "no histogram: one percentile"
    );
    assert_eq!(rw.histogram, None);
    let p99 = LoadTool::Sysbench
        .parse(&data("sysbench-point-select-p99.txt"))
        .unwrap();
    assert_eq!(p99.requests, Some(16229));
    assert_eq!(p99.latency_us["p99"], 2660.0);
    assert!(!p99.latency_us.contains_key("p95"));
    assert_eq!(LoadTool::from_name("sysbench"), Some(LoadTool::Sysbench));
}

/// Locust 2.12.1 (Debian 12's python3-locust), headless, two tasks
/// against a loopback nginx: one answered 200, one 404.
#[test]
fn locust_summary_gives_requests_status_errors_and_whole_ms_percentiles() {
    let text = data("locust-404.txt");
    assert_eq!(LoadTool::Locust.output("", &text), text, "its stderr");
    let r = LoadTool::Locust.parse(&text).unwrap();
    assert_eq!(r.requests, Some(11636), "a 404 is a completed request");
    assert_eq!(r.errors.status, 5797);
    assert_eq!(r.errors.total(), 5797);
    assert_eq!(r.rps, Some(4204.85));
    assert_eq!(r.duration_s, None, "locust prints no duration");
    assert_eq!(r.latency_us["max"], 42000.0);
    assert_eq!(r.latency_us["p99"], 5000.0);
    assert_eq!(r.latency_us["p999"], 9000.0);
    assert_eq!(r.latency_us["p9999"], 42000.0);
    let (kind, n) = r.errors_by_kind.iter().next().unwrap();
    assert!(kind.starts_with("GET /missing: BadStatusCode("), "{kind}");
    assert_eq!(*n, 5797);
    assert!(!r.latency_us.contains_key("stdev"));
}

/// Debian 12's JMeter 2.13 (through tare's launcher), 2 threads for 2 s
/// asking for / (200) and /missing (404) from a loopback nginx, with
/// tare's JTL settings: every sample counted, the histogram and the
/// timeline from them, the rate over the file's own window.
#[test]
fn jmeter_results_give_counts_the_histogram_and_the_timeline() {
    let r = LoadTool::Jmeter.parse(&data("jmeter-404.jtl")).unwrap();
    assert_eq!(r.requests, Some(1454), "a 404 is a completed request");
    assert_eq!(r.errors.status, 726);
    assert_eq!(r.errors.total(), 726);
    assert_eq!(r.errors_by_kind.get("404"), Some(&726));
    // First start 1796686495476, last end 1796686496563.
    assert_eq!(r.duration_s, Some(1.087));
    assert!((r.throughput() - 1454.0 / 1.087).abs() < 1e-6);
    assert_eq!(r.bytes_read, Some(398_328));
    let h = tare_record::Latency::decode(r.encoded_hdr.as_deref().unwrap()).unwrap();
    assert_eq!(h.count(), 1454);
    // 143 ms, the first request of a new Java VM.
    assert!(
        (r.latency_us["max"] - 143_000.0).abs() < 143.0,
        "{:?}",
        r.latency_us
    );
    assert!(r.latency_us["p50"] <= r.latency_us["p99"]);
    let t = r.timeline.unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t.iter().sum::<u64>(), 1454);
}

/// Nothing listening: JMeter's `Non HTTP response code:
/// java.net.ConnectException` samples are connect errors, no request
/// completed, no histogram.
#[test]
fn jmeter_samples_without_a_response_are_errors_by_kind() {
    let r = LoadTool::Jmeter.parse(&data("jmeter-refused.jtl")).unwrap();
    assert_eq!(r.requests, Some(0));
    assert_eq!(r.errors.connect, 2);
    assert_eq!(
        r.errors_by_kind
            .get("Non HTTP response code: java.net.ConnectException"),
        Some(&2)
    );
    assert_eq!(r.encoded_hdr, None);
    assert!(r.latency_us.is_empty());
}
