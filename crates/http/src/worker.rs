//! One worker thread: an epoll loop that owns its share of the connections.
//!
//! A keep-alive request costs one `send`, one `read` (a response that fits in
//! the 64 KiB buffer arrives whole) and a share of one `epoll_wait`; the clock
//! is read once per completion, and that reading is also the send time of the
//! next request on the connection.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tare_engine::cpu::CpuTime;
use tare_engine::poller::Ready;
use tare_engine::progress::Counters;
use tare_engine::schedule::{Arrivals, Schedule};
use tare_engine::{endpoint::Socket, Clock, Endpoint, Interest, Poller, Recorder};

use crate::response::{Parser, Progress};

/// How often connections are checked for timeouts and due retries.
const SCAN_NS: u64 = 10_000_000;
/// Back-off after a failed connect, doubling up to the maximum, so an
/// unreachable server is retried steadily instead of in a busy loop.
const BACKOFF_MIN_NS: u64 = 1_000_000;
const BACKOFF_MAX_NS: u64 = 100_000_000;
const READ_BUF: usize = 64 * 1024;

/// What every worker of a run shares (read-only).
pub(crate) struct Plan {
    pub endpoint: Endpoint,
    pub request: Vec<u8>,
    pub head_request: bool,
    pub keepalive: bool,
    pub timeout_ns: u64,
    pub clock: Clock,
    /// Measurement starts here (after the warm-up).
    pub start_ns: u64,
    pub end_ns: Option<u64>,
    pub expected_ns: u64,
    pub netns: Option<std::path::PathBuf>,
    pub stop: Arc<AtomicBool>,
    /// Open loop: requests per second for this whole run (shared out among
    /// the threads); `None` is a closed loop.
    pub rate: Option<f64>,
    pub arrivals: Arrivals,
    /// Connections (closed loop) or the rate (open loop) rise linearly over
    /// this long from the start; measurement starts after it.
    pub ramp_ns: u64,
    pub threads: usize,
}

pub(crate) struct Outcome {
    pub recorder: Recorder,
    pub cpu: CpuTime,
    /// Clock reading when the worker stopped measuring.
    pub finished_ns: u64,
    /// Clock reading of the last completion.
    pub last_completion_ns: u64,
    /// Open loop: arrivals due by the deadline but never sent.
    pub unsent: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No socket; (re)connect at `retry_at`.
    Idle {
        retry_at: u64,
    },
    Connecting,
    /// Request partly written.
    Writing {
        written: usize,
    },
    /// Request written, response not complete.
    Reading,
    /// Open loop: free for the next scheduled request (connected with
    /// keep-alive; a free slot without a socket otherwise).
    Ready,
    /// Quota used up.
    Done,
}

struct Conn {
    sock: Option<Socket>,
    phase: Phase,
    parser: Parser,
    /// When the current request began: its send time with keep-alive, its
    /// connect start with a connection per request (latency includes connect).
    began_ns: u64,
    sent_ns: u64,
    got_first_byte: bool,
    backoff_ns: u64,
    /// Open loop: the intended send time of the request this connection is
    /// about to send.
    intended: Option<u64>,
    /// When this connection started on its current request (its connect, or
    /// its send on a reused connection): `--timeout` counts from here.
    busy_since: u64,
}

pub(crate) struct Worker<'a> {
    plan: &'a Plan,
    poller: Poller,
    conns: Vec<Conn>,
    quota: Option<u64>,
    rec: Recorder,
    buf: Vec<u8>,
    board: &'a Counters,
    last_completion_ns: u64,
    /// Open loop: intended send times, and the requests due but waiting for
    /// a free connection.
    schedule: Option<Schedule>,
    backlog: VecDeque<u64>,
    idle: Vec<usize>,
}

impl<'a> Worker<'a> {
    pub(crate) fn new(
        plan: &'a Plan,
        index: usize,
        conns: usize,
        quota: Option<u64>,
        board: &'a Counters,
    ) -> io::Result<Self> {
        let open_loop = plan.rate.is_some();
        let n = conns;
        let conns = (0..conns)
            .map(|j| Conn {
                sock: None,
                // A closed-loop ramp staggers connection starts evenly.
                phase: Phase::Idle {
                    retry_at: if open_loop {
                        0
                    } else {
                        plan.ramp_ns * j as u64 / n as u64
                    },
                },
                parser: Parser::new(plan.head_request),
                began_ns: 0,
                sent_ns: 0,
                got_first_byte: false,
                backoff_ns: BACKOFF_MIN_NS,
                intended: None,
                busy_since: 0,
            })
            .collect::<Vec<_>>();
        let schedule = plan.rate.map(|rate| {
            let seed = 0x7a7e_0000 + index as u64;
            Schedule::new(
                rate / plan.threads as f64,
                plan.arrivals,
                plan.ramp_ns,
                0,
                seed,
            )
        });
        let mut rec = Recorder::new(plan.start_ns, plan.expected_ns, !plan.keepalive);
        if open_loop {
            rec.uncorrected = Some(tare_record::Latency::new());
        }
        Ok(Self {
            plan,
            poller: Poller::new(conns.len().clamp(1, 1024))?,
            conns,
            quota,
            rec,
            buf: vec![0; READ_BUF],
            board,
            last_completion_ns: 0,
            schedule,
            backlog: VecDeque::new(),
            idle: Vec::new(),
        })
    }

    #[inline]
    fn measuring(&self, now: u64) -> bool {
        now >= self.plan.start_ns
    }

    fn open_loop(&self) -> bool {
        self.schedule.is_some()
    }

    pub(crate) fn run(mut self) -> io::Result<Outcome> {
        if let Some(ns) = &self.plan.netns {
            tare_engine::netns::enter(ns)?;
        }
        if self.open_loop() {
            // Sleep no longer than asked: the default 50 us timer slack would
            // make every scheduled send up to 50 us late.
            // SAFETY: prctl on the calling thread with an integer argument.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        }
        let clock = self.plan.clock;
        let mut cpu_start = (self.plan.start_ns == 0).then(CpuTime::thread);
        let now = clock.now_ns();
        for i in 0..self.conns.len() {
            if self.open_loop() && !self.plan.keepalive {
                self.make_ready(i, now);
            } else if self.conns[i].phase == (Phase::Idle { retry_at: 0 }) {
                self.open(i, now);
            }
        }
        let mut ready: Vec<Ready> = Vec::with_capacity(1024);
        let mut next_scan = now + SCAN_NS;
        let mut finished_ns;
        loop {
            let now = clock.now_ns();
            finished_ns = now;
            if cpu_start.is_none() && self.measuring(now) {
                cpu_start = Some(CpuTime::thread());
            }
            if self.plan.end_ns.is_some_and(|e| now >= e) || self.plan.stop.load(Ordering::Relaxed)
            {
                break;
            }
            if self.finished() {
                break;
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + SCAN_NS;
            }
            self.dispatch(now);
            let mut wake = next_scan;
            if let Some(e) = self.plan.end_ns {
                wake = wake.min(e);
            }
            if let Some(s) = &self.schedule {
                if self.quota.is_none_or(|q| s.issued() < q) {
                    wake = wake.min(s.peek());
                }
            }
            let now = clock.now_ns();
            ready.clear();
            self.poller
                .wait(Some(Duration::from_nanos(wake.saturating_sub(now))), |r| {
                    ready.push(r)
                })?;
            for r in &ready {
                self.handle(r);
            }
            self.board
                .publish(self.rec.requests, self.rec.errors.total());
        }
        self.rec.in_flight = self
            .conns
            .iter()
            .filter(|c| matches!(c.phase, Phase::Writing { .. } | Phase::Reading))
            .count() as u64;
        let cpu = CpuTime::thread().since(&cpu_start.unwrap_or_else(CpuTime::thread));
        let mut unsent = self.backlog.len() as u64;
        if let (Some(s), Some(end)) = (self.schedule.as_mut(), self.plan.end_ns) {
            while s.peek() <= end && self.quota.is_none_or(|q| s.issued() < q) {
                s.take();
                unsent += 1;
            }
        }
        Ok(Outcome {
            recorder: self.rec,
            cpu,
            finished_ns,
            last_completion_ns: self.last_completion_ns,
            unsent,
        })
    }

    /// A count-bounded run is over when nothing is left to send or await.
    fn finished(&self) -> bool {
        match &self.schedule {
            None => self.conns.iter().all(|c| c.phase == Phase::Done),
            Some(s) => {
                self.quota.is_some_and(|q| s.issued() >= q)
                    && self.backlog.is_empty()
                    && self
                        .conns
                        .iter()
                        .all(|c| matches!(c.phase, Phase::Ready | Phase::Idle { .. } | Phase::Done))
            }
        }
    }

    /// Open loop: issues every arrival now due and hands waiting requests to
    /// free connections, oldest first.
    fn dispatch(&mut self, now: u64) {
        let Some(s) = self.schedule.as_mut() else {
            return;
        };
        while s.peek() <= now && self.quota.is_none_or(|q| s.issued() < q) {
            self.backlog.push_back(s.take());
        }
        while !self.backlog.is_empty() {
            let Some(i) = self.idle.pop() else {
                break;
            };
            if self.conns[i].phase != Phase::Ready {
                continue; // stale entry: the slot was reused meanwhile
            }
            let t = self.backlog.pop_front().expect("checked non-empty");
            self.start(i, t, now);
        }
    }

    /// Open loop: starts the request intended for `intended` on slot `i`.
    fn start(&mut self, i: usize, intended: u64, now: u64) {
        self.conns[i].intended = Some(intended);
        if self.plan.keepalive {
            self.send(i, now);
        } else {
            self.open(i, now);
        }
    }

    /// Open loop: slot `i` is free; it takes the oldest waiting request or
    /// waits for the schedule.
    fn make_ready(&mut self, i: usize, now: u64) {
        if let Some(t) = self.backlog.pop_front() {
            return self.start(i, t, now);
        }
        self.conns[i].phase = Phase::Ready;
        self.idle.push(i);
    }

    /// After a request ends (completed or failed) on a connection that cannot
    /// be reused: a new connection, or with an open loop and a connection per
    /// request, a free slot.
    fn recycle(&mut self, i: usize, now: u64) {
        self.conns[i].sock = None;
        self.conns[i].intended = None;
        if self.open_loop() && !self.plan.keepalive {
            self.make_ready(i, now);
        } else {
            self.open(i, now);
        }
    }

    fn handle(&mut self, r: &Ready) {
        let i = r.token as usize;
        match self.conns[i].phase {
            Phase::Connecting if r.writable || r.hangup => {
                let failed = !matches!(
                    self.conns[i].sock.as_ref().map(|s| s.take_error()),
                    Some(Ok(None))
                );
                let now = self.plan.clock.now_ns();
                if failed {
                    self.connect_failed(i, now);
                } else {
                    self.connected(i, now);
                }
            }
            Phase::Writing { written } if r.writable || r.hangup => self.write(i, written),
            Phase::Reading if r.readable || r.hangup => self.read(i),
            _ => {}
        }
    }

    /// Opens a new connection for slot `i`.
    fn open(&mut self, i: usize, now: u64) {
        if self.schedule.is_none() && self.quota == Some(0) {
            self.conns[i].phase = Phase::Done;
            self.conns[i].sock = None;
            return;
        }
        let c = &mut self.conns[i];
        c.sock = None;
        c.began_ns = now;
        c.busy_since = now;
        match self.plan.endpoint.connect() {
            Err(_) => self.connect_failed(i, now),
            Ok(sock) => {
                let interest = if sock.connecting {
                    Interest::Write
                } else {
                    Interest::Read
                };
                if self.poller.add(sock.fd(), i as u64, interest).is_err() {
                    return self.connect_failed(i, now);
                }
                let connecting = sock.connecting;
                c.sock = Some(sock);
                if connecting {
                    c.phase = Phase::Connecting;
                } else {
                    self.connected(i, now);
                }
            }
        }
    }

    fn connect_failed(&mut self, i: usize, now: u64) {
        if self.measuring(now) {
            self.rec.errors.connect += 1;
        }
        // A failed attempt uses quota, as ab counts failed requests in -n,
        // so a count-bounded run against a dead server still ends. (An open
        // loop spends its quota when the schedule issues an arrival.)
        if self.schedule.is_none() {
            if let Some(q) = self.quota.as_mut() {
                *q = q.saturating_sub(1);
            }
        }
        let c = &mut self.conns[i];
        c.sock = None;
        c.intended = None;
        c.phase = Phase::Idle {
            retry_at: now + c.backoff_ns,
        };
        c.backoff_ns = (c.backoff_ns * 2).min(BACKOFF_MAX_NS);
    }

    fn connected(&mut self, i: usize, now: u64) {
        let measuring = self.measuring(now);
        let c = &mut self.conns[i];
        c.backoff_ns = BACKOFF_MIN_NS;
        if c.phase == Phase::Connecting {
            if let Some(s) = &c.sock {
                let _ = self.poller.modify(s.fd(), i as u64, Interest::Read);
            }
        }
        if measuring {
            if let Some(l) = self.rec.connect.as_mut() {
                l.record_ns(now - c.began_ns);
            }
        }
        if self.schedule.is_some() && c.intended.is_none() {
            return self.make_ready(i, now);
        }
        self.send(i, now);
    }

    /// Starts the next request on an established connection.
    fn send(&mut self, i: usize, now: u64) {
        if let Some(intended) = self.conns[i].intended.take() {
            // Open loop: the quota was spent when the arrival was issued, and
            // latency counts from the intended time, connect included.
            if intended >= self.plan.start_ns {
                self.rec.lag(intended, now);
            }
            let keepalive = self.plan.keepalive;
            let c = &mut self.conns[i];
            c.began_ns = intended;
            if keepalive {
                c.busy_since = now;
            }
            c.sent_ns = now;
            c.got_first_byte = false;
            c.parser.reset();
            return self.write(i, 0);
        }
        if let Some(q) = self.quota.as_mut() {
            if *q == 0 {
                let c = &mut self.conns[i];
                c.phase = Phase::Done;
                c.sock = None;
                return;
            }
            *q -= 1;
        }
        let c = &mut self.conns[i];
        if self.plan.keepalive {
            c.began_ns = now;
            c.busy_since = now;
        }
        c.sent_ns = now;
        c.got_first_byte = false;
        c.parser.reset();
        self.write(i, 0);
    }

    /// Writes the request from byte `written` on; arms writability only
    /// when the socket buffer is full (rare for requests of a few hundred bytes).
    fn write(&mut self, i: usize, written: usize) {
        let req = &self.plan.request;
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_ref() else {
            return;
        };
        let mut at = written;
        loop {
            match sock.write(&req[at..]) {
                Ok(n) => {
                    at += n;
                    if at == req.len() {
                        if matches!(c.phase, Phase::Writing { .. }) {
                            let _ = self.poller.modify(sock.fd(), i as u64, Interest::Read);
                        }
                        c.phase = Phase::Reading;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !matches!(c.phase, Phase::Writing { .. }) {
                        let _ = self.poller.modify(sock.fd(), i as u64, Interest::Write);
                    }
                    c.phase = Phase::Writing { written: at };
                    return;
                }
                Err(_) => {
                    let now = self.plan.clock.now_ns();
                    if self.measuring(now) {
                        self.rec.errors.write += 1;
                    }
                    return self.recycle(i, now);
                }
            }
        }
    }

    fn read(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_ref() else {
                return;
            };
            let outcome = match sock.read(&mut self.buf) {
                Ok(0) => Err(c.parser.eof()),
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => Err(Err(crate::response::ParseError::Truncated)),
            };
            match outcome {
                Ok(n) => {
                    self.rec.bytes_read += n as u64;
                    if !c.got_first_byte {
                        c.got_first_byte = true;
                        if let Some(fb) = self.rec.first_byte.as_mut() {
                            let now = self.plan.clock.now_ns();
                            if now >= self.plan.start_ns {
                                fb.record_ns(now - c.sent_ns);
                            }
                        }
                    }
                    match c.parser.feed(&self.buf[..n]) {
                        Ok(Progress::Done { used }) => {
                            // Bytes past the response were never asked for.
                            let junk = used < n;
                            return self.complete(i, junk);
                        }
                        Ok(Progress::More) if n == self.buf.len() => continue,
                        Ok(Progress::More) => return,
                        Err(_) => return self.failed_read(i),
                    }
                }
                Err(Ok(Progress::Done { .. })) => return self.complete(i, false),
                Err(_) => return self.failed_read(i),
            }
        }
    }

    fn failed_read(&mut self, i: usize) {
        let now = self.plan.clock.now_ns();
        if self.measuring(now) {
            self.rec.errors.read += 1;
        }
        self.recycle(i, now);
    }

    /// A response completed; `junk`: the server sent more than one response.
    fn complete(&mut self, i: usize, junk: bool) {
        let now = self.plan.clock.now_ns();
        let c = &mut self.conns[i];
        if now >= self.plan.start_ns {
            self.rec.complete(now, now - c.began_ns);
            if let Some(u) = self.rec.uncorrected.as_mut() {
                u.record_ns(now - c.sent_ns);
            }
            self.rec.status(c.parser.status);
            if c.parser.status >= 400 {
                self.rec.errors.status += 1;
            }
            if junk {
                self.rec.errors.read += 1;
            }
            self.last_completion_ns = now;
        } else {
            self.rec.complete_early(now);
        }
        if c.parser.close || !self.plan.keepalive || junk {
            self.recycle(i, now);
        } else if self.schedule.is_some() {
            self.make_ready(i, now);
        } else {
            self.send(i, now);
        }
    }

    /// Times out stuck requests and retries failed connects.
    fn scan(&mut self, now: u64) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.phase {
                Phase::Idle { retry_at } if retry_at <= now => {
                    if self.open_loop() && !self.plan.keepalive {
                        self.make_ready(i, now);
                    } else {
                        self.open(i, now);
                    }
                }
                Phase::Connecting | Phase::Writing { .. } | Phase::Reading
                    if now.saturating_sub(c.busy_since) > self.plan.timeout_ns =>
                {
                    if self.measuring(now) {
                        self.rec.errors.timeout += 1;
                    }
                    self.recycle(i, now);
                }
                _ => {}
            }
        }
    }
}
