//! A throw-away native nginx whose files live on a disk filesystem
//! (`/var/tmp`: writes to a tmpfs never reach storage, so
//! `/proc/<pid>/io` write_bytes would not see an access log there).
//!
//! nginx runs in its own process group and is killed by group on drop, so
//! its workers never outlive a test, even one that fails.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::daemon;

/// What a test varies about the server.
pub struct NginxOptions {
    pub workers: u32,
    /// `access_log` on (to `<dir>/access.log`) or off.
    pub access_log: bool,
    /// The body of `/index.html`.
    pub index_html: String,
}

/// nginx in its own directory; stopped and removed on drop, even when a test fails.
pub struct Nginx {
    pub dir: PathBuf,
    child: Option<Child>,
    pub port: u16,
}

impl Nginx {
    /// Starts nginx and waits (up to 10 s) until its port accepts connections.
    pub fn start(o: &NginxOptions) -> Nginx {
        let nginx = daemon::installed(
            &["/usr/sbin/nginx", "/usr/local/sbin/nginx"],
            "nginx is not installed: run scripts/setup.sh (installs nginx-light)",
        );
        let dir = daemon::scratch_dir(Path::new("/var/tmp"), "nginx");
        std::fs::create_dir_all(dir.join("html")).unwrap();
        std::fs::write(dir.join("html/index.html"), &o.index_html).unwrap();
        // A port from the kernel, released, then given to nginx: another
        // test of this process may be handed the same one meanwhile, and
        // then one nginx fails to bind while the other answers its
        // readiness probe (a clean clone's CI loaded the wrong nginx, which
        // stopped under it: 20 connect errors). So the probe also waits for
        // this nginx's pid file (written once its sockets are bound), and a
        // start whose nginx exited is tried again on another port.
        daemon::on_a_free_port("nginx", &dir, "error.log", || {
            Self::try_start(nginx, &dir, o)
        })
    }

    /// One attempt on a fresh port: `None` when this nginx exited (its port
    /// was taken) before it was ready.
    fn try_start(nginx: &str, dir: &Path, o: &NginxOptions) -> Option<Nginx> {
        let port = crate::free_port();
        let log = if o.access_log {
            format!("access_log {}/access.log;", dir.display())
        } else {
            "access_log off;".to_string()
        };
        let conf = format!(
            "worker_processes {w};\ndaemon off;\nuser root;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  {log}\n  sendfile on;\n  keepalive_requests 1000000;\n\
               client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
               server {{ listen 127.0.0.1:{port} backlog=4096; root {d}/html; }}\n}}\n",
            w = o.workers,
            d = dir.display()
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let _ = std::fs::remove_file(dir.join("nginx.pid"));
        let child = Command::new(nginx)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            // Its own process group, so teardown reaches the workers too
            // (killing only the master would orphan them).
            .process_group(0)
            .spawn()
            .expect("nginx starts");
        let n = Nginx {
            dir: dir.to_path_buf(),
            child: Some(child),
            port,
        };
        let pid_file = dir.join("nginx.pid");
        let wait = (Duration::from_secs(10), Duration::from_millis(20));
        daemon::when_ready(
            n,
            |n| &mut n.child,
            "nginx",
            wait,
            || pid_file.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        )
    }

    /// The master's pid (its workers are its children).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/index.html", self.port)
    }

    /// Stops nginx gracefully (it finishes and logs in-flight requests) and
    /// returns the number of access-log lines.
    ///
    /// It first waits for the log to stop growing: a request the generator
    /// sent just before it closed may still sit unread in a keep-alive
    /// connection, and a graceful shutdown closes such "idle" connections
    /// without reading them. (A closing io_uring's sockets are released a
    /// moment after the generator's thread ends.)
    pub fn stop_and_count(self) -> usize {
        self.stop_and_log().lines().count()
    }

    /// [`Nginx::stop_and_count`], returning the access log's text (the
    /// `combined` format: `"METHOD PATH HTTP/1.1" STATUS` in quotes).
    pub fn stop_and_log(mut self) -> String {
        let log = self.dir.join("access.log");
        let count = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let (mut last, mut steady) = (count(), 0);
        for _ in 0..60 {
            std::thread::sleep(Duration::from_millis(50));
            let now = count();
            steady = if now == last { steady + 1 } else { 0 };
            last = now;
            if steady >= 4 {
                break;
            }
        }
        let mut child = self.child.take().unwrap();
        // SIGQUIT: graceful shutdown.
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                // SAFETY: signalling the process group of our own child.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::read_to_string(&log).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        daemon::kill_group(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
