//! Every mode of `tare net` against its responder on loopback (and a Unix
//! socket), natively: the client's counts equal what the responder says
//! it served, UDP loss injected by the responder is counted exactly, and a
//! responder that goes away mid-run ends the run with its errors counted
//! and what it measured kept.

use std::time::Duration;

use tare_engine::Endpoint;
use tare_net::{Direction, NetConfig, Responder, ResponderConfig, Served, Test};

fn responder(drop_every: Option<u64>) -> Responder {
    Responder::start(ResponderConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        drop_every,
        ..ResponderConfig::default()
    })
    .expect("responder starts")
}

fn config(r: &Responder, test: Test, connections: usize, secs: f64) -> NetConfig {
    let mut c = NetConfig::new(Endpoint::Tcp(r.local_addr().unwrap()), test);
    c.load.connections = connections;
    c.load.duration = Some(Duration::from_secs_f64(secs));
    c
}

/// What the responder served once its threads have counted the last
/// answers (a counter is bumped just after the answer is written).
fn settled(r: &Responder) -> Served {
    std::thread::sleep(Duration::from_millis(200));
    r.served()
}

/// Runs `c` against `r`: more than `min` transactions and no error; the
/// result and what `r` served.
fn run_clean(r: &Responder, c: &NetConfig, min: u64) -> (tare_record::LoadResult, Served) {
    let res = tare_net::run(c).unwrap();
    let s = settled(r);
    assert!(res.requests > min, "{res:?}");
    assert_eq!(res.errors.total(), 0, "{:?}", res.errors);
    (res, s)
}

#[test]
fn rr_counts_equal_the_responders_and_latency_is_recorded() {
    let r = responder(None);
    let mut c = config(&r, Test::Rr, 2, 1.0);
    c.request = 100;
    c.response = 200;
    let (res, s) = run_clean(&r, &c, 100);
    assert_eq!(s.transactions, res.requests);
    assert_eq!(res.bytes_read, res.requests * 200);
    assert_eq!(res.unit, Some(tare_record::Unit::RoundTrips));
    assert_eq!(res.attempts, Some(res.requests));
    let net = res.net.as_ref().unwrap();
    assert_eq!(
        (net.test.as_str(), net.request_bytes, net.response_bytes),
        ("rr", 100, 200)
    );
    let l = &res.latency_us;
    assert!(l.p50 > 0.0 && l.p50 <= l.p99 && l.p99 <= l.max, "{l:?}");
    // With one transaction in flight per connection, rate and latency agree
    // (Little's law) within the scheduler's noise.
    let rt = net.round_trip_us.unwrap();
    assert!(
        rt > l.mean * 0.8 && rt < l.mean * 1.5 + 20.0,
        "{rt} vs {}",
        l.mean
    );
    assert_eq!(res.timeline.len(), 1);
    assert_eq!(res.timeline.iter().sum::<u64>(), res.requests);
}

#[test]
fn crr_opens_a_connection_per_transaction_and_counts_them_exactly() {
    let r = responder(None);
    let (res, s) = run_clean(&r, &config(&r, Test::Crr, 1, 0.5), 10);
    assert_eq!(s.transactions, res.requests);
    assert_eq!(s.connections, res.requests);
    assert!(!res.keepalive);
    let connect = res.connect_us.as_ref().unwrap();
    assert!(connect.mean > 0.0 && connect.mean < res.latency_us.mean);
}

#[test]
fn udp_rr_counts_equal_the_responders() {
    let r = responder(None);
    let mut c = config(&r, Test::UdpRr, 2, 1.0);
    c.request = 100;
    c.response = 200;
    let (res, s) = run_clean(&r, &c, 100);
    assert_eq!(s.udp_answered, res.requests);
    assert_eq!(res.transport, "udp");
    assert_eq!(res.net.unwrap().lost, 0);
}

/// netperf's UDP_RR stalls forever on one lost datagram; tare counts it
/// after the timeout and goes on: every datagram the responder dropped is
/// one lost, and every one it answered one completed.
#[test]
fn udp_loss_injected_by_the_responder_is_counted_exactly_and_never_stalls() {
    let r = responder(Some(10));
    let mut c = config(&r, Test::UdpRr, 1, 1.0);
    // Long enough that no answered request is late on a loaded 2-core
    // machine (a 30 ms scheduling stall once made one answer late: 29
    // counted lost, 28 dropped), short enough for several losses a second.
    c.load.timeout = Duration::from_millis(100);
    let res = tare_net::run(&c).unwrap();
    let s = settled(&r);
    let net = res.net.as_ref().unwrap();
    assert!(s.udp_dropped >= 3, "{s:?}");
    assert_eq!(net.lost, s.udp_dropped);
    assert_eq!(res.errors.timeout, s.udp_dropped);
    assert_eq!(res.requests, s.udp_answered);
    assert_eq!(res.attempts, Some(s.udp_answered + s.udp_dropped));
}

#[test]
fn streams_move_bytes_each_way_and_report_both_ends_cpu() {
    let r = responder(None);
    for direction in [Direction::Send, Direction::Receive, Direction::Both] {
        let mut c = config(&r, Test::Stream, 1, 0.5);
        c.direction = direction;
        let before = r.served();
        let res = tare_net::run(&c).unwrap();
        let s = settled(&r);
        let net = res.net.as_ref().unwrap();
        assert_eq!(res.errors.total(), 0, "{direction:?}: {:?}", res.errors);
        assert_eq!(res.unit, Some(tare_record::Unit::Megabits));
        let sunk = s.bytes_sunk - before.bytes_sunk;
        let sourced = s.bytes_sourced - before.bytes_sourced;
        if direction != Direction::Receive {
            assert!(net.send_gbit_s.unwrap() > 0.0);
            // The responder read everything sent, the warm-up's too.
            assert!(
                sunk >= net.bytes_sent && net.bytes_sent > 0,
                "{sunk} {net:?}"
            );
        } else {
            assert!(net.send_gbit_s.is_none());
        }
        if direction != Direction::Send {
            assert!(net.receive_gbit_s.unwrap() > 0.0);
            assert!(sourced >= net.bytes_received && net.bytes_received > 0);
        } else {
            assert!(net.receive_gbit_s.is_none());
        }
        // Each direction counts its own megabits (one connection here):
        // both directions together may be one short of the sum's floor.
        assert_eq!(
            res.requests,
            net.bytes_sent * 8 / 1_000_000 + net.bytes_received * 8 / 1_000_000,
            "one completion per megabit, per connection and direction rounded down"
        );
        assert!(net.client_cpu_s_per_gb.unwrap() > 0.0, "{net:?}");
        assert!(net.server_cpu_s_per_gb.unwrap() > 0.0, "{net:?}");
    }
}

#[test]
fn a_unix_socket_serves_rr_crr_and_streams() {
    let dir = std::env::temp_dir().join(format!("tare-net-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("net.sock");
    let r = Responder::start(ResponderConfig {
        unix: Some(path.clone()),
        ..ResponderConfig::default()
    })
    .unwrap();
    for test in [Test::Rr, Test::Crr, Test::Stream] {
        let mut c = NetConfig::new(Endpoint::Unix(path.clone()), test);
        c.load.duration = Some(Duration::from_millis(300));
        let before = r.served();
        let res = tare_net::run(&c).unwrap();
        let s = settled(&r);
        assert_eq!(res.errors.total(), 0, "{test}: {:?}", res.errors);
        assert_eq!(res.transport, "unix");
        if test != Test::Stream {
            assert_eq!(s.transactions - before.transactions, res.requests, "{test}");
        }
    }
    drop(r);
    assert!(!path.exists(), "the socket is removed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_open_loop_keeps_its_rate_and_counts_exactly() {
    let r = responder(None);
    for test in [Test::Rr, Test::UdpRr] {
        let mut c = config(&r, test, 2, 1.0);
        c.load.rate = Some(500.0);
        let before = r.served();
        let res = tare_net::run(&c).unwrap();
        let s = settled(&r);
        let served =
            (s.transactions - before.transactions) + (s.udp_answered - before.udp_answered);
        assert_eq!(served, res.requests, "{test}");
        let sched = res.schedule.as_ref().unwrap();
        assert_eq!(sched.target_rate, Some(500.0));
        // Generous: a busy 2-core machine may send a few late, never many fewer.
        assert!(
            res.requests >= 400 && res.requests <= 502,
            "{test}: {}",
            res.requests
        );
    }
}

/// The responder going away mid-run (its connections shut, its port
/// closed) ends the run early: the errors are counted, what was measured
/// before is kept.
#[test]
fn a_responder_gone_mid_run_ends_the_run_with_errors_counted_and_results_kept() {
    // rr on one thread shares it (the event loop); on two, each blocks.
    for (test, threads) in [(Test::Rr, 1), (Test::Rr, 2), (Test::Crr, 1)] {
        let r = responder(None);
        let mut c = config(&r, test, 2, 10.0);
        c.load.threads = threads;
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            drop(r);
        });
        let t0 = std::time::Instant::now();
        let res = tare_net::run(&c).unwrap();
        killer.join().unwrap();
        let test = format!("{test} on {threads} thread(s)");
        assert!(t0.elapsed() < Duration::from_secs(5), "{test}: ended early");
        assert!(res.requests > 0, "{test}: results kept");
        assert!(res.errors.connect >= 1, "{test}: {:?}", res.errors);
        assert!(res.duration_s < 5.0);
    }
}

#[test]
fn bad_settings_are_one_line_errors() {
    let ep = Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
    let cases: Vec<(Test, usize, usize)> = vec![
        (Test::Rr, 0, 200),
        (Test::Rr, 100, (1 << 20) + 1),
        (Test::UdpRr, 8, 200),
        (Test::UdpRr, 100, 70_000),
    ];
    for (test, req, resp) in cases {
        let mut c = NetConfig::new(ep.clone(), test);
        c.request = req;
        c.response = resp;
        let e = tare_net::run(&c).unwrap_err().to_string();
        assert!(e.contains("size") && !e.contains('\n'), "{e}");
    }
    let c = NetConfig::new(Endpoint::Unix("/nonexistent".into()), Test::UdpRr);
    assert!(tare_net::run(&c).unwrap_err().to_string().contains("Unix"));
    // Nobody listening: every connection refused, counted, no hang.
    let mut c = NetConfig::new(ep, Test::Rr);
    c.load.duration = Some(Duration::from_secs(5));
    let res = tare_net::run(&c).unwrap();
    assert_eq!((res.requests, res.errors.connect), (0, 1));
}

/// rr, crr and udp-rr on the shared event loop: a thousand kept
/// connections over two threads, under each wait (io_uring where the
/// kernel allows it, and epoll), many crr and udp-rr connections per
/// thread; every transaction counted once, as the responder counts it.
#[test]
fn many_connections_share_few_threads_and_count_exactly() {
    let r = responder(None);
    let mut modes = vec![tare_engine::IoMode::Epoll];
    if tare_engine::uring::Ring::available() {
        modes.push(tare_engine::IoMode::Uring);
    } else {
        assert!(
            std::env::var_os("TARE_REQUIRE_URING").is_none_or(|v| v != "1"),
            "TARE_REQUIRE_URING=1 but this kernel refuses io_uring"
        );
    }
    for io in modes {
        // udp-rr's connections stay within what the responder's socket
        // buffer holds at once (more is real loss, counted as such).
        for (test, conns) in [(Test::Rr, 1000), (Test::Crr, 40), (Test::UdpRr, 64)] {
            let mut c = config(&r, test, conns, 0.5);
            c.load.threads = 2;
            c.load.io = io;
            let before = r.served();
            let res = tare_net::run(&c).unwrap_or_else(|e| panic!("{test} {io}: {e}"));
            let s = settled(&r);
            let served =
                (s.transactions - before.transactions) + (s.udp_answered - before.udp_answered);
            assert_eq!(res.errors.total(), 0, "{test} {io}: {:?}", res.errors);
            assert!(
                res.requests >= conns as u64,
                "{test} {io}: {}",
                res.requests
            );
            assert_eq!(served, res.requests, "{test} {io}");
            assert_eq!((res.connections, res.threads), (conns as u64, 2), "{test}");
            assert_eq!(
                res.in_flight, 0,
                "{test} {io}: in flight at the end are finished"
            );
            if test == Test::Crr {
                assert_eq!(s.connections - before.connections, res.requests, "{io}");
            }
            let l = &res.latency_us;
            assert!(l.p50 > 0.0 && l.p50 <= l.max, "{test} {io}: {l:?}");
        }
    }
}

/// rr with one connection per thread blocks in its send and receive, as
/// netperf's TCP_RR (no wait per round trip to pay for); `--io` still
/// asks for the event loop, and threads shared by connections need it.
/// Every way counts exactly what the responder served, warm-up apart,
/// and says how the client waited.
#[test]
fn one_connection_per_thread_blocks_unless_io_asks_for_the_event_loop() {
    let r = responder(None);
    let mut cases = vec![
        (2, tare_engine::IoMode::Auto, "blocking"),
        (2, tare_engine::IoMode::Epoll, "epoll"),
        (1, tare_engine::IoMode::Epoll, "epoll"),
    ];
    if tare_engine::uring::Ring::available() {
        cases.push((2, tare_engine::IoMode::Uring, "io_uring"));
    }
    for (threads, io, waited) in cases {
        let mut c = config(&r, Test::Rr, 2, 0.5);
        c.load.threads = threads;
        c.load.io = io;
        c.load.warmup = Duration::from_millis(200);
        let before = r.served();
        let res = tare_net::run(&c).unwrap();
        let s = settled(&r);
        let what = format!("{threads} thread(s), --io {io}");
        assert_eq!(res.net.as_ref().unwrap().client_io, waited, "{what}");
        assert_eq!(res.errors.total(), 0, "{what}: {:?}", res.errors);
        assert_eq!(res.in_flight, 0, "{what}");
        assert!(res.requests > 100, "{what}: {}", res.requests);
        // The warm-up's transactions were served but not counted.
        let served = s.transactions - before.transactions;
        assert!(
            served > res.requests,
            "{what}: {served} vs {}",
            res.requests
        );
        assert_eq!(res.timeline.iter().sum::<u64>(), res.requests, "{what}");
        assert_eq!(res.bytes_read, res.requests * c.response as u64, "{what}");
        assert!(res.latency_us.p50 > 0.0, "{what}");
        assert!(res.duration_s < 1.0, "{what}: {}", res.duration_s);
    }
    // Without a warm-up, every transaction served was counted.
    let mut c = config(&r, Test::Rr, 2, 0.3);
    c.load.threads = 2;
    let before = r.served();
    let res = tare_net::run(&c).unwrap();
    assert_eq!(settled(&r).transactions - before.transactions, res.requests);
}

/// A responder that takes requests and never answers: each transaction
/// times out after `--timeout`, is counted as a timeout and the
/// connection opened again, blocking or on the event loop, and the run
/// ends on time with nothing counted done.
#[test]
fn unanswered_round_trips_time_out_and_reconnect() {
    use std::io::Read;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let silent = {
        let (stop, accepted) = (stop.clone(), accepted.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in l.incoming() {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut b = [0u8; 256];
                conn.set_nonblocking(true).unwrap();
                let _ = conn.read(&mut b);
                held.push(conn);
            }
        })
    };
    for (threads, io) in [
        (1, tare_engine::IoMode::Auto),
        (1, tare_engine::IoMode::Epoll),
    ] {
        let mut c = NetConfig::new(Endpoint::Tcp(addr), Test::Rr);
        c.load.threads = threads;
        c.load.io = io;
        c.load.duration = Some(Duration::from_millis(900));
        c.load.timeout = Duration::from_millis(200);
        let t0 = std::time::Instant::now();
        let res = tare_net::run(&c).unwrap();
        let took = t0.elapsed();
        assert_eq!(res.requests, 0, "--io {io}");
        assert!(
            (3..=6).contains(&res.errors.timeout),
            "--io {io}: {:?}",
            res.errors
        );
        assert_eq!(res.errors.total(), res.errors.timeout, "--io {io}");
        assert!(took < Duration::from_secs(3), "--io {io}: {took:?}");
    }
    // Every timeout opened a new connection (and the first, one each).
    assert!(accepted.load(std::sync::atomic::Ordering::Relaxed) >= 8);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = std::net::TcpStream::connect(addr);
    silent.join().unwrap();
}

/// A stop (Ctrl-C) ends a blocking run between transactions, with what
/// it measured kept.
#[test]
fn a_stop_ends_a_blocking_run_with_its_results() {
    let r = responder(None);
    let c = config(&r, Test::Rr, 1, 30.0);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let setter = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    };
    let t0 = std::time::Instant::now();
    let res = tare_net::run_with_stop(&c, stop).unwrap();
    setter.join().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(res.net.as_ref().unwrap().client_io, "blocking");
    assert!(res.requests > 0 && res.duration_s < 3.0, "{res:?}");
    assert_eq!(settled(&r).transactions, res.requests);
}

/// A late answer on a blocking connection: the watchdog shuts that
/// connection down after `--timeout`, the transaction counts as a timeout,
/// and the new connection it opens goes on (the shut-down never reaches
/// it). The run ends on time: the watchdog stops with the workers.
#[test]
fn a_late_answer_times_out_and_the_next_connection_goes_on() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    // An rr responder whose first connection never answers.
    let server = {
        let (stop, accepted) = (stop.clone(), accepted.clone());
        std::thread::spawn(move || {
            let mut conns = Vec::new();
            for conn in l.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let first = accepted.fetch_add(1, Ordering::Relaxed) == 0;
                conns.push(std::thread::spawn(move || {
                    let mut header = [0u8; 16];
                    let mut req = [0u8; 100];
                    if conn.read_exact(&mut header).is_err() {
                        return;
                    }
                    while conn.read_exact(&mut req).is_ok() {
                        if first {
                            // Held until the client shuts it down.
                            continue;
                        }
                        if conn.write_all(&[0u8; 200]).is_err() {
                            return;
                        }
                    }
                }));
            }
            for c in conns {
                let _ = c.join();
            }
        })
    };
    let mut c = NetConfig::new(Endpoint::Tcp(addr), Test::Rr);
    c.request = 100;
    c.response = 200;
    c.load.duration = Some(Duration::from_millis(800));
    c.load.timeout = Duration::from_millis(150);
    let t0 = std::time::Instant::now();
    let res = tare_net::run(&c).unwrap();
    let took = t0.elapsed();
    assert_eq!(res.net.as_ref().unwrap().client_io, "blocking");
    assert_eq!(res.errors.timeout, 1, "{:?}", res.errors);
    assert_eq!(res.errors.total(), 1, "{:?}", res.errors);
    assert!(res.requests > 100, "{}", res.requests);
    assert_eq!(accepted.load(Ordering::Relaxed), 2);
    assert!(took < Duration::from_millis(1800), "{took:?}");
    stop.store(true, Ordering::Relaxed);
    let _ = std::net::TcpStream::connect(addr);
    server.join().unwrap();
}
