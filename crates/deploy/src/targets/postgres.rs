//! PostgreSQL: a throw-away cluster, initdb into the deployment directory,
//! run by the `postgres` user (the server refuses to run as root).

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::DeployError;

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
    variant: &str,
    owner: (u32, u32),
) -> Result<String, DeployError> {
    let initdb = binary.with_file_name("initdb");
    let pgdata = dir.join("pgdata");
    chown_tree(dir, owner)?;
    let out = run_as(
        Command::new(&initdb).arg("-D").arg(&pgdata).args([
            "-U",
            "postgres",
            "--auth=trust",
            "--locale=C",
            "-E",
            "UTF8",
            "--no-sync",
        ]),
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
    let extra = match variant {
        "default" => String::new(),
        "tuned" => TUNED.to_string(),
        path => std::fs::read_to_string(path).map_err(|e| {
            DeployError::io(
                format!("postgres config {path:?} (variants: default, tuned, or a file)"),
                e,
            )
        })?,
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
