//! Native placement: each target started, loaded, stopped, nothing left.

use crate::support;

use std::time::Duration;

use tare_deploy::{
    deploy, AccessLog, DeploySpec, PlacementKind, TargetKind, TargetSpec, Transport,
};
use tare_engine::Endpoint;

#[test]
fn nginx_default_and_tuned_serve_the_file_and_leave_nothing() {
    for (variant, log) in [("default", None), ("tuned", Some(AccessLog::Buffered))] {
        let run = support::run_id(&format!("ng{variant}"));
        let before = support::machine_state();
        let mut target = TargetSpec::of(TargetKind::named("nginx").unwrap());
        target.variant = tare_deploy::Variant::Named(variant.into());
        target.access_log = log;
        target.target.body_size = 1000;
        let spec = DeploySpec::new(&run, target, PlacementKind::named("native").unwrap());
        let d = deploy(&spec).unwrap();
        let dir = d.dir().to_path_buf();
        assert!(d.url().starts_with("http://127.0.0.1:"), "{}", d.url());
        assert_eq!(
            support::http_load(&d, "/index.html", 1000, 2000, Duration::from_secs(2)),
            2000
        );
        let f = d.facts().clone();
        assert_eq!(f.placement, "native");
        assert!(
            f.process
                .server_version
                .as_deref()
                .unwrap_or("")
                .contains("nginx/"),
            "{f:?}"
        );
        assert_eq!(f.process.binary_sha256.as_ref().map(String::len), Some(64));
        assert!(
            f.log_fs.is_some()
                && f.process.nofile_soft.is_some()
                && f.process.cpus_visible.is_some(),
            "{f:?}"
        );
        assert_eq!(
            f.access_log,
            if variant == "default" {
                "on"
            } else {
                "buffered"
            }
        );
        if variant == "default" {
            // access_log on: every request is in the log.
            let log = std::fs::read_to_string(dir.join("log/access.log")).unwrap();
            assert!(log.lines().count() >= 2000);
        }
        let pid = f.server_pid.unwrap();
        d.stop().unwrap();
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "server still runs"
        );
        assert!(!dir.exists());
        support::assert_nothing_left(&before, &run, "");
    }
}

/// The worker processes of the nginx master `pid`.
fn workers(pid: i32) -> usize {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    children.split_whitespace().count()
}

#[test]
fn tuned_nginx_runs_one_worker_per_cpu_it_is_pinned_to() {
    // What nginx's `auto` counts: the machine's online CPUs.
    let online = tare_engine::cpu::cpu_list_len(
        &std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap(),
    );
    for pin in [None, Some("0")] {
        let run = support::run_id("ngpin");
        let mut target = TargetSpec::of(TargetKind::named("nginx").unwrap());
        target.variant = tare_deploy::Variant::Named("tuned".into());
        let mut spec = DeploySpec::new(&run, target, PlacementKind::named("native").unwrap());
        spec.server_cpus = pin.map(String::from);
        let d = deploy(&spec).unwrap();
        let conf = std::fs::read_to_string(d.dir().join("nginx.conf")).unwrap();
        let pid = d.facts().server_pid.unwrap();
        // `auto` is left to nginx unless tare pins the server to fewer CPUs
        // than the machine has; then it is that count.
        let expected = match pin {
            Some(_) if online > 1 => {
                assert!(conf.contains("worker_processes 1;"), "{conf}");
                1
            }
            _ => {
                assert!(conf.contains("worker_processes auto;"), "{conf}");
                online
            }
        };
        // The master forks its workers right after it starts answering.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while workers(pid) != expected && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(workers(pid), expected, "pinned to {pin:?}");
        d.stop().unwrap();
    }
}

#[test]
fn nginx_over_a_unix_socket() {
    let run = support::run_id("ngunix");
    let mut spec = support::spec(&run, "nginx", "native");
    spec.transport = Transport::Unix;
    let d = deploy(&spec).unwrap();
    assert!(matches!(d.endpoint(), Endpoint::Unix(_)));
    assert_eq!(
        support::http_load(&d, "/index.html", 612, 500, Duration::from_secs(2)),
        500
    );
}

#[test]
fn config_hash_ignores_where_the_deployment_lives() {
    let a = deploy(&support::spec(&support::run_id("hasha"), "nginx", "native")).unwrap();
    let b = deploy(&support::spec(&support::run_id("hashb"), "nginx", "native")).unwrap();
    assert_ne!(a.endpoint(), b.endpoint());
    assert_eq!(
        a.facts().process.config_sha256,
        b.facts().process.config_sha256
    );
    let cells = [
        ("a".to_string(), a.facts().clone()),
        ("b".to_string(), b.facts().clone()),
    ];
    assert!(tare_deploy::fairness(&cells, &["placement"]).is_empty());
}

#[test]
fn postgres_cluster_over_tcp_and_unix_socket() {
    for transport in [Transport::Tcp, Transport::Unix] {
        let run = support::run_id(&format!("pg{transport}"));
        let before = support::machine_state();
        let mut spec = support::spec(&run, "postgres", "native");
        spec.transport = transport;
        let d = deploy(&spec).unwrap();
        assert!(d.url().starts_with("postgres://"), "{}", d.url());
        assert!(
            d.facts()
                .process
                .server_version
                .as_deref()
                .unwrap_or("")
                .contains("PostgreSQL"),
            "{:?}",
            d.facts()
        );
        // A real client: psql runs select 1 against the endpoint.
        let (host, port) = support::pg_host_port(d.endpoint());
        let out = std::process::Command::new("psql")
            .args([
                "-h", &host, "-p", &port, "-U", "postgres", "-d", "postgres", "-Atc", "select 1",
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "1",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        d.stop().unwrap();
        support::assert_nothing_left(&before, &run, "");
    }
}

#[test]
fn bad_specs_are_clear_errors() {
    let mut spec = support::spec("bad id!", "nginx", "native");
    assert!(deploy(&spec).unwrap_err().to_string().contains("run id"));
    spec.run_id = support::run_id("bad");
    spec.netem = Some(Duration::from_millis(1));
    let e = deploy(&spec).unwrap_err().to_string();
    assert!(e.contains("lab-nat") && e.contains("not native"), "{e}");
    spec.netem = None;
    spec.target.access_log = Some(tare_deploy::AccessLog::Off);
    spec.target.target = TargetKind::named("postgres").unwrap().target();
    let e = deploy(&spec).unwrap_err().to_string();
    assert!(e.contains("access_log does not apply to postgres"), "{e}");
    spec.target.access_log = None;
    spec.target.target = TargetKind::named("nginx").unwrap().target();
    spec.netem = None;
    spec.target.variant = tare_deploy::Variant::File {
        name: "missing".into(),
        path: "/nonexistent.conf".into(),
    };
    let e = deploy(&spec).unwrap_err().to_string();
    assert!(e.contains("nonexistent"), "{e}");
    // Nothing of the failed attempt is left.
    assert!(support::machine_state()
        .iter()
        .all(|l| !l.contains(&spec.run_id)));
}
