//! rr, crr and udp-rr on the event loop every engine shares: each worker
//! thread drives its share of the connections (`-c` over `-t` threads)
//! through one wait, io_uring where the kernel allows it, else epoll
//! (`tare_engine::uring::Io`, `--io`), each connection a small state
//! machine with one transaction in flight, as netperf's.
//!
//! - rr: a kept connection, its 16-byte header sent once, then request,
//!   response, request... A failed transaction is counted by kind
//!   (write, read, timeout) and the connection opened again; a refused
//!   connection ends that connection for the run.
//! - crr: connect, header and request in one write, the response, then
//!   the responder's close (waited for outside the latency, so the
//!   responder keeps TIME_WAIT); the latency runs from the connect, the
//!   connect time recorded apart. A refused connect ends the connection.
//! - udp-rr: a connected UDP socket, a sequence number in every request;
//!   one unanswered within `--timeout` is lost (counted, and the next one
//!   sent, never a stall), a late answer recognised by its number and
//!   ignored; three refusals in a row (ICMP port unreachable) end it.
//!
//! Connections are opened before the start gate, so connecting is not in
//! the measured period. Closed loop: a connection sends its next request
//! when the last response is whole, the latency from that send. Open loop
//! (`--rate`): arrivals follow the thread's schedule (its connections'
//! share of the rate), each to the next idle connection, the latency from
//! its intended time. At the end, transactions in flight are finished
//! (within `--timeout`) and counted, as a blocking netperf finishes its
//! last one, so the client's count equals the responder's.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use tare_engine::cpu::CpuTime;
use tare_engine::endpoint::Socket;
use tare_engine::poller::{Interest, Ready};
use tare_engine::progress::Counters;
use tare_engine::schedule::Schedule;
use tare_engine::uring::{self, Event, Io, IoMode};
use tare_engine::Endpoint;

use crate::client::{Outcome, Plan};
use crate::config::Test;
use crate::wire::{Datagram, Header, Mode, HEADER_LEN};

/// After this many refused sends in a row (the responder's port is
/// closed: ICMP port unreachable), a UDP connection stops.
const REFUSED_IN_A_ROW: u32 = 3;
/// How often in-flight transactions are checked against the timeout, at
/// most (a shorter timeout is checked four times per timeout).
const SCAN_NS: u64 = 10_000_000;
/// Opening the connections before the start may take this long at least
/// (a backlog that drops a SYN retries it after a second).
const MIN_SETUP_NS: u64 = 3_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No socket: about to connect (rr, or crr between transactions).
    Closed,
    /// A non-blocking connect in progress.
    Connecting,
    /// Connected (rr, udp-rr), nothing in flight.
    Idle,
    /// A request partly written.
    Sending,
    /// The request is out; the response is awaited.
    Awaiting,
    /// crr: the response is whole; the responder's close is awaited.
    Closing,
    /// Ended for the run (refused).
    Dead,
}

enum Sock {
    Stream(Socket),
    Udp(UdpSocket),
}

impl Sock {
    fn fd(&self) -> i32 {
        match self {
            Sock::Stream(s) => s.fd(),
            Sock::Udp(u) => u.as_raw_fd(),
        }
    }

    fn write(&self, b: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Stream(s) => s.write(b),
            Sock::Udp(u) => u.send(b),
        }
    }

    fn read(&self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Stream(s) => s.read(b),
            Sock::Udp(u) => u.recv(b),
        }
    }
}

struct Slot {
    sock: Option<Sock>,
    phase: Phase,
    /// Sockets this slot has had (io_uring tokens name the current one).
    epoch: u64,
    /// io_uring: a multishot receive is pending.
    receiving: bool,
    /// Writability is awaited (epoll `EPOLLOUT`, or an io_uring poll).
    polling: bool,
    /// This transaction: its intended start, its send (crr: its connect),
    /// crr's connect completion, and when it times out.
    intended: u64,
    sent: u64,
    connected: u64,
    deadline: u64,
    /// Response bytes so far; bytes of this write written.
    got: usize,
    written: usize,
    /// rr: the connection's header is still to be sent (before any request).
    hello: bool,
    /// udp-rr: the request's number, and refusals in a row.
    seq: u64,
    refused: u32,
}

/// One worker's run over its connections. `connect_all` before the start
/// gate, `run` after it.
pub(crate) struct Transactions<'p> {
    plan: &'p Plan,
    test: Test,
    io: Io,
    slots: Vec<Slot>,
    /// rr: the header; crr: header and request; udp-rr: the datagram
    /// (its header rewritten per request).
    first: Vec<u8>,
    request: Vec<u8>,
    buf: Vec<u8>,
    schedule: Option<Schedule>,
    /// Slots that became free to start a transaction, in order (checked
    /// again when taken: a slot may have died or started since).
    idle: VecDeque<usize>,
    /// Slots ended for the run.
    dead: usize,
    out: Outcome,
    /// The measured period on the run's clock (set when the run starts).
    start_ns: u64,
    end_ns: u64,
    /// The common start (the warm-up's completions count per second from it).
    origin_ns: u64,
    ready: Vec<Ready>,
    events: Vec<Event>,
    draining: bool,
}

impl<'p> Transactions<'p> {
    /// A worker for `slots` connections of a `test` run.
    pub(crate) fn new(plan: &'p Plan, test: Test, slots: usize) -> io::Result<Self> {
        let udp = test == Test::UdpRr;
        // A datagram must fit one provided buffer whole; where the ring's
        // buffers would be smaller than the response, epoll reads it.
        let mode = match plan.io {
            IoMode::Auto
                if udp && uring::Ring::buffer_size(slots, plan.response) < plan.response =>
            {
                IoMode::Epoll
            }
            m => m,
        };
        if mode == IoMode::Uring
            && udp
            && uring::Ring::buffer_size(slots, plan.response) < plan.response
        {
            return Err(io::Error::other(format!(
                "--io io_uring: {}-byte datagrams do not fit the ring's buffers for {slots} connections; use --io epoll",
                plan.response
            )));
        }
        let io = Io::new(mode, slots, plan.response.max(1024), false, &plan.clock)?;
        let header = |mode| Header {
            mode,
            request: plan.request as u32,
            response: plan.response as u32,
        };
        let first = match test {
            Test::Rr => header(Mode::Rr).encode().to_vec(),
            Test::Crr => {
                let mut f = header(Mode::Crr).encode().to_vec();
                f.resize(HEADER_LEN + plan.request, 0);
                f
            }
            _ => Vec::new(),
        };
        let slot = || Slot {
            sock: None,
            phase: Phase::Closed,
            epoch: 0,
            receiving: false,
            polling: false,
            intended: 0,
            sent: 0,
            connected: 0,
            deadline: u64::MAX,
            got: 0,
            written: 0,
            hello: false,
            seq: 0,
            refused: 0,
        };
        Ok(Transactions {
            plan,
            test,
            io,
            slots: (0..slots).map(|_| slot()).collect(),
            first,
            request: vec![0; plan.request],
            buf: vec![0; plan.response.max(HEADER_LEN) + 1],
            schedule: None,
            idle: VecDeque::with_capacity(slots),
            dead: 0,
            out: Outcome::new(plan, test == Test::Crr),
            start_ns: plan.start_ns,
            end_ns: plan.end_ns,
            origin_ns: 0,
            ready: Vec::with_capacity(slots.max(1)),
            events: Vec::with_capacity(slots.max(1)),
            draining: false,
        })
    }

    /// Opens the kept connections (rr: connected and the header sent;
    /// udp-rr: a connected socket) before the start; one that cannot be
    /// opened is a connect error and ends that connection.
    pub(crate) fn connect_all(&mut self) {
        let clock = self.plan.clock;
        if self.test == Test::Crr {
            return;
        }
        for i in 0..self.slots.len() {
            self.open(i);
        }
        let limit = clock.now_ns() + (self.plan.timeout.as_nanos() as u64).max(MIN_SETUP_NS);
        while self
            .slots
            .iter()
            .any(|s| s.phase == Phase::Connecting || s.phase == Phase::Sending)
        {
            let now = clock.now_ns();
            if now >= limit || self.plan.stop.load(Ordering::Relaxed) {
                for i in 0..self.slots.len() {
                    if matches!(self.slots[i].phase, Phase::Connecting | Phase::Sending) {
                        self.out.rec.errors.connect += 1;
                        self.kill(i);
                    }
                }
                break;
            }
            if self.wait(now, limit.min(now + SCAN_NS)).is_err() {
                break;
            }
        }
    }

    /// The measured run from the common start `origin_ns`: the plan's
    /// `start_ns` and `end_ns` count from it. `rate`: this thread's share.
    pub(crate) fn run(
        mut self,
        origin_ns: u64,
        rate: Option<f64>,
        seed: u64,
        stats: &Counters,
    ) -> Outcome {
        let plan = self.plan;
        let clock = plan.clock;
        let cpu0 = CpuTime::thread();
        self.origin_ns = origin_ns;
        self.start_ns = origin_ns + plan.start_ns;
        self.end_ns = origin_ns + plan.end_ns;
        // A recorder for the measured period; connecting's errors kept.
        let errors = self.out.rec.errors;
        self.out = Outcome::from_origin(plan, origin_ns, self.test == Test::Crr);
        self.out.rec.errors = errors;
        if self.test == Test::Crr {
            self.idle.extend(0..self.slots.len());
        }
        if let Some(r) = rate {
            self.schedule = Some(Schedule::new(r, plan.arrivals, 0, origin_ns, seed));
            tare_engine::schedule::tighten_timer_slack();
        }
        let timeout_ns = plan.timeout.as_nanos() as u64;
        let mut next_scan = clock.now_ns();
        let mut drain_until = u64::MAX;
        loop {
            let now = clock.now_ns();
            if plan.stop.load(Ordering::Relaxed) {
                break;
            }
            if !self.draining && now >= self.end_ns {
                // In-flight transactions finish (within the timeout).
                self.draining = true;
                drain_until = now + timeout_ns;
            }
            if self.draining && (now >= drain_until || !self.any_in_flight()) {
                // What is still unanswered has had its timeout: counted
                // (udp-rr: lost, as the responder knows it dropped it).
                self.expire(now);
                break;
            }
            if self.dead == self.slots.len() {
                break;
            }
            if now >= next_scan {
                // Every transaction from now on times out after `timeout`.
                next_scan = self.expire(now).min(now + timeout_ns);
            }
            if !self.draining {
                self.start_due(now);
            }
            let mut until = next_scan.min(if self.draining {
                drain_until
            } else {
                self.end_ns
            });
            if let Some(s) = &self.schedule {
                if !self.draining && !self.idle.is_empty() {
                    until = until.min(s.peek());
                }
            }
            if self.wait(now, until.max(now)).is_err() {
                break;
            }
            stats.publish(self.out.rec.requests, self.out.rec.errors.total());
        }
        stats.publish(self.out.rec.requests, self.out.rec.errors.total());
        if let Some(s) = self.schedule.as_mut() {
            self.out.unsent = s.drain_before(self.end_ns, None);
        }
        self.out.rec.in_flight = self.slots.iter().filter(|s| in_flight(s.phase)).count() as u64;
        for i in 0..self.slots.len() {
            self.close(i);
        }
        self.out.cpu = CpuTime::thread().since(&cpu0);
        self.out.io = self.io.name();
        let now = clock.now_ns();
        self.out.finished_ns = self.out.finished_ns.max(now.min(self.end_ns));
        self.out
    }

    fn any_in_flight(&self) -> bool {
        self.slots.iter().any(|s| in_flight(s.phase))
    }

    /// Closed loop: every connection that became free starts its next
    /// transaction now. Open loop: every arrival due goes to the next free
    /// connection, in the order they became free.
    fn start_due(&mut self, now: u64) {
        if self.schedule.is_none() {
            // Only those queued now: one that fails at once and frees
            // itself again waits for the next turn.
            for _ in 0..self.idle.len() {
                let Some(i) = self.idle.pop_front() else {
                    break;
                };
                if self.free(i) {
                    self.begin(i, now, now);
                }
            }
            return;
        }
        while let Some(due) = self.schedule.as_ref().map(Schedule::peek) {
            if due > now {
                break;
            }
            let Some(i) = self.idle.pop_front() else {
                break;
            };
            if !self.free(i) {
                continue;
            }
            let intended = self.schedule.as_mut().map_or(now, Schedule::take);
            if intended >= self.start_ns {
                self.out.rec.lag(intended, now);
            }
            self.begin(i, intended, now);
        }
    }

    /// Whether slot `i` may start a transaction.
    fn free(&self, i: usize) -> bool {
        match self.slots[i].phase {
            Phase::Idle => true,
            Phase::Closed => self.test == Test::Crr,
            _ => false,
        }
    }

    /// Opens slot `i`'s kept connection (rr, udp-rr) or this transaction's
    /// connection (crr).
    fn open(&mut self, i: usize) {
        let plan = self.plan;
        let s = &mut self.slots[i];
        s.epoch += 1;
        s.got = 0;
        s.written = 0;
        s.receiving = false;
        s.polling = false;
        let token = uring::token(i, s.epoch);
        if self.test == Test::UdpRr {
            match udp_socket(&plan.endpoint) {
                Ok(u) => {
                    let fd = u.as_raw_fd();
                    s.sock = Some(Sock::Udp(u));
                    s.phase = Phase::Idle;
                    self.idle.push_back(i);
                    match &mut self.io {
                        Io::Epoll(p) => {
                            if p.add(fd, i as u64, Interest::Read).is_err() {
                                self.out.rec.errors.connect += 1;
                                return self.kill(i);
                            }
                        }
                        Io::Uring { ring, .. } => {
                            ring.recv(fd, token);
                            s.receiving = true;
                        }
                    }
                }
                Err(_) => {
                    self.out.rec.errors.connect += 1;
                    self.kill(i);
                }
            }
            return;
        }
        match plan.endpoint.connect() {
            Ok(sock) => {
                let fd = sock.fd();
                s.sock = Some(Sock::Stream(sock));
                s.phase = Phase::Connecting;
                // A connect that hangs (a handshake dropped) times out too.
                if self.test == Test::Rr {
                    s.deadline = plan.clock.now_ns() + plan.timeout.as_nanos() as u64;
                }
                s.polling = true;
                match &mut self.io {
                    Io::Epoll(p) => {
                        if p.add(fd, i as u64, Interest::Write).is_err() {
                            self.out.rec.errors.connect += 1;
                            self.kill(i);
                        }
                    }
                    Io::Uring { ring, .. } => ring.poll_writable(fd, token),
                }
            }
            Err(_) => {
                self.out.rec.errors.connect += 1;
                self.kill(i);
            }
        }
    }

    /// Slot `i`'s connect finished (or failed).
    fn connected(&mut self, i: usize, now: u64) {
        let ok = matches!(
            self.slots[i].sock.as_ref(),
            Some(Sock::Stream(s)) if matches!(s.take_error(), Ok(None))
        );
        if !ok {
            self.out.rec.errors.connect += 1;
            return self.kill(i);
        }
        let s = &mut self.slots[i];
        s.polling = false;
        s.connected = now;
        if let (Io::Epoll(p), Some(sock)) = (&self.io, &s.sock) {
            let _ = p.modify(sock.fd(), i as u64, Interest::Read);
        }
        self.arm(i);
        let s = &mut self.slots[i];
        s.written = 0;
        s.phase = Phase::Sending;
        // rr sends its header now, crr its header and request.
        s.hello = self.test == Test::Rr;
        self.flush(i);
    }

    /// io_uring: receives on slot `i` until its socket closes.
    fn arm(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if let (Io::Uring { ring, .. }, Some(sock)) = (&mut self.io, &s.sock) {
            if !s.receiving {
                ring.recv(sock.fd(), uring::token(i, s.epoch));
                s.receiving = true;
            }
        }
    }

    /// Starts a transaction on slot `i`, intended at `intended`.
    fn begin(&mut self, i: usize, intended: u64, now: u64) {
        let timeout = self.plan.timeout.as_nanos() as u64;
        let s = &mut self.slots[i];
        s.intended = intended;
        s.sent = now;
        s.got = 0;
        s.written = 0;
        s.deadline = now + timeout;
        match self.test {
            Test::Crr => self.open(i),
            Test::UdpRr => {
                s.seq += 1;
                Datagram {
                    response: self.plan.response as u32,
                    seq: s.seq,
                }
                .write(&mut self.request);
                s.phase = Phase::Sending;
                self.flush(i);
            }
            _ => {
                s.phase = Phase::Sending;
                self.flush(i);
            }
        }
    }

    /// Writes what slot `i` has to send: rr's header once connected, then
    /// its requests; crr's header and request; a datagram.
    fn flush(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let Some(sock) = &s.sock else { return };
        let bytes: &[u8] = if s.hello || self.test == Test::Crr {
            &self.first
        } else {
            &self.request
        };
        while s.written < bytes.len() {
            match sock.write(&bytes[s.written..]) {
                Ok(n) => s.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.failed(i, Failure::Write(e)),
            }
        }
        let done = s.written >= bytes.len();
        if done {
            s.written = 0;
            if s.hello {
                // The header is out: the connection is ready.
                s.hello = false;
                s.phase = Phase::Idle;
                self.idle.push_back(i);
            } else {
                s.phase = Phase::Awaiting;
            }
        }
        if done == s.polling {
            let fd = sock.fd();
            s.polling = !done;
            match &mut self.io {
                Io::Epoll(p) => {
                    let interest = if done {
                        Interest::Read
                    } else {
                        Interest::ReadWrite
                    };
                    let _ = p.modify(fd, i as u64, interest);
                }
                Io::Uring { ring, .. } if !done => ring.poll_writable(fd, uring::token(i, s.epoch)),
                Io::Uring { .. } => {}
            }
        }
    }

    /// `bytes` arrived on slot `i` (`data` holds them for udp-rr).
    fn received(&mut self, i: usize, n: usize, now: u64) {
        let plan = self.plan;
        let s = &mut self.slots[i];
        match (self.test, s.phase) {
            (Test::UdpRr, Phase::Awaiting) => {
                let ok = matches!(Datagram::parse(&self.buf[..n]), Ok(d) if d.seq == s.seq)
                    && n == plan.response;
                if ok {
                    s.refused = 0;
                    s.phase = Phase::Idle;
                    self.idle.push_back(i);
                    s.deadline = u64::MAX;
                    if s.intended >= self.start_ns {
                        self.out.rec.bytes_read += n as u64;
                    }
                    record(
                        (self.origin_ns, self.start_ns),
                        &mut self.out,
                        s.intended,
                        s.sent,
                        now,
                    );
                }
                // Else a late answer to a request already counted lost.
            }
            (Test::UdpRr, _) => {}
            (_, Phase::Awaiting | Phase::Sending) => {
                s.got += n;
                if s.got < plan.response {
                    return;
                }
                if s.got > plan.response {
                    // More than was asked for: the stream is out of step.
                    return self.failed(i, Failure::Read);
                }
                if s.intended >= self.start_ns {
                    self.out.rec.bytes_read += plan.response as u64;
                }
                if self.test == Test::Crr && s.intended >= self.start_ns {
                    if let Some(c) = self.out.rec.connect.as_mut() {
                        c.record_ns(s.connected - s.sent);
                    }
                    if let Some(f) = self.out.rec.first_byte.as_mut() {
                        f.record_ns(now - s.connected);
                    }
                }
                let (intended, sent) = (s.intended, s.sent);
                record(
                    (self.origin_ns, self.start_ns),
                    &mut self.out,
                    intended,
                    sent,
                    now,
                );
                let s = &mut self.slots[i];
                s.deadline = if self.test == Test::Crr {
                    // The responder closes; its end of file is awaited
                    // outside the latency.
                    s.phase = Phase::Closing;
                    now + plan.timeout.as_nanos() as u64
                } else {
                    s.phase = Phase::Idle;
                    self.idle.push_back(i);
                    u64::MAX
                };
            }
            // Bytes nobody asked for on a kept connection: out of step.
            // (crr's after its response are ignored: it closes anyway.)
            (Test::Rr, Phase::Idle) => self.failed(i, Failure::Read),
            _ => {}
        }
    }

    /// The peer closed slot `i` (or reading it failed).
    fn at_eof(&mut self, i: usize) {
        match self.slots[i].phase {
            Phase::Closing => {
                self.close(i);
                self.slots[i].phase = Phase::Closed;
                self.idle.push_back(i);
            }
            Phase::Dead | Phase::Closed => {}
            _ => self.failed(i, Failure::Read),
        }
    }

    /// Transactions past their deadline: counted as timeouts (udp-rr: lost).
    /// Returns the earliest deadline left: no transaction started later
    /// can time out before it (each is given the same timeout from a later
    /// start), so the next scan is due then, not on a fixed period (a
    /// thread per connection woken every 10 ms cost CPU for nothing).
    fn expire(&mut self, now: u64) -> u64 {
        let mut next = u64::MAX;
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if now < s.deadline {
                if matches!(s.phase, Phase::Closing) || in_flight(s.phase) {
                    next = next.min(s.deadline);
                }
                continue;
            }
            match s.phase {
                Phase::Closing => {
                    self.close(i);
                    self.slots[i].phase = Phase::Closed;
                    self.idle.push_back(i);
                }
                Phase::Awaiting | Phase::Sending | Phase::Connecting => {
                    self.failed(i, Failure::Timeout)
                }
                _ => {}
            }
        }
        next
    }

    /// Slot `i`'s transaction failed: counted by kind, and the connection
    /// opened again (rr), the next transaction started (crr, udp-rr).
    fn failed(&mut self, i: usize, why: Failure) {
        let udp = self.test == Test::UdpRr;
        let e = &mut self.out.rec.errors;
        let s = &mut self.slots[i];
        s.deadline = u64::MAX;
        match why {
            Failure::Timeout if udp => {
                self.out.lost += 1;
                e.timeout += 1;
                s.phase = Phase::Idle;
                self.idle.push_back(i);
                return;
            }
            Failure::Timeout => e.timeout += 1,
            Failure::Read if udp => e.read += 1,
            Failure::Read => e.read += 1,
            Failure::Write(err) if udp && err.kind() == io::ErrorKind::ConnectionRefused => {
                return self.refused(i);
            }
            Failure::Write(_) => e.write += 1,
        }
        if udp {
            s.phase = Phase::Idle;
            self.idle.push_back(i);
            return;
        }
        self.close(i);
        self.slots[i].phase = Phase::Closed;
        self.idle.push_back(i);
        if self.test == Test::Rr && !self.draining {
            // Out of step (or gone): a new connection.
            self.open(i);
        }
    }

    /// udp-rr: the responder's port refused slot `i`'s request.
    fn refused(&mut self, i: usize) {
        self.out.rec.errors.connect += 1;
        let s = &mut self.slots[i];
        s.refused += 1;
        s.deadline = u64::MAX;
        s.phase = Phase::Idle;
        self.idle.push_back(i);
        if s.refused >= REFUSED_IN_A_ROW {
            self.kill(i);
        }
    }

    /// Ends slot `i` for the run.
    fn kill(&mut self, i: usize) {
        self.close(i);
        if self.slots[i].phase != Phase::Dead {
            self.dead += 1;
        }
        self.slots[i].phase = Phase::Dead;
    }

    /// Closes slot `i`'s socket; with io_uring its receive and poll are
    /// cancelled first (they hold the socket open).
    fn close(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if let Some(sock) = s.sock.take() {
            self.io
                .forget(sock.fd(), i, s.epoch, s.receiving || s.polling);
        }
        s.receiving = false;
        s.polling = false;
    }

    /// Waits until `until` at the latest and handles what happened.
    fn wait(&mut self, now: u64, until: u64) -> io::Result<()> {
        let mut ready = std::mem::take(&mut self.ready);
        let mut events = std::mem::take(&mut self.events);
        let r = self.io.wait(now, until, &mut ready, &mut events);
        for r in ready.drain(..) {
            self.on_ready(r);
        }
        for ev in events.drain(..) {
            self.on_completion(ev);
        }
        self.ready = ready;
        self.events = events;
        r.map(|_| ())
    }

    /// epoll: slot `r.token` is ready.
    fn on_ready(&mut self, r: Ready) {
        let i = r.token as usize;
        let now = self.plan.clock.now_ns();
        if self.slots.get(i).is_none_or(|s| s.sock.is_none()) {
            return;
        }
        match self.slots[i].phase {
            Phase::Connecting if r.writable || r.hangup => return self.connected(i, now),
            Phase::Sending if r.writable => self.flush(i),
            _ => {}
        }
        if r.readable || r.hangup {
            self.read(i);
        }
    }

    /// epoll: reads what slot `i` has.
    fn read(&mut self, i: usize) {
        loop {
            let Some(sock) = self.slots[i].sock.as_ref() else {
                return;
            };
            let r = sock.read(&mut self.buf);
            let now = self.plan.clock.now_ns();
            match r {
                Ok(0) if self.test != Test::UdpRr => return self.at_eof(i),
                Ok(n) => {
                    self.received(i, n, now);
                    if self.test != Test::UdpRr && n < self.buf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if self.test == Test::UdpRr && e.kind() == io::ErrorKind::ConnectionRefused =>
                {
                    if in_flight(self.slots[i].phase) {
                        self.refused(i);
                    }
                    return;
                }
                Err(_) => return self.failed(i, Failure::Read),
            }
            if self.slots[i].sock.is_none() {
                return;
            }
        }
    }

    /// io_uring: one completion.
    fn on_completion(&mut self, ev: Event) {
        let now = self.plan.clock.now_ns();
        let slots = &self.slots;
        let Some((ring, i)) = self.io.completion_for(&ev, |i| {
            slots.get(i).filter(|s| s.sock.is_some()).map(|s| s.epoch)
        }) else {
            return;
        };
        match ev {
            Event::Ready {
                writable, hangup, ..
            } => {
                self.slots[i].polling = false;
                match self.slots[i].phase {
                    Phase::Connecting if writable || hangup => self.connected(i, now),
                    Phase::Sending => self.flush(i),
                    _ => {}
                }
            }
            Event::Data {
                buf, len, armed, ..
            } => {
                self.slots[i].receiving = armed;
                let data = ring.data(buf, len);
                let n = data.len();
                if self.test == Test::UdpRr {
                    let k = n.min(self.buf.len());
                    self.buf[..k].copy_from_slice(&data[..k]);
                }
                ring.release(buf);
                self.received(i, n, now);
                if self.slots[i].sock.is_some() && !self.slots[i].receiving {
                    self.arm(i);
                }
            }
            Event::Eof { .. } => {
                self.slots[i].receiving = false;
                self.at_eof(i);
            }
            Event::Failed { errno, .. } => {
                self.slots[i].receiving = false;
                if errno == libc::ENOBUFS {
                    self.arm(i);
                } else if self.test == Test::UdpRr && errno == libc::ECONNREFUSED {
                    if in_flight(self.slots[i].phase) {
                        self.refused(i);
                    }
                    self.arm(i);
                } else {
                    self.failed(i, Failure::Read);
                }
            }
        }
    }
}

/// Records one transaction intended at `intended`, sent at `sent`, done
/// at `done`: in the summary when intended after the warm-up.
pub(crate) fn record(
    (origin_ns, start_ns): (u64, u64),
    out: &mut Outcome,
    intended: u64,
    sent: u64,
    done: u64,
) {
    if intended < start_ns {
        out.rec.complete_early(done.saturating_sub(origin_ns));
        return;
    }
    // Open loop: the latency from the send as well (the recorder has one).
    if let Some(u) = out.rec.uncorrected.as_mut() {
        u.record_ns(done - sent);
    }
    out.rec.complete(done, done - intended);
    out.finished_ns = out.finished_ns.max(done);
}

enum Failure {
    Write(io::Error),
    Read,
    Timeout,
}

fn in_flight(p: Phase) -> bool {
    matches!(p, Phase::Sending | Phase::Awaiting | Phase::Connecting)
}

/// A non-blocking UDP socket connected to the responder.
fn udp_socket(endpoint: &Endpoint) -> io::Result<UdpSocket> {
    let Endpoint::Tcp(addr) = endpoint else {
        return Err(io::Error::other("udp-rr needs an address"));
    };
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().expect("address")
    } else {
        "[::]:0".parse().expect("address")
    };
    let u = UdpSocket::bind(bind)?;
    u.connect(addr)?;
    u.set_nonblocking(true)?;
    Ok(u)
}
