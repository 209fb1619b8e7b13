//! One worker thread: its share of the connections (sysbench's threads,
//! one connection each) on one wait (io_uring or epoll, `--io`: `net`),
//! each connection a small state machine walking its transaction one
//! statement at a time, as sysbench's Lua does.
//!
//! - Before the start gate every connection logs in and prepares the
//!   workload's statements (blocking, bounded by `--timeout`): a refused
//!   login or a missing table is the run's one error.
//! - Closed loop: a connection starts its next transaction when the last
//!   one ends. Open loop (`--rate`): arrivals follow the thread's
//!   [`Schedule`] and go to the next idle connection; latency counts from
//!   the intended start.
//! - A deadlock, a lock wait timeout or "record changed" (1213, 1205,
//!   1020: sysbench's `--mysql-ignore-errors` default) rolls the
//!   transaction back and runs it again with fresh values, counted as an
//!   ignored error; its latency includes the retries, as sysbench's event
//!   time does. Any other error reply fails the transaction (rolled back,
//!   counted by error code) and the connection goes on.
//! - A lost connection or a statement unanswered within `--timeout` ends
//!   that connection (sysbench ends the thread): its transaction is
//!   counted as an error, and when every connection has ended, the run
//!   does, with what it measured.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use tare_engine::cpu::CpuTime;
use tare_engine::endpoint::Socket;
use tare_engine::poller::Ready;
use tare_engine::progress::Counters;
use tare_engine::schedule::Schedule;
use tare_engine::uring::{Event, Io};
use tare_engine::window::{Share, Window};
use tare_engine::{Clock, Recorder};
use tare_record::{Latency, WakeupReport};

use crate::config::MysqlConfig;
use crate::oltp::{Class, Kind, Plan, Planned, Rand};
use crate::protocol::{self, Reply, Scanner};
use crate::wire::Wire;

mod net;

/// How often busy connections are checked against `--timeout`.
const TIMEOUT_CHECK_NS: u64 = 10_000_000;
/// A connection's first read buffer, and the size of the io_uring
/// receive buffers (a range of 100 rows is ~14 KB).
const READ_BUF: usize = 32 * 1024;

/// The error codes sysbench ignores by default (`--mysql-ignore-errors=
/// 1213,1020,1205`): the transaction is run again.
pub(crate) const RETRIED: [u16; 3] = [1213, 1020, 1205];

/// What every worker reads.
pub(crate) struct Shared<'a> {
    pub cfg: &'a MysqlConfig,
    pub plan: Plan,
    pub clock: Clock,
    pub seed: u64,
    pub stop: &'a AtomicBool,
}

/// What a `--report-interval` line needs from a running worker.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct Live {
    pub transactions: AtomicU64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub other: AtomicU64,
    pub ignored: AtomicU64,
    pub failed: AtomicU64,
    /// Transaction latencies since the last line.
    pub latency: Mutex<Option<Latency>>,
}

/// Statements answered, as sysbench counts them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Queries {
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
}

/// What a worker measured.
pub(crate) struct WorkerOutput {
    pub share: Share,
    pub queries: Queries,
    pub ignored: BTreeMap<u16, u64>,
    pub failed: BTreeMap<u16, u64>,
    pub aborted: u64,
    pub abort_error: Option<String>,
    /// Connections that said COM_QUIT at the end.
    pub quits: u64,
    pub wakeups: WakeupReport,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between transactions.
    Idle,
    /// A statement (or the ROLLBACK before a retry) is in flight.
    Busy,
    /// Ended: lost, timed out, or its share of `--events` done.
    Done,
}

/// What follows a ROLLBACK in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    Retry,
    Fail,
}

struct Conn {
    /// Its index among all the run's connections (ramp order).
    index: usize,
    sock: Option<Socket>,
    state: State,
    scanner: Scanner,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    woff: usize,
    /// epoll: `EPOLLOUT` is armed (a short write pending).
    armed_write: bool,
    /// io_uring: a multishot receive / a writability poll is pending.
    armed: bool,
    polling: bool,
    rand: Rand,
    /// Prepared statement ids by [`Plan::slot`] (empty: text protocol).
    ids: Vec<u32>,
    /// Whether each statement's parameter types were sent (by slot).
    typed: Vec<bool>,
    tx: Vec<Planned>,
    step: usize,
    rollback: Option<After>,
    /// The transaction's intended start, actual start, and when its
    /// current statement was sent.
    intended: u64,
    started: u64,
    sent: u64,
    /// The transaction counts in the summary (it began after the warm-up).
    measured: bool,
    scratch: Vec<u8>,
}

pub(crate) struct Worker<'a> {
    sh: &'a Shared<'a>,
    io: Io,
    conns: Vec<Conn>,
    rec: Recorder,
    queries: Queries,
    ignored: BTreeMap<u16, u64>,
    failed: BTreeMap<u16, u64>,
    aborted: u64,
    abort_error: Option<String>,
    /// `--events`: transactions this worker may still start.
    left: Option<u64>,
    /// The measured window: the run's start, where measurement begins
    /// and ends.
    win: Window,
    schedule: Option<Schedule>,
    cursor: usize,
    ready: Vec<Ready>,
    completions: Vec<Event>,
    /// Waits for the network while measuring.
    waits: u64,
    live: Option<&'a Live>,
}

impl<'a> Worker<'a> {
    /// The worker owning the run's connections `ids`; `quota`: its share
    /// of `--events`.
    pub(crate) fn new(
        sh: &'a Shared<'a>,
        ids: std::ops::Range<usize>,
        quota: Option<u64>,
        live: Option<&'a Live>,
    ) -> io::Result<Worker<'a>> {
        let conns = ids
            .map(|index| Conn {
                index,
                sock: None,
                state: State::Done,
                scanner: Scanner::query(),
                rbuf: vec![0; READ_BUF],
                rstart: 0,
                rend: 0,
                wbuf: Vec::with_capacity(1024),
                woff: 0,
                armed_write: false,
                armed: false,
                polling: false,
                rand: Rand::new(
                    sh.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    sh.plan.rand,
                ),
                ids: Vec::new(),
                typed: Vec::new(),
                tx: Vec::with_capacity(sh.plan.statements()),
                step: 0,
                rollback: None,
                intended: 0,
                started: 0,
                sent: 0,
                measured: false,
                scratch: Vec::with_capacity(192),
            })
            .collect::<Vec<_>>();
        let io = Io::new(
            sh.cfg.load.io,
            conns.len().max(1),
            READ_BUF,
            false,
            &sh.clock,
        )?;
        Ok(Worker {
            sh,
            io,
            conns,
            rec: Recorder::new(0, 0, false),
            queries: Queries::default(),
            ignored: BTreeMap::new(),
            failed: BTreeMap::new(),
            aborted: 0,
            abort_error: None,
            left: quota,
            win: Window::new(&sh.cfg.load, 0),
            schedule: None,
            cursor: 0,
            ready: Vec::with_capacity(64),
            completions: Vec::with_capacity(64),
            waits: 0,
            live,
        })
    }

    /// Logs every connection in and prepares its statements; the first
    /// failure is the run's error.
    pub(crate) fn connect_all(&mut self) -> Result<(), crate::MysqlError> {
        let cfg = self.sh.cfg;
        let plan = &self.sh.plan;
        for i in 0..self.conns.len() {
            let mut wire = Wire::open(&cfg.endpoint, &cfg.login, cfg.load.timeout)?;
            let mut ids = Vec::new();
            if cfg.prepared {
                ids = vec![0u32; plan.slots()];
                for kind in plan.kinds() {
                    let tables: Vec<u32> = match kind {
                        Kind::Begin | Kind::Commit => vec![0],
                        _ => (1..=plan.tables).collect(),
                    };
                    for t in tables {
                        let sql = kind.sql(t);
                        let id = wire.prepare(&sql)?.map_err(|e| {
                            let hint = if e.code == 1146 {
                                " (run `tare mysql prepare` first)"
                            } else {
                                ""
                            };
                            crate::MysqlError::Config(format!("preparing {sql:?}: {e}{hint}"))
                        })?;
                        let p = Planned {
                            kind,
                            table: t,
                            a: 0,
                            b: 0,
                        };
                        ids[plan.slot(&p)] = id;
                    }
                }
            }
            if wire.pending() > 0 {
                return Err(crate::MysqlError::Protocol(
                    "the server sent more than the replies asked for".into(),
                ));
            }
            let c = &mut self.conns[i];
            c.typed = vec![false; ids.len()];
            c.ids = ids;
            c.sock = Some(wire.sock);
            c.state = State::Idle;
            self.register(i)
                .map_err(|e| crate::MysqlError::io(self.io.name(), e))?;
        }
        Ok(())
    }

    /// The measured run in `window` (from the common start).
    pub(crate) fn run(
        mut self,
        window: Window,
        threads: usize,
        counters: &Counters,
    ) -> WorkerOutput {
        let cpu0 = CpuTime::thread();
        let clock = self.sh.clock;
        self.rec = window.recorder(false);
        self.schedule = window.schedule(self.sh.seed, self.conns[0].index, threads, false);
        self.win = window;
        let mut next_check = self.win.origin + TIMEOUT_CHECK_NS;
        let mut now;
        loop {
            now = clock.now_ns();
            if self.win.over(now) || self.sh.stop.load(Ordering::Relaxed) || self.finished() {
                break;
            }
            if now >= next_check {
                self.check_timeouts(now);
                next_check = now + TIMEOUT_CHECK_NS;
            }
            if self.schedule.is_some() {
                self.dispatch(now);
            } else {
                for i in 0..self.conns.len() {
                    self.kick(i, now);
                }
            }
            let until = self.win.wake_at(next_check, self.next_timer(now));
            if self.wait(now, until).is_err() {
                // A wait that fails cannot go on: what was measured is kept.
                break;
            }
            self.publish(counters);
        }
        self.publish(counters);
        let end_ns = self.win.end_ns(now);
        self.rec.in_flight = self
            .conns
            .iter()
            .filter(|c| c.state == State::Busy && c.measured)
            .count() as u64;
        let unsent = self.win.unsent(&mut self.schedule, end_ns, self.left);
        let mut quits = 0;
        for c in &mut self.conns {
            if let Some(s) = c.sock.take() {
                quits += 1;
                // COM_QUIT: the server ends the session without a warning
                // in its log (a transaction in flight is rolled back).
                let mut q = Vec::with_capacity(5);
                protocol::command(&mut q, protocol::COM_QUIT, &[]);
                let _ = s.write(&q);
            }
        }
        WorkerOutput {
            share: Share {
                rec: self.rec,
                end_ns,
                unsent,
                cpu: CpuTime::thread().since(&cpu0),
            },
            queries: self.queries,
            ignored: self.ignored,
            failed: self.failed,
            aborted: self.aborted,
            abort_error: self.abort_error,
            quits,
            wakeups: WakeupReport {
                coalesce: "off".into(),
                io: self.io.name().into(),
                waits: self.waits,
                ..WakeupReport::default()
            },
        }
    }

    fn publish(&self, counters: &Counters) {
        let done = self.rec.requests;
        counters.publish(done, self.rec.errors.total());
        if let Some(l) = self.live {
            l.reads.store(self.queries.reads, Ordering::Relaxed);
            l.writes.store(self.queries.writes, Ordering::Relaxed);
            l.other.store(self.queries.other, Ordering::Relaxed);
            l.ignored
                .store(self.ignored.values().sum(), Ordering::Relaxed);
            l.failed.store(self.rec.errors.total(), Ordering::Relaxed);
        }
    }

    /// Every connection has ended, or `--events` is used up and nothing
    /// is in flight.
    fn finished(&self) -> bool {
        let idle_or_done = |c: &Conn| c.state != State::Busy;
        self.conns.iter().all(|c| c.state == State::Done)
            || (self.left == Some(0) && self.conns.iter().all(idle_or_done))
    }

    pub(super) fn measuring(&self, t: u64) -> bool {
        self.win.measuring(t)
    }

    /// Closed loop: an idle connection starts its next transaction (once
    /// its place in the ramp is reached).
    fn kick(&mut self, i: usize, now: u64) {
        let c = &self.conns[i];
        if c.state != State::Idle {
            return;
        }
        let ramp = self.sh.cfg.load.ramp.as_nanos() as u64;
        let n = self.sh.cfg.load.connections as u64;
        if ramp > 0 && now < self.win.origin + ramp * c.index as u64 / n {
            return;
        }
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return;
            }
            *left -= 1;
        }
        self.begin(i, now, now);
    }

    /// Open loop: every arrival due goes to the next idle connection.
    fn dispatch(&mut self, now: u64) {
        let n = self.conns.len();
        loop {
            if self.left == Some(0) {
                break;
            }
            let Some(due) = self.schedule.as_ref().map(|s| s.peek()) else {
                break;
            };
            if due > now {
                break;
            }
            let Some(i) = (0..n)
                .map(|k| (self.cursor + k) % n)
                .find(|&i| self.conns[i].state == State::Idle)
            else {
                break;
            };
            self.cursor = (i + 1) % n;
            let intended = self.schedule.as_mut().map_or(now, |s| s.take());
            if let Some(left) = &mut self.left {
                *left -= 1;
            }
            if self.measuring(intended) {
                self.rec.lag(intended, now);
            }
            self.begin(i, intended, now);
        }
    }

    /// Starts a transaction on connection `i`.
    fn begin(&mut self, i: usize, intended: u64, now: u64) {
        let measured = self.measuring(intended);
        let c = &mut self.conns[i];
        c.intended = intended;
        c.started = now;
        c.measured = measured;
        self.sh.plan.transaction(&mut c.rand, &mut c.tx);
        c.step = 0;
        self.send_step(i, now);
    }

    /// Sends the transaction's current statement.
    fn send_step(&mut self, i: usize, now: u64) {
        let plan = &self.sh.plan;
        let c = &mut self.conns[i];
        let p = c.tx[c.step];
        let ids = (!c.ids.is_empty()).then_some((c.ids.as_slice(), c.typed.as_mut_slice()));
        plan.encode(&p, ids, &mut c.rand, &mut c.scratch, &mut c.wbuf);
        c.sent = now;
        c.state = State::Busy;
        self.flush(i);
    }

    fn send_rollback(&mut self, i: usize, after: After, now: u64) {
        let c = &mut self.conns[i];
        protocol::command(&mut c.wbuf, protocol::COM_QUERY, b"ROLLBACK");
        c.rollback = Some(after);
        c.sent = now;
        c.state = State::Busy;
        self.flush(i);
    }

    /// The earliest moment something is due without any reply: an
    /// open-loop arrival with a connection idle, a ramp's next start.
    fn next_timer(&self, now: u64) -> Option<u64> {
        if let Some(s) = &self.schedule {
            let idle = self.conns.iter().any(|c| c.state == State::Idle);
            return (idle && self.left != Some(0)).then(|| s.peek());
        }
        let ramp = self.sh.cfg.load.ramp.as_nanos() as u64;
        if ramp == 0 {
            return None;
        }
        let n = self.sh.cfg.load.connections as u64;
        self.conns
            .iter()
            .filter(|c| c.state == State::Idle)
            .map(|c| self.win.origin + ramp * c.index as u64 / n)
            .filter(|&t| t > now)
            .min()
    }

    /// A statement unanswered for longer than `--timeout` ends its
    /// connection (a late reply would be read as the next one's).
    fn check_timeouts(&mut self, now: u64) {
        let limit = self.sh.cfg.load.timeout.as_nanos() as u64;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.state == State::Busy && now.saturating_sub(c.sent) > limit {
                let why = format!("no reply within {:?} (--timeout)", self.sh.cfg.load.timeout);
                self.lose(i, Lost::Timeout, &why);
            }
        }
    }

    fn reply(&mut self, i: usize, r: Reply, now: u64) {
        let explicit = self.sh.plan.explicit;
        let c = &mut self.conns[i];
        let measured = c.measured;
        if let Some(after) = c.rollback.take() {
            if measured {
                self.queries.other += 1;
            }
            match after {
                After::Retry => {
                    self.sh.plan.transaction(&mut c.rand, &mut c.tx);
                    c.step = 0;
                    self.send_step(i, now);
                }
                After::Fail => self.end_transaction(i, now),
            }
            return;
        }
        let p = c.tx[c.step];
        match r {
            Reply::Ok { .. } | Reply::Rows(_) => {
                if measured {
                    match p.kind.class() {
                        Class::Read => self.queries.reads += 1,
                        Class::Write => self.queries.writes += 1,
                        Class::Other => self.queries.other += 1,
                    }
                }
                c.step += 1;
                if c.step < c.tx.len() {
                    self.send_step(i, now);
                    return;
                }
                let latency = now.saturating_sub(c.intended);
                if measured {
                    self.rec.complete(now, latency);
                    if let Some(u) = self.rec.uncorrected.as_mut() {
                        u.record_ns(now.saturating_sub(c.started));
                    }
                } else {
                    self.rec.complete_early(now.saturating_sub(self.win.origin));
                }
                if let Some(l) = self.live {
                    l.transactions.fetch_add(1, Ordering::Relaxed);
                    if let Some(h) = l.latency.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                        h.record_ns(latency);
                    }
                }
                self.end_transaction(i, now);
            }
            Reply::Err(code) => {
                let retry = self.sh.cfg.ignore_errors.contains(code);
                if measured {
                    let map = if retry {
                        &mut self.ignored
                    } else {
                        self.rec.errors.status += 1;
                        &mut self.failed
                    };
                    *map.entry(code).or_insert(0) += 1;
                }
                let after = if retry { After::Retry } else { After::Fail };
                // Inside BEGIN ... COMMIT: roll back what the transaction
                // did (a lock wait timeout leaves it open).
                if explicit && c.step > 0 && p.kind != Kind::Commit {
                    self.send_rollback(i, after, now);
                } else if retry {
                    self.sh.plan.transaction(&mut c.rand, &mut c.tx);
                    c.step = 0;
                    self.send_step(i, now);
                } else {
                    self.end_transaction(i, now);
                }
            }
            Reply::Prepared { .. } => {
                self.lose(i, Lost::Read, "a prepare reply to an execute");
            }
        }
    }

    /// The transaction is over: a closed loop starts the next at once.
    fn end_transaction(&mut self, i: usize, now: u64) {
        self.conns[i].state = State::Idle;
        if self.schedule.is_none() {
            self.kick(i, now);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lost {
    Read,
    Write,
    Timeout,
}
