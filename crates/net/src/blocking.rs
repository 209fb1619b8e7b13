//! rr with one connection per thread, closed loop: a blocking send and a
//! blocking receive, as netperf's TCP_RR, sockperf's ping-pong and qperf's
//! tcp_lat run. With a single transaction in flight per thread, an event
//! loop's wait is one more system call (and io_uring's submission and
//! completion work) per round trip than a blocked `recv`: an interleaved
//! comparison on loopback measured the io_uring loop's client at 1.04x
//! the CPU per transaction of this one (docs/net.md, "The blocking
//! client").
//!
//! It keeps the event loop's rules: the connection is opened and its
//! header sent before the start gate; a failed transaction is counted by
//! kind (write, read, timeout) and the connection opened again; a refused
//! connection ends it for the run; a transaction in flight at the end is
//! finished, so the client's count equals the responder's; `stop` is seen
//! between transactions.
//!
//! The receive blocks without a timeout of its own: a socket receive
//! timeout (`SO_RCVTIMEO`) arms and cancels a kernel timer around every
//! blocked `recv`, a cost per round trip that neither qperf nor sockperf
//! pays. Instead the thread that opened the start gate watches the
//! transactions in flight ([`watch`]), sleeping until the earliest one
//! could time out (once per `--timeout` while they complete), and shuts a
//! late one's connection down: its `recv` returns, the transaction counts
//! as a timeout (its answer, if it comes, was late), and the worker opens
//! a new connection.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::Thread;
use std::time::Duration;

use tare_engine::cpu::CpuTime;
use tare_engine::progress::Counters;

use crate::client::{is_timeout, Outcome, Plan};
use crate::stream::Conn;
use crate::transactions::record;
use crate::wire::{Header, Mode};

/// `Watch::sent` of a transaction the watchdog found late.
const EXPIRED: u64 = u64::MAX;

/// What the watchdog sees of one worker; a cache line of its own, as the
/// worker writes `sent` twice per round trip.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct Watch {
    /// When the transaction in flight was sent (run clock, at least 1);
    /// 0 when none is; [`EXPIRED`] once the watchdog called it late.
    sent: AtomicU64,
    /// A second descriptor of the worker's connection, for the watchdog
    /// to shut down. Replaced under the lock when the worker reconnects,
    /// so a shut-down never reaches a newer connection.
    conn: Mutex<Option<Conn>>,
}

/// Counts a worker finished (also when it panics) and wakes the watchdog.
pub(crate) struct Finished<'a> {
    pub done: &'a AtomicUsize,
    pub watchdog: Thread,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.done.fetch_add(1, Ordering::AcqRel);
        self.watchdog.unpark();
    }
}

/// The watchdog, run by the thread that opened the start gate until all
/// `workers` have finished (`done`; each wakes it as it ends): a
/// transaction in flight for `timeout` is marked late and its connection
/// shut down. It sleeps until the earliest transaction in flight could be
/// late, so while they complete it wakes once per `timeout`.
pub(crate) fn watch(
    watches: &[Watch],
    timeout: Duration,
    clock: tare_engine::Clock,
    done: &AtomicUsize,
    workers: usize,
) {
    let timeout_ns = timeout.as_nanos() as u64;
    while done.load(Ordering::Acquire) < workers {
        let now = clock.now_ns();
        let mut next = now + timeout_ns;
        for w in watches {
            let sent = w.sent.load(Ordering::Acquire);
            if sent == 0 || sent == EXPIRED {
                continue;
            }
            let due = sent.saturating_add(timeout_ns);
            if now < due {
                next = next.min(due);
                continue;
            }
            let conn = w.conn.lock().unwrap_or_else(|p| p.into_inner());
            // Still the same transaction: it is late.
            if w.sent
                .compare_exchange(sent, EXPIRED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                if let Some(c) = conn.as_ref() {
                    let _ = c.shutdown(Shutdown::Both);
                }
            }
        }
        std::thread::park_timeout(Duration::from_nanos(next.saturating_sub(now).max(1)));
    }
}

/// One thread's rr connection, opened before the start gate.
pub(crate) struct BlockingRr<'p> {
    plan: &'p Plan,
    watch: &'p Watch,
    conn: Option<Conn>,
    /// Connecting's errors, kept for the measured period's record.
    connect_errors: u64,
}

enum Failure {
    Write,
    Read,
    Timeout,
}

impl<'p> BlockingRr<'p> {
    /// Connects and sends the header; a connection that cannot be opened
    /// is a connect error, and the worker measures nothing.
    pub(crate) fn connect(plan: &'p Plan, watch: &'p Watch) -> Self {
        let conn = open(plan, watch).ok();
        BlockingRr {
            plan,
            watch,
            connect_errors: u64::from(conn.is_none()),
            conn,
        }
    }

    /// The measured run from the common start `origin_ns` (the plan's
    /// `start_ns` and `end_ns` count from it).
    pub(crate) fn run(self, origin_ns: u64, stats: &Counters) -> Outcome {
        let plan = self.plan;
        let clock = plan.clock;
        let cpu0 = CpuTime::thread();
        let start_ns = origin_ns + plan.start_ns;
        let end_ns = origin_ns + plan.end_ns;
        let mut out = Outcome::from_origin(plan, origin_ns, false);
        out.rec.errors.connect = self.connect_errors;
        let mut conn = self.conn;
        let request = vec![0u8; plan.request];
        // One byte more than the response: a read that brings more than
        // was asked for says the stream is out of step.
        let mut buf = vec![0u8; plan.response + 1];
        // One clock reading per transaction: the one that ends a
        // transaction starts the next.
        let mut now = clock.now_ns();
        while let Some(c) = conn.as_mut() {
            if now >= end_ns || plan.stop.load(Ordering::Relaxed) {
                break;
            }
            let sent = now;
            self.watch.sent.store(sent.max(1), Ordering::Release);
            let mut outcome = transact(c, &request, &mut buf);
            now = clock.now_ns();
            if self.watch.sent.swap(0, Ordering::AcqRel) == EXPIRED {
                // Late: the watchdog shut the connection down.
                outcome = Err(Failure::Timeout);
            }
            match outcome {
                Ok(()) => {
                    if sent >= start_ns {
                        out.rec.bytes_read += plan.response as u64;
                    }
                    record((origin_ns, start_ns), &mut out, sent, sent, now);
                }
                Err(why) => {
                    let e = &mut out.rec.errors;
                    match why {
                        Failure::Write => e.write += 1,
                        Failure::Read => e.read += 1,
                        Failure::Timeout => e.timeout += 1,
                    }
                    // Out of step or gone: a new connection, unless the
                    // run is over.
                    conn = None;
                    if now < end_ns && !plan.stop.load(Ordering::Relaxed) {
                        conn = open(plan, self.watch).ok();
                        out.rec.errors.connect += u64::from(conn.is_none());
                        now = clock.now_ns();
                    }
                }
            }
            stats.publish(out.rec.requests, out.rec.errors.total());
        }
        stats.publish(out.rec.requests, out.rec.errors.total());
        out.cpu = CpuTime::thread().since(&cpu0);
        out.finished_ns = out.finished_ns.max(clock.now_ns().min(end_ns));
        out
    }
}

/// Opens a connection without Nagle's delay, with Reno, `--timeout` on
/// each write (a blocked send arms its timer only when the socket's
/// buffer is full) and the watchdog's on each receive, and sends the rr
/// header.
fn open(plan: &Plan, watch: &Watch) -> io::Result<Conn> {
    let mut c = Conn::connect(&plan.endpoint, plan.timeout)?;
    c.set_nodelay()?;
    // As the event loop's connections (`Endpoint::connect`).
    tare_engine::endpoint::cheap_congestion_control(c.as_raw_fd());
    c.set_write_timeout(Some(plan.timeout))?;
    *watch.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.try_clone()?);
    let header = Header {
        mode: Mode::Rr,
        request: plan.request as u32,
        response: plan.response as u32,
    };
    c.write_all(&header.encode())?;
    Ok(c)
}

/// One request and its whole response.
fn transact(c: &mut Conn, request: &[u8], buf: &mut [u8]) -> Result<(), Failure> {
    let response = buf.len() - 1;
    let mut written = 0;
    while written < request.len() {
        match c.write(&request[written..]) {
            Ok(0) => return Err(Failure::Write),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(Failure::Timeout),
            Err(_) => return Err(Failure::Write),
        }
    }
    let mut got = 0;
    while got < response {
        match c.read(&mut buf[got..]) {
            Ok(0) => return Err(Failure::Read),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(Failure::Timeout),
            Err(_) => return Err(Failure::Read),
        }
    }
    if got > response {
        return Err(Failure::Read);
    }
    Ok(())
}
