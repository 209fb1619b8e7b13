//! One worker per connection, each a blocking loop (netperf's shape: one
//! transaction in flight, a blocked read the shortest way to its answer):
//! [`rr`] (kept connection), [`crr`] (a connection per transaction),
//! [`udp_rr`] (connected UDP socket, losses counted after the timeout) and
//! [`stream`] (bulk, either way). Each records into its own
//! [`Recorder`] and measures its own CPU.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tare_engine::cpu::CpuTime;
use tare_engine::progress::Counters;
use tare_engine::schedule::{Arrivals, Schedule};
use tare_engine::{Clock, Endpoint, Recorder};
use tare_record::Latency;

use crate::stream::Conn;
use crate::wire::{Datagram, Header, Mode, Trailer, HEADER_LEN};

/// What every worker of one run shares.
pub(crate) struct Plan {
    pub endpoint: Endpoint,
    pub request: usize,
    pub response: usize,
    pub clock: Clock,
    /// Clock readings where measurement starts (after the warm-up) and ends.
    pub start_ns: u64,
    pub end_ns: u64,
    pub timeout: Duration,
    /// Open loop: each connection's share of the rate.
    pub rate: Option<f64>,
    pub arrivals: Arrivals,
    pub netns: Option<PathBuf>,
    pub stop: Arc<AtomicBool>,
}

impl Plan {
    fn over(&self, now: u64) -> bool {
        now >= self.end_ns || self.stop.load(Ordering::Relaxed)
    }
}

/// What one worker measured.
pub(crate) struct Outcome {
    pub rec: Recorder,
    pub cpu: CpuTime,
    pub finished_ns: u64,
    /// Open loop: arrivals left unsent when the run ended.
    pub unsent: u64,
    /// udp-rr: requests counted lost.
    pub lost: u64,
    pub stream: StreamTally,
}

/// A stream connection's bytes in the measured period, and what the
/// responder said it moved and spent.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StreamTally {
    pub sent: u64,
    pub received: u64,
    /// Every byte moved, the warm-up's too (what the client's CPU paid for).
    pub all_bytes: u64,
    /// The responder's bytes and CPU on this connection, from its trailer.
    pub server_bytes: u64,
    pub server_cpu_ns: u64,
    /// Whether the responder's trailer arrived (its CPU is known).
    pub server_reported: bool,
}

impl Outcome {
    fn new(plan: &Plan, connect_timing: bool) -> Outcome {
        let mut rec = Recorder::new(plan.start_ns, plan.end_ns - plan.start_ns, connect_timing);
        if plan.rate.is_some() {
            rec.uncorrected = Some(Latency::new());
        }
        Outcome {
            rec,
            cpu: CpuTime::default(),
            finished_ns: 0,
            unsent: 0,
            lost: 0,
            stream: StreamTally::default(),
        }
    }
}

/// Runs one worker: enters the client's network namespace, runs `body`,
/// and takes the thread's CPU time around it.
pub(crate) fn worker(
    plan: &Plan,
    connect_timing: bool,
    body: impl FnOnce(&Plan, &mut Outcome),
) -> Outcome {
    let mut out = Outcome::new(plan, connect_timing);
    if let Some(ns) = &plan.netns {
        if tare_engine::netns::enter(ns).is_err() {
            out.rec.errors.connect += 1;
            return out;
        }
    }
    if plan.rate.is_some() {
        tare_engine::schedule::tighten_timer_slack();
    }
    let cpu0 = CpuTime::thread();
    body(plan, &mut out);
    out.cpu = CpuTime::thread().since(&cpu0);
    out.finished_ns = out.finished_ns.max(plan.clock.now_ns().min(plan.end_ns));
    out
}

/// The open loop's pacing of one connection, or none (closed loop).
struct Pacer {
    schedule: Option<Schedule>,
}

impl Pacer {
    fn new(plan: &Plan, seed: u64) -> Pacer {
        Pacer {
            schedule: plan
                .rate
                .map(|r| Schedule::new(r, plan.arrivals, 0, 0, seed)),
        }
    }

    /// Waits for the next transaction's intended start; `None` once the
    /// run is over. Closed loop: the start is now.
    fn next(&mut self, plan: &Plan) -> Option<u64> {
        let now = plan.clock.now_ns();
        let Some(s) = self.schedule.as_mut() else {
            return (!plan.over(now)).then_some(now);
        };
        let t = s.peek();
        if t >= plan.end_ns || plan.stop.load(Ordering::Relaxed) {
            return None;
        }
        s.take();
        // Sleep in slices, so a stop is seen within 50 ms.
        loop {
            let now = plan.clock.now_ns();
            if now >= t {
                return Some(t);
            }
            if plan.stop.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_nanos((t - now).min(50_000_000)));
        }
    }

    fn unsent(&mut self, plan: &Plan) -> u64 {
        self.schedule
            .as_mut()
            .map_or(0, |s| s.drain_before(plan.end_ns, None))
    }
}

/// Records one transaction intended at `intended`, sent at `sent`, done at `done`.
fn record(plan: &Plan, out: &mut Outcome, intended: u64, sent: u64, done: u64, stats: &Counters) {
    if intended < plan.start_ns {
        out.rec.complete_early(done);
        return;
    }
    if plan.rate.is_some() {
        out.rec.lag(intended, sent);
        if let Some(u) = out.rec.uncorrected.as_mut() {
            u.record_ns(done - sent);
        }
    }
    out.rec.complete(done, done - intended);
    out.finished_ns = out.finished_ns.max(done);
    stats.publish(out.rec.requests, out.rec.errors.total());
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn open(plan: &Plan, header: &Header) -> io::Result<Conn> {
    let mut c = Conn::connect(&plan.endpoint, plan.timeout)?;
    c.set_read_timeout(Some(plan.timeout))?;
    c.set_write_timeout(Some(plan.timeout))?;
    c.write_all(&header.encode())?;
    Ok(c)
}

/// TCP_RR: one connection, transactions back to back (or on the open
/// loop's schedule). A failed transaction is counted by kind and the
/// connection opened again; a responder that refuses the new connection
/// ends this worker with what it measured.
pub(crate) fn rr(plan: &Plan, out: &mut Outcome, seed: u64, stats: &Counters) {
    let header = Header {
        mode: Mode::Rr,
        request: plan.request as u32,
        response: plan.response as u32,
    };
    let req = vec![0u8; plan.request];
    let mut resp = vec![0u8; plan.response];
    let mut conn = match open(plan, &header) {
        Ok(c) => c,
        Err(_) => {
            out.rec.errors.connect += 1;
            return;
        }
    };
    let mut pacer = Pacer::new(plan, seed);
    while let Some(intended) = pacer.next(plan) {
        let sent = plan.clock.now_ns();
        let failed = if let Err(_e) = conn.write_all(&req) {
            out.rec.errors.write += 1;
            true
        } else if let Err(e) = conn.read_exact(&mut resp) {
            if is_timeout(&e) {
                out.rec.errors.timeout += 1;
            } else {
                out.rec.errors.read += 1;
            }
            true
        } else {
            let done = plan.clock.now_ns();
            out.rec.bytes_read += plan.response as u64;
            record(plan, out, intended, sent, done, stats);
            false
        };
        if failed {
            // The connection is out of step (or gone): a new one.
            conn = match open(plan, &header) {
                Ok(c) => c,
                Err(_) => {
                    out.rec.errors.connect += 1;
                    break;
                }
            };
        }
    }
    out.unsent = pacer.unsent(plan);
}

/// TCP_CRR: connect, one transaction, and the responder closes; the
/// latency runs from the connect to the whole response, the connect time
/// is recorded apart. A refused connection ends this worker.
pub(crate) fn crr(plan: &Plan, out: &mut Outcome, seed: u64, stats: &Counters) {
    let header = Header {
        mode: Mode::Crr,
        request: plan.request as u32,
        response: plan.response as u32,
    };
    // Header and request in one write: one segment, as netperf's CRR sends
    // its request with the connection's first data.
    let mut first = header.encode().to_vec();
    first.resize(HEADER_LEN + plan.request, 0);
    let mut resp = vec![0u8; plan.response];
    let mut pacer = Pacer::new(plan, seed);
    while let Some(intended) = pacer.next(plan) {
        let sent = plan.clock.now_ns();
        let mut conn = match Conn::connect(&plan.endpoint, plan.timeout) {
            Ok(c) => c,
            Err(_) => {
                out.rec.errors.connect += 1;
                break;
            }
        };
        let connected = plan.clock.now_ns();
        let _ = conn.set_read_timeout(Some(plan.timeout));
        let _ = conn.set_write_timeout(Some(plan.timeout));
        if conn.write_all(&first).is_err() {
            out.rec.errors.write += 1;
            continue;
        }
        if let Err(e) = conn.read_exact(&mut resp) {
            if is_timeout(&e) {
                out.rec.errors.timeout += 1;
            } else {
                out.rec.errors.read += 1;
            }
            continue;
        }
        let done = plan.clock.now_ns();
        out.rec.bytes_read += plan.response as u64;
        if intended >= plan.start_ns {
            if let Some(c) = out.rec.connect.as_mut() {
                c.record_ns(connected - sent);
            }
            if let Some(f) = out.rec.first_byte.as_mut() {
                f.record_ns(done - connected);
            }
        }
        record(plan, out, intended, sent, done, stats);
        // The responder closes first; its end of file is waited for
        // (outside the latency) so this side closes without a reset.
        let mut b = [0u8; 1];
        let _ = conn.read(&mut b);
    }
    out.unsent = pacer.unsent(plan);
}

/// After this many refused sends in a row (the responder's port is
/// closed: ICMP port unreachable), a UDP worker stops.
const REFUSED_IN_A_ROW: u32 = 3;

/// UDP_RR: a connected UDP socket, a sequence number in every request. A
/// request whose answer has not come within the timeout is lost: counted
/// (`errors.timeout`, `lost`) and the next one sent, never a stall; an
/// answer that comes later is recognised by its number and ignored.
pub(crate) fn udp_rr(plan: &Plan, out: &mut Outcome, seed: u64, stats: &Counters) {
    let Endpoint::Tcp(addr) = plan.endpoint else {
        out.rec.errors.connect += 1;
        return;
    };
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().expect("address")
    } else {
        "[::]:0".parse().expect("address")
    };
    let sock = match UdpSocket::bind(bind).and_then(|s| s.connect(addr).map(|()| s)) {
        Ok(s) => s,
        Err(_) => {
            out.rec.errors.connect += 1;
            return;
        }
    };
    let mut req = vec![0u8; plan.request];
    let mut resp = vec![0u8; plan.response.max(HEADER_LEN) + 1];
    let mut pacer = Pacer::new(plan, seed);
    let mut seq = 0u64;
    let mut refused = 0;
    while let Some(intended) = pacer.next(plan) {
        seq += 1;
        Datagram {
            response: plan.response as u32,
            seq,
        }
        .write(&mut req);
        let sent = plan.clock.now_ns();
        if let Err(e) = sock.send(&req) {
            if e.kind() == io::ErrorKind::ConnectionRefused {
                refused += 1;
                out.rec.errors.connect += 1;
                if refused >= REFUSED_IN_A_ROW {
                    break;
                }
            } else {
                out.rec.errors.write += 1;
            }
            continue;
        }
        let deadline = sent + plan.timeout.as_nanos() as u64;
        loop {
            let now = plan.clock.now_ns();
            if now >= deadline {
                out.lost += 1;
                out.rec.errors.timeout += 1;
                break;
            }
            let wait = Duration::from_nanos(deadline - now).max(Duration::from_micros(1));
            let _ = sock.set_read_timeout(Some(wait));
            match sock.recv(&mut resp) {
                Ok(n) => match Datagram::parse(&resp[..n]) {
                    Ok(d) if d.seq == seq && n == plan.response => {
                        refused = 0;
                        let done = plan.clock.now_ns();
                        out.rec.bytes_read += n as u64;
                        record(plan, out, intended, sent, done, stats);
                        break;
                    }
                    // A late answer to a request already counted lost.
                    _ => continue,
                },
                Err(e) if is_timeout(&e) => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    refused += 1;
                    out.rec.errors.connect += 1;
                    break;
                }
                Err(_) => {
                    out.rec.errors.read += 1;
                    break;
                }
            }
        }
        if refused >= REFUSED_IN_A_ROW {
            break;
        }
    }
    out.unsent = pacer.unsent(plan);
}

/// One stream connection: sends (`send`) or receives until the end of the
/// measured period, counting only the bytes moved inside it, then ends
/// the stream and reads the responder's trailer (its bytes and CPU).
pub(crate) fn stream(plan: &Plan, out: &mut Outcome, send: bool, stats: &Counters) {
    let header = if send {
        Header {
            mode: Mode::Sink,
            request: plan.request as u32,
            response: 0,
        }
    } else {
        Header {
            mode: Mode::Source,
            request: 0,
            response: plan.response as u32,
        }
    };
    let mut conn = match open(plan, &header) {
        Ok(c) => c,
        Err(_) => {
            out.rec.errors.connect += 1;
            return;
        }
    };
    let mut buf = vec![0u8; if send { plan.request } else { plan.response }];
    let mut last_mb = 0u64;
    loop {
        let now = plan.clock.now_ns();
        if plan.over(now) {
            break;
        }
        let r = if send {
            conn.write(&buf)
        } else {
            conn.read(&mut buf)
        };
        let n = match r {
            Ok(0) => {
                out.rec.errors.read += 1;
                return;
            }
            Ok(n) => n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                if is_timeout(&e) {
                    out.rec.errors.timeout += 1;
                } else if send {
                    out.rec.errors.write += 1;
                } else {
                    out.rec.errors.read += 1;
                }
                return;
            }
        };
        out.stream.all_bytes += n;
        let done = plan.clock.now_ns();
        if done < plan.start_ns {
            continue;
        }
        out.finished_ns = done;
        let moved = if send {
            out.stream.sent += n;
            out.stream.sent
        } else {
            out.stream.received += n;
            out.rec.bytes_read += n;
            out.stream.received
        };
        // One completion per megabit moved: the timeline and the
        // throughput speak Mbit/s.
        let mb = moved * 8 / 1_000_000;
        for _ in last_mb..mb {
            out.rec.complete(done, 0);
        }
        if mb > last_mb {
            stats.publish(out.rec.requests, 0);
        }
        last_mb = mb;
    }
    // End the stream: the responder sees end of file (sink) or our
    // shut-down side (source), stops, and sends its trailer.
    let _ = conn.shutdown(Shutdown::Write);
    let _ = conn.set_read_timeout(Some(plan.timeout.max(Duration::from_secs(2))));
    let mut tail = [0u8; HEADER_LEN];
    let mut have = 0usize;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        match conn.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                // Keep the last 16 bytes seen: the trailer ends the stream.
                if n >= HEADER_LEN {
                    tail.copy_from_slice(&chunk[n - HEADER_LEN..n]);
                } else {
                    tail.copy_within(n.., 0);
                    tail[HEADER_LEN - n..].copy_from_slice(&chunk[..n]);
                }
                have += n;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if have >= HEADER_LEN {
        let t = Trailer::parse(&tail);
        out.stream.server_cpu_ns = t.cpu_ns;
        out.stream.server_bytes = t.bytes;
        out.stream.server_reported = true;
    }
}
