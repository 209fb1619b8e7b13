//! Where load goes, and the non-blocking sockets that carry it.
//!
//! Sockets are raw file descriptors driven with `libc` directly: the hot path
//! is `send(MSG_NOSIGNAL)` and `read`, with no wrapper allocating or
//! re-checking state between them.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::mem;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// A server address: TCP or a Unix-domain stream socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Endpoint {
    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Tcp(_) => "tcp",
            Endpoint::Unix(_) => "unix",
        }
    }

    /// True for loopback addresses and Unix sockets: the only places load may
    /// go without the caller saying otherwise (ARCHITECTURE.md, "Principles": loopback only by default).
    pub fn is_local(&self) -> bool {
        match self {
            Endpoint::Unix(_) => true,
            Endpoint::Tcp(a) => match a.ip() {
                IpAddr::V4(ip) => ip.is_loopback(),
                IpAddr::V6(ip) => {
                    ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
                }
            },
        }
    }

    /// Starts a non-blocking connect. `Ok(Socket)` may still be connecting:
    /// wait for writability, then call [`Socket::take_error`].
    pub fn connect(&self) -> io::Result<Socket> {
        self.connect_from(None)
    }

    /// As [`Endpoint::connect`], from `source` when given (TCP only): a
    /// loopback address of 127.0.0.0/8 other than the kernel's choice, so
    /// more connections to one destination than its local ports allow
    /// (`crate::limits::Sources`).
    pub fn connect_from(&self, source: Option<IpAddr>) -> io::Result<Socket> {
        match self {
            Endpoint::Tcp(addr) => connect_tcp(addr, source),
            Endpoint::Unix(path) => connect_unix(path.as_os_str()),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// An owned non-blocking stream socket.
#[derive(Debug)]
pub struct Socket {
    fd: RawFd,
    /// `connect` returned `EINPROGRESS`/`EAGAIN`: not usable until writable.
    pub connecting: bool,
}

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn new_socket(domain: libc::c_int) -> io::Result<Socket> {
    // SAFETY: plain syscall; ownership of the fd passes to Socket.
    let fd = cvt(unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    Ok(Socket {
        fd,
        connecting: false,
    })
}

fn finish_connect(mut sock: Socket, rc: libc::c_int) -> io::Result<Socket> {
    if rc < 0 {
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINPROGRESS) | Some(libc::EAGAIN) => sock.connecting = true,
            _ => return Err(err),
        }
    }
    Ok(sock)
}

fn connect_tcp(addr: &SocketAddr, source: Option<IpAddr>) -> io::Result<Socket> {
    let (domain, storage, len) = sockaddr_of(addr);
    let sock = new_socket(domain)?;
    if let Some(ip) = source {
        // The port is still chosen by connect, per 4-tuple
        // (IP_BIND_ADDRESS_NO_PORT), not reserved by bind for good.
        sock.set_int_opt(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)?;
        let (_, src, src_len) = sockaddr_of(&SocketAddr::new(ip, 0));
        // SAFETY: `src` is a valid sockaddr of `src_len` bytes.
        cvt(unsafe { libc::bind(sock.fd, &src as *const _ as *const libc::sockaddr, src_len) })?;
    }
    // Requests are small and written whole: never let Nagle hold one back.
    sock.set_int_opt(libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    cheap_congestion_control(sock.fd);
    // SAFETY: storage is a valid sockaddr of `len` bytes.
    let rc = unsafe { libc::connect(sock.fd, &storage as *const _ as *const libc::sockaddr, len) };
    finish_connect(sock, rc)
}

/// A listener on the Unix socket `path` for a server of tare's own
/// (`tare serve`, `tare net serve`): a socket file left there by a killed
/// one is removed first, as it would make the bind fail; any other file is
/// left alone and the bind fails.
pub fn bind_unix(path: &std::path::Path) -> io::Result<std::os::unix::net::UnixListener> {
    let stale = std::fs::symlink_metadata(path)
        .map(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        .unwrap_or(false);
    if stale {
        let _ = std::fs::remove_file(path);
    }
    std::os::unix::net::UnixListener::bind(path)
}

/// Sets TCP socket `fd`'s congestion control to Reno, best effort. Small
/// requests and responses are never limited by the congestion window, so
/// the cheapest congestion control will do: Reno, always built in and
/// allowed. The host default may be BBR, whose per-ACK model update was
/// ~2% of a loopback request's CPU in a profile. Only this socket's
/// sending side changes (its ACKs are processed where the peer's segments
/// are: on loopback, in the peer's context).
pub fn cheap_congestion_control(fd: RawFd) {
    let v = b"reno";
    // SAFETY: `v` is valid for reads of its length for the call; a bad
    // descriptor is an error return, ignored.
    let _ = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            v.as_ptr() as *const libc::c_void,
            v.len() as libc::socklen_t,
        )
    };
}

fn connect_unix(path: &OsStr) -> io::Result<Socket> {
    // SAFETY: sockaddr_un is plain data; zeroed is a valid value.
    let mut sun: libc::sockaddr_un = unsafe { mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_bytes();
    if bytes.len() >= sun.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "Unix socket path is longer than {} bytes",
                sun.sun_path.len() - 1
            ),
        ));
    }
    for (dst, src) in sun.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let len = (mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
    let sock = new_socket(libc::AF_UNIX)?;
    // SAFETY: `sun` is a valid sockaddr_un of `len` bytes.
    let rc = unsafe { libc::connect(sock.fd, &sun as *const _ as *const libc::sockaddr, len) };
    finish_connect(sock, rc)
}

fn sockaddr_of(addr: &SocketAddr) -> (libc::c_int, libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data large enough for both families.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            (
                libc::AF_INET,
                storage,
                mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (
                libc::AF_INET6,
                storage,
                mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

impl Socket {
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    fn set_int_opt(&self, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
        // SAFETY: `v` outlives the call; the size matches.
        cvt(unsafe {
            libc::setsockopt(
                self.fd,
                level,
                name,
                &v as *const _ as *const libc::c_void,
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })
        .map(|_| ())
    }

    /// The pending socket error (`SO_ERROR`), e.g. a refused connect.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        let mut v: libc::c_int = 0;
        let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` and `len` are valid for writes of their size.
        cvt(unsafe {
            libc::getsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                &mut v as *mut _ as *mut libc::c_void,
                &mut len,
            )
        })?;
        Ok((v != 0).then(|| io::Error::from_raw_os_error(v)))
    }

    /// `recv(2)`; `Ok(0)` is end of stream. `recv` rather than `read`: it
    /// goes straight to the socket layer, skipping the VFS (~1% of a
    /// loopback request's kernel time in a profile).
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for writes of its length.
        let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Asks the kernel to stamp every received segment with its arrival
    /// time (`SO_TIMESTAMPNS`), which [`Socket::read_stamped`] returns, so a
    /// response's completion time does not depend on when the worker woke.
    pub fn enable_rx_timestamps(&self) -> io::Result<()> {
        self.set_int_opt(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
    }

    /// `recvmsg(2)` with the arrival time of the last segment read
    /// (`CLOCK_REALTIME` nanoseconds), when the socket has
    /// [`Socket::enable_rx_timestamps`] and the kernel gives one (TCP does;
    /// a Unix stream socket does not).
    #[inline]
    pub fn read_stamped(&self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        // Room for one cmsg carrying a timespec, 8-byte aligned.
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = mem::size_of_val(&control);
        // SAFETY: `msg` points at `iov` and `control`, both alive and sized
        // as declared for the call.
        let n = unsafe { libc::recvmsg(self.fd, &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        // SAFETY: the CMSG_* macros walk the control buffer the kernel
        // filled, within `msg_controllen`.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET
                    && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
                {
                    let ts =
                        std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                    stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        Ok((n as usize, stamp))
    }

    /// `send(2)` with `MSG_NOSIGNAL`: a peer that closed gives `EPIPE`, not SIGPIPE.
    #[inline]
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for reads of its length.
        let n = unsafe {
            libc::send(
                self.fd,
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn loopback_and_unix_are_local_others_are_not() {
        assert!(Endpoint::Tcp("127.0.0.1:80".parse().unwrap()).is_local());
        assert!(Endpoint::Tcp("127.9.9.9:80".parse().unwrap()).is_local());
        assert!(Endpoint::Tcp("[::1]:80".parse().unwrap()).is_local());
        assert!(Endpoint::Unix("/tmp/x".into()).is_local());
        assert!(!Endpoint::Tcp("10.0.0.1:80".parse().unwrap()).is_local());
        assert!(!Endpoint::Tcp("[2001:db8::1]:80".parse().unwrap()).is_local());
    }

    #[test]
    fn connects_and_exchanges_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = Endpoint::Tcp(l.local_addr().unwrap());
        let s = ep.connect().unwrap();
        let (mut peer, _) = l.accept().unwrap();
        assert!(s.take_error().unwrap().is_none());
        assert_eq!(s.write(b"ping").unwrap(), 4);
        let mut buf = [0u8; 4];
        std::io::Read::read_exact(&mut peer, &mut buf).unwrap();
        assert_eq!(&buf, b"ping");
    }

    #[test]
    fn receive_timestamps_tell_when_bytes_arrived_not_when_read() {
        let clock = crate::Clock::new(std::time::Instant::now());
        let map = crate::RealtimeMap::new(&clock);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = Endpoint::Tcp(l.local_addr().unwrap()).connect().unwrap();
        let (mut peer, _) = l.accept().unwrap();
        s.enable_rx_timestamps().unwrap();
        let mut buf = [0u8; 16];
        // The kernel turns receive timestamping on for the whole host from a
        // work queue, a moment after the first socket asks: until then
        // segments arrive unstamped (and a worker falls back to its clock).
        let mut stamped = false;
        for _ in 0..200 {
            std::io::Write::write_all(&mut peer, b"x").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
            if let Ok((_, Some(_))) = s.read_stamped(&mut buf) {
                stamped = true;
                break;
            }
        }
        assert!(stamped, "no receive timestamp within a second");
        std::io::Write::write_all(&mut peer, b"pong").unwrap();
        let sent = clock.now_ns();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let (n, stamp) = s.read_stamped(&mut buf).unwrap();
        let read = clock.now_ns();
        assert_eq!(&buf[..n], b"pong");
        let arrived = map.to_clock_ns(stamp.expect("TCP gives a receive timestamp"));
        assert!(
            arrived <= sent + 5_000_000,
            "arrived {arrived}, sent {sent}"
        );
        assert!(
            read - arrived >= 25_000_000,
            "read {read}, arrived {arrived}"
        );
    }

    #[test]
    fn overlong_unix_path_is_an_error() {
        let long = "x".repeat(200);
        assert!(Endpoint::Unix(long.into()).connect().is_err());
    }
}
