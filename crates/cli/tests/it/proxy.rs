//! nginx-proxy (seed 003's set-up: docs/studies.md): nginx in front of a `tare serve` backend
//! that tare starts itself (this very binary). Deployed natively, in Docker
//! and in the namespace lab where the machine allows, loaded with `tare http`
//! through the proxy; every response must be the backend's (only tare serve
//! answers with a body of `x`), and nothing may be left behind.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, Deployment, PlacementKind, TargetKind, TargetSpec};
use tare_engine::Endpoint;
use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

/// A body size nothing else here answers with.
const BODY: usize = 777;

/// One `GET` through the proxy with a plain socket, from the deployment's
/// client namespace if it has one: (head, body).
fn get(d: &Deployment) -> (String, Vec<u8>) {
    let Endpoint::Tcp(addr) = d.endpoint().clone() else {
        panic!("TCP expected: {}", d.endpoint())
    };
    let path = d.url().splitn(4, '/').nth(3).unwrap_or("").to_string();
    let netns = d.client_netns().map(|p| p.to_path_buf());
    std::thread::spawn(move || {
        if let Some(ns) = netns {
            tare_engine::netns::enter(&ns).unwrap();
        }
        get_from(addr, &path)
    })
    .join()
    .unwrap()
}

fn get_from(addr: std::net::SocketAddr, path: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: tare\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    (
        String::from_utf8_lossy(&all[..end]).to_string(),
        all[end + 4..].to_vec(),
    )
}

fn placements() -> Vec<PlacementKind> {
    let mut v = vec![PlacementKind::named("native").unwrap()];
    if tare_deploy::docker::engine_version().is_ok() {
        v.extend([
            PlacementKind::named("docker-host").unwrap(),
            PlacementKind::named("docker-bridge").unwrap(),
            PlacementKind::named("docker-publish").unwrap(),
        ]);
    } else {
        eprintln!("Docker not reachable: docker placements not tested");
    }
    if tare_deploy::lab::available().is_ok() {
        v.extend([
            PlacementKind::named("lab-nat").unwrap(),
            PlacementKind::named("lab-client").unwrap(),
        ]);
    }
    v
}

#[test]
fn nginx_proxy_answers_from_its_backend_in_each_placement() {
    for placement in placements() {
        let run = format!("tp{}{}", std::process::id() % 100000, placement.name());
        let run = run.replace('-', "");
        let mut target = TargetSpec::of(TargetKind::named("nginx-proxy").unwrap());
        target.target.body_size = BODY;
        target
            .target
            .companion
            .as_mut()
            .expect("nginx-proxy has a backend")
            .binary = Some(TARE.into());
        let d = deploy(&DeploySpec::new(&run, target, placement))
            .unwrap_or_else(|e| panic!("{placement}: {e}"));

        // nginx answered (its Server header), with the backend's body.
        let (head, body) = get(&d);
        assert!(head.starts_with("HTTP/1.1 200"), "{placement}: {head}");
        assert!(head.contains("Server: nginx"), "{placement}: {head}");
        assert!(
            head.contains("Content-Type: text/plain"),
            "{placement}: {head}"
        );
        assert_eq!(
            body,
            vec![b'x'; BODY],
            "{placement}: not the backend's body"
        );

        // `tare http` through the proxy: every response a 200 of BODY bytes.
        // A bridge or namespace address is the container or namespace this
        // test started: allowed explicitly.
        let mut http = Command::new(TARE);
        http.args(["http", &d.url(), "-t1", "-c4", "-d700ms", "--json", "-"]);
        if matches!(d.endpoint(), Endpoint::Tcp(a) if !a.ip().is_loopback()) {
            http.arg("--allow-remote");
        }
        if let Some(ns) = d.client_netns() {
            http.arg("--netns").arg(ns);
        }
        // The monitor counts the backend as its own part, beside the server.
        let watch = d.watch().clone();
        let server = match watch.server {
            tare_deploy::Scope::CgroupOf(pid) => ServerRef::CgroupOf(pid),
            tare_deploy::Scope::Pids(pids) => ServerRef::Pids(pids),
        };
        let backend_pid = d.facts().backend.as_ref().unwrap().pid.unwrap() as u32;
        assert_eq!(
            watch.companions,
            [("backend".to_string(), vec![backend_pid])]
        );
        let monitor = Monitor::start(
            MonitorSpec::new(server, GeneratorRef::SelfProcess)
                .with_companion("backend", vec![backend_pid]),
        )
        .unwrap();
        let out = http.output().unwrap();
        let cpu = monitor.stop().summary.cpu_s;
        let backend_cpu = cpu.watched.get("backend").copied().unwrap_or(0.0);
        assert!(
            backend_cpu > 0.0 && cpu.server > 0.0,
            "{placement}: backend {backend_cpu} s, server {} s",
            cpu.server
        );
        tare_testbed::assert_success(&out);
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let requests = r["requests"].as_u64().unwrap();
        assert!(requests > 50, "{placement}: {r}");
        assert_eq!(r["status_codes"]["200"].as_u64(), Some(requests), "{r}");
        let errors: u64 = ["connect", "read", "write", "timeout", "status"]
            .iter()
            .map(|k| r["errors"][k].as_u64().unwrap())
            .sum();
        assert_eq!(errors, 0, "{placement}: {r}");
        assert!(r["bytes_read"].as_u64().unwrap() >= requests * BODY as u64);

        // The facts describe both: nginx, and the backend from this binary.
        let f = d.facts().clone();
        assert_eq!(f.target, "nginx-proxy");
        let b = f.backend.clone().expect("backend facts");
        let tare = std::fs::canonicalize(TARE).unwrap();
        assert_eq!(b.process.binary_path, tare.display().to_string());
        assert_eq!(b.process.binary_sha256.as_ref().map(String::len), Some(64));
        assert!(b.endpoint.starts_with("127.0.0.1:"), "{b:?}");
        assert!(
            b.process.nofile_soft.is_some() && b.process.cpus_visible.is_some(),
            "{b:?}"
        );
        if placement.mechanism() == "docker" {
            assert!(f.image.as_deref().unwrap_or("").starts_with("tare/nginx:"));
            let img = b.image.as_deref().unwrap_or("");
            assert!(img.starts_with("tare/tare-serve:"), "{b:?}");
        }
        let fair = tare_deploy::fairness(&[("a".into(), f.clone()), ("b".into(), f)], &[]);
        assert!(fair.is_empty(), "{fair:?}");

        let backend_pid = b.pid.unwrap();
        d.stop().unwrap();
        assert!(
            !std::path::Path::new(&format!("/proc/{backend_pid}")).exists(),
            "{placement}: the backend still runs"
        );
        assert_eq!(
            tare_testbed::machine::naming(&run),
            Vec::<String>::new(),
            "{placement}"
        );
    }
}
