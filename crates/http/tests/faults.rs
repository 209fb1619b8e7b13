//! Servers that misbehave: every fault is a counted error or a clear message,
//! and the run still ends with its full result. Each fake server here is a
//! bounded thread on loopback that stops when the test's run does.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tare_http::{run, HttpConfig, Target};

/// A loopback server answering each connection with `handler`, until dropped.
struct Fake {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Fake {
    fn start(handler: fn(TcpStream)) -> Fake {
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
        c.threads = 1;
        c.connections = 2;
        c.duration = Some(Duration::from_millis(400));
        c.timeout = Duration::from_millis(150);
        c
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
    // Bind then drop: the port is very likely closed now.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.threads = 1;
    c.connections = 2;
    c.duration = Some(Duration::from_millis(300));
    let r = run(&c).unwrap();
    assert_eq!(r.requests, 0);
    assert!(r.errors.connect > 0);
    // Back-off keeps the retry rate sane: 2 connections, >= 1 ms apart each.
    assert!(r.errors.connect < 2 * 300, "{}", r.errors.connect);
}

#[test]
fn request_count_against_a_dead_port_still_ends() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.threads = 1;
    c.connections = 1;
    c.duration = None;
    c.requests = Some(5);
    let r = run(&c).unwrap();
    assert_eq!((r.requests, r.errors.connect), (0, 5));
}

#[test]
fn server_closing_mid_response_is_a_read_error() {
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly-part");
        }
    });
    let r = run(&f.config()).unwrap();
    assert!(r.errors.read > 0, "{:?}", r.errors);
    assert_eq!(r.requests, 0);
}

#[test]
fn garbage_is_a_read_error() {
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"\x00\x01\x02 this is not http\r\n\r\n");
        }
    });
    let r = run(&f.config()).unwrap();
    assert!(r.errors.read > 0, "{:?}", r.errors);
    assert_eq!(r.requests, 0);
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
    let r = run(&f.config()).unwrap();
    assert!(r.errors.read > 0, "{:?}", r.errors);
    assert_eq!(r.requests, 0);
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
    let r = run(&f.config()).unwrap();
    assert!(r.errors.timeout > 0, "{:?}", r.errors);
    assert_eq!(r.requests, 0);
}

#[test]
fn connection_close_responses_reconnect_without_errors() {
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let r = run(&f.config()).unwrap();
    assert!(r.requests > 5, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
}

#[test]
fn body_delimited_by_close_completes_at_eof() {
    let f = Fake::start(|mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nbody until close");
        }
    });
    let r = run(&f.config()).unwrap();
    assert!(r.requests > 5, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
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
    let r = run(&f.config()).unwrap();
    assert!(r.requests > 50, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
}
