//! Putting tare on a host: the tools it needs checked first, then this very
//! binary copied into the run's directory there and checked by its SHA-256,
//! so every generator and remote target runs the same build as this one.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::host::{sh_path, Host};
use crate::RemoteError;

/// What a host needs besides tare: a POSIX shell and these.
pub(crate) const TOOLS: &[&str] = &["uname", "cat", "mkdir", "chmod", "mv", "rm", "sha256sum"];

/// How long copying the binary may take (tens of MB over a LAN).
const COPY_LIMIT: Duration = Duration::from_secs(120);
const PROBE_LIMIT: Duration = Duration::from_secs(20);

/// tare, installed on a host for one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Installed {
    pub host: Host,
    /// The run's directory there (binary, `tmp/` for deployments).
    pub run_dir: PathBuf,
    /// The copied binary.
    pub binary: PathBuf,
    /// Its SHA-256, equal to this binary's.
    pub sha256: String,
    /// `uname -srm` there.
    pub uname: String,
}

/// The binary copied to hosts, when not the running one.
static BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Copies `path` to hosts instead of the running executable: for a
/// program that uses this library but is not `tare` itself (a test).
/// Only the first call counts.
pub fn use_binary(path: impl Into<PathBuf>) {
    let _ = BINARY.set(path.into());
}

/// The binary copied to hosts: `use_binary`'s, else this one.
fn own_binary() -> Result<PathBuf, RemoteError> {
    match BINARY.get() {
        Some(p) => Ok(p.clone()),
        None => std::env::current_exe().map_err(|e| RemoteError::Local(format!("own binary: {e}"))),
    }
}

/// The copied binary's SHA-256 (hex), computed once.
pub(crate) fn own_sha256() -> Result<&'static str, RemoteError> {
    static HASH: OnceLock<Result<String, String>> = OnceLock::new();
    HASH.get_or_init(|| {
        let exe = own_binary().map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&exe).map_err(|e| format!("{}: {e}", exe.display()))?;
        Ok(hex(&Sha256::digest(&bytes)))
    })
    .as_deref()
    .map_err(|e| RemoteError::Local(e.clone()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks `host`'s tools and system, then copies this binary into its
/// directory for `run_id` and checks the copy's hash.
pub fn install(host: &Host, run_id: &str) -> Result<Installed, RemoteError> {
    let probe = format!(
        "uname -s; uname -m; uname -srm; for t in {}; do command -v $t >/dev/null 2>&1 || echo missing:$t; done",
        TOOLS.join(" ")
    );
    let out = host.run(&probe, b"", PROBE_LIMIT)?;
    let lines: Vec<&str> = out.lines().collect();
    let missing: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("missing:"))
        .collect();
    let fail = |message: String| RemoteError::Ssh {
        host: host.name.clone(),
        message,
    };
    if !missing.is_empty() {
        return Err(fail(format!(
            "lacks {} (tare needs {} on each host)",
            missing.join(", "),
            TOOLS.join(", ")
        )));
    }
    let (os, arch, uname) = match lines.as_slice() {
        [os, arch, uname, ..] => (*os, *arch, uname.to_string()),
        _ => return Err(fail(format!("unexpected answer to uname: {out:?}"))),
    };
    if os != "Linux" || arch != std::env::consts::ARCH {
        return Err(fail(format!(
            "is {os} {arch}; this tare is a Linux {} binary",
            std::env::consts::ARCH
        )));
    }
    let want = own_sha256()?;
    let exe = own_binary()?;
    let bytes = std::fs::read(&exe).map_err(|e| RemoteError::Local(e.to_string()))?;
    let run_dir = host.run_dir(run_id);
    let d = sh_path(&run_dir);
    let script = format!(
        "set -e; umask 077; mkdir -p {d}/tmp; cat > {d}/tare.part; chmod 700 {d}/tare.part; mv {d}/tare.part {d}/tare; sha256sum {d}/tare"
    );
    let out = host.run(&script, &bytes, COPY_LIMIT)?;
    let got = out.split_whitespace().next().unwrap_or("");
    if got != want {
        return Err(fail(format!(
            "the copy of tare has SHA-256 {got:?}, not this binary's {want}"
        )));
    }
    Ok(Installed {
        host: host.clone(),
        binary: run_dir.join("tare"),
        run_dir,
        sha256: want.to_string(),
        uname,
    })
}

impl Installed {
    /// The shell line that runs `tare agent <sub>` there, its deployments
    /// under the run's directory.
    pub(crate) fn agent_line(&self, sub: &str) -> String {
        format!(
            "TMPDIR={} exec {} agent {sub}",
            sh_path(&self.run_dir.join("tmp")),
            sh_path(&self.binary)
        )
    }
}
