//! [`run`]: one `tare pg` load run, from a [`PgConfig`] to a [`LoadResult`].
//!
//! Before any load: the scripts are compiled, one blocking session checks
//! that the server accepts us (so a wrong password is one clear error, not
//! one per client), reads `server_version` and, for built-in scripts, the
//! scale from `pgbench_branches`, and vacuums as pgbench does.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tare_engine::load::LoadKey;
use tare_engine::progress::Board;
use tare_engine::{window, workers, Engine};
use tare_record::PgScriptResult;
use tare_record::{LoadResult, PgDetails, StatementLatency, Unit};

use crate::config::{Length, PgConfig};
use crate::engine::worker::WorkerResult;
use crate::engine::{self, CmdStat, LatCounters, ScriptStat, Shared, WorkerOutput};
use crate::error::PgError;
use crate::program::Program;
use crate::session::Session;

/// `tare pg` to the code written once for every engine (find-max, the
/// command line's shared flags, the experiment runner).
pub struct Pg;

impl Engine for Pg {
    type Config = PgConfig;
    type Error = PgError;
    const NAME: &'static str = "pg";
    const UNIT: Unit = Unit::Transactions;
    /// pgbench's flags.
    const SUBJECTS: &'static [(LoadKey, &'static str)] = &[
        (LoadKey::Threads, "number of threads (-j)"),
        (LoadKey::Connections, "number of clients (-c)"),
        (LoadKey::Duration, "duration (-T)"),
        (
            LoadKey::Timeout,
            "connection timeout (--timeout, --connect-timeout)",
        ),
    ];

    fn quiet(config: &mut PgConfig) {
        config.live = false;
        config.progress_interval = None;
    }

    fn run(config: &PgConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, PgError> {
        run_with_stop(config, stop)
    }
}

tare_engine::holds_load!(PgConfig);

/// Runs the load described by `cfg`. Client aborts (a server that died, a
/// script that cannot go on) end with `Ok` and partial results: see
/// `pg.aborted_clients` and `pg.abort_error`.
pub fn run(cfg: &PgConfig) -> Result<LoadResult, PgError> {
    Pg::run_to_end(cfg)
}

/// [`run`], ending early (with the results so far) once `stop` is set.
pub fn run_with_stop(cfg: &PgConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, PgError> {
    validate(cfg)?;
    // Parse scripts before touching the server: a syntax error is reported
    // even when the server is down.
    let parsed = Program::compile(cfg, 1, 0)?;
    check_coalesce(cfg, &parsed)?;
    let (server_version, scale) = prepare_server(cfg, parsed.uses_builtin())?;
    let seed = window::seed_or_now(cfg.random_seed);
    let program = Program::compile(cfg, scale, seed)?;

    let load = &cfg.load;
    let threads = load.threads;
    let shared = Shared {
        program: program.clone(),
        cfg: Arc::new(cfg.clone()),
        clock: window::clock(),
        lat: Arc::new((0..threads).map(|_| LatCounters::default()).collect()),
        seeds: crate::script::random::Seeds::derive(seed, load.connections, threads),
        stop,
    };
    let run = window::Run {
        engine: Pg::NAME,
        load,
        clock: shared.clock,
        line: cfg.live.then_some("tx"),
        netns_error: |e| PgError::io("worker thread", e),
        failed: PgError::Config,
    };
    // Workers connect their clients, then wait at the gate; the main
    // thread fixes one common start once all are ready (or calls the run
    // off). `-P` lines run beside the measured window.
    let stop_progress = AtomicBool::new(false);
    let measured = std::thread::scope(|scope| {
        let measured = window::measure(
            &run,
            |i, ids| engine::connect(i, ids, &shared),
            |w, window, counters| engine::run_worker(w, &window, counters, &shared),
            |board| {
                if let Some(every) = cfg.progress_interval {
                    let (sh, stop, board) = (&shared, &stop_progress, board.clone());
                    let stamp = cfg.progress_timestamp;
                    scope.spawn(move || report_progress(sh, &board, every, stamp, stop));
                }
            },
        );
        stop_progress.store(true, Ordering::Relaxed);
        measured
    })?;
    let (started, measure_from) = (measured.started, measured.measure_from);
    let (outputs, lost) = survivors(measured.finish(), |i| {
        window::connections_of(load.connections, threads, i).len()
    })?;
    let mut result = assemble(
        cfg,
        &program,
        outputs,
        measure_from,
        started,
        Server {
            scale,
            version: server_version,
        },
    );
    if let (Some(pg), Some(why)) = (result.pg.as_mut(), lost.1) {
        if cfg.print_aborts {
            // Its clients printed nothing: their thread is gone.
            eprintln!("tare: error: {why}");
        }
        pg.aborted_clients += lost.0;
        pg.abort_error.get_or_insert(why);
    }
    Ok(result)
}

/// The outputs of the workers that finished. A worker that panicked after
/// the start lost its `clients(i)` clients' counts: they count as aborted
/// clients, with the panic as the abort's words (the second value).
#[allow(clippy::type_complexity)]
fn survivors(
    outcomes: Vec<Result<Option<WorkerOutput>, workers::WorkerFailed>>,
    clients: impl Fn(usize) -> usize,
) -> Result<(Vec<WorkerOutput>, (u64, Option<String>)), PgError> {
    let mut lost = (0, None);
    let outputs: Vec<WorkerOutput> = outcomes
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Ok(Some(o)) => Some(o),
            Ok(None) => None,
            Err(e) => {
                lost.0 += clients(i) as u64;
                lost.1.get_or_insert(e.to_string());
                None
            }
        })
        .collect();
    if outputs.is_empty() {
        return Err(PgError::Config(
            lost.1.unwrap_or_else(|| "no worker thread finished".into()),
        ));
    }
    Ok((outputs, lost))
}

/// `--coalesce` pauses a worker between replies and the next send: inside
/// a transaction of several round trips that pause would be counted in its
/// latency, so only one-statement transactions on kept connections may
/// coalesce. (An open loop never pauses: its starts keep their schedule.)
fn check_coalesce(cfg: &PgConfig, program: &Program) -> Result<(), PgError> {
    if cfg.load.coalesce == tare_engine::Coalesce::Off {
        return Ok(());
    }
    if cfg.connect_per_transaction {
        return Err(PgError::Config(
            "--coalesce cannot be used with -C (connecting takes several round trips)".into(),
        ));
    }
    use crate::script::CommandKind;
    for s in &program.scripts {
        let sql = s
            .script
            .commands
            .iter()
            .filter(|c| matches!(c.kind, CommandKind::Sql(_)))
            .count();
        let sleeps = s
            .script
            .commands
            .iter()
            .any(|c| matches!(c.kind, CommandKind::Sleep { .. }));
        if sql != 1 || sleeps {
            return Err(PgError::Config(format!(
                "--coalesce needs scripts of one SQL command and no \\sleep; {} has {sql} (a pause between round trips would count in the transaction's latency)",
                s.script.name
            )));
        }
    }
    Ok(())
}

fn validate(cfg: &PgConfig) -> Result<(), PgError> {
    let load = &cfg.load;
    let tcp = matches!(cfg.conn.endpoint, tare_engine::Endpoint::Tcp(_));
    Pg::check_load(load, tcp).map_err(PgError::Config)?;
    match (load.duration, cfg.transactions) {
        (Some(_), Some(_)) => {
            return Err(PgError::Config(
                "specify either a number of transactions (-t) or a duration (-T), not both".into(),
            ))
        }
        (None, Some(0)) => return Err(PgError::Config("invalid number of transactions: 0".into())),
        _ => {}
    }
    // The ramp and the warm-up come before a measured -T (pgbench counts
    // every transaction of a -t run).
    Pg::check_ramp(load, "needs a duration (-T), not a transaction count (-t)")
        .map_err(PgError::Config)?;
    cfg.conn.check()?;
    window::check_loopback(&cfg.conn.endpoint, cfg.allow_remote).map_err(PgError::Config)
}

/// The pre-run session, inside the run's network namespace when it has one.
fn prepare_server(cfg: &PgConfig, uses_builtin: bool) -> Result<(String, u32), PgError> {
    let cfg2 = cfg.clone();
    let timeout = cfg.load.timeout;
    let work = move || -> Result<(String, u32), PgError> {
        if let Some(ns) = &cfg2.load.netns {
            tare_engine::netns::enter(ns).map_err(|e| PgError::io("pre-run check", e))?;
        }
        let mut s = Session::connect(&cfg2.conn, timeout)?;
        let version = s.query_value("SHOW server_version")?.unwrap_or_default();
        let scale = match cfg2.scale {
            Some(n) if !uses_builtin => n,
            _ if uses_builtin => {
                let n = s
                    .query_value("select count(*) from pgbench_branches")
                    .map_err(|e| {
                        PgError::Config(format!(
                            "could not count number of branches: {e}; Perhaps you need to do initialization (\"tare pg --init\") in database \"{}\"",
                            cfg2.conn.database
                        ))
                    })?
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0);
                if n == 0 {
                    return Err(PgError::Config(
                        "pgbench_branches is empty; run tare pg --init".into(),
                    ));
                }
                if cfg2.scale.is_some() {
                    // pgbench's warning: a built-in script's scale is the table's.
                    eprintln!(
                        "tare: scale option ignored, using count from pgbench_branches table ({n})"
                    );
                }
                n
            }
            _ => 1,
        };
        if uses_builtin && cfg2.vacuum {
            // pgbench's doVacuum, and its words on stderr: errors are
            // ignored there too.
            eprint!("starting vacuum...");
            for sql in [
                "vacuum pgbench_branches",
                "vacuum pgbench_tellers",
                "truncate pgbench_history",
            ] {
                let _ = s.query(sql);
            }
            if cfg2.vacuum_accounts {
                let _ = s.query("vacuum analyze pgbench_accounts");
            }
            eprintln!("end.");
        }
        Ok((version, scale))
    };
    if cfg.load.netns.is_some() {
        std::thread::spawn(work)
            .join()
            .map_err(|_| PgError::Protocol("pre-run check panicked".into()))?
    } else {
        work()
    }
}

/// pgbench's `-P` line on stderr, every `every`: the time since the
/// start, or with `--progress-timestamp` (`stamp`) the Unix time in ms;
/// the interval's tps, latency and failures, then as pgbench 15 adds them
/// the mean schedule lag (`-R`), skipped starts (`-R` with `-L`) and the
/// retried transactions and retries (`--max-tries` not 1).
fn report_progress(sh: &Shared, board: &Board, every: Duration, stamp: bool, stop: &AtomicBool) {
    let origin = Instant::now();
    let sum_of = |f: fn(&LatCounters) -> u64| -> u64 { sh.lat.iter().map(f).sum() };
    let (mut last, mut last_sq, mut last_t) = (Interval::default(), 0f64, 0f64);
    let mut tick = 1u32;
    while !stop.load(Ordering::Relaxed) {
        let due = every * tick;
        let left = due.saturating_sub(origin.elapsed());
        if !left.is_zero() {
            std::thread::sleep(left.min(Duration::from_millis(50)));
            continue;
        }
        tick += 1;
        let (n, failed) = board.totals();
        let cur = Interval {
            n,
            failed,
            lat_sum: sum_of(|l| l.lat_sum_ns.load(Ordering::Relaxed)),
            lag_sum: sum_of(|l| l.lag_sum_ns.load(Ordering::Relaxed)),
            skipped: sum_of(|l| l.skipped.load(Ordering::Relaxed)),
            retried: sum_of(|l| l.retried.load(Ordering::Relaxed)),
            retries: sum_of(|l| l.retries.load(Ordering::Relaxed)),
        };
        let sq: f64 = sh
            .lat
            .iter()
            .map(|l| f64::from_bits(l.lat_sumsq_ms.load(Ordering::Relaxed)))
            .sum();
        let t = origin.elapsed().as_secs_f64();
        let dn = cur.n.saturating_sub(last.n);
        let per_tx = |sum: u64, last: u64| {
            if dn > 0 {
                sum.saturating_sub(last) as f64 / 1e6 / dn as f64
            } else {
                0.0
            }
        };
        let mean = per_tx(cur.lat_sum, last.lat_sum);
        let sd = if dn > 0 {
            ((sq - last_sq) / dn as f64 - mean * mean).max(0.0).sqrt()
        } else {
            0.0
        };
        let when = if stamp {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            format!("{}.{:03}", now.as_secs(), now.subsec_millis())
        } else {
            format!("{t:.1}")
        };
        let mut line = format!(
            "progress: {when} s, {:.1} tps, lat {mean:.3} ms stddev {sd:.3}, {} failed",
            dn as f64 / (t - last_t).max(1e-9),
            cur.failed.saturating_sub(last.failed)
        );
        if sh.cfg.load.rate.is_some() {
            let lag = per_tx(cur.lag_sum, last.lag_sum);
            let _ = write!(line, ", lag {lag:.3} ms");
            if sh.cfg.latency_limit.is_some() {
                let _ = write!(
                    line,
                    ", {} skipped",
                    cur.skipped - last.skipped.min(cur.skipped)
                );
            }
        }
        if sh.cfg.max_tries != 1 {
            let _ = write!(
                line,
                ", {} retried, {} retries",
                cur.retried.saturating_sub(last.retried),
                cur.retries.saturating_sub(last.retries)
            );
        }
        eprintln!("{line}");
        (last, last_sq, last_t) = (cur, sq, t);
    }
}

/// The running totals one `-P` line is the difference of.
#[derive(Clone, Copy, Default)]
struct Interval {
    n: u64,
    failed: u64,
    lat_sum: u64,
    lag_sum: u64,
    skipped: u64,
    retried: u64,
    retries: u64,
}

/// What the pre-run session learnt of the server.
struct Server {
    scale: u32,
    version: String,
}

/// pgbench's rates: tps measured, excluding and including connection
/// time, and the connection time it reports.
struct Rates {
    tps: f64,
    excluding: f64,
    including: f64,
    connection_time_ms: f64,
}

impl Rates {
    fn of(cfg: &PgConfig, r: &WorkerResult, duration_s: f64, conn_elapsed_ns: u64) -> Rates {
        let n = r.rec.requests;
        let failed = r.rec.errors.status;
        let tps = n as f64 / duration_s;
        if cfg.connect_per_transaction {
            // pgbench: "average connection time" over transactions, and tps
            // including reconnections; excluding them, each thread's time
            // shrinks by its share of connection time.
            let per_thread_conn_s = r.conn_total_ns as f64 / 1e9 / cfg.load.threads as f64;
            Rates {
                tps,
                excluding: n as f64 / (duration_s - per_thread_conn_s).max(1e-9),
                including: tps,
                connection_time_ms: r.conn_total_ns as f64 / 1e6 / (n + failed).max(1) as f64,
            }
        } else {
            Rates {
                tps,
                excluding: tps,
                including: n as f64 / (duration_s + conn_elapsed_ns as f64 / 1e9),
                connection_time_ms: conn_elapsed_ns as f64 / 1e6,
            }
        }
    }
}

/// `-r`: each script command's mean latency, failures and retries.
fn statements(cfg: &PgConfig, program: &Program, per_cmd: &[CmdStat]) -> Vec<StatementLatency> {
    if !cfg.per_statement {
        return Vec::new();
    }
    program
        .scripts
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            let base = program.command_base[si];
            s.script.commands.iter().enumerate().map(move |(ci, c)| {
                let st = per_cmd[base + ci];
                StatementLatency {
                    script: s.script.name.clone(),
                    line: c.line as u64,
                    command: c.first_line.clone(),
                    mean_ms: if st.count == 0 {
                        0.0
                    } else {
                        st.sum_ns as f64 / 1e6 / st.count as f64
                    },
                    failures: st.failures,
                    retries: st.retries,
                }
            })
        })
        .collect()
}

/// pgbench's per-script lines.
fn script_results(
    program: &Program,
    per_script: &[ScriptStat],
    duration_s: f64,
) -> Vec<PgScriptResult> {
    program
        .scripts
        .iter()
        .zip(per_script)
        .map(|(s, st)| {
            let mean = if st.count == 0 {
                0.0
            } else {
                st.sum_ms / st.count as f64
            };
            let var = if st.count == 0 {
                0.0
            } else {
                (st.sumsq_ms / st.count as f64 - mean * mean).max(0.0)
            };
            PgScriptResult {
                name: s.script.name.clone(),
                weight: s.script.weight,
                transactions: st.count,
                failed: st.failed,
                latency_mean_ms: mean,
                latency_stdev_ms: var.sqrt(),
                tps: st.count as f64 / duration_s,
                retried: st.tx.retried,
                retries: st.tx.retries,
                serialization_failures: st.tx.serialization,
                deadlock_failures: st.tx.deadlock,
                skipped: st.tx.skipped,
            }
        })
        .collect()
}

/// The record's `pg` part (its words and maps taken from `r`).
fn details(
    cfg: &PgConfig,
    program: &Program,
    r: &mut WorkerResult,
    rates: &Rates,
    server: Server,
    duration_s: f64,
) -> PgDetails {
    let failed = r.rec.errors.status;
    let counts = r.counts;
    PgDetails {
        query_mode: cfg.mode.name().into(),
        scripts: program
            .scripts
            .iter()
            .map(|s| format!("{}@{}", s.script.name, s.script.weight))
            .collect(),
        connect_per_transaction: cfg.connect_per_transaction,
        tps_excluding_connect: rates.excluding,
        connection_time_ms: rates.connection_time_ms,
        failed_by_sqlstate_class: std::mem::take(&mut r.failed_by_class),
        statements: statements(cfg, program, &r.per_cmd),
        failed,
        tps_including_connect: rates.including,
        scale: server.scale,
        planned_duration_s: match cfg.length() {
            Length::Duration(d) => Some(d.as_secs_f64()),
            _ => None,
        },
        transactions_per_client: match cfg.length() {
            Length::TransactionsPerClient(t) => Some(t),
            _ => None,
        },
        aborted_clients: r.aborted,
        abort_error: r.abort_message.take(),
        first_failure: r.first_failure.take().filter(|_| failed > 0),
        server_version: server.version,
        script_results: script_results(program, &r.per_script, duration_s),
        max_tries: (cfg.max_tries != 1).then_some(cfg.max_tries),
        retried: counts.retried,
        retries: counts.retries,
        serialization_failures: counts.serialization,
        deadlock_failures: counts.deadlock,
        latency_limit_ms: cfg.latency_limit.map(|l| l.as_secs_f64() * 1e3),
        late: counts.late,
        skipped: counts.skipped,
    }
}

/// Merges the workers' outputs into the run's record; `start_ns`: when
/// measurement began.
fn assemble(
    cfg: &PgConfig,
    program: &Program,
    outputs: Vec<WorkerOutput>,
    start_ns: u64,
    started: SystemTime,
    server: Server,
) -> LoadResult {
    let mut it = outputs.into_iter();
    let mut all = it.next().expect("at least one worker");
    for o in it {
        all.merge(o);
    }
    let WorkerOutput {
        result: mut r,
        cpu,
        conn_elapsed_ns,
    } = all;
    let duration_ns = r.end_ns.saturating_sub(start_ns).max(1);
    let duration_s = duration_ns as f64 / 1e9;
    let rates = Rates::of(cfg, &r, duration_s, conn_elapsed_ns);
    let pg = details(cfg, program, &mut r, &rates, server, duration_s);
    let WorkerResult {
        rec,
        unsent,
        wakeups,
        ..
    } = r;
    let record = window::record::<Pg>(
        &cfg.load,
        &rec,
        duration_ns,
        &cpu,
        window::unix_s(started),
        unsent,
    );
    LoadResult {
        // Failed transactions are not among the processed ones (pgbench).
        attempts: Some(rec.requests + rec.errors.total()),
        target: cfg.conn.target(),
        transport: cfg.conn.endpoint.transport().to_string(),
        keepalive: !cfg.connect_per_transaction,
        tps: Some(rates.tps),
        bytes_read: 0,
        connect_us: rec.connect.as_ref().map(|l| l.summary()),
        wakeups: Some(wakeups),
        pg: Some(pg),
        ..record
    }
}
