//! Open-loop load (docs/open-loop.md): schedules kept, coordinated omission corrected,
//! ramps visible, and the max-rate search bounded. Against `tare serve`
//! told to stall or delay by known amounts, so theory gives the answers.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tare_engine::find_max::{find_max, Budget};
use tare_engine::schedule::Arrivals;
use tare_http::{run, Http, HttpConfig, Target};
use tare_serve::{ServeConfig, Server};

/// These tests measure time: run them one at a time, not against each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn serve(config: ServeConfig) -> Server {
    Server::start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    })
    .unwrap()
}

fn config(server: &Server, connections: usize, secs: f64) -> HttpConfig {
    let url = format!("http://{}/", server.local_addr().unwrap());
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.load.threads = 1;
    c.load.connections = connections;
    c.load.duration = Some(Duration::from_secs_f64(secs));
    c
}

/// A server that answers nothing for 200 ms of every second. An open-loop
/// request arriving in a stall waits for its end, so corrected latency is
/// uniform on (0, 200 ms] for 20% of requests: p90 = 200 (1 - 0.1/0.2) = 100 ms
/// and p99 = 200 (1 - 0.01/0.2) = 190 ms. A closed-loop view (latency from
/// the actual send) sees only the few requests in flight when a stall began.
/// Measurement starts 50 ms in, so the window [0.05 s, 3.05 s] holds three
/// whole stalls (at 0.8, 1.8 and 2.8 s after the server starts), the last one
/// ending before the deadline: a stalled fraction of exactly 20%.
#[test]
fn stalls_show_in_corrected_latency_only() {
    let _serial = serial();
    let server = serve(ServeConfig {
        stall_every: Some(Duration::from_secs(1)),
        stall: Duration::from_millis(200),
        ..Default::default()
    });
    let mut c = config(&server, 4, 3.0);
    c.load.warmup = Duration::from_millis(50);
    c.load.rate = Some(2000.0);
    let r = run(&c).unwrap();
    let p90 = r.latency_us.p90 / 1e3;
    let p99 = r.latency_us.p99 / 1e3;
    assert!(
        (80.0..=120.0).contains(&p90),
        "corrected p90 {p90:.1} ms, theory 100 ms"
    );
    assert!(
        (175.0..=205.0).contains(&p99),
        "corrected p99 {p99:.1} ms, theory 190 ms"
    );
    let s = r.schedule.as_ref().unwrap();
    let u = s.latency_uncorrected_us.unwrap();
    assert!(
        u.p99 / 1e3 < 20.0,
        "uncorrected p99 {:.1} ms should not see the stalls",
        u.p99 / 1e3
    );
    assert!(
        u.max / 1e3 > 150.0,
        "the requests caught in a stall still show in the max"
    );
    // The generator says it fell behind during the stalls (its connections were all busy).
    assert!(s.late_sends > 0);
    assert_eq!(r.errors.total(), 0);
}

#[test]
fn achieved_rate_is_within_one_percent() {
    let _serial = serial();
    let server = serve(ServeConfig::default());
    for (rate, arrivals) in [
        (2_000.0, Arrivals::Constant),
        (8_000.0, Arrivals::Constant),
        (4_000.0, Arrivals::Poisson),
    ] {
        let mut c = config(&server, 16, 2.0);
        c.load.rate = Some(rate);
        c.load.arrivals = arrivals;
        let r = run(&c).unwrap();
        let s = r.schedule.as_ref().unwrap();
        // Poisson counts vary: sd of a count over 2 s is sqrt(8000) ~ 1.1%.
        let tolerance = if arrivals == Arrivals::Poisson {
            0.035
        } else {
            0.01
        };
        let off = (s.achieved_send_rate - rate).abs() / rate;
        assert!(
            off <= tolerance,
            "{arrivals:?} {rate}: sent {:.1}/s",
            s.achieved_send_rate
        );
        let off = (r.rps.unwrap() - rate).abs() / rate;
        assert!(
            off <= tolerance,
            "{arrivals:?} {rate}: completed {:.1}/s",
            r.rps.unwrap()
        );
        assert_eq!(r.errors.total(), 0);
    }
}

#[test]
fn open_loop_ramp_rises_linearly_and_is_excluded() {
    let _serial = serial();
    let server = serve(ServeConfig::default());
    let mut c = config(&server, 8, 1.0);
    c.load.rate = Some(2000.0);
    c.load.ramp = Duration::from_secs(2);
    let r = run(&c).unwrap();
    let s = r.schedule.as_ref().unwrap();
    // N(t) = rate t^2 / (2T): 500 in the first second, 1500 in the second,
    // then 2000 in the measured second.
    assert_eq!(s.ramp_timeline.len(), 2, "{:?}", s.ramp_timeline);
    let (a, b) = (s.ramp_timeline[0], s.ramp_timeline[1]);
    assert!(a < b, "the ramp rises: {:?}", s.ramp_timeline);
    // Every arrival is accounted for exactly once: completed during the
    // ramp, completed in the measured second, still in flight at the
    // deadline, or never sent. Under outside load (a CI host beside other
    // builds) completions slip from one second into the next and the last
    // arrivals miss the window, so the per-second counts move; the sum
    // cannot.
    let accounted = a + b + r.requests + r.in_flight + s.unsent + r.errors.total();
    assert!(
        accounted.abs_diff(4000) <= 2,
        "{accounted} accounted of 4000 arrivals: ramp {:?}, {} completed, {} in flight, {} unsent, {} errors",
        s.ramp_timeline,
        r.requests,
        r.in_flight,
        s.unsent,
        r.errors.total()
    );
    // On a machine that keeps up, each second holds its share.
    if s.late_sends == 0 {
        assert!(
            a.abs_diff(500) <= 30 && b.abs_diff(1500) <= 30,
            "{:?}",
            s.ramp_timeline
        );
        assert!(r.requests.abs_diff(2000) <= 40, "{}", r.requests);
    }
    // The summary covers only the measured second at full rate.
    assert_eq!(r.timeline.len(), 1);
}

#[test]
fn closed_loop_ramp_staggers_connections() {
    let _serial = serial();
    let server = serve(ServeConfig {
        delay: Duration::from_millis(10),
        ..Default::default()
    });
    let mut c = config(&server, 10, 1.0);
    c.load.ramp = Duration::from_secs(2);
    let r = run(&c).unwrap();
    let s = r.schedule.as_ref().unwrap();
    // Connections open evenly over the ramp: ~1/4 of full throughput in the
    // first second (connections 0-4 of 10, each for part of it), more after.
    assert_eq!(s.ramp_timeline.len(), 2);
    let full = r.requests as f64;
    assert!(full > 500.0, "{full}");
    assert!(
        (s.ramp_timeline[0] as f64) < full * 0.5,
        "{:?} vs {full}",
        s.ramp_timeline
    );
    assert!(
        s.ramp_timeline[0] < s.ramp_timeline[1],
        "{:?}",
        s.ramp_timeline
    );
    assert!(s.target_rate.is_none());
}

/// A server whose capacity is set by a delay (8 connections x 5 ms = 1600/s
/// at most), so the answer has a hard ceiling: the search stays within its
/// run budget, never answers above what the server can do, and its answer
/// is bracketed by a passing and a failing probe. How far below the ceiling
/// it lands is the machine's business: a loaded CI host stalls for tens of
/// milliseconds at any rate (at load average 10 on 2 cores a p99 < 50 ms
/// held only below 100 req/s), so the answer itself is checked only
/// against the probes that produced it; the search's reproducibility on a
/// steady server is tested deterministically in tare_engine::find_max.
/// Run twice: a second search on the same, now warm, server holds the same.
#[test]
fn find_max_stays_under_the_servers_ceiling_within_budget() {
    let _serial = serial();
    let server = serve(ServeConfig {
        delay: Duration::from_millis(5),
        ..Default::default()
    });
    let mut c = config(&server, 8, 0.7);
    c.load.slo = Some("p99<50ms".parse().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let a = find_max::<Http>(&c, Budget::runs(7), &stop).unwrap();
    let b = find_max::<Http>(&c, Budget::runs(7), &stop).unwrap();
    for f in [&a, &b] {
        assert!(f.probes.len() <= 1 + 7 + 1, "{} probes", f.probes.len());
        // 8 connections x 5 ms: no run can complete more than 1600/s.
        assert!(
            f.capacity_rps <= 1600.0 * 1.05,
            "capacity {}",
            f.capacity_rps
        );
        let Some(best) = f.best_rate else {
            // Nothing met the objective: every probe must have failed it.
            assert!(
                f.probes.iter().all(|p| !p.passed || p.rate.is_none()),
                "no answer, yet a probe passed: {:?}",
                f.probes
            );
            continue;
        };
        assert!(best <= 1600.0 * 1.1, "{best} above the server's ceiling");
        assert!(
            best <= f.capacity_rps * 1.1,
            "{best} vs capacity {}",
            f.capacity_rps
        );
        // The answer is a rate a probe passed at.
        assert!(
            f.probes
                .iter()
                .any(|p| p.passed && p.rate.is_some_and(|r| (r - best).abs() < 1e-6)),
            "{best} was never probed and passed: {:?}",
            f.probes
        );
        // A probe above the answer failed (the bracket is real).
        let (lo, hi) = f.bracket;
        assert!(lo.is_some() && hi.is_some_and(|h| h > best));
    }
}
