//! Redis: Debian's redis-server, throw-away, persistence off as the IBM
//! study ran it (docs/studies.md, seed 002), over TCP or a Unix socket.
//!
//! The behaviour lives in `redis.conf` in the deployment directory (its
//! hash is the config hash, the same in every placement); where it listens
//! and keeps its files are arguments.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use tare_engine::Endpoint;

use super::{Listen, Prepare, Protocol, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;
use crate::health;

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

impl Recipe for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn about(&self) -> &'static str {
        "Redis, throw-away, persistence off (docs/studies.md, seed 002)"
    }

    fn target(&self) -> Target {
        Target {
            variants: vec!["default".into(), "appendonly".into()],
            config_files: true,
            ..Target::of(TargetKind(&Redis), Protocol::Redis, 6379)
        }
    }

    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        crate::host::which("redis-server").ok_or_else(|| DeployError::MissingBinary {
            binary: "redis-server".into(),
            hint: "install redis-server (scripts/setup.sh)".into(),
        })
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let variant = &cx.spec.variant;
        let extra = match variant.builtin() {
            Some("default") => String::new(),
            Some("appendonly") => APPENDONLY.to_string(),
            _ => variant.read_file("redis", "default, appendonly")?,
        };
        let dir = cx.dir;
        let text = format!("{DEFAULT}# tare variant {variant}\n{extra}");
        let conf = dir.join("redis.conf");
        std::fs::write(&conf, &text).map_err(|e| DeployError::io("writing redis.conf", e))?;
        std::fs::create_dir_all(dir.join("data"))
            .and_then(|()| std::fs::create_dir_all(dir.join("sock")))
            .map_err(|e| DeployError::io("creating redis directories", e))?;
        let mut args = vec![conf.display().to_string()];
        match cx.listen {
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
            log_path: dir.join("redis.log"),
            content_path: dir.join("data"),
            ..Server::new(cx, args, text.as_bytes())
        })
    }
}

/// `PING` answered by `+PONG`: the redis protocol's readiness check
/// (`Protocol::probe`).
pub(super) fn ping(endpoint: &Endpoint, timeout: Duration) -> Result<(), String> {
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
