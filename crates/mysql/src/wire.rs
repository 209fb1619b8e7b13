//! A connection opened and logged in with blocking calls bounded by one
//! deadline: tare's own session ([`crate::session`]) and every load
//! connection's set-up (its COM_STMT_PREPAREs) before the start gate. The
//! socket is tare's non-blocking [`Socket`]; waits are `poll(2)` on it, so
//! the worker keeps the same socket for its wait loop afterwards.

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
        // Answer in the plugin the server proposes when tare speaks it
        // (caching_sha2_password, MySQL 8's default), else in
        // mysql_native_password: a server whose user needs another plugin
        // asks to switch.
        let mut plugin = protocol::answer_plugin(&hs.plugin).to_string();
        let auth = protocol::auth_data(&plugin, login.password.as_bytes(), &hs.salt)
            .map_err(MysqlError::Config)?;
        let mut out = Vec::new();
        protocol::handshake_response(
            &mut out,
            &hs,
            &login.user,
            &auth,
            &plugin,
            login.db.as_deref(),
        );
        self.write_all(&out)?;
        for _ in 0..6 {
            let (s, p) = self.read_packet()?;
            let seq = s.wrapping_add(1);
            let answer = match protocol::parse_auth_reply(&p).map_err(|e| self.proto(e))? {
                AuthReply::Ok => return Ok(()),
                AuthReply::Err(e) => return Err(MysqlError::Refused(e)),
                AuthReply::Switch {
                    plugin: asked,
                    salt,
                } => {
                    if asked == "mysql_clear_password" && !unix {
                        return Err(MysqlError::Config(
                            "the server asks for the password in clear text; tare sends it so only over a Unix socket".into(),
                        ));
                    }
                    let data = protocol::auth_data(&asked, login.password.as_bytes(), &salt)
                        .map_err(MysqlError::Config)?;
                    plugin = asked;
                    data
                }
                AuthReply::More(data) if plugin == protocol::CACHING_SHA2 => {
                    match data.first().copied() {
                        // The server had the password's hash cached: an OK follows.
                        Some(protocol::FAST_AUTH_OK) => continue,
                        // It has none (the user's first login since the
                        // server started, or FLUSH PRIVILEGES): the
                        // password itself, which the protocol allows in
                        // clear only over TLS or a Unix socket; over plain
                        // TCP it would be RSA-encrypted, which tare does
                        // not do.
                        Some(protocol::FULL_AUTH) if unix => {
                            let mut v = login.password.as_bytes().to_vec();
                            v.push(0);
                            v
                        }
                        Some(protocol::FULL_AUTH) => {
                            return Err(MysqlError::Config(format!(
                                "caching_sha2_password: the server has no cached hash for user '{}' and wants the password over TLS or RSA, which tare mysql does not speak; log in once over the Unix socket (--mysql-socket) or with the mysql client so the server caches it, or create the user WITH mysql_native_password",
                                login.user
                            )))
                        }
                        _ => {
                            return Err(MysqlError::Protocol(format!(
                                "{}: an unexpected caching_sha2_password exchange",
                                self.endpoint
                            )))
                        }
                    }
                }
                AuthReply::More(_) => {
                    return Err(MysqlError::Config(format!(
                    "the {plugin} plugin wants a further exchange, which tare mysql does not speak"
                )))
                }
            };
            let mut out = Vec::new();
            let at = protocol::begin_packet(&mut out, seq);
            out.extend_from_slice(&answer);
            protocol::end_packet(&mut out, at);
            self.write_all(&out)?;
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

#[cfg(test)]
mod tests {
    //! The client side of caching_sha2_password against a scripted MySQL 8
    //! handshake (MariaDB, which the other tests use, has no such server
    //! plugin): the fast path over TCP, the full authentication over a Unix
    //! socket, and the one-line refusal over plain TCP.

    use std::io::{Read, Write};
    use std::time::Duration;

    use super::*;

    const SALT: [u8; 20] = *b"0123456789abcdefghij";

    /// What the scripted server does after checking the scramble.
    #[derive(Clone, Copy)]
    enum Script {
        /// The hash is cached: AuthMoreData(3), then OK.
        Cached,
        /// No cached hash: AuthMoreData(4); expects the password in clear.
        Full,
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_le_bytes().to_vec();
        v[3] = seq;
        v.extend_from_slice(payload);
        v
    }

    fn read(s: &mut impl Read) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).ok()?;
        let mut p = vec![0u8; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
        s.read_exact(&mut p).ok()?;
        Some((h[3], p))
    }

    /// MySQL 8.0's HandshakeV10 proposing caching_sha2_password.
    fn handshake() -> Vec<u8> {
        // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | LENENC_DATA | CONNECT_WITH_DB.
        let caps: u32 = 0x200 | 0x8000 | 0x8_0000 | 0x20_0000 | 0x8;
        let mut p = vec![10];
        p.extend_from_slice(b"8.0.36\0");
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&SALT[..8]);
        p.push(0);
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(255);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0; 10]);
        p.extend_from_slice(&SALT[8..]);
        p.push(0);
        p.extend_from_slice(b"caching_sha2_password\0");
        packet(0, &p)
    }

    /// Plays the server on `s`: what the client sent, as far as it got.
    fn serve(mut s: impl Read + Write, script: Script, password: &str) -> Vec<String> {
        let mut said = Vec::new();
        s.write_all(&handshake()).unwrap();
        let Some((_, resp)) = read(&mut s) else {
            return said;
        };
        // caps, max packet, charset, 23 reserved, user NUL, lenenc auth data.
        let rest = &resp[32..];
        let nul = rest.iter().position(|&b| b == 0).unwrap();
        let auth = &rest[nul + 2..nul + 2 + rest[nul + 1] as usize];
        let tail = &rest[nul + 2 + auth.len()..];
        said.push(String::from_utf8_lossy(tail).replace('\0', "|"));
        if auth != protocol::sha2_password(password.as_bytes(), &SALT) {
            let err = b"\xff\x15\x04#28000Access denied for user 'u'";
            s.write_all(&packet(2, err)).unwrap();
            said.push("denied".into());
            return said;
        }
        let ok = packet(4, &[0, 0, 0, 2, 0, 0, 0]);
        match script {
            Script::Cached => {
                s.write_all(&packet(2, &[1, 3])).unwrap();
                s.write_all(&ok).unwrap();
            }
            Script::Full => {
                s.write_all(&packet(2, &[1, 4])).unwrap();
                if let Some((seq, clear)) = read(&mut s) {
                    said.push(format!("{seq}:{}", String::from_utf8_lossy(&clear)));
                    s.write_all(&ok).unwrap();
                }
            }
        }
        said
    }

    fn login(password: &str) -> Login {
        Login {
            user: "u".into(),
            password: password.into(),
            db: Some("sbtest".into()),
        }
    }

    fn over_tcp(script: Script, password: &str) -> (Result<(), MysqlError>, Vec<String>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = Endpoint::Tcp(l.local_addr().unwrap());
        let server = std::thread::spawn(move || serve(l.accept().unwrap().0, script, "pw"));
        let r = Wire::open(&ep, &login(password), Duration::from_secs(5)).map(|_| ());
        (r, server.join().unwrap())
    }

    #[test]
    fn caching_sha2_password_fast_path_full_path_and_refusals() {
        // The cached hash: the scramble alone logs in, over TCP.
        let (r, said) = over_tcp(Script::Cached, "pw");
        r.unwrap();
        assert_eq!(said, ["sbtest|caching_sha2_password|"]);

        // A wrong password: the server's words, one line.
        let (r, _) = over_tcp(Script::Cached, "nope");
        let e = r.unwrap_err().to_string();
        assert!(e.starts_with("ERROR 1045 (28000): Access denied"), "{e}");

        // No cached hash over plain TCP: the password never goes out.
        let (r, said) = over_tcp(Script::Full, "pw");
        let e = r.unwrap_err().to_string();
        assert!(e.contains("--mysql-socket") && !e.contains('\n'), "{e}");
        assert_eq!(said.len(), 1, "nothing sent after the scramble: {said:?}");

        // Over a Unix socket the password goes in clear, NUL-terminated.
        let dir = std::env::temp_dir().join(format!("tare-mysql-sha2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mysqld.sock");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || serve(l.accept().unwrap().0, Script::Full, "pw"));
        Wire::open(&Endpoint::Unix(path), &login("pw"), Duration::from_secs(5)).unwrap();
        let said = server.join().unwrap();
        assert_eq!(said[1], "3:pw\0");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
