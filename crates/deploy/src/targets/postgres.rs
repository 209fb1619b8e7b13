//! PostgreSQL: a throw-away cluster, initdb into the deployment directory,
//! run by the `postgres` user (the server refuses to run as root).

use std::collections::BTreeSet;
use std::ffi::CString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tare_engine::Endpoint;

use super::{Listen, Prepare, Protocol, Recipe, Server, Target, TargetKind, Variant};
use crate::error::DeployError;
use crate::health;

/// PostgreSQL, a throw-away cluster per deployment (docs/studies.md, seed 001).
pub(crate) struct Postgres;

impl Recipe for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn about(&self) -> &'static str {
        "PostgreSQL, a throw-away cluster (docs/studies.md, seed 001)"
    }

    fn target(&self) -> Target {
        Target {
            socket: ".s.PGSQL.5432".into(),
            variants: vec!["default".into(), "tuned".into()],
            config_files: true,
            ..Target::of(TargetKind(&Postgres), Protocol::Pg, 5432)
        }
    }

    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        Ok(bin_dir()?.join("postgres"))
    }

    /// The share files of its major version, its loadable modules (plpgsql
    /// is loaded by every database; llvmjit is JIT only and pulls in 100 MB
    /// of LLVM) with their libraries, and the UTC zone file.
    fn image_files(&self, _target: &Target, binary: &Path) -> Result<Vec<PathBuf>, String> {
        // /usr/lib/postgresql/15/bin/postgres → version dir /usr/lib/postgresql/15
        let version_dir = binary
            .parent()
            .and_then(Path::parent)
            .ok_or("unexpected postgres path")?;
        let version = version_dir.file_name().ok_or("unexpected postgres path")?;
        let mut files = BTreeSet::new();
        crate::host::walk(
            &Path::new("/usr/share/postgresql").join(version),
            &mut files,
        );
        let mut libs = BTreeSet::new();
        crate::host::walk(&version_dir.join("lib"), &mut libs);
        // The JIT (llvmjit) is left out, and with it the LLVM bitcode only it
        // reads (26 MB of PostgreSQL 15's 38: a guest unpacks every byte).
        for lib in libs.into_iter().filter(|p| {
            let p = p.to_string_lossy();
            !p.contains("llvmjit") && !p.contains("/bitcode/")
        }) {
            if let Ok(deps) = crate::host::shared_libraries(&lib) {
                files.extend(deps);
            }
            files.insert(lib);
        }
        for z in ["/usr/share/zoneinfo/UTC", "/usr/share/zoneinfo/Etc/UTC"] {
            if Path::new(z).exists() {
                files.insert(z.into());
            }
        }
        Ok(files.into_iter().collect())
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let dir = cx.dir;
        let owner = postgres_user()?;
        let text = init_cluster(&cx.binary, dir, &cx.spec.variant, owner)?;
        let (addr, port) = match cx.listen {
            Listen::Tcp(a) => (a.ip().to_string(), a.port()),
            Listen::Unix(p) => (String::new(), socket_port(p).unwrap_or(5432)),
        };
        Ok(Server {
            run_as: Some(owner),
            log_path: dir.join("pgdata"),
            content_path: dir.join("pgdata"),
            ..Server::new(cx, args(dir, &addr, port), text.as_bytes())
        })
    }
}

/// The port in a socket's name (`.s.PGSQL.5432`).
pub(super) fn socket_port(p: &Path) -> Option<u16> {
    p.file_name()?
        .to_str()?
        .strip_prefix(".s.PGSQL.")?
        .parse()
        .ok()
}

/// A v3 startup as user postgres to database postgres; Ok at ReadyForQuery.
/// A listening socket is not enough: postgres accepts before recovery ends.
pub(super) fn ready(ep: &Endpoint, timeout: Duration) -> Result<(), String> {
    let mut s = health::connect(ep, timeout).map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for kv in ["user", "postgres", "database", "postgres"] {
        body.extend_from_slice(kv.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).map_err(|e| e.to_string())?;
    // Messages: 1 type byte, 4 length bytes (including themselves), payload.
    for _ in 0..64 {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).map_err(|e| e.to_string())?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut payload = vec![0u8; len.saturating_sub(4).min(1 << 20)];
        s.read_exact(&mut payload).map_err(|e| e.to_string())?;
        match head[0] {
            b'Z' => {
                let _ = s.write_all(&[b'X', 0, 0, 0, 4]); // Terminate
                return Ok(());
            }
            b'E' => {
                let text: String = payload
                    .split(|b| *b == 0)
                    .filter(|f| f.first() == Some(&b'M'))
                    .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
                    .collect();
                return Err(format!("server error: {text}"));
            }
            b'R' if payload.len() >= 4 && payload[..4] != [0, 0, 0, 0] => {
                return Err("server asks for a password (tare's clusters use trust)".into())
            }
            _ => {}
        }
    }
    Err("no ReadyForQuery".into())
}

/// Settings appended for the `tuned` variant: what a benchmark of short
/// read-only transactions usually changes first (more connections than
/// seed 001's 96 clients, larger buffers, no wait for WAL flush).
const TUNED: &str = "\
max_connections = 300
shared_buffers = 256MB
synchronous_commit = off
";

/// The user the cluster belongs to: (uid, gid), looked up in the host's passwd.
pub(crate) fn postgres_user() -> Result<(u32, u32), DeployError> {
    let name = CString::new("postgres").expect("no NUL");
    // SAFETY: getpwnam returns a pointer to static storage or NULL; read at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(DeployError::Invalid(
            "no `postgres` user on this host (install postgresql: scripts/setup.sh)".into(),
        ));
    }
    // SAFETY: non-null pointer from getpwnam.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// The directory holding initdb/postgres of the installed major version.
pub(crate) fn bin_dir() -> Result<PathBuf, DeployError> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.retain(|p| p.join("postgres").exists());
    found.sort();
    found.pop().ok_or_else(|| DeployError::MissingBinary {
        binary: "/usr/lib/postgresql/*/bin/postgres".into(),
        hint: "install postgresql (scripts/setup.sh)".into(),
    })
}

/// initdb into `dir/pgdata` as the postgres user, then the variant's settings.
/// Returns the text that decides behaviour (postgresql.conf + pg_hba.conf),
/// for the config hash.
pub(crate) fn init_cluster(
    binary: &Path,
    dir: &Path,
    variant: &Variant,
    owner: (u32, u32),
) -> Result<String, DeployError> {
    let pgdata = dir.join("pgdata");
    chown_tree(dir, owner)?;
    cluster(&cache_dir(), binary, &pgdata, owner)?;
    let extra = match variant.builtin() {
        Some("default") => String::new(),
        Some("tuned") => TUNED.to_string(),
        _ => variant.read_file("postgres", "default, tuned")?,
    };
    let conf = pgdata.join("postgresql.conf");
    append(&conf, &format!("\n# tare variant {variant}\n{extra}"))?;
    // Load comes from the host to a container or namespace address: trust it,
    // as the official image's entry point does (seed 001 shows its pg_hba line).
    let hba = pgdata.join("pg_hba.conf");
    append(&hba, "host all all 0.0.0.0/0 trust\n")?;
    let mut text =
        std::fs::read_to_string(&conf).map_err(|e| DeployError::io("postgresql.conf", e))?;
    text.push_str(&std::fs::read_to_string(&hba).map_err(|e| DeployError::io("pg_hba.conf", e))?);
    std::fs::create_dir_all(dir.join("sock")).map_err(|e| DeployError::io("socket dir", e))?;
    chown_tree(dir, owner)?;
    Ok(text)
}

/// Where initdb's clusters are kept as templates (`TARE_POSTGRES_CACHE`
/// overrides). A cache, not a leftover: `tare cleanup` leaves it, as it
/// leaves the mariadb and vm caches.
pub(crate) fn cache_dir() -> PathBuf {
    std::env::var_os("TARE_POSTGRES_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/tare-postgres-cache"))
}

/// The arguments of every initdb tare runs, after `-D DIR`.
const INITDB_ARGS: [&str; 7] = [
    "-U",
    "postgres",
    "--auth=trust",
    "--locale=C",
    "-E",
    "UTF8",
    "--no-sync",
];

/// Fills `pgdata` with a fresh cluster: a copy of the template initdb made
/// once for these binaries (the key is the sha256 of initdb's and
/// postgres's sha256 and the arguments); the caller gives it to `owner`. initdb takes
/// 1.4 s on a quiet machine here, the copy of its 39 MB 0.3 s
/// (docs/placements.md).
fn cluster(
    cache: &Path,
    binary: &Path,
    pgdata: &Path,
    owner: (u32, u32),
) -> Result<(), DeployError> {
    let initdb = binary.with_file_name("initdb");
    let key = crate::host::sha256_hex(
        format!(
            "{}\n{}\n{}",
            crate::host::file_sha256(&initdb)?,
            crate::host::file_sha256(binary)?,
            INITDB_ARGS.join(" ")
        )
        .as_bytes(),
    );
    super::template::copy_into(
        cache,
        &format!("cluster-{}", &key[..16]),
        pgdata,
        |aside, _| {
            std::fs::create_dir(aside)
                .map_err(|e| DeployError::io(format!("creating {}", aside.display()), e))?;
            chown_tree(aside, owner)?;
            let out = run_as(
                Command::new(&initdb).arg("-D").arg(aside).args(INITDB_ARGS),
                owner,
            )
            .output()
            .map_err(|e| DeployError::io(format!("running {}", initdb.display()), e))?;
            if !out.status.success() {
                return Err(DeployError::Invalid(format!(
                    "initdb failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            Ok(())
        },
    )
}

fn append(path: &Path, text: &str) -> Result<(), DeployError> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| DeployError::io(format!("writing {}", path.display()), e))
}

/// Server arguments: everything placement-specific is on the command line so
/// the config files stay identical across placements.
pub(crate) fn args(dir: &Path, listen_addresses: &str, port: u16) -> Vec<String> {
    vec![
        "-D".into(),
        dir.join("pgdata").display().to_string(),
        "-c".into(),
        format!("listen_addresses={listen_addresses}"),
        "-c".into(),
        format!("port={port}"),
        "-c".into(),
        format!("unix_socket_directories={}", dir.join("sock").display()),
        // The image carries only the UTC zone file; the host uses it too.
        "-c".into(),
        "timezone=UTC".into(),
        "-c".into(),
        "log_timezone=UTC".into(),
    ]
}

pub(crate) fn chown_tree(path: &Path, (uid, gid): (u32, u32)) -> Result<(), DeployError> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        .map_err(|e| DeployError::io(format!("chown {}", path.display()), e))?;
    if path.is_dir() && !path.is_symlink() {
        let entries = std::fs::read_dir(path)
            .map_err(|e| DeployError::io(format!("{}", path.display()), e))?;
        for e in entries.flatten() {
            chown_tree(&e.path(), (uid, gid))?;
        }
    }
    Ok(())
}

/// Runs the command as `uid:gid`; std drops root's supplementary groups
/// (`setgroups(0)`) before `setuid` when the parent is root.
pub(crate) fn run_as(cmd: &mut Command, (uid, gid): (u32, u32)) -> &mut Command {
    use std::os::unix::process::CommandExt;
    cmd.uid(uid).gid(gid)
}
