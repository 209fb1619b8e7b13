//! MariaDB (`mysql` is accepted for it): Debian's mariadbd with a
//! throw-away data directory that `mariadb-install-db` makes in the
//! deployment directory, so the `storage` factor (image layer, volume,
//! host path) applies to the data as the IBM study's AUFS cell did
//! (docs/studies.md, seed 002). Database `sbtest` and sysbench's user
//! `sbtest` (no password, from any host) are made at start by an init file.
//!
//! The behaviour lives in `my.cnf` in the deployment directory (its hash
//! is the config hash, the same in every placement); where it listens and
//! keeps its files are arguments. Variants: `default` (MariaDB's defaults
//! for a small server) and `tuned` (or `ibm`), the study's: a buffer pool sized to the
//! machine (3 GB there, at most an eighth of this machine's memory here),
//! O_DIRECT and no query cache.
//!
//! `mariadb-install-db` takes ~6 s on a disk (its fsyncs), so its result
//! is kept as a template, keyed by the binary's hash and `my.cnf`, and each
//! deployment gets a copy in its own directory ([`data_dir`]): the copy,
//! not the template, is what the `storage` factor places.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tare_engine::Endpoint;

use super::{Listen, Prepare, Protocol, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;
use crate::health;

pub(crate) struct MariaDb;

/// Settings of every variant: enough connections for the study's 290
/// threads, no DNS (the client may be a container's bridge address), a
/// redo log small enough to copy into an image layer quickly.
const COMMON: &str = "\
[mysqld]
max_connections = 600
skip_name_resolve
innodb_log_file_size = 48M
";

/// The users and database every deployment has (run at each start).
const INIT: &str = "\
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER IF NOT EXISTS 'sbtest'@'%';
CREATE USER IF NOT EXISTS 'sbtest'@'localhost';
GRANT ALL ON sbtest.* TO 'sbtest'@'%';
GRANT ALL ON sbtest.* TO 'sbtest'@'localhost';
";

/// The `ibm` variant: seed 002's InnoDB settings.
fn ibm() -> String {
    let gib = 1u64 << 30;
    let pool = (3 * gib).min(total_memory() / 8).max(128 << 20);
    format!(
        "innodb_buffer_pool_size = {}M\ninnodb_flush_method = O_DIRECT\nquery_cache_type = 0\nquery_cache_size = 0\n",
        pool >> 20
    )
}

fn total_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}

impl Recipe for MariaDb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["mysql"]
    }

    fn about(&self) -> &'static str {
        "MariaDB, a throw-away data directory; variants default and tuned (alias ibm: seed 002's InnoDB settings, docs/studies.md)"
    }

    fn target(&self) -> Target {
        Target {
            socket: "mysqld.sock".into(),
            variants: vec!["default".into(), "tuned".into(), "ibm".into()],
            config_files: true,
            ..Target::of(TargetKind(&MariaDb), Protocol::Mysql, 3306)
        }
    }

    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        crate::host::which("mariadbd").ok_or_else(|| DeployError::MissingBinary {
            binary: "mariadbd".into(),
            hint: "install mariadb-server (scripts/setup.sh)".into(),
        })
    }

    /// Its error messages and character sets (mariadbd will not start
    /// without `english/errmsg.sys`).
    fn image_files(&self, _target: &Target, _binary: &Path) -> Result<Vec<PathBuf>, String> {
        let mut files = std::collections::BTreeSet::new();
        for d in ["/usr/share/mysql/english", "/usr/share/mysql/charsets"] {
            crate::host::walk(Path::new(d), &mut files);
        }
        if files.is_empty() {
            return Err("no /usr/share/mysql (install mariadb-server)".into());
        }
        Ok(files.into_iter().collect())
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let variant = &cx.spec.variant;
        let dir = cx.dir;
        let extra = match variant.builtin() {
            Some("default") => String::new(),
            // `tuned` is the name every target's second built-in variant
            // has in experiment files (`config = "tuned"`).
            Some("tuned" | "ibm") => ibm(),
            _ => variant.read_file("mariadb", "default, tuned or ibm")?,
        };
        let text = format!("{COMMON}# tare variant {variant}\n{extra}");
        let conf = dir.join("my.cnf");
        std::fs::write(&conf, &text).map_err(|e| DeployError::io("writing my.cnf", e))?;
        std::fs::write(dir.join("init.sql"), INIT)
            .map_err(|e| DeployError::io("writing init.sql", e))?;
        // Its sockets and temporary tables in the deployment directory, not
        // a /tmp shared with every other process (and placed by `storage`
        // like the data).
        for sub in ["sock", "tmp"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(|e| DeployError::io(format!("creating {sub}/"), e))?;
        }
        data_dir(&cache_dir(), &cx.binary, &text, &conf, &dir.join("data"))?;
        let mut args = vec![
            format!("--defaults-file={}", conf.display()),
            format!("--datadir={}", dir.join("data").display()),
            format!("--tmpdir={}", dir.join("tmp").display()),
            format!("--init-file={}", dir.join("init.sql").display()),
            format!("--log-error={}", dir.join("mariadb.log").display()),
            format!("--pid-file={}", dir.join("mariadb.pid").display()),
            "--user=root".into(),
        ];
        match cx.listen {
            Listen::Tcp(a) => args.extend([
                format!("--bind-address={}", a.ip()),
                format!("--port={}", a.port()),
                format!(
                    "--socket={}",
                    dir.join("sock").join(&cx.target().socket).display()
                ),
            ]),
            Listen::Unix(p) => args.extend([
                "--skip-networking".into(),
                format!("--socket={}", p.display()),
            ]),
        }
        Ok(Server {
            log_path: dir.join("mariadb.log"),
            content_path: dir.join("data"),
            ..Server::new(cx, args, text.as_bytes())
        })
    }
}

/// A login as `sbtest` to database `sbtest` and `SELECT 1` answered
/// with a result set (the server is up, its init file has run): the mysql
/// protocol's readiness check (`Protocol::probe`).
pub(super) fn select_one(endpoint: &Endpoint, timeout: Duration) -> Result<(), String> {
    let mut s = health::connect(endpoint, timeout).map_err(|e| e.to_string())?;
    let hello = read_packet(&mut s)?;
    if hello.first() == Some(&0xFF) {
        return Err(format!("refused: {}", err_text(&hello)));
    }
    if hello.first() != Some(&10) {
        return Err("not a MySQL protocol 10 handshake".into());
    }
    // HandshakeResponse41: PROTOCOL_41 | SECURE_CONNECTION |
    // CONNECT_WITH_DB | PLUGIN_AUTH, user sbtest, no password.
    let caps: u32 = 0x200 | 0x8000 | 0x8 | 0x8_0000;
    let mut p = Vec::new();
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"sbtest\0\0sbtest\0mysql_native_password\0");
    write_packet(&mut s, 1, &p)?;
    let ok = read_packet(&mut s)?;
    match ok.first() {
        Some(0x00) => {}
        Some(0xFF) => return Err(format!("login refused: {}", err_text(&ok))),
        _ => return Err("an unexpected reply to the login".into()),
    }
    write_packet(&mut s, 0, b"\x03SELECT 1")?;
    let first = read_packet(&mut s)?;
    if first.first() == Some(&0xFF) {
        return Err(format!("SELECT 1 failed: {}", err_text(&first)));
    }
    if first != [1] {
        return Err("SELECT 1 did not answer one column".into());
    }
    let _ = write_packet(&mut s, 0, &[0x01]); // COM_QUIT
    Ok(())
}

/// Where data directory templates are kept (`TARE_MARIADB_CACHE`
/// overrides). A cache, not a leftover: `tare cleanup` leaves it, as it
/// leaves the vm cache.
pub(crate) fn cache_dir() -> PathBuf {
    std::env::var_os("TARE_MARIADB_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/tare-mariadb-cache"))
}

/// Fills `data` with a fresh data directory for `binary` and the config
/// `text` (written at `conf`): a copy of the template for the two in `cache`,
/// made first by `mariadb-install-db` when there is none
/// (`template::copy_into`).
fn data_dir(
    cache: &Path,
    binary: &Path,
    text: &str,
    conf: &Path,
    data: &Path,
) -> Result<(), DeployError> {
    let key = crate::host::sha256_hex(
        format!("{}\n{text}", crate::host::file_sha256(binary)?).as_bytes(),
    );
    super::template::copy_into(
        cache,
        &format!("datadir-{}", &key[..16]),
        data,
        |aside, tmp| install_db(binary, conf, aside, tmp),
    )
}

/// `mariadb-install-db` (beside the binary, or on PATH) into `data` (its
/// temporary tables in `tmp`), with
/// the deployment's my.cnf so its redo log matches what the server reads.
fn install_db(binary: &Path, conf: &Path, data: &Path, tmp: &Path) -> Result<(), DeployError> {
    let tool = binary
        .parent()
        .and_then(Path::parent)
        .map(|usr| usr.join("bin").join("mariadb-install-db"))
        .filter(|p| p.exists())
        .or_else(|| crate::host::which("mariadb-install-db"))
        .ok_or_else(|| DeployError::MissingBinary {
            binary: "mariadb-install-db".into(),
            hint: "install mariadb-server (scripts/setup.sh)".into(),
        })?;
    let out = Command::new(&tool)
        .arg(format!("--defaults-file={}", conf.display()))
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .args([
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            "--user=root",
        ])
        .output()
        .map_err(|e| DeployError::io(format!("running {}", tool.display()), e))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(DeployError::Invalid(format!(
            "mariadb-install-db failed: {last}"
        )));
    }
    Ok(())
}

fn write_packet(s: &mut dyn health::Stream, seq: u8, p: &[u8]) -> Result<(), String> {
    let mut b = (p.len() as u32).to_le_bytes();
    b[3] = seq;
    s.write_all(&b)
        .and_then(|()| s.write_all(p))
        .map_err(|e| e.to_string())
}

fn read_packet(s: &mut dyn health::Stream) -> Result<Vec<u8>, String> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).map_err(|e| e.to_string())?;
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    let mut p = vec![0u8; len.min(1 << 20)];
    s.read_exact(&mut p).map_err(|e| e.to_string())?;
    Ok(p)
}

/// An ERR packet's message.
fn err_text(p: &[u8]) -> String {
    let rest = p.get(3..).unwrap_or(&[]);
    let msg = if rest.first() == Some(&b'#') {
        rest.get(6..).unwrap_or(&[])
    } else {
        rest
    };
    String::from_utf8_lossy(msg).into_owned()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::targets::Recipe;

    /// The first deployment makes the template, the next copies it; each
    /// data directory is its own, and nothing half-made stays in the cache.
    #[test]
    fn a_data_directory_is_a_copy_of_one_template_per_binary_and_config() {
        let Ok(binary) = super::MariaDb.default_binary(&super::MariaDb.target()) else {
            eprintln!("no mariadbd here: skipped");
            return;
        };
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let root = base.join(format!("tare-mariadb-template-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let cache = root.join("cache");
        std::fs::create_dir_all(&root).unwrap();
        let conf = root.join("my.cnf");
        let text = format!("{}# tare variant default\n", super::COMMON);
        std::fs::write(&conf, &text).unwrap();
        for n in 0..2 {
            let data = root.join(format!("data{n}"));
            super::data_dir(&cache, &binary, &text, &conf, &data).unwrap();
            assert!(data.join("mysql").join("global_priv.frm").is_file());
            assert!(data.join("ibdata1").is_file());
        }
        let names: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(names[0].starts_with("datadir-"), "{names:?}");
        // A copy, not a link: writing one leaves the template alone.
        std::fs::write(root.join("data0").join("ibdata1"), b"x").unwrap();
        assert!(
            std::fs::metadata(cache.join(&names[0]).join("ibdata1"))
                .unwrap()
                .len()
                > 1
        );
        // Another config, another template.
        let other = format!("{text}innodb_buffer_pool_size = 256M\n");
        super::data_dir(&cache, &binary, &other, &conf, &root.join("data2")).unwrap();
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 2);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_ibm_variant_sizes_the_pool_to_the_machine() {
        let v = super::ibm();
        assert!(v.contains("innodb_flush_method = O_DIRECT"));
        assert!(v.contains("query_cache_type = 0"));
        let mb: u64 = v
            .lines()
            .find_map(|l| l.strip_prefix("innodb_buffer_pool_size = "))
            .and_then(|m| m.trim_end_matches('M').parse().ok())
            .unwrap();
        assert!((128..=3072).contains(&mb), "{mb}");
    }
}
