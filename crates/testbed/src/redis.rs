//! A throw-away native redis-server: its own directory under the temp
//! dir, a free loopback port and a Unix socket, persistence off (`--save ""`,
//! `--appendonly no`, as the IBM study ran it: docs/studies.md, seed 002),
//! killed and removed on drop, even when a test fails.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::daemon;

/// redis-server in its own directory.
pub struct RedisServer {
    pub dir: PathBuf,
    pub port: u16,
    /// Its Unix socket.
    pub socket: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts redis-server (with `requirepass` when `password` is given)
    /// and waits (up to 10 s) until it answers PING.
    pub fn start(password: Option<&str>) -> RedisServer {
        let bin = daemon::installed(
            &["/usr/bin/redis-server", "/usr/local/bin/redis-server"],
            "redis-server is not installed: run scripts/setup.sh",
        );
        let dir = daemon::scratch_dir(&std::env::temp_dir(), "redis");
        daemon::on_a_free_port("redis-server", &dir, "redis.log", || {
            Self::try_start(bin, &dir, password)
        })
    }

    fn try_start(bin: &str, dir: &Path, password: Option<&str>) -> Option<RedisServer> {
        let port = crate::free_port();
        let socket = dir.join("redis.sock");
        let mut cmd = Command::new(bin);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--unixsocket")
            .arg(&socket)
            .args([
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--daemonize", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"));
        if let Some(pw) = password {
            cmd.args(["--requirepass", pw]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("redis-server starts");
        let r = RedisServer {
            dir: dir.to_path_buf(),
            port,
            socket,
            child: Some(child),
        };
        let socket = r.socket.clone();
        let wait = (Duration::from_secs(10), Duration::from_millis(20));
        daemon::when_ready(
            r,
            |r| &mut r.child,
            "redis-server",
            wait,
            || socket.exists() && answers(&socket),
        )
    }
}

daemon::server_handle!(RedisServer);

/// Whether this server answers PING on its own socket (`-NOAUTH`
/// counts: it is up and asks for the password).
fn answers(socket: &Path) -> bool {
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(socket) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(n) if n > 0 && (buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH")))
}
