//! Redis: Debian's redis-server, throw-away, persistence off as the IBM
//! study ran it (docs/studies.md, seed 002), over TCP or a Unix socket.
//!
//! The behaviour lives in `redis.conf` in the deployment directory (its
//! hash is the config hash, the same in every placement); where it listens
//! and keeps its files are arguments.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tare_engine::Endpoint;

use super::{sha256_hex, Listen, Server, Target};
use crate::error::DeployError;
use crate::health;
use crate::health::Unready;
use crate::spec::TargetSpec;

pub(crate) struct Redis;

/// The `default` variant: nothing written to disk, no client limit in
/// the way, reachable from another namespace without a password.
const DEFAULT: &str = "\
save \"\"
appendonly no
protected-mode no
daemonize no
maxclients 10000
";

/// The `appendonly` variant: Redis's append-only file, fsync every second
/// (its documented default when AOF is on).
const APPENDONLY: &str = "\
appendonly yes
appendfsync everysec
";

impl Target for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn about(&self) -> &'static str {
        "Redis, throw-away, persistence off (docs/studies.md, seed 002)"
    }

    fn engine(&self) -> &'static str {
        "redis"
    }

    fn standard_port(&self) -> u16 {
        6379
    }

    fn unix_socket(&self, dir: &Path, _port: u16) -> PathBuf {
        dir.join("sock").join("redis.sock")
    }

    fn default_binary(&self) -> Result<PathBuf, DeployError> {
        super::which("redis-server").ok_or_else(|| DeployError::MissingBinary {
            binary: "redis-server".into(),
            hint: "install redis-server (scripts/setup.sh)".into(),
        })
    }

    /// `redis-server --version`'s line: `Redis server v=7.0.15 sha=...`.
    fn version(&self, binary: &Path) -> Option<String> {
        super::version_line(binary, "--version")
    }

    fn prepare(
        &self,
        spec: &TargetSpec,
        binary: PathBuf,
        dir: &Path,
        listen: &Listen,
        _companion: Option<SocketAddr>,
    ) -> Result<Server, DeployError> {
        let extra = match spec.variant.as_str() {
            "default" => String::new(),
            "appendonly" => APPENDONLY.to_string(),
            path => std::fs::read_to_string(path).map_err(|e| {
                DeployError::io(
                    format!("redis config {path:?} (variants: default, appendonly, or a file)"),
                    e,
                )
            })?,
        };
        let text = format!("{DEFAULT}# tare variant {}\n{extra}", spec.variant);
        let conf = dir.join("redis.conf");
        std::fs::write(&conf, &text).map_err(|e| DeployError::io("writing redis.conf", e))?;
        std::fs::create_dir_all(dir.join("data"))
            .and_then(|()| std::fs::create_dir_all(dir.join("sock")))
            .map_err(|e| DeployError::io("creating redis directories", e))?;
        let mut args = vec![conf.display().to_string()];
        match listen {
            Listen::Tcp(a) => args.extend([
                "--bind".into(),
                a.ip().to_string(),
                "--port".into(),
                a.port().to_string(),
            ]),
            Listen::Unix(p) => args.extend([
                "--port".into(),
                "0".into(),
                "--unixsocket".into(),
                p.display().to_string(),
                "--unixsocketperm".into(),
                "777".into(),
            ]),
        }
        args.extend([
            "--dir".into(),
            dir.join("data").display().to_string(),
            "--logfile".into(),
            dir.join("redis.log").display().to_string(),
        ]);
        Ok(Server {
            args,
            kind: spec.kind,
            binary,
            run_as: None,
            resource: String::new(),
            config_sha256: sha256_hex(text.as_bytes()),
            access_log: "n/a".into(),
            log_path: dir.join("redis.log"),
            content_path: dir.join("data"),
        })
    }

    /// `PING` answered by `+PONG`.
    fn probe(
        &self,
        _server: &Server,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<(), Unready> {
        ping(endpoint, timeout).map_err(Unready::from)
    }

    fn url(&self, _server: &Server, endpoint: &Endpoint) -> String {
        match endpoint {
            Endpoint::Tcp(a) => format!("redis://{a}/0"),
            Endpoint::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

/// One readiness check of the redis target (`Target::probe`).
fn ping(endpoint: &Endpoint, timeout: Duration) -> Result<(), String> {
    let mut s = health::connect(endpoint, timeout).map_err(|e| e.to_string())?;
    s.write_all(b"*1\r\n$4\r\nPING\r\n")
        .map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.ends_with(b"\r\n") && got.len() < 4096 {
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("redis closed the connection".into());
        }
        got.extend_from_slice(&buf[..n]);
    }
    if got.starts_with(b"+PONG") {
        Ok(())
    } else {
        Err(format!(
            "PING answered {:?}",
            String::from_utf8_lossy(&got).trim()
        ))
    }
}
