//! A worker's side of the network (`--io`): sending a statement, waiting
//! for replies, taking their bytes in and handing every complete reply to
//! [`Worker::reply`], and dropping a lost connection.
//!
//! - io_uring (`auto` where the kernel allows it): one multishot receive
//!   per connection delivers reply bytes into the ring's provided buffers,
//!   so a statement costs one `send` and a share of one `io_uring_enter`;
//!   its bytes are copied once into the connection's buffer, where a reply
//!   split across receives is put together.
//! - epoll: a level-triggered set; a statement costs one `send`, one
//!   `recv` and a share of one `epoll_pwait2`.
//!
//! Sends are plain non-blocking `send(2)` calls in both: a short one waits
//! for writability (`EPOLLOUT`, or a one-shot poll on the ring).

use std::io;

use tare_engine::poller::{Interest, Ready};
use tare_engine::uring::{self, Event, Io};

use super::{Lost, State, Worker};
use crate::protocol::Scanner;

impl Worker<'_> {
    /// Hands connection `i`'s socket to the wait, after its set-up.
    pub(super) fn register(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.conns[i];
        let Some(sock) = &c.sock else { return Ok(()) };
        match &mut self.io {
            Io::Epoll(p) => p.add(sock.fd(), i as u64, Interest::Read),
            Io::Uring { ring, .. } => {
                ring.recv(sock.fd(), uring::token(i, 0));
                c.armed = true;
                Ok(())
            }
        }
    }

    /// Writes what is pending; waits for writability for the rest.
    pub(super) fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(sock) = &c.sock else { return };
        while c.woff < c.wbuf.len() {
            match sock.write(&c.wbuf[c.woff..]) {
                Ok(n) => c.woff += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let why = format!("writing to the server failed: {e}");
                    self.lose(i, Lost::Write, &why);
                    return;
                }
            }
        }
        if c.woff == c.wbuf.len() {
            c.wbuf.clear();
            c.woff = 0;
        }
        let want = c.woff < c.wbuf.len();
        match &mut self.io {
            Io::Epoll(p) if want != c.armed_write => {
                c.armed_write = want;
                let interest = if want {
                    Interest::ReadWrite
                } else {
                    Interest::Read
                };
                let _ = p.modify(sock.fd(), i as u64, interest);
            }
            Io::Uring { ring, .. } if want && !c.polling => {
                ring.poll_writable(sock.fd(), uring::token(i, 0));
                c.polling = true;
            }
            _ => {}
        }
    }

    /// Waits until `until` (a clock reading; `now` read just before) at
    /// the latest and handles what happened.
    pub(super) fn wait(&mut self, now: u64, until: u64) -> io::Result<()> {
        let (mut ready, mut events) = (
            std::mem::take(&mut self.ready),
            std::mem::take(&mut self.completions),
        );
        let waited = self.io.wait(now, until, &mut ready, &mut events);
        if waited.is_ok() && self.measuring(now) {
            self.waits += 1;
        }
        for r in ready.drain(..) {
            self.on_ready(r);
        }
        for ev in events.drain(..) {
            self.on_completion(ev);
        }
        (self.ready, self.completions) = (ready, events);
        waited.map(|_| ())
    }

    /// epoll: connection `r.token` is writable or readable.
    fn on_ready(&mut self, r: Ready) {
        let i = r.token as usize;
        if i >= self.conns.len() || self.conns[i].sock.is_none() {
            return;
        }
        if r.writable {
            self.flush(i);
        }
        if (r.readable || r.hangup) && self.conns[i].sock.is_some() {
            self.read(i);
        }
    }

    /// io_uring: one completion.
    fn on_completion(&mut self, ev: Event) {
        let (i, _) = uring::untoken(ev.token());
        let Io::Uring { ring, .. } = &mut self.io else {
            return;
        };
        let live = self.conns.get(i).is_some_and(|c| c.sock.is_some());
        if !live {
            // A lost connection's last completions.
            if let Event::Data { buf, .. } = ev {
                ring.release(buf);
            }
            return;
        }
        let c = &mut self.conns[i];
        match ev {
            Event::Data {
                buf, len, armed, ..
            } => {
                c.armed = armed;
                c.absorb(ring.data(buf, len));
                ring.release(buf);
                self.rec.bytes_read += len as u64;
                let now = self.sh.clock.now_ns();
                self.take_replies(i, now);
                let c = &mut self.conns[i];
                if let (Some(sock), false, Io::Uring { ring, .. }) =
                    (&c.sock, c.armed, &mut self.io)
                {
                    ring.recv(sock.fd(), uring::token(i, 0));
                    c.armed = true;
                }
            }
            Event::Eof { .. } => {
                c.armed = false;
                self.lose(i, Lost::Read, "the server closed the connection");
            }
            Event::Failed { errno, .. } if errno == libc::ENOBUFS => {
                // Every buffer was in use: receive again.
                if let Some(sock) = &c.sock {
                    ring.recv(sock.fd(), uring::token(i, 0));
                }
            }
            Event::Failed { errno, .. } => {
                c.armed = false;
                let e = io::Error::from_raw_os_error(errno);
                self.lose(i, Lost::Read, &format!("reading failed: {e}"));
            }
            Event::Ready {
                writable, hangup, ..
            } => {
                c.polling = false;
                if writable || hangup {
                    self.flush(i);
                }
            }
        }
    }

    /// epoll: reads what connection `i` has and handles every reply in it.
    fn read(&mut self, i: usize) {
        for _ in 0..4 {
            let c = &mut self.conns[i];
            if c.sock.is_none() {
                return;
            }
            c.make_room(0);
            let Some(sock) = &c.sock else { return };
            let room = c.rbuf.len() - c.rend;
            let n = match sock.read(&mut c.rbuf[c.rend..]) {
                Ok(0) => {
                    self.lose(i, Lost::Read, "the server closed the connection");
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.lose(i, Lost::Read, &format!("reading failed: {e}"));
                    return;
                }
            };
            c.rend += n;
            self.rec.bytes_read += n as u64;
            let now = self.sh.clock.now_ns();
            if !self.take_replies(i, now) || n < room {
                return;
            }
        }
    }

    /// Hands every complete reply in connection `i`'s buffer to
    /// [`Worker::reply`]; false when the connection was lost.
    fn take_replies(&mut self, i: usize, now: u64) -> bool {
        loop {
            let c = &mut self.conns[i];
            if c.sock.is_none() {
                return false;
            }
            if c.state != State::Busy {
                if c.rstart < c.rend {
                    // Bytes nobody asked for (a server's goodbye ERR on
                    // an idle connection): the stream cannot be trusted.
                    self.lose(i, Lost::Read, "the server sent an unsolicited packet");
                    return false;
                }
                return true;
            }
            match c.scanner.scan(&c.rbuf[c.rstart..c.rend]) {
                Ok((used, r)) => {
                    c.rstart += used;
                    match r {
                        Some(r) => self.reply(i, r, now),
                        None => return true,
                    }
                }
                Err(e) => {
                    self.lose(i, Lost::Read, &format!("protocol error: {e}"));
                    return false;
                }
            }
        }
    }

    /// Connection `i` is lost: its transaction counts as an error, and it
    /// takes no further part in the run.
    pub(super) fn lose(&mut self, i: usize, how: Lost, why: &str) {
        let c = &mut self.conns[i];
        if let Some(s) = c.sock.take() {
            match &mut self.io {
                Io::Epoll(p) => {
                    let _ = p.delete(s.fd());
                }
                // The receive and poll hold the socket open: end them.
                Io::Uring { ring, .. } if c.armed || c.polling => {
                    ring.cancel(uring::token(i, 0));
                }
                Io::Uring { .. } => {}
            }
        }
        c.armed = false;
        c.polling = false;
        if c.state == State::Busy && c.measured {
            let e = &mut self.rec.errors;
            match how {
                Lost::Read => e.read += 1,
                Lost::Write => e.write += 1,
                Lost::Timeout => e.timeout += 1,
            }
        }
        c.state = State::Done;
        c.wbuf.clear();
        c.woff = 0;
        c.rollback = None;
        self.aborted += 1;
        if self.abort_error.is_none() {
            self.abort_error = Some(format!("connection {}: {why}", c.index));
        }
    }
}

impl super::Conn {
    /// Makes room for at least `more` bytes (and at least one) after
    /// `rend`: consumed bytes are dropped first, then the buffer grows (a
    /// packet larger than it, or a receive that does not fit).
    fn make_room(&mut self, more: usize) {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        }
        let more = more.max(1);
        if self.rbuf.len() - self.rend >= more {
            return;
        }
        if self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        let need =
            (self.rend + more).max(Scanner::pending_len(&self.rbuf[..self.rend]).unwrap_or(0));
        if need > self.rbuf.len() {
            self.rbuf.resize(need.max(self.rbuf.len() * 2), 0);
        }
    }

    /// io_uring: bytes a receive delivered, after those still unread.
    fn absorb(&mut self, data: &[u8]) {
        self.make_room(data.len());
        self.rbuf[self.rend..self.rend + data.len()].copy_from_slice(data);
        self.rend += data.len();
    }
}
