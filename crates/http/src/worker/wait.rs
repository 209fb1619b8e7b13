//! How the worker waits: epoll readiness ([`Poller`]) or io_uring
//! completions ([`Ring`]). The state machine is the same; what differs is
//! who reads. With epoll the worker reads a ready socket itself
//! (`receive::read`); with io_uring a multishot receive has already read the
//! bytes, and `received` feeds them to the same parser.
//!
//! io_uring tokens carry the slot's generation (bumped whenever its socket
//! closes), so a completion still in flight for an old socket can never be
//! taken for the new one's.

use std::io;

use tare_engine::poller::Ready;
use tare_engine::uring::{Event, Io};
use tare_engine::Interest;

use super::{Phase, Worker};

impl Worker<'_> {
    /// This slot's io_uring token (slot index and generation).
    #[inline]
    fn token(&self, i: usize) -> u64 {
        tare_engine::uring::token(i, self.conns[i].gen as u64)
    }

    /// The slot a token names, if it still names the slot's current socket.
    #[inline]
    fn live(&self, token: u64) -> Option<usize> {
        let (i, gen) = tare_engine::uring::untoken(token);
        (self.conns.get(i)?.gen as u64 == gen).then_some(i)
    }

    /// Starts watching slot `i`'s new socket: for the end of its connect,
    /// or for responses.
    pub(super) fn watch_new(&mut self, i: usize, connecting: bool) -> io::Result<()> {
        let token = self.token(i);
        let c = &mut self.conns[i];
        let Some(fd) = c.sock.as_ref().map(|s| s.fd()) else {
            return Ok(());
        };
        match &mut self.io {
            Io::Epoll(p) => {
                let interest = if connecting {
                    Interest::Write
                } else {
                    Interest::Read
                };
                p.add(fd, i as u64, interest)
            }
            Io::Uring { ring: r, .. } if connecting => {
                r.poll_writable(fd, token);
                c.polling = true;
                Ok(())
            }
            Io::Uring { ring: r, .. } => {
                r.recv(fd, token);
                c.armed = true;
                Ok(())
            }
        }
    }

    /// Slot `i` is connected (or its blocked write finished): from now on,
    /// responses.
    pub(super) fn watch_responses(&mut self, i: usize) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        let Some(fd) = c.sock.as_ref().map(|s| s.fd()) else {
            return;
        };
        match &mut self.io {
            Io::Epoll(p) => {
                let _ = p.modify(fd, i as u64, Interest::Read);
            }
            Io::Uring { ring: r, .. } => {
                if !c.armed {
                    r.recv(fd, token);
                    c.armed = true;
                }
            }
        }
    }

    /// Slot `i`'s write blocked: wake when its socket takes more.
    /// `again`: it was already blocked (epoll's level-triggered interest
    /// still stands; an io_uring poll is one-shot and was used up).
    pub(super) fn watch_writable(&mut self, i: usize, again: bool) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        let Some(fd) = c.sock.as_ref().map(|s| s.fd()) else {
            return;
        };
        match &mut self.io {
            Io::Epoll(p) => {
                if !again {
                    let _ = p.modify(fd, i as u64, Interest::Write);
                }
            }
            Io::Uring { ring: r, .. } => {
                if !c.polling {
                    r.poll_writable(fd, token);
                    c.polling = true;
                }
            }
        }
    }

    /// Closes slot `i`'s socket (if any). With io_uring its receive and
    /// poll are cancelled first: they hold the socket open.
    pub(super) fn close(&mut self, i: usize) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        if c.sock.is_none() {
            return;
        }
        if c.established {
            c.established = false;
            self.established -= 1;
        }
        if let Io::Uring { ring: r, .. } = &mut self.io {
            if c.armed || c.polling {
                r.cancel(token);
            }
            c.armed = false;
            c.polling = false;
            c.gen = c.gen.wrapping_add(1) & 0x7fff_ffff;
        }
        c.sock = None;
    }

    /// Waits until `wake` (run clock, read as `now`) at the latest and
    /// handles what happened; returns how many events there were.
    pub(super) fn wait_and_handle(
        &mut self,
        now: u64,
        wake: u64,
        ready: &mut Vec<Ready>,
        events: &mut Vec<Event>,
    ) -> io::Result<usize> {
        let n = self.io.wait(now, wake, ready, events)?;
        for r in ready.iter() {
            self.handle(r);
        }
        for ev in events.iter() {
            self.completed(*ev);
        }
        Ok(n)
    }

    /// One io_uring completion.
    fn completed(&mut self, ev: Event) {
        match ev {
            Event::Ready {
                token,
                writable,
                hangup,
            } => {
                let Some(i) = self.live(token) else { return };
                self.conns[i].polling = false;
                self.handle(&Ready {
                    token: i as u64,
                    readable: false,
                    writable,
                    hangup,
                });
            }
            Event::Data {
                token,
                buf,
                len,
                armed,
            } => {
                let Some(i) = self.live(token) else {
                    if let Io::Uring { ring: r, .. } = &mut self.io {
                        r.release(buf);
                    }
                    return;
                };
                self.conns[i].armed = armed;
                self.received(i, buf, len);
                // Still the same socket, and its receive stopped (it ran out
                // of buffers): start it again.
                if self.live(token).is_some() && !self.conns[i].armed {
                    self.watch_responses(i);
                }
            }
            Event::Eof { token } => {
                let Some(i) = self.live(token) else { return };
                self.conns[i].armed = false;
                self.receive_ended(i, true);
            }
            Event::Failed { token, errno } => {
                let Some(i) = self.live(token) else { return };
                self.conns[i].armed = false;
                if errno == libc::ENOBUFS {
                    self.watch_responses(i);
                } else {
                    self.receive_ended(i, false);
                }
            }
        }
    }

    /// io_uring: `len` bytes for slot `i` in ring buffer `buf`.
    fn received(&mut self, i: usize, buf: u16, len: usize) {
        let phase = self.conns[i].phase;
        if !matches!(phase, Phase::Reading | Phase::Writing { .. }) {
            // Bytes nobody asked for (an idle keep-alive connection): the
            // connection can no longer be trusted.
            if let Io::Uring { ring: r, .. } = &mut self.io {
                r.release(buf);
            }
            return self.failed_read(i);
        }
        self.arrived(i, len);
        let Io::Uring { ring: r, .. } = &mut self.io else {
            unreachable!("received is io_uring's")
        };
        let fed = self.conns[i].parser.feed(r.data(buf, len));
        r.release(buf);
        self.fed(i, fed, len);
    }

    /// io_uring: slot `i`'s receive ended: the server closed the
    /// connection (`eof`), or it failed (reset, ...).
    fn receive_ended(&mut self, i: usize, eof: bool) {
        match self.conns[i].phase {
            Phase::Reading | Phase::Writing { .. } if eof => self.at_eof(i),
            Phase::Reading | Phase::Writing { .. } => self.failed_read(i),
            // An idle keep-alive connection the server let go: not an
            // error, only a new connection.
            Phase::Ready => {
                let now = self.plan.clock.now_ns();
                self.recycle(i, now)
            }
            _ => {}
        }
    }
}
