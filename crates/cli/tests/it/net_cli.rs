//! `tare net` as a user runs it (the real binary, the real responder in a
//! process of its own), and the `net` target deployed in a Docker and a lab
//! placement: every test through each, the responder's counts against the
//! client's, a responder killed mid-run, bad input, and injected delay as
//! the ground truth of the round-trip measurement.

use crate::support;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::validate;
use tare_deploy::{deploy, DeploySpec, Deployment, PlacementKind, TargetKind, TargetSpec};
use tare_engine::Endpoint;
use tare_net::{Direction, NetConfig, Test};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

fn tare(args: &[&str]) -> Output {
    Command::new(TARE).args(args).output().expect("tare runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `tare net serve` on a free loopback port, once it accepts connections.
struct Serve {
    child: Child,
    port: u16,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        for _ in 0..5 {
            let port = tare_testbed::free_port();
            let mut child = Command::new(TARE)
                .args(["net", "serve", "--listen", &format!("127.0.0.1:{port}")])
                .args(extra)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken meanwhile: another one
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                    return Serve { child, port };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("tare net serve did not start");
    }

    /// SIGTERM, then the summary line it prints: what it served.
    fn stop(mut self) -> String {
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let _ = self.child.wait();
        err
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number before `word` in the responder's summary line.
fn served(summary: &str, word: &str) -> u64 {
    let words: Vec<&str> = summary.split_whitespace().collect();
    let i = words
        .iter()
        .position(|w| *w == word)
        .unwrap_or_else(|| panic!("{word} in {summary}"));
    words[i - 1].parse().unwrap()
}

#[test]
fn every_test_against_the_responder_process_counts_what_it_served() {
    let s = Serve::start(&[]);
    let port = s.port.to_string();
    let mut tcp = 0;
    let mut udp = 0;
    for test in ["rr", "crr", "udp-rr", "stream"] {
        let out = tare(&[
            "net", test, "-p", &port, "-l", "400ms", "-c", "2", "--json", "-",
        ]);
        assert!(out.status.success(), "{test}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON only");
        validate(&v);
        assert_eq!(v["engine"], "net");
        assert_eq!(v["net"]["test"], test);
        let n = v["requests"].as_u64().unwrap();
        assert!(n > 0, "{test}");
        match test {
            "rr" | "crr" => {
                tcp += n;
                assert_eq!(v["unit"], "round trips");
                assert!(v["net"]["round_trip_us"].as_f64().unwrap() > 0.0);
            }
            "udp-rr" => udp += n,
            _ => {
                assert_eq!(v["unit"], "megabits");
                assert!(v["net"]["send_gbit_s"].as_f64().unwrap() > 0.0);
            }
        }
    }
    // The text for people names the test as netperf does.
    let out = tare(&["net", "rr", "-p", &port, "-l", "200ms", "-r", "1,1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("TCP_RR") && text.contains("request 1 B"),
        "{text}"
    );
    tcp += text
        .lines()
        .find_map(|l| l.trim().strip_prefix("transactions"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse::<u64>()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let summary = s.stop();
    assert_eq!(served(&summary, "tcp"), tcp, "{summary}");
    assert_eq!(served(&summary, "udp"), udp, "{summary}");
}

/// A responder killed mid-run (SIGKILL: no goodbye) ends the run: the
/// errors are counted and what was measured before is printed and kept.
#[test]
fn a_responder_killed_mid_run_ends_the_run_with_results_kept() {
    for test in ["rr", "udp-rr", "stream"] {
        let mut s = Serve::start(&[]);
        let port = s.port.to_string();
        let client = Command::new(TARE)
            .args([
                "net",
                test,
                "-p",
                &port,
                "-l",
                "20",
                "--timeout",
                "200ms",
                "--json",
                "-",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(600));
        s.child.kill().unwrap();
        let t0 = Instant::now();
        let out = client.wait_with_output().unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(8),
            "{test}: the run went on for {:?}",
            t0.elapsed()
        );
        assert!(out.status.success(), "{test}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["requests"].as_u64().unwrap() > 0, "{test}: results kept");
        let e = &v["errors"];
        let errors: u64 = ["connect", "read", "write", "timeout"]
            .iter()
            .map(|k| e[*k].as_u64().unwrap())
            .sum();
        assert!(errors >= 1, "{test}: {e}");
        assert!(v["duration_s"].as_f64().unwrap() < 10.0);
    }
}

#[test]
fn bad_input_is_a_one_line_error_and_a_non_zero_exit() {
    let closed = tare_testbed::free_port().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["net", "rr", "-r", "0,200", "-p", &closed], "size 0"),
        (vec!["net", "rr", "-r", "100,2m", "-p", &closed], "between"),
        (
            vec!["net", "udp-rr", "-r", "100,70000", "-p", &closed],
            "between",
        ),
        (vec!["net", "rr", "-r", "x", "-p", &closed], "invalid size"),
        (vec!["net", "tcp_rr"], "tcp_rr"),
        (vec!["net", "rr", "-p", &closed, "-l", "1"], "cannot reach"),
        (vec!["net", "rr", "-H", "192.0.2.1"], "--allow-remote"),
        (
            vec!["net", "rr", "--direction", "both", "-p", &closed],
            "stream only",
        ),
        (vec!["net", "stream", "-R", "100", "-p", &closed], "no rate"),
        (vec!["net", "rr", "-c", "0", "-p", &closed], "at least 1"),
    ];
    for (args, says) in cases {
        let out = tare(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // clap's usage lines aside, tare's own errors are one line.
        if !err.contains("Usage") {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

/// Runs `config` from the deployment's client namespace (if any).
fn run_at(d: &Deployment, mut config: NetConfig) -> tare_record::LoadResult {
    config.endpoint = d.endpoint().clone();
    config.load.netns = d.client_netns().map(Into::into);
    tare_net::run(&config).unwrap()
}

fn config(test: Test, secs: f64) -> NetConfig {
    let mut c = NetConfig::new(Endpoint::Tcp(([127, 0, 0, 1], 1).into()), test);
    c.load.duration = Some(Duration::from_secs_f64(secs));
    c
}

fn net_target() -> TargetSpec {
    let mut t = TargetSpec::of(TargetKind::named("net").unwrap());
    t.target.binary = Some(TARE.into());
    t
}

/// Every test through a Docker placement (the published port, UDP
/// included: the IBM study's NAT cells are empty because netperf's port
/// was not published) and a lab placement (a namespace behind nftables
/// NAT, and one the client loads from another namespace).
#[test]
fn every_test_through_docker_and_lab_placements() {
    let mut placements = Vec::new();
    if tare_deploy::docker::engine_version().is_ok() {
        placements.extend(["docker-publish", "docker-bridge"]);
    } else {
        eprintln!("Docker not reachable: docker placements not tested");
    }
    if tare_deploy::lab::available().is_ok() {
        placements.extend(["lab-nat", "lab-client"]);
    } else {
        eprintln!("lab unavailable: lab placements not tested");
    }
    for name in placements {
        let placement = PlacementKind::named(name).unwrap();
        let run = format!("tn{}{}", std::process::id() % 100000, name.replace('-', ""));
        let d = deploy(&DeploySpec::new(&run, net_target(), placement))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for test in [Test::Rr, Test::Crr, Test::UdpRr, Test::Stream] {
            let mut c = config(test, 0.4);
            if test == Test::Stream {
                c.direction = Direction::Both;
            }
            let r = run_at(&d, c);
            assert!(r.requests > 0, "{name} {test}: {r:?}");
            assert_eq!(r.errors.total(), 0, "{name} {test}: {:?}", r.errors);
        }
        d.stop().unwrap();
        assert_eq!(
            tare_testbed::machine::naming(&run),
            Vec::<String>::new(),
            "{name}"
        );
    }
}

/// Ground truth: the lab delays what the server sends by D (one direction,
/// docs/lab.md), so each round trip takes D longer than without it: within
/// 5% of D, plus twice the undelayed round trip for the
/// scheduler's noise (it checks the measurement, not the machine's speed).
#[test]
fn injected_delay_adds_itself_to_every_round_trip() {
    if tare_deploy::lab::available().is_err() || tare_deploy::lab::delay_available().is_err() {
        eprintln!("lab or delay unavailable: not tested");
        return;
    }
    let delay = Duration::from_millis(5);
    let mut means = Vec::new();
    for (tag, netem) in [("b", None), ("d", Some(delay))] {
        let run = format!("tn{}nd{tag}", std::process::id() % 100000);
        let mut spec = DeploySpec::new(
            &run,
            net_target(),
            PlacementKind::named("lab-bridge").unwrap(),
        );
        spec.netem = netem;
        let d = deploy(&spec).unwrap();
        let mut per_test = Vec::new();
        for test in [Test::Rr, Test::UdpRr] {
            let r = run_at(&d, config(test, 1.0));
            assert_eq!(r.errors.total(), 0, "{test}: {:?}", r.errors);
            per_test.push(r.latency_us.p50);
        }
        d.stop().unwrap();
        assert_eq!(tare_testbed::machine::naming(&run), Vec::<String>::new());
        means.push(per_test);
    }
    let d_us = delay.as_secs_f64() * 1e6;
    for (i, test) in ["rr", "udp-rr"].iter().enumerate() {
        let (base, delayed) = (means[0][i], means[1][i]);
        let added = delayed - base;
        eprintln!("{test}: p50 {base:.1} us without delay, {delayed:.1} us with {d_us} us: +{added:.1} us");
        // Added once: not lost, not twice (both directions). Above it,
        // scheduling on a loaded machine adds hundreds of µs (5403 µs for
        // 5000 once, beside three other tests).
        assert!(
            added >= d_us * 0.95 && added <= d_us * 1.5 + 2.0 * base,
            "{test}: base {base:.1} us, with {d_us} us delay {delayed:.1} us"
        );
    }
}
