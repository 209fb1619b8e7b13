//! Receiving a response: `read` drains the socket into the parser (with
//! the kernel's receive timestamp when asked for), and `complete` records
//! the request and decides what the connection does next.

use std::io;

use crate::response::Progress;

use super::Worker;

impl Worker<'_> {
    /// epoll: slot `i`'s socket is readable; read until the response is
    /// whole or the socket is drained.
    pub(super) fn read(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_ref() else {
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
            match read {
                Ok(0) => return self.at_eof(i),
                Ok(n) => {
                    self.arrived(i, n);
                    let fed = self.conns[i].parser.feed(&self.buf[..n]);
                    if !self.fed(i, fed, n) || n < self.buf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.failed_read(i),
            }
        }
    }

    /// `n` bytes arrived for slot `i`: counts them, and the time to first
    /// byte when that is measured.
    #[inline]
    pub(super) fn arrived(&mut self, i: usize, n: usize) {
        self.rec.bytes_read += n as u64;
        let c = &mut self.conns[i];
        if !c.got_first_byte {
            c.got_first_byte = true;
            if let Some(fb) = self.rec.first_byte.as_mut() {
                let now = self.plan.clock.now_ns();
                if now >= self.plan.start_ns {
                    fb.record_ns(now - c.sent_ns);
                }
            }
        }
    }

    /// What the parser made of `n` bytes for slot `i`; true while the
    /// response still wants more.
    #[inline]
    pub(super) fn fed(
        &mut self,
        i: usize,
        fed: Result<Progress, crate::response::ParseError>,
        n: usize,
    ) -> bool {
        match fed {
            // Bytes past the response were never asked for.
            Ok(Progress::Done { used }) => {
                self.complete(i, used < n);
                false
            }
            Ok(Progress::More) => true,
            Err(_) => {
                self.failed_read(i);
                false
            }
        }
    }

    /// The server closed slot `i`'s connection: the end of a response
    /// delimited by the close, or a truncated one.
    pub(super) fn at_eof(&mut self, i: usize) {
        match self.conns[i].parser.eof() {
            Ok(Progress::Done { .. }) => self.complete(i, false),
            _ => self.failed_read(i),
        }
    }

    pub(super) fn failed_read(&mut self, i: usize) {
        let now = self.plan.clock.now_ns();
        if self.resent(i, now) {
            return;
        }
        if self.measuring(now) {
            self.rec.errors.read += 1;
            if let Some(n) = self.named(i) {
                n.errors.read += 1;
            }
        }
        self.recycle(i, now);
    }

    /// A response completed; `junk`: the server sent more than one response.
    pub(super) fn complete(&mut self, i: usize, junk: bool) {
        let now = self.plan.clock.now_ns();
        let c = &mut self.conns[i];
        // The response was whole when its last bytes arrived, whenever the
        // worker got round to reading them.
        let done = c.rx_ns.take().map_or(now, |t| t.max(c.sent_ns).min(now));
        if done >= self.plan.start_ns {
            let latency = done - c.began_ns;
            self.rec.complete(done, latency);
            self.coalescer.observe(latency);
            if let Some(u) = self.rec.uncorrected.as_mut() {
                u.record_ns(done - c.sent_ns);
            }
            self.rec.status(c.parser.status);
            if c.parser.status >= 400 {
                self.rec.errors.status += 1;
            }
            if junk {
                self.rec.errors.read += 1;
            }
            self.last_completion_ns = done;
            if let Some(n) = self.names.get_mut(c.req as usize) {
                n.record(latency);
                n.errors.status += u64::from(c.parser.status >= 400);
                n.errors.read += u64::from(junk);
            }
        } else {
            self.coalescer.observe(done.saturating_sub(c.began_ns));
            self.rec.complete_early(done);
        }
        if c.parser.close || !self.plan.keepalive || junk {
            self.recycle(i, now);
            return;
        }
        c.reused = true;
        if self.schedule.is_some() {
            self.make_ready(i, now);
        } else {
            self.send(i, now);
        }
    }
}
