//! What every worker of a run shares ([`Plan`]) and hands back
//! ([`Outcome`]), and the stream workers: one blocking thread per stream
//! connection ([`stream`], bulk either way, as nuttcp and iperf3 run a
//! stream), recording into its own [`Recorder`] and measuring its own CPU.
//! rr, crr and udp-rr run on the shared event loop (`crate::transactions`).

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tare_engine::cpu::CpuTime;
use tare_engine::progress::Counters;
use tare_engine::schedule::Arrivals;
use tare_engine::{Clock, Endpoint, Recorder};
use tare_record::Latency;

use crate::stream::Conn;
use crate::wire::{Header, Mode, Trailer, HEADER_LEN};

/// What every worker of one run shares.
#[derive(Clone)]
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
    /// How the event loop waits (`--io`).
    pub io: tare_engine::IoMode,
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
    /// How the thread waited: `blocking`, `io_uring` or `epoll`.
    pub io: &'static str,
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
    pub(crate) fn new(plan: &Plan, connect_timing: bool) -> Outcome {
        Outcome::measuring(plan, plan.start_ns, plan.end_ns, connect_timing)
    }

    /// A gated worker's, from the common start `origin_ns` (the plan's
    /// `start_ns` and `end_ns` count from it).
    pub(crate) fn from_origin(plan: &Plan, origin_ns: u64, connect_timing: bool) -> Outcome {
        Outcome::measuring(
            plan,
            origin_ns + plan.start_ns,
            origin_ns + plan.end_ns,
            connect_timing,
        )
    }

    fn measuring(plan: &Plan, start_ns: u64, end_ns: u64, connect_timing: bool) -> Outcome {
        let mut rec = Recorder::new(start_ns, end_ns - start_ns, connect_timing);
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
            io: "blocking",
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

pub(crate) fn is_timeout(e: &io::Error) -> bool {
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
    // One clock reading per write or read: the one after it says both
    // when its bytes moved and whether the run is over.
    let mut now = plan.clock.now_ns();
    loop {
        if plan.over(now) {
            break;
        }
        let r = if send {
            conn.write(&buf)
        } else {
            conn.read(&mut buf)
        };
        now = plan.clock.now_ns();
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
        let done = now;
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
    finish_stream(&mut conn, plan, out);
}

/// Ends a stream: the responder sees end of file (sink) or our shut-down
/// side (source), stops, and sends its trailer, read into `out` (its
/// bytes and CPU on this connection).
fn finish_stream(conn: &mut Conn, plan: &Plan, out: &mut Outcome) {
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
