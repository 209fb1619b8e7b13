//! A connection opened and logged in with blocking calls bounded by one
//! deadline: tare's own session ([`crate::session`]) and every load
//! connection's set-up (its COM_STMT_PREPAREs) before the start gate. The
//! socket is tare's non-blocking [`Socket`]; waits are `poll(2)` on it, so
//! the worker keeps the same socket for its epoll loop afterwards.

use std::io;
use std::time::{Duration, Instant};

use tare_engine::endpoint::Socket;
use tare_engine::Endpoint;

use crate::error::MysqlError;
use crate::protocol::{self, AuthReply, ProtoError, Reply, Scanner, ServerError};

/// Who logs in, to which database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Login {
    pub user: String,
    pub password: String,
    /// `None`: no default database (tare's own `CREATE DATABASE`).
    pub db: Option<String>,
}

pub(crate) struct Wire {
    pub sock: Socket,
    /// Bytes read and not yet consumed: `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    deadline: Instant,
    endpoint: String,
    pub server_version: String,
}

/// Waits until `fd` is ready for `events` or `deadline` passes.
fn wait_fd(fd: i32, events: i16, deadline: Instant) -> io::Result<()> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
        }
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut p, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if rc > 0 {
            return Ok(());
        }
    }
}

impl Wire {
    /// Connects to `endpoint` and logs in, all within `timeout`.
    pub(crate) fn open(
        endpoint: &Endpoint,
        login: &Login,
        timeout: Duration,
    ) -> Result<Wire, MysqlError> {
        let deadline = Instant::now() + timeout;
        let refused = |e: io::Error| MysqlError::Connect {
            endpoint: endpoint.to_string(),
            error: e,
        };
        let sock = endpoint.connect().map_err(refused)?;
        if sock.connecting {
            wait_fd(sock.fd(), libc::POLLOUT, deadline).map_err(refused)?;
            if let Some(e) = sock.take_error().map_err(refused)? {
                return Err(refused(e));
            }
        }
        let mut w = Wire {
            sock,
            buf: vec![0; 16 * 1024],
            start: 0,
            end: 0,
            deadline,
            endpoint: endpoint.to_string(),
            server_version: String::new(),
        };
        w.login(login, matches!(endpoint, Endpoint::Unix(_)))?;
        Ok(w)
    }

    fn login(&mut self, login: &Login, unix: bool) -> Result<(), MysqlError> {
        let p = self.read_packet()?.1;
        let hs = protocol::parse_handshake(&p)
            .map_err(|e| self.proto(e))?
            .map_err(MysqlError::Refused)?;
        self.server_version = hs.server_version.clone();
        // Answer with mysql_native_password whatever the server proposes:
        // a server whose user needs another plugin asks to switch.
        let plugin = "mysql_native_password";
        let auth = protocol::native_password(login.password.as_bytes(), &hs.salt);
        let mut out = Vec::new();
        protocol::handshake_response(
            &mut out,
            &hs,
            &login.user,
            &auth,
            plugin,
            login.db.as_deref(),
        );
        self.write_all(&out)?;
        for _ in 0..4 {
            let (s, p) = self.read_packet()?;
            let seq = s.wrapping_add(1);
            match protocol::parse_auth_reply(&p).map_err(|e| self.proto(e))? {
                AuthReply::Ok => return Ok(()),
                AuthReply::Err(e) => return Err(MysqlError::Refused(e)),
                AuthReply::Switch { plugin, salt } => {
                    if plugin == "mysql_clear_password" && !unix {
                        return Err(MysqlError::Config(
                            "the server asks for the password in clear text; tare sends it so only over a Unix socket".into(),
                        ));
                    }
                    let data = protocol::auth_data(&plugin, login.password.as_bytes(), &salt)
                        .map_err(MysqlError::Config)?;
                    let mut out = Vec::new();
                    let at = protocol::begin_packet(&mut out, seq);
                    out.extend_from_slice(&data);
                    protocol::end_packet(&mut out, at);
                    self.write_all(&out)?;
                }
                AuthReply::More(_) => {
                    return Err(MysqlError::Config(
                        "the server wants a further authentication exchange (caching_sha2_password's full authentication?); tare mysql speaks mysql_native_password".into(),
                    ))
                }
            }
        }
        Err(MysqlError::Protocol(format!(
            "{}: authentication did not finish",
            self.endpoint
        )))
    }

    fn proto(&self, e: ProtoError) -> MysqlError {
        MysqlError::Protocol(format!("{e} from {}", self.endpoint))
    }

    fn io(&self, e: io::Error) -> MysqlError {
        MysqlError::io(format!("talking to {}", self.endpoint), e)
    }

    /// Moves the deadline (each statement of a long `prepare` has its own).
    pub(crate) fn extend(&mut self, timeout: Duration) {
        self.deadline = Instant::now() + timeout;
    }

    pub(crate) fn write_all(&mut self, mut b: &[u8]) -> Result<(), MysqlError> {
        while !b.is_empty() {
            match self.sock.write(b) {
                Ok(n) => b = &b[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_fd(self.sock.fd(), libc::POLLOUT, self.deadline).map_err(|e| self.io(e))?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(())
    }

    /// Reads more bytes into the buffer (at least one).
    fn fill(&mut self) -> Result<(), MysqlError> {
        if self.start > 0 && self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let need = Scanner::pending_len(&self.buf[..self.end])
                    .unwrap_or(0)
                    .max(self.buf.len() * 2);
                self.buf.resize(need, 0);
            }
        }
        loop {
            match self.sock.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(MysqlError::Protocol(format!(
                        "{} closed the connection",
                        self.endpoint
                    )))
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_fd(self.sock.fd(), libc::POLLIN, self.deadline).map_err(|e| self.io(e))?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
    }

    /// One packet: (sequence id, payload).
    pub(crate) fn read_packet(&mut self) -> Result<(u8, Vec<u8>), MysqlError> {
        loop {
            if let Some((len, seq)) = protocol::header(&self.buf[self.start..self.end]) {
                if len == protocol::MAX_PAYLOAD {
                    return Err(self.proto(ProtoError::TooLong));
                }
                if self.end - self.start >= 4 + len {
                    let p = self.buf[self.start + 4..self.start + 4 + len].to_vec();
                    self.start += 4 + len;
                    return Ok((seq, p));
                }
            }
            self.fill()?;
        }
    }

    /// Sends a command and scans its reply with `scanner`.
    pub(crate) fn exchange(
        &mut self,
        command: &[u8],
        mut scanner: Scanner,
    ) -> Result<Reply, MysqlError> {
        self.write_all(command)?;
        loop {
            let (used, r) = scanner
                .scan(&self.buf[self.start..self.end])
                .map_err(|e| self.proto(e))?;
            self.start += used;
            if let Some(r) = r {
                return Ok(r);
            }
            self.fill()?;
        }
    }

    /// COM_STMT_PREPARE of `sql`: the statement's id, or the server's error.
    pub(crate) fn prepare(&mut self, sql: &str) -> Result<Result<u32, ServerError>, MysqlError> {
        let mut out = Vec::new();
        protocol::command(&mut out, protocol::COM_STMT_PREPARE, sql.as_bytes());
        self.write_all(&out)?;
        // The first packet decides: an ERR is read whole for its message.
        let (_, first) = self.peek_first()?;
        if first.first() == Some(&0xFF) {
            let (_, p) = self.read_packet()?;
            return Ok(Err(protocol::parse_err(&p).map_err(|e| self.proto(e))?));
        }
        match self.exchange(&[], Scanner::prepare())? {
            Reply::Prepared { id, .. } => Ok(Ok(id)),
            other => Err(MysqlError::Protocol(format!(
                "{}: {other:?} in reply to a prepare",
                self.endpoint
            ))),
        }
    }

    /// The next packet without consuming it.
    pub(crate) fn peek_first(&mut self) -> Result<(u8, Vec<u8>), MysqlError> {
        loop {
            if let Some((len, seq)) = protocol::header(&self.buf[self.start..self.end]) {
                if len < protocol::MAX_PAYLOAD && self.end - self.start >= 4 + len {
                    return Ok((seq, self.buf[self.start + 4..self.start + 4 + len].to_vec()));
                }
            }
            self.fill()?;
        }
    }

    /// Bytes received and not consumed (a worker takes over the socket
    /// only when there are none).
    pub(crate) fn pending(&self) -> usize {
        self.end - self.start
    }
}
