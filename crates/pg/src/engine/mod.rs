//! The engine loop: worker threads, each driving its share of the clients
//! through one epoll set.
//!
//! - [`client`]: one client's connection, buffers and place in its script.
//! - [`worker`]: the state transitions and the per-thread statistics.
//! - [`wire`]: connecting, sending statements and reading replies.
//! - [`schedule`]: when a client may start its next transaction (closed
//!   loop, ramp, open loop).
//! - [`txlog`]: `-l`, pgbench's per-thread transaction log.
//!
//! Threads connect their clients first ([`connect`]); all threads then
//! wait at the start gate of the measured window every engine shares
//! ([`tare_engine::window::measure`]) and the main thread fixes one
//! common start time, so every recorder's timeline is aligned and the
//! initial connection time is kept apart from the measured period, as
//! pgbench keeps it. A thread that cannot connect (or dies) before the gate
//! calls the run off. A `--ramp`, then a `--warmup`, follow that start
//! time; measurement begins when they end.

pub(crate) mod client;
pub(crate) mod gset;
pub(crate) mod meta;
pub(crate) mod schedule;
pub(crate) mod txlog;
pub(crate) mod wire;
pub(crate) mod worker;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tare_engine::cpu::CpuTime;
use tare_engine::window::Window;
use tare_engine::Clock;

use crate::config::PgConfig;
use crate::program::Program;
use crate::script::random::Rng;
use client::{Client, Phase};
use worker::{wake_at, Ctx, WorkerResult};

/// Per-command totals for `-r`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CmdStat {
    pub sum_ns: u64,
    pub count: u64,
    /// Transactions that failed here after their last try.
    pub failures: u64,
    /// Retries after an error here (`--max-tries`).
    pub retries: u64,
}

/// Per-script totals (pgbench's per-script report lines).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ScriptStat {
    pub count: u64,
    pub failed: u64,
    pub sum_ms: f64,
    pub sumsq_ms: f64,
    /// This script's retries, failures by kind and skipped starts
    /// (`late` is kept for the whole run only).
    pub tx: TxCounts,
}

/// pgbench's counts beyond successes and failures: retries
/// (`--max-tries`), failures by kind (`--failures-detailed`), transactions
/// late or skipped (`--latency-limit`). Measured period only.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxCounts {
    /// Transactions tried more than once (succeeded or failed at last).
    pub retried: u64,
    /// Tries beyond the first, in all.
    pub retries: u64,
    pub serialization: u64,
    pub deadlock: u64,
    /// Successful transactions above the latency limit.
    pub late: u64,
    /// Open loop with a latency limit: starts already late, not run.
    pub skipped: u64,
}

impl TxCounts {
    pub(crate) fn add(&mut self, o: &TxCounts) {
        self.retried += o.retried;
        self.retries += o.retries;
        self.serialization += o.serialization;
        self.deadlock += o.deadlock;
        self.late += o.late;
        self.skipped += o.skipped;
    }
}

/// Latency sums a `-P` reporter reads, one cache line per thread.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct LatCounters {
    pub lat_sum_ns: AtomicU64,
    /// f64 bits of the sum of squared latencies in ms².
    pub lat_sumsq_ms: AtomicU64,
    /// The open loop's schedule lag, summed (pgbench's `lag` field).
    pub lag_sum_ns: AtomicU64,
    /// `TxCounts`' `skipped`, `retried` and `retries` so far.
    pub skipped: AtomicU64,
    pub retried: AtomicU64,
    pub retries: AtomicU64,
}

/// What a worker publishes while it runs.
pub(crate) struct LiveStats<'a> {
    pub board: &'a tare_engine::progress::Counters,
    pub lat: &'a LatCounters,
    /// `-P` is on: publish the lag and retry counts too.
    pub progress: bool,
}

/// Everything the threads share.
pub(crate) struct Shared {
    pub program: Arc<Program>,
    pub cfg: Arc<PgConfig>,
    pub clock: Clock,
    pub lat: Arc<Vec<LatCounters>>,
    /// pgbench's seeds for the clients' and threads' generators.
    pub seeds: crate::script::random::Seeds,
    /// Set from outside (Ctrl-C): stop now and report what was measured.
    pub stop: Arc<AtomicBool>,
}

pub(crate) struct WorkerOutput {
    pub result: WorkerResult,
    pub cpu: CpuTime,
    /// Time this thread took to open its initial connections.
    pub conn_elapsed_ns: u64,
}

impl WorkerOutput {
    /// Adds another worker's output to this one: counts summed, the run
    /// ending with the last worker, connecting as long as the slowest.
    pub(crate) fn merge(&mut self, o: WorkerOutput) {
        let (a, b) = (&mut self.result, o.result);
        a.rec.merge(&b.rec);
        for (a, b) in a.per_cmd.iter_mut().zip(&b.per_cmd) {
            a.sum_ns += b.sum_ns;
            a.count += b.count;
            a.failures += b.failures;
            a.retries += b.retries;
        }
        for (a, b) in a.per_script.iter_mut().zip(&b.per_script) {
            a.count += b.count;
            a.failed += b.failed;
            a.sum_ms += b.sum_ms;
            a.sumsq_ms += b.sumsq_ms;
            a.tx.add(&b.tx);
        }
        for (k, v) in b.failed_by_class {
            *a.failed_by_class.entry(k).or_insert(0) += v;
        }
        a.conn_total_ns += b.conn_total_ns;
        a.aborted += b.aborted;
        a.abort_message = a.abort_message.take().or(b.abort_message);
        a.first_failure = a.first_failure.take().or(b.first_failure);
        a.counts.add(&b.counts);
        a.end_ns = a.end_ns.max(b.end_ns);
        a.unsent += b.unsent;
        a.wakeups.add(&b.wakeups);
        self.cpu.add(&o.cpu);
        self.conn_elapsed_ns = self.conn_elapsed_ns.max(o.conn_elapsed_ns);
    }
}

/// A worker thread's clients, connected before the start gate.
pub(crate) struct Connected<'a> {
    index: usize,
    ctx: Ctx<'a>,
    clients: Vec<Client>,
    conn_elapsed_ns: u64,
    cpu0: CpuTime,
}

/// Worker thread `index` (already in the run's network namespace) sets
/// up its wait and its transaction log and connects clients `ids` (with
/// `-C`, each connects per transaction instead).
pub(crate) fn connect(
    index: usize,
    ids: Range<usize>,
    shared: &Shared,
) -> Result<Connected<'_>, crate::PgError> {
    let cpu0 = CpuTime::thread();
    let cfg = &*shared.cfg;
    let program = &*shared.program;
    let n = ids.len();
    let mut ctx = Ctx::new(program, cfg, shared.clock, n)
        .map_err(|e| crate::PgError::io("setting up the worker's wait (epoll or io_uring)", e))?;
    ctx.choose_rng = Rng::new(shared.seeds.threads[index].0);
    if cfg.log.is_some() {
        let log = txlog::TxLog::open(cfg, index, shared.seeds.threads[index].2)
            .map_err(crate::PgError::Config)?;
        ctx.txlog = Some(log);
    }
    let mut clients: Vec<Client> = ids
        .enumerate()
        .map(|(slot, id)| {
            let mut vars = program.initial.clone();
            vars[program.client_id.0] = Some(crate::script::expr::Value::Int(id as i64));
            let seed = shared.seeds.clients[id];
            Client::new(id, slot, vars, Rng::new(seed), program.statements)
        })
        .collect();
    let t0 = shared.clock.now_ns();
    if !cfg.connect_per_transaction {
        connect_all(&mut ctx, &mut clients)?;
    }
    Ok(Connected {
        index,
        ctx,
        clients,
        conn_elapsed_ns: shared.clock.now_ns() - t0,
        cpu0,
    })
}

/// Runs a connected worker over its measured `window`, publishing its
/// counts on `board`.
pub(crate) fn run_worker(
    w: Connected<'_>,
    window: &Window,
    board: &tare_engine::progress::Counters,
    shared: &Shared,
) -> WorkerOutput {
    let Connected {
        index,
        mut ctx,
        mut clients,
        conn_elapsed_ns,
        cpu0,
    } = w;
    let cfg = &*shared.cfg;
    let start = window.origin;
    // Timed starts and pauses should end on time, not 50 µs late.
    if cfg.load.rate.is_some() || ctx.coalescer.enabled() {
        tare_engine::schedule::tighten_timer_slack();
    }
    ctx.begin(window, index, cfg.load.threads);
    if let Some(log) = ctx.txlog.as_mut() {
        let unix_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let now = shared.clock.now_ns();
        log.start(start, unix_us - (now.saturating_sub(start) / 1000) as i64);
    }
    let live = LiveStats {
        board,
        lat: &shared.lat[index],
        progress: shared.cfg.progress_interval.is_some(),
    };
    let now = drive(&mut ctx, &mut clients, window.deadline, &live, shared);
    let deadline = window.deadline;
    let end_ns = deadline.map_or(now, |d| now.min(d));
    let in_flight = clients.iter().filter(|c| c.in_flight()).count() as u64;
    // Due before the end of this run: the deadline, or the moment a stop
    // (Ctrl-C) ended it.
    let unsent = ctx.unsent(&clients, deadline.map(|_| end_ns));
    drop(clients);
    if let Some(log) = ctx.txlog.as_mut() {
        log.finish();
        if let Some(e) = &log.error {
            eprintln!("tare: could not write the transaction log: {e}");
        }
    }
    WorkerOutput {
        result: ctx.into_result(end_ns, in_flight, unsent),
        cpu: CpuTime::thread().since(&cpu0),
        conn_elapsed_ns,
    }
}

/// The worker's loop: its clients through their scripts until the
/// `deadline`, the end of every client or a stop; when it stopped.
fn drive(
    ctx: &mut Ctx<'_>,
    clients: &mut [Client],
    deadline: Option<u64>,
    live: &LiveStats<'_>,
    shared: &Shared,
) -> u64 {
    for (i, c) in clients.iter_mut().enumerate() {
        ctx.advance(c, i);
    }
    let total = clients.len();
    let mut ready = Vec::with_capacity(total.max(1));
    let mut events = Vec::with_capacity(total.max(1));
    let mut now;
    let mut last_batch = 0;
    let mut next_remap = 0;
    loop {
        now = shared.clock.now_ns();
        if deadline.is_some_and(|d| now >= d)
            || ctx.finished == total
            || shared.stop.load(Ordering::Relaxed)
        {
            break;
        }
        ctx.fire_timers(clients, now);
        if ctx.finished == total {
            break;
        }
        if ctx.rx_stamps && now >= next_remap {
            // Keeps the stamps' realtime-to-run-clock mapping fresh.
            ctx.rx_map.refresh(&shared.clock);
            next_remap = now + 10_000_000;
        }
        let until = wake_at(now, ctx.next_timer(), deadline);
        let measuring = ctx.measuring(now);
        if ctx.coalescer.before_wait(
            last_batch,
            total - ctx.finished,
            until.saturating_sub(now),
            measuring,
        ) {
            now = shared.clock.now_ns();
        }
        match ctx.wait(clients, now, until, &mut ready, &mut events) {
            Ok(n) => last_batch = n,
            Err(e) => {
                let io = ctx.io.name();
                ctx.abort_message
                    .get_or_insert(format!("waiting for the server ({io}) failed: {e}"));
                break;
            }
        }
        ctx.publish(live);
    }
    ctx.publish(live);
    now
}

/// Opens every client's connection before the measured period, failing the
/// whole run on the first refusal (pgbench exits there too).
fn connect_all(ctx: &mut Ctx, clients: &mut [Client]) -> Result<(), crate::PgError> {
    for (i, c) in clients.iter_mut().enumerate() {
        ctx.advance(c, i);
    }
    let limit = ctx.clock.now_ns() + ctx.cfg.load.timeout.as_nanos() as u64;
    let mut ready = Vec::with_capacity(clients.len().max(1));
    let mut events = Vec::with_capacity(clients.len().max(1));
    loop {
        if let Some(msg) = ctx.abort_message.take() {
            return Err(crate::PgError::Config(
                msg.split_once("; ")
                    .map_or(msg.clone(), |(_, why)| why.to_string()),
            ));
        }
        if clients.iter().all(|c| c.phase == Phase::Idle) {
            return Ok(());
        }
        let now = ctx.clock.now_ns();
        if now >= limit {
            return Err(crate::PgError::Config(format!(
                "connection to server at {} timed out after {:?}",
                ctx.cfg.conn.display_server(),
                ctx.cfg.load.timeout
            )));
        }
        let until = wake_at(now, None, Some(limit));
        ctx.wait(clients, now, until, &mut ready, &mut events)
            .map_err(|e| crate::PgError::io("waiting for the server", e))?;
    }
}
