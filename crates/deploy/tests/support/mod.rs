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
