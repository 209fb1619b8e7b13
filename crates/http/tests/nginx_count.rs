//! Exact counts: every request tare reports as completed (or in flight at the
//! deadline) is one line in a real nginx's access log, and nothing else is.

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

fn load(nginx: &Nginx, keepalive: bool) -> tare_record::LoadResult {
    let url = nginx.url();
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.threads = 2;
    c.connections = 20;
    c.keepalive = keepalive;
    c.duration = Some(Duration::from_millis(1500));
    run(&c).unwrap()
}

#[test]
fn keepalive_counts_equal_access_log_lines() {
    let nginx = start_nginx();
    let r = load(&nginx, true);
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
    let nginx = start_nginx();
    let r = load(&nginx, false);
    let lines = nginx.stop_and_count();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 100);
    assert_eq!(lines as u64, r.requests + r.in_flight);
}
