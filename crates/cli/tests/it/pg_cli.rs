//! `tare pg` as a user runs it: the real binary against a PostgreSQL the
//! test starts (crates/pg/tests/pgserver), for the open-loop flags.

use crate::pgserver;

use crate::support;

use std::process::{Command, Output};
use std::sync::Mutex;

use pgserver::PgServer;
use support::validate;

fn tare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(args)
        .env_remove("PGHOST")
        .env_remove("PGPORT")
        .output()
        .expect("tare runs")
}

/// The tests that load a server measure rates: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Connection flags for `server`, over its Unix socket.
fn conn(server: &PgServer) -> Vec<String> {
    vec![
        "-h".into(),
        server.socket_dir.display().to_string(),
        "-p".into(),
        server.port.to_string(),
        "-U".into(),
        "postgres".into(),
        "-d".into(),
        "postgres".into(),
    ]
}

/// `tare pg` against `server` with `args`.
fn tare_pg(server: &PgServer, args: &[&str]) -> Output {
    let conn = conn(server);
    let conn = conn.iter().map(String::as_str);
    let all: Vec<&str> = std::iter::once("pg")
        .chain(conn)
        .chain(args.iter().copied())
        .collect();
    tare(&all)
}

fn script(server: &PgServer, name: &str, sql: &str) -> String {
    let path = server.dir.join(name);
    std::fs::write(&path, sql).unwrap();
    path.display().to_string()
}

/// Mistakes end before any load with one line and exit status 1 (as
/// pgbench's do). No server: every check comes before connecting.
#[test]
fn open_loop_mistakes_are_one_line_and_exit_1() {
    let conn = ["-h", "127.0.0.1", "-p", "1", "-U", "postgres"];
    for (args, says) in [
        (&["--find-max", "-T", "2"][..], "--slo"),
        (&["--slo", "p99<10ms", "-T", "2"][..], "--find-max"),
        (
            &["--find-max", "--slo", "p99<fast", "-T", "2"][..],
            "p99<fast",
        ),
        (&["--find-max", "--slo", "p98<1ms", "-T", "2"][..], "p98"),
        (
            &["--find-max", "--slo", "errors<1", "-T", "2"][..],
            "percentage",
        ),
        (
            &["--find-max", "--slo", "p99<1ms", "-R", "100", "-T", "2"][..],
            "--rate",
        ),
        (&["--find-max", "--slo", "p99<1ms", "-t", "10"][..], "-T"),
        (&["--ramp", "5s", "-T", "2"][..], "longer than"),
        (&["--ramp", "1s", "-t", "10"][..], "-T"),
        (&["--ramp", "soon", "-T", "2"][..], "--ramp"),
        (&["--arrivals", "constant", "-T", "2"][..], "--rate"),
        (&["-R", "0", "-T", "2"][..], "--rate"),
        (&["--coalesce", "5ms", "-T", "2"][..], "longer than 1ms"),
        (
            &["--coalesce", "auto", "-R", "100", "-T", "2"][..],
            "--rate",
        ),
        // The built-in tpcb-like: seven round trips per transaction.
        (&["--coalesce", "100us", "-T", "2"][..], "one SQL command"),
        (&["--io", "kqueue", "-T", "2"][..], "invalid --io"),
        (
            &["--io", "io_uring", "--coalesce", "100us", "-S", "-T", "2"][..],
            "only --io epoll",
        ),
    ] {
        let mut all = vec!["pg"];
        all.extend_from_slice(&conn);
        all.extend_from_slice(args);
        let out = tare(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `-R` with `--ramp`: the JSON follows the schema and carries the ramp;
/// the text adds the schedule and ramp lines after pgbench's.
#[test]
fn rate_with_ramp_reports_schedule_and_ramp() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = PgServer::start("");
    let file = script(&server, "one.sql", "select 1;\n");
    let args = [
        "-M",
        "prepared",
        "-f",
        &file,
        "-c",
        "4",
        "-j",
        "2",
        "-T",
        "1",
        "-R",
        "500",
        "--arrivals",
        "constant",
        "--ramp",
        "1s",
        "--json",
        "-",
    ];
    let out = tare_pg(&server, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate(&value);
    assert_eq!(value["unit"], "transactions");
    let failed = value["errors"]["status"].as_u64().unwrap();
    assert!(value["attempts"].as_u64().unwrap() >= value["requests"].as_u64().unwrap() + failed);
    let s = &value["schedule"];
    assert_eq!(s["target_rate"], 500.0);
    assert_eq!(s["arrivals"], "constant");
    assert_eq!(s["ramp_s"], 1.0);
    assert_eq!(s["ramp_timeline"].as_array().unwrap().len(), 1);
    assert_eq!(s["unsent"], 0);
    let tps = value["tps"].as_f64().unwrap();
    assert!((tps - 500.0).abs() <= 25.0, "{tps}");

    let out = tare_pg(&server, &args[..args.len() - 2]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("rate limit schedule lag: avg "), "{text}");
    assert!(
        text.contains("schedule: 500 tps constant, started "),
        "{text}"
    );
    assert!(
        text.contains("ramp: 1.0 s (not in the summary), transactions per second: "),
        "{text}"
    );
}

/// `--find-max` end to end, kept short (1 s probes, at most 2 open-loop
/// probes plus the capacity probe and the confirmation): the table on
/// stdout, the whole search as JSON in the file.
#[test]
fn find_max_prints_the_table_and_writes_the_search() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = PgServer::start("");
    let file = script(&server, "sleep.sql", "select pg_sleep(0.005);\n");
    let json = server.dir.join("search.json");
    let args = [
        "-f",
        &file,
        "-c",
        "4",
        "-j",
        "2",
        "-T",
        "1",
        "--find-max",
        "--slo",
        // Generous: a loaded machine (a load average of 17 on 2 cores) has
        // missed p99<50ms at every rate tried, which exits 1.
        "p99<500ms,errors<1%",
        "--max-runs",
        "2",
        "--json",
        &json.display().to_string(),
    ];
    let out = tare_pg(&server, &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {text}{}",
        out.status,
        stderr(&out)
    );
    assert!(
        text.starts_with("Highest rate meeting p99<500.000ms, errors<1%:\n"),
        "{text}"
    );
    assert!(text.contains("Max rate: "), "{text}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let probes = value["probes"].as_array().unwrap();
    assert!((2..=4).contains(&probes.len()), "{probes:?}");
    assert!(value["best_rate"].as_f64().unwrap() > 0.0);
    assert!(value["capacity_rps"].as_f64().unwrap() > 0.0);
    assert_eq!(value["bracket"].as_array().unwrap().len(), 2);
    assert_eq!(value["best"]["engine"], "pg");
}

/// A script whose every transaction fails measured nothing: the results,
/// then one line with the server's own words, and exit status 2 (as
/// pgbench exits 2); the JSON keeps the first failure too.
#[test]
fn every_transaction_failing_exits_2_with_the_servers_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = PgServer::start("");
    let file = script(&server, "typo.sql", "SELEC 1;\n");
    let json = server.dir.join("typo.json");
    let json = json.display().to_string();
    // --continue-on-error: the failures are counted (pgbench 15's rule,
    // the default, would abort the clients at the first one).
    let args = [
        "-f",
        &file,
        "-c",
        "2",
        "-T",
        "1",
        "--continue-on-error",
        "--json",
        &json,
    ];
    let out = tare_pg(&server, &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("every transaction failed (")
            && err.contains(
                "the server said: ERROR: syntax error at or near \"SELEC\" (SQLSTATE 42601)"
            ),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["requests"], 0);
    assert!(
        v["pg"]["first_failure"].as_str().unwrap().contains("SELEC"),
        "{v}"
    );
    let ok = script(&server, "ok.sql", "select 1;\n");
    let args = ["-f", &ok, "-c", "2", "-T", "1"];
    let out = tare_pg(&server, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
