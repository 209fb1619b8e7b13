//! A throwaway PostgreSQL server for integration tests: `initdb` into a temp
//! dir, started as the `postgres` OS user (root may not run it) on a free
//! loopback port and a socket directory under /tmp, stopped and removed on
//! Drop even when the test fails. Deliberately small: the real postgres
//! target belongs to crates/deploy.

#![allow(dead_code)]

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tare_engine::Endpoint;
use tare_pg::session::Session;
use tare_pg::{ConnParams, Length, PgConfig, ScriptSource, ScriptSpec};

pub(crate) struct PgServer {
    pub dir: PathBuf,
    pub port: u16,
    pub socket_dir: PathBuf,
    child: Option<Child>,
}

/// The newest installed server binaries (Debian: /usr/lib/postgresql/N/bin).
fn bin_dir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed: run scripts/setup.sh")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("postgres").exists())
        .collect();
    dirs.sort();
    dirs.pop()
        .expect("no /usr/lib/postgresql/*/bin/postgres: run scripts/setup.sh")
}

fn postgres_ids() -> (u32, u32) {
    let name = CString::new("postgres").unwrap();
    // SAFETY: getpwnam returns static storage or null; read before any other call.
    unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        assert!(!pw.is_null(), "no 'postgres' OS user: run scripts/setup.sh");
        ((*pw).pw_uid, (*pw).pw_gid)
    }
}

fn as_postgres<'a>(cmd: &'a mut Command, dir: &Path) -> &'a mut Command {
    let (uid, gid) = postgres_ids();
    cmd.uid(uid).gid(gid).current_dir(dir).env_remove("PGDATA")
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// The arguments of the clusters these tests make, after `-D DIR`.
const INITDB_ARGS: [&str; 6] = ["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"];

/// Fills `data` with a fresh cluster: a copy (`cp -a`: the postgres user's
/// files and modes) of the one initdb made for these binaries and
/// arguments, paid once per suite rather than per test (initdb takes
/// 1.4 s on a quiet machine here, the copy 0.3 s). The template sits in
/// tare's own cluster cache (`TARE_POSTGRES_CACHE`, else
/// /var/tmp/tare-postgres-cache; docs/testing.md), named by the sha256 of
/// both binaries and the arguments, made aside and renamed into place, so
/// a test killed while making it leaves nothing half-made to reuse.
fn cluster(bin: &Path, data: &Path) {
    use sha2::{Digest, Sha256};
    let mut key = Sha256::new();
    for b in ["initdb", "postgres"] {
        key.update(std::fs::read(bin.join(b)).expect("reading the PostgreSQL binaries"));
    }
    key.update(INITDB_ARGS.join(" "));
    let key: String = key.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let cache = std::env::var_os("TARE_POSTGRES_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/tare-postgres-cache"));
    let template = cache.join(format!("pgtest-{key}"));
    if !template.is_dir() {
        std::fs::create_dir_all(&cache).unwrap();
        let aside = cache.join(format!(
            ".pgtest-{key}.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&aside);
        std::fs::create_dir(&aside).unwrap();
        let (uid, gid) = postgres_ids();
        std::os::unix::fs::chown(&aside, Some(uid), Some(gid)).unwrap();
        let out = as_postgres(&mut Command::new(bin.join("initdb")), &cache)
            .arg("-D")
            .arg(&aside)
            .args(INITDB_ARGS)
            .output()
            .expect("running initdb");
        let kept = out.status.success()
            && (std::fs::rename(&aside, &template).is_ok() || template.is_dir());
        let _ = std::fs::remove_dir_all(&aside);
        assert!(
            kept,
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new("cp")
        .arg("-a")
        .arg(&template)
        .arg(data)
        .output()
        .expect("running cp");
    assert!(
        out.status.success(),
        "copying {}: {}",
        template.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl PgServer {
    /// `hba`: pg_hba.conf lines placed before the trust-everything defaults.
    pub(crate) fn start(hba: &str) -> PgServer {
        let bin = bin_dir();
        let dir = PathBuf::from(format!(
            "/tmp/tare-pgtest-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sock")).unwrap();
        let (uid, gid) = postgres_ids();
        for p in [dir.clone(), dir.join("sock")] {
            std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
        }
        // From here on, Drop removes the directory whatever happens.
        let mut server = PgServer {
            port: 0,
            socket_dir: dir.join("sock"),
            dir,
            child: None,
        };
        cluster(&bin, &server.dir.join("data"));
        let conf = format!("{hba}\nlocal all all trust\nhost all all 127.0.0.1/32 trust\n");
        std::fs::write(server.dir.join("data/pg_hba.conf"), conf).unwrap();
        server.port = tare_testbed::free_port();
        let log = std::fs::File::create(server.dir.join("postgres.log")).unwrap();
        std::os::unix::fs::chown(server.dir.join("postgres.log"), Some(uid), Some(gid)).unwrap();
        let child = as_postgres(&mut Command::new(bin.join("postgres")), &server.dir)
            .args(["-D", "data", "-p", &server.port.to_string()])
            .arg("-k")
            .arg(&server.socket_dir)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=60",
            ])
            .args(["-c", "shared_buffers=16MB", "-c", "logging_collector=off"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting postgres");
        server.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if Session::connect(
                &server.params("postgres", "postgres"),
                Duration::from_secs(2),
            )
            .is_ok()
            {
                break;
            }
            if let Some(Ok(Some(status))) = server.child.as_mut().map(|c| c.try_wait()) {
                panic!("postgres exited with {status}: {}", server.log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not start: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
    }

    pub(crate) fn unix_endpoint(&self) -> Endpoint {
        Endpoint::Unix(self.socket_dir.join(format!(".s.PGSQL.{}", self.port)))
    }

    pub(crate) fn tcp_endpoint(&self) -> Endpoint {
        Endpoint::Tcp(format!("127.0.0.1:{}", self.port).parse().unwrap())
    }

    /// Connection parameters over the Unix socket.
    pub(crate) fn params(&self, user: &str, db: &str) -> ConnParams {
        PgConfig::new(self.unix_endpoint(), user, db).conn
    }

    pub(crate) fn session(&self) -> Session {
        Session::connect(
            &self.params("postgres", "postgres"),
            Duration::from_secs(10),
        )
        .unwrap()
    }

    /// A config over the Unix socket as `postgres`.
    pub(crate) fn config(&self) -> PgConfig {
        let mut c = PgConfig::new(self.unix_endpoint(), "postgres", "postgres");
        c.random_seed = Some(42);
        c
    }

    /// [`PgServer::config`] with `clients` on `threads` running `sql` for
    /// `duration`.
    pub(crate) fn timed_config(
        &self,
        sql: &str,
        (clients, threads): (usize, usize),
        duration: Duration,
    ) -> PgConfig {
        let mut c = self.config();
        c.load.connections = clients;
        c.load.threads = threads;
        c.set_length(Length::Duration(duration));
        c.scripts = vec![script("test.sql", sql)];
        c
    }

    /// Stops the server now (for the "server dies mid-run" test).
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SIGQUIT: immediate shutdown, every backend dies at once.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGQUIT) };
            let _ = c.wait();
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SIGINT: "fast" shutdown; SIGKILL if it lingers.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A script of `text` named `name`, of weight 1.
pub(crate) fn script(name: &str, text: &str) -> ScriptSpec {
    ScriptSpec {
        source: ScriptSource::Text {
            name: name.into(),
            text: text.into(),
        },
        weight: 1,
    }
}
