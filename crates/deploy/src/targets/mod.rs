//! Targets: the server under test, made ready to run in a deployment
//! directory. A target knows its binary, its arguments, its config and how to
//! tell it is up; it does not know where it runs (that is the placement's job),
//! except for the address it is told to listen on.

pub(crate) mod nginx;
pub(crate) mod postgres;
pub(crate) mod proxy;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::DeployError;
use crate::spec::{TargetKind, TargetSpec};

/// Where the server listens, as the server itself sees it.
#[derive(Clone, Debug)]
pub(crate) enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// How to tell the server is ready.
#[derive(Clone, Debug)]
pub(crate) enum Probe {
    /// A GET of this path must answer 200.
    Http { path: String },
    /// A startup message must reach ReadyForQuery.
    Postgres,
}

/// A target ready to start.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    pub binary: PathBuf,
    pub args: Vec<String>,
    /// uid:gid to run as (postgres refuses root).
    pub run_as: Option<(u32, u32)>,
    pub probe: Probe,
    pub config_sha256: String,
    pub access_log: String,
    /// Where the server writes its log / keeps data (for the filesystem fact).
    pub log_path: PathBuf,
    /// Where the served content lives.
    pub content_path: PathBuf,
}

/// The port a target listens on inside its own network namespace (container,
/// lab namespace): the conventional one, as in seed 000 and seed 001.
pub(crate) fn standard_port(kind: TargetKind) -> u16 {
    match kind.binary_kind() {
        TargetKind::Postgres => 5432,
        TargetKind::TareServe => 8080,
        _ => 80,
    }
}

/// The Unix socket a target listens on with `transport = unix`.
pub(crate) fn unix_socket(kind: TargetKind, dir: &Path, port: u16) -> PathBuf {
    match kind.binary_kind() {
        TargetKind::Postgres => dir.join("sock").join(format!(".s.PGSQL.{port}")),
        TargetKind::TareServe => dir.join("sock").join("serve.sock"),
        _ => dir.join("sock").join("nginx.sock"),
    }
}

/// The host binary a target runs (also the one copied into tare's images).
pub(crate) fn binary(spec: &TargetSpec) -> Result<PathBuf, DeployError> {
    let path = match (&spec.binary, spec.kind.binary_kind()) {
        (Some(p), _) => p.clone(),
        (None, TargetKind::Nginx | TargetKind::NginxProxy) => {
            which("nginx").ok_or_else(|| DeployError::MissingBinary {
                binary: "nginx".into(),
                hint: "not on PATH; install nginx-light (scripts/setup.sh)".into(),
            })?
        }
        (None, TargetKind::Postgres) => postgres::bin_dir()?.join("postgres"),
        (None, TargetKind::TareServe) => std::env::current_exe()
            .map_err(|e| DeployError::io("locating the running tare executable", e))?,
    };
    let canon = std::fs::canonicalize(&path).map_err(|_| DeployError::MissingBinary {
        binary: path.clone(),
        hint: "the server binary does not exist".into(),
    })?;
    Ok(canon)
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Writes the config and content into `dir` and says how to run the server.
/// `backend`: where nginx-proxy's backend listens, as nginx reaches it.
pub(crate) fn prepare(
    spec: &TargetSpec,
    dir: &Path,
    listen: &Listen,
    backend: Option<SocketAddr>,
) -> Result<Server, DeployError> {
    let binary = binary(spec)?;
    let io = |what: &str| {
        let what = what.to_string();
        move |e| DeployError::io(what, e)
    };
    match spec.kind {
        TargetKind::Nginx => {
            let (template, log) = nginx::template(&spec.variant, spec.access_log)?;
            nginx::make_dirs(dir).map_err(io("creating nginx directories"))?;
            std::fs::write(
                dir.join("www/index.html"),
                nginx::index_html(spec.body_size),
            )
            .map_err(io("writing index.html"))?;
            nginx_server(binary, dir, listen, &template, log, "/index.html", None)
        }
        TargetKind::NginxProxy => {
            let t = proxy::template(&spec.variant, spec.access_log)?;
            let backend = backend.ok_or_else(|| {
                DeployError::Invalid("nginx-proxy needs its backend's address".into())
            })?;
            nginx::make_dirs(dir).map_err(io("creating nginx directories"))?;
            let (log, path) = (t.access_log, t.path.as_str());
            nginx_server(binary, dir, listen, &t.text, log, path, Some(backend))
        }
        TargetKind::Postgres => {
            if spec.access_log.is_some() {
                return Err(DeployError::Invalid(
                    "access_log applies to nginx only".into(),
                ));
            }
            let owner = postgres::postgres_user()?;
            let text = postgres::init_cluster(&binary, dir, &spec.variant, owner)?;
            let (addr, port) = match listen {
                Listen::Tcp(a) => (a.ip().to_string(), a.port()),
                Listen::Unix(p) => (String::new(), socket_port(p).unwrap_or(5432)),
            };
            Ok(Server {
                args: postgres::args(dir, &addr, port),
                binary,
                run_as: Some(owner),
                probe: Probe::Postgres,
                config_sha256: sha256_hex(text.as_bytes()),
                access_log: "n/a".into(),
                log_path: dir.join("pgdata"),
                content_path: dir.join("pgdata"),
            })
        }
        TargetKind::TareServe => {
            if spec.variant != "default" {
                return Err(DeployError::Invalid(format!(
                    "tare-serve has no config variants (got {:?}): it is the calibration point with nothing to configure",
                    spec.variant
                )));
            }
            if spec.access_log.is_some() {
                return Err(DeployError::Invalid(
                    "access_log applies to nginx only".into(),
                ));
            }
            let mut args = vec!["serve".to_string()];
            match listen {
                Listen::Tcp(a) => args.extend(["--listen".into(), a.to_string()]),
                Listen::Unix(p) => args.extend(["--unix".into(), p.display().to_string()]),
            }
            args.extend(["--body-size".into(), spec.body_size.to_string()]);
            let template = format!("serve --body-size {}", spec.body_size);
            Ok(Server {
                args,
                binary,
                run_as: None,
                probe: Probe::Http { path: "/".into() },
                config_sha256: sha256_hex(template.as_bytes()),
                access_log: "off".into(),
                log_path: dir.to_path_buf(),
                content_path: dir.to_path_buf(),
            })
        }
    }
}

/// nginx with `template` filled in for this deployment (and, for
/// nginx-proxy, its backend's address), probed at `probe`. The config hash
/// is the template's: paths, listen address and backend port are the
/// placement's, not the config's.
fn nginx_server(
    binary: PathBuf,
    dir: &Path,
    listen: &Listen,
    template: &str,
    log: crate::spec::AccessLog,
    probe: &str,
    backend: Option<SocketAddr>,
) -> Result<Server, DeployError> {
    let d = dir.display().to_string();
    let listen_text = match listen {
        Listen::Tcp(a) => a.to_string(),
        Listen::Unix(p) => format!("unix:{}", p.display()),
    };
    let mut text = template
        .replace("{{dir}}", &d)
        .replace("{{listen}}", &listen_text);
    if let Some(b) = backend {
        text = text.replace(proxy::BACKEND, &b.to_string());
    }
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, text).map_err(|e| DeployError::io("writing nginx.conf", e))?;
    Ok(Server {
        args: vec![
            "-p".into(),
            d.clone(),
            "-c".into(),
            conf.display().to_string(),
            "-e".into(),
            dir.join("log/error.log").display().to_string(),
        ],
        binary,
        run_as: None,
        probe: Probe::Http { path: probe.into() },
        config_sha256: sha256_hex(template.as_bytes()),
        access_log: log.to_string(),
        log_path: dir.join("log"),
        content_path: dir.join("www"),
    })
}

fn socket_port(p: &Path) -> Option<u16> {
    p.file_name()?
        .to_str()?
        .strip_prefix(".s.PGSQL.")?
        .parse()
        .ok()
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

/// The server's own version line (`nginx -v`, `postgres --version`, `tare --version`).
pub(crate) fn version(kind: TargetKind, binary: &Path) -> Option<String> {
    let flag = if kind.is_nginx() { "-v" } else { "--version" };
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
    Some(line.trim_start_matches("nginx version: ").to_string())
}
