//! A small blocking client: tare's own commands before a run (`AUTH`,
//! `SELECT`, `INFO`), so a refused connection or a wrong password is one
//! clear error, not one per connection, and tests' `INFO commandstats`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::error::RedisError;
use crate::resp::{self, Value};

/// Most bytes one reply of tare's own may take (an `INFO` is a few KiB).
const MAX_REPLY: usize = 16 * 1024 * 1024;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

pub struct Session {
    stream: Stream,
    buf: Vec<u8>,
    endpoint: String,
}

impl Session {
    /// Connects within `timeout`, and with `password` authenticates (as
    /// `user` when given) and selects `db` when it is not 0.
    pub fn connect(
        endpoint: &Endpoint,
        timeout: Duration,
        user: Option<&str>,
        password: Option<&str>,
        db: u32,
    ) -> Result<Session, RedisError> {
        let refused = |e: std::io::Error| RedisError::Connect {
            endpoint: endpoint.to_string(),
            error: e,
        };
        let stream = match endpoint {
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect_timeout(a, timeout).map_err(refused)?;
                s.set_read_timeout(Some(timeout)).map_err(refused)?;
                s.set_write_timeout(Some(timeout)).map_err(refused)?;
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }
            Endpoint::Unix(p) => {
                let s = UnixStream::connect(p).map_err(refused)?;
                s.set_read_timeout(Some(timeout)).map_err(refused)?;
                s.set_write_timeout(Some(timeout)).map_err(refused)?;
                Stream::Unix(s)
            }
        };
        let mut s = Session {
            stream,
            buf: Vec::new(),
            endpoint: endpoint.to_string(),
        };
        if let Some(pw) = password {
            let reply = match user {
                Some(u) => s.command(&["AUTH", u, pw])?,
                None => s.command(&["AUTH", pw])?,
            };
            if let Value::Error(e) = reply {
                return Err(RedisError::Auth(e));
            }
        }
        if db != 0 {
            if let Value::Error(e) = s.command(&["SELECT", &db.to_string()])? {
                return Err(RedisError::Config(format!("SELECT {db} failed: {e}")));
            }
        }
        Ok(s)
    }

    /// Sends one command and reads its reply (an error reply is a value).
    pub fn command(&mut self, args: &[&str]) -> Result<Value, RedisError> {
        let mut out = Vec::new();
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        resp::encode(&refs, &mut out);
        let ep = self.endpoint.clone();
        let io = |e: std::io::Error| RedisError::Io {
            context: format!("talking to {ep}"),
            error: e,
        };
        match &mut self.stream {
            Stream::Tcp(s) => s.write_all(&out),
            Stream::Unix(s) => s.write_all(&out),
        }
        .map_err(io)?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((v, used)) = resp::parse_value(&self.buf)
                .map_err(|e| RedisError::Protocol(format!("{e} from {ep}")))?
            {
                self.buf.drain(..used);
                return Ok(v);
            }
            if self.buf.len() > MAX_REPLY {
                return Err(RedisError::Protocol(format!(
                    "a reply of more than {MAX_REPLY} bytes from {ep}"
                )));
            }
            let n = match &mut self.stream {
                Stream::Tcp(s) => s.read(&mut chunk),
                Stream::Unix(s) => s.read(&mut chunk),
            }
            .map_err(io)?;
            if n == 0 {
                return Err(RedisError::Protocol(format!(
                    "{ep} closed the connection before replying"
                )));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// `INFO section` as `key:value` pairs.
    pub fn info(&mut self, section: &str) -> Result<Vec<(String, String)>, RedisError> {
        match self.command(&["INFO", section])? {
            Value::Error(e) => Err(RedisError::Config(format!("INFO {section} failed: {e}"))),
            v => Ok(v
                .text()
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.to_string(), v.trim().to_string()))
                .collect()),
        }
    }

    /// `calls` (and `rejected_calls`, `failed_calls`) per command from
    /// `INFO commandstats`: `cmdstat_get` → `get`.
    pub fn command_calls(&mut self) -> Result<Vec<(String, CommandCalls)>, RedisError> {
        Ok(self
            .info("commandstats")?
            .into_iter()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix("cmdstat_")?.to_string();
                let field = |f: &str| {
                    v.split(',')
                        .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))
                        .and_then(|n| n.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                Some((
                    name,
                    CommandCalls {
                        calls: field("calls"),
                        rejected: field("rejected_calls"),
                        failed: field("failed_calls"),
                    },
                ))
            })
            .collect())
    }
}

/// One command's counts in `INFO commandstats` (Redis 6.2+ adds the
/// rejected and failed counts; `calls` includes the failed ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandCalls {
    pub calls: u64,
    pub rejected: u64,
    pub failed: u64,
}
