//! [`NetConfig`]: what one `tare net` run needs, from the command line or
//! an experiment file, and its checks.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use tare_engine::{Endpoint, Load};

use crate::wire::{MAX_TCP_SIZE, MAX_UDP_SIZE, MIN_UDP_SIZE};
use crate::NetError;

/// The tests, in netperf's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// TCP request/response on a kept connection (TCP_RR).
    Rr,
    /// TCP connect, one request/response, close (TCP_CRR).
    Crr,
    /// UDP request/response (UDP_RR), a lost datagram counted after the
    /// timeout.
    UdpRr,
    /// Bulk transfer (TCP_STREAM, TCP_MAERTS, or both at once).
    Stream,
}

impl Test {
    pub const ALL: [Test; 4] = [Test::Rr, Test::Crr, Test::UdpRr, Test::Stream];

    pub fn name(self) -> &'static str {
        match self {
            Test::Rr => "rr",
            Test::Crr => "crr",
            Test::UdpRr => "udp-rr",
            Test::Stream => "stream",
        }
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Test {
    type Err = String;
    fn from_str(s: &str) -> Result<Test, String> {
        Test::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown test {s:?}: expected rr, crr, udp-rr or stream"))
    }
}

/// Which way a stream goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to responder (netperf TCP_STREAM, nuttcp's default).
    Send,
    /// Responder to client (netperf TCP_MAERTS, iperf3 `-R`).
    Receive,
    /// Both at once, each on its own connections (iperf3 `--bidir`).
    Both,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Send => "send",
            Direction::Receive => "receive",
            Direction::Both => "both",
        }
    }
}

impl FromStr for Direction {
    type Err = String;
    fn from_str(s: &str) -> Result<Direction, String> {
        match s {
            "send" => Ok(Direction::Send),
            "receive" => Ok(Direction::Receive),
            "both" => Ok(Direction::Both),
            _ => Err(format!(
                "unknown direction {s:?}: expected send, receive or both"
            )),
        }
    }
}

/// The request and response sizes by default: the IBM study's
/// `netperf -t TCP_RR -- -r 100,200` (docs/studies.md), not netperf's 1,1,
/// so tare's default reproduces the study's rows.
pub const DEFAULT_SIZES: (usize, usize) = (100, 200);
/// Bytes per write (and read) of a stream by default: iperf3's 128 KiB
/// (nuttcp's is 64 KiB; docs/net.md, "Beside sockperf, qperf, iperf3 and
/// nuttcp").
pub const DEFAULT_STREAM_SIZE: usize = 128 * 1024;
/// Most stream connections (each is a thread of its own, as each nuttcp
/// or iperf3 stream is; rr, crr and udp-rr share `-t` threads and take as
/// many as the open-files limit allows).
pub(crate) const MAX_STREAM_CONNECTIONS: usize = 512;

/// One `tare net` run.
#[derive(Clone, Debug)]
pub struct NetConfig {
    /// Threads (`-t`: rr, crr and udp-rr share them; a stream has one per
    /// connection), connections (`-c`), duration (`-l`), warm-up, timeout,
    /// rate, `--io`.
    pub load: Load,
    pub test: Test,
    /// The responder: TCP (and UDP on the same port) or a Unix socket.
    pub endpoint: Endpoint,
    /// Request bytes (stream: bytes per write).
    pub request: usize,
    /// Response bytes (stream: bytes per read when receiving).
    pub response: usize,
    pub direction: Direction,
    /// A live progress line on stderr.
    pub progress: bool,
}

impl NetConfig {
    /// A closed-loop rr test of the default sizes for ten seconds, as
    /// netperf's defaults run for ten.
    pub fn new(endpoint: Endpoint, test: Test) -> NetConfig {
        let (request, response) = if test == Test::Stream {
            (DEFAULT_STREAM_SIZE, DEFAULT_STREAM_SIZE)
        } else {
            DEFAULT_SIZES
        };
        NetConfig {
            load: Load {
                duration: Some(Duration::from_secs(10)),
                timeout: Duration::from_secs(1),
                ..Load::default()
            },
            test,
            endpoint,
            request,
            response,
            direction: Direction::Send,
            progress: false,
        }
    }

    /// Worker threads: `-t` for rr, crr and udp-rr (their connections
    /// shared among them); a stream has one per connection, and both ways
    /// its connections in each direction.
    pub fn workers(&self) -> usize {
        match (self.test, self.direction) {
            (Test::Stream, Direction::Both) => self.load.connections * 2,
            (Test::Stream, _) => self.load.connections,
            _ => self.load.threads.clamp(1, self.load.connections.max(1)),
        }
    }

    pub fn validate(&self) -> Result<(), NetError> {
        let mut load = self.load.clone();
        if self.test == Test::Stream {
            load.threads = 1;
        }
        load.check(Some(matches!(self.endpoint, Endpoint::Tcp(_))))
            .map_err(|e| NetError::Config(e.to_string()))?;
        if self.test == Test::Stream && self.load.connections > MAX_STREAM_CONNECTIONS {
            return Err(NetError::Config(format!(
                "a stream's connections (-c) must be at most {MAX_STREAM_CONNECTIONS} (one thread each)"
            )));
        }
        if self.load.coalesce != tare_engine::Coalesce::Off {
            return Err(NetError::Config(
                "--coalesce is not supported by tare net: one transaction in flight per connection, timed by its wake-up".into(),
            ));
        }
        if self.load.duration.is_none() {
            return Err(NetError::Config("a duration (-l) is needed".into()));
        }
        if !self.load.ramp.is_zero() {
            return Err(NetError::Config(
                "--ramp is not supported by tare net (each connection runs from the start)".into(),
            ));
        }
        let (min, max) = match self.test {
            Test::UdpRr => (MIN_UDP_SIZE, MAX_UDP_SIZE),
            _ => (1, MAX_TCP_SIZE),
        };
        for (what, size) in [("request", self.request), ("response", self.response)] {
            if size < min || size > max {
                return Err(NetError::Config(format!(
                    "{what} size {size} must be between {min} and {max} bytes for {}",
                    self.test
                )));
            }
        }
        match self.test {
            Test::UdpRr if matches!(self.endpoint, Endpoint::Unix(_)) => {
                return Err(NetError::Config(
                    "udp-rr needs a TCP/UDP address, not a Unix socket".into(),
                ))
            }
            Test::Stream if self.load.open_loop() => {
                return Err(NetError::Config(
                    "a stream has no rate: --rate and --find-max are for rr, crr and udp-rr".into(),
                ))
            }
            _ => {}
        }
        Ok(())
    }
}
