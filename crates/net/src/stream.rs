//! [`Conn`]: a blocking TCP or Unix stream, whichever the endpoint is, so
//! the responder and the client loops are written once.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use tare_engine::Endpoint;

pub(crate) enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    /// Connects within `timeout`, with Nagle's algorithm as the kernel
    /// sets it: the stream client's connection, whose writes are 128 KiB
    /// (docs/net.md: iperf3 and nuttcp set TCP_NODELAY only when asked).
    pub(crate) fn connect(endpoint: &Endpoint, timeout: Duration) -> io::Result<Conn> {
        match endpoint {
            Endpoint::Tcp(a) => Ok(Conn::Tcp(TcpStream::connect_timeout(a, timeout)?)),
            Endpoint::Unix(p) => Ok(Conn::Unix(UnixStream::connect(p)?)),
        }
    }

    /// TCP: without Nagle's delay, for request/response (a request of 100
    /// bytes must leave at once, as netperf's and sockperf's). A Unix
    /// socket has no such delay.
    pub(crate) fn set_nodelay(&self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_nodelay(true),
            Conn::Unix(_) => Ok(()),
        }
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_read_timeout(t),
            Conn::Unix(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_write_timeout(t),
            Conn::Unix(s) => s.set_write_timeout(t),
        }
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Unix(s) => s.shutdown(how),
        }
    }

    pub(crate) fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
        })
    }

    /// Whether the peer has shut its side down, without blocking (a
    /// streaming responder checks between writes).
    pub(crate) fn peer_closed(&self) -> bool {
        let mut b = [0u8; 64];
        // SAFETY: recv into a local buffer of its stated length.
        let n = unsafe {
            libc::recv(
                self.as_raw_fd(),
                b.as_mut_ptr().cast(),
                b.len(),
                libc::MSG_DONTWAIT,
            )
        };
        n == 0 || (n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock)
    }
}

impl AsRawFd for Conn {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Conn::Tcp(s) => s.as_raw_fd(),
            Conn::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn nodelay(c: &Conn) -> bool {
        let Conn::Tcp(s) = c else {
            return false;
        };
        s.nodelay().unwrap()
    }

    /// A stream's connection keeps Nagle's algorithm, as iperf3's without
    /// `-N` and nuttcp's without `-D` (TCP_NODELAY on 128 KiB writes sent
    /// 4-5% more segments per MB on loopback); request/response turns it off.
    #[test]
    fn stream_connections_keep_nagle_and_request_response_turns_it_off() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Endpoint::Tcp(l.local_addr().unwrap());
        let c = Conn::connect(&endpoint, Duration::from_secs(2)).unwrap();
        assert!(!nodelay(&c));
        c.set_nodelay().unwrap();
        assert!(nodelay(&c));
    }
}
