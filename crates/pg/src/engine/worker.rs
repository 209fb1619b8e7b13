//! One worker thread: its clients, one wait (io_uring where the kernel
//! allows it, else a level-triggered epoll set), a timer heap for `\sleep`
//! and scheduled starts, and a recorder touched by this thread only.
//!
//! Per prepared-mode `select 1` transaction the loop costs one `send`
//! (Bind+Execute+Sync, prebuilt) and a share of one `io_uring_enter` (a
//! multishot receive has read the replies, BindComplete … ReadyForQuery,
//! which arrive together); with epoll, one `read` and a share of one
//! `epoll_wait`. Nothing is allocated.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io;
use std::sync::atomic::Ordering;

use tare_engine::uring::Io;
use tare_engine::window::Window;
use tare_engine::{Clock, Coalescer, RealtimeMap, Recorder};

use super::client::{Client, Phase};
use super::schedule::{ClosedLoop, Paced, Schedule};
use super::{CmdStat, LiveStats, ScriptStat, TxCounts};
use crate::config::PgConfig;
use crate::program::Program;
use crate::protocol;
use crate::script::expr::Expr;
use crate::script::random::Rng;
use crate::script::vars::VarId;
use crate::script::{CommandKind, SleepAmount};

/// What a worker hands back when it ends.
pub(crate) struct WorkerResult {
    pub rec: Recorder,
    pub per_cmd: Vec<CmdStat>,
    pub per_script: Vec<ScriptStat>,
    pub failed_by_class: BTreeMap<String, u64>,
    /// Sum of connection set-up times (all connections, including initial).
    pub conn_total_ns: u64,
    pub aborted: u64,
    pub abort_message: Option<String>,
    /// The first failed transaction's error, in the server's words.
    pub first_failure: Option<String>,
    pub counts: TxCounts,
    /// Clock reading at which this worker stopped measuring.
    pub end_ns: u64,
    /// Open loop: arrivals due before the run ended that never started.
    pub unsent: u64,
    pub wakeups: tare_record::WakeupReport,
}

/// The state of a worker shared by all its clients' transitions.
pub(crate) struct Ctx<'a> {
    pub program: &'a Program,
    pub cfg: &'a PgConfig,
    pub clock: Clock,
    pub io: Io,
    pub rec: Recorder,
    pub schedule: Box<dyn Schedule>,
    timers: BinaryHeap<Reverse<(u64, usize)>>,
    /// Transactions may start (false during the initial connection phase).
    pub running: bool,
    /// Clock reading at which the load began (the ramp's start).
    origin_ns: u64,
    /// Clock reading at which measurement begins (after the ramp): what
    /// happens before it is shown in the ramp timeline, not summarised.
    measure_from: u64,
    /// Transactions completed before `measure_from`, for the live displays.
    early: u64,
    pub limit: Option<u64>,
    pub per_cmd: Vec<CmdStat>,
    pub per_script: Vec<ScriptStat>,
    failed_by_class: BTreeMap<[u8; 2], u64>,
    pub conn_total_ns: u64,
    pub aborted: u64,
    pub abort_message: Option<String>,
    /// The first failed transaction's error, in the server's words
    /// (`ERROR: syntax error at or near "SELEC" (SQLSTATE 42601)`).
    pub first_failure: Option<String>,
    /// Clients that reached Done or Aborted.
    pub finished: usize,
    pub failed: u64,
    /// Latency sums of every completion (ramp included), for `-P` only.
    pub lat_sum_ns: u64,
    pub lat_sumsq_ms: f64,
    /// `--coalesce`: the pause before each wait, and its counts.
    pub coalescer: Coalescer,
    /// Replies are timed by the kernel's receive timestamps, mapped to the
    /// run's clock with `rx_map` (coalescing over TCP).
    pub rx_stamps: bool,
    pub rx_map: RealtimeMap,
    /// pgbench's per-thread generator of script choice (`ts_choose_rs`).
    pub choose_rng: Rng,
    pub counts: TxCounts,
    /// `-l`: this thread's log file (docs/pg.md, "Transaction logs").
    pub txlog: Option<super::txlog::TxLog>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        program: &'a Program,
        cfg: &'a PgConfig,
        clock: Clock,
        clients: usize,
    ) -> io::Result<Self> {
        let limit = match cfg.length() {
            crate::config::Length::TransactionsPerClient(n) => Some(n),
            crate::config::Length::Duration(_) => None,
        };
        let load = &cfg.load;
        let coalescer =
            Coalescer::for_worker(load.coalesce, &cfg.conn.endpoint, load.rate.is_some());
        Ok(Self {
            program,
            cfg,
            clock,
            io: Io::new(load.io, clients, 16 * 1024, coalescer.enabled(), &clock)?,
            rec: Recorder::new(0, 0, cfg.connect_per_transaction),
            // Until `begin`: no transaction starts, so no schedule is asked.
            schedule: Box::new(ClosedLoop::default()),
            timers: BinaryHeap::with_capacity(clients),
            running: false,
            origin_ns: 0,
            measure_from: 0,
            early: 0,
            limit,
            per_cmd: vec![CmdStat::default(); program.commands],
            per_script: vec![ScriptStat::default(); program.scripts.len()],
            failed_by_class: BTreeMap::new(),
            conn_total_ns: 0,
            aborted: 0,
            abort_message: None,
            first_failure: None,
            finished: 0,
            failed: 0,
            lat_sum_ns: 0,
            lat_sumsq_ms: 0.0,
            rx_stamps: coalescer.enabled(),
            coalescer,
            rx_map: RealtimeMap::new(&clock),
            choose_rng: Rng::new(0),
            counts: TxCounts::default(),
            txlog: None,
        })
    }

    /// Starts the load in `window`: the ramp (if any), then the warm-up,
    /// run until `measure_from`, where measurement and a fresh recorder's
    /// timeline begin. `thread` of `threads` picks this thread's share of
    /// the rate and its arrival seed.
    pub(crate) fn begin(&mut self, window: &Window, thread: usize, threads: usize) {
        let load = &self.cfg.load;
        let (origin_ns, ramp_ns) = (window.origin, window.ramp_ns);
        self.origin_ns = origin_ns;
        self.measure_from = window.measure_from;
        self.rec = window.recorder(self.cfg.connect_per_transaction);
        self.schedule = match load.rate {
            Some(rate) => Box::new(Paced(tare_engine::schedule::Schedule::new(
                rate / threads.max(1) as f64,
                load.arrivals,
                ramp_ns,
                origin_ns,
                0x7a7e_9000 + thread as u64,
            ))),
            None => Box::new(ClosedLoop {
                origin_ns,
                ramp_ns,
                clients: load.connections,
            }),
        };
        self.running = true;
    }

    /// After the ramp: completions and failures count in the summary.
    #[inline]
    pub(crate) fn measuring(&self, now: u64) -> bool {
        now >= self.measure_from
    }

    /// Arrivals due before `deadline` that never started, `clients` as the
    /// run left them: those no client took, and those a client held but
    /// had not started (its timer and the deadline struck together).
    pub(crate) fn unsent(&mut self, clients: &[Client], deadline: Option<u64>) -> u64 {
        let (Some(d), Some(_)) = (deadline, self.cfg.load.rate) else {
            return 0;
        };
        let held = clients
            .iter()
            .filter(|c| matches!(c.phase, Phase::Sleeping(_)))
            .filter(|c| c.pending_start.is_some_and(|t| t < d))
            .count() as u64;
        held + self.schedule.unsent(d)
    }

    pub(crate) fn into_result(self, end_ns: u64, in_flight: u64, unsent: u64) -> WorkerResult {
        let mut rec = self.rec;
        rec.in_flight = in_flight;
        WorkerResult {
            rec,
            per_cmd: self.per_cmd,
            per_script: self.per_script,
            failed_by_class: self
                .failed_by_class
                .into_iter()
                .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
                .collect(),
            conn_total_ns: self.conn_total_ns,
            aborted: self.aborted,
            abort_message: self.abort_message,
            first_failure: self.first_failure,
            counts: self.counts,
            end_ns,
            unsent,
            wakeups: tare_record::WakeupReport {
                io: self.io.name().into(),
                ..self.coalescer.report(self.rx_stamps)
            },
        }
    }

    /// The earliest pending timer.
    pub(crate) fn next_timer(&self) -> Option<u64> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    /// Wakes every client whose timer is due.
    pub(crate) fn fire_timers(&mut self, clients: &mut [Client], now: u64) {
        while let Some(Reverse((t, token))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            let c = &mut clients[token];
            if c.phase == Phase::Sleeping(t) {
                c.phase = if c.pending_start.is_some() {
                    Phase::Idle
                } else {
                    c.cmd += 1;
                    Phase::Exec
                };
                self.advance(c, token);
            }
        }
    }

    /// Publishes this thread's totals for the progress displays.
    pub(crate) fn publish(&self, live: &LiveStats) {
        live.board
            .publish(self.rec.requests + self.early, self.failed);
        let lat = live.lat;
        lat.lat_sum_ns.store(self.lat_sum_ns, Ordering::Relaxed);
        lat.lat_sumsq_ms
            .store(self.lat_sumsq_ms.to_bits(), Ordering::Relaxed);
        if live.progress {
            lat.lag_sum_ns.store(self.rec.lag_sum_ns, Ordering::Relaxed);
            lat.skipped.store(self.counts.skipped, Ordering::Relaxed);
            lat.retried.store(self.counts.retried, Ordering::Relaxed);
            lat.retries.store(self.counts.retries, Ordering::Relaxed);
        }
    }

    fn stop_new(&self, c: &Client) -> bool {
        self.limit.is_some_and(|n| c.done_txs >= n)
    }

    fn finish(&mut self, c: &mut Client, phase: Phase) {
        if let Some(s) = &c.sock {
            if phase == Phase::Done {
                let _ = s.write(&protocol::TERMINATE);
            }
        }
        self.close(c);
        c.phase = phase;
        self.finished += 1;
    }

    /// Stops a client for good after an error it cannot recover from.
    pub(crate) fn abort(&mut self, c: &mut Client, kind: AbortKind, why: &str) {
        match kind {
            AbortKind::Connect => self.rec.errors.connect += 1,
            AbortKind::Read => self.rec.errors.read += 1,
            AbortKind::Write => self.rec.errors.write += 1,
            AbortKind::Script => {}
        }
        self.aborted += 1;
        if self.abort_message.is_none() || self.cfg.print_aborts {
            let connecting = matches!(
                c.phase,
                Phase::Disconnected | Phase::Connecting | Phase::Starting
            );
            let command = self.program.scripts[c.script].script.commands.get(c.cmd);
            let what = match command.map(|x| (&x.kind, x.first_line.as_str())) {
                _ if connecting => "connection",
                Some((CommandKind::Sql(_), _)) => "SQL",
                // pgbench names a meta command by its word: (set), (shell).
                Some((_, line)) => line
                    .trim_start_matches('\\')
                    .split_whitespace()
                    .next()
                    .unwrap_or("meta"),
                None => "connection",
            };
            // pgbench prints a failed meta command's detail on a line of
            // its own before the abort; the record joins the two.
            let (detail, why) = match why.split_once(DETAIL) {
                Some((detail, why)) => (Some(detail), why),
                None => (None, why),
            };
            let mut message = match why.strip_prefix(WHOLE) {
                Some(whole) => format!("client {} aborted: {whole}", c.id),
                None if why.starts_with(RAW) => why[RAW.len()..].to_string(),
                None => format!(
                    "client {} aborted in command {} ({what}) of script {}; {why}",
                    c.id, c.cmd, c.script
                ),
            };
            if self.cfg.print_aborts {
                if let Some(d) = detail {
                    eprintln!("tare: error: {d}");
                }
                eprintln!("tare: error: {message}");
            }
            if let Some(d) = detail {
                message = format!("{message}: {d}");
            }
            self.abort_message.get_or_insert(message);
        }
        self.finish(c, Phase::Aborted);
    }

    /// pgbench chooses a client's next script by weight, drawing only
    /// when there is a choice.
    fn choose_script(&mut self, c: &mut Client) {
        let program = self.program;
        c.script = if program.scripts.len() > 1 {
            program.choose(self.choose_rng.uniform(0, program.total_weight as i64 - 1) as u64)
        } else {
            0
        };
        c.script_chosen = true;
    }

    /// A transaction of `c` starts `now`, due at `start`.
    fn start_transaction(&mut self, c: &mut Client, start: u64, now: u64) {
        c.tx_start = start;
        c.actual_start = now;
        c.script_chosen = false;
        c.cmd = 0;
        c.error = None;
        c.tries = 1;
        if self.cfg.max_tries != 1 {
            c.retry_rng = c.rng.clone();
        }
        if self.cfg.debug {
            eprintln!(
                "tare: client {} executing script \"{}\"",
                c.id, self.program.scripts[c.script].script.name
            );
        }
        c.phase = Phase::Exec;
    }

    /// `\set var expr` of `c` (timed with `-r`); `false`: the expression
    /// failed and the client aborted.
    fn set(&mut self, c: &mut Client, var: VarId, expr: &Expr) -> bool {
        let program = self.program;
        if self.cfg.debug {
            eprintln!(
                "tare: client {} executing \\set {}",
                c.id,
                program.vars.name(var)
            );
        }
        let t0 = if self.cfg.per_statement {
            self.clock.now_ns()
        } else {
            0
        };
        match super::meta::eval(expr, c, program) {
            Ok(v) => c.vars[var.0] = Some(v),
            Err(why) => {
                self.abort(c, AbortKind::Script, &why);
                return false;
            }
        }
        let t1 = if self.cfg.per_statement {
            self.clock.now_ns()
        } else {
            0
        };
        if self.cfg.per_statement && self.measuring(t1) {
            let s = &mut self.per_cmd[program.command_base[c.script] + c.cmd];
            s.sum_ns += t1.saturating_sub(t0);
            s.count += 1;
        }
        c.cmd += 1;
        true
    }

    /// `\sleep`: `c` sleeps on a timer (or aborts on an undefined
    /// variable).
    fn sleep(&mut self, c: &mut Client, amount: &SleepAmount, unit_ns: u64, token: usize) {
        let n = match amount {
            SleepAmount::Const(n) => *n,
            SleepAmount::Var(id) => match &c.vars[id.0] {
                Some(v) => atoi(&v.to_string()),
                None => {
                    return self.abort(
                        c,
                        AbortKind::Script,
                        &failed(
                            format!(
                                "sleep: undefined variable \"{}\"",
                                self.program.vars.name(*id)
                            ),
                            "execution of meta-command failed",
                        ),
                    )
                }
            },
        };
        let wake = sleep_until(self.clock.now_ns(), n, unit_ns);
        c.phase = Phase::Sleeping(wake);
        self.timers.push(Reverse((wake, token)));
    }

    pub(crate) fn advance(&mut self, c: &mut Client, token: usize) {
        let program = self.program;
        loop {
            match c.phase {
                Phase::Disconnected => {
                    if self.stop_new(c) {
                        return self.finish(c, Phase::Done);
                    }
                    return self.connect(c, token);
                }
                Phase::Idle => {
                    if !self.running {
                        return;
                    }
                    if self.stop_new(c) {
                        return self.finish(c, Phase::Done);
                    }
                    let now = self.clock.now_ns();
                    let start = match c.pending_start.take() {
                        Some(t) => t,
                        None => match self.schedule.next_start(c.id, now) {
                            Some(t) if t > now => {
                                c.pending_start = Some(t);
                                c.phase = Phase::Sleeping(t);
                                self.timers.push(Reverse((t, token)));
                                return;
                            }
                            Some(t) => t,
                            None => now,
                        },
                    };
                    // pgbench chooses the script first (drawing only when
                    // there is a choice), then skips late starts for it.
                    if !c.script_chosen {
                        self.choose_script(c);
                    }
                    // pgbench's latency limit under a rate: a start already
                    // later than the limit is skipped (counted, not run).
                    if let (Some(limit), Some(_)) = (self.cfg.latency_limit, self.cfg.load.rate) {
                        if now.saturating_sub(start) > limit.as_nanos() as u64 {
                            if self.measuring(start) {
                                self.counts.skipped += 1;
                                self.per_script[c.script].tx.skipped += 1;
                            }
                            if let Some(log) = self.txlog.as_mut() {
                                log.skipped(c.id, c.done_txs, c.script, start, now);
                            }
                            c.done_txs += 1;
                            continue;
                        }
                    }
                    // Open loop: how late this start is against its schedule
                    // (ramp starts are not part of the summary).
                    if self.cfg.load.rate.is_some() && self.measuring(start) {
                        self.rec.lag(start, now);
                    }
                    self.start_transaction(c, start, now);
                }
                Phase::Exec => {
                    let script = &program.scripts[c.script];
                    let Some(command) = script.script.commands.get(c.cmd) else {
                        return self.transaction_done(c, token);
                    };
                    match &command.kind {
                        CommandKind::Set { var, expr } => {
                            if !self.set(c, *var, expr) {
                                return;
                            }
                        }
                        CommandKind::Sleep { amount, unit_ns } => {
                            return self.sleep(c, amount, *unit_ns, token)
                        }
                        CommandKind::Sql(_) => return self.send_statement(c, token),
                        CommandKind::StartPipeline => {
                            if c.pipeline.is_some() {
                                let why = "already in pipeline mode";
                                return self.abort(c, AbortKind::Script, why);
                            }
                            c.pipeline = Some(Vec::new());
                            c.cmd += 1;
                        }
                        CommandKind::EndPipeline => return self.end_pipeline(c, token),
                        other => {
                            if let Err(why) = super::meta::run(other, c, program) {
                                return self.abort(c, AbortKind::Script, &why);
                            }
                        }
                    }
                }
                Phase::Connecting
                | Phase::Starting
                | Phase::Waiting
                | Phase::RollingBack
                | Phase::Sleeping(_)
                | Phase::Done
                | Phase::Aborted => return,
            }
        }
    }

    /// When the reply being handled arrived: the kernel's receive stamp
    /// of the read that brought it when stamps are on (never before `from`
    /// nor after now), else now.
    fn arrived(&self, c: &Client, from: u64) -> u64 {
        let now = self.clock.now_ns();
        match c.rx_ns.filter(|_| self.rx_stamps) {
            Some(t) => t.clamp(from.min(now), now),
            None => now,
        }
    }

    pub(super) fn statement_done(&mut self, c: &mut Client, token: usize, status: u8) {
        let program = self.program;
        if let (None, CommandKind::Sql(sql)) = (
            c.error,
            &program.scripts[c.script].script.commands[c.cmd].kind,
        ) {
            if let Some(g) = &sql.gset {
                let stored = c.results.finish(g, &mut c.vars, &program.vars);
                c.results.clear();
                if let Err(e) = stored {
                    // pgbench's words: no "aborted" in them.
                    let why = format!(
                        "{RAW}client {} script {} command {} query 0: {e}",
                        c.id, c.script, c.cmd
                    );
                    return self.abort(c, AbortKind::Script, &why);
                }
            }
        }
        let now = if self.cfg.per_statement {
            self.arrived(c, c.cmd_start)
        } else {
            0
        };
        // pgbench's `-r` latency is of the executions that succeeded (a
        // failed one, often a lock wait, counts in the failures column).
        if self.cfg.per_statement && c.error.is_none() && self.measuring(now) {
            let s = &mut self.per_cmd[self.program.command_base[c.script] + c.cmd];
            s.sum_ns += now.saturating_sub(c.cmd_start);
            s.count += 1;
        }
        if let Some(code) = c.error {
            if !retryable(code) && !self.cfg.continue_on_error {
                // pgbench 15: an SQL error other than a serialization
                // failure or a deadlock aborts the client.
                let text = c.error_text.take().unwrap_or_default();
                let why = format!(
                    "{RAW}client {} script {} aborted in command {} query 0: {}",
                    c.id, c.script, c.cmd, text
                );
                return self.abort(c, AbortKind::Script, &why);
            }
            if self.cfg.verbose_errors {
                eprintln!(
                    "tare: client {} got an error in command {} (SQL) of script {}; {}",
                    c.id,
                    c.cmd,
                    c.script,
                    c.error_text.take().unwrap_or_default()
                );
            }
            if status != b'I' {
                // Inside a transaction block: roll it back before the next one,
                // as pgbench 15 does after a failure it counts.
                c.wbuf.clear();
                protocol::query(&mut c.wbuf, |b| b.extend_from_slice(b"ROLLBACK"));
                c.phase = Phase::RollingBack;
                return self.flush(c, token);
            }
            return self.transaction_failed(c, token);
        }
        c.cmd += 1;
        c.phase = Phase::Exec;
        self.advance(c, token);
    }

    pub(super) fn transaction_failed(&mut self, c: &mut Client, token: usize) {
        let code = c.error.take().unwrap_or(*b"?????");
        let now = self.clock.now_ns();
        let max = self.cfg.max_tries;
        if retryable(code) && self.may_retry(c, now) {
            if self.cfg.verbose_errors {
                eprintln!(
                    "tare: client {} repeats the transaction after the error ({})",
                    c.id,
                    try_of(c.tries, max)
                );
            }
            if self.cfg.per_statement && self.measuring(now) {
                self.per_cmd[self.program.command_base[c.script] + c.cmd].retries += 1;
            }
            // pgbench's retry: the same script from its first command,
            // the generator as the first try found it, the same start.
            c.tries += 1;
            c.rng = c.retry_rng.clone();
            c.cmd = 0;
            c.phase = Phase::Exec;
            return self.advance(c, token);
        }
        if self.cfg.verbose_errors && retryable(code) {
            eprintln!(
                "tare: client {} ends the failed transaction ({})",
                c.id,
                try_of(c.tries, max)
            );
        }
        if self.measuring(now) {
            *self.failed_by_class.entry([code[0], code[1]]).or_insert(0) += 1;
            self.rec.errors.status += 1;
            self.failed += 1;
            let script = &mut self.per_script[c.script];
            script.failed += 1;
            match &code {
                b"40001" => {
                    self.counts.serialization += 1;
                    script.tx.serialization += 1;
                }
                b"40P01" => {
                    self.counts.deadlock += 1;
                    script.tx.deadlock += 1;
                }
                _ => {}
            }
            if self.cfg.per_statement {
                self.per_cmd[self.program.command_base[c.script] + c.cmd].failures += 1;
            }
            self.count_tries(c);
        }
        if let Some(log) = self.txlog.as_mut() {
            log.failed(c, code, now);
        }
        self.end_transaction(c, token);
    }

    /// pgbench's `doRetry`: tries left, and time left under a latency limit.
    fn may_retry(&self, c: &Client, now: u64) -> bool {
        let max = self.cfg.max_tries;
        if max != 0 && c.tries >= max {
            return false;
        }
        match self.cfg.latency_limit {
            Some(l) => now.saturating_sub(c.tx_start) <= l.as_nanos() as u64,
            None => true,
        }
    }

    fn count_tries(&mut self, c: &Client) {
        if c.tries > 1 {
            let retries = (c.tries - 1) as u64;
            self.counts.retried += 1;
            self.counts.retries += retries;
            let s = &mut self.per_script[c.script].tx;
            s.retried += 1;
            s.retries += retries;
        }
    }

    fn transaction_done(&mut self, c: &mut Client, token: usize) {
        let now = self.arrived(c, c.tx_start);
        let lat = now.saturating_sub(c.tx_start);
        self.coalescer.observe(lat);
        let ms = lat as f64 / 1e6;
        self.lat_sum_ns += lat;
        self.lat_sumsq_ms += ms * ms;
        if self.measuring(now) {
            self.rec.complete(now, lat);
            self.count_tries(c);
            if self
                .cfg
                .latency_limit
                .is_some_and(|l| lat > l.as_nanos() as u64)
            {
                self.counts.late += 1;
            }
            if let Some(u) = self.rec.uncorrected.as_mut() {
                u.record_ns(now.saturating_sub(c.actual_start));
            }
            let s = &mut self.per_script[c.script];
            s.count += 1;
            s.sum_ms += ms;
            s.sumsq_ms += ms * ms;
        } else {
            // The ramp: per second in the timeline, not in the summary.
            self.rec.complete_early(now.saturating_sub(self.origin_ns));
            self.early += 1;
        }
        if let Some(log) = self.txlog.as_mut() {
            log.done(c, now, lat);
        }
        // pgbench counts the transaction, then aborts the client.
        if c.pipeline.take().is_some() {
            let why = format!("{WHOLE}end of script reached with pipeline open");
            return self.abort(c, AbortKind::Script, &why);
        }
        if c.in_tx {
            let why =
                format!("{WHOLE}end of script reached without completing the last transaction");
            return self.abort(c, AbortKind::Script, &why);
        }
        self.end_transaction(c, token);
    }

    fn end_transaction(&mut self, c: &mut Client, token: usize) {
        c.done_txs += 1;
        if self.cfg.connect_per_transaction {
            if let Some(s) = &c.sock {
                let _ = s.write(&protocol::TERMINATE);
            }
            self.close(c);
            c.phase = Phase::Disconnected;
        } else {
            c.phase = Phase::Idle;
        }
        self.advance(c, token);
    }
}

/// An abort reason that is not about one command (pgbench's
/// "client N aborted: ..." form).
const WHOLE: &str = "\0";
/// An abort reason that is the whole message (pgbench's words for a
/// failed SQL command differ from those for a meta command).
const RAW: &str = "\u{1}";
/// Separates a failed meta command's detail from the abort's reason.
const DETAIL: char = '\u{2}';

/// The abort reason of a meta command that failed: pgbench prints
/// `detail` (`division by zero`) on its own line, then the abort ending
/// with `reason` (`evaluation of meta-command failed`).
pub(crate) fn failed(detail: impl std::fmt::Display, reason: &str) -> String {
    format!("{detail}{DETAIL}{reason}")
}

/// SQLSTATEs pgbench retries under `--max-tries` (its
/// `getSQLErrorStatus`): serialization failure, deadlock.
#[inline]
pub(crate) fn retryable(code: [u8; 5]) -> bool {
    &code == b"40001" || &code == b"40P01"
}

/// pgbench's `(try N/MAX)`; without a limit, `(try N)`.
fn try_of(tries: u32, max: u32) -> String {
    if max == 0 {
        format!("try {tries}")
    } else {
        format!("try {tries}/{max}")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AbortKind {
    Connect,
    Read,
    Write,
    Script,
}
/// When a `\sleep` of `n` units of `unit_ns` begun at `now` ends (run
/// clock). Saturating: a sleep past the end of time lasts the run instead
/// of wrapping to a time already past.
/// C's `atoi`, as pgbench reads a `\sleep :var`: the leading integer, 0
/// if none.
fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.wrapping_mul(10).wrapping_add((d - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}

fn sleep_until(now: u64, n: i64, unit_ns: u64) -> u64 {
    now.saturating_add((n.max(0) as u64).saturating_mul(unit_ns))
}

/// When a wait must end at the latest (run clock): the next timer or the
/// deadline, and never over 100 ms on, so progress and stop checks stay
/// timely.
pub(crate) fn wake_at(now: u64, timer: Option<u64>, deadline: Option<u64>) -> u64 {
    let mut until = now + 100_000_000;
    if let Some(t) = timer {
        until = until.min(t);
    }
    if let Some(d) = deadline {
        until = until.min(d);
    }
    until
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (found reading the script's run-time path for fuzzing):
    /// `now + n * unit` was added unchecked, so `\sleep 9223372036854775807 s`
    /// panicked in a debug build and in a release build wrapped the wake-up
    /// to a time already past (no sleep at all).
    #[test]
    fn a_sleep_past_the_end_of_time_saturates_instead_of_wrapping() {
        assert_eq!(sleep_until(5, 2, 1_000), 2_005);
        assert_eq!(sleep_until(5, -3, 1_000), 5);
        assert_eq!(sleep_until(1 << 40, i64::MAX, 1_000_000_000), u64::MAX);
    }
}
