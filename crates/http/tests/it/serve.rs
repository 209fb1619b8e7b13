//! `tare http` against the real built-in server (`tare serve`), in-process.

use std::time::Duration;

use tare_http::{run, HttpConfig, Target};
use tare_serve::{ServeConfig, Server};

fn serve(config: ServeConfig) -> Server {
    Server::start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    })
    .expect("tare serve starts")
}

fn config_for(server: &Server, path: &str) -> HttpConfig {
    let url = format!("http://{}{path}", server.local_addr().unwrap());
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.load.threads = 1;
    c.load.connections = 4;
    c.load.duration = Some(Duration::from_millis(800));
    c
}

#[test]
fn keepalive_run_counts_every_response() {
    let server = serve(ServeConfig::default());
    let r = run(&config_for(&server, "/")).unwrap();
    assert!(r.requests > 100, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.status_codes.get("200"), Some(&r.requests));
    assert_eq!(r.timeline.iter().sum::<u64>(), r.requests);
    assert_eq!(r.timeline.len(), 1);
    assert!(r.generator_cpu_s > 0.0);
    assert!(r.in_flight <= 4);
    assert!(r.latency_us.p50 > 0.0 && r.latency_us.p50 <= r.latency_us.p99);
    assert_eq!(
        tare_record::Latency::decode(&r.hdr).unwrap().count(),
        r.requests
    );
    assert!((r.duration_s - 0.8).abs() < 0.1, "{}", r.duration_s);
}

#[test]
fn request_count_is_exact_and_leaves_nothing_in_flight() {
    let server = serve(ServeConfig::default());
    let mut c = config_for(&server, "/");
    c.load.threads = 2;
    c.load.connections = 7;
    c.load.duration = None;
    c.requests = Some(1001);
    let r = run(&c).unwrap();
    assert_eq!(r.requests, 1001);
    assert_eq!(r.in_flight, 0);
    assert_eq!(r.errors.total(), 0);
}

#[test]
fn connection_per_request_reports_connect_and_first_byte() {
    let server = serve(ServeConfig::default());
    let mut c = config_for(&server, "/");
    c.keepalive = false;
    let r = run(&c).unwrap();
    assert!(r.requests > 20, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    let connect = r.connect_us.expect("connect times");
    let first = r.first_byte_us.expect("first-byte times");
    assert!(connect.p50 > 0.0 && first.p50 > 0.0);
    // The whole request includes its connect and its first byte.
    assert!(r.latency_us.mean >= connect.mean);
}

#[test]
fn unix_socket_target() {
    let dir = std::env::temp_dir().join(format!("tare-http-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s.sock");
    let server = serve(ServeConfig {
        unix: Some(sock.clone()),
        ..Default::default()
    });
    let target = Target::new("http://localhost/", Some(sock), false).unwrap();
    let mut c = HttpConfig::new(target);
    c.load.threads = 1;
    c.load.connections = 3;
    c.load.duration = Some(Duration::from_millis(500));
    let runs: Vec<_> = tare_testbed::io_modes()
        .into_iter()
        .map(|io| {
            c.load.io = io;
            run(&c)
        })
        .collect();
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    for r in runs {
        let r = r.unwrap();
        assert_eq!(r.transport, "unix");
        assert!(r.requests > 100);
        assert_eq!(r.errors.total(), 0);
    }
}

#[test]
fn chunked_and_large_bodies_complete() {
    let cases = [(true, 100), (false, 1 << 20), (true, 300_000)];
    for io in tare_testbed::io_modes() {
        for (chunked, size) in cases {
            bodies_complete(io, chunked, size);
        }
    }
}

/// Bodies larger than a receive buffer arrive over many completions.
fn bodies_complete(io: tare_engine::IoMode, chunked: bool, size: usize) {
    {
        let server = serve(ServeConfig {
            chunked,
            body_size: size,
            ..Default::default()
        });
        let mut c = config_for(&server, "/");
        c.load.duration = None;
        c.requests = Some(40);
        c.load.io = io;
        let r = run(&c).unwrap();
        assert_eq!(r.requests, 40, "{io} chunked={chunked} size={size}");
        assert_eq!(
            r.errors.total(),
            0,
            "chunked={chunked} size={size}: {:?}",
            r.errors
        );
        assert!(r.bytes_read >= 40 * size as u64);
    }
}

#[test]
fn error_statuses_are_counted_but_complete() {
    let server = serve(ServeConfig {
        status: 503,
        ..Default::default()
    });
    let mut c = config_for(&server, "/");
    c.load.duration = None;
    c.requests = Some(50);
    let r = run(&c).unwrap();
    assert_eq!(r.requests, 50);
    assert_eq!(r.errors.status, 50);
    assert_eq!(r.status_codes.get("503"), Some(&50));
}

#[test]
fn head_and_post_requests() {
    let server = serve(ServeConfig {
        body_size: 1000,
        ..Default::default()
    });
    let mut c = config_for(&server, "/");
    c.load.duration = None;
    c.requests = Some(30);
    c.method = "HEAD".into();
    let r = run(&c).unwrap();
    assert_eq!((r.requests, r.errors.total()), (30, 0));
    // HEAD responses carry no body.
    assert!(r.bytes_read < 30 * 1000);
    c.method = "POST".into();
    c.body = b"payload".to_vec();
    c.headers = vec![("X-Test".into(), "1".into())];
    let r = run(&c).unwrap();
    assert_eq!((r.requests, r.errors.total()), (30, 0));
}

/// Latency accuracy: against a known per-response delay, p50 is the delay
/// plus the unloaded round trip, within 10% (docs/http.md).
#[test]
fn p50_matches_a_known_delay() {
    let server = serve(ServeConfig::default());
    let mut c = config_for(&server, "/");
    c.load.connections = 1;
    c.load.duration = Some(Duration::from_millis(500));
    let rtt = run(&c).unwrap().latency_us.p50;
    drop(server);

    let delay = Duration::from_millis(20);
    let server = serve(ServeConfig {
        delay,
        ..Default::default()
    });
    let mut c = config_for(&server, "/");
    c.load.connections = 4;
    c.load.duration = Some(Duration::from_millis(1500));
    let r = run(&c).unwrap();
    let expected = delay.as_secs_f64() * 1e6 + rtt;
    let p50 = r.latency_us.p50;
    assert!(
        (p50 - expected).abs() <= expected * 0.10,
        "p50 {p50:.0} us, expected {expected:.0} us (delay + unloaded rtt {rtt:.0} us)"
    );
    assert!(r.requests > 100);
}

#[test]
fn warmup_requests_are_not_recorded() {
    let server = serve(ServeConfig::default());
    let mut c = config_for(&server, "/");
    c.load.warmup = Duration::from_millis(300);
    c.load.duration = Some(Duration::from_millis(500));
    let r = run(&c).unwrap();
    assert_eq!(r.timeline.len(), 1);
    assert_eq!(r.timeline.iter().sum::<u64>(), r.requests);
    assert!((r.duration_s - 0.5).abs() < 0.1, "{}", r.duration_s);
}
