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
//! Threads connect their clients first; all threads then wait at the start
//! gate ([`tare_engine::workers::run_gated`]) and the main thread fixes one
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
use std::sync::{Arc, Mutex};

use tare_engine::cpu::CpuTime;
use tare_engine::progress::Board;
use tare_engine::window::Window;
use tare_engine::workers::Ticket;
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
    pub board: Arc<Board>,
    pub lat: Arc<Vec<LatCounters>>,
    /// The first set-up failure (the run is then called off at the gate).
    pub failure: Mutex<Option<crate::PgError>>,
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

/// The body of worker thread `index`, owning clients `ids`: connects them,
/// waits at the start gate, runs. `None` when the run was called off.
pub(crate) fn run_worker(
    index: usize,
    ids: Range<usize>,
    shared: &Shared,
    ticket: Ticket<'_>,
) -> Option<WorkerOutput> {
    let cpu0 = CpuTime::thread();
    let cfg = &*shared.cfg;
    let program = &*shared.program;
    let setup = (|| -> Result<(Ctx, Vec<Client>, u64), crate::PgError> {
        if let Some(ns) = &cfg.load.netns {
            tare_engine::netns::enter(ns).map_err(|e| crate::PgError::io("worker thread", e))?;
        }
        let n = ids.len();
        let mut ctx = Ctx::new(program, cfg, shared.clock, n).map_err(|e| {
            crate::PgError::io("setting up the worker's wait (epoll or io_uring)", e)
        })?;
        ctx.choose_rng = Rng::new(shared.seeds.threads[index].0);
        if cfg.log.is_some() {
            let log = txlog::TxLog::open(cfg, index, shared.seeds.threads[index].2)
                .map_err(crate::PgError::Config)?;
            ctx.txlog = Some(log);
        }
        let mut clients: Vec<Client> = ids
            .clone()
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
        Ok((ctx, clients, shared.clock.now_ns() - t0))
    })();
    let (mut ctx, mut clients, conn_elapsed_ns) = match setup {
        Ok(s) => s,
        Err(e) => {
            let mut slot = shared.failure.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(e);
            ticket.fail();
            return None;
        }
    };
    let start = ticket.ready()?;
    let window = Window::new(&cfg.load, start);
    let deadline = window.deadline;
    // Timed starts and pauses should end on time, not 50 µs late.
    if cfg.load.rate.is_some() || ctx.coalescer.enabled() {
        tare_engine::schedule::tighten_timer_slack();
    }
    ctx.begin(&window, index, shared.board.threads.len());
    if let Some(log) = ctx.txlog.as_mut() {
        let unix_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let now = shared.clock.now_ns();
        log.start(start, unix_us - (now.saturating_sub(start) / 1000) as i64);
    }
    let live = LiveStats {
        board: &shared.board.threads[index],
        lat: &shared.lat[index],
        progress: shared.cfg.progress_interval.is_some(),
    };
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
        ctx.fire_timers(&mut clients, now);
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
        match ctx.wait(&mut clients, now, until, &mut ready, &mut events) {
            Ok(n) => last_batch = n,
            Err(e) => {
                let io = ctx.io.name();
                ctx.abort_message
                    .get_or_insert(format!("waiting for the server ({io}) failed: {e}"));
                break;
            }
        }
        ctx.publish(&live);
    }
    ctx.publish(&live);
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
    Some(WorkerOutput {
        result: ctx.into_result(end_ns, in_flight, unsent),
        cpu: CpuTime::thread().since(&cpu0),
        conn_elapsed_ns,
    })
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
