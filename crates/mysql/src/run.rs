//! [`run`]: one `tare mysql run`, from a [`MysqlConfig`] to a
//! [`LoadResult`].
//!
//! Before any load, one blocking session logs in and reads the server's
//! version: a refused connection, a wrong password or an unknown database
//! is one clear error. Then worker threads log their connections in and
//! prepare the statements, meet at the start gate, and load from one
//! common start.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tare_engine::load::LoadKey;
use tare_engine::{window, Coalesce, Engine};
use tare_record::{Latency, LoadResult, MysqlDetails, Unit};

use crate::config::MysqlConfig;
use crate::error::MysqlError;
use crate::oltp::Plan;
use crate::session::Session;
use crate::worker::{Live, Shared, Worker, WorkerOutput};

/// `tare mysql` to the code written once for every engine (find-max, the
/// command line's shared flags, the experiment runner).
pub struct Mysql;

impl Engine for Mysql {
    type Config = MysqlConfig;
    type Error = MysqlError;
    const NAME: &'static str = "mysql";
    const UNIT: Unit = Unit::Transactions;
    /// sysbench's flags.
    const SUBJECTS: &'static [(LoadKey, &'static str)] = &[
        (LoadKey::Threads, "--workers"),
        (LoadKey::Connections, "--threads"),
        (LoadKey::Duration, "--time"),
    ];

    /// sysbench's milliseconds.
    fn format_time(us: f64) -> String {
        format!("{:.2}ms", us / 1e3)
    }

    fn quiet(config: &mut MysqlConfig) {
        config.live = false;
        config.report_interval = None;
    }

    fn run(config: &MysqlConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, MysqlError> {
        run_with_stop(config, stop)
    }
}

tare_engine::holds_load!(MysqlConfig);

/// Runs the load described by `cfg`. A server that dies mid-run ends with
/// `Ok` and what was measured, its failures counted.
pub fn run(cfg: &MysqlConfig) -> Result<LoadResult, MysqlError> {
    Mysql::run_to_end(cfg)
}

pub(crate) fn validate(cfg: &MysqlConfig) -> Result<(), MysqlError> {
    let load = &cfg.load;
    let bad = |m: String| Err(MysqlError::Config(m));
    let tcp = matches!(cfg.endpoint, tare_engine::Endpoint::Tcp(_));
    Mysql::check_load(load, tcp).map_err(MysqlError::Config)?;
    Mysql::check_ramp(load, "needs a duration (--time)").map_err(MysqlError::Config)?;
    if load.coalesce != Coalesce::Off {
        return bad("--coalesce is not supported by tare mysql".into());
    }
    if load.duration.is_none() && cfg.events.is_none() {
        return bad("give --time or --events: a run without either never ends".into());
    }
    if cfg.events == Some(0) {
        return bad("--events must be at least 1 (or leave it out)".into());
    }
    check_tables(cfg.tables, cfg.table_size)?;
    if cfg.mix.range_size == 0 {
        return bad("--range_size must be at least 1".into());
    }
    window::check_loopback(&cfg.endpoint, cfg.allow_remote).map_err(MysqlError::Config)
}

/// `--tables` and `--table-size` as sysbench takes them.
pub(crate) fn check_tables(tables: u32, table_size: u32) -> Result<(), MysqlError> {
    if tables == 0 {
        return Err(MysqlError::Config("--tables must be at least 1".into()));
    }
    if table_size == 0 {
        return Err(MysqlError::Config("--table-size must be at least 1".into()));
    }
    // `prepare` writes every row (docs/experiments.md, "Limits").
    use tare_engine::bounds::{MAX_TABLES, MAX_TABLE_SIZE};
    if tables > MAX_TABLES {
        return Err(MysqlError::Config(format!(
            "--tables must be at most {MAX_TABLES}"
        )));
    }
    if table_size > MAX_TABLE_SIZE {
        return Err(MysqlError::Config(format!(
            "--table-size must be at most {MAX_TABLE_SIZE}"
        )));
    }
    Ok(())
}

/// Runs `work` inside the run's network namespace when it has one (on a
/// thread of its own, as entering one is per thread).
pub(crate) fn in_netns<T: Send>(
    netns: Option<&std::path::Path>,
    work: impl FnOnce() -> Result<T, MysqlError> + Send,
) -> Result<T, MysqlError> {
    let Some(ns) = netns else { return work() };
    std::thread::scope(|s| {
        s.spawn(|| {
            tare_engine::netns::enter(ns)
                .map_err(|e| MysqlError::io("entering the network namespace", e))?;
            work()
        })
        .join()
        .map_err(|_| MysqlError::Protocol("the session's thread panicked".into()))?
    })
}

/// The pre-run session: the server's version, or why it cannot be loaded.
/// It sends one statement (counted in `Questions`).
fn check_server(cfg: &MysqlConfig) -> Result<String, MysqlError> {
    in_netns(cfg.load.netns.as_deref(), || {
        let mut s = Session::connect(&cfg.endpoint, &cfg.login, cfg.load.timeout)?;
        let v = s.value("SELECT VERSION()")?.unwrap_or_default();
        s.quit();
        Ok(v)
    })
}

/// [`run`], ending early (with the results so far) once `stop` is set.
pub fn run_with_stop(cfg: &MysqlConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, MysqlError> {
    validate(cfg)?;
    let plan = Plan::new(cfg.workload, &cfg.mix, cfg.tables, cfg.table_size, cfg.rand);
    let server_version = check_server(cfg)?;
    let seed = window::seed_or_now(cfg.seed);
    let load = &cfg.load;
    let threads = load.threads;
    let clock = window::clock();
    let shared = Shared {
        cfg,
        plan,
        clock,
        seed,
        stop: &stop,
    };
    let live: Vec<Live> = (0..threads).map(|_| Live::default()).collect();
    let reporting = cfg.report_interval.is_some();
    if reporting {
        for l in &live {
            *l.latency.lock().unwrap_or_else(|p| p.into_inner()) = Some(Latency::new());
        }
    }
    let quota = |conns: &Range<usize>| {
        cfg.events.map(|n| {
            // Spread by connections, so a worker with more gets more.
            let before = (n as u128 * conns.start as u128 / load.connections as u128) as u64;
            let upto = (n as u128 * conns.end as u128 / load.connections as u128) as u64;
            upto - before
        })
    };
    let run = window::Run {
        engine: Mysql::NAME,
        load,
        clock,
        line: cfg.live.then_some("tx"),
        netns_error: |e| MysqlError::io("entering the network namespace", e),
        failed: MysqlError::Config,
    };
    let reporter_stop = AtomicBool::new(false);
    let measured = std::thread::scope(|scope| {
        let measured = window::measure(
            &run,
            |i, conns| {
                let q = quota(&conns);
                let mut w =
                    Worker::new(&shared, conns, q, reporting.then(|| &live[i])).map_err(|e| {
                        MysqlError::io("setting up the worker's wait (epoll or io_uring)", e)
                    })?;
                w.connect_all()?;
                Ok(w)
            },
            |w, window, counters| w.run(window, threads, counters),
            |_| {
                if let Some(every) = cfg.report_interval {
                    let (live, stop_r) = (&live, &reporter_stop);
                    scope.spawn(move || report_progress(live, every, cfg, stop_r));
                }
            },
        );
        reporter_stop.store(true, Ordering::Relaxed);
        measured
    })?;
    let (started, measure_from) = (measured.started, measured.measure_from);
    let outputs = measured.outputs(MysqlError::Config)?;
    Ok(assemble(
        cfg,
        outputs,
        measure_from,
        started,
        server_version,
    ))
}

/// sysbench's `--report-interval` line on stdout, as sysbench prints it
/// (stderr when the JSON goes to stdout): `[ 1s ] thds: 8 tps: ... qps:
/// ... (r/w/o: ...) lat (ms,95%): ... err/s: ... reconn/s: ...`.
fn report_progress(live: &[Live], every: Duration, cfg: &MysqlConfig, stop: &AtomicBool) {
    let conns = cfg.load.connections;
    let origin = Instant::now();
    let mut last = [0u64; 5];
    let mut tick = 1u32;
    while !stop.load(Ordering::Relaxed) {
        let left = (every * tick).saturating_sub(origin.elapsed());
        if !left.is_zero() {
            std::thread::sleep(left.min(Duration::from_millis(50)));
            continue;
        }
        let sum = |f: fn(&Live) -> &std::sync::atomic::AtomicU64| -> u64 {
            live.iter().map(|l| f(l).load(Ordering::Relaxed)).sum()
        };
        let now = [
            sum(|l| &l.transactions),
            sum(|l| &l.reads),
            sum(|l| &l.writes),
            sum(|l| &l.other),
            sum(|l| &l.ignored),
        ];
        let mut lat = Latency::new();
        for l in live {
            if let Some(h) = l.latency.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                lat.merge(h);
                *h = Latency::new();
            }
        }
        let s = every.as_secs_f64();
        let d: Vec<f64> = now
            .iter()
            .zip(last)
            .map(|(a, b)| (a - b) as f64 / s)
            .collect();
        let p95 = if lat.is_empty() {
            0.0
        } else {
            lat.quantile_us(0.95) / 1e3
        };
        let line = format!(
            "[ {}s ] thds: {conns} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,95%): {p95:.2} err/s: {:.2} reconn/s: 0.00",
            (every * tick).as_secs_f64().round() as u64,
            d[0],
            d[1] + d[2] + d[3],
            d[1],
            d[2],
            d[3],
            d[4],
        );
        if cfg.report_on_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
        last = now;
        tick += 1;
    }
}

/// Merges the workers' results; `start_ns`: when measurement began.
fn assemble(
    cfg: &MysqlConfig,
    outputs: Vec<WorkerOutput>,
    start_ns: u64,
    started: SystemTime,
    server_version: String,
) -> LoadResult {
    let mut it = outputs.into_iter();
    let first = it.next().expect("at least one worker");
    let mut share = first.share;
    let mut q = first.queries;
    let mut ignored = first.ignored;
    let mut failed = first.failed;
    let mut aborted = first.aborted;
    let mut abort_error = first.abort_error;
    let mut wakeups = first.wakeups;
    // The pre-run check's SELECT VERSION() and COM_QUIT.
    let mut untimed = 2 + first.quits;
    for o in it {
        untimed += o.quits;
        share.merge(&o.share);
        q.reads += o.queries.reads;
        q.writes += o.queries.writes;
        q.other += o.queries.other;
        for (k, n) in o.ignored {
            *ignored.entry(k).or_insert(0) += n;
        }
        for (k, n) in o.failed {
            *failed.entry(k).or_insert(0) += n;
        }
        aborted += o.aborted;
        abort_error = abort_error.or(o.abort_error);
        wakeups.waits += o.wakeups.waits;
    }
    let (record, duration_s) = share.record::<Mysql>(&cfg.load, start_ns, started);
    let rec = &share.rec;
    let n = rec.requests;
    let by_code = |m: std::collections::BTreeMap<u16, u64>| {
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    };
    LoadResult {
        // A failed transaction is not among the completed ones.
        attempts: Some(n + rec.errors.total()),
        target: cfg.target(),
        transport: cfg.endpoint.transport().to_string(),
        keepalive: true,
        tps: Some(n as f64 / duration_s),
        wakeups: Some(wakeups),
        mysql: Some(MysqlDetails {
            workload: cfg.workload.name().into(),
            tables: cfg.tables as u64,
            table_size: cfg.table_size as u64,
            protocol: if cfg.prepared { "prepared" } else { "text" }.into(),
            reads: q.reads,
            writes: q.writes,
            other: q.other,
            ignored_errors: ignored.values().sum(),
            errors_by_code: by_code(failed),
            ignored_by_code: by_code(ignored),
            events_planned: cfg.events,
            aborted_connections: aborted,
            abort_error,
            untimed_commands: untimed,
            server_version,
        }),
        ..record
    }
}
