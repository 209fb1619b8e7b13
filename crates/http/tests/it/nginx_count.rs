//! Exact counts: every request tare reports as completed (or in flight at the
//! deadline) is one line in a real nginx's access log, and nothing else is,
//! whichever way the workers wait (epoll, io_uring).

use std::time::Duration;

use tare_http::{run, HttpConfig, Target};
use tare_testbed::{Nginx, NginxOptions};

fn start_nginx() -> Nginx {
    Nginx::start(&NginxOptions {
        workers: 1,
        access_log: true,
        index_html: "hello\n".into(),
    })
}

fn load(nginx: &Nginx, keepalive: bool, io: tare_engine::IoMode) -> tare_record::LoadResult {
    let url = nginx.url();
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.load.threads = 2;
    c.load.connections = 20;
    c.keepalive = keepalive;
    c.load.duration = Some(Duration::from_millis(1500));
    c.load.io = io;
    let r = run(&c).unwrap();
    assert_eq!(r.wakeups.as_ref().unwrap().io, io.to_string());
    r
}

#[test]
fn keepalive_counts_equal_access_log_lines() {
    for io in tare_testbed::io_modes() {
        keepalive_counts_with(io);
    }
}

fn keepalive_counts_with(io: tare_engine::IoMode) {
    let nginx = start_nginx();
    let r = load(&nginx, true, io);
    let lines = nginx.stop_and_count();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 500);
    assert_eq!(
        lines as u64,
        r.requests + r.in_flight,
        "log lines vs completed {} + in flight {}",
        r.requests,
        r.in_flight
    );
}

#[test]
fn connection_per_request_counts_equal_access_log_lines() {
    for io in tare_testbed::io_modes() {
        connection_per_request_counts_with(io);
    }
}

fn connection_per_request_counts_with(io: tare_engine::IoMode) {
    let nginx = start_nginx();
    let r = load(&nginx, false, io);
    let lines = nginx.stop_and_count();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 100);
    assert_eq!(lines as u64, r.requests + r.in_flight);
}
