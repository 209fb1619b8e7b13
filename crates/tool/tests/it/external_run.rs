//! The external engine's runs end to end, without an experiment: wrk (with
//! a Lua script), ab and h2load (HTTP/1.1 here: the testbed's nginx speaks
//! no h2c; crates/cli/tests/it/external.rs runs h2c) against a loopback
//! nginx for one second each, their whole latency distributions where
//! they give one, and each way a run goes wrong as one line.

use crate::support::data;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tare_engine::load::Load;
use tare_record::Latency;
use tare_testbed::{Nginx, NginxOptions};
use tare_tool::external::args::{Template, Values};
use tare_tool::external::{External, ExternalConfig, LoadTool};

fn nginx() -> Nginx {
    Nginx::start(&NginxOptions {
        workers: 1,
        access_log: false,
        index_html: "hello\n".into(),
    })
}

fn config(tool: LoadTool, args: &[&str], port: u16) -> ExternalConfig {
    ExternalConfig {
        load: Load {
            threads: 1,
            connections: 4,
            duration: Some(Duration::from_secs(1)),
            ..Load::default()
        },
        tool,
        binary: None,
        args: args.iter().map(|a| Template::parse(a).unwrap()).collect(),
        scripts: Vec::new(),
        grace: Duration::from_secs(5),
        values: Values {
            url: format!("http://127.0.0.1:{port}/index.html"),
            host: Some("127.0.0.1".into()),
            port: Some(port),
            ..Values::default()
        },
        target: format!("http://127.0.0.1:{port}/index.html"),
        transport: "tcp".into(),
    }
}

fn defaults(tool: LoadTool) -> Vec<&'static str> {
    tool.default_args().to_vec()
}

#[test]
fn wrk_ab_and_h2load_load_nginx_into_records_with_their_own_cpu() {
    let n = nginx();
    let stop = AtomicBool::new(false);
    let mut h1 = defaults(LoadTool::H2load);
    h1.insert(0, "--h1");
    for (tool, args) in [
        (LoadTool::Wrk, defaults(LoadTool::Wrk)),
        (LoadTool::Ab, defaults(LoadTool::Ab)),
        (LoadTool::H2load, h1),
    ] {
        let mut c = config(tool, &args, n.port);
        c.load.cpus = Some("0".parse().unwrap());
        let r = External::run(&c, &stop).unwrap_or_else(|e| panic!("{tool:?}: {e}"));
        let d = r.external.as_ref().unwrap();
        assert!(r.requests > 0 && r.rps.unwrap() > 0.0, "{tool:?}: {r:?}");
        assert_eq!(r.engine, "external");
        assert_eq!(r.errors.total(), 0, "{tool:?}: {:?}", d.errors_by_kind);
        assert!(r.generator_cpu_s > 0.0, "{tool:?}: its rusage");
        assert!(d.command.iter().any(|a| a == "-c4"), "{:?}", d.command);
        assert!(d.not_reported.contains(&"hdr".to_string()));
        assert!(d.latency_us.contains_key("mean"), "{tool:?}");
        if tool == LoadTool::H2load {
            assert_eq!(d.protocol.as_deref(), Some("http/1.1"));
            assert!(d.not_reported.contains(&"latency_us.p50".to_string()));
        }
    }
}

#[test]
fn a_wrk_lua_script_is_written_beside_wrk_and_its_statuses_counted() {
    let n = nginx();
    let mut c = config(
        LoadTool::Wrk,
        &[
            "-t1",
            "-c{connections}",
            "-d{duration}s",
            "-s",
            "post.lua",
            "{url}",
        ],
        n.port,
    );
    c.scripts = vec![("post.lua".into(), data("post-404.lua"))];
    let r = External::run(&c, &AtomicBool::new(false)).unwrap();
    assert!(r.requests > 0);
    // Every request went to /missing: nginx answers 404 (or 405 for POST
    // to a static file).
    assert_eq!(r.errors.status, r.requests);
    assert_eq!(r.external.unwrap().scripts, ["post.lua"]);
}

/// The whole latency distribution, the record's histogram: wrk's through
/// tare's `done()`, h2load's from its `--log-file` (a line per request).
#[test]
fn wrk_done_and_h2load_log_file_give_the_whole_distribution() {
    let n = nginx();
    let stop = AtomicBool::new(false);
    let mut w = config(
        LoadTool::Wrk,
        &[
            "-t1",
            "-c{connections}",
            "-d{duration}s",
            "-s",
            "done.lua",
            "{url}",
        ],
        n.port,
    );
    w.scripts = vec![("done.lua".into(), data("tare-done.lua"))];
    let r = External::run(&w, &stop).unwrap();
    let d = r.external.as_ref().unwrap();
    let h = Latency::decode(&r.hdr).unwrap();
    assert!(h.count() > 0, "{r:?}");
    assert!(!d.not_reported.contains(&"hdr".to_string()), "{d:?}");
    // The histogram's minimum and maximum are wrk's (within HDR's 0.1%).
    let close = |a: f64, b: f64| (a - b).abs() <= b * 0.002 + 1.0;
    assert!(close(h.summary().min, d.latency_us["min"]), "{d:?}");
    assert!(close(h.summary().max, d.latency_us["max"]), "{d:?}");

    let h2 = config(
        LoadTool::H2load,
        &[
            "--h1",
            "-c{connections}",
            "-D{duration}",
            "--log-file=requests.tsv",
            "{url}",
        ],
        n.port,
    );
    let r = External::run(&h2, &stop).unwrap();
    let d = r.external.as_ref().unwrap();
    let h = Latency::decode(&r.hdr).unwrap();
    assert_eq!(h.count(), r.requests, "a line per completed request");
    assert!(!d.not_reported.contains(&"hdr".to_string()), "{d:?}");
    // h2load prints its maximum rounded (`1.17ms`).
    let printed = d.latency_us["max"];
    assert!(
        (h.summary().max - printed).abs() <= printed * 0.005 + 5.0,
        "{d:?}"
    );
}

/// Each way a run goes wrong is one line naming the cause.
#[test]
fn a_missing_tool_a_bad_script_unreadable_output_and_an_overrun_are_one_line_each() {
    let stop = AtomicBool::new(false);
    let one_line = |c: &ExternalConfig| {
        let e = External::run(c, &stop).unwrap_err().to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    let mut c = config(LoadTool::H2load, &["{url}"], 1);
    c.binary = Some(PathBuf::from("/nonexistent/h2load"));
    let e = one_line(&c);
    assert!(
        e.contains("install the Debian package nghttp2-client"),
        "{e}"
    );

    let mut c = config(
        LoadTool::Wrk,
        &["-c1", "-t1", "-d1s", "-s", "bad.lua", "{url}"],
        1,
    );
    c.scripts = vec![("bad.lua".into(), "request = function(\n".into())];
    let e = one_line(&c);
    assert!(
        e.starts_with("wrk's script failed: bad.lua: bad.lua:"),
        "{e}"
    );

    let mut c = config(LoadTool::Ab, &["{url}"], 1);
    c.binary = Some(PathBuf::from("/bin/echo"));
    let e = one_line(&c);
    assert!(
        e.starts_with("ab's output does not parse (no count of completed requests): http://"),
        "{e}"
    );

    let mut c = config(LoadTool::Wrk, &["{duration}0"], 1);
    c.binary = Some(PathBuf::from("/bin/sleep"));
    c.grace = Duration::ZERO;
    let t0 = std::time::Instant::now();
    let e = one_line(&c);
    assert!(
        e.starts_with("sleep ran past its duration: killed after 1 s"),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5));

    let c = config(LoadTool::Wrk, &["{socket}"], 1);
    let e = one_line(&c);
    assert!(
        e.contains("`{socket}` has no value: this cell is reached over TCP"),
        "{e}"
    );
}

/// sysbench's default (oltp_read_only, `--histogram=on`, reports each
/// second) against a throw-away MariaDB: the tables made before the run
/// and dropped after it, so a second run prepares them again.
#[test]
fn sysbench_prepares_loads_and_cleans_up_a_mariadb() {
    let m = tare_testbed::MariaDb::start();
    let stop = AtomicBool::new(false);
    let mut c = config(LoadTool::Sysbench, &defaults(LoadTool::Sysbench), m.port);
    c.load.cpus = Some("0".parse().unwrap());
    for round in 0..2 {
        // Two seconds, then one: sysbench's report at the end of a
        // one-second run does not come.
        c.load.duration = Some(Duration::from_secs(2 - round));
        let r = External::run(&c, &stop).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let d = r.external.as_ref().unwrap();
        assert_eq!(r.unit, Some(tare_record::Unit::Transactions));
        assert!(r.requests > 0 && r.tps.unwrap() > 0.0, "{r:?}");
        assert_eq!(r.errors.total(), 0, "{:?}", d.errors_by_kind);
        assert!(r.generator_cpu_s > 0.0);
        assert!(r.latency_us.p50 > 0.0 && r.latency_us.p99 >= r.latency_us.p50);
        assert!(d.latency_us.contains_key("p95"), "{:?}", d.latency_us);
        if round == 0 {
            assert!(!r.timeline.is_empty(), "--report-interval=1");
        }
        assert_eq!(d.command.last().map(String::as_str), Some("run"));
    }
    // Cleaned up: no table is left.
    let out = std::process::Command::new("mariadb")
        .args(["--protocol=socket", "-S"])
        .arg(&m.socket)
        .args(["-u", "sbtest", "-N", "-e", "SHOW TABLES FROM sbtest"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
}

/// A prepare that fails (a database that does not exist) is one line
/// with sysbench's own words; nothing is measured.
#[test]
fn a_failed_sysbench_prepare_is_one_line() {
    let m = tare_testbed::MariaDb::start();
    let args: Vec<&str> = defaults(LoadTool::Sysbench)
        .into_iter()
        .map(|a| {
            if a == "--mysql-db=sbtest" {
                "--mysql-db=nope"
            } else {
                a
            }
        })
        .collect();
    let c = config(LoadTool::Sysbench, &args, m.port);
    let e = External::run(&c, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    // 4 threads, 1 table: sysbench exits 0 and prints FATAL.
    assert!(
        e.starts_with("sysbench prepare failed (exit status 0, FATAL): "),
        "{e}"
    );
    assert!(e.contains("nope"), "{e}");
}

/// A locustfile with two tasks (200 and 404) against a loopback nginx:
/// the 404s are status errors among the completed requests.
#[test]
fn locust_runs_a_locustfile_against_nginx() {
    let n = nginx();
    let mut c = config(LoadTool::Locust, &defaults(LoadTool::Locust), n.port);
    c.scripts = vec![("locustfile.py".into(), data("locustfile.py"))];
    // locust's `-t` timer runs from before its start-up (docs/external.md).
    c.load.duration = Some(Duration::from_secs(2));
    let r = External::run(&c, &AtomicBool::new(false)).unwrap_or_else(|e| panic!("{e}"));
    let d = r.external.as_ref().unwrap();
    assert!(r.requests > 0 && r.rps.unwrap() > 0.0, "{r:?}");
    assert!(r.errors.status > 0 && r.errors.status < r.requests, "{r:?}");
    assert_eq!(r.errors.total(), r.errors.status, "{:?}", d.errors_by_kind);
    assert!(r.generator_cpu_s > 0.0);
    assert!(d.latency_us.contains_key("p99"), "{:?}", d.latency_us);
    assert_eq!(d.scripts, ["locustfile.py"]);
}

/// A locustfile that does not load fails the run in one line: locust's
/// exit status and its last lines.
#[test]
fn a_broken_locustfile_is_one_line() {
    let mut c = config(LoadTool::Locust, &defaults(LoadTool::Locust), 1);
    c.scripts = vec![("locustfile.py".into(), "import nosuchmodule\n".into())];
    let e = External::run(&c, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("locust exited with status 1: "), "{e}");
    assert!(e.contains("nosuchmodule"), "{e}");
}

/// A JMeter plan (a thread group asking for / and /missing) against a
/// loopback nginx: Debian 12's JMeter 2.13 through tare's launcher, its
/// results file read into the record with the full histogram.
#[test]
fn jmeter_runs_a_plan_against_nginx() {
    let n = nginx();
    let mut c = config(LoadTool::Jmeter, &defaults(LoadTool::Jmeter), n.port);
    c.scripts = vec![("plan.jmx".into(), data("plan.jmx"))];
    c.grace = LoadTool::Jmeter.default_grace();
    // Three seconds: JMeter's duration runs from its thread group's start,
    // and on a loaded machine its threads' first requests (a new Java VM's)
    // took most of a 1 s run (4 requests, none of them the 404's).
    c.load.duration = Some(Duration::from_secs(3));
    let r = External::run(&c, &AtomicBool::new(false)).unwrap_or_else(|e| panic!("{e}"));
    let d = r.external.as_ref().unwrap();
    assert!(r.requests > 0 && r.rps.unwrap() > 0.0, "{r:?}");
    assert!(r.errors.status < r.requests, "{r:?}");
    assert_eq!(r.errors.total(), r.errors.status, "{:?}", d.errors_by_kind);
    if r.errors.status > 0 {
        assert_eq!(d.errors_by_kind.get("404"), Some(&r.errors.status));
    }
    let h = tare_record::Latency::decode(&r.hdr).unwrap();
    assert_eq!(h.count(), r.requests);
    assert_eq!(r.timeline.iter().sum::<u64>(), r.requests);
    assert!(r.generator_cpu_s > 0.0);
    assert!(
        d.command.iter().any(|a| a == "-Jthreads=4"),
        "{:?}",
        d.command
    );
    // This project's machines run Debian's JMeter 2.13 (scripts/setup.sh),
    // which only reads a plan through tare's launcher.
    assert!(
        d.command.iter().any(|a| a == "TareJMeter"),
        "{:?}",
        d.command
    );
}

/// JMeter exits 0 when it cannot run a plan: its `Error in NonGUIDriver`
/// line fails the run, in one line.
#[test]
fn a_plan_jmeter_cannot_read_is_one_line() {
    let mut c = config(LoadTool::Jmeter, &defaults(LoadTool::Jmeter), 1);
    c.scripts = vec![("plan.jmx".into(), "<jmeterTestPlan><nonsense/>\n".into())];
    c.grace = LoadTool::Jmeter.default_grace();
    let e = External::run(&c, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("jmeter could not run the plan: Error in NonGUIDriver"),
        "{e}"
    );
}
