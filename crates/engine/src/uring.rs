//! An io_uring completion loop for the hot path: one multishot `recv` per
//! connection delivers response bytes into a ring of provided buffers, so a
//! keep-alive request costs one `send` and a share of one `io_uring_enter`
//! (epoll needs a `recv` and an `epoll_wait` besides).
//!
//! Why: against nginx on loopback (one worker on the other core, 50
//! connections, ~35k req/s, one response per wake-up) a prototype of this
//! loop used 13–20% less CPU per request than the epoll worker, measured
//! interleaved; the kernel's TCP path is the same, what goes is a syscall
//! entry, `fdget` and the epoll bookkeeping per request.
//!
//! The ring is set up for one thread (`SINGLE_ISSUER`, `DEFER_TASKRUN`:
//! completions are only run when the worker waits, never by interrupting
//! it). Sends are plain `send(2)` calls for http and pg: the request goes
//! out at once and a failed or short send is seen where it happens, and a
//! profile showed no gain from submitting them through the ring. tare redis
//! submits its sends through the ring instead ([`Ring::send`]): the sends a
//! wake-up's replies call for go out in the one `io_uring_enter` that then
//! waits, a system call per command fewer (docs/redis.md, "How a worker
//! waits").
//!
//! What it needs: Linux 6.1 (deferred task running, multishot receive,
//! provided-buffer rings) and io_uring allowed (`kernel.io_uring_disabled`,
//! container seccomp profiles). [`Ring::new`] fails otherwise and callers
//! fall back to epoll ([`crate::Poller`]).
//!
//! Tokens: the caller's 63-bit token names a connection; a token must not be
//! reused while a receive or poll under it may still complete (callers add a
//! generation count). [`Ring::cancel`] asks the kernel to end both before
//! the caller closes the socket: a pending receive holds a reference to the
//! socket, so without it the connection would stay open.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::types::{BufRingEntry, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};

/// Marks a one-shot poll's completions (the top bit of user_data).
const POLL: u64 = 1 << 63;
/// Marks a send's completions (the top bit of a token's slot half: slots
/// stay far below 2^31).
const SEND: u64 = 1 << 31;
/// user_data of cancel requests (their failures are posted; ignored).
const CANCEL: u64 = u64::MAX;
/// user_data of the wake-up timer.
const TIMER: u64 = u64::MAX - 1;
const BGID: u16 = 0x7a;

/// `--io`: how a worker waits for the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoMode {
    /// io_uring where the kernel allows it and nothing needs epoll
    /// (receive timestamps for `--coalesce`), epoll otherwise.
    #[default]
    Auto,
    Epoll,
    Uring,
}

impl std::str::FromStr for IoMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(IoMode::Auto),
            "epoll" => Ok(IoMode::Epoll),
            "io_uring" | "uring" => Ok(IoMode::Uring),
            other => Err(format!("invalid --io {other:?}: auto, epoll or io_uring")),
        }
    }
}

impl std::fmt::Display for IoMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoMode::Auto => "auto",
            IoMode::Epoll => "epoll",
            IoMode::Uring => "io_uring",
        })
    }
}

/// How one worker waits: epoll readiness, or io_uring completions.
pub enum Io {
    Epoll(crate::Poller),
    /// `origin_ns`: the run clock's origin on `CLOCK_MONOTONIC`, to turn
    /// run-clock deadlines into the ring's.
    Uring {
        ring: Box<Ring>,
        origin_ns: u64,
    },
}

impl Io {
    /// The wait for `conns` connections: io_uring (receive buffers of
    /// `buf_size`) when `mode` allows it and the kernel has it, epoll
    /// otherwise. `needs_epoll`: receive timestamps are wanted, which only
    /// `recvmsg` gives.
    pub fn new(
        mode: IoMode,
        conns: usize,
        buf_size: usize,
        needs_epoll: bool,
        clock: &crate::Clock,
    ) -> io::Result<Io> {
        let epoll = || crate::Poller::new(conns.clamp(1, 1024)).map(Io::Epoll);
        let uring = || {
            Ring::new(conns, buf_size).map(|ring| Io::Uring {
                ring: Box::new(ring),
                origin_ns: clock.monotonic_origin_ns(),
            })
        };
        match mode {
            IoMode::Epoll => epoll(),
            IoMode::Auto if needs_epoll => epoll(),
            IoMode::Auto => uring().or_else(|_| epoll()),
            IoMode::Uring => uring()
                .map_err(|e| io::Error::other(format!("--io io_uring: cannot set up a ring: {e}"))),
        }
    }

    /// Waits until `until` on the run clock (`now`: its reading just
    /// before) at the latest. What happened lands in `ready` (epoll) or
    /// `events` (io_uring), both cleared first; returns how many.
    pub fn wait(
        &mut self,
        now: u64,
        until: u64,
        ready: &mut Vec<crate::poller::Ready>,
        events: &mut Vec<Event>,
    ) -> io::Result<usize> {
        ready.clear();
        events.clear();
        match self {
            Io::Epoll(p) => {
                let timeout = Duration::from_nanos(until.saturating_sub(now));
                p.wait(Some(timeout), |r| ready.push(r))
            }
            Io::Uring { ring, origin_ns } => {
                ring.wait_until(*origin_ns + until, events)?;
                Ok(events.len())
            }
        }
    }

    /// The ring and the slot an io_uring completion is for, when it is
    /// for the socket slot `i` holds now (`generation(i)`: the slot's
    /// socket count, `None` without a socket); a completion for an old
    /// socket is dropped, its buffer given back. `None` with epoll.
    pub fn completion_for(
        &mut self,
        ev: &Event,
        generation: impl Fn(usize) -> Option<u64>,
    ) -> Option<(&mut Ring, usize)> {
        let Io::Uring { ring, .. } = self else {
            return None;
        };
        let (slot, g) = untoken(ev.token());
        if generation(slot).is_some_and(|now| now & 0x7fff_ffff == g) {
            return Some((ring, slot));
        }
        if let Event::Data { buf, .. } = *ev {
            ring.release(buf);
        }
        None
    }

    /// Stops waiting on `fd` before it is closed: epoll forgets it; with
    /// io_uring a pending receive or poll (`pending`) of slot `slot`'s
    /// socket `generation` is cancelled, since it holds the socket open.
    pub fn forget(&mut self, fd: RawFd, slot: usize, generation: u64, pending: bool) {
        match self {
            Io::Epoll(p) => {
                let _ = p.delete(fd);
            }
            Io::Uring { ring, .. } if pending => ring.cancel(token(slot, generation)),
            Io::Uring { .. } => {}
        }
    }

    /// `epoll` or `io_uring`, as reported in `wakeups.io`.
    pub fn name(&self) -> &'static str {
        match self {
            Io::Epoll(_) => "epoll",
            Io::Uring { .. } => "io_uring",
        }
    }
}

/// An io_uring token for slot `slot` of a worker whose sockets in that
/// slot are counted by `generation`: a completion for an old socket never
/// matches the slot's current one.
#[inline]
pub fn token(slot: usize, generation: u64) -> u64 {
    ((generation & 0x7fff_ffff) << 32) | (slot as u64 & 0xffff_ffff)
}

/// The slot and generation a [`token`] names.
#[inline]
pub fn untoken(token: u64) -> (usize, u64) {
    ((token & 0xffff_ffff) as usize, token >> 32)
}

/// One completion, as the worker sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `len` bytes arrived for `token` in provided buffer `buf`: read them
    /// with [`Ring::data`], then hand the buffer back with [`Ring::release`].
    /// `armed`: the receive goes on; otherwise arm it again.
    Data {
        token: u64,
        buf: u16,
        len: usize,
        armed: bool,
    },
    /// The peer closed the stream (the receive has ended).
    Eof { token: u64 },
    /// The receive ended with `errno`. `ENOBUFS` (every buffer in use) only
    /// means: arm it again.
    Failed { token: u64, errno: i32 },
    /// A one-shot poll fired.
    Ready {
        token: u64,
        writable: bool,
        hangup: bool,
    },
}

impl Event {
    /// The token the completion is for.
    pub fn token(&self) -> u64 {
        match *self {
            Event::Data { token, .. }
            | Event::Eof { token }
            | Event::Failed { token, .. }
            | Event::Ready { token, .. } => token,
        }
    }
}

/// The buffers a multishot receive fills, shared through a ring the kernel
/// takes from and the worker gives back to.
struct Buffers {
    pool: Box<[u8]>,
    size: usize,
    /// `count` entries of [`BufRingEntry`], page-aligned (mmap).
    ring: *mut BufRingEntry,
    count: u16,
    tail: u16,
    /// Buffers given back since the tail was last published.
    dirty: bool,
}

impl Buffers {
    fn new(count: u16, size: usize) -> io::Result<Self> {
        let bytes = count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping, unmapped in Drop.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = Self {
            pool: vec![0u8; count as usize * size].into_boxed_slice(),
            size,
            ring: ring as *mut BufRingEntry,
            count,
            tail: 0,
            dirty: false,
        };
        for id in 0..count {
            b.give(id);
        }
        b.publish();
        Ok(b)
    }

    fn give(&mut self, id: u16) {
        let slot = (self.tail & (self.count - 1)) as usize;
        // SAFETY: `slot < count`, inside the mapping; the kernel reads only
        // entries before the published tail, and this one is past it.
        let e = unsafe { &mut *self.ring.add(slot) };
        // SAFETY: `id < count`, so the buffer lies inside the pool.
        e.set_addr(unsafe { self.pool.as_ptr().add(id as usize * self.size) } as u64);
        e.set_len(self.size as u32);
        e.set_bid(id);
        self.tail = self.tail.wrapping_add(1);
        self.dirty = true;
    }

    fn publish(&mut self) {
        if self.dirty {
            // SAFETY: the tail field lives in the first entry of the mapping;
            // the kernel reads it atomically.
            let tail = unsafe { AtomicU16::from_ptr(BufRingEntry::tail(self.ring) as *mut u16) };
            tail.store(self.tail, Ordering::Release);
            self.dirty = false;
        }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        let bytes = self.count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: mapped in `new` with this length.
        unsafe { libc::munmap(self.ring as *mut libc::c_void, bytes) };
    }
}

pub struct Ring {
    // Dropped first: closing the ring ends every receive before the
    // buffers they write into go away.
    ring: IoUring,
    bufs: Buffers,
    /// Requests that did not fit the submission queue.
    backlog: Vec<squeue::Entry>,
    waits: u64,
    /// The wake-up timer (an absolute `CLOCK_MONOTONIC` time, boxed: the
    /// kernel reads it when the request is submitted), and when it is set
    /// to fire if it is pending.
    timer: Box<Timespec>,
    timer_at: Option<u64>,
    /// Completions of [`Ring::send`]s: token and result, in order.
    sent: Vec<(u64, i32)>,
}

/// `CLOCK_MONOTONIC` in nanoseconds (the clock of [`Ring::wait_until`];
/// `std::time::Instant` reads the same clock).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Ring {
    /// A ring for about `connections` connections, with receive buffers of
    /// `buf_size` bytes, or smaller when there are many connections.
    ///
    /// Every connection's receive must find a buffer and a completion slot
    /// when its response arrives: with 4096 buffers and a 16K-entry
    /// completion queue for 19,900 connections, the receives that found
    /// none (`ENOBUFS`, overflow) were re-armed behind the others, again and
    /// again, until their requests timed out and the run collapsed (docs/http.md,
    /// "Many connections"). So there are two buffers and two completion slots
    /// per connection (up to the kernel's 32768 buffers and 65536 slots),
    /// buffers shrinking from `buf_size` down to 1 KiB to keep them within
    /// 32 MiB: a response larger than one buffer fills several.
    pub fn new(connections: usize, buf_size: usize) -> io::Result<Self> {
        let entries = (connections * 2).clamp(64, 4096).next_power_of_two() as u32;
        let cq = (entries * 4).max((connections * 2).next_power_of_two().min(65536) as u32);
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .setup_cqsize(cq)
            .build(entries)?;
        let count = Self::buffer_count(connections);
        let buf_size = Self::buffer_size(connections, buf_size);
        let bufs = Buffers::new(count as u16, buf_size)?;
        // SAFETY: the ring mapping and the pool live in `bufs`, which is
        // dropped after `ring` (field order), so as long as the kernel may
        // use them.
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                bufs.ring as u64,
                count as u16,
                BGID,
                0,
            )?
        };
        Ok(Self {
            ring,
            bufs,
            backlog: Vec::new(),
            waits: 0,
            timer: Box::new(Timespec::new()),
            timer_at: None,
            sent: Vec::new(),
        })
    }

    /// The size of each receive buffer [`Ring::new`] gives `connections`
    /// connections when asked for `buf_size`: a datagram larger than it
    /// would be cut short.
    pub fn buffer_size(connections: usize, buf_size: usize) -> usize {
        buf_size.min(((32 << 20) / Self::buffer_count(connections)).max(1024))
    }

    fn buffer_count(connections: usize) -> usize {
        (connections * 2)
            .clamp(64, 32768)
            .next_power_of_two()
            .min(32768)
    }

    /// Whether this kernel and its policy allow the ring (probed once).
    pub fn available() -> bool {
        static PROBE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *PROBE.get_or_init(|| Ring::new(1, 4096).is_ok())
    }

    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: every entry points at memory that outlives its request:
        // receives use the registered pool, the timer its boxed timespec,
        // polls and cancels nothing.
        if unsafe { self.ring.submission().push(&e) }.is_ok() {
            return;
        }
        // Full: hand the queue to the kernel and try again.
        let _ = self.ring.submit();
        if unsafe { self.ring.submission().push(&e) }.is_err() {
            self.backlog.push(e);
        }
    }

    /// Starts receiving on `fd` for `token` (until EOF, an error, or
    /// [`Ring::cancel`]).
    pub fn recv(&mut self, fd: RawFd, token: u64) {
        debug_assert!(token & POLL == 0);
        self.push(
            opcode::RecvMulti::new(Fd(fd), BGID)
                .build()
                .user_data(token),
        );
    }

    /// One [`Event::Ready`] when `fd` becomes writable (or fails).
    pub fn poll_writable(&mut self, fd: RawFd, token: u64) {
        self.push(
            opcode::PollAdd::new(Fd(fd), libc::POLLOUT as u32)
                .build()
                .user_data(token | POLL),
        );
    }

    /// Sends the `len` bytes at `buf` on `fd` for `token`, all of them
    /// (`MSG_WAITALL`: a short send goes on when the socket has room) when
    /// the queue is next submitted, at the latest by the next wait. Its one
    /// completion, the bytes sent or `-errno`, comes out of
    /// [`Ring::take_sent`].
    ///
    /// # Safety
    /// The bytes must stay where they are, unchanged, until that completion
    /// is taken (or the ring is dropped).
    pub unsafe fn send(&mut self, fd: RawFd, buf: *const u8, len: usize, token: u64) {
        debug_assert!(token & (POLL | SEND) == 0);
        self.push(
            opcode::Send::new(Fd(fd), buf, len as u32)
                .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
                .build()
                .user_data(token | SEND),
        );
    }

    /// Hands everything queued to the kernel without waiting: the sends
    /// of a worker that stops go out as they would have with `send(2)`.
    pub fn submit(&mut self) -> io::Result<()> {
        self.bufs.publish();
        loop {
            self.ring.submit()?;
            if self.backlog.is_empty() {
                return Ok(());
            }
            self.refill();
        }
    }

    /// Moves what did not fit into the submission queue, as far as it has
    /// room now.
    fn refill(&mut self) {
        while !self.backlog.is_empty() {
            let mut sq = self.ring.submission();
            let room = sq.capacity() - sq.len();
            if room == 0 {
                break;
            }
            let n = room.min(self.backlog.len());
            // SAFETY: as in `push`.
            let _ = unsafe { sq.push_multiple(&self.backlog[..n]) };
            drop(sq);
            self.backlog.drain(..n);
        }
    }

    /// The completions of [`Ring::send`]s since the last call: each
    /// token with the bytes sent or `-errno`. A send's completion comes
    /// before the completion of any reply to what it sent.
    pub fn take_sent(&mut self, out: &mut Vec<(u64, i32)>) {
        out.clear();
        std::mem::swap(out, &mut self.sent);
    }

    /// Ends a [`Ring::send`] under `token` still waiting for room; its
    /// completion (`ECANCELED`, or what it sent) still arrives.
    pub fn cancel_send(&mut self, token: u64) {
        self.push(
            opcode::AsyncCancel::new(token | SEND)
                .build()
                .flags(squeue::Flags::SKIP_SUCCESS)
                .user_data(CANCEL),
        );
    }

    /// Ends the receive and any poll under `token`; their last completions
    /// (`ECANCELED`) still arrive and must be ignored by token.
    pub fn cancel(&mut self, token: u64) {
        for ud in [token, token | POLL] {
            self.push(
                opcode::AsyncCancel::new(ud)
                    .build()
                    .flags(squeue::Flags::SKIP_SUCCESS)
                    .user_data(CANCEL),
            );
        }
    }

    /// The bytes of an [`Event::Data`].
    #[inline]
    pub fn data(&self, buf: u16, len: usize) -> &[u8] {
        let at = buf as usize * self.bufs.size;
        &self.bufs.pool[at..at + len.min(self.bufs.size)]
    }

    /// Gives an [`Event::Data`]'s buffer back to the kernel.
    #[inline]
    pub fn release(&mut self, buf: u16) {
        self.bufs.give(buf);
    }

    /// `io_uring_enter` calls that waited for completions.
    pub fn waits(&self) -> u64 {
        self.waits
    }

    /// Submits what is queued, waits up to `timeout` for at least one
    /// completion, and appends every completion to `out`.
    pub fn wait(&mut self, timeout: Duration, out: &mut Vec<Event>) -> io::Result<()> {
        self.wait_until(monotonic_ns() + timeout.as_nanos() as u64, out)
    }

    /// As [`Ring::wait`], until `deadline` (`monotonic_ns`) at the
    /// latest. The deadline is kept as a timer request that stays pending
    /// across waits, rather than a timeout on every wait: arming and
    /// cancelling a timer per wait cost 2-3% of a loopback request's CPU in
    /// a VM (a timer device write is a VM exit). A wait may end early,
    /// when a timer set for an earlier deadline fires.
    pub fn wait_until(&mut self, deadline: u64, out: &mut Vec<Event>) -> io::Result<()> {
        self.bufs.publish();
        let relative = match self.timer_at {
            Some(at) if at <= deadline => None,
            // The pending timer is too late: this wait has its own timeout.
            Some(_) => Some(deadline.saturating_sub(monotonic_ns())),
            None => {
                *self.timer = Timespec::new()
                    .sec(deadline / 1_000_000_000)
                    .nsec((deadline % 1_000_000_000) as u32);
                let t: *const Timespec = &*self.timer;
                self.push(
                    opcode::Timeout::new(t)
                        .flags(io_uring::types::TimeoutFlags::ABS)
                        .build()
                        .user_data(TIMER),
                );
                self.timer_at = Some(deadline);
                // Not even the timer fit: this wait needs its own timeout.
                (!self.backlog.is_empty()).then(|| deadline.saturating_sub(monotonic_ns()))
            }
        };
        let submitted = match relative {
            None => self.ring.submitter().submit_and_wait(1),
            Some(ns) => {
                let ts = Timespec::new()
                    .sec(ns / 1_000_000_000)
                    .nsec((ns % 1_000_000_000) as u32);
                let args = SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
        };
        match submitted {
            Ok(_) => {}
            // Timed out, interrupted, or the completion queue is full
            // (reap, then submit again).
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        self.waits += 1;
        for cqe in self.ring.completion() {
            let ud = cqe.user_data();
            if ud == CANCEL {
                continue;
            }
            if ud == TIMER {
                self.timer_at = None;
                continue;
            }
            let res = cqe.result();
            let flags = cqe.flags();
            if ud & (POLL | SEND) == SEND {
                self.sent.push((ud & !SEND, res));
                continue;
            }
            if ud & POLL != 0 {
                let bits = if res < 0 { libc::POLLERR as i32 } else { res };
                if res == -libc::ECANCELED {
                    continue;
                }
                out.push(Event::Ready {
                    token: ud & !POLL,
                    writable: bits & libc::POLLOUT as i32 != 0,
                    hangup: bits & (libc::POLLERR | libc::POLLHUP) as i32 != 0,
                });
                continue;
            }
            out.push(match res {
                0 => Event::Eof { token: ud },
                n if n > 0 => match cqueue::buffer_select(flags) {
                    Some(buf) => Event::Data {
                        token: ud,
                        buf,
                        len: n as usize,
                        armed: cqueue::more(flags),
                    },
                    None => Event::Failed {
                        token: ud,
                        errno: libc::EIO,
                    },
                },
                e => Event::Failed {
                    token: ud,
                    errno: -e,
                },
            });
        }
        // Whatever did not fit goes in now that the queue has room.
        self.refill();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Whether to run: io_uring here, or a failure when the test script
    /// says it must be (`TARE_REQUIRE_URING=1`).
    fn ring_here() -> bool {
        let ok = Ring::available();
        assert!(
            ok || std::env::var_os("TARE_REQUIRE_URING").is_none_or(|v| v != "1"),
            "TARE_REQUIRE_URING=1 but this kernel refuses io_uring"
        );
        ok
    }

    fn wait_for(ring: &mut Ring, n: usize) -> Vec<Event> {
        let mut out = Vec::new();
        for _ in 0..100 {
            ring.wait(Duration::from_millis(20), &mut out).unwrap();
            if out.len() >= n {
                break;
            }
        }
        out
    }

    #[test]
    fn multishot_receive_delivers_every_write_then_eof() {
        if !ring_here() {
            return;
        }
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut ring = Ring::new(1, 4096).unwrap();
        ring.recv(a.as_raw_fd(), 7);
        let mut got = Vec::new();
        for msg in [&b"hello"[..], b", ", b"world"] {
            b.write_all(msg).unwrap();
            for ev in wait_for(&mut ring, 1) {
                match ev {
                    Event::Data {
                        token, buf, len, ..
                    } => {
                        assert_eq!(token, 7);
                        got.extend_from_slice(ring.data(buf, len));
                        ring.release(buf);
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert_eq!(got, b"hello, world");
        drop(b);
        assert_eq!(wait_for(&mut ring, 1), vec![Event::Eof { token: 7 }]);
    }

    #[test]
    fn more_data_than_buffers_is_received_whole_across_re_arms() {
        if !ring_here() {
            return;
        }
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut ring = Ring::new(1, 4096).unwrap();
        ring.recv(a.as_raw_fd(), 1);
        // 64 buffers of 4 KiB: 1 MiB needs them back many times over.
        let payload: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let p = payload.clone();
        let writer = std::thread::spawn(move || b.write_all(&p).unwrap());
        let mut got = Vec::new();
        let mut events = Vec::new();
        for _ in 0..10_000 {
            if got.len() == payload.len() {
                break;
            }
            events.clear();
            ring.wait(Duration::from_millis(20), &mut events).unwrap();
            for ev in events.drain(..) {
                match ev {
                    Event::Data {
                        buf, len, armed, ..
                    } => {
                        got.extend_from_slice(ring.data(buf, len));
                        ring.release(buf);
                        if !armed {
                            ring.recv(a.as_raw_fd(), 1);
                        }
                    }
                    Event::Failed { errno, .. } if errno == libc::ENOBUFS => {
                        ring.recv(a.as_raw_fd(), 1)
                    }
                    // The writer is done and gone: only after every byte.
                    Event::Eof { .. } => assert_eq!(got.len(), payload.len()),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        writer.join().unwrap();
        assert_eq!(got.len(), payload.len());
        assert!(got == payload);
    }

    #[test]
    fn a_send_larger_than_the_socket_buffer_goes_out_whole_with_one_completion() {
        if !ring_here() {
            return;
        }
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut ring = Ring::new(1, 4096).unwrap();
        // Far more than a Unix socket's buffer: the send waits for room.
        let payload: Vec<u8> = (0..4 << 20).map(|i| (i % 253) as u8).collect();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        // SAFETY: `payload` outlives the completion, taken below.
        unsafe { ring.send(a.as_raw_fd(), payload.as_ptr(), payload.len(), 9) };
        let mut sent = Vec::new();
        let mut events = Vec::new();
        for _ in 0..500 {
            ring.wait(Duration::from_millis(20), &mut events).unwrap();
            let mut now = Vec::new();
            ring.take_sent(&mut now);
            sent.extend(now);
            if !sent.is_empty() {
                break;
            }
        }
        assert!(events.is_empty(), "only the send completed: {events:?}");
        assert_eq!(sent, vec![(9, payload.len() as i32)]);
        drop(a);
        assert!(reader.join().unwrap() == payload);
    }

    #[test]
    fn a_send_to_a_closed_peer_completes_with_its_error() {
        if !ring_here() {
            return;
        }
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let mut ring = Ring::new(1, 4096).unwrap();
        let msg = b"PING\r\n";
        // SAFETY: `msg` is static.
        unsafe { ring.send(a.as_raw_fd(), msg.as_ptr(), msg.len(), 4) };
        let mut sent = Vec::new();
        let mut events = Vec::new();
        for _ in 0..100 {
            ring.wait(Duration::from_millis(20), &mut events).unwrap();
            ring.take_sent(&mut sent);
            if !sent.is_empty() {
                break;
            }
        }
        assert_eq!(sent, vec![(4, -libc::EPIPE)]);
    }

    #[test]
    fn cancel_ends_the_receive_so_closing_the_socket_closes_it() {
        if !ring_here() {
            return;
        }
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut ring = Ring::new(1, 4096).unwrap();
        ring.recv(a.as_raw_fd(), 3);
        ring.poll_writable(a.as_raw_fd(), 3);
        // The poll fires at once (the socket is writable).
        assert!(matches!(
            wait_for(&mut ring, 1)[..],
            [Event::Ready {
                token: 3,
                writable: true,
                ..
            }]
        ));
        ring.cancel(3);
        drop(a);
        let mut out = Vec::new();
        ring.wait(Duration::from_millis(50), &mut out).unwrap();
        // The receive's ECANCELED is reported; the socket is really closed.
        assert!(out
            .iter()
            .all(|e| matches!(e, Event::Failed { token: 3, errno } if *errno == libc::ECANCELED)));
        let mut buf = [0u8; 1];
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(b.read(&mut buf).unwrap(), 0, "peer sees the close");
    }

    #[test]
    fn a_wait_with_nothing_pending_times_out() {
        if !ring_here() {
            return;
        }
        let mut ring = Ring::new(1, 4096).unwrap();
        let t = std::time::Instant::now();
        let mut out = Vec::new();
        ring.wait(Duration::from_millis(30), &mut out).unwrap();
        assert!(out.is_empty());
        assert!(t.elapsed() >= Duration::from_millis(25));
        assert_eq!(ring.waits(), 1);
    }
}
