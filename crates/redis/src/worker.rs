//! One worker thread: its share of the connections on one wait (io_uring
//! where the kernel allows it, else a level-triggered epoll set: `--io`),
//! each connection a small state machine.
//!
//! - With io_uring a multishot receive per connection has read the replies
//!   before the worker wakes, and the sends they call for go through the
//!   ring, submitted by the `io_uring_enter` that waits next: a `-P 1`
//!   command costs a share of one system call. Its send time is read just
//!   before that call, so latency still starts when the command goes out.
//!   With epoll, a `send`, a `recv` and a share of one `epoll_wait`
//!   (docs/redis.md, "How a worker waits").
//! - `--coalesce` (closed loop over TCP) pauses an idle worker briefly
//!   before it waits, so one wake-up serves several replies; replies are
//!   then timed by the kernel's receive timestamps (epoll and `recvmsg`),
//!   so the pause never shows as latency (`tare_engine::coalesce`).
//! - Closed loop: a connection sends `-P` commands in one write and sends
//!   the next batch when the last reply of this one arrives; latency is
//!   from the batch's write to each reply, as redis-benchmark measures it.
//! - Open loop (`--rate`): arrivals follow the thread's
//!   [`Schedule`]; each goes to the next connection with fewer than `-P`
//!   commands in flight, and its latency counts from its intended time, so
//!   a stalled server shows in every command that should have been sent.
//! - Replies are found by the incremental [`Parser`] straight from one
//!   read buffer per thread: nothing is copied per reply.
//! - A dropped connection counts each command it had in flight as a read
//!   error, a reply not back within `--timeout` as a timeout, an error
//!   reply by its kind (`ERR`, `WRONGTYPE`); the connection is opened
//!   again (every 100 ms while refused) and the run goes on.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use tare_engine::cpu::CpuTime;
use tare_engine::endpoint::Socket;
use tare_engine::poller::{Interest, Ready};
use tare_engine::progress::Counters;
use tare_engine::schedule::Schedule;
use tare_engine::splitmix::SplitMix64;
use tare_engine::uring::{self, Event, Io};
use tare_engine::window::{Share, Window};
use tare_engine::{Clock, Coalescer, RealtimeMap, Recorder};

use crate::command::Template;
use crate::config::RedisConfig;
use crate::resp::{ErrorKind, Parser, Reply};

/// How long a refused connection waits before it is tried again.
const RETRY_NS: u64 = 100_000_000;
/// How often in-flight commands are checked against `--timeout`.
const TIMEOUT_CHECK_NS: u64 = 10_000_000;
/// One read takes at most this much (replies are scanned, not kept).
const READ_BUF: usize = 64 * 1024;
/// io_uring receive buffers: replies are small, and a large one fills
/// several.
const RING_BUF: usize = 16 * 1024;

/// What every worker reads.
pub(crate) struct Plan<'a> {
    pub cfg: &'a RedisConfig,
    pub templates: Vec<Template>,
    /// `AUTH` / `SELECT`, sent first on every connection; their replies
    /// are not counted.
    pub setup: Vec<u8>,
    pub setup_replies: u32,
    pub clock: Clock,
    pub seed: u64,
    pub stop: &'a AtomicBool,
}

/// What a worker measured.
pub(crate) struct WorkerOutput {
    pub share: Share,
    pub kinds: Vec<(ErrorKind, u64)>,
    pub dropped: u64,
    pub wakeups: tare_record::WakeupReport,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A non-blocking connect in progress.
    Connecting,
    /// Connected; the first `skip` replies answer the setup commands.
    Open,
    /// Closed; tried again at this time.
    Down { retry_at: u64 },
    /// Closed for good (a count-bounded run whose connection failed).
    Done,
}

struct Conn {
    /// Its index among all the run's connections (ramp order).
    index: usize,
    sock: Option<Socket>,
    state: State,
    parser: Parser,
    wbuf: Vec<u8>,
    woff: usize,
    /// Whether `EPOLLOUT` (or, with io_uring, a one-shot poll) is armed:
    /// a connect or a short write pending.
    armed_write: bool,
    /// io_uring: a multishot receive is pending on this socket.
    receiving: bool,
    /// io_uring: a send of `wbuf[woff..]` is pending; the kernel reads
    /// `wbuf`, which nothing changes until the send's completion.
    sending: bool,
    /// io_uring: the last `fresh` commands in `flight` are queued but not
    /// yet submitted; their send time is read when they are.
    fresh: usize,
    /// Sockets this slot has had: a completion for an old one never
    /// matches the current one (`uring::token`).
    epoch: u64,
    /// `--coalesce`: the kernel's receive time of the last read, on the
    /// run's clock.
    rx_ns: Option<u64>,
    /// In-flight commands: intended and actual send times.
    flight: VecDeque<(u64, u64)>,
    skip: u32,
    rng: SplitMix64,
    next_workload: usize,
}

pub(crate) struct Worker<'a> {
    plan: &'a Plan<'a>,
    io: Io,
    coalescer: Coalescer,
    /// Replies are timed by the kernel's receive timestamps (coalescing).
    rx_stamps: bool,
    rx_map: RealtimeMap,
    conns: Vec<Conn>,
    rec: Recorder,
    kinds: Vec<(ErrorKind, u64)>,
    dropped: u64,
    /// Count-bounded runs: commands this worker may still send.
    left: Option<u64>,
    /// The measured window: the run's start, where measurement begins
    /// and ends.
    win: Window,
    schedule: Option<Schedule>,
    cursor: usize,
    /// Setting up: a failure is the run's error, not a count.
    setting_up: Option<String>,
    replies: Vec<Reply>,
    ready: Vec<Ready>,
    events: Vec<Event>,
    buf: Vec<u8>,
    /// Sends go through the ring (io_uring).
    ring_sends: bool,
    /// Connections with commands queued since the last wait, to stamp.
    stamp: Vec<usize>,
    /// Send completions taken from the ring.
    sent: Vec<(u64, i32)>,
    /// Write buffers of connections closed with a send pending, kept
    /// until its completion (the kernel may still read them), by token.
    retired: Vec<(u64, Vec<u8>)>,
    /// Some connection may send a batch without a reply to prompt it (a
    /// new connection, the start): the run loop looks at every one.
    scan: bool,
    /// Some connection is closed, to be opened again.
    any_down: bool,
}

impl<'a> Worker<'a> {
    /// Worker `index` owning the run's connections `ids`; `quota`: its
    /// share of `-n`.
    pub(crate) fn new(
        plan: &'a Plan<'a>,
        ids: std::ops::Range<usize>,
        quota: Option<u64>,
    ) -> io::Result<Worker<'a>> {
        let conns = ids
            .map(|index| Conn {
                index,
                sock: None,
                state: State::Down { retry_at: 0 },
                parser: Parser::new(),
                wbuf: Vec::with_capacity(4096),
                woff: 0,
                armed_write: false,
                receiving: false,
                sending: false,
                fresh: 0,
                epoch: 0,
                rx_ns: None,
                flight: VecDeque::with_capacity(plan.cfg.pipeline),
                skip: 0,
                rng: SplitMix64::new(
                    plan.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                ),
                next_workload: index % plan.templates.len().max(1),
            })
            .collect::<Vec<_>>();
        let load = &plan.cfg.load;
        let coalescer =
            Coalescer::for_worker(load.coalesce, &plan.cfg.endpoint, load.rate.is_some());
        let io = Io::new(
            load.io,
            conns.len(),
            RING_BUF,
            coalescer.enabled(),
            &plan.clock,
        )?;
        Ok(Worker {
            plan,
            ring_sends: matches!(io, Io::Uring { .. }),
            io,
            stamp: Vec::with_capacity(64),
            sent: Vec::with_capacity(64),
            retired: Vec::new(),
            scan: true,
            any_down: true,
            rx_stamps: coalescer.enabled(),
            rx_map: RealtimeMap::new(&plan.clock),
            coalescer,
            conns,
            rec: Recorder::new(0, 0, false),
            kinds: Vec::new(),
            dropped: 0,
            left: quota,
            win: Window::new(load, 0),
            schedule: None,
            cursor: 0,
            setting_up: None,
            replies: Vec::with_capacity(64),
            ready: Vec::with_capacity(64),
            events: Vec::with_capacity(64),
            buf: vec![0; READ_BUF],
        })
    }

    /// Opens every connection and waits for the setup replies, within the
    /// timeout; the first failure is the run's error.
    pub(crate) fn connect_all(&mut self) -> Result<(), String> {
        let clock = self.plan.clock;
        let limit = clock.now_ns() + self.plan.cfg.load.timeout.as_nanos() as u64;
        self.setting_up = Some(String::new());
        for i in 0..self.conns.len() {
            self.connect(i, clock.now_ns());
        }
        loop {
            if let Some(why) = self.setting_up.as_ref().filter(|s| !s.is_empty()) {
                return Err(why.clone());
            }
            if self
                .conns
                .iter()
                .all(|c| c.state == State::Open && c.skip == 0)
            {
                self.setting_up = None;
                return Ok(());
            }
            let now = clock.now_ns();
            if now >= limit {
                return Err(format!(
                    "connecting to {} timed out after {:?}",
                    self.plan.cfg.endpoint, self.plan.cfg.load.timeout
                ));
            }
            self.wait(now, limit)
                .map_err(|e| format!("waiting for the server failed: {e}"))?;
        }
    }

    /// The measured run in `window` (from the common start).
    pub(crate) fn run(
        mut self,
        window: Window,
        threads: usize,
        counters: &Counters,
    ) -> WorkerOutput {
        let cpu0 = CpuTime::thread();
        let clock = self.plan.clock;
        self.rec = window.recorder(false);
        self.schedule = window.schedule(
            self.plan.seed,
            self.conns[0].index,
            threads,
            self.coalescer.enabled(),
        );
        self.win = window;
        let mut next_check = self.win.origin + TIMEOUT_CHECK_NS;
        let mut last_batch = 0;
        let mut now;
        loop {
            now = clock.now_ns();
            if self.win.over(now) || self.plan.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.finished() {
                break;
            }
            if now >= next_check {
                self.check_timeouts(now);
                if self.rx_stamps {
                    self.rx_map.refresh(&clock);
                }
                next_check = now + TIMEOUT_CHECK_NS;
            }
            self.retry_due(now);
            if self.schedule.is_some() {
                self.dispatch(now);
            } else if self.scan || self.win.ramping(now) {
                // Otherwise a connection sends when its replies are in.
                self.scan = false;
                for i in 0..self.conns.len() {
                    self.send_batch(i, now);
                }
            }
            let until = self.win.wake_at(next_check, self.next_timer(now));
            let in_flight = if self.coalescer.enabled() {
                self.conns.iter().filter(|c| !c.flight.is_empty()).count()
            } else {
                0
            };
            let paused = self.coalescer.before_wait(
                last_batch,
                in_flight,
                until.saturating_sub(now),
                self.win.measuring(now),
            );
            let now = if paused { clock.now_ns() } else { now };
            match self.wait(now, until) {
                Ok(n) => last_batch = n,
                // A wait that fails cannot go on: what was measured is kept.
                Err(_) => break,
            }
            counters.publish(self.rec.requests, self.rec.errors.total());
        }
        counters.publish(self.rec.requests, self.rec.errors.total());
        if let Io::Uring { ring, .. } = &mut self.io {
            // Commands queued since the last wait go out as `send(2)`
            // would have sent them: they are in flight, and the server
            // counts them.
            let _ = ring.submit();
        }
        let end_ns = self.win.end_ns(now);
        self.rec.in_flight = self.conns.iter().map(|c| c.flight.len() as u64).sum();
        let unsent = self.win.unsent(&mut self.schedule, end_ns, self.left);
        WorkerOutput {
            share: Share {
                rec: self.rec,
                end_ns,
                unsent,
                cpu: CpuTime::thread().since(&cpu0),
            },
            kinds: self.kinds,
            dropped: self.dropped,
            wakeups: tare_record::WakeupReport {
                io: self.io.name().into(),
                ..self.coalescer.report(self.rx_stamps)
            },
        }
    }

    /// A count-bounded run is over when nothing is left to send or in
    /// flight, or no connection can carry more.
    fn finished(&self) -> bool {
        match self.left {
            None => false,
            Some(left) => {
                (left == 0 && self.conns.iter().all(|c| c.flight.is_empty()))
                    || self.conns.iter().all(|c| c.state == State::Done)
            }
        }
    }

    /// Closed loop: a connection with nothing in flight sends its next
    /// batch (once its place in the ramp is reached).
    fn send_batch(&mut self, i: usize, now: u64) {
        let plan = self.plan;
        let n_conns = plan.cfg.load.connections as u64;
        let ramp = plan.cfg.load.ramp.as_nanos() as u64;
        let c = &self.conns[i];
        if c.state != State::Open || !c.flight.is_empty() || c.skip > 0 || c.sending {
            return;
        }
        if ramp > 0 && now < self.win.origin + ramp * c.index as u64 / n_conns {
            return;
        }
        let mut batch = plan.cfg.pipeline as u64;
        if let Some(left) = &mut self.left {
            batch = batch.min(*left);
            *left -= batch;
        }
        if batch == 0 {
            return;
        }
        for _ in 0..batch {
            self.queue_command(i, now, now);
        }
        self.flush(i, now);
    }

    /// Open loop: every arrival due goes to the next connection with room.
    fn dispatch(&mut self, now: u64) {
        let p = self.plan.cfg.pipeline;
        let n = self.conns.len();
        let mut touched = false;
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
            let Some(i) = (0..n).map(|k| (self.cursor + k) % n).find(|&i| {
                let c = &self.conns[i];
                c.state == State::Open && c.skip == 0 && c.flight.len() < p && !c.sending
            }) else {
                break;
            };
            self.cursor = (i + 1) % n;
            let intended = self.schedule.as_mut().map_or(now, |s| s.take());
            if let Some(left) = &mut self.left {
                *left -= 1;
            }
            if self.win.measuring(intended) {
                self.rec.lag(intended, now);
            }
            self.queue_command(i, intended, now);
            touched = true;
        }
        if touched {
            for i in 0..n {
                let c = &self.conns[i];
                if c.woff < c.wbuf.len() && !c.armed_write && !c.sending {
                    self.flush(i, now);
                }
            }
        }
    }

    fn queue_command(&mut self, i: usize, intended: u64, now: u64) {
        let plan = self.plan;
        let keyspace = plan.cfg.keyspace.unwrap_or(0);
        let c = &mut self.conns[i];
        let t = &plan.templates[c.next_workload];
        c.next_workload = (c.next_workload + 1) % plan.templates.len();
        debug_assert!(!c.sending, "the kernel may be reading wbuf");
        let rng = &mut c.rng;
        t.write(&mut c.wbuf, keyspace, || rng.next_u64());
        c.flight.push_back((intended, now));
        if self.ring_sends {
            c.fresh += 1;
        }
    }

    /// Writes what is pending; arms `EPOLLOUT` for the rest. With
    /// io_uring: submits it as one send, unless one is pending.
    fn flush(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = &c.sock else { return };
        if let Io::Uring { ring, .. } = &mut self.io {
            if c.sending || c.woff == c.wbuf.len() {
                return;
            }
            let rest = &c.wbuf[c.woff..];
            // SAFETY: `sending` keeps `wbuf` as it is until the send's
            // completion (`queue_command` and `close` honour it), and the
            // worker, which owns it, outlives the ring.
            unsafe {
                ring.send(
                    sock.fd(),
                    rest.as_ptr(),
                    rest.len(),
                    uring::token(i, c.epoch),
                )
            };
            c.sending = true;
            if c.fresh > 0 {
                self.stamp.push(i);
            }
            return;
        }
        while c.woff < c.wbuf.len() {
            match sock.write(&c.wbuf[c.woff..]) {
                Ok(n) => c.woff += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.fail(i, now, Failure::Write);
                    return;
                }
            }
        }
        let c = &mut self.conns[i];
        if c.woff == c.wbuf.len() {
            c.wbuf.clear();
            c.woff = 0;
        }
        let want = c.woff < c.wbuf.len();
        if want != c.armed_write {
            if let (Io::Epoll(p), Some(sock)) = (&mut self.io, &c.sock) {
                let interest = if want {
                    Interest::ReadWrite
                } else {
                    Interest::Read
                };
                let _ = p.modify(sock.fd(), i as u64, interest);
                c.armed_write = want;
            }
        }
    }

    fn connect(&mut self, i: usize, now: u64) {
        let plan = self.plan;
        let c = &mut self.conns[i];
        c.parser = Parser::new();
        c.wbuf.clear();
        c.woff = 0;
        c.flight.clear();
        c.epoch += 1;
        let token = uring::token(i, c.epoch);
        match plan.cfg.endpoint.connect() {
            Ok(sock) => {
                match &mut self.io {
                    Io::Epoll(p) => {
                        let interest = if sock.connecting {
                            Interest::Write
                        } else {
                            Interest::ReadWrite
                        };
                        if let Err(e) = p.add(sock.fd(), i as u64, interest) {
                            drop(sock);
                            self.connect_failed(i, now, &e.to_string());
                            return;
                        }
                    }
                    Io::Uring { ring, .. } => ring.poll_writable(sock.fd(), token),
                }
                if self.rx_stamps {
                    // Best effort: without stamps a reply is timed when read.
                    let _ = sock.enable_rx_timestamps();
                }
                let c = &mut self.conns[i];
                c.armed_write = true;
                c.state = State::Connecting;
                c.sock = Some(sock);
            }
            Err(e) => self.connect_failed(i, now, &e.to_string()),
        }
    }

    /// The connect finished: the setup commands go first.
    fn connected(&mut self, i: usize, now: u64) {
        let plan = self.plan;
        let c = &mut self.conns[i];
        let err = c.sock.as_ref().map(|s| s.take_error());
        match err {
            Some(Ok(None)) => {}
            Some(Ok(Some(e))) | Some(Err(e)) => {
                self.connect_failed(i, now, &e.to_string());
                return;
            }
            None => return,
        }
        c.state = State::Open;
        self.scan = true;
        c.skip = plan.setup_replies;
        c.wbuf.extend_from_slice(&plan.setup);
        match (&mut self.io, &c.sock) {
            (Io::Epoll(p), Some(s)) => {
                let _ = p.modify(s.fd(), i as u64, Interest::Read);
            }
            (Io::Uring { ring, .. }, Some(s)) => {
                ring.recv(s.fd(), uring::token(i, c.epoch));
                c.receiving = true;
            }
            _ => {}
        }
        c.armed_write = false;
        self.flush(i, now);
    }

    fn connect_failed(&mut self, i: usize, now: u64, why: &str) {
        if let Some(s) = &mut self.setting_up {
            if s.is_empty() {
                *s = format!(
                    "could not connect to Redis at {}: {why}",
                    self.plan.cfg.endpoint
                );
            }
        }
        if self.win.measuring(now) {
            self.rec.errors.connect += 1;
        }
        self.close(i, now);
    }

    /// Closes connection `i`; it is tried again later, except in a
    /// count-bounded run, where a connection that failed stays closed.
    fn close(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        if let Some(s) = c.sock.take() {
            if let (Io::Uring { ring, .. }, true) = (&mut self.io, c.sending) {
                ring.cancel_send(uring::token(i, c.epoch));
            }
            self.io
                .forget(s.fd(), i, c.epoch, c.receiving || c.armed_write);
        }
        if c.sending {
            let wbuf = std::mem::replace(&mut c.wbuf, Vec::with_capacity(4096));
            self.retired.push((uring::token(i, c.epoch), wbuf));
            c.sending = false;
        }
        c.fresh = 0;
        c.receiving = false;
        c.rx_ns = None;
        c.flight.clear();
        c.wbuf.clear();
        c.woff = 0;
        c.armed_write = false;
        c.skip = 0;
        c.state = if self.left.is_some() {
            State::Done
        } else {
            self.any_down = true;
            State::Down {
                retry_at: now + RETRY_NS,
            }
        };
    }

    fn retry_due(&mut self, now: u64) {
        if !self.any_down {
            return;
        }
        self.any_down = false;
        for i in 0..self.conns.len() {
            if let State::Down { retry_at } = self.conns[i].state {
                if now >= retry_at {
                    // Failing again sets `any_down` again.
                    self.connect(i, now);
                } else {
                    self.any_down = true;
                }
            }
        }
    }

    /// The earliest moment something is due without any reply: a retry,
    /// an open-loop arrival with a connection free, a ramp's next start.
    fn next_timer(&self, now: u64) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut at = |x: u64| t = Some(t.map_or(x, |t| t.min(x)));
        if self.any_down {
            for c in &self.conns {
                if let State::Down { retry_at } = c.state {
                    at(retry_at);
                }
            }
        }
        if let Some(s) = &self.schedule {
            let p = self.plan.cfg.pipeline;
            if self
                .conns
                .iter()
                .any(|c| c.state == State::Open && c.skip == 0 && c.flight.len() < p && !c.sending)
                && self.left != Some(0)
            {
                at(s.peek());
            }
        } else if !self.plan.cfg.load.ramp.is_zero() {
            let ramp = self.plan.cfg.load.ramp.as_nanos() as u64;
            let n = self.plan.cfg.load.connections as u64;
            for c in &self.conns {
                let begin = self.win.origin + ramp * c.index as u64 / n;
                if begin > now && c.state == State::Open {
                    at(begin);
                }
            }
        }
        t
    }

    /// Commands without a reply within the timeout: counted, and their
    /// connection opened again (a late reply would be credited to the
    /// wrong command).
    fn check_timeouts(&mut self, now: u64) {
        let limit = self.plan.cfg.load.timeout.as_nanos() as u64;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.state == State::Open
                && c.flight.front().is_some_and(|f| now - f.1.min(now) > limit)
            {
                self.fail(i, now, Failure::Timeout);
            }
        }
    }

    /// Waits until `until` (a clock reading; `now` read just before) at the
    /// latest and handles what happened; returns how many events.
    fn wait(&mut self, now: u64, until: u64) -> io::Result<usize> {
        let mut ready = std::mem::take(&mut self.ready);
        let mut events = std::mem::take(&mut self.events);
        if !self.stamp.is_empty() {
            self.stamp_sends();
        }
        let waited = self.io.wait(now, until, &mut ready, &mut events);
        let now = self.plan.clock.now_ns();
        if let Io::Uring { ring, .. } = &mut self.io {
            // Before the replies: a send's completion precedes theirs.
            let mut sent = std::mem::take(&mut self.sent);
            ring.take_sent(&mut sent);
            for &(token, res) in &sent {
                self.send_done(token, res, now);
            }
            self.sent = sent;
        }
        for r in ready.drain(..) {
            let i = r.token as usize;
            if i >= self.conns.len() || self.conns[i].sock.is_none() {
                continue;
            }
            match self.conns[i].state {
                State::Connecting if r.writable || r.hangup => self.connected(i, now),
                State::Open => {
                    if r.writable {
                        self.flush(i, now);
                    }
                    if (r.readable || r.hangup) && self.conns[i].state == State::Open {
                        self.read(i);
                    }
                }
                _ => {}
            }
        }
        for ev in events.drain(..) {
            self.completion(ev, now);
        }
        self.ready = ready;
        self.events = events;
        waited
    }

    /// The commands queued since the last wait go out in the one about to
    /// begin: their send time is now (a closed loop's intended time too).
    fn stamp_sends(&mut self) {
        let t = self.plan.clock.now_ns();
        let closed = self.schedule.is_none();
        for k in 0..self.stamp.len() {
            let c = &mut self.conns[self.stamp[k]];
            let fresh = std::mem::take(&mut c.fresh);
            for f in c.flight.iter_mut().rev().take(fresh) {
                if closed {
                    f.0 = t;
                }
                f.1 = t;
            }
        }
        self.stamp.clear();
    }

    /// io_uring: connection `i`'s send completed with `res` (bytes sent or
    /// `-errno`).
    fn send_done(&mut self, token: u64, res: i32, now: u64) {
        let (i, _) = uring::untoken(token);
        let current = self
            .conns
            .get(i)
            .is_some_and(|c| c.sock.is_some() && c.sending && uring::token(i, c.epoch) == token);
        if !current {
            // A closed socket's send: its buffer is free now.
            self.retired.retain(|(t, _)| *t != token);
            return;
        }
        let c = &mut self.conns[i];
        c.sending = false;
        if res < 0 {
            self.fail(i, now, Failure::Write);
            return;
        }
        c.woff += res as usize;
        if c.woff >= c.wbuf.len() {
            c.wbuf.clear();
            c.woff = 0;
        } else {
            // Cut short all the same: send the rest.
            self.flush(i, now);
        }
    }

    /// Handles one io_uring completion.
    fn completion(&mut self, ev: Event, now: u64) {
        let conns = &self.conns;
        let Some((ring, i)) = self.io.completion_for(&ev, |i| {
            conns.get(i).filter(|c| c.sock.is_some()).map(|c| c.epoch)
        }) else {
            return;
        };
        match ev {
            Event::Ready {
                writable, hangup, ..
            } => {
                self.conns[i].armed_write = false;
                match self.conns[i].state {
                    State::Connecting if writable || hangup => self.connected(i, now),
                    State::Open => self.flush(i, now),
                    _ => {}
                }
            }
            Event::Data {
                buf, len, armed, ..
            } => {
                let c = &mut self.conns[i];
                c.receiving = armed;
                let replies = &mut self.replies;
                replies.clear();
                let parsed = c.parser.feed(ring.data(buf, len), |r| replies.push(r));
                ring.release(buf);
                // The kernel read it before the wait returned (`now`):
                // every reply of a wake-up is timed then, not later by
                // the ones handled before it.
                self.received(i, len, parsed.is_ok(), now);
                let c = &mut self.conns[i];
                if c.state == State::Open && !c.receiving {
                    if let (Io::Uring { ring, .. }, Some(s)) = (&mut self.io, &c.sock) {
                        ring.recv(s.fd(), uring::token(i, c.epoch));
                        c.receiving = true;
                    }
                }
            }
            Event::Eof { .. } => {
                self.conns[i].receiving = false;
                self.fail(i, now, Failure::Dropped);
            }
            Event::Failed { errno, .. } => {
                let c = &mut self.conns[i];
                c.receiving = false;
                if errno == libc::ENOBUFS {
                    // Every buffer was in use: receive again.
                    if let Some(s) = &c.sock {
                        ring.recv(s.fd(), uring::token(i, c.epoch));
                        c.receiving = true;
                    }
                } else {
                    self.fail(i, now, Failure::Dropped);
                }
            }
        }
    }

    /// epoll: reads what connection `i` has and accounts every reply in it.
    fn read(&mut self, i: usize) {
        for _ in 0..4 {
            let c = &mut self.conns[i];
            let Some(sock) = &c.sock else {
                return;
            };
            let read = if self.rx_stamps {
                sock.read_stamped(&mut self.buf).map(|(n, stamp)| {
                    c.rx_ns = stamp.map(|t| self.rx_map.to_clock_ns(t));
                    n
                })
            } else {
                sock.read(&mut self.buf)
            };
            let n = match read {
                Ok(0) => {
                    let now = self.plan.clock.now_ns();
                    self.fail(i, now, Failure::Dropped);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    let now = self.plan.clock.now_ns();
                    self.fail(i, now, Failure::Dropped);
                    return;
                }
            };
            let replies = &mut self.replies;
            replies.clear();
            let parsed = c.parser.feed(&self.buf[..n], |r| replies.push(r));
            let read_at = self.plan.clock.now_ns();
            self.received(i, n, parsed.is_ok(), read_at);
            if self.conns[i].state != State::Open || n < self.buf.len() {
                return;
            }
        }
    }

    /// `n` bytes arrived on connection `i` and their replies are in
    /// `self.replies` (`parsed`: they were RESP): each is accounted, then
    /// the connection's next batch goes out.
    fn received(&mut self, i: usize, n: usize, parsed: bool, read_at: u64) {
        // With receive stamps, a reply is done when its bytes arrived,
        // whenever the worker woke to read them.
        let now = match self.conns[i].rx_ns.take().filter(|_| self.rx_stamps) {
            Some(t) => t.min(read_at),
            None => read_at,
        };
        self.rec.bytes_read += n as u64;
        if !parsed {
            self.fail(i, read_at, Failure::Protocol);
            return;
        }
        for k in 0..self.replies.len() {
            let r = self.replies[k];
            self.reply(i, r, now);
            if self.conns[i].state != State::Open {
                return;
            }
        }
        // Setting up, replies answer AUTH and SELECT: the load waits
        // for the start gate.
        if self.schedule.is_none() && self.setting_up.is_none() {
            self.send_batch(i, read_at);
        }
    }

    fn reply(&mut self, i: usize, r: Reply, now: u64) {
        let c = &mut self.conns[i];
        if c.skip > 0 {
            c.skip -= 1;
            if let Reply::Error(kind) = r {
                // AUTH or SELECT refused on a new connection.
                if let Some(s) = &mut self.setting_up {
                    if s.is_empty() {
                        *s = format!("AUTH or SELECT failed on a new connection: {kind}");
                    }
                }
                if self.win.measuring(now) {
                    self.rec.errors.connect += 1;
                }
                self.close(i, now);
            }
            return;
        }
        let Some((intended, sent)) = c.flight.pop_front() else {
            // A reply to nothing: the stream cannot be trusted.
            self.fail(i, now, Failure::Protocol);
            return;
        };
        if !self.win.measuring(intended) {
            self.rec.complete_early(now.saturating_sub(self.win.origin));
            return;
        }
        // A stamp is never before the command went out.
        let now = now.max(sent);
        match r {
            Reply::Ok => {
                let latency = now.saturating_sub(intended);
                self.rec.complete(now, latency);
                self.coalescer.observe(latency);
                if let Some(u) = self.rec.uncorrected.as_mut() {
                    u.record_ns(now.saturating_sub(sent));
                }
            }
            Reply::Error(kind) => {
                self.rec.errors.status += 1;
                match self.kinds.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, n)) => *n += 1,
                    None => self.kinds.push((kind, 1)),
                }
            }
        }
    }

    /// Connection `i` failed: what it had in flight is counted by `why`.
    fn fail(&mut self, i: usize, now: u64, why: Failure) {
        let lost = self.conns[i]
            .flight
            .iter()
            .filter(|f| f.0 >= self.win.measure_from)
            .count() as u64;
        if let Some(s) = &mut self.setting_up {
            if s.is_empty() {
                *s = format!(
                    "{} ({}) while connecting",
                    self.plan.cfg.endpoint,
                    why.words()
                );
            }
        }
        let e = &mut self.rec.errors;
        match why {
            Failure::Write => e.write += lost,
            Failure::Timeout => e.timeout += lost,
            Failure::Dropped | Failure::Protocol => e.read += lost,
        }
        if why != Failure::Timeout && self.win.measuring(now) {
            self.dropped += 1;
        }
        self.close(i, now);
        if why == Failure::Timeout && self.left.is_none() {
            // Not refused, only slow: open it again at once.
            self.conns[i].state = State::Down { retry_at: now };
            self.any_down = true;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    Write,
    Timeout,
    Dropped,
    Protocol,
}

impl Failure {
    fn words(self) -> &'static str {
        match self {
            Failure::Write => "write failed",
            Failure::Timeout => "no reply in time",
            Failure::Dropped => "connection closed",
            Failure::Protocol => "not a RESP reply",
        }
    }
}
