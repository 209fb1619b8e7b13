//! One worker thread: its clients, one level-triggered epoll set, a timer
//! heap for `\sleep` and scheduled starts, and a recorder touched by this
//! thread only.
//!
//! Per prepared-mode `select 1` transaction the loop costs one `send`
//! (Bind+Execute+Sync, prebuilt), one `read` (BindComplete … ReadyForQuery
//! arrive together) and a share of one `epoll_wait`; nothing is allocated.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tare_engine::poller::{Interest, Poller, Ready};
use tare_engine::{Clock, Recorder};

use super::client::{Client, Phase};
use super::schedule::Schedule;
use super::{CmdStat, LiveStats, ScriptStat};
use crate::config::{PgConfig, QueryMode};
use crate::program::Program;
use crate::protocol::{self, tag};
use crate::script::expr::Value;
use crate::script::{CommandKind, Piece, SleepAmount};
use crate::startup::Progress;

/// What a worker hands back when it ends.
pub struct WorkerResult {
    pub rec: Recorder,
    pub per_cmd: Vec<CmdStat>,
    pub per_script: Vec<ScriptStat>,
    pub failed_by_class: BTreeMap<String, u64>,
    /// Sum of connection set-up times (all connections, including initial).
    pub conn_total_ns: u64,
    pub connections: u64,
    pub aborted: u64,
    pub abort_message: Option<String>,
    /// Clock reading at which this worker stopped measuring.
    pub end_ns: u64,
}

/// The state of a worker shared by all its clients' transitions.
pub struct Ctx<'a> {
    pub program: &'a Program,
    pub cfg: &'a PgConfig,
    pub clock: Clock,
    pub poller: Poller,
    pub rec: Recorder,
    pub schedule: Box<dyn Schedule>,
    timers: BinaryHeap<Reverse<(u64, usize)>>,
    /// Transactions may start (false during the initial connection phase).
    pub running: bool,
    pub limit: Option<u64>,
    pub per_cmd: Vec<CmdStat>,
    pub per_script: Vec<ScriptStat>,
    failed_by_class: BTreeMap<[u8; 2], u64>,
    pub conn_total_ns: u64,
    pub connections: u64,
    pub aborted: u64,
    pub abort_message: Option<String>,
    /// Clients that reached Done or Aborted.
    pub finished: usize,
    pub failed: u64,
    pub lat_sum_ns: u64,
    pub lat_sumsq_ms: f64,
}

impl<'a> Ctx<'a> {
    pub fn new(
        program: &'a Program,
        cfg: &'a PgConfig,
        clock: Clock,
        clients: usize,
        schedule: Box<dyn Schedule>,
    ) -> io::Result<Self> {
        let limit = match cfg.length {
            crate::config::Length::TransactionsPerClient(n) => Some(n),
            crate::config::Length::Duration(_) => None,
        };
        Ok(Self {
            program,
            cfg,
            clock,
            poller: Poller::new(clients.max(1))?,
            rec: Recorder::new(0, 0, cfg.connect_per_transaction),
            schedule,
            timers: BinaryHeap::with_capacity(clients),
            running: false,
            limit,
            per_cmd: vec![CmdStat::default(); program.commands],
            per_script: vec![ScriptStat::default(); program.scripts.len()],
            failed_by_class: BTreeMap::new(),
            conn_total_ns: 0,
            connections: 0,
            aborted: 0,
            abort_message: None,
            finished: 0,
            failed: 0,
            lat_sum_ns: 0,
            lat_sumsq_ms: 0.0,
        })
    }

    /// Starts measuring: a fresh recorder whose timeline begins at `start_ns`.
    pub fn begin(&mut self, start_ns: u64, expected_ns: u64, thread: usize) {
        self.rec = Recorder::new(start_ns, expected_ns, self.cfg.connect_per_transaction);
        if let Some(rate) = self.cfg.rate {
            let per_thread = rate / self.cfg.threads.max(1) as f64;
            let seed = 0x7a7e_9000 + thread as u64;
            self.schedule = Box::new(super::schedule::Paced(
                tare_engine::schedule::Schedule::new(
                    per_thread,
                    self.cfg.arrivals,
                    0,
                    start_ns,
                    seed,
                ),
            ));
            self.rec.uncorrected = Some(tare_record::Latency::new());
        }
        self.running = true;
    }

    pub fn into_result(self, end_ns: u64, in_flight: u64) -> WorkerResult {
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
            connections: self.connections,
            aborted: self.aborted,
            abort_message: self.abort_message,
            end_ns,
        }
    }

    /// The earliest pending timer.
    pub fn next_timer(&self) -> Option<u64> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    /// Wakes every client whose timer is due.
    pub fn fire_timers(&mut self, clients: &mut [Client], now: u64) {
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
    pub fn publish(&self, live: &LiveStats) {
        live.board.publish(self.rec.requests, self.failed);
        live.lat_sum_ns.store(self.lat_sum_ns, Ordering::Relaxed);
        live.lat_sumsq_ms
            .store(self.lat_sumsq_ms.to_bits(), Ordering::Relaxed);
    }

    /// Handles one readiness event for client `token`.
    pub fn on_event(&mut self, clients: &mut [Client], r: Ready) {
        let token = r.token as usize;
        let c = &mut clients[token];
        if r.writable || (r.hangup && c.phase == Phase::Connecting) {
            self.on_writable(c, token);
        }
        if (r.readable || r.hangup) && c.sock.is_some() && c.phase != Phase::Connecting {
            self.on_readable(c, token);
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
        c.disconnect();
        c.phase = phase;
        self.finished += 1;
    }

    /// Stops a client for good after an error it cannot recover from.
    pub fn abort(&mut self, c: &mut Client, kind: AbortKind, why: &str) {
        match kind {
            AbortKind::Connect => self.rec.errors.connect += 1,
            AbortKind::Read => self.rec.errors.read += 1,
            AbortKind::Write => self.rec.errors.write += 1,
            AbortKind::Script => {}
        }
        self.aborted += 1;
        if self.abort_message.is_none() {
            let connecting = matches!(
                c.phase,
                Phase::Disconnected | Phase::Connecting | Phase::Starting
            );
            let what = match self.program.scripts[c.script]
                .script
                .commands
                .get(c.cmd)
                .map(|x| &x.kind)
            {
                _ if connecting => "connection",
                Some(CommandKind::Sql(_)) => "SQL",
                Some(_) => "meta",
                None => "connection",
            };
            self.abort_message = Some(format!(
                "client {} aborted in command {} ({what}) of script {}; {why}",
                c.id, c.cmd, c.script
            ));
        }
        self.finish(c, Phase::Aborted);
    }

    fn connect(&mut self, c: &mut Client, token: usize) {
        c.conn_start = self.clock.now_ns();
        match self.cfg.conn.endpoint.connect() {
            Ok(sock) => {
                if let Err(e) = self.poller.add(sock.fd(), token as u64, Interest::Write) {
                    return self.abort(c, AbortKind::Connect, &format!("epoll: {e}"));
                }
                c.sock = Some(sock);
                c.want_write = true;
                c.phase = Phase::Connecting;
            }
            Err(e) => self.abort(
                c,
                AbortKind::Connect,
                &format!(
                    "connection to server at {} failed: {e}",
                    self.cfg.conn.display_server()
                ),
            ),
        }
    }

    fn on_writable(&mut self, c: &mut Client, token: usize) {
        if c.phase == Phase::Connecting {
            let err = c.sock.as_ref().map(|s| s.take_error());
            match err {
                Some(Ok(None)) => {}
                Some(Ok(Some(e))) | Some(Err(e)) => {
                    return self.abort(
                        c,
                        AbortKind::Connect,
                        &format!(
                            "connection to server at {} failed: {e}",
                            self.cfg.conn.display_server()
                        ),
                    );
                }
                None => return,
            }
            c.phase = Phase::Starting;
            c.wbuf.clear();
            crate::startup::Handshake::startup(&self.cfg.conn, &mut c.wbuf);
        }
        self.flush(c, token);
    }

    /// Sends `wbuf`; arms `EPOLLOUT` only while a write is unfinished.
    fn flush(&mut self, c: &mut Client, token: usize) {
        match c.send_pending() {
            Ok(done) => {
                if done == c.want_write {
                    c.want_write = !done;
                    let interest = if done {
                        Interest::Read
                    } else {
                        Interest::ReadWrite
                    };
                    let fd = c.sock.as_ref().map(|s| s.fd()).unwrap_or(-1);
                    if let Err(e) = self.poller.modify(fd, token as u64, interest) {
                        self.abort(c, AbortKind::Write, &format!("epoll: {e}"));
                    }
                }
            }
            Err(e) => self.abort(
                c,
                AbortKind::Write,
                &format!("could not send data to server: {e}"),
            ),
        }
    }

    fn on_readable(&mut self, c: &mut Client, token: usize) {
        match c.fill() {
            Ok(0) => {
                return self.abort(c, AbortKind::Read, "server closed the connection unexpectedly (perhaps the backend died while processing)");
            }
            Ok(_) => {}
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                return
            }
            Err(e) => {
                return self.abort(
                    c,
                    AbortKind::Read,
                    &format!("could not receive data from server: {e}"),
                )
            }
        }
        let mut pos = 0;
        let epoch = c.epoch;
        while c.epoch == epoch {
            let (msg_tag, start, end) = {
                let mut f = protocol::Frames::new(&c.rbuf[pos..c.rlen]);
                match f.next_frame() {
                    Ok(Some((t, body))) => (t, pos + 5, pos + 5 + body.len()),
                    Ok(None) => break,
                    Err(e) => return self.abort(c, AbortKind::Read, &e.to_string()),
                }
            };
            pos = end;
            match c.phase {
                Phase::Starting => {
                    let body = c.rbuf[start..end].to_vec();
                    let (params, mut out) = (&self.cfg.conn, std::mem::take(&mut c.wbuf));
                    let step = c.handshake.on_message(params, msg_tag, &body, &mut out);
                    c.wbuf = out;
                    match step {
                        Err(e) => return self.abort(c, AbortKind::Connect, &e.to_string()),
                        Ok(Progress::Continue) => {
                            if !c.wbuf.is_empty() {
                                self.flush(c, token);
                            }
                        }
                        Ok(Progress::Ready) => self.connected(c, token),
                    }
                }
                Phase::Waiting | Phase::RollingBack => match msg_tag {
                    tag::ERROR if c.error.is_none() => {
                        c.error = Some(protocol::sqlstate(&c.rbuf[start..end]))
                    }
                    tag::READY => {
                        let status = c.rbuf.get(start).copied().unwrap_or(b'I');
                        if c.phase == Phase::Waiting {
                            self.statement_done(c, token, status);
                        } else {
                            self.transaction_failed(c, token);
                        }
                    }
                    _ => {}
                },
                // Notices and parameter changes between statements.
                _ => {}
            }
        }
        if c.epoch == epoch {
            c.rbuf.copy_within(pos..c.rlen, 0);
            c.rlen -= pos;
        }
    }

    fn connected(&mut self, c: &mut Client, token: usize) {
        let now = self.clock.now_ns();
        let took = now.saturating_sub(c.conn_start);
        self.conn_total_ns += took;
        self.connections += 1;
        if self.running {
            if let Some(h) = self.rec.connect.as_mut() {
                h.record_ns(took);
            }
        }
        c.phase = Phase::Idle;
        self.advance(c, token);
    }

    /// Moves a client forward until it waits for the server, a timer or the end.
    pub fn advance(&mut self, c: &mut Client, token: usize) {
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
                    if self.cfg.rate.is_some() {
                        self.rec.lag(start, now);
                    }
                    c.tx_start = start;
                    c.actual_start = now;
                    c.script =
                        program.choose(c.rng.uniform(0, program.total_weight as i64 - 1) as u64);
                    c.cmd = 0;
                    c.error = None;
                    c.phase = Phase::Exec;
                }
                Phase::Exec => {
                    let script = &program.scripts[c.script];
                    let Some(command) = script.script.commands.get(c.cmd) else {
                        return self.transaction_done(c, token);
                    };
                    match &command.kind {
                        CommandKind::Set { var, expr } => {
                            let t0 = if self.cfg.per_statement {
                                self.clock.now_ns()
                            } else {
                                0
                            };
                            match expr.eval(&c.vars, &program.vars, &mut c.rng) {
                                Ok(v) => c.vars[var.0] = Some(v),
                                Err(e) => {
                                    return self.abort(
                                        c,
                                        AbortKind::Script,
                                        &format!("evaluation of meta-command failed: {e}"),
                                    )
                                }
                            }
                            if self.cfg.per_statement {
                                let s = &mut self.per_cmd[program.command_base[c.script] + c.cmd];
                                s.sum_ns += self.clock.now_ns().saturating_sub(t0);
                                s.count += 1;
                            }
                            c.cmd += 1;
                        }
                        CommandKind::Sleep { amount, unit_ns } => {
                            let n = match amount {
                                SleepAmount::Const(n) => *n,
                                SleepAmount::Var(id) => match c.vars[id.0]
                                    .as_ref()
                                    .map(|v| v.to_string().trim().parse::<i64>())
                                {
                                    Some(Ok(n)) => n,
                                    _ => {
                                        return self.abort(
                                            c,
                                            AbortKind::Script,
                                            &format!(
                                                "\\sleep: variable \"{}\" is not an integer",
                                                program.vars.name(*id)
                                            ),
                                        )
                                    }
                                },
                            };
                            let wake =
                                self.clock.now_ns() + (n.max(0) as u64).saturating_mul(*unit_ns);
                            c.phase = Phase::Sleeping(wake);
                            self.timers.push(Reverse((wake, token)));
                            return;
                        }
                        CommandKind::Sql(_) => return self.send_statement(c, token),
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

    fn send_statement(&mut self, c: &mut Client, token: usize) {
        let program = self.program;
        let CommandKind::Sql(sql) = &program.scripts[c.script].script.commands[c.cmd].kind else {
            return;
        };
        let stmt = program.scripts[c.script].stmts[c.cmd]
            .as_ref()
            .expect("every SQL command has prebuilt messages");
        c.wbuf.clear();
        match program.mode {
            QueryMode::Simple => {
                let (vars, text) = (&c.vars, sql.text.as_bytes());
                protocol::query(&mut c.wbuf, |b| {
                    for piece in &sql.pieces {
                        match piece {
                            Piece::Lit(r) => b.extend_from_slice(&text[r.clone()]),
                            Piece::Var(id, r) => match &vars[id.0] {
                                Some(v) => push_value(b, v),
                                None => b.extend_from_slice(&text[r.clone()]),
                            },
                        }
                    }
                });
            }
            QueryMode::Extended | QueryMode::Prepared => {
                if let Some(id) = sql.params.iter().find(|id| c.vars[id.0].is_none()) {
                    let why = format!("undefined variable \"{}\"", program.vars.name(*id));
                    return self.abort(c, AbortKind::Script, &why);
                }
                if program.mode == QueryMode::Prepared && !c.prepared[stmt.slot] {
                    c.wbuf.extend_from_slice(&stmt.parse);
                    c.prepared[stmt.slot] = true;
                }
                match &stmt.fixed {
                    Some(bytes) => c.wbuf.extend_from_slice(bytes),
                    None => {
                        if program.mode == QueryMode::Extended {
                            c.wbuf.extend_from_slice(&stmt.parse);
                        }
                        let vars = &c.vars;
                        protocol::bind(&mut c.wbuf, &stmt.name, sql.params.len(), |i, b| {
                            if let Some(v) = &vars[sql.params[i].0] {
                                push_value(b, v);
                            }
                        });
                        c.wbuf.extend_from_slice(&protocol::EXECUTE);
                        c.wbuf.extend_from_slice(&protocol::SYNC);
                    }
                }
            }
        }
        if self.cfg.per_statement {
            c.cmd_start = self.clock.now_ns();
        }
        c.phase = Phase::Waiting;
        self.flush(c, token);
    }

    /// `ReadyForQuery` after a statement, with the transaction status byte.
    fn statement_done(&mut self, c: &mut Client, token: usize, status: u8) {
        if self.cfg.per_statement {
            let s = &mut self.per_cmd[self.program.command_base[c.script] + c.cmd];
            s.sum_ns += self.clock.now_ns().saturating_sub(c.cmd_start);
            s.count += 1;
            s.failures += c.error.is_some() as u64;
        }
        if c.error.is_some() {
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

    fn transaction_failed(&mut self, c: &mut Client, token: usize) {
        let code = c.error.take().unwrap_or(*b"?????");
        *self.failed_by_class.entry([code[0], code[1]]).or_insert(0) += 1;
        self.rec.errors.status += 1;
        self.failed += 1;
        self.per_script[c.script].failed += 1;
        self.end_transaction(c, token);
    }

    fn transaction_done(&mut self, c: &mut Client, token: usize) {
        let now = self.clock.now_ns();
        let lat = now.saturating_sub(c.tx_start);
        self.rec.complete(now, lat);
        if let Some(u) = self.rec.uncorrected.as_mut() {
            u.record_ns(now.saturating_sub(c.actual_start));
        }
        self.lat_sum_ns += lat;
        let ms = lat as f64 / 1e6;
        self.lat_sumsq_ms += ms * ms;
        let s = &mut self.per_script[c.script];
        s.count += 1;
        s.sum_ms += ms;
        s.sumsq_ms += ms * ms;
        self.end_transaction(c, token);
    }

    fn end_transaction(&mut self, c: &mut Client, token: usize) {
        c.done_txs += 1;
        if self.cfg.connect_per_transaction {
            if let Some(s) = &c.sock {
                let _ = s.write(&protocol::TERMINATE);
            }
            c.disconnect();
            c.phase = Phase::Disconnected;
        } else {
            c.phase = Phase::Idle;
        }
        self.advance(c, token);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortKind {
    Connect,
    Read,
    Write,
    Script,
}

/// A variable's value as statement text or a text-format parameter.
#[inline]
fn push_value(b: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Int(i) => protocol::push_int(b, *i),
        Value::Text(s) => b.extend_from_slice(s.as_bytes()),
        other => {
            use std::io::Write;
            let _ = write!(b, "{other}");
        }
    }
}

/// How long `epoll_wait` may sleep: until the next timer or the deadline,
/// and never over 100 ms so progress and stop checks stay timely.
pub fn poll_timeout(now: u64, timer: Option<u64>, deadline: Option<u64>) -> Duration {
    let mut until = now + 100_000_000;
    if let Some(t) = timer {
        until = until.min(t);
    }
    if let Some(d) = deadline {
        until = until.min(d);
    }
    Duration::from_nanos(until.saturating_sub(now))
}
