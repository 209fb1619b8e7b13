//! `--coalesce`: batched wake-ups must not bend latency, and `auto` must
//! cost almost no throughput on a server whose latency is a fixed delay (the
//! case where think time costs the most).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tare_engine::Coalesce;
use tare_http::{run, HttpConfig, Target};
use tare_serve::{ServeConfig, Server};

/// A server whose every response waits a random delay in `[lo, hi)`, so
/// responses reach the generator one at a time, unsynchronised (a fixed
/// delay makes a closed loop's responses arrive in lockstep batches, and
/// then nothing would pause).
struct Jittery {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Jittery {
    fn start(lo: Duration, hi: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
            // Bounded: the test's runs last seconds; the flag ends it sooner.
            for _ in 0..60_000 {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                match listener.accept() {
                    Ok((conn, _)) => {
                        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
                        std::thread::spawn(move || answer(conn, seed, lo, hi));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Self {
            addr,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for Jittery {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Answers requests on one connection until the client closes it.
fn answer(mut conn: TcpStream, mut seed: u64, lo: Duration, hi: Duration) {
    conn.set_nodelay(true).unwrap();
    conn.set_nonblocking(false).unwrap();
    let span = (hi - lo).as_nanos() as u64;
    let mut buf = [0u8; 4096];
    let mut pending = Vec::new();
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            // xorshift64: a spread of delays, reproducible per connection.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            std::thread::sleep(lo + Duration::from_nanos(seed % span));
            if conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
    }
}

fn config_at(addr: SocketAddr, coalesce: Coalesce) -> HttpConfig {
    let url = format!("http://{addr}/");
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.load.threads = 1;
    c.load.connections = 16;
    c.load.duration = Some(Duration::from_millis(750));
    c.load.coalesce = coalesce;
    c
}

/// Off, on, on, off (0.75 s each) against `addr`: a load that drifts
/// across the test lands on both sides alike. Returns the two runs of each.
fn abba(
    addr: SocketAddr,
    on: Coalesce,
) -> ([tare_record::LoadResult; 2], [tare_record::LoadResult; 2]) {
    let off1 = run(&config_at(addr, Coalesce::Off)).unwrap();
    let on1 = run(&config_at(addr, on)).unwrap();
    let on2 = run(&config_at(addr, on)).unwrap();
    let off2 = run(&config_at(addr, Coalesce::Off)).unwrap();
    ([off1, off2], [on1, on2])
}

fn delayed(delay: Duration) -> Server {
    Server::start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        delay,
        ..Default::default()
    })
    .expect("tare serve starts")
}

fn config(server: &Server, coalesce: Coalesce) -> HttpConfig {
    config_at(server.local_addr().unwrap(), coalesce)
}

/// A worker that sleeps 1 ms before each wait reads most responses late;
/// without receive timestamps that lateness (~0.5 ms on average, over 15%
/// of a 2–4 ms delay) would be reported as latency.
#[test]
fn pauses_do_not_show_up_as_latency() {
    let server = Jittery::start(Duration::from_millis(2), Duration::from_millis(4));
    let (offs, pauseds) = abba(server.addr, Coalesce::Fixed(Duration::from_millis(1)));
    let [off, _] = &offs;
    let [paused, _] = &pauseds;
    let w = off.wakeups.as_ref().unwrap();
    assert_eq!(
        (w.coalesce.as_str(), w.pauses, w.rx_timestamps),
        ("off", 0, false)
    );
    let w = paused.wakeups.as_ref().unwrap();
    assert_eq!(w.coalesce, "1000us");
    assert!(w.rx_timestamps);
    assert!(w.pauses > 50, "{w:?}");
    assert!(w.mean_pause_us >= 1000.0, "{w:?}");
    assert!(
        w.waits < paused.requests,
        "{w:?} for {} requests",
        paused.requests
    );

    // The mean of each side's two medians.
    let p50_of =
        |r: &[tare_record::LoadResult; 2]| (r[0].latency_us.p50 + r[1].latency_us.p50) / 2.0;
    let (p50_off, p50) = (p50_of(&offs), p50_of(&pauseds));
    // The fault this guards against adds latency (over 15%); fewer
    // wake-ups may take a little off on a loaded machine, never much.
    assert!(
        p50 - p50_off <= p50_off * 0.10 && p50_off - p50 <= p50_off * 0.20,
        "p50 {p50:.0} us with 1 ms pauses vs {p50_off:.0} us without"
    );
    assert_eq!(paused.errors.total(), 0);
    assert_eq!(paused.timeline.iter().sum::<u64>(), paused.requests);
}

/// `auto` pauses 1/32 of the latency: on a 20 ms delay that is ~0.6 ms, and
/// a connection idles ~0.3 ms of its ~20 ms cycle.
#[test]
fn auto_costs_little_throughput_on_a_delay_bound_server() {
    let server = Jittery::start(Duration::from_millis(15), Duration::from_millis(25));
    let (offs, autos) = abba(server.addr, Coalesce::Auto);
    let [_, auto] = &autos;
    let w = auto.wakeups.as_ref().unwrap();
    assert!(w.pauses > 10, "{w:?}");
    // 1/32 of the latency measured, with room: a loaded machine stretches
    // the latency and the pauses with it (20 ms here when quiet).
    assert!(
        w.mean_pause_us < auto.latency_us.mean / 16.0,
        "{w:?} at a mean latency of {:.0} us",
        auto.latency_us.mean
    );
    let completed = |r: &[tare_record::LoadResult; 2]| r[0].requests + r[1].requests;
    let ratio = completed(&autos) as f64 / completed(&offs) as f64;
    assert!(
        ratio > 0.95,
        "auto completed {} requests, off {} ({ratio:.3})",
        completed(&autos),
        completed(&offs)
    );
}

/// No receive timestamps on a Unix socket, and an open loop keeps its
/// schedule: neither ever pauses, whatever was asked.
#[test]
fn unix_sockets_and_open_loops_never_pause() {
    let dir = std::env::temp_dir().join(format!("tare-coalesce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s.sock");
    let server = Server::start(ServeConfig {
        unix: Some(sock.clone()),
        delay: Duration::from_millis(2),
        ..Default::default()
    })
    .expect("tare serve starts");
    let mut c = HttpConfig::new(Target::new("http://localhost/", Some(sock), false).unwrap());
    c.load.connections = 16;
    c.load.duration = Some(Duration::from_millis(500));
    c.load.coalesce = Coalesce::Fixed(Duration::from_micros(500));
    let r = run(&c).unwrap();
    let w = r.wakeups.unwrap();
    assert_eq!(
        (w.coalesce.as_str(), w.pauses, w.rx_timestamps),
        ("off", 0, false)
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);

    let server = delayed(Duration::from_millis(2));
    let mut c = config(&server, Coalesce::Fixed(Duration::from_micros(500)));
    c.load.rate = Some(2000.0);
    c.load.duration = Some(Duration::from_millis(500));
    let w = run(&c).unwrap().wakeups.unwrap();
    assert_eq!((w.coalesce.as_str(), w.pauses), ("off", 0));
}
