//! Many connections: every connection's state at the deadline is counted
//! (established, connecting, refused), against a server that takes them
//! all, one that never accepts, and a port nobody listens on. Loopback only;
//! each run lasts well under two seconds. Never a speed.

use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::time::Duration;

use tare_engine::connecting::ConnectPace;
use tare_http::{run, HttpConfig, Target};
use tare_record::{ConnectReport, LoadResult};
use tare_serve::{ServeConfig, Server};

fn config(url: &str, connections: usize) -> HttpConfig {
    let mut c = HttpConfig::new(Target::new(url, None, false).unwrap());
    c.load.threads = 2;
    c.load.connections = connections;
    c.load.duration = Some(Duration::from_millis(600));
    // Long enough that no connect is recycled by a timeout before the end.
    c.load.timeout = Duration::from_secs(5);
    c
}

fn phase(r: &LoadResult) -> &ConnectReport {
    let c = r
        .connect_phase
        .as_ref()
        .expect("http reports its connect phase");
    assert_eq!(
        c.established + c.connecting + c.refused + c.idle,
        r.connections,
        "every connection is counted once: {c:?}"
    );
    c
}

#[test]
fn thousands_of_connections_are_all_established_and_used() {
    let server = Server::start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/", server.local_addr().unwrap());
    let mut c = config(&url, 4000);
    c.connect = "40k".parse().unwrap();
    let r = run(&c).unwrap();
    let p = phase(&r);
    assert_eq!(p.established, 4000, "{p:?}");
    assert_eq!((p.connecting, p.refused), (0, 0), "{p:?}");
    assert_eq!(p.burst, 1024);
    // Opening was paced: the last connection was due 2976 / 40k s after
    // the first, so they cannot all have been established sooner.
    let all = p.established_all_s.expect("all established");
    assert!(all >= 2976.0 / 40_000.0, "{p:?}");
    // The measured period started after the connect phase and every
    // connection carried requests (each has one in flight or completed).
    assert!(r.requests >= 4000 - r.in_flight, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
}

#[test]
fn a_server_that_never_accepts_leaves_connections_connecting() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    // An accept queue of one: the handshakes beyond it are dropped by the
    // kernel and stay in SYN-SENT on the client's side.
    // SAFETY: listen on our own listening socket only changes its backlog.
    assert_eq!(unsafe { libc::listen(l.as_raw_fd(), 0) }, 0);
    let url = format!("http://{}/", l.local_addr().unwrap());
    let mut c = config(&url, 2000);
    c.connect = ConnectPace::ALL_AT_ONCE;
    let r = run(&c).unwrap();
    let p = phase(&r);
    assert_eq!(r.requests, 0);
    assert!(p.connecting >= 1900, "{p:?}");
    assert!(p.established <= 100, "{p:?}");
    assert_eq!(p.established_all_s, None);
    let why = tare_http::verdict::nothing_completed(&r, &url);
    assert!(why.contains("still connecting"), "{why}");
}

#[test]
fn nobody_listening_counts_every_connection_refused() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let r = run(&config(&url, 3000)).unwrap();
    let p = phase(&r);
    assert_eq!(r.requests, 0);
    // Each slot's last connect failed (or it was between a failure and its
    // retry, and just started again).
    assert!(p.refused + p.connecting == 3000, "{p:?}");
    assert!(p.refused > 0 && p.established == 0, "{p:?}");
    assert!(r.errors.connect >= 3000, "{:?}", r.errors);
    let why = tare_http::verdict::nothing_completed(&r, &url);
    assert!(why.contains("is the server listening"), "{why}");
}
