//! `tare net serve`: the responder. One listening TCP (or Unix) socket and
//! one UDP socket on the same port number; a few acceptor threads, each
//! serving a connect/request/response/close transaction itself and handing
//! any longer-lived connection (request/response, streams) to a thread of
//! its own, as netperf's netserver forks one per test. Blocking reads and
//! writes: one transaction in flight per connection needs nothing more,
//! and a blocked read is the shortest path from the wire to an answer.
//!
//! Its threads are named `net-serve-<i>`, `net-udp-<i>` and `net-conn`,
//! never with the generator's `tare-net-` prefix, so a responder running
//! inside the generator's process (the tests) is not counted as load.
//!
//! It counts what it served ([`Served`]), so tests compare the client's
//! counts with the server's exactly, and can drop every Nth UDP request
//! (`--drop-every`): a known loss for the client to count.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tare_engine::cpu::CpuTime;

use crate::stream::Conn;
use crate::wire::{Datagram, Header, Mode, Trailer, HEADER_LEN, MAX_UDP_SIZE};

/// A streaming source asks whether its client has ended the stream once
/// per this many bytes written (eight of the default 128 KiB writes).
const CLOSE_CHECK: u64 = 1 << 20;
/// A connection whose header (or CRR request) has not arrived after this
/// long is closed: an acceptor is never held by a silent client for longer.
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// What to listen on.
#[derive(Clone, Debug)]
pub struct ResponderConfig {
    /// TCP address; UDP listens on the same address and port.
    pub listen: SocketAddr,
    /// A Unix stream socket instead of TCP (no UDP then).
    pub unix: Option<PathBuf>,
    /// Acceptor threads, and UDP receiver threads.
    pub threads: usize,
    /// Test hook: leave every Nth UDP request unanswered.
    pub drop_every: Option<u64>,
}

impl Default for ResponderConfig {
    fn default() -> Self {
        ResponderConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            unix: None,
            threads: 2,
            drop_every: None,
        }
    }
}

/// The responder's conventional port (netperf's netserver listens on 12865).
pub const DEFAULT_PORT: u16 = 12865;

#[derive(Debug, thiserror::Error)]
pub enum ResponderError {
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: io::Error },
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// What the responder served so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// TCP request/response transactions answered (rr and crr).
    pub transactions: u64,
    /// TCP connections accepted.
    pub connections: u64,
    /// UDP requests answered.
    pub udp_answered: u64,
    /// UDP requests left unanswered on purpose (`drop_every`).
    pub udp_dropped: u64,
    /// Stream bytes read (sink) and written (source).
    pub bytes_sunk: u64,
    pub bytes_sourced: u64,
    /// Connections or datagrams whose header was not tare net's.
    pub rejected: u64,
}

#[derive(Default)]
struct Counters {
    transactions: AtomicU64,
    connections: AtomicU64,
    udp_received: AtomicU64,
    udp_answered: AtomicU64,
    udp_dropped: AtomicU64,
    bytes_sunk: AtomicU64,
    bytes_sourced: AtomicU64,
    rejected: AtomicU64,
}

struct Shared {
    stop: AtomicBool,
    counters: Counters,
    drop_every: Option<u64>,
    /// Live connections, so stopping can shut each one down.
    live: Mutex<HashMap<u64, Conn>>,
    next_id: AtomicU64,
}

/// A running responder; dropping it stops it (every connection is shut
/// down) and removes its Unix socket.
pub struct Responder {
    local_addr: Option<SocketAddr>,
    unix_path: Option<PathBuf>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Shut down when stopping, which wakes the acceptors blocked on it.
    listener: Arc<Listener>,
    /// The UDP socket the receivers block on, shut down likewise.
    udp: Option<UdpSocket>,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    /// Blocks until a connection arrives, or until [`Listener::wake`].
    fn accept(&self) -> io::Result<Conn> {
        match self {
            Listener::Tcp(l) => Ok(Conn::Tcp(l.accept()?.0)),
            Listener::Unix(l) => Ok(Conn::Unix(l.accept()?.0)),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }

    /// Ends every blocked `accept` on this listener (Linux: a listening
    /// socket shut down returns EINVAL to its waiters, TCP and Unix alike).
    fn wake(&self) {
        // SAFETY: plain syscall on the listener's own descriptor.
        unsafe { libc::shutdown(self.fd(), libc::SHUT_RDWR) };
    }
}

impl Responder {
    pub fn start(config: ResponderConfig) -> Result<Responder, ResponderError> {
        if config.threads == 0 || config.threads > 256 {
            return Err(ResponderError::Config(
                "threads must be between 1 and 256".into(),
            ));
        }
        if config.drop_every == Some(0) {
            return Err(ResponderError::Config(
                "drop-every must be at least 1".into(),
            ));
        }
        tare_engine::limits::raise_open_files();
        let (listener, local_addr, udp) = match &config.unix {
            Some(path) => {
                let l = tare_engine::endpoint::bind_unix(path).map_err(|source| {
                    ResponderError::Listen {
                        addr: format!("unix:{}", path.display()),
                        source,
                    }
                })?;
                (Listener::Unix(l), None, None)
            }
            None => {
                let l =
                    TcpListener::bind(config.listen).map_err(|source| ResponderError::Listen {
                        addr: config.listen.to_string(),
                        source,
                    })?;
                let addr = l.local_addr()?;
                let u = UdpSocket::bind(addr).map_err(|source| ResponderError::Listen {
                    addr: format!("udp {addr}"),
                    source,
                })?;
                (Listener::Tcp(l), Some(addr), Some(u))
            }
        };
        // std listens with a backlog of 128: a client opening a thousand
        // connections at once overflowed it, the kernel dropped the
        // handshakes' last ACKs, and hundreds of connections the client
        // thought open were reset mid-transaction. Listening again only
        // raises the backlog, to the kernel's `net.core.somaxconn`.
        // SAFETY: plain syscall on the listener's own descriptor.
        unsafe { libc::listen(listener.fd(), libc::c_int::MAX) };
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            counters: Counters::default(),
            drop_every: config.drop_every,
            live: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        });
        let listener = Arc::new(listener);
        let udp_wake = udp.as_ref().map(UdpSocket::try_clone).transpose()?;
        let mut threads = Vec::new();
        for i in 0..config.threads {
            let (l, sh) = (listener.clone(), shared.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("net-serve-{i}"))
                    .spawn(move || accept_loop(&l, &sh))?,
            );
            if let Some(u) = &udp {
                let (u, sh) = (u.try_clone()?, shared.clone());
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("net-udp-{i}"))
                        .spawn(move || udp_loop(&u, &sh))?,
                );
            }
        }
        Ok(Responder {
            local_addr,
            unix_path: config.unix,
            shared,
            threads,
            listener,
            udp: udp_wake,
        })
    }

    /// The TCP (and UDP) address it listens on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    pub fn unix_path(&self) -> Option<&PathBuf> {
        self.unix_path.as_ref()
    }

    pub fn served(&self) -> Served {
        let c = &self.shared.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Served {
            transactions: l(&c.transactions),
            connections: l(&c.connections),
            udp_answered: l(&c.udp_answered),
            udp_dropped: l(&c.udp_dropped),
            bytes_sunk: l(&c.bytes_sunk),
            bytes_sourced: l(&c.bytes_sourced),
            rejected: l(&c.rejected),
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        {
            let mut live = self.shared.live.lock().unwrap_or_else(|p| p.into_inner());
            self.shared.stop.store(true, Ordering::SeqCst);
            for (_, c) in live.drain() {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
        // The acceptors and UDP receivers block without a timeout (an idle
        // responder never wakes: docs/net.md, "The responder"); shutting
        // their sockets down returns them from their wait, to the stop flag.
        self.listener.wake();
        if let Some(u) = &self.udp {
            // SAFETY: plain syscall on the socket's own descriptor. An
            // unconnected UDP socket answers ENOTCONN but is shut down
            // for reading all the same, and its waiters are woken.
            unsafe { libc::shutdown(u.as_raw_fd(), libc::SHUT_RD) };
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(p) = &self.unix_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn accept_loop(listener: &Listener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        // Stopped meanwhile (the listener shut down, or a connection
        // accepted just before): it closes with the responder.
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let conn = match accepted {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors or memory: wait a little rather than
                // spin on a listener that stays ready.
                if !matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
        };
        shared.counters.connections.fetch_add(1, Ordering::Relaxed);
        let header = match read_header(&conn) {
            Some(h) => h,
            None => {
                shared.counters.rejected.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        // Request/response without Nagle's delay and with Reno, as the
        // client's connections (small segments are never limited by the
        // congestion window; on loopback this socket's ACK processing runs
        // in the client's context: docs/net.md); a stream's connection as
        // the kernel sets it, as iperf3's and nuttcp's servers leave theirs.
        if matches!(header.mode, Mode::Rr | Mode::Crr) {
            if conn.set_nodelay().is_err() {
                continue;
            }
            tare_engine::endpoint::cheap_congestion_control(conn.as_raw_fd());
        }
        if header.mode == Mode::Crr {
            // One transaction: served here, no thread for it.
            let _ = serve(conn, header, &shared.counters);
            continue;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(c) = conn.try_clone() {
            let mut live = shared.live.lock().unwrap_or_else(|p| p.into_inner());
            // Checked under the lock stopping drains: a connection is
            // either shut down by the drain or never served.
            if shared.stop.load(Ordering::SeqCst) {
                break;
            }
            live.insert(id, c);
        }
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("net-conn".into())
            .spawn(move || {
                let _ = serve(conn, header, &sh.counters);
                sh.live
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
            });
        if spawned.is_err() {
            shared
                .live
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
        }
    }
}

fn read_header(conn: &Conn) -> Option<Header> {
    conn_timeout(conn, Some(HEADER_TIMEOUT));
    let mut b = [0u8; HEADER_LEN];
    let mut r: &Conn = conn;
    r.read_exact(&mut b).ok()?;
    Header::parse(&b).ok()
}

fn conn_timeout(conn: &Conn, t: Option<Duration>) {
    let _ = conn.set_read_timeout(t);
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: read into the caller's buffer of its stated length.
        let n = unsafe { libc::read(self.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

fn serve(mut conn: Conn, h: Header, c: &Counters) -> io::Result<()> {
    match h.mode {
        Mode::Rr | Mode::Crr => {
            let mut req = vec![0u8; h.request as usize];
            let resp = vec![0u8; h.response as usize];
            if h.mode == Mode::Rr {
                // A request/response connection may idle as long as its
                // client likes (an open loop at a low rate).
                conn_timeout(&conn, None);
            }
            loop {
                match conn.read_exact(&mut req) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                    Err(e) => return Err(e),
                }
                conn.write_all(&resp)?;
                c.transactions.fetch_add(1, Ordering::Relaxed);
                if h.mode == Mode::Crr {
                    // The responder closes first, so TIME_WAIT stays on its
                    // side and the client's ports are not used up.
                    return Ok(());
                }
            }
        }
        Mode::Sink => {
            conn_timeout(&conn, None);
            let cpu0 = CpuTime::thread();
            let mut buf = vec![0u8; h.request as usize];
            let mut total = 0u64;
            loop {
                match conn.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        total += n as u64;
                        c.bytes_sunk.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            let cpu = CpuTime::thread().since(&cpu0);
            conn.write_all(&trailer(total, &cpu))
        }
        Mode::Source => {
            let cpu0 = CpuTime::thread();
            let buf = vec![0u8; h.response as usize];
            let mut total = 0u64;
            // A client that stops reading for this long is gone.
            conn.set_write_timeout(Some(Duration::from_secs(10)))?;
            // Whether the client has ended the stream is asked once per
            // CLOSE_CHECK bytes written, not before every write: a `recv`
            // per 128 KiB write was a system call more per write than
            // iperf3's sender makes (docs/net.md). The client reads what
            // comes after its shutdown until the trailer.
            let mut check_at = 0u64;
            loop {
                if total >= check_at {
                    if conn.peer_closed() {
                        break;
                    }
                    check_at = total + CLOSE_CHECK;
                }
                let n = conn.write(&buf)?;
                total += n as u64;
                c.bytes_sourced.fetch_add(n as u64, Ordering::Relaxed);
            }
            let cpu = CpuTime::thread().since(&cpu0);
            conn.write_all(&trailer(total, &cpu))
        }
    }
}

fn trailer(bytes: u64, cpu: &CpuTime) -> [u8; HEADER_LEN] {
    Trailer {
        bytes,
        cpu_ns: (cpu.total_s() * 1e9) as u64,
    }
    .encode()
}

fn udp_loop(sock: &UdpSocket, shared: &Shared) {
    let c = &shared.counters;
    let mut buf = vec![0u8; MAX_UDP_SIZE + 1];
    let mut resp = vec![0u8; MAX_UDP_SIZE];
    // Blocks without a timeout: stopping shuts the socket down for reading,
    // which returns every receiver from its wait.
    while !shared.stop.load(Ordering::SeqCst) {
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(_) => continue,
        };
        let d = match Datagram::parse(&buf[..n]) {
            Ok(d) => d,
            Err(_) => {
                c.rejected.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        let k = c.udp_received.fetch_add(1, Ordering::Relaxed) + 1;
        if shared
            .drop_every
            .is_some_and(|every| k.is_multiple_of(every))
        {
            c.udp_dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let len = d.response as usize;
        resp[..HEADER_LEN].copy_from_slice(&buf[..HEADER_LEN]);
        if sock.send_to(&resp[..len], from).is_ok() {
            c.udp_answered.fetch_add(1, Ordering::Relaxed);
        }
    }
}
