//! A connection's lifecycle: open (non-blocking connect), connected or
//! failed with back-off, and recycled when a request ends on a connection
//! that cannot be reused.

use super::{Phase, Worker};

/// Back-off after a failed connect, doubling up to the maximum, so an
/// unreachable server is retried steadily instead of in a busy loop.
pub(super) const BACKOFF_MIN_NS: u64 = 1_000_000;
const BACKOFF_MAX_NS: u64 = 100_000_000;

impl Worker<'_> {
    /// After a request ends (completed or failed) on a connection that cannot
    /// be reused: a new connection, or with an open loop and a connection per
    /// request, a free slot.
    pub(super) fn recycle(&mut self, i: usize, now: u64) {
        self.close(i);
        self.conns[i].intended = None;
        if self.open_loop() && !self.plan.keepalive {
            self.make_ready(i, now);
        } else {
            self.open(i, now);
        }
    }

    /// A request on a reused keep-alive connection ended before any byte of
    /// its response: the server had let the idle connection go (its close
    /// crossed the request). An idempotent request is sent again, once, on
    /// a new connection, its latency still counted from its first send, as
    /// HTTP clients do (RFC 9110 §9.2.2; docs/http.md, "Keep-alive").
    /// True when it was.
    pub(super) fn resent(&mut self, i: usize, now: u64) -> bool {
        let c = &self.conns[i];
        if !c.reused || c.got_first_byte || !self.plan.requests[c.req as usize].idempotent {
            return false;
        }
        self.conns[i].resend = Some(self.conns[i].began_ns);
        self.open(i, now);
        true
    }

    /// Opens a new connection for slot `i`.
    pub(super) fn open(&mut self, i: usize, now: u64) {
        if self.schedule.is_none() && self.quota == Some(0) && self.conns[i].resend.is_none() {
            self.conns[i].phase = Phase::Done;
            self.close(i);
            return;
        }
        self.close(i);
        let source = self.plan.sources.source_of(self.run_index(i));
        let c = &mut self.conns[i];
        c.began_ns = now;
        c.busy_since = now;
        c.reused = false;
        match self.plan.endpoint.connect_from(source) {
            Err(_) => self.connect_failed(i, now),
            Ok(sock) => {
                if self.rx_stamps {
                    let _ = sock.enable_rx_timestamps();
                }
                let connecting = sock.connecting;
                c.sock = Some(sock);
                if self.watch_new(i, connecting).is_err() {
                    return self.connect_failed(i, now);
                }
                if connecting {
                    self.conns[i].phase = Phase::Connecting;
                } else {
                    self.connected(i, now);
                }
            }
        }
    }

    pub(super) fn connect_failed(&mut self, i: usize, now: u64) {
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
        c.intended = None;
        c.phase = Phase::Idle {
            retry_at: now + c.backoff_ns,
        };
        c.backoff_ns = (c.backoff_ns * 2).min(BACKOFF_MAX_NS);
        self.close(i);
    }

    pub(super) fn connected(&mut self, i: usize, now: u64) {
        let measuring = self.measuring(now);
        if self.conns[i].phase == Phase::Connecting {
            self.watch_responses(i);
        }
        let c = &mut self.conns[i];
        c.backoff_ns = BACKOFF_MIN_NS;
        if !c.established {
            c.established = true;
            self.established += 1;
            if self.established == self.conns.len() as u64 && self.all_established_ns.is_none() {
                self.all_established_ns = Some(now);
            }
        }
        let c = &mut self.conns[i];
        if measuring {
            if let Some(l) = self.rec.connect.as_mut() {
                l.record_ns(now - c.began_ns);
            }
        }
        if self.schedule.is_some() && c.intended.is_none() && c.resend.is_none() {
            return self.make_ready(i, now);
        }
        self.send(i, now);
    }
}
