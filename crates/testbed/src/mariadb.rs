//! A throw-away native MariaDB: a data directory made by
//! `mariadb-install-db` (on tmpfs when the machine has /dev/shm: the
//! bootstrap's fsyncs take seconds on a disk), a free loopback port and a
//! Unix socket, database `sbtest` with sysbench's password-less user
//! `sbtest` and a user `tare` with the password [`MariaDb::PASSWORD`]
//! (mysql_native_password), killed and removed on drop, even when a test
//! fails.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::daemon;

/// mariadbd in its own directory.
pub struct MariaDb {
    pub dir: PathBuf,
    pub port: u16,
    /// Its Unix socket.
    pub socket: PathBuf,
    child: Option<Child>,
}

/// The users and database every test server has.
const INIT: &str = "\
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER IF NOT EXISTS 'sbtest'@'%';
CREATE USER IF NOT EXISTS 'sbtest'@'localhost';
GRANT ALL ON sbtest.* TO 'sbtest'@'%';
GRANT ALL ON sbtest.* TO 'sbtest'@'localhost';
CREATE USER IF NOT EXISTS 'tare'@'%' IDENTIFIED BY 'tare-secret';
CREATE USER IF NOT EXISTS 'tare'@'localhost' IDENTIFIED BY 'tare-secret';
GRANT ALL ON *.* TO 'tare'@'%';
GRANT ALL ON *.* TO 'tare'@'localhost';
";

impl MariaDb {
    /// The password of user `tare`.
    pub const PASSWORD: &'static str = "tare-secret";

    /// Makes a data directory and starts mariadbd; waits (up to 30 s)
    /// until it sends its handshake.
    pub fn start() -> MariaDb {
        let bin = daemon::installed(
            &["/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd"],
            "mariadbd is not installed: run scripts/setup.sh",
        );
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = daemon::scratch_dir(&base, "mariadb");
        // Temporary tables in a directory of its own: in a shared /tmp a
        // bootstrap's temporary tables went missing under it (the suite's
        // other servers and tests), and the install failed.
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let out = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--tmpdir={}", dir.join("tmp").display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
                "--user=root",
                "--innodb-log-file-size=8M",
            ])
            .output()
            .expect("mariadb-install-db runs");
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            panic!(
                "mariadb-install-db failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::write(dir.join("init.sql"), INIT).unwrap();
        daemon::on_a_free_port("mariadbd", &dir, "error.log", || Self::try_start(bin, &dir))
    }

    fn try_start(bin: &str, dir: &Path) -> Option<MariaDb> {
        let port = crate::free_port();
        let socket = dir.join("mysqld.sock");
        let child = Command::new(bin)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--tmpdir={}", dir.join("tmp").display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--log-error={}", dir.join("error.log").display()))
            .arg(format!("--init-file={}", dir.join("init.sql").display()))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--user=root",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=8M",
                "--innodb-flush-log-at-trx-commit=2",
                "--max-connections=300",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("mariadbd starts");
        let m = MariaDb {
            dir: dir.to_path_buf(),
            port,
            socket,
            child: Some(child),
        };
        let (socket, addr) = (m.socket.clone(), m.addr());
        let wait = (Duration::from_secs(30), Duration::from_millis(50));
        daemon::when_ready(
            m,
            |m| &mut m.child,
            "mariadbd",
            wait,
            || socket.exists() && answers(addr),
        )
    }
}

daemon::server_handle!(MariaDb);

/// Whether the server sends a protocol-10 handshake on TCP.
fn answers(addr: std::net::SocketAddr) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut buf = [0u8; 5];
    matches!(s.read_exact(&mut buf), Ok(()) if buf[4] == 10)
}
