//! Shared by the integration tests: a bounded plain client, and snapshots of
//! what exists on the machine (containers, namespaces, links, nft tables,
//! tare directories) to check that a deployment leaves nothing behind.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use tare_deploy::Deployment;
use tare_engine::Endpoint;

/// A unique run id per test, so parallel tests never collide.
pub(crate) fn run_id(test: &str) -> String {
    format!("t{}{}", std::process::id() % 100000, test)
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn connect(ep: &Endpoint) -> std::io::Result<Box<dyn Stream>> {
    let t = Some(Duration::from_secs(5));
    Ok(match ep {
        Endpoint::Tcp(a) => {
            let s = TcpStream::connect_timeout(a, Duration::from_secs(5))?;
            s.set_read_timeout(t)?;
            Box::new(s)
        }
        Endpoint::Unix(p) => {
            let s = UnixStream::connect(p)?;
            s.set_read_timeout(t)?;
            Box::new(s)
        }
    })
}

/// Keep-alive GETs on one connection for at most `limit` or `max` requests;
/// returns how many got a complete 200 response with a body of `body_len`.
/// Runs in the deployment's client namespace when it has one (lab-client).
pub(crate) fn http_load(
    d: &Deployment,
    path: &str,
    body_len: usize,
    max: usize,
    limit: Duration,
) -> usize {
    let ep = d.endpoint().clone();
    let ns = d.client_netns().map(|p| p.to_path_buf());
    let path = path.to_string();
    std::thread::spawn(move || {
        if let Some(ns) = ns {
            tare_engine::netns::enter(&ns).expect("enter client netns");
        }
        let mut s = connect(&ep).expect("connect");
        let req = format!("GET {path} HTTP/1.1\r\nHost: tare\r\n\r\n");
        let start = Instant::now();
        let mut ok = 0;
        let mut buf = vec![0u8; 64 * 1024];
        while ok < max && start.elapsed() < limit {
            s.write_all(req.as_bytes()).expect("write");
            let mut have = Vec::new();
            loop {
                let n = s.read(&mut buf).expect("read");
                assert!(n > 0, "server closed the connection");
                have.extend_from_slice(&buf[..n]);
                if let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&have[..end]).to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().ok())?
                        })
                        .expect("content-length");
                    if have.len() >= end + 4 + len {
                        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                        assert_eq!(len, body_len, "body size");
                        ok += 1;
                        // nginx closes after keepalive_requests (1000 by default).
                        if head.to_ascii_lowercase().contains("connection: close") {
                            s = connect(&ep).expect("reconnect");
                        }
                        break;
                    }
                }
            }
        }
        ok
    })
    .join()
    .expect("load thread")
}

/// Lines naming what exists now: containers, network namespaces, links and
/// nftables tables (tare's and everyone's), and tare directories in /tmp.
pub(crate) fn machine_state() -> Vec<String> {
    let mut v = tare_testbed::machine::resources();
    if let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n.starts_with("tare-") {
                v.push(format!("dir {n}"));
            }
        }
    }
    v.sort();
    v
}

/// What `after` has that `before` did not, limited to names carrying `run`.
pub(crate) fn left_behind(before: &[String], after: &[String], run: &str) -> Vec<String> {
    after
        .iter()
        .filter(|l| !before.contains(l) && l.contains(run))
        .cloned()
        .collect()
}

/// Loads `d` with tare's HTTP engine (2 threads, 4 connections) for
/// exactly `n` requests, over its Unix socket when it has one.
pub(crate) fn load_exactly(d: &Deployment, n: u64) -> tare_record::LoadResult {
    let unix = match d.endpoint() {
        Endpoint::Unix(p) => Some(p.clone()),
        Endpoint::Tcp(_) => None,
    };
    // A bridge address is a container tare started: allowed.
    let mut c = tare_http::HttpConfig::new(tare_http::Target::new(&d.url(), unix, true).unwrap());
    c.load.threads = 2;
    c.load.connections = 4;
    c.load.duration = None;
    c.requests = Some(n);
    tare_http::run(&c).unwrap()
}

pub(crate) fn docker_available() -> bool {
    tare_deploy::docker::engine_version().is_ok()
}

/// What appeared since `before` and carries `run`.
pub(crate) fn left_since(before: &[String], run: &str) -> Vec<String> {
    left_behind(before, &machine_state(), run)
}

/// Asserts that nothing carrying `run` appeared since `before`; `what`
/// says which case failed.
pub(crate) fn assert_nothing_left(before: &[String], run: &str, what: impl std::fmt::Display) {
    assert_eq!(left_since(before, run), Vec::<String>::new(), "{what}");
}

/// Asserts that `d` served exactly `n` requests of tare's HTTP engine
/// ([`load_exactly`]) without an error; `what` says which case failed.
pub(crate) fn assert_serves_exactly(
    d: &Deployment,
    n: u64,
    what: impl std::fmt::Display,
) -> tare_record::LoadResult {
    let r = load_exactly(d, n);
    assert_eq!(r.errors.total(), 0, "{what}: {:?}", r.errors);
    assert_eq!(r.requests, n, "{what}");
    r
}

/// A deployment of the built-in `target` in `placement`, with defaults.
pub(crate) fn spec(run: &str, target: &str, placement: &str) -> tare_deploy::DeploySpec {
    tare_deploy::DeploySpec::new(
        run,
        tare_deploy::TargetSpec::of(tare_deploy::TargetKind::named(target).unwrap()),
        tare_deploy::PlacementKind::named(placement).unwrap(),
    )
}

/// A PostgreSQL endpoint as libpq's `-h HOST -p PORT`: an address, or a
/// socket's directory and the port its name carries.
pub(crate) fn pg_host_port(ep: &Endpoint) -> (String, String) {
    match ep {
        Endpoint::Tcp(a) => (a.ip().to_string(), a.port().to_string()),
        Endpoint::Unix(p) => (
            p.parent().unwrap().display().to_string(),
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .trim_start_matches(".s.PGSQL.")
                .to_string(),
        ),
    }
}

/// What `cmd ARGS` printed, stdout then stderr (a container's log: its
/// server may log on either).
pub(crate) fn both_streams(cmd: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(cmd).args(args).output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `count()` polled until it is `expected` or has not changed for `quiet`,
/// at most ten seconds: a server's log, written a moment after it answers.
pub(crate) fn settled(count: impl Fn() -> u64, expected: u64, quiet: Duration) -> u64 {
    let start = Instant::now();
    let (mut last, mut since) = (count(), Instant::now());
    while last != expected && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        let now = count();
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() > quiet {
            break;
        }
    }
    last
}

/// When `placement` cannot run here: why, and the error a deployment of
/// nginx there (run `tag`) gives a user.
pub(crate) fn unavailable(placement: &str, tag: &str) -> Option<(String, String)> {
    let reason = tare_deploy::PlacementKind::named(placement)
        .unwrap()
        .available()
        .err()?;
    let e = tare_deploy::deploy(&spec(&run_id(tag), "nginx", placement))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    Some((reason, e))
}
