//! One worker thread: an event loop that owns its share of the connections,
//! waiting with io_uring or epoll (`wait`).
//!
//! A keep-alive request costs one `send` and a share of one `io_uring_enter`
//! (a multishot receive has already read the response); with epoll, one
//! `send`, one `read` (a response that fits in the 64 KiB buffer arrives
//! whole) and a share of one `epoll_wait`. The clock
//! is read once per completion, and that reading is also the send time of the
//! next request on the connection. Over TCP the completion time is the
//! kernel's receive timestamp of the response's last segment, so it does not
//! depend on when the worker woke; that is what lets a closed loop batch its
//! wake-ups ([`tare_engine::coalesce`]).
//!
//! The worker is one state machine per connection slot ([`Phase`]) driven
//! by one loop; its parts are split by what they do, all as methods of
//! [`Worker`] so the hot path stays direct calls on one struct:
//!
//! - `event_loop`: `run`, the loop itself, and routing readiness events.
//! - `wait`: epoll or io_uring: registering sockets, waiting, and routing
//!   io_uring completions into the same state machine.
//! - `connection`: a connection's lifecycle: open, connect, back-off, recycle.
//! - `send`: starting a request and writing it.
//! - `receive`: reading the response and recording its completion.
//! - `open_loop`: the schedule's arrivals, the backlog and free slots.
//! - `timeout`: the periodic scan for stuck requests and due retries.

mod connection;
mod event_loop;
mod open_loop;
mod receive;
mod send;
mod timeout;
mod wait;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tare_engine::connecting::ConnectPace;
use tare_engine::cpu::CpuTime;
use tare_engine::limits::Sources;
use tare_engine::progress::Counters;
use tare_engine::schedule::{Arrivals, Schedule};
use tare_engine::{endpoint::Socket, Clock, Endpoint, IoMode, Recorder};
use tare_engine::{Coalesce, Coalescer, RealtimeMap};
use tare_record::splitmix::SplitMix64;

use crate::response::Parser;
use connection::BACKOFF_MIN_NS;

const READ_BUF: usize = 64 * 1024;

/// What every worker of a run shares (read-only).
pub(crate) struct Plan {
    pub endpoint: Endpoint,
    /// Every request the run sends, serialized once (one, or a mix's).
    pub requests: Vec<Request>,
    /// A mix's cumulative weights, searched by each draw; empty: one
    /// request, never drawn (the single-URL path stays as it was).
    pub cumulative: Vec<u64>,
    /// A mix's seed (docs/http.md, "Request mixes").
    pub seed: u64,
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
    /// Connections of the whole run (`-c`).
    pub connections: u64,
    /// Closed loop: how an idle worker batches its wake-ups.
    pub coalesce: Coalesce,
    /// epoll or io_uring (`--io`).
    pub io: IoMode,
    /// When each connection is first opened (without a ramp).
    pub pace: ConnectPace,
    /// Source addresses the connections are spread over.
    pub sources: Sources,
}

/// One request, as written on the wire.
pub(crate) struct Request {
    pub bytes: Vec<u8>,
    /// HEAD: its response has no body whatever it says.
    pub head: bool,
    /// Idempotent (RFC 9110 §9.2.2): sent again, once, when a reused
    /// keep-alive connection turns out closed before any byte of its
    /// response (docs/http.md, "Keep-alive").
    pub idempotent: bool,
}

/// One named request's counts in a mix (one per request, in mix order).
#[derive(Clone, Default)]
pub(crate) struct NameStats {
    pub requests: u64,
    pub in_flight: u64,
    pub errors: tare_record::Errors,
    /// Made at its first completion ([`tare_record::Latency::coarse`]):
    /// a name never drawn costs no histogram.
    pub latency: Option<tare_record::Latency>,
}

impl NameStats {
    pub(crate) fn add(&mut self, o: &NameStats) {
        self.requests += o.requests;
        self.in_flight += o.in_flight;
        self.errors.add(&o.errors);
        if let Some(l) = &o.latency {
            self.latency
                .get_or_insert_with(tare_record::Latency::coarse)
                .merge(l);
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, latency_ns: u64) {
        self.requests += 1;
        self.latency
            .get_or_insert_with(tare_record::Latency::coarse)
            .record_ns(latency_ns);
    }
}

pub(crate) struct Outcome {
    pub recorder: Recorder,
    /// A mix's counts by request (empty for one request).
    pub names: Vec<NameStats>,
    pub cpu: CpuTime,
    /// Clock reading when the worker stopped measuring.
    pub finished_ns: u64,
    /// Clock reading of the last completion.
    pub last_completion_ns: u64,
    /// Open loop: arrivals due by the deadline but never sent.
    pub unsent: u64,
    pub wakeups: tare_record::WakeupReport,
    pub connect: tare_record::ConnectReport,
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
    /// Arrival time of the last bytes read (receive timestamp, clock ns).
    rx_ns: Option<u64>,
    got_first_byte: bool,
    backoff_ns: u64,
    /// Open loop: the intended send time of the request this connection is
    /// about to send.
    intended: Option<u64>,
    /// When this connection started on its current request (its connect, or
    /// its send on a reused connection): `--timeout` counts from here.
    busy_since: u64,
    /// io_uring: the socket's generation (part of its token), and whether
    /// a receive or a writability poll is pending on it.
    gen: u32,
    armed: bool,
    polling: bool,
    /// Connected (counted in `Worker::established`).
    established: bool,
    /// The request being sent or awaited (its index in `Plan::requests`).
    req: u32,
    /// The connection had completed a response before the current request
    /// was sent on it: a close before any byte of the answer is the server
    /// letting an idle connection go, not the request failing.
    reused: bool,
    /// The current request's begin time, kept while it is sent again on a
    /// new connection after such a close.
    resend: Option<u64>,
}

pub(crate) struct Worker<'a> {
    plan: &'a Plan,
    io: tare_engine::uring::Io,
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
    coalescer: Coalescer,
    /// Receive timestamps are asked for (TCP) and mapped with `rx_map`.
    rx_stamps: bool,
    rx_map: RealtimeMap,
    /// This worker's index: connection `j` is the run's `j * threads + index`.
    index: usize,
    /// Connections established now, and when all of them first were.
    established: u64,
    all_established_ns: Option<u64>,
    /// A mix: the draws' generator and the counts by request.
    draws: SplitMix64,
    names: Vec<NameStats>,
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
                // A closed-loop ramp staggers connection starts evenly (an
                // open loop's ramp raises the rate instead); otherwise they
                // are paced (`--connect-rate`), as `run` planned the start.
                phase: Phase::Idle {
                    retry_at: if plan.ramp_ns > 0 {
                        if open_loop {
                            0
                        } else {
                            plan.ramp_ns * j as u64 / n as u64
                        }
                    } else if open_loop && !plan.keepalive {
                        0
                    } else {
                        plan.pace.start_ns((j * plan.threads + index) as u64)
                    },
                },
                parser: Parser::new(plan.requests[0].head),
                began_ns: 0,
                sent_ns: 0,
                rx_ns: None,
                got_first_byte: false,
                reused: false,
                resend: None,
                backoff_ns: BACKOFF_MIN_NS,
                intended: None,
                busy_since: 0,
                gen: 0,
                armed: false,
                polling: false,
                established: false,
                req: 0,
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
        let coalescer = Coalescer::for_worker(plan.coalesce, &plan.endpoint, open_loop);
        let rx_stamps = coalescer.enabled();
        let mut rec = Recorder::new(plan.start_ns, plan.expected_ns, !plan.keepalive);
        if open_loop {
            rec.uncorrected = Some(tare_record::Latency::new());
        }
        Ok(Self {
            plan,
            io: tare_engine::uring::Io::new(
                plan.io,
                conns.len(),
                READ_BUF / 4,
                rx_stamps,
                &plan.clock,
            )?,
            conns,
            quota,
            rec,
            buf: vec![0; READ_BUF],
            board,
            last_completion_ns: 0,
            schedule,
            backlog: VecDeque::new(),
            idle: Vec::new(),
            coalescer,
            rx_stamps,
            rx_map: RealtimeMap::new(&plan.clock),
            index,
            established: 0,
            all_established_ns: None,
            // Each thread its own sequence, the same for the same seed.
            draws: SplitMix64::new(
                plan.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            names: if plan.cumulative.is_empty() {
                Vec::new()
            } else {
                vec![NameStats::default(); plan.requests.len()]
            },
        })
    }

    /// A mix: draws slot `i`'s next request by weight (one request: none).
    #[inline]
    fn draw(&mut self, i: usize) {
        if let Some(&total) = self.plan.cumulative.last() {
            let r = self.draws.below(total as usize) as u64;
            let req = self.plan.cumulative.partition_point(|&c| c <= r);
            let c = &mut self.conns[i];
            c.req = req as u32;
            c.parser.set_head(self.plan.requests[req].head);
        }
    }

    /// A mix: the counts of the request slot `i` is sending or awaiting;
    /// `None` without a mix or with no request on the slot (connecting,
    /// idle: a connect error belongs to no name).
    #[inline]
    fn named(&mut self, i: usize) -> Option<&mut NameStats> {
        let c = &self.conns[i];
        if !matches!(c.phase, Phase::Writing { .. } | Phase::Reading) {
            return None;
        }
        self.names.get_mut(c.req as usize)
    }

    #[inline]
    fn measuring(&self, now: u64) -> bool {
        now >= self.plan.start_ns
    }

    fn open_loop(&self) -> bool {
        self.schedule.is_some()
    }

    /// Connection `i`'s index in the whole run (its opening order).
    fn run_index(&self, i: usize) -> u64 {
        (i * self.plan.threads + self.index) as u64
    }

    /// What every connection is doing now, and when all were established.
    fn connect_report(&self) -> tare_record::ConnectReport {
        let mut r = tare_record::ConnectReport {
            rate: self.plan.pace.rate,
            burst: self.plan.pace.burst.min(self.plan.connections),
            established_all_s: self.all_established_ns.map(|t| t as f64 / 1e9),
            source_addresses: self.plan.sources.count,
            ..Default::default()
        };
        for c in &self.conns {
            match c.phase {
                _ if c.established => r.established += 1,
                Phase::Connecting => r.connecting += 1,
                Phase::Idle { .. } if c.backoff_ns > BACKOFF_MIN_NS => r.refused += 1,
                _ => r.idle += 1,
            }
        }
        r
    }
}
