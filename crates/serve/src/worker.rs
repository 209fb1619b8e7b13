//! One epoll loop per thread. All workers share the listening socket
//! (`EPOLLEXCLUSIVE`), accept their own connections and never talk to each
//! other. Responses are prebuilt; a keep-alive request costs one `read` and
//! one `send`, pipelined requests one `send` for all their responses.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tare_engine::{Interest, Poller};

use crate::config::ServeConfig;
use crate::response::Responses;

const LISTENER: u64 = u64::MAX;
/// Largest request head we buffer before answering 400 and closing.
const MAX_HEAD: usize = 64 * 1024;
/// How often a blocked worker looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

struct Conn {
    fd: OwnedFd,
    /// Bytes of a request not yet complete.
    inbuf: Vec<u8>,
    /// Response bytes not yet written (only after a short write, or when
    /// several responses go out together).
    out: Vec<u8>,
    /// Close once `out` drains.
    closing: bool,
    /// Responses waiting for their delay; they go out in order.
    delayed: usize,
    /// Distinguishes this connection from a later one in the same slot.
    generation: u64,
    writable_armed: bool,
}

/// A response held back by `--delay` or a stall.
struct Due {
    at: Duration,
    slot: usize,
    generation: u64,
    close: bool,
    head: bool,
}

pub(crate) struct Worker {
    listener: Arc<OwnedFd>,
    responses: Arc<Responses>,
    stop: Arc<AtomicBool>,
    config: ServeConfig,
    origin: Instant,
    poller: Poller,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    due: VecDeque<Due>,
    next_generation: u64,
    readbuf: Vec<u8>,
    /// The requests of one read, as (close after it, HEAD); kept to reuse
    /// its allocation.
    answers: Vec<(bool, bool)>,
}

impl Worker {
    pub(crate) fn new(
        listener: Arc<OwnedFd>,
        responses: Arc<Responses>,
        stop: Arc<AtomicBool>,
        config: ServeConfig,
        origin: Instant,
    ) -> io::Result<Self> {
        let poller = Poller::new(256)?;
        poller.add_listener(listener.as_raw_fd(), LISTENER)?;
        Ok(Self {
            listener,
            responses,
            stop,
            config,
            origin,
            poller,
            conns: Vec::new(),
            free: Vec::new(),
            due: VecDeque::new(),
            next_generation: 0,
            readbuf: vec![0; 64 * 1024],
            answers: Vec::with_capacity(32),
        })
    }

    fn delayed_mode(&self) -> bool {
        !self.config.delay.is_zero() || self.config.stall_every.is_some()
    }

    pub(crate) fn run(mut self) {
        let mut ready = Vec::with_capacity(256);
        while !self.stop.load(Ordering::Relaxed) {
            let timeout = match self.due.front() {
                Some(d) => d.at.saturating_sub(self.origin.elapsed()).min(STOP_POLL),
                None => STOP_POLL,
            };
            ready.clear();
            if self.poller.wait(Some(timeout), |r| ready.push(r)).is_err() {
                return;
            }
            for r in &ready {
                if r.token == LISTENER {
                    self.accept();
                } else {
                    let slot = r.token as usize;
                    if r.writable {
                        self.flush(slot);
                    }
                    if r.readable || r.hangup {
                        self.read(slot);
                    }
                }
            }
            self.release_due();
        }
    }

    fn accept(&mut self) {
        // Bounded: at most 64 accepts per wake so one busy listener cannot
        // starve established connections.
        for _ in 0..64 {
            // SAFETY: accept4 on our listening fd; the result is owned below.
            let fd = unsafe {
                libc::accept4(
                    self.listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd < 0 {
                return; // EAGAIN (another worker took it), EMFILE, ...
            }
            // SAFETY: accept4 returned a new fd we now own.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            set_nodelay(fd.as_raw_fd());
            let slot = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            if self
                .poller
                .add(fd.as_raw_fd(), slot as u64, Interest::Read)
                .is_err()
            {
                self.free.push(slot);
                continue;
            }
            self.next_generation += 1;
            self.conns[slot] = Some(Conn {
                fd,
                inbuf: Vec::new(),
                out: Vec::new(),
                closing: false,
                delayed: 0,
                generation: self.next_generation,
                writable_armed: false,
            });
        }
    }

    fn close(&mut self, slot: usize) {
        if let Some(c) = self.conns[slot].take() {
            drop(c.fd); // closing removes it from the epoll set
            self.free.push(slot);
        }
    }

    fn read(&mut self, slot: usize) {
        let delayed_mode = self.delayed_mode();
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        // SAFETY: readbuf is valid for writes of its length.
        let n = unsafe {
            libc::read(
                conn.fd.as_raw_fd(),
                self.readbuf.as_mut_ptr() as *mut libc::c_void,
                self.readbuf.len(),
            )
        };
        if n == 0 {
            return self.close(slot);
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted {
                self.close(slot);
            }
            return;
        }
        let n = n as usize;
        let data: &[u8] = if conn.inbuf.is_empty() {
            &self.readbuf[..n]
        } else {
            conn.inbuf.extend_from_slice(&self.readbuf[..n]);
            &conn.inbuf
        };
        self.answers.clear();
        let (consumed, bad) = parse_requests(data, &mut self.answers);
        if bad {
            let resp =
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            conn.out.extend_from_slice(resp);
            conn.closing = true;
            conn.inbuf.clear();
            return self.flush(slot);
        }
        // Keep the unparsed tail (a request split across reads).
        if conn.inbuf.is_empty() {
            if consumed < n {
                let tail = self.readbuf[consumed..n].to_vec();
                conn.inbuf = tail;
            }
        } else {
            conn.inbuf.drain(..consumed);
        }
        if conn.inbuf.len() > MAX_HEAD {
            conn.inbuf.clear();
            conn.out
                .extend_from_slice(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            conn.closing = true;
            return self.flush(slot);
        }
        if self.answers.is_empty() {
            return;
        }
        if delayed_mode {
            let now = self.origin.elapsed();
            let mut at = now + self.config.delay;
            if let Some(end) = self.config.stall_end(at) {
                at = end;
            }
            let generation = conn.generation;
            for &(close, head) in &self.answers {
                conn.delayed += 1;
                self.due.push_back(Due {
                    at,
                    slot,
                    generation,
                    close,
                    head,
                });
                if close {
                    break;
                }
            }
            return;
        }
        for &(close, head) in &self.answers {
            conn.out.extend_from_slice(self.responses.get(close, head));
            if close {
                conn.closing = true;
                break;
            }
        }
        self.flush(slot);
    }

    /// Sends responses whose delay has passed.
    fn release_due(&mut self) {
        let now = self.origin.elapsed();
        while self.due.front().is_some_and(|d| d.at <= now) {
            let d = self.due.pop_front().expect("front checked");
            let Some(conn) = self.conns[d.slot].as_mut() else {
                continue;
            };
            if conn.generation != d.generation {
                continue;
            }
            conn.delayed -= 1;
            conn.out
                .extend_from_slice(self.responses.get(d.close, d.head));
            conn.closing |= d.close;
            self.flush(d.slot);
        }
    }

    fn flush(&mut self, slot: usize) {
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        while !conn.out.is_empty() {
            // SAFETY: out is valid for reads of its length.
            let n = unsafe {
                libc::send(
                    conn.fd.as_raw_fd(),
                    conn.out.as_ptr() as *const libc::c_void,
                    conn.out.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    if !conn.writable_armed {
                        conn.writable_armed = true;
                        let _ = self.poller.modify(
                            conn.fd.as_raw_fd(),
                            slot as u64,
                            Interest::ReadWrite,
                        );
                    }
                    return;
                }
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return self.close(slot);
            }
            let n = n as usize;
            if n == conn.out.len() {
                conn.out.clear();
            } else {
                conn.out.drain(..n);
            }
        }
        if conn.writable_armed {
            conn.writable_armed = false;
            let _ = self
                .poller
                .modify(conn.fd.as_raw_fd(), slot as u64, Interest::Read);
        }
        if conn.closing && conn.delayed == 0 {
            self.close(slot);
        }
    }
}

/// Parses every complete request `data` holds (up to the first that
/// closes the connection), appending to `answers` (close after it, HEAD
/// request) for each. Returns (bytes consumed, malformed).
pub(crate) fn parse_requests(data: &[u8], answers: &mut Vec<(bool, bool)>) -> (usize, bool) {
    let mut consumed = 0;
    while consumed < data.len() {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&data[consumed..]) {
            Ok(httparse::Status::Complete(len)) => {
                let mut close = req.version == Some(0);
                let mut body = 0usize;
                for h in req.headers.iter() {
                    if h.name.eq_ignore_ascii_case("connection") {
                        let v = h.value;
                        if v.eq_ignore_ascii_case(b"close") {
                            close = true;
                        } else if v.eq_ignore_ascii_case(b"keep-alive") {
                            close = false;
                        }
                    } else if h.name.eq_ignore_ascii_case("content-length") {
                        match std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|s| s.trim().parse().ok())
                        {
                            Some(n) => body = n,
                            None => return (consumed, true),
                        }
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        // Chunked request bodies are not needed by any load
                        // tare generates; refuse rather than misframe.
                        return (consumed, true);
                    }
                }
                if data.len() - consumed - len < body {
                    break; // body not all here yet
                }
                let head = req.method == Some("HEAD");
                answers.push((close, head));
                consumed += len + body;
                if close {
                    break;
                }
            }
            Ok(httparse::Status::Partial) => break,
            Err(_) => return (consumed, true),
        }
    }
    (consumed, false)
}

fn set_nodelay(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int option.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pipelined_and_partial_requests() {
        let mut a = Vec::new();
        let data = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\n\r\nGET /par";
        let (consumed, bad) = parse_requests(data, &mut a);
        assert!(!bad);
        assert_eq!(a, [(false, false), (false, true)]);
        assert_eq!(&data[consumed..], b"GET /par");
    }

    #[test]
    fn connection_close_and_http10_close() {
        let close = |data: &[u8]| {
            let mut a = Vec::new();
            parse_requests(data, &mut a);
            a
        };
        assert_eq!(close(b"GET / HTTP/1.0\r\n\r\n"), [(true, false)]);
        assert_eq!(
            close(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
            [(true, false)]
        );
        assert_eq!(
            close(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
            [(false, false)]
        );
    }

    #[test]
    fn waits_for_the_whole_body() {
        let mut a = Vec::new();
        let r = parse_requests(b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab", &mut a);
        assert_eq!((r, a.len()), ((0, false), 0));
        let r = parse_requests(b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd", &mut a);
        assert_eq!((r, a.len()), ((42, false), 1));
    }

    #[test]
    fn garbage_is_malformed() {
        let mut a = Vec::new();
        assert!(parse_requests(b"\x00\x01garbage\r\n\r\n", &mut a).1);
    }

    /// Regression (found writing the request fuzz target): one read parsed
    /// at most 32 requests, and the rest of the read waited in the buffer
    /// for the next read, so a client that pipelined 40 requests in one
    /// write and waited for 40 responses got 32 and hung.
    #[test]
    fn more_than_32_pipelined_requests_in_one_read_are_all_answered() {
        use std::io::{Read, Write};
        let data = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(40);
        let mut a = Vec::new();
        assert_eq!(parse_requests(&data, &mut a), (data.len(), false));
        assert_eq!(a.len(), 40);

        let server = crate::Server::start(crate::ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..crate::ServeConfig::default()
        })
        .unwrap();
        let mut s = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(&data).unwrap();
        let one = crate::response::Responses::new(&crate::ServeConfig::default())
            .get(false, false)
            .len();
        let mut got = vec![0; one * 40];
        s.read_exact(&mut got).expect("40 responses");
    }
}
