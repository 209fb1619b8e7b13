//! A whole run: one worker thread per connection, their records merged
//! into one [`LoadResult`]; and [`Net`], the engine as the shared code
//! (find-max, the command line's shared flags, the runner) sees it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tare_engine::cpu::CpuTime;
use tare_engine::load::Load;
use tare_engine::progress::{Board, Line};
use tare_engine::{workers, Clock, Endpoint, Engine, Recorder};
use tare_record::{LoadResult, NetDetails, Unit};

use crate::client::{self, Plan, StreamTally};
use crate::config::{Direction, NetConfig, Test};
use crate::NetError;

/// `tare net` to the code written once for every engine.
pub struct Net;

impl Engine for Net {
    type Config = NetConfig;
    type Error = NetError;
    const NAME: &'static str = "net";
    /// Round trips; a stream's results say `megabits` instead
    /// ([`LoadResult::unit`] is per result).
    const UNIT: Unit = Unit::RoundTrips;

    fn format_time(us: f64) -> String {
        format!("{us:.1} us")
    }

    fn load(config: &NetConfig) -> &Load {
        &config.load
    }

    fn load_mut(config: &mut NetConfig) -> &mut Load {
        &mut config.load
    }

    fn quiet(config: &mut NetConfig) {
        config.progress = false;
    }

    fn run(config: &NetConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, NetError> {
        run_with_stop(config, stop)
    }
}

/// Runs `config` to its end.
pub fn run(config: &NetConfig) -> Result<LoadResult, NetError> {
    run_with_stop(config, Arc::new(AtomicBool::new(false)))
}

/// As [`run`], ending early (with what was measured) once `stop` is set.
pub fn run_with_stop(config: &NetConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, NetError> {
    config.validate()?;
    let load = &config.load;
    let workers_n = config.workers();
    let duration = load.duration.expect("validated");
    let origin = Instant::now();
    let start_ns = load.warmup.as_nanos() as u64;
    let end_ns = start_ns + duration.as_nanos() as u64;
    let plan = Plan {
        endpoint: config.endpoint.clone(),
        request: config.request,
        response: config.response,
        clock: Clock::new(origin),
        start_ns,
        end_ns,
        timeout: load.timeout,
        rate: load.rate.map(|r| r / load.connections as f64),
        arrivals: load.arrivals,
        netns: load.netns.clone(),
        stop,
    };
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
        + load.warmup.as_secs_f64();
    let board = Board::new(workers_n);
    let unit_word = if config.test == Test::Stream {
        "Mbit"
    } else {
        "rt"
    };
    let line = config
        .progress
        .then(|| Line::start(board.clone(), unit_word, Some(duration + load.warmup)));
    let test = config.test;
    let direction = config.direction;
    let outcomes = workers::run(Net::NAME, workers_n, load.cpus.as_ref(), |i| {
        let stats = &board.threads[i];
        let seed = 0x6e65_7400 + i as u64;
        match test {
            Test::Rr => client::worker(&plan, false, |p, o| client::rr(p, o, seed, stats)),
            Test::Crr => client::worker(&plan, true, |p, o| client::crr(p, o, seed, stats)),
            Test::UdpRr => client::worker(&plan, false, |p, o| client::udp_rr(p, o, seed, stats)),
            Test::Stream => {
                let send = match direction {
                    Direction::Send => true,
                    Direction::Receive => false,
                    Direction::Both => i < load.connections,
                };
                client::worker(&plan, false, |p, o| client::stream(p, o, send, stats))
            }
        }
    });
    if let Some(l) = line {
        l.finish();
    }

    let mut total: Option<Recorder> = None;
    let mut cpu = CpuTime::default();
    let mut finished_ns = start_ns;
    let mut unsent = 0;
    let mut lost = 0;
    let mut tally = StreamTally::default();
    let mut server_cpu_ns = 0u64;
    let mut server_bytes = 0u64;
    let mut all_reported = true;
    for o in outcomes {
        let o = o.map_err(|e| NetError::Worker(e.to_string()))?;
        cpu.add(&o.cpu);
        finished_ns = finished_ns.max(o.finished_ns);
        unsent += o.unsent;
        lost += o.lost;
        tally.sent += o.stream.sent;
        tally.received += o.stream.received;
        tally.all_bytes += o.stream.all_bytes;
        server_cpu_ns += o.stream.server_cpu_ns;
        server_bytes += o.stream.server_bytes;
        all_reported &= o.stream.server_reported;
        match total.as_mut() {
            None => total = Some(o.rec),
            Some(t) => t.merge(&o.rec),
        }
    }
    let rec = total.expect("at least one worker");
    // A run ended early (Ctrl-C, a dead responder) covers the time it
    // measured; otherwise the planned period.
    let duration_ns = finished_ns.saturating_sub(start_ns).max(1);
    let secs = duration_ns as f64 / 1e9;
    let stream = test == Test::Stream;
    let unit = if stream { Unit::Megabits } else { Net::UNIT };
    let throughput = rec.requests as f64 / secs;
    let gbit = |bytes: u64| bytes as f64 * 8.0 / secs / 1e9;
    let per_gb = |cpu_s: f64, bytes: u64| (bytes > 0).then(|| cpu_s / (bytes as f64 / 1e9));
    let details = NetDetails {
        test: test.name().into(),
        request_bytes: config.request as u64,
        response_bytes: config.response as u64,
        round_trip_us: (!stream && rec.requests > 0)
            .then(|| 1e6 * load.connections as f64 / throughput),
        lost,
        direction: if stream {
            direction.name().into()
        } else {
            String::new()
        },
        bytes_sent: tally.sent,
        bytes_received: tally.received,
        send_gbit_s: (stream && direction != Direction::Receive).then(|| gbit(tally.sent)),
        receive_gbit_s: (stream && direction != Direction::Send).then(|| gbit(tally.received)),
        client_cpu_s_per_gb: if stream {
            per_gb(cpu.total_s(), tally.all_bytes)
        } else {
            None
        },
        server_cpu_s_per_gb: if stream && all_reported {
            per_gb(server_cpu_ns as f64 / 1e9, server_bytes)
        } else {
            None
        },
    };
    let target = match &config.endpoint {
        Endpoint::Tcp(a) => format!("{a}"),
        Endpoint::Unix(p) => format!("unix:{}", p.display()),
    };
    let transport = match (&config.endpoint, test) {
        (Endpoint::Unix(_), _) => "unix",
        (_, Test::UdpRr) => "udp",
        _ => "tcp",
    };
    let mut result = LoadResult {
        engine: Net::NAME.into(),
        unit: Some(unit),
        attempts: Some(rec.requests + rec.errors.total()),
        target,
        transport: transport.into(),
        started_unix_s,
        duration_s: secs,
        connections: workers_n as u64,
        threads: workers_n as u64,
        keepalive: test != Test::Crr,
        requests: rec.requests,
        in_flight: rec.in_flight,
        errors: rec.errors,
        rps: None,
        tps: Some(throughput),
        bytes_read: rec.bytes_read,
        latency_us: rec.latency.summary(),
        hdr: rec.latency.encode().unwrap_or_default(),
        connect_us: rec.connect.as_ref().map(|l| l.summary()),
        first_byte_us: rec.first_byte.as_ref().map(|l| l.summary()),
        timeline: rec.timeline(duration_ns),
        generator_cpu_s: cpu.total_s(),
        generator_cpu_user_s: cpu.user.as_secs_f64(),
        generator_cpu_system_s: cpu.system.as_secs_f64(),
        status_codes: Default::default(),
        thread_rate: tare_engine::rate::summarize(&rec.rate_samples(duration_ns)),
        schedule: None,
        wakeups: None,
        connect_phase: None,
        pg: None,
        redis: None,
        mysql: None,
        net: Some(details),
        tare_version: env!("CARGO_PKG_VERSION").into(),
    };
    result.schedule = tare_engine::schedule::report(
        load.rate,
        load.arrivals,
        load.ramp,
        &rec,
        duration_ns,
        unsent,
    );
    Ok(result)
}
