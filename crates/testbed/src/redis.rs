//! A throw-away native redis-server: its own directory under the temp
//! dir, a free loopback port and a Unix socket, persistence off (`--save ""`,
//! `--appendonly no`, as the IBM study ran it: docs/studies.md, seed 002),
//! killed and removed on drop, even when a test fails.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

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
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let bin = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("redis-server is not installed: run scripts/setup.sh");
        let dir = std::env::temp_dir().join(format!(
            "tare-testbed-redis-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A port from the kernel, released, then given to redis: another
        // test may be handed the same one; a start whose server exited is
        // tried again on another port (as the nginx helper does).
        for _attempt in 0..5 {
            if let Some(r) = Self::try_start(bin, &dir, password) {
                return r;
            }
        }
        let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        panic!("redis-server did not start (5 ports tried): {log}");
    }

    fn try_start(bin: &str, dir: &Path, password: Option<&str>) -> Option<RedisServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
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
        let mut r = RedisServer {
            dir: dir.to_path_buf(),
            port,
            socket,
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(Ok(Some(_))) = r.child.as_mut().map(|c| c.try_wait()) {
                // Exited (the port was taken): keep the directory for the next try.
                r.child = None;
                std::mem::forget(r);
                return None;
            }
            if r.socket.exists() && r.answers() {
                return Some(r);
            }
            assert!(Instant::now() < deadline, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether this server answers PING on its own socket (`-NOAUTH`
    /// counts: it is up and asks for the password).
    fn answers(&self) -> bool {
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(&self.socket) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        if s.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        matches!(s.read(&mut buf), Ok(n) if n > 0 && (buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH")))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Kills the server now (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling the process group of our own child.
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
