//! [`run`]: one `tare redis` load run, from a [`RedisConfig`] to a
//! [`LoadResult`].
//!
//! Before any load, one blocking session connects, authenticates and reads
//! the server's version: a refused connection or a wrong password is one
//! clear error. Then worker threads connect their share of the
//! connections, meet at the start gate, and load from one common start.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

use tare_engine::load::LoadKey;
use tare_engine::{window, Engine};
use tare_record::{LoadResult, RedisDetails, Unit};

use crate::command::{Template, Workload};
use crate::config::{RedisConfig, MAX_DATA_SIZE, MAX_PIPELINE};
use crate::error::RedisError;
use crate::resp;
use crate::session::Session;
use crate::worker::{Plan, Worker, WorkerOutput};

/// `tare redis` to the code written once for every engine (find-max, the
/// command line's shared flags, the experiment runner).
pub struct Redis;

impl Engine for Redis {
    type Config = RedisConfig;
    type Error = RedisError;
    const NAME: &'static str = "redis";
    const UNIT: Unit = Unit::Commands;
    /// redis-benchmark's flags.
    const SUBJECTS: &'static [(LoadKey, &'static str)] = &[
        (LoadKey::Connections, "clients (-c)"),
        (LoadKey::Duration, "duration (-T)"),
    ];

    fn quiet(config: &mut RedisConfig) {
        config.live = false;
    }

    fn run(config: &RedisConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, RedisError> {
        run_with_stop(config, stop)
    }
}

tare_engine::holds_load!(RedisConfig);

/// Runs the load described by `cfg`. A server that dies mid-run ends with
/// `Ok` and what was measured, its failures counted.
pub fn run(cfg: &RedisConfig) -> Result<LoadResult, RedisError> {
    Redis::run_to_end(cfg)
}

fn validate(cfg: &RedisConfig) -> Result<(), RedisError> {
    let load = &cfg.load;
    let bad = |m: String| Err(RedisError::Config(m));
    let tcp = matches!(cfg.endpoint, tare_engine::Endpoint::Tcp(_));
    Redis::check_load(load, tcp).map_err(RedisError::Config)?;
    Redis::check_ramp(load, "needs a duration (-T), not a request count (-n)")
        .map_err(RedisError::Config)?;
    if load.duration.is_none() && cfg.requests == 0 {
        return bad("the number of requests (-n) must be at least 1".into());
    }
    if cfg.pipeline == 0 || cfg.pipeline > MAX_PIPELINE {
        return bad(format!(
            "pipeline (-P) must be between 1 and {MAX_PIPELINE}"
        ));
    }
    if cfg.data_size > MAX_DATA_SIZE {
        return bad(format!(
            "data size (-d) must be at most {MAX_DATA_SIZE} bytes"
        ));
    }
    if cfg.keyspace == Some(0) {
        return bad("keyspace (-r) must be at least 1".into());
    }
    if cfg.workloads.is_empty() {
        return bad("no test to run".into());
    }
    window::check_loopback(&cfg.endpoint, cfg.allow_remote).map_err(RedisError::Config)
}

/// The pre-run session (inside the run's network namespace when it has
/// one): the server's version, or why it cannot be loaded.
fn check_server(cfg: &RedisConfig) -> Result<String, RedisError> {
    let cfg2 = cfg.clone();
    let work = move || -> Result<String, RedisError> {
        if let Some(ns) = &cfg2.load.netns {
            tare_engine::netns::enter(ns).map_err(|e| RedisError::Io {
                context: "entering the network namespace".into(),
                error: e,
            })?;
        }
        let mut s = Session::connect(
            &cfg2.endpoint,
            cfg2.load.timeout,
            cfg2.user.as_deref(),
            cfg2.password.as_deref(),
            cfg2.dbnum,
        )?;
        let info = s.info("server")?;
        Ok(info
            .into_iter()
            .find(|(k, _)| k == "redis_version")
            .map(|(_, v)| v)
            .unwrap_or_default())
    };
    if cfg.load.netns.is_some() {
        std::thread::spawn(work)
            .join()
            .map_err(|_| RedisError::Protocol("the pre-run check panicked".into()))?
    } else {
        work()
    }
}

/// What every new connection sends first: `AUTH` and `SELECT`.
fn setup_bytes(cfg: &RedisConfig) -> (Vec<u8>, u32) {
    let mut out = Vec::new();
    let mut n = 0;
    if let Some(pw) = &cfg.password {
        match &cfg.user {
            Some(u) => resp::encode(&[b"AUTH", u.as_bytes(), pw.as_bytes()], &mut out),
            None => resp::encode(&[b"AUTH", pw.as_bytes()], &mut out),
        }
        n += 1;
    }
    if cfg.dbnum != 0 {
        resp::encode(&[b"SELECT", cfg.dbnum.to_string().as_bytes()], &mut out);
        n += 1;
    }
    (out, n)
}

/// [`run`], ending early (with the results so far) once `stop` is set.
pub fn run_with_stop(cfg: &RedisConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, RedisError> {
    validate(cfg)?;
    let templates = cfg
        .workloads
        .iter()
        .map(|w| Template::build(w, cfg.data_size, cfg.keyspace.is_some()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(RedisError::Config)?;
    let server_version = check_server(cfg)?;
    let seed = window::seed_or_now(cfg.seed);
    let (setup, setup_replies) = setup_bytes(cfg);
    let load = &cfg.load;
    let threads = load.threads;
    let clock = window::clock();
    let plan = Plan {
        cfg,
        templates,
        setup,
        setup_replies,
        clock,
        seed,
        stop: &stop,
    };
    let quota = |i: usize| {
        load.duration.is_none().then(|| {
            let n = cfg.requests;
            n / threads as u64 + u64::from((i as u64) < n % threads as u64)
        })
    };
    let run = window::Run {
        engine: Redis::NAME,
        load,
        clock,
        line: cfg.live.then_some("cmd"),
        netns_error: |e| RedisError::Config(format!("entering the network namespace: {e}")),
        failed: RedisError::Config,
    };
    let measured = window::measure(
        &run,
        |i, conns| {
            let mut w = Worker::new(&plan, conns, quota(i)).map_err(|e| {
                RedisError::Config(format!(
                    "setting up the worker's wait (epoll or io_uring): {e}"
                ))
            })?;
            w.connect_all().map_err(RedisError::Config)?;
            Ok(w)
        },
        |w, window, counters| w.run(window, threads, counters),
        |_| {},
    )?;
    let (started, measure_from) = (measured.started, measured.measure_from);
    let outputs = measured.outputs(RedisError::Config)?;
    Ok(assemble(
        cfg,
        outputs,
        measure_from,
        started,
        server_version,
    ))
}

/// Merges the workers' results; `start_ns`: when measurement began.
fn assemble(
    cfg: &RedisConfig,
    outputs: Vec<WorkerOutput>,
    start_ns: u64,
    started: SystemTime,
    server_version: String,
) -> LoadResult {
    let mut it = outputs.into_iter();
    let first = it.next().expect("at least one worker");
    let mut share = first.share;
    let mut kinds = first.kinds;
    let mut dropped = first.dropped;
    let mut wakeups = first.wakeups;
    for o in it {
        wakeups.add(&o.wakeups);
        share.merge(&o.share);
        for (k, n) in o.kinds {
            match kinds.iter_mut().find(|(x, _)| *x == k) {
                Some((_, m)) => *m += n,
                None => kinds.push((k, n)),
            }
        }
        dropped += o.dropped;
    }
    let (record, duration_s) = share.record::<Redis>(&cfg.load, start_ns, started);
    let rec = &share.rec;
    let n = rec.requests;
    LoadResult {
        // An error reply is not among the completed commands.
        attempts: Some(n + rec.errors.total()),
        target: cfg.target(),
        transport: cfg.endpoint.transport().to_string(),
        keepalive: true,
        rps: Some(n as f64 / duration_s),
        wakeups: Some(wakeups),
        redis: Some(RedisDetails {
            tests: cfg.workloads.iter().map(Workload::name).collect(),
            pipeline: cfg.pipeline as u64,
            data_size: cfg.data_size as u64,
            keyspace: cfg.keyspace,
            requests_planned: cfg.load.duration.is_none().then_some(cfg.requests),
            errors_by_kind: kinds
                .into_iter()
                .map(|(k, n)| (k.as_str().to_string(), n))
                .collect(),
            dropped_connections: dropped,
            server_version,
        }),
        ..record
    }
}
