//! One simulated client: its connection, buffers, variables and where it is
//! in its script. Buffers are allocated once and reused for every
//! transaction; a reconnect (`-C`) keeps them too.

use std::io;

use tare_engine::endpoint::Socket;
use tare_engine::RealtimeMap;

use crate::script::expr::Value;
use crate::script::random::Rng;
use crate::startup::Handshake;

/// Where a client stands. Transitions live in [`super::worker`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No connection: before the first connect, or between transactions under `-C`.
    Disconnected,
    /// Non-blocking connect in progress (waiting for writability).
    Connecting,
    /// Start-up and authentication exchange.
    Starting,
    /// Connected, between transactions.
    Idle,
    /// Running client-side commands of the current transaction (transient).
    Exec,
    /// A statement is in flight; waiting for `ReadyForQuery`.
    Waiting,
    /// `ROLLBACK` in flight after a failed statement inside a transaction block.
    RollingBack,
    /// `\sleep`, or waiting for the schedule's start time; wakes at this clock reading.
    Sleeping(u64),
    /// Finished its transactions or the run ended.
    Done,
    /// Stopped by an error it cannot continue from.
    Aborted,
}

pub(crate) struct Client {
    /// Global client number (`:client_id`).
    pub id: usize,
    /// Index among this worker's clients (its io_uring token's slot).
    pub slot: usize,
    /// io_uring: a multishot receive / a writability poll is pending on
    /// the current connection.
    pub armed: bool,
    pub polling: bool,
    pub sock: Option<Socket>,
    pub phase: Phase,
    pub handshake: Handshake,
    pub rbuf: Vec<u8>,
    /// Bytes of `rbuf` filled.
    pub rlen: usize,
    pub wbuf: Vec<u8>,
    /// Bytes of `wbuf` already sent (a short write is rare but possible).
    pub wpos: usize,
    /// `EPOLLOUT` is armed.
    pub want_write: bool,
    pub vars: Vec<Option<Value>>,
    pub rng: Rng,
    /// Per flat statement slot: already prepared on this connection.
    pub prepared: Vec<bool>,
    pub script: usize,
    /// `script` holds the choice for the next transaction (made before
    /// its start may be skipped as late, as pgbench makes it).
    pub script_chosen: bool,
    pub cmd: usize,
    pub tx_start: u64,
    /// When the transaction really started (its intended start, `tx_start`,
    /// may be earlier under an open loop): the uncorrected latency's origin.
    pub actual_start: u64,
    pub cmd_start: u64,
    pub conn_start: u64,
    /// The start time a schedule granted while the client waited for it.
    pub pending_start: Option<u64>,
    /// SQLSTATE of the first error in the current statement.
    pub error: Option<[u8; 5]>,
    /// Transactions finished (succeeded or failed), for `-t`.
    pub done_txs: u64,
    /// Bumped on every disconnect: input read from an older connection is
    /// never interpreted on a newer one (`-C` reconnects mid-callback).
    pub epoch: u64,
    /// Arrival of the last read's data (kernel receive timestamp), when
    /// replies are stamped (`--coalesce`).
    pub rx_ns: Option<u64>,
    /// The last ReadyForQuery said a transaction block is open.
    pub in_tx: bool,
    /// `\gset`/`\aset`: the results of the statement in flight.
    pub results: super::gset::Results,
    /// The server answered with COPY (pgbench refuses it).
    pub copy: bool,
    /// Inside `\startpipeline`: the statements batched so far (no Sync).
    pub pipeline: Option<Vec<u8>>,
    /// Tries of the current transaction so far, the first included.
    pub tries: u32,
    /// The generator as the transaction's first try found it: a retry
    /// draws the same values (pgbench's `retry_state`).
    pub retry_rng: Rng,
    /// The error in libpq's words (`ERROR:  ...`), kept only when it is
    /// to be printed (an abort, `--verbose-errors`).
    pub error_text: Option<String>,
}

/// Initial read buffer: a `select 1` response is ~60 bytes and a pgbench
/// transaction's a few hundred; larger results grow the buffer once.
const READ_BUF: usize = 16 * 1024;

impl Client {
    pub(crate) fn new(
        id: usize,
        slot: usize,
        vars: Vec<Option<Value>>,
        rng: Rng,
        statements: usize,
    ) -> Self {
        Self {
            id,
            slot,
            armed: false,
            polling: false,
            sock: None,
            phase: Phase::Disconnected,
            handshake: Handshake::new(),
            rbuf: vec![0; READ_BUF],
            rlen: 0,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            want_write: false,
            vars,
            rng: rng.clone(),
            prepared: vec![false; statements],
            script: 0,
            script_chosen: false,
            cmd: 0,
            tx_start: 0,
            actual_start: 0,
            cmd_start: 0,
            conn_start: 0,
            pending_start: None,
            error: None,
            done_txs: 0,
            epoch: 0,
            rx_ns: None,
            in_tx: false,
            results: Default::default(),
            copy: false,
            pipeline: None,
            tries: 1,
            retry_rng: rng,
            error_text: None,
        }
    }

    /// Drops the connection and everything tied to it (with io_uring, after
    /// its receive and poll were cancelled: see `Ctx::close`).
    pub(crate) fn disconnect(&mut self) {
        self.sock = None;
        self.epoch += 1;
        self.armed = false;
        self.polling = false;
        self.rlen = 0;
        self.wbuf.clear();
        self.wpos = 0;
        self.want_write = false;
        self.prepared.iter_mut().for_each(|p| *p = false);
        self.handshake = Handshake::new();
        self.in_tx = false;
        self.pipeline = None;
        self.results.clear();
    }

    /// One `read` into the free part of the buffer, growing it first when a
    /// message larger than the buffer is pending. `Ok(0)` is end of stream.
    /// With `stamps`, also when the data arrived (`rx_ns`, the kernel's
    /// receive timestamp on the run's clock).
    pub(crate) fn fill(&mut self, stamps: Option<&RealtimeMap>) -> io::Result<usize> {
        if self.rlen == self.rbuf.len() {
            let need = crate::protocol::Frames::new(&self.rbuf[..self.rlen])
                .pending_len()
                .unwrap_or(0)
                .max(self.rbuf.len() * 2);
            self.rbuf.resize(need, 0);
        }
        let sock = self
            .sock
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        let n = match stamps {
            Some(map) => {
                let (n, stamp) = sock.read_stamped(&mut self.rbuf[self.rlen..])?;
                self.rx_ns = stamp.map(|t| map.to_clock_ns(t));
                n
            }
            None => sock.read(&mut self.rbuf[self.rlen..])?,
        };
        self.rlen += n;
        Ok(n)
    }

    /// io_uring: bytes a receive delivered, appended to the read buffer
    /// (grown when they do not fit).
    pub(crate) fn absorb(&mut self, data: &[u8]) {
        let need = self.rlen + data.len();
        if need > self.rbuf.len() {
            self.rbuf.resize(need.max(self.rbuf.len() * 2), 0);
        }
        self.rbuf[self.rlen..need].copy_from_slice(data);
        self.rlen = need;
    }

    /// Sends what is left of `wbuf`. `Ok(true)`: all of it went out.
    pub(crate) fn send_pending(&mut self) -> io::Result<bool> {
        let sock = self
            .sock
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        while self.wpos < self.wbuf.len() {
            match sock.write(&self.wbuf[self.wpos..]) {
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        Ok(true)
    }

    /// A statement or ROLLBACK is in flight.
    pub(crate) fn in_flight(&self) -> bool {
        matches!(self.phase, Phase::Waiting | Phase::RollingBack)
    }
}
