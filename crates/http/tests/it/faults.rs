//! Servers that misbehave: every fault is a counted error or a clear message,
//! and the run still ends with its full result. Each fake server here is a
//! bounded thread on loopback that stops when the test's run does. Every
//! fault is tried with each way the workers can wait (epoll, io_uring).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tare_http::{run, HttpConfig, Target};
use tare_record::LoadResult;

/// A loopback server answering each connection with `handler`, until dropped.
struct Fake {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Fake {
    fn start(handler: impl Fn(TcpStream) + Copy + Send + 'static) -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut handlers = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                        handlers.push(std::thread::spawn(move || handler(s)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            for h in handlers {
                let _ = h.join();
            }
        });
        Fake {
            port,
            stop,
            thread: Some(thread),
        }
    }

    fn config(&self) -> HttpConfig {
        let url = format!("http://127.0.0.1:{}/", self.port);
        let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
        c.load.threads = 1;
        c.load.connections = 2;
        c.load.duration = Some(Duration::from_millis(400));
        c.load.timeout = Duration::from_millis(150);
        c
    }

    /// One run per wait mode, each checked to have used that mode.
    fn runs(&self) -> Vec<LoadResult> {
        self.runs_of(&self.config())
    }

    fn runs_of(&self, c: &HttpConfig) -> Vec<LoadResult> {
        tare_testbed::io_modes()
            .into_iter()
            .map(|io| {
                let mut c = c.clone();
                c.load.io = io;
                let r = run(&c).unwrap();
                let used = r.wakeups.as_ref().map(|w| w.io.clone()).unwrap_or_default();
                assert_eq!(used, io.to_string(), "asked for {io}");
                r
            })
            .collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A fake server that answers the first request of each connection with
/// `reply`, then closes it.
fn answering_once(reply: &'static [u8]) -> Fake {
    Fake::start(move |mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(reply);
        }
    })
}

/// Every run against `f` counted read errors and no request.
fn assert_read_errors(f: &Fake) {
    for r in f.runs() {
        assert!(r.errors.read > 0, "{:?}", r.errors);
        assert_eq!(r.requests, 0);
    }
}

/// Every run against `f` completed more than `requests` requests and
/// counted no error.
fn assert_clean(f: &Fake, requests: u64) {
    for r in f.runs() {
        assert!(r.requests > requests, "{r:?}");
        assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    }
}

/// A config for a loopback port that was just free (bound, then dropped):
/// very likely closed now.
fn closed_port_config() -> HttpConfig {
    let port = tare_testbed::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.load.threads = 1;
    c
}

/// Reads one request head (bounded), or returns false at EOF.
fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
        if buf.len() > 1 << 16 {
            return false;
        }
    }
    true
}

#[test]
fn unreachable_port_counts_connect_errors() {
    let mut c = closed_port_config();
    c.load.connections = 2;
    c.load.duration = Some(Duration::from_millis(300));
    for io in tare_testbed::io_modes() {
        c.load.io = io;
        let r = run(&c).unwrap();
        assert_eq!(r.requests, 0);
        assert!(r.errors.connect > 0);
        // Back-off keeps the retry rate sane: 2 connections, >= 1 ms apart each.
        assert!(r.errors.connect < 2 * 300, "{}", r.errors.connect);
    }
}

#[test]
fn request_count_against_a_dead_port_still_ends() {
    let mut c = closed_port_config();
    c.load.connections = 1;
    c.load.duration = None;
    c.requests = Some(5);
    for io in tare_testbed::io_modes() {
        c.load.io = io;
        let r = run(&c).unwrap();
        assert_eq!((r.requests, r.errors.connect), (0, 5));
    }
}

#[test]
fn server_closing_mid_response_is_a_read_error() {
    let f = answering_once(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly-part");
    assert_read_errors(&f);
}

#[test]
fn garbage_is_a_read_error() {
    let f = answering_once(b"\x00\x01\x02 this is not http\r\n\r\n");
    assert_read_errors(&f);
}

#[test]
fn oversized_headers_are_a_read_error() {
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n");
            let line = format!("X-Big: {}\r\n", "y".repeat(4000));
            for _ in 0..40 {
                if s.write_all(line.as_bytes()).is_err() {
                    return;
                }
            }
        }
    });
    assert_read_errors(&f);
}

#[test]
fn a_response_never_finished_is_a_timeout() {
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
            // Hold the connection open until the client gives up.
            let mut b = [0u8; 16];
            let _ = s.read(&mut b);
        }
    });
    for r in f.runs() {
        assert!(r.errors.timeout > 0, "{:?}", r.errors);
        assert_eq!(r.requests, 0);
    }
}

#[test]
fn connection_close_responses_reconnect_without_errors() {
    let f = answering_once(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
    assert_clean(&f, 5);
}

#[test]
fn body_delimited_by_close_completes_at_eof() {
    let f = answering_once(b"HTTP/1.0 200 OK\r\n\r\nbody until close");
    assert_clean(&f, 5);
}

#[test]
fn keepalive_server_serving_many_requests_per_connection() {
    let f = Fake::start(|mut s| {
        // Bounded, but far above what 400 ms can use: a server that closed
        // mid-run would be a (correctly counted) read error.
        for _ in 0..10_000_000 {
            if !read_request(&mut s) {
                return;
            }
            if s.write_all(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            )
            .is_err()
            {
                return;
            }
        }
    });
    assert_clean(&f, 50);
}

/// Reads one request with a Content-Length body, after `stall`: meanwhile
/// a big body fills the socket buffers and the client's write blocks.
fn read_request_with_body(s: &mut TcpStream, stall: Duration) -> bool {
    std::thread::sleep(stall);
    let mut buf = Vec::new();
    let mut b = vec![0u8; 1 << 16];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut have = buf.len() - head_end;
    while have < len {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => have += n,
        }
    }
    true
}

#[test]
fn a_body_bigger_than_the_socket_buffers_is_written_whole() {
    // 16 MiB cannot sit in loopback's socket buffers while the server
    // stalls: the worker's write blocks, and it must wait for writability
    // and go on where it stopped (a short write), every request.
    let f = Fake::start(|mut s| {
        for _ in 0..1000 {
            if !read_request_with_body(&mut s, Duration::from_millis(30)) {
                return;
            }
            if s.write_all(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                .is_err()
            {
                return;
            }
        }
    });
    let mut c = f.config();
    c.method = "POST".into();
    c.body = vec![b'x'; 16 << 20];
    c.load.connections = 1;
    c.load.timeout = Duration::from_secs(2);
    c.load.duration = Some(Duration::from_millis(600));
    for r in f.runs_of(&c) {
        assert!(r.requests >= 2, "{r:?}");
        assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
        assert_eq!(r.status_codes.get("201"), Some(&r.requests));
    }
}

#[test]
fn an_open_loop_reconnects_when_the_server_drops_an_idle_connection() {
    // Each connection serves one request, then the server closes it while
    // the open loop has it parked for the next arrival.
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let mut c = f.config();
    c.load.rate = Some(100.0);
    c.load.connections = 2;
    c.load.duration = Some(Duration::from_millis(500));
    for r in f.runs_of(&c) {
        // A request that crosses the server's close of its idle
        // connection is sent again on a new one: no arrival is lost and
        // none is an error, whichever way the worker waits.
        assert!(r.requests >= 20, "{r:?}");
        assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    }
}

#[test]
fn a_closed_loop_resends_a_get_that_crosses_the_close_but_never_a_post() {
    // The server answers one request per connection without saying it will
    // close, then closes: the next request on that connection meets the
    // close before any byte of an answer. A GET is sent again on a new
    // connection; a POST is not (RFC 9110 §9.2.2) and counts an error.
    let f = Fake::start(|mut s| {
        if read_request_with_body(&mut s, Duration::from_millis(0)) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let mut c = f.config();
    c.load.connections = 2;
    c.requests = Some(200);
    c.load.duration = None;
    for r in f.runs_of(&c) {
        assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
        assert_eq!(r.requests, 200, "{r:?}");
    }
    c.method = "POST".into();
    c.body = b"x".to_vec();
    for r in f.runs_of(&c) {
        assert!(r.errors.read + r.errors.write > 0, "{:?}", r.errors);
        assert_eq!(r.requests + r.errors.total(), 200, "{r:?}");
    }
}
