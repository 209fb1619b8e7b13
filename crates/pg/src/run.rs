//! [`run`]: one `tare pg` load run, from a [`PgConfig`] to a [`LoadResult`].
//!
//! Before any load: the scripts are compiled, one blocking session checks
//! that the server accepts us (so a wrong password is one clear error, not
//! one per client), reads `server_version` and, for built-in scripts, the
//! scale from `pgbench_branches`, and vacuums as pgbench does.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tare_engine::load::{Load, LoadKey};
use tare_engine::progress::{Board, Line};
use tare_engine::{window, workers, Clock, Engine};
use tare_record::PgScriptResult;
use tare_record::{LoadResult, PgDetails, StatementLatency, Unit};

use crate::config::{Length, PgConfig};
use crate::engine::{self, LatCounters, Shared, WorkerOutput};
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

    /// pgbench's milliseconds.
    fn format_time(us: f64) -> String {
        format!("{:.3}ms", us / 1e3)
    }

    fn load(config: &PgConfig) -> &Load {
        &config.load
    }

    fn load_mut(config: &mut PgConfig) -> &mut Load {
        &mut config.load
    }

    fn quiet(config: &mut PgConfig) {
        config.live = false;
        config.progress_interval = None;
    }

    fn run(config: &PgConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, PgError> {
        run_with_stop(config, stop)
    }
}

/// Runs the load described by `cfg`. Client aborts (a server that died, a
/// script that cannot go on) end with `Ok` and partial results: see
/// `pg.aborted_clients` and `pg.abort_error`.
pub fn run(cfg: &PgConfig) -> Result<LoadResult, PgError> {
    run_with_stop(cfg, Arc::new(AtomicBool::new(false)))
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
    let clock = Clock::new(Instant::now());
    let shared = Arc::new(Shared {
        program: program.clone(),
        cfg: Arc::new(cfg.clone()),
        clock,
        board: Board::new(threads),
        lat: Arc::new((0..threads).map(|_| LatCounters::default()).collect()),
        failure: Mutex::new(None),
        seeds: crate::script::random::Seeds::derive(seed, load.connections, threads),
        stop,
    });
    // pgbench's split: the first `clients % threads` threads get one more.
    let conns = |i: usize| window::connections_of(load.connections, threads, i);
    let before_measuring = load.ramp + load.warmup;
    // Workers connect their clients, then wait at the gate; the main thread
    // fixes one common start once all are ready (or calls the run off).
    let (started, outputs) = workers::run_gated(
        Pg::NAME,
        threads,
        cfg.load.cpus.as_ref(),
        |i, ticket| engine::run_worker(i, conns(i), &shared, ticket),
        |gate| {
            if !gate.all_ready() {
                gate.open(None);
                return None;
            }
            // Measurement starts after the ramp and the warm-up; the
            // workers load from `start_ns`.
            let started = SystemTime::now() + before_measuring;
            let start_ns = clock.now_ns();
            gate.open(Some(start_ns));
            let planned = load.duration.map(|d| d + before_measuring);
            let line = cfg
                .live
                .then(|| Line::start(shared.board.clone(), "tx", planned));
            let stop_progress = Arc::new(AtomicBool::new(false));
            let progress = cfg.progress_interval.map(|every| {
                let (sh, stop) = (shared.clone(), stop_progress.clone());
                let stamp = cfg.progress_timestamp;
                std::thread::spawn(move || report_progress(&sh, every, stamp, &stop))
            });
            Some((started, start_ns, line, stop_progress, progress))
        },
    );
    let Some((started, start_ns, line, stop_progress, progress)) = started else {
        // A worker could not connect (its error is in the slot), or died
        // before the gate (its panic is in `outputs`).
        let stored = shared
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let died = outputs.into_iter().find_map(Result::err).map(PgError::from);
        return Err(stored
            .or(died)
            .unwrap_or_else(|| PgError::Config("a worker thread failed to start".into())));
    };
    stop_progress.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    if let Some(l) = line {
        l.finish();
    }
    // A worker that panicked after the start lost its clients' counts:
    // they count as aborted clients, with the panic as the abort's words.
    let mut lost = (0, None);
    let outputs: Vec<WorkerOutput> = outputs
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Ok(Some(o)) => Some(o),
            Ok(None) => None,
            Err(e) => {
                lost.0 += conns(i).len() as u64;
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
    let mut result = assemble(
        cfg,
        &program,
        outputs,
        start_ns + before_measuring.as_nanos() as u64,
        started,
        threads,
        scale,
        server_version,
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

/// A shared setting as `tare pg` spells it (pgbench's flags where pgbench has them).
fn subject(key: LoadKey) -> &'static str {
    match key {
        LoadKey::Threads => "number of threads (-j)",
        LoadKey::Connections => "number of clients (-c)",
        LoadKey::Duration => "duration (-T)",
        LoadKey::Timeout => "connection timeout (--timeout, --connect-timeout)",
        k => k.flag(),
    }
}

fn validate(cfg: &PgConfig) -> Result<(), PgError> {
    let load = &cfg.load;
    let tcp = matches!(cfg.conn.endpoint, tare_engine::Endpoint::Tcp(_));
    let shared = |e: tare_engine::load::LoadError| PgError::Config(e.with_subject(subject(e.key)));
    load.check(Some(tcp)).map_err(shared)?;
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
    load.check_ramp_within_duration().map_err(|e| {
        PgError::Config(match load.duration {
            None => format!(
                "{} needs a duration (-T), not a transaction count (-t)",
                subject(e.key)
            ),
            Some(_) => e.with_subject(subject(e.key)),
        })
    })?;
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
fn report_progress(sh: &Shared, every: Duration, stamp: bool, stop: &AtomicBool) {
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
        let (n, failed) = sh.board.totals();
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

/// Merges the workers' results; `start_ns`: when measurement began.
#[allow(clippy::too_many_arguments)]
fn assemble(
    cfg: &PgConfig,
    program: &Program,
    outputs: Vec<WorkerOutput>,
    start_ns: u64,
    started: SystemTime,
    threads: usize,
    scale: u32,
    server_version: String,
) -> LoadResult {
    let mut it = outputs.into_iter();
    let first = it.next().expect("at least one worker");
    let mut rec = first.result.rec;
    let mut per_cmd = first.result.per_cmd;
    let mut per_script = first.result.per_script;
    let mut by_class = first.result.failed_by_class;
    let (mut conn_total, mut aborted, mut abort_msg) = (
        first.result.conn_total_ns,
        first.result.aborted,
        first.result.abort_message,
    );
    let mut first_failure = first.result.first_failure;
    let mut counts = first.result.counts;
    let mut end_ns = first.result.end_ns;
    let mut unsent = first.result.unsent;
    let mut wakeups = first.result.wakeups;
    let mut cpu = first.cpu;
    let mut conn_elapsed = first.conn_elapsed_ns;
    for o in it {
        rec.merge(&o.result.rec);
        for (a, b) in per_cmd.iter_mut().zip(&o.result.per_cmd) {
            a.sum_ns += b.sum_ns;
            a.count += b.count;
            a.failures += b.failures;
            a.retries += b.retries;
        }
        for (a, b) in per_script.iter_mut().zip(&o.result.per_script) {
            a.count += b.count;
            a.failed += b.failed;
            a.sum_ms += b.sum_ms;
            a.sumsq_ms += b.sumsq_ms;
            a.tx.add(&b.tx);
        }
        for (k, v) in o.result.failed_by_class {
            *by_class.entry(k).or_insert(0) += v;
        }
        conn_total += o.result.conn_total_ns;
        aborted += o.result.aborted;
        abort_msg = abort_msg.or(o.result.abort_message);
        first_failure = first_failure.or(o.result.first_failure);
        counts.add(&o.result.counts);
        end_ns = end_ns.max(o.result.end_ns);
        unsent += o.result.unsent;
        wakeups.add(&o.result.wakeups);
        cpu.add(&o.cpu);
        conn_elapsed = conn_elapsed.max(o.conn_elapsed_ns);
    }
    let duration_ns = end_ns.saturating_sub(start_ns).max(1);
    let duration_s = duration_ns as f64 / 1e9;
    let n = rec.requests;
    let failed = rec.errors.status;
    let tps_measured = n as f64 / duration_s;
    let (tps, tps_excluding, tps_including, connection_time_ms) = if cfg.connect_per_transaction {
        // pgbench: "average connection time" over transactions, and tps
        // including reconnections; excluding them, each thread's time
        // shrinks by its share of connection time.
        let per_thread_conn_s = conn_total as f64 / 1e9 / threads as f64;
        let excl = n as f64 / (duration_s - per_thread_conn_s).max(1e-9);
        let avg_ms = conn_total as f64 / 1e6 / (n + failed).max(1) as f64;
        (tps_measured, excl, tps_measured, avg_ms)
    } else {
        let incl = n as f64 / (duration_s + conn_elapsed as f64 / 1e9);
        (tps_measured, tps_measured, incl, conn_elapsed as f64 / 1e6)
    };

    let statements = if cfg.per_statement {
        program
            .scripts
            .iter()
            .enumerate()
            .flat_map(|(si, s)| {
                let base = program.command_base[si];
                let per_cmd = &per_cmd;
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
    } else {
        Vec::new()
    };
    let script_results = program
        .scripts
        .iter()
        .zip(&per_script)
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
        .collect();

    let transport = cfg.conn.endpoint.transport().to_string();
    LoadResult {
        engine: Pg::NAME.into(),
        unit: Some(Pg::UNIT),
        // Failed transactions are not among the processed ones (pgbench).
        attempts: Some(n + rec.errors.total()),
        target: cfg.conn.target(),
        transport,
        started_unix_s: started
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        duration_s,
        connections: cfg.load.connections as u64,
        threads: threads as u64,
        keepalive: !cfg.connect_per_transaction,
        requests: n,
        in_flight: rec.in_flight,
        errors: rec.errors,
        rps: None,
        tps: Some(tps),
        bytes_read: 0,
        latency_us: rec.latency.summary(),
        hdr: rec.latency.encode().unwrap_or_default(),
        connect_us: rec.connect.as_ref().map(|l| l.summary()),
        first_byte_us: None,
        timeline: rec.timeline(duration_ns),
        generator_cpu_s: cpu.total_s(),
        generator_cpu_user_s: cpu.user.as_secs_f64(),
        generator_cpu_system_s: cpu.system.as_secs_f64(),
        generator_cpus: 0,
        status_codes: Default::default(),
        thread_rate: tare_engine::rate::summarize(&rec.rate_samples(duration_ns)),
        schedule: tare_engine::schedule::report(
            cfg.load.rate,
            cfg.load.arrivals,
            cfg.load.ramp,
            &rec,
            duration_ns,
            unsent,
        ),
        wakeups: Some(wakeups),
        connect_phase: None,
        pg: Some(PgDetails {
            query_mode: cfg.mode.name().into(),
            scripts: program
                .scripts
                .iter()
                .map(|s| format!("{}@{}", s.script.name, s.script.weight))
                .collect(),
            connect_per_transaction: cfg.connect_per_transaction,
            tps_excluding_connect: tps_excluding,
            connection_time_ms,
            failed_by_sqlstate_class: by_class,
            statements,
            failed,
            tps_including_connect: tps_including,
            scale,
            planned_duration_s: match cfg.length() {
                Length::Duration(d) => Some(d.as_secs_f64()),
                _ => None,
            },
            transactions_per_client: match cfg.length() {
                Length::TransactionsPerClient(t) => Some(t),
                _ => None,
            },
            aborted_clients: aborted,
            abort_error: abort_msg,
            first_failure: first_failure.filter(|_| failed > 0),
            server_version,
            script_results,
            max_tries: (cfg.max_tries != 1).then_some(cfg.max_tries),
            retried: counts.retried,
            retries: counts.retries,
            serialization_failures: counts.serialization,
            deadlock_failures: counts.deadlock,
            latency_limit_ms: cfg.latency_limit.map(|l| l.as_secs_f64() * 1e3),
            late: counts.late,
            skipped: counts.skipped,
        }),
        redis: None,
        mysql: None,
        net: None,
        metrics: Vec::new(),
        primary: None,
        tool: None,
        external: None,
        generators: Vec::new(),
        by_name: Vec::new(),
        tare_version: env!("CARGO_PKG_VERSION").into(),
    }
}
