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
        self.reply()
    }

    /// Reads one reply (an error reply is a value).
    fn reply(&mut self) -> Result<Value, RedisError> {
        let ep = self.endpoint.clone();
        let io = |e: std::io::Error| RedisError::Io {
            context: format!("talking to {ep}"),
            error: e,
        };
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

    /// The server's `save` and `appendonly` settings (`CONFIG GET`), as
    /// redis-benchmark prints them; `None` when the server refuses
    /// `CONFIG` (a renamed command, an ACL user without it).
    pub fn host_config(&mut self) -> Option<crate::report::HostConfig> {
        let mut get = |name: &str| match self.command(&["CONFIG", "GET", name]).ok()? {
            Value::Array(Some(v)) => v.get(1).map(|x| x.text().unwrap_or_default()),
            _ => None,
        };
        Some(crate::report::HostConfig {
            save: get("save")?,
            appendonly: get("appendonly")?,
        })
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

impl std::os::fd::AsRawFd for Session {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match &self.stream {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// redis-benchmark's `-I`: opens `cfg`'s connections (each with its
/// `AUTH` and `SELECT`) and holds them idle until `stop` is set or, with
/// a duration (`-T`), for that long. Whatever the server sends on an
/// idle connection (`-ERR max number of clients reached`, a close) is an
/// error, as it is for redis-benchmark.
pub fn idle(
    cfg: &crate::RedisConfig,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), RedisError> {
    use std::os::fd::AsRawFd;
    let n = cfg.load.connections;
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(Session::connect(
            &cfg.endpoint,
            cfg.load.timeout,
            cfg.user.as_deref(),
            cfg.password.as_deref(),
            cfg.dbnum,
        )?);
    }
    let mut fds: Vec<libc::pollfd> = conns
        .iter()
        .map(|c| libc::pollfd {
            fd: c.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let deadline = cfg.load.duration.map(|d| std::time::Instant::now() + d);
    // Bounded by the deadline, or by the user's Ctrl+C (redis-benchmark
    // waits forever).
    while !stop.load(std::sync::atomic::Ordering::Relaxed)
        && deadline.is_none_or(|d| std::time::Instant::now() < d)
    {
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(RedisError::Io {
                context: "waiting on idle connections".into(),
                error: e,
            });
        }
        if let Some(i) = fds.iter().position(|f| f.revents != 0) {
            let why = match conns[i].reply() {
                Ok(Value::Error(e)) => e,
                Ok(_) => "an unexpected reply".into(),
                Err(e) => e.to_string(),
            };
            return Err(RedisError::Config(format!(
                "Error on idle connection {} of {n}: {why}",
                i + 1
            )));
        }
    }
    Ok(())
}

/// One command's counts in `INFO commandstats` (Redis 6.2+ adds the
/// rejected and failed counts; `calls` includes the failed ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandCalls {
    pub calls: u64,
    pub rejected: u64,
    pub failed: u64,
}
