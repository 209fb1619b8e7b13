//! Targets: the server under test, made ready to run in a deployment
//! directory. A target knows its binary, its arguments, its config, its
//! image's files and how to tell it is up; it does not know where it runs
//! (that is the placement's job), except for the address it is told to
//! listen on.
//!
//! One file per target behind [`Target`], each named once in [`TARGETS`]
//! (ARCHITECTURE.md, "Adding a target").

mod mariadb;
mod net;
mod nginx;
pub(crate) mod nginx_proxy;
mod postgres;
mod redis;
mod tare_serve;
mod tool;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tare_engine::Endpoint;

use crate::error::DeployError;
use crate::spec::TargetSpec;

/// Every target tare can deploy, in the order `tare doctor` lists them.
/// The first is the embedded default (`tare run` with no file).
pub(crate) static TARGETS: &[&dyn Target] = &[
    &tare_serve::TareServe,
    &nginx::Nginx,
    &nginx_proxy::NginxProxy,
    &postgres::Postgres,
    &redis::Redis,
    &mariadb::MariaDb,
    &net::Net,
    &tool::Tool,
];

/// A server tare can deploy in any placement.
pub(crate) trait Target: Sync {
    /// Its name in experiment files, records and on the command line.
    fn name(&self) -> &'static str;

    /// Other names accepted for it (parsed to it, never written).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// One line for `tare doctor`: what it is.
    fn about(&self) -> &'static str;

    /// The load engine that speaks its protocol (`[load] engine` by default).
    fn engine(&self) -> &'static str;

    /// The port it listens on in a network namespace of its own (container,
    /// lab namespace, guest): the conventional one.
    fn standard_port(&self) -> u16;

    /// Its Unix socket with `transport = unix`, in the deployment's `sock/`.
    fn unix_socket(&self, dir: &Path, port: u16) -> PathBuf;

    /// The host's binary when the spec names none.
    fn default_binary(&self) -> Result<PathBuf, DeployError>;

    /// The server's own version line.
    fn version(&self, binary: &Path) -> Option<String> {
        version_line(binary, "--version")
    }

    /// The name of the image its binary runs from (`tare/<name>:<hash>`):
    /// a target that runs another's binary shares that one's image.
    fn image_name(&self) -> &'static str {
        self.name()
    }

    /// Host files its image needs besides the binary, its libraries and the
    /// system files every image gets (`docker::image`).
    fn image_files(&self, _binary: &Path) -> Result<Vec<PathBuf>, String> {
        Ok(Vec::new())
    }

    /// What else decides its image besides tare's binary (the tool
    /// target's program versions): part of the image's tag.
    fn image_key(&self) -> String {
        String::new()
    }

    /// Whether it makes its content itself once running (the tool agent's
    /// test files), so a `tmpfs` mounted over its content directory hides
    /// nothing; a target whose content is copied in before it starts
    /// (nginx's files) cannot have its content on tmpfs.
    fn fills_own_content(&self) -> bool {
        false
    }

    /// Config variants it knows by name beyond `default` and `tuned`
    /// (the tool target's built-in jobs).
    fn builtin_variants(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether it also answers UDP on its port (the `net` responder): a
    /// published port is then published for UDP too.
    fn uses_udp(&self) -> bool {
        false
    }

    /// Whether `access_log` applies (nginx's log, seed 000's factor:
    /// docs/studies.md, seed 000).
    fn has_access_log(&self) -> bool {
        false
    }

    /// Writes its config and content into `dir`, listening on `listen`, and
    /// says how to run it. `companion`: where its companion listens (see
    /// [`Target::companion`]).
    fn prepare(
        &self,
        spec: &TargetSpec,
        binary: PathBuf,
        dir: &Path,
        listen: &Listen,
        companion: Option<SocketAddr>,
    ) -> Result<Server, DeployError>;

    /// One readiness check: a real request of its protocol, bounded by
    /// `timeout`; a failure says whether waiting could change it.
    fn probe(
        &self,
        server: &Server,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<(), crate::health::Unready>;

    /// What a load engine is pointed at: the served resource's URL.
    fn url(&self, server: &Server, endpoint: &Endpoint) -> String;

    /// A second server this one needs beside it, on its own loopback, in
    /// every placement (nginx-proxy's backend): its spec.
    fn companion(&self, _spec: &TargetSpec) -> Option<TargetSpec> {
        None
    }
}

/// A handle on one entry of `TARGETS`: what [`TargetSpec`] names.
#[derive(Clone, Copy)]
pub struct TargetKind(&'static dyn Target);

crate::registry::handle!(TargetKind, Target, TARGETS, "target");

impl TargetKind {
    /// The embedded default: the first target of the registry.
    pub fn default_target() -> TargetKind {
        TargetKind(TARGETS[0])
    }

    /// The load engine that speaks its protocol.
    pub fn engine(self) -> &'static str {
        self.0.engine()
    }

    /// One line: what it is.
    pub fn about(self) -> &'static str {
        self.0.about()
    }

    /// Whether it answers UDP on its port as well as TCP.
    pub fn uses_udp(self) -> bool {
        self.0.uses_udp()
    }

    /// Config variants it knows by name beyond `default` and `tuned`.
    pub fn builtin_variants(self) -> &'static [&'static str] {
        self.0.builtin_variants()
    }

    /// Whether the `access_log` setting applies to it.
    pub fn has_access_log(self) -> bool {
        self.0.has_access_log()
    }

    /// The version of the host's own binary of this target (as a spec that
    /// names no binary would run it), if it is installed.
    pub fn host_version(self) -> Option<String> {
        let bin = binary(&TargetSpec::new(self)).ok()?;
        self.0.version(&bin)
    }

    /// Whether it runs a companion server beside it (whose binary
    /// `TargetSpec::backend_binary` sets).
    pub fn has_companion(self) -> bool {
        self.0.companion(&TargetSpec::new(self)).is_some()
    }
}

/// Where the server listens, as the server itself sees it.
#[derive(Clone, Debug)]
pub(crate) enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Listen {
    /// `ADDR:PORT` or `unix:PATH`, as nginx writes it.
    pub(crate) fn nginx_text(&self) -> String {
        match self {
            Listen::Tcp(a) => a.to_string(),
            Listen::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

/// A target ready to start.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    /// The target it is (its image, for a container).
    pub kind: TargetKind,
    pub binary: PathBuf,
    pub args: Vec<String>,
    /// uid:gid to run as (postgres refuses root).
    pub run_as: Option<(u32, u32)>,
    /// The path the probe asks for and load goes to (HTTP targets).
    pub resource: String,
    pub config_sha256: String,
    pub access_log: String,
    /// Where the server writes its log / keeps data (for the filesystem fact).
    pub log_path: PathBuf,
    /// Where the served content lives.
    pub content_path: PathBuf,
}

/// The host binary a target runs (also the one copied into tare's images).
pub(crate) fn binary(spec: &TargetSpec) -> Result<PathBuf, DeployError> {
    let path = match &spec.binary {
        Some(p) => p.clone(),
        None => spec.kind.get().default_binary()?,
    };
    let missing = || DeployError::MissingBinary {
        binary: path.clone(),
        hint: "the server binary does not exist".into(),
    };
    // The directory is made canonical, the name kept: a multi-call binary
    // picks its role by the name it is run as (Debian's redis-server is a
    // symlink to redis-check-rdb, which checks files when run as that).
    let real = std::fs::canonicalize(&path).map_err(|_| missing())?;
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .map_err(|_| missing()),
        _ => Ok(real),
    }
}

/// `name` on PATH (and the sbin directories a root shell has).
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The first line `binary flag` prints (on stdout, or stderr if stdout is empty).
pub(crate) fn version_line(binary: &Path, flag: &str) -> Option<String> {
    let out = std::process::Command::new(binary).arg(flag).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let line = String::from_utf8_lossy(&text)
        .lines()
        .next()?
        .trim()
        .to_string();
    Some(line)
}

/// The URL of an HTTP target's `path` at `endpoint`.
pub(crate) fn http_url(path: &str, endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Tcp(a) => format!("http://{a}{path}"),
        // tare http takes the socket with --unix; the URL still names the path.
        Endpoint::Unix(_) => format!("http://localhost{path}"),
    }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of a file, cached by path, size and mtime (binaries are tens of MB).
pub(crate) fn file_sha256(path: &Path) -> Result<String, DeployError> {
    type Key = (PathBuf, u64, i64);
    static CACHE: OnceLock<Mutex<Vec<(Key, String)>>> = OnceLock::new();
    use std::os::unix::fs::MetadataExt;
    let md =
        std::fs::metadata(path).map_err(|e| DeployError::io(format!("{}", path.display()), e))?;
    let key = (path.to_path_buf(), md.size(), md.mtime());
    let cache = CACHE.get_or_init(Default::default);
    if let Some((_, h)) = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return Ok(h.clone());
    }
    let bytes = std::fs::read(path)
        .map_err(|e| DeployError::io(format!("reading {}", path.display()), e))?;
    let h = sha256_hex(&bytes);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((key, h.clone()));
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_named_once_and_has_an_engine() {
        let names: Vec<&str> = TargetKind::all().map(TargetKind::name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for t in TargetKind::all() {
            assert!(!t.engine().is_empty() && !t.about().is_empty(), "{t}");
        }
    }
}
