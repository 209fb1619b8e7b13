//! A whole run: plan, start one worker per thread, merge what they
//! recorded; and [`Http`], the engine as the shared code sees it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tare_engine::cpu::CpuTime;
use tare_engine::limits::Limits;
use tare_engine::load::{Load, LoadKey};
use tare_engine::progress::{Board, Line};
use tare_engine::{workers, Clock, Endpoint, Engine, Recorder};
use tare_record::{LoadResult, Unit};

use crate::config::HttpConfig;
use crate::request;
use crate::worker::{NameStats, Plan, Worker};
use crate::HttpError;

/// `tare http` to the code written once for every engine (find-max, the
/// command line's shared flags, the experiment runner).
pub struct Http;

impl Engine for Http {
    type Config = HttpConfig;
    type Error = HttpError;
    const NAME: &'static str = "http";
    const UNIT: Unit = Unit::Requests;
    /// wrk's flags.
    const SUBJECTS: &'static [(LoadKey, &'static str)] = &[
        (LoadKey::Threads, "threads (-t)"),
        (LoadKey::Connections, "connections (-c)"),
        (LoadKey::Duration, "duration (-d)"),
        (LoadKey::Rate, "rate (--rate)"),
        (LoadKey::Timeout, "timeout (--timeout)"),
    ];

    fn format_time(us: f64) -> String {
        crate::wrk_text::format_time_us(us)
    }

    fn quiet(config: &mut HttpConfig) {
        config.progress = false;
    }

    fn run(config: &HttpConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, HttpError> {
        run_with_stop(config, stop)
    }
}

tare_engine::holds_load!(HttpConfig);

/// Splits `total` into `parts` shares differing by at most one.
fn share(total: u64, parts: usize, i: usize) -> u64 {
    total / parts as u64 + u64::from((i as u64) < total % parts as u64)
}

/// Runs the load described by `config` and returns its result. Errors are
/// only for runs that could not happen (bad config, no threads); failed
/// requests are counted in the result.
pub fn run(config: &HttpConfig) -> Result<LoadResult, HttpError> {
    Http::run_to_end(config)
}

/// As [`run`], ending early when `stop` is set (Ctrl-C); the result covers
/// the time actually measured.
pub fn run_with_stop(config: &HttpConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, HttpError> {
    config.validate()?;
    let load = &config.load;
    let dest = match &config.target.endpoint {
        Endpoint::Tcp(a) => Some(*a),
        Endpoint::Unix(_) => None,
    };
    let connections = load.connections as u64;
    let sources = Limits::for_connections(connections)
        .check(connections, dest, config.connect.rate.is_none())
        .map_err(|e| HttpError::Config(e.to_string()))?;
    // A ramp opens the connections itself; otherwise the measured period
    // (and the warm-up) start once the last connection is due.
    let connect_ns = if load.ramp.is_zero() && (load.rate.is_none() || config.keepalive) {
        config.connect.phase_ns(connections)
    } else {
        0
    };
    let plan = plan(config, connect_ns, sources, stop);
    let board = Board::new(load.threads);
    let line = config.progress.then(|| {
        let total = load
            .duration
            .map(|d| d + load.warmup + load.ramp + std::time::Duration::from_nanos(connect_ns));
        Line::start(board.clone(), "req", total)
    });
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
        + (load.warmup + load.ramp).as_secs_f64()
        + connect_ns as f64 / 1e9;

    let outcomes = workers::run(Http::NAME, load.threads, load.cpus.as_ref(), |i| {
        let conns = share(load.connections as u64, load.threads, i) as usize;
        let quota = config.requests.map(|n| share(n, load.threads, i));
        Worker::new(&plan, i, conns, quota, &board.threads[i])?.run()
    });
    if let Some(l) = line {
        l.finish();
    }
    let m = Merged::of(outcomes, load, plan.start_ns)?;
    let mut result = result_of(config, &m, started_unix_s);
    result.wakeups = Some(m.wakeups);
    result.connect_phase = m.connect;
    result.by_name = by_name(config, &m.names, &result);
    Ok(result)
}

/// What every worker shares: the requests, where to, the measured period
/// on one clock (it starts once the ramp, the `connect_ns` connecting
/// phase and the warm-up are over), the pace and the stop flag.
fn plan(
    config: &HttpConfig,
    connect_ns: u64,
    sources: tare_engine::limits::Sources,
    stop: Arc<AtomicBool>,
) -> Plan {
    let load = &config.load;
    let mix = Prepared::of(config);
    let ramp_ns = load.ramp.as_nanos() as u64;
    let start_ns = ramp_ns + connect_ns + load.warmup.as_nanos() as u64;
    Plan {
        endpoint: config.target.endpoint.clone(),
        requests: mix.requests,
        cumulative: mix.cumulative,
        seed: config.mix.as_ref().map_or(0, |m| m.seed),
        keepalive: config.keepalive,
        timeout_ns: load.timeout.as_nanos() as u64,
        clock: Clock::new(Instant::now()),
        start_ns,
        end_ns: load.duration.map(|d| start_ns + d.as_nanos() as u64),
        expected_ns: load
            .duration
            .map_or(10_000_000_000, |d| d.as_nanos() as u64),
        netns: load.netns.clone(),
        stop,
        rate: load.rate,
        arrivals: load.arrivals,
        ramp_ns,
        threads: load.threads,
        coalesce: load.coalesce,
        io: load.io,
        connections: load.connections as u64,
        pace: config.connect,
        sources,
    }
}

/// Every worker's outcome summed: one recorder, the threads' rates, CPU
/// time, the measured period's length and the counts beside.
struct Merged {
    rec: Recorder,
    rate_samples: Vec<f64>,
    cpu: CpuTime,
    duration_ns: u64,
    unsent: u64,
    wakeups: tare_record::WakeupReport,
    connect: Option<tare_record::ConnectReport>,
    names: Vec<NameStats>,
}

impl Merged {
    /// The workers' outcomes merged; the measured period began at
    /// `start_ns`. A worker that panicked took its counts with it: the run
    /// cannot report exact counts, so it is an error naming the worker.
    fn of(
        outcomes: Vec<Result<std::io::Result<crate::worker::Outcome>, workers::WorkerFailed>>,
        load: &Load,
        start_ns: u64,
    ) -> Result<Merged, HttpError> {
        let mut cpu = CpuTime::default();
        let mut finished_ns = 0;
        let mut last_completion_ns = 0;
        let mut per_thread = Vec::new();
        let mut unsent = 0;
        let mut wakeups = tare_record::WakeupReport::default();
        let mut connect: Option<tare_record::ConnectReport> = None;
        let mut names: Vec<NameStats> = Vec::new();
        for o in outcomes {
            let o = o?.map_err(|source| HttpError::Io {
                context: "load worker".into(),
                source,
            })?;
            cpu.add(&o.cpu);
            finished_ns = finished_ns.max(o.finished_ns);
            last_completion_ns = last_completion_ns.max(o.last_completion_ns);
            unsent += o.unsent;
            wakeups.add(&o.wakeups);
            match connect.as_mut() {
                None => connect = Some(o.connect),
                Some(c) => c.add(&o.connect),
            }
            per_thread.push(o.recorder);
            if names.is_empty() {
                names = o.names;
            } else {
                for (n, m) in names.iter_mut().zip(&o.names) {
                    n.add(m);
                }
            }
        }
        // With only a request count, the run ends with its last response.
        let end = if load.duration.is_some() {
            finished_ns
        } else {
            last_completion_ns.max(start_ns + 1)
        };
        let duration_ns = end.saturating_sub(start_ns).max(1);
        let rate_samples = per_thread
            .iter()
            .flat_map(|r| r.rate_samples(duration_ns))
            .collect();
        let mut it = per_thread.into_iter();
        let mut rec = it.next().expect("at least one thread");
        for r in it {
            rec.merge(&r);
        }
        Ok(Merged {
            rec,
            rate_samples,
            cpu,
            duration_ns,
            unsent,
            wakeups,
            connect,
            names,
        })
    }
}

/// The requests a run sends, each serialized once, and the cumulative
/// weights its draws search (empty: one request, never drawn).
struct Prepared {
    requests: Vec<crate::worker::Request>,
    cumulative: Vec<u64>,
}

impl Prepared {
    fn of(config: &HttpConfig) -> Prepared {
        let t = &config.target;
        let one = |method: &str, path: &str, headers: &[(String, String)], body: &[u8]| {
            crate::worker::Request {
                bytes: request::build(method, path, &t.authority, headers, body, config.keepalive),
                head: method == "HEAD",
                idempotent: matches!(
                    method,
                    "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
                ),
            }
        };
        let Some(mix) = config.mix.as_ref().filter(|m| m.requests.len() > 1) else {
            let request = match config.mix.as_ref().and_then(|m| m.requests.first()) {
                Some(n) => one(&n.method, &n.path, &n.headers, &n.body),
                None => one(&config.method, &t.path, &config.headers, &config.body),
            };
            return Prepared {
                requests: vec![request],
                cumulative: Vec::new(),
            };
        };
        let mut sum = 0u64;
        Prepared {
            requests: mix
                .requests
                .iter()
                .map(|n| one(&n.method, &n.path, &n.headers, &n.body))
                .collect(),
            cumulative: mix
                .requests
                .iter()
                .map(|n| {
                    sum = sum.saturating_add(n.weight);
                    sum
                })
                .collect(),
        }
    }
}

/// The mix's counts by name (`LoadResult::by_name`); empty without a mix.
fn by_name(
    config: &HttpConfig,
    names: &[NameStats],
    run: &LoadResult,
) -> Vec<tare_record::NamedResult> {
    let Some(mix) = &config.mix else {
        return Vec::new();
    };
    if let [n] = mix.requests.as_slice() {
        // One request is never drawn: the run's counts are its.
        return vec![tare_record::NamedResult {
            name: n.name.clone(),
            request: format!("{} {}", n.method, n.path),
            weight: n.weight,
            requests: run.requests,
            in_flight: run.in_flight,
            errors: tare_record::Errors {
                connect: 0,
                ..run.errors
            },
            latency_us: run.latency_us,
            hdr: run.hdr.clone(),
        }];
    }
    mix.requests
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let s = names.get(i);
            let latency = s
                .and_then(|s| s.latency.clone())
                .unwrap_or_else(tare_record::Latency::coarse);
            tare_record::NamedResult {
                name: n.name.clone(),
                request: format!("{} {}", n.method, n.path),
                weight: n.weight,
                requests: s.map_or(0, |s| s.requests),
                in_flight: s.map_or(0, |s| s.in_flight),
                errors: s.map(|s| s.errors).unwrap_or_default(),
                latency_us: latency.summary(),
                hdr: latency.encode().unwrap_or_default(),
            }
        })
        .collect()
}

/// The run's record from its merged outcomes, measured from
/// `started_unix_s`.
fn result_of(config: &HttpConfig, m: &Merged, started_unix_s: f64) -> LoadResult {
    let rec = &m.rec;
    let secs = m.duration_ns as f64 / 1e9;
    let target = match &config.target.endpoint {
        Endpoint::Unix(p) => format!("{} via unix:{}", config.target.url, p.display()),
        Endpoint::Tcp(_) => config.target.url.clone(),
    };
    let record = tare_engine::window::record::<Http>(
        &config.load,
        rec,
        m.duration_ns,
        &m.cpu,
        started_unix_s,
        m.unsent,
    );
    LoadResult {
        // A response with status >= 400 is a completed request (wrk's count).
        attempts: Some(rec.requests + rec.errors.total() - rec.errors.status),
        target,
        transport: config.target.endpoint.transport().into(),
        keepalive: config.keepalive,
        rps: Some(rec.requests as f64 / secs),
        connect_us: rec.connect.as_ref().map(|l| l.summary()),
        first_byte_us: rec.first_byte.as_ref().map(|l| l.summary()),
        status_codes: rec.status_codes(),
        thread_rate: tare_engine::rate::summarize(&m.rate_samples),
        ..record
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_add_up() {
        for (total, parts) in [(10u64, 3usize), (1, 4), (100, 1), (7, 7)] {
            let sum: u64 = (0..parts).map(|i| share(total, parts, i)).sum();
            assert_eq!(sum, total);
        }
    }
}
