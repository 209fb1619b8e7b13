//! Shared by the integration tests: a throw-away native nginx whose files
//! live on a disk filesystem (`/var/tmp`: writes to a tmpfs never reach
//! storage, so `/proc/<pid>/io` write_bytes would not see an access log
//! there), and a bounded in-process load.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tare_http::{run, HttpConfig, Target};
use tare_record::LoadResult;

pub struct NginxOptions {
    pub workers: u32,
    pub access_log: bool,
    pub body_size: usize,
}

/// nginx in its own directory; stopped and removed on drop, even when a test fails.
pub struct Nginx {
    pub dir: PathBuf,
    child: Option<Child>,
    pub port: u16,
}

impl Nginx {
    pub fn start(o: &NginxOptions) -> Nginx {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("nginx is not installed: run scripts/setup.sh (installs nginx-light)");
        let dir = PathBuf::from(format!(
            "/var/tmp/tare-monitor-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("html")).unwrap();
        std::fs::write(dir.join("html/index.html"), "x".repeat(o.body_size)).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
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

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/index.html", self.port)
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

/// Keep-alive load for `secs` from this process.
pub fn load(url: &str, threads: usize, connections: usize, secs: f64) -> LoadResult {
    let mut c = HttpConfig::new(Target::new(url, None, false).unwrap());
    c.threads = threads;
    c.connections = connections;
    c.duration = Some(Duration::from_secs_f64(secs));
    c.warmup = Duration::from_millis(200);
    let r = run(&c).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 0);
    r
}

/// Pins the calling thread (and threads it spawns later) to one CPU.
pub fn pin_current_thread(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; we pass its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(rc, 0, "sched_setaffinity");
    }
}

pub fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Sets the calling thread's nice value (threads it spawns inherit it);
/// negative values need root, as the test suite runs.
pub fn raise_priority_of_current_thread(nice: i32) {
    // SAFETY: gettid and setpriority on our own thread id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice);
    }
}
