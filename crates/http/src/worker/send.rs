//! Sending a request: `send` starts it on an established connection
//! (spending quota, or taking an open-loop arrival's intended time) and
//! `write` puts its bytes on the socket.

use std::io;

use super::{Phase, Worker};

impl Worker<'_> {
    /// Starts the next request on an established connection.
    pub(super) fn send(&mut self, i: usize, now: u64) {
        if let Some(began) = self.conns[i].resend.take() {
            // The same request again (its quota or arrival already spent).
            let c = &mut self.conns[i];
            c.began_ns = began;
            c.busy_since = now;
            c.sent_ns = now;
            c.got_first_byte = false;
            c.parser.reset();
            return self.write(i, 0);
        }
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
            self.draw(i);
            return self.write(i, 0);
        }
        if let Some(q) = self.quota.as_mut() {
            if *q == 0 {
                self.conns[i].phase = Phase::Done;
                self.close(i);
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
        self.draw(i);
        self.write(i, 0);
    }

    /// Writes the request from byte `written` on; arms writability only
    /// when the socket buffer is full (rare for requests of a few hundred bytes).
    pub(super) fn write(&mut self, i: usize, written: usize) {
        let c = &mut self.conns[i];
        let which = c.req as usize;
        let req = &self.plan.requests[which].bytes;
        let Some(sock) = c.sock.as_ref() else {
            return;
        };
        let mut at = written;
        loop {
            match sock.write(&req[at..]) {
                Ok(n) => {
                    at += n;
                    if at == req.len() {
                        let was_blocked = matches!(c.phase, Phase::Writing { .. });
                        c.phase = Phase::Reading;
                        if was_blocked {
                            self.watch_responses(i);
                        }
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let was_blocked = matches!(c.phase, Phase::Writing { .. });
                    c.phase = Phase::Writing { written: at };
                    self.watch_writable(i, was_blocked);
                    return;
                }
                Err(_) => {
                    let now = self.plan.clock.now_ns();
                    if self.resent(i, now) {
                        return;
                    }
                    if self.measuring(now) {
                        self.rec.errors.write += 1;
                        // A write is always of the slot's request.
                        if let Some(n) = self.names.get_mut(which) {
                            n.errors.write += 1;
                        }
                    }
                    return self.recycle(i, now);
                }
            }
        }
    }
}
