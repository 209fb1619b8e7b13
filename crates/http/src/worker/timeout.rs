//! The periodic scan: times out requests stuck longer than `--timeout` and
//! reconnects slots whose back-off has passed. It runs every [`SCAN_NS`],
//! not per request, so the hot path never walks all connections.

use super::{Phase, Worker};

/// How often connections are checked for timeouts and due retries.
pub(super) const SCAN_NS: u64 = 10_000_000;

impl Worker<'_> {
    /// Times out stuck requests and retries failed connects.
    pub(super) fn scan(&mut self, now: u64) {
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
                        if let Some(n) = self.named(i) {
                            n.errors.timeout += 1;
                        }
                    }
                    self.recycle(i, now);
                }
                _ => {}
            }
        }
    }
}
