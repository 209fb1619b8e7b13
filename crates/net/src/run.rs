//! A whole run: rr, crr and udp-rr on `-t` event-loop threads sharing the
//! connections (`crate::transactions`, connected before a start gate; rr
//! with one connection per thread blocks instead, `crate::blocking`), a
//! stream on one blocking thread per connection; their records merged
//! into one [`LoadResult`]; and [`Net`], the engine as the shared code
//! (find-max, the command line's shared flags, the runner) sees it.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tare_engine::cpu::CpuTime;
use tare_engine::progress::{Board, Line};
use tare_engine::{window, workers, Clock, Endpoint, Engine, IoMode, Recorder};
use tare_record::{LoadResult, NetDetails, Unit};

use crate::blocking::{self, BlockingRr, Finished, Watch};
use crate::client::{self, Outcome, Plan, StreamTally};
use crate::config::{Direction, NetConfig, Test};
use crate::transactions::Transactions;
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

    fn quiet(config: &mut NetConfig) {
        config.progress = false;
    }

    fn run(config: &NetConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, NetError> {
        run_with_stop(config, stop)
    }
}

tare_engine::holds_load!(NetConfig);

/// Runs `config` to its end.
pub fn run(config: &NetConfig) -> Result<LoadResult, NetError> {
    Net::run_to_end(config)
}

/// As [`run`], ending early (with what was measured) once `stop` is set.
pub fn run_with_stop(config: &NetConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, NetError> {
    config.validate()?;
    let load = &config.load;
    let workers_n = config.workers();
    let duration = load.duration.expect("validated");
    let stream = config.test == Test::Stream;
    let plan = plan(config, stop);
    if !stream {
        // One socket per connection; streams stay within their 512.
        let dest = match &config.endpoint {
            Endpoint::Tcp(a) => Some(*a),
            Endpoint::Unix(_) => None,
        };
        tare_engine::limits::Limits::for_connections(load.connections as u64)
            .check(load.connections as u64, dest, false)
            .map_err(|e| NetError::Config(e.to_string()))?;
    }
    let (outcomes, start_ns, started_unix_s) = if stream {
        let board = Board::new(workers_n);
        let line = config
            .progress
            .then(|| Line::start(board.clone(), "Mbit", Some(duration + load.warmup)));
        let measured = streams(config, &plan, &board);
        if let Some(l) = line {
            l.finish();
        }
        measured?
    } else {
        transactions(config, &plan)?
    };
    Ok(result(
        config,
        Merged::of(outcomes, start_ns),
        start_ns,
        started_unix_s,
    ))
}

/// What every thread shares: where to, what to send, the measured period
/// on one clock, the pace, and the stop flag.
fn plan(config: &NetConfig, stop: Arc<AtomicBool>) -> Plan {
    let load = &config.load;
    let duration = load.duration.expect("validated");
    Plan {
        endpoint: config.endpoint.clone(),
        request: config.request,
        response: config.response,
        clock: Clock::new(Instant::now()),
        // Streams measure from the clock's origin; the event loop from
        // its start gate (`Transactions::run` adds it).
        start_ns: load.warmup.as_nanos() as u64,
        end_ns: (load.warmup + duration).as_nanos() as u64,
        timeout: load.timeout,
        rate: load.rate,
        arrivals: load.arrivals,
        netns: load.netns.clone(),
        io: load.io,
        stop,
    }
}

/// Every thread's outcome, the measured period's start on the run's
/// clock, and that start in Unix seconds.
type Measured = (Vec<Outcome>, u64, f64);

/// A stream: one blocking thread per connection, each sending, receiving
/// or (`both`) the one or the other.
fn streams(config: &NetConfig, plan: &Plan, board: &Board) -> Result<Measured, NetError> {
    let load = &config.load;
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
        + load.warmup.as_secs_f64();
    let outcomes = workers::run(Net::NAME, config.workers(), load.cpus.as_ref(), |i| {
        let send = match config.direction {
            Direction::Send => true,
            Direction::Receive => false,
            Direction::Both => i < load.connections,
        };
        client::worker(plan, false, |p, o| {
            client::stream(p, o, send, &board.threads[i])
        })
    });
    let outcomes = outcomes
        .into_iter()
        .map(|o| o.map_err(|e| NetError::Worker(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((outcomes, plan.start_ns, started_unix_s))
}

/// Every thread's outcome summed: one recorder, CPU time, the last end,
/// counts, and a stream's bytes both ways and the responder's report.
struct Merged {
    rec: Recorder,
    cpu: CpuTime,
    finished_ns: u64,
    unsent: u64,
    lost: u64,
    tally: StreamTally,
    server_cpu_ns: u64,
    server_bytes: u64,
    /// Whether every responder's trailer arrived.
    all_reported: bool,
    /// How the threads waited, or `mixed`.
    client_io: &'static str,
}

impl Merged {
    fn of(outcomes: Vec<Outcome>, start_ns: u64) -> Merged {
        let mut total: Option<Recorder> = None;
        let mut cpu = CpuTime::default();
        let mut finished_ns = start_ns;
        let mut unsent = 0;
        let mut lost = 0;
        let mut tally = StreamTally::default();
        let mut server_cpu_ns = 0u64;
        let mut server_bytes = 0u64;
        let mut all_reported = true;
        let mut client_io = "";
        for o in outcomes {
            client_io = match client_io {
                "" => o.io,
                same if same == o.io => same,
                _ => "mixed",
            };
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
        Merged {
            rec: total.expect("at least one worker"),
            cpu,
            finished_ns,
            unsent,
            lost,
            tally,
            server_cpu_ns,
            server_bytes,
            all_reported,
            client_io,
        }
    }
}

/// `tare net`'s own part of the result: the test, its sizes, the round
/// trip, and a stream's rates both ways and CPU per gigabyte.
fn details(config: &NetConfig, m: &Merged, secs: f64, throughput: f64) -> NetDetails {
    let stream = config.test == Test::Stream;
    let direction = config.direction;
    let gbit = |bytes: u64| bytes as f64 * 8.0 / secs / 1e9;
    let per_gb = |cpu_s: f64, bytes: u64| (bytes > 0).then(|| cpu_s / (bytes as f64 / 1e9));
    NetDetails {
        test: config.test.name().into(),
        request_bytes: config.request as u64,
        response_bytes: config.response as u64,
        round_trip_us: (!stream && m.rec.requests > 0)
            .then(|| 1e6 * config.load.connections as f64 / throughput),
        lost: m.lost,
        client_io: m.client_io.into(),
        direction: if stream {
            direction.name().into()
        } else {
            String::new()
        },
        bytes_sent: m.tally.sent,
        bytes_received: m.tally.received,
        send_gbit_s: (stream && direction != Direction::Receive).then(|| gbit(m.tally.sent)),
        receive_gbit_s: (stream && direction != Direction::Send).then(|| gbit(m.tally.received)),
        client_cpu_s_per_gb: if stream {
            per_gb(m.cpu.total_s(), m.tally.all_bytes)
        } else {
            None
        },
        server_cpu_s_per_gb: if stream && m.all_reported {
            per_gb(m.server_cpu_ns as f64 / 1e9, m.server_bytes)
        } else {
            None
        },
    }
}

/// The run's [`LoadResult`] from the merged outcomes of its measured
/// period, which began at `start_ns` on the run's clock
/// (`started_unix_s`).
fn result(config: &NetConfig, m: Merged, start_ns: u64, started_unix_s: f64) -> LoadResult {
    let load = &config.load;
    let test = config.test;
    let stream = test == Test::Stream;
    let workers_n = config.workers();
    // A run ended early (Ctrl-C, a dead responder) covers the time it
    // measured; otherwise the planned period.
    let duration_ns = m.finished_ns.saturating_sub(start_ns).max(1);
    let secs = duration_ns as f64 / 1e9;
    let unit = if stream { Unit::Megabits } else { Net::UNIT };
    let throughput = m.rec.requests as f64 / secs;
    let details = details(config, &m, secs, throughput);
    let target = match &config.endpoint {
        Endpoint::Tcp(a) => format!("{a}"),
        Endpoint::Unix(p) => format!("unix:{}", p.display()),
    };
    let transport = match (&config.endpoint, test) {
        (Endpoint::Unix(_), _) => "unix",
        (_, Test::UdpRr) => "udp",
        _ => "tcp",
    };
    let (rec, cpu) = (m.rec, m.cpu);
    let record = window::record::<Net>(load, &rec, duration_ns, &cpu, started_unix_s, m.unsent);
    LoadResult {
        unit: Some(unit),
        attempts: Some(rec.requests + rec.errors.total()),
        target,
        transport: transport.into(),
        // A stream both ways has its connections in each direction.
        connections: if stream {
            workers_n as u64
        } else {
            load.connections as u64
        },
        threads: workers_n as u64,
        keepalive: test != Test::Crr,
        tps: Some(throughput),
        connect_us: rec.connect.as_ref().map(|l| l.summary()),
        first_byte_us: rec.first_byte.as_ref().map(|l| l.summary()),
        net: Some(details),
        ..record
    }
}

/// A transactions thread: the event loop over its share of the
/// connections, or one blocking rr connection.
enum Worker<'p> {
    /// The loop, its thread's index and its number of connections.
    Loop(Box<Transactions<'p>>, usize, usize),
    Blocking(BlockingRr<'p>),
}

/// Whether each thread runs one rr connection with blocking calls: one
/// connection per thread in a closed loop, and `--io` left to tare. Then
/// a wait per round trip (epoll's or io_uring's) buys nothing; `--io
/// epoll` or `--io io_uring` still runs the event loop.
pub(crate) fn blocks(config: &NetConfig) -> bool {
    let load = &config.load;
    config.test == Test::Rr
        && load.rate.is_none()
        && load.io == IoMode::Auto
        && config.workers() == load.connections
}

/// rr, crr and udp-rr: `config.workers()` event-loop threads, each with
/// its share of the connections, opened before the common start of the
/// measured window every engine shares ([`window::measure`]).
fn transactions(config: &NetConfig, plan: &Plan) -> Result<Measured, NetError> {
    let load = &config.load;
    let threads = config.workers();
    let conns = load.connections;
    let blocking = blocks(config);
    // Blocking workers: what the watchdog sees of each, and how many ended.
    let watches: Vec<Watch> = (0..threads).map(|_| Watch::default()).collect();
    let done = AtomicUsize::new(0);
    let watchdog = std::thread::current();
    // The threads the run clamps within its connections.
    let mut shared = load.clone();
    shared.threads = threads;
    let run = window::Run {
        engine: Net::NAME,
        load: &shared,
        clock: plan.clock,
        line: config.progress.then_some("rt"),
        netns_error: |e| NetError::Worker(e.to_string()),
        failed: NetError::Worker,
    };
    let measured = window::measure(
        &run,
        |i, share| {
            let finished = blocking.then(|| Finished {
                done: &done,
                watchdog: watchdog.clone(),
            });
            if blocking {
                let b = BlockingRr::connect(plan, &watches[i]);
                return Ok((Worker::Blocking(b), finished));
            }
            let mut t = Transactions::new(plan, config.test, share.len()).map_err(|e| {
                NetError::Worker(format!(
                    "setting up the worker's wait (epoll or io_uring): {e}"
                ))
            })?;
            t.connect_all();
            Ok((Worker::Loop(Box::new(t), i, share.len()), finished))
        },
        |(w, _finished), window, counters| match w {
            Worker::Blocking(b) => b.run(window.origin, counters),
            Worker::Loop(t, i, share) => {
                // This thread's connections' share of the rate.
                let rate = load.rate.map(|r| r * share as f64 / conns as f64);
                t.run(window.origin, rate, 0x6e65_7400 + i as u64, counters)
            }
        },
        |_| {
            if blocking {
                blocking::watch(&watches, plan.timeout, plan.clock, &done, threads);
            }
        },
    )?;
    let unix_s = measured
        .started
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let start_ns = measured.measure_from;
    let outcomes = measured
        .finish()
        .into_iter()
        .map(|o| {
            o.map_err(|e| NetError::Worker(e.to_string()))?
                .ok_or_else(|| NetError::Worker("a worker thread did not start".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((outcomes, start_ns, unix_s))
}
