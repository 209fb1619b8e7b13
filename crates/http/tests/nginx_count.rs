//! Exact counts: every request tare reports as completed (or in flight at the
//! deadline) is one line in a real nginx's access log, and nothing else is.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use tare_http::{run, HttpConfig, Target};

/// A throw-away nginx in a temp dir; stopped (and the dir removed) on drop.
struct Nginx {
    dir: PathBuf,
    child: Option<Child>,
    port: u16,
}

impl Nginx {
    fn start() -> Nginx {
        let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("nginx is not installed: run scripts/setup.sh (installs nginx-light)");
        let dir = std::env::temp_dir().join(format!(
            "tare-nginx-count-{}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        let dir = PathBuf::from(dir.to_string_lossy().replace([' ', '{', '}', ':', ','], ""));
        std::fs::create_dir_all(dir.join("html")).unwrap();
        std::fs::write(dir.join("html/index.html"), "hello\n").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = format!(
            "worker_processes 1;\ndaemon off;\nuser root;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log {d}/access.log;\n  keepalive_requests 1000000;\n\
               client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
               server {{ listen 127.0.0.1:{port}; root {d}/html; }}\n}}\n",
            d = dir.display()
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            // Its own process group, so teardown reaches the workers too
            // (killing only the master would orphan them).
            .process_group(0)
            .spawn()
            .expect("nginx starts");
        let n = Nginx {
            dir,
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nginx did not start listening");
            std::thread::sleep(Duration::from_millis(20));
        }
        n
    }

    /// Stops nginx gracefully (it finishes and logs in-flight requests) and
    /// returns the number of access-log lines.
    fn stop_and_count(mut self) -> usize {
        let mut child = self.child.take().unwrap();
        // SIGQUIT: graceful shutdown.
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling the process group of our own child.
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn load(nginx: &Nginx, keepalive: bool) -> tare_record::LoadResult {
    let url = format!("http://127.0.0.1:{}/index.html", nginx.port);
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.threads = 2;
    c.connections = 20;
    c.keepalive = keepalive;
    c.duration = Some(Duration::from_millis(1500));
    run(&c).unwrap()
}

#[test]
fn keepalive_counts_equal_access_log_lines() {
    let nginx = Nginx::start();
    let r = load(&nginx, true);
    let lines = nginx.stop_and_count();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 500);
    assert_eq!(
        lines as u64,
        r.requests + r.in_flight,
        "log lines vs completed {} + in flight {}",
        r.requests,
        r.in_flight
    );
}

#[test]
fn connection_per_request_counts_equal_access_log_lines() {
    let nginx = Nginx::start();
    let r = load(&nginx, false);
    let lines = nginx.stop_and_count();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 100);
    assert_eq!(lines as u64, r.requests + r.in_flight);
}
