//! `tare redis` as a user runs it: the real binary against a redis-server
//! the test starts (tare_testbed::RedisServer): redis-benchmark's text,
//! `-q`, `--csv`, the JSON contract, a custom command, `--find-max`, and
//! bad input as one line and a non-zero exit.

use crate::support;

use std::process::{Command, Output};
use std::sync::Mutex;

use support::validate;
use tare_testbed::RedisServer;

fn tare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tare"))
        .arg("redis")
        .args(args)
        .output()
        .expect("tare runs")
}

/// The tests that load a server: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn redis_benchmark_text_quiet_and_csv() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let server = RedisServer::start(None);
    let port = server.port.to_string();
    let o = tare(&[
        "-p", &port, "-c", "5", "-n", "2000", "-t", "set,get", "-d", "50", "-r", "1000",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for want in [
        "====== SET ======\n  2000 requests completed in ",
        "====== GET ======\n",
        "  5 parallel clients\n  50 bytes payload\n",
        "Latency by percentile distribution:\n0.000% <= ",
        "100.000% <= ",
        "Summary:\n  throughput summary: ",
        "  latency summary (msec):\n",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }
    let o = tare(&[
        "-s",
        server.socket.to_str().unwrap(),
        "-c",
        "2",
        "-n",
        "500",
        "-t",
        "ping",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("PING_INLINE: ") && lines[0].contains(" requests per second, p50=")
    );
    assert!(lines[1].starts_with("PING_MBULK: "));
    let o = tare(&[
        "-p",
        &port,
        "-c",
        "2",
        "-T",
        "300ms",
        "-t",
        "incr,lpush",
        "--csv",
        "-P",
        "8",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows[0].starts_with("\"test\",\"rps\",\"avg_latency_ms\""));
    assert!(rows[1].starts_with("\"INCR\",\"") && rows[2].starts_with("\"LPUSH\",\""));
}

#[test]
fn json_follows_the_schema_and_a_custom_command_runs() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let server = RedisServer::start(Some("pw"));
    let port = server.port.to_string();
    let o = tare(&[
        "-p",
        &port,
        "-a",
        "pw",
        "--dbnum",
        "2",
        "-c",
        "4",
        "--threads",
        "2",
        "-n",
        "1000",
        "-r",
        "100",
        "--json",
        "-",
        "--",
        "SET",
        "k:__rand_int__",
        "v",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    validate(&v);
    assert_eq!(v["engine"], "redis");
    assert_eq!(v["unit"], "commands");
    assert_eq!(v["requests"], 1000);
    assert_eq!(v["threads"], 2);
    assert_eq!(v["redis"]["tests"][0], "SET k:__rand_int__ v");
    assert_eq!(v["target"], format!("redis://127.0.0.1:{port}/2"));
    // Several tests: an array, each valid.
    let o = tare(&[
        "-p", &port, "-a", "pw", "-c", "2", "-n", "200", "-t", "set,get", "--json", "-",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 2);
    for r in all {
        validate(r);
    }
}

#[test]
fn find_max_and_open_loop() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let server = RedisServer::start(None);
    let port = server.port.to_string();
    let o = tare(&[
        "-p", &port, "-c", "4", "-t", "get", "-T", "500ms", "--rate", "1000", "--json", "-",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    validate(&v);
    assert_eq!(v["schedule"]["target_rate"], 1000.0);
    let o = tare(&[
        "-p",
        &port,
        "-c",
        "4",
        "-t",
        "get",
        "-T",
        "300ms",
        "--find-max",
        "--slo",
        "p99<50ms",
        "--max-runs",
        "2",
    ]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
}

#[test]
fn bad_input_is_one_line_and_a_non_zero_exit() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let server = RedisServer::start(Some("right"));
    let port = server.port.to_string();
    let free = tare_testbed::free_port().to_string();
    for (args, says) in [
        (
            vec!["-p", &port, "-a", "right", "-t", "bogus"],
            "unknown test \"bogus\"",
        ),
        (
            vec!["-p", &port, "-a", "right", "-c", "0", "-t", "get"],
            "clients (-c) must be at least 1",
        ),
        (
            vec!["-p", &free, "-t", "get"],
            "could not connect to Redis at 127.0.0.1:",
        ),
        (
            vec!["-p", &port, "-a", "wrong", "-t", "get"],
            "AUTH failed: WRONGPASS",
        ),
        (vec!["-p", &port, "-t", "get"], "NOAUTH"),
        (
            vec!["-p", &port, "-a", "right", "-t", "get", "-P", "0"],
            "pipeline (-P)",
        ),
        (
            vec![
                "-p", &port, "-a", "right", "-t", "get", "-n", "10", "--warmup", "1s",
            ],
            "needs a duration (-T)",
        ),
        (
            vec![
                "-p",
                &port,
                "-a",
                "right",
                "-t",
                "set,get",
                "-T",
                "1s",
                "--find-max",
                "--slo",
                "p99<1ms",
            ],
            "one test at a time",
        ),
    ] {
        let o = tare(&args);
        assert!(!o.status.success(), "{args:?}");
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Seed 002's Redis experiment in small: GET and SET as levels of the
/// `workload` factor, one kept deployment per cell, and before every
/// trial FLUSHALL (then, for GET, the keys it reads) as the study did
/// between runs, recorded in each trial.
#[test]
fn tare_run_varies_the_workload_and_prepares_every_trial() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = crate::support::ScratchDir::new("redis-run");
    let exp = "name = \"redis-workload\"\n[target]\nkind = \"redis\"\n[factors]\n\
               workload = [\"get\", \"set\"]\n\
               [load]\nthreads = 1\nconnections = 2\nduration = \"300ms\"\nwarmup = \"100ms\"\n\
               [load.redis]\ndata_size = 8\nkeyspace = 200\n\
               [trials]\ncount = 2\ncooldown = \"0s\"\ndeployment = \"kept\"\n";
    std::fs::write(dir.0.join("exp.toml"), exp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tare"))
        .arg("run")
        .arg(dir.0.join("exp.toml"))
        .arg("--out")
        .arg(dir.0.join("out"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = std::fs::read_to_string(dir.0.join("out/trials.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 4, "{lines}");
    for r in &records {
        assert!(r["error"].is_null(), "{r}");
        assert!(r["result"]["requests"].as_u64().unwrap() > 0, "{r}");
        let expect = match r["factors"]["workload"].as_str().unwrap() {
            "get" => "FLUSHALL; MSET 200 keys of 8 bytes for get",
            _ => "FLUSHALL",
        };
        assert_eq!(r["prepared"], expect, "{r}");
        assert_eq!(
            r["result"]["redis"]["tests"].as_array().unwrap().len(),
            1,
            "{r}"
        );
    }
}
