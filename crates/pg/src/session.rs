//! A small blocking client for the statements tare itself runs (`--init`,
//! the pre-run check, the scale query, `VACUUM`) and for tests that read the
//! server's statistics. Not on the hot path: clarity over speed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::conninfo::ConnParams;
use crate::error::PgError;
use crate::protocol::{self, tag, Frames, ServerError};
use crate::startup::{Handshake, Progress};

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

pub struct Session {
    stream: Box<dyn Stream>,
    buf: Vec<u8>,
    filled: usize,
    params: ConnParams,
}

/// Rows of a result, every value as text (`None` for NULL).
pub type Rows = Vec<Vec<Option<String>>>;

impl Session {
    /// Connects and authenticates; `timeout` bounds each read and write.
    pub fn connect(params: &ConnParams, timeout: Duration) -> Result<Session, PgError> {
        let target = params.display_server();
        let fail = |cause| PgError::Connect {
            target: target.clone(),
            cause,
        };
        let stream: Box<dyn Stream> = match &params.endpoint {
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect_timeout(a, timeout).map_err(fail)?;
                s.set_nodelay(true).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                Box::new(s)
            }
            Endpoint::Unix(p) => {
                let s = UnixStream::connect(p).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                Box::new(s)
            }
        };
        let mut s = Session {
            stream,
            buf: vec![0; 64 * 1024],
            filled: 0,
            params: params.clone(),
        };
        let mut out = Vec::new();
        Handshake::startup(params, &mut out)?;
        s.send(&out)?;
        let mut hs = Handshake::new();
        loop {
            let (t, body) = s.next_message()?;
            out.clear();
            let progress = hs.on_message(params, t, &body, &mut out)?;
            if !out.is_empty() {
                s.send(&out)?;
            }
            if progress == Progress::Ready {
                return Ok(s);
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), PgError> {
        self.stream
            .write_all(bytes)
            .map_err(|e| PgError::io(format!("writing to {}", self.params.display_server()), e))
    }

    fn next_message(&mut self) -> Result<(u8, Vec<u8>), PgError> {
        loop {
            let mut f = Frames::new(&self.buf[..self.filled]);
            if let Some((t, body)) = f.next_frame()? {
                let msg = (t, body.to_vec());
                let used = f.consumed();
                self.buf.copy_within(used..self.filled, 0);
                self.filled -= used;
                return Ok(msg);
            }
            if let Some(need) = f.pending_len() {
                if need > self.buf.len() {
                    self.buf.resize(need, 0);
                }
            }
            // A signal meant for another thread of the process (an engine's
            // wake-up) interrupts this blocking read: read again.
            let n = loop {
                match self.stream.read(&mut self.buf[self.filled..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => {
                        break r.map_err(|e| {
                            PgError::io(format!("reading from {}", self.params.display_server()), e)
                        })?
                    }
                }
            };
            if n == 0 {
                return Err(PgError::Protocol(format!(
                    "server at {} closed the connection unexpectedly",
                    self.params.display_server()
                )));
            }
            self.filled += n;
        }
    }

    /// Runs `sql` with the simple protocol and returns the rows of its last
    /// result; the first error the server reports is returned instead.
    pub fn query(&mut self, sql: &str) -> Result<Rows, PgError> {
        let mut out = Vec::new();
        protocol::query(&mut out, |b| b.extend_from_slice(sql.as_bytes()));
        self.send(&out)?;
        let mut reply = Reply::default();
        loop {
            let (t, body) = self.next_message()?;
            match reply.on_message(t, &body)? {
                Next::More => {}
                Next::CopyIn => {
                    // Not used by tare; refuse politely so the server returns to idle.
                    let mut fail = Vec::new();
                    fail.push(b'f');
                    fail.extend_from_slice(&(4u32 + 1).to_be_bytes());
                    fail.push(0);
                    self.send(&fail)?;
                }
                Next::Ready => break,
            }
        }
        match reply.error {
            Some(error) => Err(PgError::Server {
                context: sql.lines().next().unwrap_or("").to_string(),
                error: Box::new(error),
            }),
            None => Ok(reply.rows),
        }
    }

    /// The first column of the first row, for one-value queries.
    pub fn query_value(&mut self, sql: &str) -> Result<Option<String>, PgError> {
        Ok(self
            .query(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .flatten())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.stream.write_all(&protocol::TERMINATE);
    }
}

/// The reply to a simple-protocol query, read one message at a time.
#[derive(Default)]
pub(crate) struct Reply {
    /// The rows of the last result so far.
    pub rows: Rows,
    /// The first error the server reported.
    pub error: Option<ServerError>,
}

/// What the session does after a reply message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    More,
    /// `CopyInResponse`: the server waits for data tare refuses to send.
    CopyIn,
    /// `ReadyForQuery`: the reply is complete.
    Ready,
}

impl Reply {
    pub(crate) fn on_message(&mut self, t: u8, body: &[u8]) -> Result<Next, PgError> {
        match t {
            tag::DATA_ROW => self.rows.push(data_row(body)?),
            b'T' => self.rows.clear(),
            tag::ERROR => {
                self.error.get_or_insert_with(|| ServerError::parse(body));
            }
            tag::COPY_IN => return Ok(Next::CopyIn),
            tag::READY => return Ok(Next::Ready),
            _ => {}
        }
        Ok(Next::More)
    }
}

fn data_row(body: &[u8]) -> Result<Vec<Option<String>>, PgError> {
    let bad = || PgError::Protocol("truncated DataRow".into());
    let n = u16::from_be_bytes([
        *body.first().ok_or_else(bad)?,
        *body.get(1).ok_or_else(bad)?,
    ]);
    let mut at = 2;
    let mut row = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = i32::from_be_bytes(
            body.get(at..at + 4)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        at += 4;
        if len < 0 {
            row.push(None);
        } else {
            let v = body.get(at..at + len as usize).ok_or_else(bad)?;
            row.push(Some(String::from_utf8_lossy(v).into_owned()));
            at += len as usize;
        }
    }
    Ok(row)
}
