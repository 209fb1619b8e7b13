//! Exact counts against a real redis-server started by the test: the
//! commands tare redis counts equal the server's `INFO commandstats`
//! deltas, error replies are counted by kind, and a server killed mid-run
//! ends the run with its failures counted and its results kept.

use std::collections::BTreeMap;
use std::time::Duration;

use tare_engine::uring::Ring;
use tare_engine::{Coalesce, Endpoint, IoMode};
use tare_redis::session::{CommandCalls, Session};
use tare_redis::{RedisConfig, Test, Workload};
use tare_testbed::RedisServer;

fn calls(ep: &Endpoint, password: Option<&str>) -> BTreeMap<String, CommandCalls> {
    let mut s = Session::connect(ep, Duration::from_secs(5), None, password, 0).unwrap();
    s.command_calls().unwrap().into_iter().collect()
}

/// The counts once `cmd`'s calls have grown by `expect` over `before`
/// (commands still in the server's input buffer when a timed run ends are
/// executed a moment later), or after a second.
fn settled(
    ep: &Endpoint,
    before: &BTreeMap<String, CommandCalls>,
    cmd: &str,
    expect: u64,
) -> BTreeMap<String, CommandCalls> {
    let mut after = calls(ep, None);
    for _ in 0..40 {
        if delta(before, &after, cmd).calls >= expect {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        after = calls(ep, None);
    }
    after
}

/// `after - before` of one command's counts.
fn delta(
    before: &BTreeMap<String, CommandCalls>,
    after: &BTreeMap<String, CommandCalls>,
    cmd: &str,
) -> CommandCalls {
    let b = before.get(cmd).copied().unwrap_or_default();
    let a = after.get(cmd).copied().unwrap_or_default();
    CommandCalls {
        calls: a.calls - b.calls,
        rejected: a.rejected - b.rejected,
        failed: a.failed - b.failed,
    }
}

fn config(ep: Endpoint, w: Workload) -> RedisConfig {
    let mut cfg = RedisConfig::new(ep);
    cfg.workloads = vec![w];
    cfg.load.connections = 4;
    cfg.load.threads = 2;
    cfg.requests = 2_000;
    cfg.keyspace = Some(1_000);
    cfg
}

/// Every test, with -n over TCP and with a duration over the Unix socket,
/// with and without pipelining: commands completed equal the server's
/// `calls` deltas, and nothing failed.
#[test]
fn commands_completed_equal_commandstats() {
    let server = RedisServer::start(None);
    let tcp = Endpoint::Tcp(server.addr());
    let unix = Endpoint::Unix(server.socket.clone());
    for (i, test) in Test::ALL.into_iter().enumerate() {
        let cmd = match test {
            Test::PingInline | Test::PingMbulk => "ping".to_string(),
            Test::Lrange100 | Test::Lrange300 | Test::Lrange500 | Test::Lrange600 => {
                "lrange".to_string()
            }
            t => t.name().to_string(),
        };
        let pipelined = i % 2 == 1;
        let timed = i % 3 == 0;
        let ep = if timed { unix.clone() } else { tcp.clone() };
        let mut cfg = config(ep.clone(), Workload::Test(test));
        if pipelined {
            cfg.pipeline = 7;
        }
        if timed {
            cfg.load.duration = Some(Duration::from_millis(300));
        }
        // Both waits: io_uring (the default where the kernel allows it)
        // and epoll.
        if i % 4 >= 2 {
            cfg.load.io = IoMode::Epoll;
        }
        let before = calls(&tcp, None);
        let r = tare_redis::run(&cfg).unwrap_or_else(|e| panic!("{test}: {e}"));
        let after = settled(&tcp, &before, &cmd, r.requests + r.in_flight);
        let d = delta(&before, &after, &cmd);
        assert_eq!(r.errors.total(), 0, "{test}: {:?}", r.errors);
        assert_eq!(
            r.requests + r.in_flight,
            d.calls,
            "{test} ({cmd}): counted {} + {} in flight, server {d:?}",
            r.requests,
            r.in_flight
        );
        if !timed {
            assert_eq!(r.requests, 2_000, "{test}: -n is exact");
            assert_eq!(r.in_flight, 0);
        }
        assert_eq!(r.attempts, Some(r.requests));
        assert_eq!(r.engine, "redis");
        assert_eq!(r.unit, Some(tare_record::Unit::Commands));
        let lat = tare_record::Latency::decode(&r.hdr).unwrap();
        assert_eq!(lat.count(), r.requests, "{test}: one latency per command");
        assert!(r.timeline.iter().sum::<u64>() == r.requests, "{test}");
    }
}

/// A custom command with `__rand_int__` keys: every key is a 12-digit
/// number below the keyspace, as redis-benchmark writes them.
#[test]
fn custom_command_keys_follow_the_keyspace() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut cfg = config(
        ep.clone(),
        Workload::Custom(vec!["SET".into(), "k:__rand_int__".into(), "v".into()]),
    );
    cfg.keyspace = Some(50);
    cfg.requests = 1_000;
    let r = tare_redis::run(&cfg).unwrap();
    assert_eq!(r.requests, 1_000);
    let mut s = Session::connect(&ep, Duration::from_secs(5), None, None, 0).unwrap();
    let keys = match s.command(&["KEYS", "k:*"]).unwrap() {
        tare_redis::resp::Value::Array(Some(v)) => v,
        other => panic!("{other:?}"),
    };
    assert!(!keys.is_empty() && keys.len() <= 50, "{}", keys.len());
    for k in keys {
        let k = k.text().unwrap();
        let n = k.strip_prefix("k:").unwrap();
        assert_eq!(n.len(), 12, "{k}");
        assert!(n.parse::<u64>().unwrap() < 50, "{k}");
    }
}

/// Error replies are counted as errors by kind, not as completions; the
/// server counts them as failed calls.
#[test]
fn error_replies_are_counted_by_kind() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut s = Session::connect(&ep, Duration::from_secs(5), None, None, 0).unwrap();
    s.command(&["SET", "word", "abc"]).unwrap();
    s.command(&["LPUSH", "alist", "x"]).unwrap();
    let before = calls(&ep, None);
    // INCR of a non-number: -ERR value is not an integer.
    let mut cfg = config(
        ep.clone(),
        Workload::Custom(vec!["INCR".into(), "word".into()]),
    );
    cfg.requests = 300;
    cfg.pipeline = 3;
    let r = tare_redis::run(&cfg).unwrap();
    assert_eq!(r.requests, 0);
    assert_eq!(r.errors.status, 300, "{:?}", r.errors);
    assert_eq!(r.attempts, Some(300));
    let d = r.redis.as_ref().unwrap();
    assert_eq!(
        d.errors_by_kind.get("ERR"),
        Some(&300),
        "{:?}",
        d.errors_by_kind
    );
    let after = calls(&ep, None);
    let incr = delta(&before, &after, "incr");
    assert_eq!((incr.calls, incr.failed), (300, 300));
    // A mix: GET of a list answers WRONGTYPE, GET of a string succeeds.
    cfg.workloads = vec![
        Workload::Custom(vec!["GET".into(), "alist".into()]),
        Workload::Custom(vec!["GET".into(), "word".into()]),
    ];
    cfg.load.connections = 2;
    cfg.load.threads = 1;
    cfg.pipeline = 1;
    cfg.requests = 200;
    let r = tare_redis::run(&cfg).unwrap();
    assert_eq!((r.requests, r.errors.status), (100, 100), "{:?}", r.errors);
    let d = r.redis.as_ref().unwrap();
    assert_eq!(d.errors_by_kind.get("WRONGTYPE"), Some(&100));
}

/// A server killed in the middle of a timed run: the run ends on time with
/// `Ok`, what completed before is kept, the commands lost with their
/// connections are read errors, and reconnecting to a dead server counts
/// connect errors.
#[test]
fn a_server_killed_mid_run_keeps_results_and_counts_failures() {
    // Each wait at once, against a server of its own.
    let modes = [IoMode::Epoll, IoMode::Uring];
    let runs: Vec<_> = modes
        .into_iter()
        .filter(|m| *m == IoMode::Epoll || uring_here())
        .map(|io| {
            let server = RedisServer::start(None);
            let ep = Endpoint::Tcp(server.addr());
            let mut cfg = config(ep, Workload::Test(Test::Set));
            cfg.load.duration = Some(Duration::from_millis(1500));
            cfg.load.io = io;
            cfg.pipeline = 4;
            (server, std::thread::spawn(move || tare_redis::run(&cfg)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut servers = Vec::new();
    let mut joins = Vec::new();
    for (mut server, run) in runs {
        server.kill();
        servers.push(server);
        joins.push(run);
    }
    for run in joins {
        let r = run
            .join()
            .unwrap()
            .expect("a dead server ends the run, not fails it");
        killed_run_kept(&r);
    }
}

fn killed_run_kept(r: &tare_record::LoadResult) {
    assert!(r.requests > 0, "results before the kill are kept");
    assert!(r.errors.read > 0, "lost commands: {:?}", r.errors);
    assert!(r.errors.connect > 0, "reconnects refused: {:?}", r.errors);
    let d = r.redis.as_ref().unwrap();
    assert_eq!(d.dropped_connections, 4, "every connection dropped once");
    assert!(
        r.duration_s >= 1.4 && r.duration_s < 3.0,
        "{}",
        r.duration_s
    );
}

/// io_uring here, or a failure when the test script says it must be
/// (`TARE_REQUIRE_URING=1`), as tare-engine's own tests decide.
fn uring_here() -> bool {
    let ok = Ring::available();
    assert!(
        ok || std::env::var_os("TARE_REQUIRE_URING").is_none_or(|v| v != "1"),
        "TARE_REQUIRE_URING=1 but this kernel refuses io_uring"
    );
    ok
}

/// The waits `--io` and `--coalesce` choose: io_uring when asked, epoll
/// with receive timestamps when coalescing (a pause before the wait, the
/// reply timed when it arrived); counts stay exact either way.
#[test]
fn io_uring_and_coalesced_waits_count_exactly() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut runs = vec![(IoMode::Epoll, Coalesce::Fixed(Duration::from_micros(100)))];
    if uring_here() {
        runs.push((IoMode::Uring, Coalesce::Off));
    }
    for (io, coalesce) in runs {
        let mut cfg = config(ep.clone(), Workload::Test(Test::Incr));
        cfg.load.connections = 16;
        cfg.load.threads = 1;
        cfg.load.duration = Some(Duration::from_millis(500));
        cfg.load.io = io;
        cfg.load.coalesce = coalesce;
        let before = calls(&ep, None);
        let r = tare_redis::run(&cfg).unwrap();
        let after = settled(&ep, &before, "incr", r.requests + r.in_flight);
        let d = delta(&before, &after, "incr");
        assert_eq!(r.errors.total(), 0, "{io}: {:?}", r.errors);
        assert_eq!(r.requests + r.in_flight, d.calls, "{io} {coalesce}");
        let w = r.wakeups.as_ref().unwrap();
        assert_eq!(w.io, io.to_string(), "{w:?}");
        assert_eq!(w.coalesce, coalesce.to_string());
        if coalesce != Coalesce::Off {
            assert!(w.rx_timestamps && w.pauses > 0, "{w:?}");
            assert!(w.summary().is_some());
        }
    }
    // A ring cannot give receive timestamps: the two are refused together.
    let mut cfg = config(ep, Workload::Test(Test::Get));
    cfg.load.io = IoMode::Uring;
    cfg.load.coalesce = Coalesce::Auto;
    let e = tare_redis::run(&cfg).unwrap_err().to_string();
    assert!(e.contains("--coalesce"), "{e}");
}

/// Batches far larger than a socket's buffer (`-P 8` of 1 MiB SETs): a
/// send through the ring that must wait for room goes out whole before the
/// connection's buffer is touched again, and every command is counted once,
/// with either wait.
#[test]
fn sends_larger_than_the_socket_buffer_count_exactly() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut modes = vec![IoMode::Epoll];
    if uring_here() {
        modes.push(IoMode::Uring);
    }
    for io in modes {
        let mut cfg = config(ep.clone(), Workload::Test(Test::Set));
        cfg.load.connections = 2;
        cfg.load.threads = 1;
        cfg.load.io = io;
        cfg.pipeline = 8;
        cfg.data_size = 1 << 20;
        cfg.requests = 64;
        let before = calls(&ep, None);
        let r = tare_redis::run(&cfg).unwrap();
        let after = settled(&ep, &before, "set", 64);
        assert_eq!(r.errors.total(), 0, "{io}: {:?}", r.errors);
        assert_eq!(r.requests, 64, "{io}");
        assert_eq!(delta(&before, &after, "set").calls, 64, "{io}");
        assert_eq!(r.wakeups.as_ref().unwrap().io, io.to_string());
    }
}

/// A wrong password, a refused connection and a bad setting: one clear
/// error before any load.
#[test]
fn bad_input_is_one_error() {
    let server = RedisServer::start(Some("s3cret"));
    let ep = Endpoint::Tcp(server.addr());
    let mut cfg = config(ep.clone(), Workload::Test(Test::Get));
    cfg.password = Some("wrong".into());
    let e = tare_redis::run(&cfg).unwrap_err().to_string();
    assert!(e.starts_with("AUTH failed: WRONGPASS"), "{e}");
    cfg.password = None;
    let e = tare_redis::run(&cfg).unwrap_err().to_string();
    assert!(e.contains("NOAUTH"), "{e}");
    cfg.password = Some("s3cret".into());
    cfg.dbnum = 3;
    cfg.requests = 100;
    let r = tare_redis::run(&cfg).unwrap();
    assert_eq!(r.requests, 100);
    // Nothing listens on a port just released.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let e = tare_redis::run(&config(Endpoint::Tcp(free), Workload::Test(Test::Get)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("could not connect to Redis at 127.0.0.1:"),
        "{e}"
    );
    let mut cfg = config(ep, Workload::Test(Test::Get));
    cfg.load.connections = 0;
    let e = tare_redis::run(&cfg).unwrap_err().to_string();
    assert_eq!(e, "clients (-c) must be at least 1");
}

/// An open loop at a modest rate: commands are sent on schedule and
/// counted exactly against the server.
#[test]
fn open_loop_counts_match_the_server() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut cfg = config(ep.clone(), Workload::Test(Test::Incr));
    cfg.load.duration = Some(Duration::from_millis(1000));
    cfg.load.rate = Some(2_000.0);
    let before = calls(&ep, None);
    let r = tare_redis::run(&cfg).unwrap();
    let after = settled(&ep, &before, "incr", r.requests + r.in_flight);
    let d = delta(&before, &after, "incr");
    assert_eq!(r.requests + r.in_flight, d.calls);
    let sched = r.schedule.as_ref().unwrap();
    assert_eq!(sched.target_rate, Some(2_000.0));
    // Every arrival due was sent or counted unsent (never silently lost).
    assert!(
        (r.requests + r.in_flight + sched.unsent).abs_diff(2_000) <= 4,
        "{} + {} + {}",
        r.requests,
        r.in_flight,
        sched.unsent
    );
}

/// A ramp and a warm-up come before the measured period: what completes
/// during them is not counted (the server counts it), the ramp is shown
/// per second, and the measured period is the duration asked for.
#[test]
fn ramp_and_warmup_precede_the_measured_period() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut cfg = config(ep.clone(), Workload::Test(Test::Incr));
    cfg.load.duration = Some(Duration::from_millis(600));
    cfg.load.ramp = Duration::from_millis(500);
    cfg.load.warmup = Duration::from_millis(300);
    let before = calls(&ep, None);
    let r = tare_redis::run(&cfg).unwrap();
    let after = settled(&ep, &before, "incr", r.requests + r.in_flight + 1);
    let d = delta(&before, &after, "incr");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 0);
    assert!(
        d.calls > r.requests + r.in_flight,
        "the ramp's and warm-up's commands reach the server but are not counted: {} vs {}",
        d.calls,
        r.requests
    );
    assert!((r.duration_s - 0.6).abs() < 0.1, "{}", r.duration_s);
    let s = r.schedule.as_ref().unwrap();
    assert_eq!(s.ramp_s, 0.5);
    assert!(s.ramp_timeline.iter().sum::<u64>() > 0, "{s:?}");
}

/// `stat` of `INFO stats` (`keyspace_hits`, `keyspace_misses`).
fn stat(ep: &Endpoint, name: &str) -> u64 {
    let mut s = Session::connect(ep, Duration::from_secs(5), None, None, 0).unwrap();
    let info = s.info("stats").unwrap();
    info.iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap()
}

/// Between trials (seed 002's FLUSHALL between runs): the server is
/// emptied, and for GET every key of the keyspace is stored with a value
/// of the data size, so every GET of the next run is a hit.
#[test]
fn preparation_flushes_and_stores_every_key_get_reads() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let mut s = Session::connect(&ep, Duration::from_secs(5), None, None, 0).unwrap();
    s.command(&["LPUSH", "mylist", "a"]).unwrap();
    s.command(&["SET", "stale", "b"]).unwrap();
    let dbsize = |s: &mut Session| match s.command(&["DBSIZE"]).unwrap() {
        tare_redis::resp::Value::Int(n) => n,
        other => panic!("{other:?}"),
    };
    let set = [Workload::Test(Test::Set)];
    let p = tare_redis::Preparation {
        workloads: &set,
        data_size: 50,
        keyspace: Some(2_500),
    };
    assert_eq!(p.apply(&ep, Duration::from_secs(5)).unwrap(), "FLUSHALL");
    assert_eq!(dbsize(&mut s), 0);
    let get = [Workload::Test(Test::Get)];
    let p = tare_redis::Preparation {
        workloads: &get,
        ..p
    };
    assert_eq!(
        p.apply(&ep, Duration::from_secs(5)).unwrap(),
        "FLUSHALL; MSET 2500 keys of 50 bytes for get"
    );
    assert_eq!(dbsize(&mut s), 2_500);
    match s.command(&["GET", "key:000000002499"]).unwrap() {
        tare_redis::resp::Value::Bulk(Some(v)) => assert_eq!(v, vec![b'x'; 50]),
        other => panic!("{other:?}"),
    }
    let (hits, misses) = (stat(&ep, "keyspace_hits"), stat(&ep, "keyspace_misses"));
    let mut cfg = config(ep.clone(), Workload::Test(Test::Get));
    cfg.keyspace = Some(2_500);
    let r = tare_redis::run(&cfg).unwrap();
    assert_eq!(r.requests, 2_000);
    assert_eq!(stat(&ep, "keyspace_hits") - hits, 2_000, "every GET hit");
    assert_eq!(stat(&ep, "keyspace_misses"), misses);
}

/// Before an LRANGE trial the list it reads is filled, as
/// redis-benchmark's LPUSH fills it before its LRANGE tests: LRANGE_600
/// then reads 600 elements, not a missing key.
#[test]
fn an_lrange_trial_reads_a_filled_list() {
    let server = RedisServer::start(None);
    let ep = Endpoint::Tcp(server.addr());
    let workloads = [Workload::Test(Test::Lrange600)];
    let done = tare_redis::Preparation {
        workloads: &workloads,
        data_size: 8,
        keyspace: None,
    }
    .apply(&ep, Duration::from_secs(5))
    .unwrap();
    assert_eq!(done, "FLUSHALL; LPUSH 600 elements of 8 bytes for lrange");
    let mut s = Session::connect(&ep, Duration::from_secs(5), None, None, 0).unwrap();
    assert_eq!(
        s.command(&["LLEN", "mylist"]).unwrap(),
        tare_redis::resp::Value::Int(600)
    );
    let set = [Workload::Test(Test::Set)];
    let done = tare_redis::Preparation {
        workloads: &set,
        data_size: 8,
        keyspace: None,
    }
    .apply(&ep, Duration::from_secs(5))
    .unwrap();
    assert_eq!(done, "FLUSHALL");
}
