//! The text report: pgbench's PostgreSQL 15 layout line for line (so tools
//! that read pgbench's output read tare's), then tare's additions:
//! HDR percentiles, the open loop's schedule and the ramp, failures by
//! SQLSTATE class, and the generator's CPU.
//! Reads only the [`LoadResult`] (record, then report).

use std::fmt::Write;

use tare_record::{LoadResult, PgDetails, ScheduleReport, StatementLatency};

/// What the record does not say about how the text should look.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextOptions {
    /// `-P` was given: pgbench then prints `latency stddev` too.
    pub progress: bool,
    /// `--failures-detailed`: failures by kind.
    pub failures_detailed: bool,
}

pub fn text(r: &LoadResult, opts: TextOptions) -> String {
    let default = PgDetails::default();
    let pg = r.pg.as_ref().unwrap_or(&default);
    let mut o = String::new();
    let multi = pg.script_results.len() > 1;
    header(&mut o, r, pg, multi);
    let failed = pg.failed;
    // pgbench's denominators: every transaction, skipped ones included.
    let total = r.requests + failed + pg.skipped;
    // pgbench prints retries whenever --max-tries is not 1.
    let retries = pg.max_tries.is_some();
    let columns = if retries {
        ", failures and retries"
    } else {
        " and failures"
    };
    let rate = r.schedule.as_ref().filter(|s| s.target_rate.is_some());
    let lines = TallyLines {
        detailed: opts.failures_detailed,
        retries,
        skipped: rate.is_some() && pg.latency_limit_ms.is_some(),
    };
    let run = Tally {
        failed,
        serialization_failures: pg.serialization_failures,
        deadlock_failures: pg.deadlock_failures,
        retried: pg.retried,
        retries: pg.retries,
        skipped: pg.skipped,
    };
    lines.write(&mut o, "", &run, total);
    if let Some(limit) = pg.latency_limit_ms {
        let _ = writeln!(
            o,
            "number of transactions above the {limit:.1} ms latency limit: {}/{} ({:.3}%)",
            pg.late,
            r.requests,
            pct(pg.late, r.requests)
        );
    }
    let _ = writeln!(o, "latency average = {:.3} ms", r.latency_us.mean / 1e3);
    if opts.progress || rate.is_some() || pg.latency_limit_ms.is_some() {
        let _ = writeln!(o, "latency stddev = {:.3} ms", r.latency_us.stdev / 1e3);
    }
    if let Some(sch) = rate {
        // pgbench -R prints the schedule lag; the latency above counts from
        // the intended start, as pgbench's does.
        let _ = writeln!(
            o,
            "rate limit schedule lag: avg {:.3} (max {:.3}) ms",
            sch.mean_lag_us / 1e3,
            sch.max_lag_us / 1e3
        );
    }
    connection_lines(&mut o, r, pg);
    if multi {
        script_lines(&mut o, r, pg, &lines, columns);
    } else if !pg.statements.is_empty() {
        let _ = writeln!(o, "statement latencies in milliseconds{columns}:");
        let stmts: Vec<&StatementLatency> = pg.statements.iter().collect();
        statement_lines(&mut o, &stmts, retries);
    }
    additions(&mut o, r, pg);
    o
}

/// pgbench's first lines: the versions, the script, the settings and the
/// transactions processed.
fn header(o: &mut String, r: &LoadResult, pg: &PgDetails, multi: bool) {
    let server = if pg.server_version.is_empty() {
        String::new()
    } else {
        format!(", server {}", pg.server_version)
    };
    let _ = writeln!(o, "tare pg ({}{server})", r.tare_version);
    let ttype = if multi {
        "multiple scripts".to_string()
    } else {
        pg.script_results
            .first()
            .map(|s| s.name.clone())
            .unwrap_or_default()
    };
    let _ = writeln!(o, "transaction type: {ttype}");
    let _ = writeln!(o, "scaling factor: {}", pg.scale);
    let _ = writeln!(o, "query mode: {}", pg.query_mode);
    let _ = writeln!(o, "number of clients: {}", r.connections);
    let _ = writeln!(o, "number of threads: {}", r.threads);
    let _ = writeln!(o, "maximum number of tries: {}", pg.max_tries.unwrap_or(1));
    match (pg.transactions_per_client, pg.planned_duration_s) {
        (Some(t), _) => {
            let _ = writeln!(o, "number of transactions per client: {t}");
            let _ = writeln!(
                o,
                "number of transactions actually processed: {}/{}",
                r.requests,
                t * r.connections
            );
        }
        (None, d) => {
            let _ = writeln!(
                o,
                "duration: {} s",
                d.unwrap_or(r.duration_s).round() as u64
            );
            let _ = writeln!(
                o,
                "number of transactions actually processed: {}",
                r.requests
            );
        }
    }
}

/// The connection time and the tps pgbench reports for it.
fn connection_lines(o: &mut String, r: &LoadResult, pg: &PgDetails) {
    if pg.connect_per_transaction {
        let _ = writeln!(
            o,
            "average connection time = {:.3} ms",
            pg.connection_time_ms
        );
        let _ = writeln!(
            o,
            "tps = {:.6} (including reconnection times)",
            r.tps.unwrap_or(0.0)
        );
    } else {
        let _ = writeln!(
            o,
            "initial connection time = {:.3} ms",
            pg.connection_time_ms
        );
        let _ = writeln!(
            o,
            "tps = {:.6} (without initial connection time)",
            r.tps.unwrap_or(0.0)
        );
    }
}

/// Several scripts: each one's weight, transactions, failures, latency and
/// statements.
fn script_lines(o: &mut String, r: &LoadResult, pg: &PgDetails, lines: &TallyLines, columns: &str) {
    let retries = lines.retries;
    let total_weight: u64 = pg.script_results.iter().map(|s| s.weight as u64).sum();
    for (i, s) in pg.script_results.iter().enumerate() {
        let _ = writeln!(o, "SQL script {}: {}", i + 1, s.name);
        let _ = writeln!(
            o,
            " - weight: {} (targets {:.1}% of total)",
            s.weight,
            pct(s.weight as u64, total_weight)
        );
        let _ = writeln!(
            o,
            " - {} transactions ({:.1}% of total, tps = {:.6})",
            s.transactions,
            pct(s.transactions, r.requests),
            s.tps
        );
        // pgbench 15's denominator: the script's every transaction.
        let all = s.transactions + s.failed + s.skipped;
        let script = Tally {
            failed: s.failed,
            serialization_failures: s.serialization_failures,
            deadlock_failures: s.deadlock_failures,
            retried: s.retried,
            retries: s.retries,
            skipped: s.skipped,
        };
        lines.write(o, " - ", &script, all);
        // pgbench prints no latency of a script that never ran.
        if s.transactions > 0 {
            let _ = writeln!(o, " - latency average = {:.3} ms", s.latency_mean_ms);
            let _ = writeln!(o, " - latency stddev = {:.3} ms", s.latency_stdev_ms);
        }
        let stmts: Vec<&StatementLatency> = pg
            .statements
            .iter()
            .filter(|st| st.script == s.name)
            .collect();
        if !stmts.is_empty() {
            let _ = writeln!(o, " - statement latencies in milliseconds{columns}:");
            statement_lines(o, &stmts, retries);
        }
    }
}

/// tare's additions, after everything pgbench prints.
fn additions(o: &mut String, r: &LoadResult, pg: &PgDetails) {
    let l = &r.latency_us;
    let _ = writeln!(
        o,
        "latency percentiles: p50 = {:.3} ms, p90 = {:.3} ms, p99 = {:.3} ms, p99.9 = {:.3} ms, p99.99 = {:.3} ms, max = {:.3} ms",
        l.p50 / 1e3,
        l.p90 / 1e3,
        l.p99 / 1e3,
        l.p999 / 1e3,
        l.p9999 / 1e3,
        l.max / 1e3
    );
    if let Some(sch) = &r.schedule {
        schedule_lines(o, sch);
    }
    if let Some(c) = &r.connect_us {
        let _ = writeln!(
            o,
            "connection time percentiles: p50 = {:.3} ms, p99 = {:.3} ms, max = {:.3} ms",
            c.p50 / 1e3,
            c.p99 / 1e3,
            c.max / 1e3
        );
    }
    if !pg.failed_by_sqlstate_class.is_empty() {
        let classes: Vec<String> = pg
            .failed_by_sqlstate_class
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let _ = writeln!(
            o,
            "failed transactions by SQLSTATE class: {}",
            classes.join(", ")
        );
    }
    let e = &r.errors;
    if e.connect + e.read + e.write > 0 {
        let _ = writeln!(
            o,
            "connection errors: connect {}, read {}, write {}",
            e.connect, e.read, e.write
        );
    }
    let _ = writeln!(
        o,
        "tps = {:.6} (including initial connection time)",
        pg.tps_including_connect
    );
    if let Some(w) = r.wakeups.as_ref().and_then(|w| w.summary()) {
        let _ = writeln!(o, "wake-ups: {w}");
    }
    let _ = writeln!(
        o,
        "generator CPU = {:.3} s (user {:.3} s, system {:.3} s), {:.2} us per transaction",
        r.generator_cpu_s,
        r.generator_cpu_user_s,
        r.generator_cpu_system_s,
        r.generator_cpu_us_per_request()
    );
}

/// The open loop's bookkeeping (docs/open-loop.md) and the ramp.
fn schedule_lines(o: &mut String, s: &ScheduleReport) {
    if let Some(rate) = s.target_rate {
        let _ = writeln!(
            o,
            "schedule: {rate:.0} tps {}, started {:.1}/s, {} late (> 1 ms), lag mean {:.3} ms max {:.3} ms, {} unsent",
            s.arrivals,
            s.achieved_send_rate,
            s.late_sends,
            s.mean_lag_us / 1e3,
            s.max_lag_us / 1e3,
            s.unsent
        );
        if let Some(u) = &s.latency_uncorrected_us {
            let _ = writeln!(
                o,
                "uncorrected latency (from actual start): p50 = {:.3} ms, p90 = {:.3} ms, p99 = {:.3} ms, p99.9 = {:.3} ms, max = {:.3} ms",
                u.p50 / 1e3,
                u.p90 / 1e3,
                u.p99 / 1e3,
                u.p999 / 1e3,
                u.max / 1e3
            );
        }
    }
    if s.ramp_s > 0.0 {
        let per_s: Vec<String> = s.ramp_timeline.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(
            o,
            "ramp: {:.1} s (not in the summary), transactions per second: {}",
            s.ramp_s,
            per_s.join(" ")
        );
    }
}

/// pgbench's `100.0 * part / whole` in doubles: `NaN` of nothing.
/// A run's or a script's transactions that did not simply succeed.
struct Tally {
    failed: u64,
    serialization_failures: u64,
    deadlock_failures: u64,
    retried: u64,
    retries: u64,
    skipped: u64,
}

/// Which of pgbench's failure, retry and skip lines the options ask for;
/// the same lines for the run and (indented) for each script.
struct TallyLines {
    detailed: bool,
    retries: bool,
    skipped: bool,
}

impl TallyLines {
    /// The lines of `t`, out of `total` transactions, each after `prefix`.
    fn write(&self, o: &mut String, prefix: &str, t: &Tally, total: u64) {
        let line = |o: &mut String, what: &str, n: u64| {
            let _ = writeln!(
                o,
                "{prefix}number of {what}: {n} ({:.3}%)",
                pct_nan(n, total)
            );
        };
        line(o, "failed transactions", t.failed);
        if self.detailed {
            line(o, "serialization failures", t.serialization_failures);
            line(o, "deadlock failures", t.deadlock_failures);
        }
        if self.retries {
            line(o, "transactions retried", t.retried);
            let _ = writeln!(o, "{prefix}total number of retries: {}", t.retries);
        }
        if self.skipped {
            line(o, "transactions skipped", t.skipped);
        }
    }
}

fn pct_nan(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole as f64
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// pgbench 15: mean latency, failures and, when retries are possible,
/// retries, each right-aligned, then the command's first line.
fn statement_lines(o: &mut String, stmts: &[&StatementLatency], retries: bool) {
    for s in stmts {
        let _ = write!(o, "   {:>11.3}  {:>10}  ", s.mean_ms, s.failures);
        if retries {
            let _ = write!(o, "{:>10}  ", s.retries);
        }
        let _ = writeln!(o, "{}", s.command);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tare_record::PgScriptResult;

    fn sample() -> LoadResult {
        LoadResult {
            engine: "pg".into(),
            connections: 4,
            threads: 2,
            requests: 200100,
            tps: Some(100165.089688),
            duration_s: 2.0,
            metrics: Vec::new(),
            primary: None,
            tool: None,
            external: None,
            generators: Vec::new(),
            tare_version: "0.1.0".into(),
            pg: Some(PgDetails {
                query_mode: "prepared".into(),
                scale: 1,
                planned_duration_s: Some(2.0),
                connection_time_ms: 6.211,
                script_results: vec![PgScriptResult {
                    name: "s.sql".into(),
                    weight: 1,
                    transactions: 200100,
                    ..Default::default()
                }],
                statements: vec![StatementLatency {
                    script: "s.sql".into(),
                    line: 1,
                    command: "select 1;".into(),
                    mean_ms: 0.016,
                    failures: 0,
                    retries: 0,
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn follows_pgbench_15_layout() {
        let t = text(&sample(), TextOptions::default());
        let expected = "transaction type: s.sql
scaling factor: 1
query mode: prepared
number of clients: 4
number of threads: 2
maximum number of tries: 1
duration: 2 s
number of transactions actually processed: 200100
number of failed transactions: 0 (0.000%)
latency average = 0.000 ms
initial connection time = 6.211 ms
tps = 100165.089688 (without initial connection time)
statement latencies in milliseconds and failures:
         0.016           0  select 1;
latency percentiles: ";
        assert!(t.contains(expected), "{t}");
    }

    #[test]
    fn open_loop_and_ramp_lines_follow_pgbench_layout() {
        let mut r = sample();
        r.schedule = Some(ScheduleReport {
            target_rate: Some(800.0),
            arrivals: "poisson".into(),
            achieved_send_rate: 640.0,
            late_sends: 120,
            mean_lag_us: 2_500.0,
            max_lag_us: 48_000.0,
            unsent: 310,
            ramp_s: 2.0,
            ramp_timeline: vec![190, 610],
            ..Default::default()
        });
        let t = text(&r, TextOptions::default());
        assert!(
            t.contains("rate limit schedule lag: avg 2.500 (max 48.000) ms\n"),
            "{t}"
        );
        assert!(
            t.contains("schedule: 800 tps poisson, started 640.0/s, 120 late (> 1 ms), lag mean 2.500 ms max 48.000 ms, 310 unsent\n"),
            "{t}"
        );
        assert!(
            t.contains("ramp: 2.0 s (not in the summary), transactions per second: 190 610\n"),
            "{t}"
        );
    }

    #[test]
    fn reconnect_mode_and_transaction_counts() {
        let mut r = sample();
        let pg = r.pg.as_mut().unwrap();
        pg.connect_per_transaction = true;
        pg.transactions_per_client = Some(100);
        pg.failed = 5;
        pg.failed_by_sqlstate_class.insert("23".into(), 5);
        r.requests = 395;
        r.connections = 4;
        let t = text(
            &r,
            TextOptions {
                progress: true,
                ..Default::default()
            },
        );
        assert!(
            t.contains("number of transactions actually processed: 395/400\n"),
            "{t}"
        );
        assert!(
            t.contains("number of failed transactions: 5 (1.250%)\n"),
            "{t}"
        );
        assert!(t.contains("average connection time = "), "{t}");
        assert!(t.contains("(including reconnection times)"), "{t}");
        assert!(t.contains("latency stddev = "), "{t}");
        assert!(
            t.contains("failed transactions by SQLSTATE class: 23 = 5"),
            "{t}"
        );
    }

    /// pgbench 15's lines for retries, failures by kind and the latency
    /// limit, in its order and with its denominators (checked against
    /// pgbench 15.18's output).
    #[test]
    fn retries_failures_by_kind_and_the_latency_limit() {
        let mut r = sample();
        let pg = r.pg.as_mut().unwrap();
        pg.transactions_per_client = Some(10);
        pg.max_tries = Some(2);
        pg.failed = 1;
        pg.serialization_failures = 1;
        pg.retried = 3;
        pg.retries = 4;
        pg.latency_limit_ms = Some(1.0);
        pg.late = 2;
        pg.skipped = 0;
        r.requests = 9;
        r.connections = 1;
        let t = text(
            &r,
            TextOptions {
                failures_detailed: true,
                ..Default::default()
            },
        );
        let want = "number of failed transactions: 1 (10.000%)\n\
            number of serialization failures: 1 (10.000%)\n\
            number of deadlock failures: 0 (0.000%)\n\
            number of transactions retried: 3 (30.000%)\n\
            total number of retries: 4\n\
            number of transactions above the 1.0 ms latency limit: 2/9 (22.222%)\n\
            latency average = ";
        assert!(t.contains(want), "{t}");
        assert!(t.contains("maximum number of tries: 2\n"), "{t}");
        assert!(t.contains("latency stddev = "), "{t}");
        // Nothing measured: pgbench's NaN.
        let mut r = sample();
        r.requests = 0;
        let t = text(&r, TextOptions::default());
        assert!(
            t.contains("number of failed transactions: 0 (NaN%)\n"),
            "{t}"
        );
        assert!(!t.contains("retried"), "{t}");
    }

    /// Several scripts under `--max-tries`, `--failures-detailed`, `-R`
    /// and `-L`: pgbench 15.18's per-script lines, in its order, with the
    /// script's own denominators, and `-r`'s retries column.
    #[test]
    fn per_script_retries_failures_and_skips() {
        let mut r = sample();
        r.requests = 10;
        r.schedule = Some(ScheduleReport {
            target_rate: Some(100.0),
            ..Default::default()
        });
        let pg = r.pg.as_mut().unwrap();
        pg.max_tries = Some(3);
        pg.latency_limit_ms = Some(100.0);
        let script = |name: &str, weight, transactions, failed, retried, retries| PgScriptResult {
            name: name.into(),
            weight,
            transactions,
            failed,
            serialization_failures: failed,
            retried,
            retries,
            skipped: 1,
            ..Default::default()
        };
        pg.script_results = vec![
            script("a.sql", 2, 6, 1, 2, 3),
            script("b.sql", 1, 4, 0, 0, 0),
        ];
        pg.statements = vec![
            StatementLatency {
                script: "a.sql".into(),
                line: 1,
                command: "select 1;".into(),
                mean_ms: 0.973,
                failures: 1,
                retries: 3,
            },
            StatementLatency {
                script: "b.sql".into(),
                line: 1,
                command: "select 2;".into(),
                mean_ms: 0.14,
                failures: 0,
                retries: 0,
            },
        ];
        let t = text(
            &r,
            TextOptions {
                failures_detailed: true,
                ..Default::default()
            },
        );
        let want = "SQL script 1: a.sql
 - weight: 2 (targets 66.7% of total)
 - 6 transactions (60.0% of total, tps = 0.000000)
 - number of failed transactions: 1 (12.500%)
 - number of serialization failures: 1 (12.500%)
 - number of deadlock failures: 0 (0.000%)
 - number of transactions retried: 2 (25.000%)
 - total number of retries: 3
 - number of transactions skipped: 1 (12.500%)
 - latency average = 0.000 ms
 - latency stddev = 0.000 ms
 - statement latencies in milliseconds, failures and retries:
         0.973           1           3  select 1;
SQL script 2: b.sql
 - weight: 1 (targets 33.3% of total)
 - 4 transactions (40.0% of total, tps = 0.000000)
 - number of failed transactions: 0 (0.000%)
 - number of serialization failures: 0 (0.000%)
 - number of deadlock failures: 0 (0.000%)
 - number of transactions retried: 0 (0.000%)
 - total number of retries: 0
 - number of transactions skipped: 1 (20.000%)
 - latency average = 0.000 ms
 - latency stddev = 0.000 ms
 - statement latencies in milliseconds, failures and retries:
         0.140           0           0  select 2;
";
        assert!(t.contains(want), "{t}");
        // One script: no per-script block, the retries column all the same.
        let mut r = sample();
        r.pg.as_mut().unwrap().max_tries = Some(0);
        let t = text(&r, TextOptions::default());
        assert!(
            t.contains("statement latencies in milliseconds, failures and retries:\n         0.016           0           0  select 1;\n"),
            "{t}"
        );
        assert!(!t.contains("SQL script"), "{t}");
        // A script never chosen (weight 0): NaN shares, no latency.
        let mut r = sample();
        let pg = r.pg.as_mut().unwrap();
        pg.max_tries = Some(2);
        pg.script_results.push(PgScriptResult {
            name: "never.sql".into(),
            ..Default::default()
        });
        let t = text(&r, TextOptions::default());
        assert!(
            t.contains("SQL script 2: never.sql\n - weight: 0 (targets 0.0% of total)\n - 0 transactions (0.0% of total, tps = 0.000000)\n - number of failed transactions: 0 (NaN%)\n - number of transactions retried: 0 (NaN%)\n - total number of retries: 0\nlatency percentiles"),
            "{t}"
        );
    }
}
