//! The external engine end to end through `tare run` (docs/external.md):
//! wrk with a Lua script and tare's `done()` summary (its histogram the
//! record's), each tool's process the monitor's generator, ab and h2load
//! (HTTP/1.1) against the nginx target natively and in docker-host; h2load
//! speaking h2c to Caddy (`kind = "command"`, examples/http2.toml's
//! service); pgbench, redis-benchmark, sysbench (prepared and cleaned up
//! by tare) and locust against their targets natively and in docker-host;
//! and a cell whose arguments cannot be filled failing alone.
//! Trials of one second, no warm-up: the suite's time matters.

use std::path::Path;
use std::process::Command;

const TARE: &str = env!("CARGO_BIN_EXE_tare");

fn docker_ok() -> bool {
    tare_deploy::docker::engine_version().is_ok()
}

/// Runs `exp` (written into `dir` with `files`) and returns its trials.
fn run(dir: &Path, exp: &str, files: &[(&str, &str)]) -> Vec<serde_json::Value> {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let file = dir.join("exp.toml");
    std::fs::write(&file, exp).unwrap();
    let out_dir = dir.join("run");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = Command::new(TARE)
        .args(["run", "-q", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let trials = std::fs::read_to_string(out_dir.join("trials.jsonl")).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    trials
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn placements() -> &'static str {
    if docker_ok() {
        "[\"native\", \"docker-host\"]"
    } else {
        "[\"native\"]"
    }
}

/// `target` (the `[target]` table's lines) loaded by the external engine
/// with `table` (`[load.external]`'s lines) for `duration` over
/// `connections`, natively and in docker-host where Docker runs.
fn experiment(target: &str, connections: u32, duration: &str, table: &str) -> String {
    format!(
        "[target]\n{target}[factors]\nplacement = {}\n\
         [load]\nengine = \"external\"\nthreads = 1\nconnections = {connections}\nduration = \"{duration}\"\nwarmup = \"0s\"\n\
         [load.external]\n{table}[trials]\ncount = 1\ncooldown = \"0s\"\n",
        placements()
    )
}

fn nginx_experiment(table: &str) -> String {
    experiment("kind = \"nginx\"\n", 4, "1s", table)
}

/// Runs `exp` (with `files`) and returns each placement's result, every
/// one of them measured.
fn results(exp: &str, files: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let trials = run(dir.path(), exp, files);
    assert_eq!(trials.len(), if docker_ok() { 2 } else { 1 });
    trials
        .into_iter()
        .map(|t| {
            assert!(t["result"].is_object(), "{}: {}", t["cell"], t["error"]);
            t["result"].clone()
        })
        .collect()
}

const DONE_LUA: &str = include_str!("../../../tool/tests/data/external/tare-done.lua");

#[test]
fn wrk_ab_and_h2load_load_nginx_natively_and_in_docker() {
    let dir = tempfile::tempdir().unwrap();
    let cells = if docker_ok() { 2 } else { 1 };
    for (tool, table) in [
        (
            "wrk",
            "tool = \"wrk\"\nargs = [\"-t{threads}\", \"-c{connections}\", \"-d{duration}s\", \"-s\", \"done.lua\", \"{url}\"]\nscripts = [\"lua/done.lua\"]\n",
        ),
        ("ab", "tool = \"ab\"\n"),
        (
            "h2load",
            "tool = \"h2load\"\nargs = [\"--h1\", \"-c{connections}\", \"-D{duration}\", \"{url}\"]\n",
        ),
    ] {
        let trials = run(
            dir.path(),
            &nginx_experiment(table),
            &[("lua/done.lua", DONE_LUA)],
        );
        assert_eq!(trials.len(), cells, "{tool}");
        for t in &trials {
            let r = &t["result"];
            assert!(r.is_object(), "{tool} {}: {}", t["cell"], t["error"]);
            crate::support::validate(r);
            assert_eq!(r["engine"], "external");
            assert_eq!(r["external"]["tool"], tool);
            assert!(r["requests"].as_u64().unwrap() > 0, "{tool}: {r}");
            assert!(r["generator_cpu_s"].as_f64().unwrap() > 0.0, "{tool}");
            let lat = &r["external"]["latency_us"];
            // The tool's process is the monitor's generator, as tare's own
            // threads are: its CPU, named by its pid (docs/external.md).
            let m = &t["monitor"];
            let pid = r["external"]["pid"].as_u64().unwrap();
            let desc = m["generator"].as_str().unwrap_or_default();
            assert!(desc.contains(&format!("pid {pid}")), "{tool}: {desc}");
            assert!(
                m["summary"]["cpu_s"]["generator"].as_f64().unwrap() > 0.0,
                "{tool}: {}",
                m["summary"]
            );
            assert!(
                m["per_request"]["generator_us"].as_f64().unwrap() > 0.0,
                "{tool}: {}",
                m["per_request"]
            );
            assert!(
                m["series"]["watched"].get(tool).is_none(),
                "{tool} is the generator, not a watched process"
            );
            if tool == "wrk" {
                // The script's done() summary: exact percentiles wrk's text lacks.
                assert!(lat["p999"].as_f64().unwrap() > 0.0, "{r}");
                // and its whole distribution, the record's histogram.
                let h = tare_record::Latency::decode(r["hdr"].as_str().unwrap()).unwrap();
                assert!(h.count() > 0, "{r}");
                let not = r["external"]["not_reported"].as_array().unwrap();
                assert!(!not.iter().any(|n| n == "hdr"), "{not:?}");
                assert_eq!(r["external"]["scripts"][0], "done.lua");
                // The script is kept in the run directory, hashed in the provenance.
                let run = dir.path().join("run");
                assert!(run.join("inputs/load.external.done.lua").is_file());
                let prov: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(run.join("provenance.json")).unwrap(),
                )
                .unwrap();
                assert!(
                    prov["inputs"]["inputs/load.external.done.lua"].is_string(),
                    "{}",
                    prov["inputs"]
                );
            } else if tool == "h2load" {
                assert!(lat.get("p50").is_none(), "h2load prints no percentiles");
                assert_eq!(r["hdr"], "", "h2load prints no distribution");
            }
        }
    }
}

const CADDYFILE: &str = include_str!("../../../../examples/http2/Caddyfile");

/// HTTP/2 (h2c) from h2load to a service of the user's that speaks it:
/// Caddy with `protocols h1 h2c` (its readiness probe is HTTP/1.1 on the
/// same port).
#[test]
fn h2load_speaks_h2c_to_caddy_natively_and_in_docker() {
    let exp = experiment(
        "kind = \"command\"\n\
         command = [\"caddy\", \"run\", \"--config\", \"{app}/http2/Caddyfile\", \"--adapter\", \"caddyfile\"]\n\
         env = { TARE_HOST = \"{host}\", TARE_PORT = \"{port}\", TARE_APP = \"{app}/http2\", TARE_DATA = \"{data}\", HOME = \"{data}\" }\n\
         files = [\"http2/Caddyfile\", \"http2/site\"]\npath = \"/index.html\"\n",
        4,
        "1s",
        "tool = \"h2load\"\n",
    );
    let files = [
        ("http2/Caddyfile", CADDYFILE),
        ("http2/site/index.html", "hello\n"),
    ];
    for r in results(&exp, &files) {
        assert_eq!(r["external"]["protocol"], "h2c", "{r}");
        assert!(r["requests"].as_u64().unwrap() > 0);
        assert_eq!(r["errors"]["status"], 0);
    }
}

/// A cell whose arguments cannot be filled (`{port}` of a cell reached
/// over a Unix socket) fails with one line; the TCP cell is measured.
#[test]
fn a_cell_the_tool_cannot_reach_fails_alone_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let exp = "[target]\nkind = \"nginx\"\n[factors]\ntransport = [\"tcp\", \"unix\"]\n\
               [load]\nengine = \"external\"\nthreads = 1\nconnections = 2\nduration = \"1s\"\nwarmup = \"0s\"\n\
               [load.external]\ntool = \"wrk\"\nargs = [\"-t1\", \"-c2\", \"-d1s\", \"http://{host}:{port}/\"]\n\
               [trials]\ncount = 1\ncooldown = \"0s\"\n";
    let trials = run(dir.path(), exp, &[]);
    assert_eq!(trials.len(), 2);
    for t in &trials {
        let cell = t["cell"].as_str().unwrap();
        if cell.contains("unix") {
            let e = t["error"].as_str().unwrap();
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(
                e.contains("`{host}` has no value: this cell is reached over a Unix socket"),
                "{e}"
            );
        } else {
            assert!(
                t["result"]["requests"].as_u64().unwrap() > 0,
                "{cell}: {}",
                t["error"]
            );
        }
    }
}

/// pgbench with a script of the experiment's (its built-in scripts need
/// `pgbench -i`'s tables) against the postgres target, natively and in
/// docker-host: transactions, tps, its mean latency, its timeline from
/// `-P 1`.
#[test]
fn pgbench_with_its_script_loads_postgres_natively_and_in_docker() {
    let exp = experiment(
        "kind = \"postgres\"\n",
        2,
        "2s",
        "tool = \"pgbench\"\n\
         args = [\"-n\", \"-P\", \"1\", \"-M\", \"prepared\", \"-f\", \"select1.sql\", \"-c{connections}\", \"-j{threads}\", \"-T{duration}\", \"{url}\"]\n\
         scripts = [\"select1.sql\"]\n",
    );
    for r in &results(&exp, &[("select1.sql", "SELECT 1;\n")]) {
        crate::support::validate(r);
        assert_eq!(r["unit"], "transactions");
        assert!(
            r["tps"].as_f64().unwrap() > 0.0 && r.get("rps").is_none(),
            "{r}"
        );
        assert!(r["external"]["latency_us"]["mean"].as_f64().unwrap() > 0.0);
        assert_eq!(r["errors"]["status"], 0);
        // `-P 1`'s progress lines, one a second: the last second's comes
        // as `-T 2` ends, before or after the run's end (a loaded machine
        // printed none with `-T 1`).
        let seconds = r["timeline"].as_array().unwrap().len();
        assert!((1..=2).contains(&seconds), "{r}");
    }
}

/// redis-benchmark (its default: 100k GETs, here 20k) against the redis
/// target, natively and in docker-host. It runs a count, not a time: a
/// grace of 30 s (20k GETs took over 6 s on this shared machine under load).
#[test]
fn redis_benchmark_loads_redis_natively_and_in_docker() {
    let exp = experiment(
        "kind = \"redis\"\n",
        4,
        "1s",
        "tool = \"redis-benchmark\"\n\
         args = [\"-h\", \"{host}\", \"-p\", \"{port}\", \"-c\", \"{connections}\", \"-n\", \"20000\", \"-t\", \"get\"]\n\
         grace = \"60s\"\n",
    );
    for r in results(&exp, &[]) {
        assert_eq!(r["unit"], "commands");
        assert_eq!(r["requests"], 20000);
        assert!(
            r["external"]["latency_us"]["p99"].as_f64().unwrap() > 0.0,
            "{r}"
        );
    }
}

/// sysbench's default (oltp_read_only over one 10,000-row table) against
/// the mariadb target for 2 s, natively and in docker-host: tare prepares
/// the tables before each run and drops them after; transactions, tps, the
/// percentiles of its histogram, its timeline from `--report-interval=1`.
#[test]
fn sysbench_loads_mariadb_natively_and_in_docker() {
    let exp = experiment("kind = \"mariadb\"\n", 2, "2s", "tool = \"sysbench\"\n");
    for r in &results(&exp, &[]) {
        crate::support::validate(r);
        assert_eq!(r["unit"], "transactions");
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["errors"]["status"], 0);
        let lat = &r["external"]["latency_us"];
        assert!(lat["p50"].as_f64().unwrap() > 0.0, "{r}");
        assert!(lat["p95"].as_f64().unwrap() > 0.0, "{r}");
        // `--report-interval=1` over 2 s: a report each second (the one at
        // the very end may not come).
        let seconds = r["timeline"].as_array().unwrap().len();
        assert!((1..=2).contains(&seconds), "{r}");
    }
}

const LOCUSTFILE: &str = include_str!("../../../tool/tests/data/external/locustfile.py");

/// A locustfile of the experiment's (a 200 and a 404 task) against the
/// nginx target, natively and in docker-host.
#[test]
fn locust_loads_nginx_natively_and_in_docker() {
    // Three seconds: locust's `-t` timer runs from before its start-up
    // (docs/external.md), which took the whole of a 1 s run under load.
    let exp = experiment(
        "kind = \"nginx\"\n",
        4,
        "3s",
        "tool = \"locust\"\nscripts = [\"locustfile.py\"]\n",
    );
    for r in &results(&exp, &[("locustfile.py", LOCUSTFILE)]) {
        crate::support::validate(r);
        assert_eq!(r["external"]["tool"], "locust");
        let (n, status) = (
            r["requests"].as_u64().unwrap(),
            r["errors"]["status"].as_u64().unwrap(),
        );
        assert!(n > 0 && status > 0 && status < n, "{r}");
        assert!(r["external"]["latency_us"]["p99"].is_number(), "{r}");
    }
}

const PLAN: &str = include_str!("../../../tool/tests/data/external/plan.jmx");

/// A JMeter plan of the experiment's (threads asking for / and /missing
/// at `${__P(host)}:${__P(port)}` for `${__P(duration)}` seconds) against
/// the nginx target, natively and in docker-host: its results file read
/// into the record, with the full histogram and the timeline.
#[test]
fn jmeter_loads_nginx_natively_and_in_docker() {
    let dir = tempfile::tempdir().unwrap();
    // Three seconds: JMeter's duration runs from its thread group's
    // start, and a new Java VM's first requests take a loaded machine's
    // first second (docs/external.md, "JMeter").
    let exp = nginx_experiment("tool = \"jmeter\"\nscripts = [\"plan.jmx\"]\n")
        .replace("duration = \"1s\"", "duration = \"3s\"");
    let trials = run(dir.path(), &exp, &[("plan.jmx", PLAN)]);
    assert_eq!(trials.len(), if docker_ok() { 2 } else { 1 });
    for t in &trials {
        let r = &t["result"];
        assert!(r.is_object(), "{}: {}", t["cell"], t["error"]);
        crate::support::validate(r);
        assert_eq!(r["external"]["tool"], "jmeter");
        let (n, status) = (
            r["requests"].as_u64().unwrap(),
            r["errors"]["status"].as_u64().unwrap(),
        );
        assert!(n > 0 && status < n, "{r}");
        // Every sample is in the JTL: the histogram and the timeline are there.
        let hdr = tare_record::Latency::decode(r["hdr"].as_str().unwrap()).unwrap();
        assert_eq!(hdr.count(), n);
        let timeline: u64 = r["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(timeline, n);
        let not = r["external"]["not_reported"].to_string();
        assert!(
            !not.contains("\"hdr\"") && !not.contains("timeline"),
            "{not}"
        );
        if status > 0 {
            assert_eq!(r["external"]["errors_by_kind"]["404"], status);
        }
    }
}
