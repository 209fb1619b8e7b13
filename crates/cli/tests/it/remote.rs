//! Remote hosts over SSH (docs/remote.md), with network namespaces on this
//! machine standing for the hosts, each running Debian's sshd on its own
//! address (`tare_testbed::ssh_hosts`; never a real remote address). One
//! test, one set of hosts, in phases:
//!
//! 1. bad input is a one-line error before any load: an unreachable host,
//!    a wrong key, a host without the tools tare needs, a target address
//!    the target host does not own;
//! 2. two generators against nginx on a third host: the merged count
//!    equals the server's access log (library level, the runner's own
//!    `Fleet`), nothing left on any host after it;
//! 3. a `tare run` whose first record holds both generators' parts, then
//!    a host drops: its part recorded as an error, the other's kept;
//!    the progress lines carry the remote generators' counts; the target
//!    is monitored on its host (the server's CPU per request, the host
//!    named in the record and the report); `tare cleanup --host` clears
//!    it once it is back;
//! 4. `tare run` killed with SIGKILL mid-trial: the agents stop by
//!    themselves and `tare cleanup --hosts-from RUN_DIR` leaves every host
//!    empty.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tare_deploy::{AccessLog, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use tare_remote::RemoteTarget;
use tare_runner::remote::Fleet;
use tare_runner::{ConfigSource, Experiment};
use tare_testbed::ssh_hosts::{HostSpec, SshHosts};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

fn tare(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(TARE)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("tare runs")
}

/// `tare run -q EXP --out OUT` in `cwd`.
fn run_quiet(exp: &Path, out: &Path, cwd: &Path) -> std::process::Output {
    tare(
        &[
            "run",
            exp.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
        cwd,
    )
}

/// Files tare left in a host's directory, and processes running from it.
fn left_on(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            if let Ok(exe) = std::fs::read_link(p.path().join("exe")) {
                if exe.starts_with(dir) {
                    out.push(format!(
                        "process {} ({})",
                        p.file_name().to_string_lossy(),
                        exe.display()
                    ));
                }
            }
        }
    }
    out
}

fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    ok()
}

fn trials(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

struct Setup {
    hosts: SshHosts,
    work: PathBuf,
}

impl Setup {
    fn host_dir(&self, name: &str) -> PathBuf {
        self.work.join(format!("on-{name}"))
    }

    fn host(&self, name: &str) -> String {
        self.hosts.toml(name, &self.host_dir(name))
    }

    /// An experiment: `hosts` blocks, then the rest.
    fn write(&self, file: &str, hosts: &[&str], extra_hosts: &str, body: &str) -> PathBuf {
        let mut text = String::new();
        for h in hosts {
            text.push_str(&self.host(h));
        }
        text.push_str(extra_hosts);
        text.push_str(body);
        let p = self.work.join(file);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn nothing_left(&self, names: &[&str]) {
        for n in names {
            let left = left_on(&self.host_dir(n));
            assert!(left.is_empty(), "left on {n}: {left:?}");
        }
    }
}

const BODY: &str = r#"
[target]
kind = "tare-serve"
host = "srv"
[factors]
placement = ["native", "lab-bridge"]
[load]
connections = 4
threads = 2
duration = "1s"
warmup = "200ms"
hosts = ["gen1", "gen2"]
[trials]
count = 2
cooldown = "100ms"
"#;

#[test]
fn generators_and_a_target_on_namespace_hosts_over_ssh() {
    let hosts = SshHosts::start(&[
        HostSpec {
            name: "gen1",
            bare_path: false,
            docker: false,
        },
        HostSpec {
            name: "gen2",
            bare_path: false,
            docker: false,
        },
        HostSpec {
            name: "srv",
            bare_path: false,
            docker: false,
        },
        HostSpec {
            name: "bare",
            bare_path: true,
            docker: false,
        },
    ]);
    let work = hosts.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let s = Setup { hosts, work };
    let all = ["gen1", "gen2", "srv", "bare"];
    for n in all {
        std::fs::create_dir_all(s.host_dir(n)).unwrap();
    }

    // 1. Bad input: one line, non-zero, no trial, nothing on any host.
    let started = Instant::now();
    let prefix = s.hosts.prefix.clone();
    let other_key = s.work.join("other");
    Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other_key)
        .status()
        .unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "unreachable",
            s.host("gen1")
                .replace(&s.hosts.host("gen1").1.to_string(), &format!("{prefix}.99")),
            "cannot reach",
        ),
        (
            "wrong key",
            s.host("gen1").replace(
                &s.hosts.identity.display().to_string(),
                &other_key.display().to_string(),
            ),
            "key is not accepted",
        ),
        (
            "no tools",
            s.host("bare").replace("[hosts.bare]", "[hosts.gen1]"),
            "lacks",
        ),
        (
            "foreign address",
            format!(
                "{}address = \"{}\"\n",
                s.host("gen1"),
                s.hosts.host("gen2").1
            ),
            "not one of its addresses",
        ),
    ];
    for (i, (what, gen1, expect)) in cases.iter().enumerate() {
        let body = BODY
            .replace("host = \"srv\"", "host = \"gen1\"")
            .replace("hosts = [\"gen1\", \"gen2\"]", "hosts = [\"gen1\"]");
        let exp = s.write(&format!("bad{i}.toml"), &[], gen1, &body);
        let out_dir = s.work.join(format!("bad{i}"));
        let out = run_quiet(&exp, &out_dir, &s.work);
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!out.status.success(), "{what}: {err}");
        assert_eq!(lines.len(), 1, "{what}: one line: {err}");
        assert!(lines[0].contains(expect), "{what}: {err}");
        assert!(trials(&out_dir).is_empty(), "{what}: no load");
    }
    s.nothing_left(&all);
    eprintln!("bad input: {:.1} s", started.elapsed().as_secs_f64());

    // 2a. Exact merged counts against nginx's access log on the target host.
    let started = Instant::now();
    // This test process is not tare: the hosts get tare itself.
    tare_remote::install::use_binary(TARE);
    let text = s.write(
        "exact.toml",
        &["gen1", "gen2", "srv"],
        "",
        &BODY.replace("tare-serve", "nginx"),
    );
    let exp = Experiment::parse(
        &std::fs::read_to_string(&text).unwrap(),
        &text,
        &ConfigSource::RelativeTo(s.work.clone()),
    )
    .unwrap();
    let run_dir = s.work.join("exact-run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let mut spec = DeploySpec::new(
        "rexact",
        TargetSpec::of("nginx".parse::<TargetKind>().unwrap()),
        PlacementKind::reference(),
    );
    spec.target.access_log = Some(AccessLog::On);
    let fleet =
        Fleet::connect(&exp.hosts, "rexact", &run_dir, std::slice::from_ref(&spec)).unwrap();
    assert_eq!(fleet.reach.unwrap().to_string(), s.hosts.host("srv").1);
    spec.reach = fleet.reach;
    let mut target = RemoteTarget::deploy(fleet.installed("srv").unwrap(), &spec).unwrap();
    fleet.check_endpoint(Some("srv"), &target.endpoint).unwrap();
    let log_file = target.deployed.dir.join("log/access.log");
    // The readiness probe's requests are in the log before the load.
    let lines = || {
        std::fs::read_to_string(&log_file)
            .map(|t| t.lines().count() as u64)
            .unwrap_or(0)
    };
    let probes = lines();
    let mut heard = Vec::new();
    let r = fleet
        .load(
            &exp,
            &exp.load,
            true,
            &target.endpoint,
            &target.deployed.url,
            &Arc::new(AtomicBool::new(false)),
            &mut |p| heard.push(p.clone()),
        )
        .unwrap();
    // Progress streamed from both generators while they ran (live counts;
    // the record's are the exact ones checked below).
    assert!(
        heard.iter().any(|p| p.reporting == 2 && p.done > 0),
        "{heard:?}"
    );
    assert!(heard.iter().all(|p| p.hosts == 2), "{heard:?}");
    // nginx may still be writing the last lines of its access log.
    let logged = r.requests + r.in_flight;
    wait_until(Duration::from_secs(10), || lines() - probes >= logged);
    assert_eq!(r.generators.len(), 2);
    assert!(
        r.generators
            .iter()
            .all(|g| g.error.is_none() && g.requests > 0),
        "{:?}",
        r.generators
    );
    assert_eq!(
        r.requests,
        r.generators.iter().map(|g| g.requests).sum::<u64>()
    );
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(lines() - probes, r.requests + r.in_flight, "log vs merged");
    assert_eq!(
        tare_record::Latency::decode(&r.hdr).unwrap().count(),
        r.requests
    );
    for g in &r.generators {
        // The same machine's clock: the offset is within the round trip.
        assert!(g.clock_offset_s.abs() < 0.05 + g.clock_rtt_s, "{g:?}");
    }
    // The merged record keeps tare's JSON contract, `generators` included.
    crate::support::validate(&serde_json::to_value(&r).unwrap());
    // Its host's agent checks it where it runs: alive after the load, and
    // a server killed there is seen dead, with the host's reason.
    target.check().unwrap();
    let pid: i32 = std::fs::read_to_string(target.deployed.dir.join("nginx.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: plain syscall on the nginx master this test deployed.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let dead = wait_until(Duration::from_secs(10), || target.check().is_err());
    assert!(dead, "a killed server still checked alive");
    let why = target.check().unwrap_err();
    assert!(why.starts_with("host srv: "), "{why}");
    target.stop().unwrap();
    assert!(fleet.close().is_empty());
    drop(fleet);
    s.nothing_left(&all);
    eprintln!("exact counts: {:.1} s", started.elapsed().as_secs_f64());

    // 3. tare run, gen2 dropping after the first trial: the first record
    // holds both generators' parts, the next one gen2's error and gen1's
    // part; lab-bridge (not reachable from another host) is skipped.
    let started = Instant::now();
    let exp = s.write("drop.toml", &["gen1", "gen2", "srv"], "", BODY);
    let out_dir = s.work.join("drop-run");
    let mut child = spawn_run(&exp, &out_dir, &s.work, false);
    assert!(wait_until(Duration::from_secs(60), || !trials(&out_dir).is_empty()));
    s.hosts.drop_host("gen2");
    let err = crate::support::wait_stderr(&mut child, Duration::from_secs(90));
    assert!(err.contains("skipping placement=lab-bridge"), "{err}");
    // Progress from the remote generators: their counts, summed, while
    // the first trial (both hosts up) ran.
    let counted: Vec<u64> = err
        .lines()
        .filter(|l| l.contains("of 2 generator hosts)"))
        .filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .collect();
    assert!(
        counted.iter().any(|&n| n > 0),
        "no counts in progress: {err}"
    );
    let recs = trials(&out_dir);
    assert_eq!(recs.len(), 2, "{err}");
    let first = &recs[0]["result"];
    let parts = first["generators"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{first}");
    assert!(parts.iter().all(|g| g.get("error").is_none()), "{first}");
    let sum: u64 = parts.iter().map(|g| g["requests"].as_u64().unwrap()).sum();
    assert_eq!(first["requests"].as_u64().unwrap(), sum);
    // The target on srv was monitored there, on a real server under load.
    let monitor = &recs[0]["monitor"];
    assert_eq!(monitor["host"], "srv", "{monitor}");
    let server_us = monitor["per_request"]["server_us"].as_f64().unwrap();
    assert!(server_us > 0.0, "{monitor}");
    assert!(monitor["verdict"]["bound"].is_string(), "{monitor}");
    let report = tare(&["report", out_dir.to_str().unwrap()], &s.work);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("measured on host srv: placement=native"),
        "{text}"
    );
    let second = &recs[1]["result"];
    assert!(second["generators"][1].get("error").is_some(), "{second}");
    assert_eq!(second["generators"][1]["requests"], 0);
    assert!(
        second["requests"].as_u64().unwrap() > 0,
        "gen1's part kept: {second}"
    );
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("provenance.json")).unwrap())
            .unwrap();
    let hosts = prov["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    assert!(hosts
        .iter()
        .all(|h| h["clock"]["rtt_s"].as_f64().unwrap() > 0.0));
    // gen1 and srv were cleaned at the run's end; gen2 once it is back.
    s.hosts.raise_host("gen2");
    let cleanup_lock = tare_testbed::machine::cleanup_lock();
    let out = tare(
        &[
            "cleanup",
            "--hosts-from",
            out_dir.to_str().unwrap(),
            "--host",
            "gen2",
        ],
        &s.work,
    );
    drop(cleanup_lock);
    tare_testbed::assert_success(&out);
    assert!(wait_until(Duration::from_secs(10), || {
        ["gen1", "gen2", "srv"]
            .iter()
            .all(|n| left_on(&s.host_dir(n)).is_empty())
    }));
    eprintln!("a host drops: {:.1} s", started.elapsed().as_secs_f64());

    // 4. SIGKILL mid-trial: the agents stop by themselves, cleanup clears the rest.
    let started = Instant::now();
    let body = BODY.replace("duration = \"1s\"", "duration = \"3s\"");
    let exp = s.write("kill.toml", &["gen1", "gen2", "srv"], "", &body);
    let out_dir = s.work.join("kill-run");
    let mut child = spawn_run(&exp, &out_dir, &s.work, true);
    // Mid-trial: past the first deployment on srv, into the 3 s load.
    let srv = s.host_dir("srv");
    let deployed = || {
        std::fs::read_dir(&srv)
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| {
                std::fs::read_dir(run.path().join("tmp"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|d| d.file_name().to_string_lossy().starts_with("tare-"))
            })
    };
    assert!(wait_until(Duration::from_secs(60), deployed));
    std::thread::sleep(Duration::from_millis(2500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(15), || ["gen1", "gen2", "srv"]
            .iter()
            .all(|n| !left_on(&s.host_dir(n))
                .iter()
                .any(|l| l.starts_with("process")))),
        "agents outlived the killed run"
    );
    let cleanup_lock = tare_testbed::machine::cleanup_lock();
    let out = tare(
        &["cleanup", "--hosts-from", out_dir.to_str().unwrap()],
        &s.work,
    );
    drop(cleanup_lock);
    tare_testbed::assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("srv: removed"), "{said}");
    s.nothing_left(&all);
    eprintln!(
        "SIGKILL and cleanup: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `tare run EXP --out OUT` (`-q` when `quiet`) in the background, its
/// stderr piped.
fn spawn_run(exp: &Path, out: &Path, cwd: &Path, quiet: bool) -> std::process::Child {
    let mut args = vec!["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap()];
    if quiet {
        args.push("-q");
    }
    Command::new(TARE)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// An external tool as the load of two generator hosts (docs/external.md,
/// "From remote hosts"): wrk with tare's `done()` on gen1 and gen2 against
/// nginx on srv, its script carried to each host, each host's run a part,
/// their histograms merged into the record's latency.
#[test]
fn an_external_tool_loads_from_two_namespace_hosts() {
    let names = ["gen1", "gen2", "srv"];
    let hosts = SshHosts::start(&names.map(|name| HostSpec {
        name,
        bare_path: false,
        docker: false,
    }));
    let work = hosts.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let s = Setup { hosts, work };
    for n in names {
        std::fs::create_dir_all(s.host_dir(n)).unwrap();
    }
    std::fs::write(
        s.work.join("done.lua"),
        include_str!("../../../tool/tests/data/external/tare-done.lua"),
    )
    .unwrap();
    let body = r#"
[target]
kind = "nginx"
host = "srv"
[factors]
placement = ["native"]
[load]
engine = "external"
connections = 4
threads = 2
duration = "1s"
warmup = "0s"
hosts = ["gen1", "gen2"]
[load.external]
tool = "wrk"
args = ["-t{threads}", "-c{connections}", "-d{duration}s", "-s", "done.lua", "{url}"]
scripts = ["done.lua"]
[trials]
count = 1
cooldown = "0s"
"#;
    let exp = s.write("external.toml", &names, "", body);
    let out_dir = s.work.join("external-run");
    let out = run_quiet(&exp, &out_dir, &s.work);
    let err = String::from_utf8_lossy(&out.stderr);
    let recs = trials(&out_dir);
    assert_eq!(recs.len(), 1, "{err}");
    let r = &recs[0]["result"];
    assert!(r.is_object(), "{}: {err}", recs[0]["error"]);
    crate::support::validate(r);
    assert_eq!(r["engine"], "external");
    let parts = r["generators"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{r}");
    for g in parts {
        assert!(g.get("error").is_none(), "{g}");
        assert!(g["requests"].as_u64().unwrap() > 0, "{g}");
        assert!(g["generator_cpu_s"].as_f64().unwrap() > 0.0, "{g}");
    }
    let sum: u64 = parts.iter().map(|g| g["requests"].as_u64().unwrap()).sum();
    assert_eq!(r["requests"].as_u64().unwrap(), sum);
    // Both hosts' distributions, merged: the record's latency is theirs.
    let h = tare_record::Latency::decode(r["hdr"].as_str().unwrap()).unwrap();
    assert!(h.count() > 0, "{r}");
    assert!(r["latency_us"]["p99"].as_f64().unwrap() > 0.0, "{r}");
    let ext = &r["external"];
    assert_eq!(ext["tool"], "wrk", "{r}");
    assert!(
        ext.get("pid").is_none(),
        "two processes on two hosts: {ext}"
    );
    assert!(ext["latency_us"]["p50"].as_f64().unwrap() > 0.0, "{ext}");
    let not = ext["not_reported"].as_array().unwrap();
    assert!(!not.iter().any(|n| n == "hdr"), "{not:?}");
    assert!(out.status.success(), "{err}");
    s.nothing_left(&names);
}
