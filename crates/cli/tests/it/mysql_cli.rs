//! `tare mysql` as a user runs it: the real binary against a MariaDB the
//! test starts (tare_testbed::MariaDb): `prepare`, `run` with sysbench's
//! text and `--report-interval` lines (on stdout), `--json` under both waits (`--io`)
//! checked against docs/json-schema.json, `cleanup`, and bad input as one
//! line and exit code 2. One server for all of it: starting one is the
//! slow part.

use crate::support;

use std::process::{Command, Output};

use support::validate;
use tare_testbed::MariaDb;

fn tare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tare"))
        .arg("mysql")
        .args(args)
        .output()
        .expect("tare runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `args` and expects success; returns stdout.
fn ok(args: &[&str]) -> String {
    let o = tare(args);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// Runs `args` and expects one line on stderr saying `says`, exit code 2.
fn fails(args: &[&str], says: &str) {
    let o = tare(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {says:?} in {err}");
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn prepare_run_json_cleanup_and_bad_input() {
    let m = MariaDb::start();
    let port = m.port.to_string();
    let socket = m.socket.to_str().unwrap().to_string();
    let tcp = ["--mysql-port", &port];
    let with = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = tcp.iter().map(|s| s.to_string()).collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    // prepare, sysbench's words; dashes or underscores.
    let prep = with(&[
        "oltp_read_write",
        "prepare",
        "--tables",
        "2",
        "--table_size",
        "300",
        "--threads",
        "2",
    ]);
    let out = ok(&args(&prep));
    for want in [
        "Creating table 'sbtest1'...",
        "Creating table 'sbtest2'...",
        "Inserting 300 records into 'sbtest2'",
        "Creating a secondary index on 'sbtest1'...",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }

    // run: sysbench's text, over the Unix socket, with progress lines.
    let out = tare(&[
        "oltp_read_only",
        "run",
        "--mysql-socket",
        &socket,
        "--tables",
        "2",
        "--table-size",
        "300",
        "--threads",
        "2",
        "--time",
        "2",
        "--report-interval",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for want in [
        "Number of threads: 2\n",
        "Report intermediate results every 1 second(s)\n",
        "SQL statistics:\n    queries performed:\n        read:",
        "    transactions:",
        "General statistics:\n    total time:",
        "Latency (ms):\n         min:",
        "95th percentile:",
        "Latency percentiles (ms, HDR):",
        "Generator CPU: ",
    ] {
        assert!(stdout.contains(want), "{want:?} in:\n{stdout}");
    }
    // The progress lines on stdout, as sysbench prints them, before the
    // statistics.
    let progress = stdout.find("[ 1s ] thds: 2 tps: ").expect(&stdout);
    assert!(
        progress < stdout.find("SQL statistics:").unwrap(),
        "{stdout}"
    );
    assert!(stdout.contains("lat (ms,95%): "), "{stdout}");

    // --json: the common contract, exact statement counts, under each wait.
    for io in tare_testbed::io_modes() {
        let io = io.to_string();
        let run = with(&[
            "oltp_read_write",
            "run",
            "--tables",
            "2",
            "--table-size",
            "300",
            "--threads",
            "3",
            "--workers",
            "2",
            "--time",
            "0",
            "--events",
            "90",
            "--rand-seed",
            "5",
            "--io",
            &io,
            "--json",
            "-",
        ]);
        let v: serde_json::Value = serde_json::from_str(&ok(&args(&run))).unwrap();
        validate(&v);
        assert_eq!(v["engine"], "mysql");
        assert_eq!(v["unit"], "transactions");
        assert_eq!(v["requests"], 90, "{io}");
        assert_eq!(
            (v["connections"].as_u64(), v["threads"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(
            v["target"],
            format!("mysql://sbtest@127.0.0.1:{port}/sbtest")
        );
        assert_eq!(v["wakeups"]["io"], io.as_str());
        assert!(v["tps"].as_f64().unwrap() > 0.0);
        assert!(v["latency_us"]["p99"].as_f64().unwrap() > 0.0);
        assert!(v["generator_cpu_s"].as_f64().unwrap() > 0.0);
        let d = &v["mysql"];
        assert_eq!(d["workload"], "oltp_read_write");
        assert_eq!(d["protocol"], "prepared");
        assert_eq!(
            (d["tables"].as_u64(), d["table_size"].as_u64()),
            (Some(2), Some(300))
        );
        // 14 reads, 4 writes and BEGIN/COMMIT per transaction, plus one
        // more of each for a retried transaction (deadlocks between the
        // three connections are sysbench's ignored errors).
        let ignored = d["ignored_errors"].as_u64().unwrap();
        let (reads, writes) = (d["reads"].as_u64().unwrap(), d["writes"].as_u64().unwrap());
        assert!(reads >= 90 * 14 && writes >= 90 * 4, "{d}");
        if ignored == 0 {
            assert_eq!(
                (reads, writes, d["other"].as_u64()),
                (90 * 14, 90 * 4, Some(180))
            );
        }
        assert_eq!(v["errors"]["status"], 0, "{}", v["errors"]);
    }

    // cleanup drops the tables: a run then names what is missing.
    let out = ok(&args(&with(&[
        "oltp_read_only",
        "cleanup",
        "--tables",
        "2",
    ])));
    assert!(out.contains("Dropping table 'sbtest2'..."), "{out}");
    let run = with(&["oltp_read_only", "run", "--events", "1", "--time", "0"]);
    fails(
        &args(&run),
        "Table 'sbtest.sbtest1' doesn't exist (run `tare mysql prepare` first)",
    );

    // Bad input: one line, exit code 2, never a panic.
    let free = tare_testbed::free_port().to_string();
    let run1 =
        |extra: &[&str]| with(&[&["oltp_read_only", "run", "--events", "1"], extra].concat());
    for (v, says) in [
        (
            run1(&["--mysql-user", "tare", "--mysql-password", "wrong"]),
            "ERROR 1045 (28000): Access denied for user 'tare'",
        ),
        (
            run1(&[
                "--mysql-user",
                "tare",
                "--mysql-password",
                MariaDb::PASSWORD,
                "--mysql-db",
                "nope",
            ]),
            "Unknown database 'nope'",
        ),
        (
            vec![
                "oltp_read_only".into(),
                "run".into(),
                "--mysql-port".into(),
                free.clone(),
            ],
            "could not connect to MySQL at 127.0.0.1:",
        ),
        (run1(&["--threads", "0"]), "--threads"),
        (run1(&["--tables", "0"]), "--tables must be at least 1"),
        (
            with(&["oltp_read_only", "run", "--time", "0"]),
            "give --time or --events",
        ),
        (run1(&["--io", "bogus"]), "invalid --io \"bogus\""),
        (run1(&["--coalesce", "auto"]), "--coalesce is not supported"),
        (with(&["oltp_bogus", "run"]), "unknown test \"oltp_bogus\""),
        (with(&["oltp_read_only", "warm"]), "invalid value 'warm'"),
    ] {
        fails(&args(&v), says);
    }
}
