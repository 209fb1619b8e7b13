//! The wire format between `tare net` and its responder (docs/net.md,
//! "Wire format"): a 16-byte header that opens every TCP connection and
//! says what the connection is for and the sizes the client chose, a
//! 16-byte header at the front of every UDP request and response, and the
//! 16-byte trailer that ends a stream with the responder's own count and
//! CPU time.
//!
//! Everything is big-endian and fixed-size, so parsing is a length check,
//! a magic check and a range check: the responder trusts nothing a client
//! sends (a fuzz target, `crates/net/fuzz`, drives [`Header::parse`] and
//! [`Datagram::parse`]).

use std::fmt;

/// Bytes of a connection header, a datagram header and a stream trailer.
pub(crate) const HEADER_LEN: usize = 16;
/// Largest TCP request or response (and stream write), 1 MiB: the
/// responder allocates one buffer of each size per connection.
pub(crate) const MAX_TCP_SIZE: usize = 1 << 20;
/// Largest UDP request or response: the most an IPv4 datagram carries.
pub(crate) const MAX_UDP_SIZE: usize = 65_507;
/// A UDP request and response carry the 16-byte header, so neither can be
/// shorter.
pub(crate) const MIN_UDP_SIZE: usize = HEADER_LEN;

const TCP_MAGIC: &[u8; 4] = b"TNET";
const UDP_MAGIC: &[u8; 4] = b"TNU1";
const VERSION: u8 = 1;

/// What a TCP connection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Request/response, any number of transactions (TCP_RR).
    Rr = 1,
    /// One transaction, then the responder closes (TCP_CRR).
    Crr = 2,
    /// The client streams; the responder reads until end of file and
    /// answers with a [`Trailer`] (TCP_STREAM).
    Sink = 3,
    /// The responder streams until the client shuts its side down, then
    /// sends a [`Trailer`] (TCP_MAERTS).
    Source = 4,
}

impl Mode {
    fn from_byte(b: u8) -> Option<Mode> {
        Some(match b {
            1 => Mode::Rr,
            2 => Mode::Crr,
            3 => Mode::Sink,
            4 => Mode::Source,
            _ => return None,
        })
    }
}

/// Why bytes are not a valid header or datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    Short(usize),
    Magic,
    Version(u8),
    Mode(u8),
    Size { what: &'static str, size: u64 },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Short(n) => write!(f, "{n} bytes, fewer than a {HEADER_LEN}-byte header"),
            WireError::Magic => write!(f, "not a tare net header (bad magic)"),
            WireError::Version(v) => write!(f, "unknown version {v}"),
            WireError::Mode(m) => write!(f, "unknown mode {m}"),
            WireError::Size { what, size } => write!(f, "{what} size {size} out of range"),
        }
    }
}

/// The first 16 bytes a client sends on a TCP connection:
/// `"TNET"`, version 1, mode, two zero bytes, request size (u32), response
/// size (u32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub mode: Mode,
    /// Rr/Crr: bytes of each request. Sink: bytes per write (a hint).
    pub request: u32,
    /// Rr/Crr: bytes of each response. Source: bytes per write.
    pub response: u32,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(TCP_MAGIC);
        b[4] = VERSION;
        b[5] = self.mode as u8;
        b[8..12].copy_from_slice(&self.request.to_be_bytes());
        b[12..16].copy_from_slice(&self.response.to_be_bytes());
        b
    }

    /// The header at the start of `b`, with the sizes its mode needs
    /// within 1..=[`MAX_TCP_SIZE`].
    pub fn parse(b: &[u8]) -> Result<Header, WireError> {
        if b.len() < HEADER_LEN {
            return Err(WireError::Short(b.len()));
        }
        if &b[..4] != TCP_MAGIC {
            return Err(WireError::Magic);
        }
        if b[4] != VERSION {
            return Err(WireError::Version(b[4]));
        }
        let mode = Mode::from_byte(b[5]).ok_or(WireError::Mode(b[5]))?;
        let request = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        let response = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
        let check = |what, size: u32| {
            if size == 0 || size as usize > MAX_TCP_SIZE {
                Err(WireError::Size {
                    what,
                    size: size.into(),
                })
            } else {
                Ok(())
            }
        };
        match mode {
            Mode::Rr | Mode::Crr => {
                check("request", request)?;
                check("response", response)?;
            }
            Mode::Sink => check("request", request)?,
            Mode::Source => check("response", response)?,
        }
        Ok(Header {
            mode,
            request,
            response,
        })
    }
}

/// The header of every UDP request and response: `"TNU1"`, the response
/// size the client asks for (u32), and the request's sequence number (u64),
/// which the response echoes so a late answer to a request already counted
/// lost is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Datagram {
    pub response: u32,
    pub seq: u64,
}

impl Datagram {
    pub(crate) fn write(&self, b: &mut [u8]) {
        b[..4].copy_from_slice(UDP_MAGIC);
        b[4..8].copy_from_slice(&self.response.to_be_bytes());
        b[8..16].copy_from_slice(&self.seq.to_be_bytes());
    }

    /// The header of a received datagram, its response size within
    /// [`MIN_UDP_SIZE`]..=[`MAX_UDP_SIZE`].
    pub(crate) fn parse(b: &[u8]) -> Result<Datagram, WireError> {
        if b.len() < HEADER_LEN {
            return Err(WireError::Short(b.len()));
        }
        if &b[..4] != UDP_MAGIC {
            return Err(WireError::Magic);
        }
        let response = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        if !(MIN_UDP_SIZE..=MAX_UDP_SIZE).contains(&(response as usize)) {
            return Err(WireError::Size {
                what: "response",
                size: response.into(),
            });
        }
        let seq = u64::from_be_bytes(b[8..16].try_into().expect("8 bytes"));
        Ok(Datagram { response, seq })
    }
}

/// What the responder says at the end of a stream: the bytes it read
/// (sink) or wrote (source) on that connection, and the CPU time of the
/// thread that served it, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Trailer {
    pub bytes: u64,
    pub cpu_ns: u64,
}

impl Trailer {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&self.bytes.to_be_bytes());
        b[8..].copy_from_slice(&self.cpu_ns.to_be_bytes());
        b
    }

    pub(crate) fn parse(b: &[u8; HEADER_LEN]) -> Trailer {
        Trailer {
            bytes: u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
            cpu_ns: u64::from_be_bytes(b[8..].try_into().expect("8 bytes")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_bad_ones_are_named() {
        let h = Header {
            mode: Mode::Rr,
            request: 100,
            response: 200,
        };
        let b = h.encode();
        assert_eq!(&b[..6], b"TNET\x01\x01");
        assert_eq!(Header::parse(&b), Ok(h));
        assert_eq!(Header::parse(&b[..15]), Err(WireError::Short(15)));
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(Header::parse(&bad), Err(WireError::Magic));
        let mut bad = b;
        bad[5] = 9;
        assert_eq!(Header::parse(&bad), Err(WireError::Mode(9)));
        let zero = Header { response: 0, ..h }.encode();
        assert!(matches!(Header::parse(&zero), Err(WireError::Size { .. })));
        let huge = Header {
            request: MAX_TCP_SIZE as u32 + 1,
            ..h
        }
        .encode();
        assert!(matches!(Header::parse(&huge), Err(WireError::Size { .. })));
        // A sink needs no response size.
        let sink = Header {
            mode: Mode::Sink,
            request: 1 << 17,
            response: 0,
        };
        assert_eq!(Header::parse(&sink.encode()), Ok(sink));
    }

    /// Found by the fuzz target: a sink's response size (and a source's
    /// request size) is not read, so any value parses; the fuzz check
    /// wrongly required it within the limits.
    #[test]
    fn fuzz_sink_unread_response_size_parses() {
        let b = *b"TNET\x01\x03o\x00\x00\x00@\x00\x02\x00\x00N";
        let h = Header::parse(&b).unwrap();
        assert_eq!((h.mode, h.request), (Mode::Sink, 0x4000));
        crate::fuzzing::wire(&b);
    }

    #[test]
    fn datagrams_and_trailers_round_trip() {
        let mut b = [0u8; 100];
        let d = Datagram {
            response: 200,
            seq: u64::MAX - 1,
        };
        d.write(&mut b);
        assert_eq!(Datagram::parse(&b), Ok(d));
        Datagram {
            response: 15,
            seq: 0,
        }
        .write(&mut b);
        assert!(Datagram::parse(&b).is_err());
        let t = Trailer {
            bytes: 1 << 40,
            cpu_ns: 7,
        };
        assert_eq!(Trailer::parse(&t.encode()), t);
    }
}
