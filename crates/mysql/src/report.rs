//! sysbench 1.0's text for `run` (its "SQL statistics", "General
//! statistics" and "Latency (ms)" blocks) from a [`LoadResult`], plus what
//! it lacks: HDR percentiles, errors by kind, lost connections and the
//! generator's CPU per transaction. sysbench's "Threads fairness" block is
//! left out: tare does not keep per-connection counts.

use std::fmt::Write;

use tare_record::{Latency, LoadResult, MysqlDetails};

/// What sysbench's header says about a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Header<'a> {
    pub workload: &'a str,
    /// `--threads`.
    pub threads: u64,
    /// `--rand-seed` when not 0.
    pub seed: Option<u64>,
    /// `--rate` when not 0.
    pub rate: Option<f64>,
    /// `--report-interval` in seconds when not 0.
    pub report_interval: Option<u64>,
}

/// sysbench's header for a run (its first lines; the banner names tare).
pub fn header(h: &Header) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tare mysql {} ({}, sysbench 1.0's OLTP workload)\n",
        env!("CARGO_PKG_VERSION"),
        h.workload
    );
    let _ = writeln!(out, "Running the test with following options:");
    let _ = writeln!(out, "Number of threads: {}", h.threads);
    if let Some(rate) = h.rate {
        let _ = writeln!(out, "Target transaction rate: {rate}/sec");
    }
    if let Some(every) = h.report_interval {
        let _ = writeln!(out, "Report intermediate results every {every} second(s)");
    }
    match h.seed {
        Some(seed) => {
            let _ = writeln!(
                out,
                "Initializing random number generator from seed ({seed}).\n"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Initializing random number generator from current time\n"
            );
        }
    }
    // sysbench ends its options with an empty notice.
    out.push('\n');
    out
}

/// `tare mysql TESTNAME help`: the test's options as sysbench's `help`
/// command lists a script's (`oltp_common.lua`'s, less `--pgsql_variant`:
/// tare mysql speaks MySQL only).
pub fn script_help(workload: &str, title: &str) -> String {
    const OPTIONS: [(&str, &str, &str, &str); 17] = [
        ("auto_inc", "[=on|off]", "Use AUTO_INCREMENT column as Primary Key (for MySQL), or its alternatives in other DBMS. When disabled, use client-generated IDs", "on"),
        ("create_secondary", "[=on|off]", "Create a secondary index in addition to the PRIMARY KEY", "on"),
        ("delete_inserts", "=N", "Number of DELETE/INSERT combinations per transaction", "1"),
        ("distinct_ranges", "=N", "Number of SELECT DISTINCT queries per transaction", "1"),
        ("index_updates", "=N", "Number of UPDATE index queries per transaction", "1"),
        ("mysql_storage_engine", "=STRING", "Storage engine, if MySQL is used", "innodb"),
        ("non_index_updates", "=N", "Number of UPDATE non-index queries per transaction", "1"),
        ("order_ranges", "=N", "Number of SELECT ORDER BY queries per transaction", "1"),
        ("point_selects", "=N", "Number of point SELECT queries per transaction", "10"),
        ("range_selects", "[=on|off]", "Enable/disable all range SELECT queries", "on"),
        ("range_size", "=N", "Range size for range SELECT queries", "100"),
        ("secondary", "[=on|off]", "Use a secondary index in place of the PRIMARY KEY", "off"),
        ("simple_ranges", "=N", "Number of simple range SELECT queries per transaction", "1"),
        ("skip_trx", "[=on|off]", "Don't start explicit transactions and execute all queries in the AUTOCOMMIT mode", "off"),
        ("sum_ranges", "=N", "Number of SELECT SUM() queries per transaction", "1"),
        ("table_size", "=N", "Number of rows per table", "10000"),
        ("tables", "=N", "Number of tables", "1"),
    ];
    let mut out = format!(
        "tare mysql {} ({workload}, sysbench 1.0's OLTP workload)\n\n{title} options:\n",
        env!("CARGO_PKG_VERSION")
    );
    let width = OPTIONS
        .iter()
        .map(|(n, v, _, _)| n.len() + v.len() + 2)
        .max()
        .unwrap_or(0);
    for (name, value, what, default) in OPTIONS {
        let flag = format!("--{name}{value}");
        let _ = writeln!(out, "  {flag:<width$} {what} [{default}]");
    }
    out.push('\n');
    out
}

/// tare's error lines: failures and retried errors by code, transactions
/// lost with their connection, connections ended early.
fn errors(out: &mut String, r: &LoadResult, d: &MysqlDetails) {
    let e = &r.errors;
    if e.total() > 0 || d.aborted_connections > 0 || !d.ignored_by_code.is_empty() {
        out.push_str("\nErrors:\n");
        let codes = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !d.errors_by_code.is_empty() {
            let _ = writeln!(
                out,
                "    failed transactions by error code: {}",
                codes(&d.errors_by_code)
            );
        }
        if !d.ignored_by_code.is_empty() {
            let _ = writeln!(
                out,
                "    retried (ignored) errors by code:  {}",
                codes(&d.ignored_by_code)
            );
        }
        if e.read + e.write + e.timeout > 0 {
            let _ = writeln!(
                out,
                "    transactions lost with their connection: {} (timed out: {})",
                e.read + e.write,
                e.timeout
            );
        }
        if d.aborted_connections > 0 {
            let _ = writeln!(
                out,
                "    connections ended early: {} of {} ({})",
                d.aborted_connections,
                r.connections,
                d.abort_error.as_deref().unwrap_or("")
            );
        }
    }
}

/// The result blocks sysbench prints at the end of `run`.
pub fn text(r: &LoadResult) -> String {
    let mut out = String::new();
    let s = r.duration_s.max(1e-9);
    let Some(d) = &r.mysql else {
        return out;
    };
    let queries = d.reads + d.writes + d.other;
    let line = |out: &mut String, k: &str, v: String| {
        let _ = writeln!(out, "    {k:<37}{v}");
    };
    let per_sec = |n: u64| format!("{n:<6} ({:.2} per sec.)", n as f64 / s);
    out.push_str("SQL statistics:\n");
    out.push_str("    queries performed:\n");
    for (k, v) in [
        ("read:", d.reads),
        ("write:", d.writes),
        ("other:", d.other),
        ("total:", queries),
    ] {
        let _ = writeln!(out, "        {k:<33}{v}");
    }
    line(&mut out, "transactions:", per_sec(r.requests));
    line(&mut out, "queries:", per_sec(queries));
    line(&mut out, "ignored errors:", per_sec(d.ignored_errors));
    line(&mut out, "reconnects:", per_sec(0));
    out.push_str("\nGeneral statistics:\n");
    line(&mut out, "total time:", format!("{:.4}s", r.duration_s));
    line(&mut out, "total number of events:", r.requests.to_string());
    let lat = Latency::decode(&r.hdr).ok().filter(|l| !l.is_empty());
    let ms = |us: f64| format!("{:.2}", us / 1e3);
    out.push_str("\nLatency (ms):\n");
    let l = &r.latency_us;
    let p95 = lat.as_ref().map_or(0.0, |h| h.quantile_us(0.95));
    let sum_ms = l.mean * r.requests as f64 / 1e3;
    for (k, v) in [
        ("min:", ms(l.min)),
        ("avg:", ms(l.mean)),
        ("max:", ms(l.max)),
        ("95th percentile:", ms(p95)),
        ("sum:", format!("{sum_ms:.2}")),
    ] {
        let _ = writeln!(out, "         {k:<24}{v:>15}");
    }
    // tare's additions.
    out.push_str("\nLatency percentiles (ms, HDR):\n");
    let _ = writeln!(
        out,
        "         50%: {}  90%: {}  99%: {}  99.9%: {}  99.99%: {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.p999),
        ms(l.p9999)
    );
    errors(&mut out, r, d);
    if let Some(sch) = &r.schedule {
        if let Some(rate) = sch.target_rate {
            let _ = writeln!(
                out,
                "\nOpen loop: {rate:.1} tx/s planned ({}), {} late starts, {} never started",
                sch.arrivals, sch.late_sends, sch.unsent
            );
        }
    }
    let _ = writeln!(
        out,
        "\nGenerator CPU: {:.3} s ({:.1} us per transaction), server {}",
        r.generator_cpu_s,
        r.generator_cpu_us_per_request(),
        d.server_version
    );
    out
}
