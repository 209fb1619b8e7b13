//! The worker's loop: `run` opens the connections, then alternates the
//! timeout scan, open-loop dispatch, an optional coalescing pause and one
//! `epoll_wait`, until the deadline, a stop, or a count-bounded run's end;
//! `handle` routes each readiness event to the phase that awaits it.

use std::io;
use std::sync::atomic::Ordering;

use tare_engine::cpu::CpuTime;
use tare_engine::poller::Ready;
use tare_engine::uring::Event;

use super::timeout::SCAN_NS;
use super::{Outcome, Phase, Worker};

impl Worker<'_> {
    pub(crate) fn run(mut self) -> io::Result<Outcome> {
        if let Some(ns) = &self.plan.netns {
            tare_engine::netns::enter(ns)?;
        }
        if self.open_loop() || self.coalescer.enabled() {
            // A pause, like a scheduled send, must not sleep 50 us too long.
            tare_engine::schedule::tighten_timer_slack();
        }
        let clock = self.plan.clock;
        let mut cpu_start = (self.plan.start_ns == 0).then(CpuTime::thread);
        let now = clock.now_ns();
        for i in 0..self.conns.len() {
            if self.open_loop() && !self.plan.keepalive {
                self.make_ready(i, now);
            } else if matches!(self.conns[i].phase, Phase::Idle { retry_at } if retry_at <= now) {
                self.open(i, now);
            }
        }
        let mut ready: Vec<Ready> = Vec::with_capacity(1024);
        let mut events: Vec<Event> = Vec::with_capacity(1024);
        let mut last_batch = 0;
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
                self.rx_map.refresh(&clock);
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
            let paused = self.coalescer.before_wait(
                last_batch,
                self.conns.len(),
                wake.saturating_sub(now),
                self.measuring(now),
            );
            let now = if paused { clock.now_ns() } else { now };
            last_batch = self.wait_and_handle(now, wake, &mut ready, &mut events)?;
            self.board
                .publish(self.rec.requests, self.rec.errors.total());
        }
        self.rec.in_flight = 0;
        for c in &self.conns {
            if matches!(c.phase, Phase::Writing { .. } | Phase::Reading) {
                self.rec.in_flight += 1;
                if let Some(n) = self.names.get_mut(c.req as usize) {
                    n.in_flight += 1;
                }
            }
        }
        let cpu = CpuTime::thread().since(&cpu_start.unwrap_or_else(CpuTime::thread));
        let mut unsent = self.backlog.len() as u64;
        if let (Some(s), Some(end)) = (self.schedule.as_mut(), self.plan.end_ns) {
            unsent += s.drain_before(end, self.quota);
        }
        let connect = self.connect_report();
        Ok(Outcome {
            connect,
            recorder: self.rec,
            names: self.names,
            cpu,
            finished_ns,
            last_completion_ns: self.last_completion_ns,
            unsent,
            wakeups: tare_record::WakeupReport {
                io: self.io.name().into(),
                ..self.coalescer.report(self.rx_stamps)
            },
        })
    }

    /// A count-bounded run is over when nothing is left to send or await.
    pub(super) fn finished(&self) -> bool {
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

    pub(super) fn handle(&mut self, r: &Ready) {
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
}
