//! Targets: the server under test, made ready to run in a deployment
//! directory. A target is a value ([`Target`]) that owns its settings: the
//! protocol it speaks, its port, how tare tells it is up, its config
//! variants, its binary, its companion, a user's command line. A recipe
//! ([`Recipe`], one file each, named once in [`RECIPES`]) writes its config
//! and says how to run it; it does not know where it runs (that is the
//! placement's job), except for the address it is told to listen on.
//!
//! The built-in targets are the values their recipes make with nothing
//! changed ([`TargetKind::target`]); a user's own service is the value the
//! experiment's `[target]` table makes (`kind = "command"`:
//! [`command::Service`]). Everything a deployment asks of a target is read
//! from the value (ARCHITECTURE.md, "Targets").

pub(crate) mod command;
pub(crate) mod image;
pub(crate) mod image_export;
mod mariadb;
mod net;
mod nginx;
pub(crate) mod nginx_proxy;
mod postgres;
mod protocol;
mod redis;
mod tare_serve;
mod template;
mod tool;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use tare_engine::Endpoint;

use crate::error::DeployError;
use crate::host::{sha256_hex, version_line};
use crate::options::AccessLog;

pub use command::{app_path, Placeholder, Service, ServiceError};
pub use image::{ExportedRoot, Oci, OciConfig, OciSource};
pub use image_export::ExportCache;
pub use protocol::Protocol;

/// Every recipe, in the order `tare doctor` lists them. The first is the
/// embedded default (`tare run` with no file).
pub(crate) static RECIPES: &[&dyn Recipe] = &[
    &tare_serve::TareServe,
    &nginx::Nginx,
    &nginx_proxy::NginxProxy,
    &postgres::Postgres,
    &redis::Redis,
    &mariadb::MariaDb,
    &net::Net,
    &tool::Tool,
    &command::Command,
    &image::Image,
];

/// How one kind of target is made: its settings when the experiment
/// changes none, where its binary is, what its image needs, and how its
/// config is written for one deployment.
pub(crate) trait Recipe: Sync {
    /// Its name in experiment files, records and on the command line.
    fn name(&self) -> &'static str;

    /// Other names accepted for it (parsed to it, never written).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// One line for `tare doctor`: what it is.
    fn about(&self) -> &'static str;

    /// The target it makes when the experiment changes nothing.
    fn target(&self) -> Target;

    /// The host's binary when the target names none.
    fn default_binary(&self, target: &Target) -> Result<PathBuf, DeployError>;

    /// The server's own version line.
    fn version(&self, binary: &Path) -> Option<String> {
        version_line(binary, "--version")
    }

    /// Host files its image needs besides the binary, its libraries and the
    /// system files every image gets (`docker::image`).
    fn image_files(&self, _target: &Target, _binary: &Path) -> Result<Vec<PathBuf>, String> {
        Ok(Vec::new())
    }

    /// What else decides its image besides the binary (the tool target's
    /// program versions, a service's files): part of the image's tag.
    fn image_key(&self, _target: &Target) -> String {
        String::new()
    }

    /// Writes its config and content into the deployment directory and
    /// says how to run it.
    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError>;
}

/// What a recipe prepares a server from.
pub(crate) struct Prepare<'a> {
    pub spec: &'a TargetSpec,
    pub binary: PathBuf,
    /// The deployment directory.
    pub dir: &'a Path,
    /// Where it listens, as it sees it.
    pub listen: &'a Listen,
    /// Where its companion listens ([`Target::companion`]).
    pub companion: Option<SocketAddr>,
    /// How many CPUs it may use where it runs (pinned, a container's
    /// cpuset, a guest's vCPUs, else the machine's): a service's `{cpus}`.
    pub cpus: usize,
}

impl Prepare<'_> {
    pub(crate) fn target(&self) -> &Target {
        &self.spec.target
    }
}

/// A target: the server under test and the settings it owns. Serialized
/// with the deployment spec (a remote host's agent deploys the same value).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Target {
    /// The recipe that writes its config: its name is the target's name in
    /// records (`nginx`, `command`...).
    pub kind: TargetKind,
    /// The protocol it speaks, and so the load engine that loads it.
    pub protocol: Protocol,
    /// The port it listens on in a network namespace of its own
    /// (container, lab namespace, guest): the conventional one.
    pub port: u16,
    /// The file name of its Unix socket in the deployment's `sock/`.
    pub socket: String,
    /// How tare tells it is up.
    pub ready: Ready,
    /// How long it may take to answer its first request; `None`: a
    /// minute (postgres after initdb, a container on fuse-overlayfs).
    #[serde(default)]
    pub ready_within: Option<std::time::Duration>,
    /// The config variants it knows by name, `default` first.
    pub variants: Vec<String>,
    /// Whether a config file of the user's (`[target.configs.NAME]`) can
    /// be a variant of it.
    pub config_files: bool,
    /// Whether the `access_log` factor applies (nginx's log, seed 000's
    /// factor: docs/studies.md, seed 000).
    pub access_log: bool,
    /// Whether it answers UDP on its port as well (the `net` responder): a
    /// published port is then published for UDP too.
    pub udp: bool,
    /// Whether it makes its content itself once running (the tool agent's
    /// test files), so a tmpfs mounted over its content directory hides
    /// nothing; a target whose content is copied in before it starts
    /// (nginx's files) cannot have its content on tmpfs.
    pub fills_own_content: bool,
    /// The name of the image its binary runs from (`tare/<name>:<hash>`):
    /// targets that run one binary share one image.
    pub image: String,
    /// Its binary; `None`: the recipe's (found on PATH, or the running tare).
    #[serde(default)]
    pub binary: Option<PathBuf>,
    /// Size in bytes of the file nginx serves / the body tare-serve answers.
    pub body_size: usize,
    /// A second server it needs beside it, on its own loopback, in every
    /// placement (nginx-proxy's `tare serve` backend).
    #[serde(default)]
    pub companion: Option<Box<Target>>,
    /// A user's service (`kind = "command"`): its command line, environment,
    /// working directory and files.
    #[serde(default)]
    pub service: Option<Service>,
    /// A user's image (`kind = "image"`): where it comes from, and its
    /// config once read.
    #[serde(default)]
    pub oci: Option<Oci>,
}

/// How tare tells a target is up: polled from where the load generator
/// will stand until it answers (`health::wait_healthy`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ready {
    /// A TCP connection is accepted (or the Unix socket connects).
    Tcp,
    /// `GET path` answers 200.
    Http { path: String },
    /// A real request of its protocol ([`Protocol::probe`]).
    Protocol,
}

impl fmt::Display for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ready::Tcp => f.write_str("tcp"),
            Ready::Http { path } => write!(f, "http:{path}"),
            Ready::Protocol => f.write_str("protocol"),
        }
    }
}

impl Target {
    /// A target of `kind` with neutral settings, for a recipe to fill in.
    pub(crate) fn of(kind: TargetKind, protocol: Protocol, port: u16) -> Target {
        Target {
            kind,
            protocol,
            port,
            socket: format!("{}.sock", kind.name()),
            ready: Ready::Protocol,
            ready_within: None,
            variants: vec!["default".into()],
            config_files: false,
            access_log: false,
            udp: false,
            fills_own_content: false,
            image: kind.name().into(),
            binary: None,
            body_size: 612, // the size of nginx's stock index.html (Debian 1.22)
            companion: None,
            service: None,
            oci: None,
        }
    }

    /// The target's name in records: its recipe's.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The load engine that speaks its protocol (`[load] engine` by default).
    pub fn engine(&self) -> &'static str {
        self.protocol.engine()
    }

    /// Whether `variant` is one it can run, or why not (with the variants
    /// it has): `deploy` refuses any other; the experiment file checks its
    /// levels against the same list, [`Target::variants`], when it is read.
    pub(crate) fn check_variant(&self, variant: &Variant) -> Result<(), String> {
        match variant {
            Variant::Named(n) if self.variants.contains(n) => Ok(()),
            Variant::Named(n) => Err(format!(
                "{} has no config variant `{n}` (its variants: {}{})",
                self.name(),
                self.variants.join(", "),
                if self.config_files {
                    ", or a file in [target.configs.NAME]"
                } else {
                    ""
                }
            )),
            Variant::File { name, .. } if !self.config_files => Err(format!(
                "{} takes no config file (config `{name}`); its variants: {}",
                self.name(),
                self.variants.join(", ")
            )),
            Variant::File { .. } => Ok(()),
        }
    }

    /// The version of the binary it would run here, if it is installed.
    pub fn host_version(&self) -> Option<String> {
        let bin = binary(self).ok()?;
        self.kind.get().version(&bin)
    }

    /// Its companion's spec, sized as it is.
    pub(crate) fn companion_spec(&self) -> Option<TargetSpec> {
        self.companion.as_ref().map(|c| {
            let mut c = (**c).clone();
            c.body_size = self.body_size;
            TargetSpec::new(c)
        })
    }
}

/// A config variant of a target: one it knows by name, or a file of the
/// user's. Typed when the experiment file is read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// One of [`Target::variants`].
    Named(String),
    /// `[target.configs.NAME]`: its text, saved at `path` (the run
    /// directory's `configs/NAME`).
    File { name: String, path: PathBuf },
}

impl Default for Variant {
    fn default() -> Variant {
        Variant::Named("default".into())
    }
}

impl Variant {
    /// The built-in variant's name, if it is one.
    pub fn builtin(&self) -> Option<&str> {
        match self {
            Variant::Named(n) => Some(n),
            Variant::File { .. } => None,
        }
    }

    /// Reads a file variant's text; `what` names the config in the error.
    pub(crate) fn read_file(&self, what: &str, variants: &str) -> Result<String, DeployError> {
        match self {
            Variant::File { path, .. } => std::fs::read_to_string(path).map_err(|e| {
                DeployError::io(
                    format!("{what} config {path:?} (variants: {variants}, or a file)"),
                    e,
                )
            }),
            Variant::Named(n) => Err(DeployError::Invalid(format!(
                "{what} has no config variant `{n}` (variants: {variants}, or a file)"
            ))),
        }
    }
}

/// As the facts record it: a built-in's name, a file's path.
impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Variant::Named(n) => f.write_str(n),
            Variant::File { path, .. } => write!(f, "{}", path.display()),
        }
    }
}

/// A handle on one entry of `RECIPES`: what [`Target::kind`] names.
#[derive(Clone, Copy)]
pub struct TargetKind(&'static dyn Recipe);

crate::registry::handle!(TargetKind, Recipe, RECIPES, "target");

impl TargetKind {
    /// The embedded default: the first target of the registry.
    #[cfg(test)]
    pub(crate) fn default_target() -> TargetKind {
        TargetKind(RECIPES[0])
    }

    /// One line: what it is.
    pub fn about(self) -> &'static str {
        self.0.about()
    }

    /// The target it makes when the experiment changes nothing.
    pub fn target(self) -> Target {
        self.0.target()
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
    pub target: Target,
    pub binary: PathBuf,
    pub args: Vec<String>,
    /// Environment it is started with, beside what it inherits.
    pub env: Vec<(String, String)>,
    /// Its working directory; `None`: the deployment directory.
    pub workdir: Option<PathBuf>,
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
    /// The image's root filesystem it runs from, chrooted (a user's image
    /// run as a plain process: `placements::chroot`).
    pub root: Option<image::RootFs>,
}

impl Server {
    /// A server of `cx`'s target running `args`, with no environment of its
    /// own, its content and log in the deployment directory.
    pub(crate) fn new(cx: &Prepare<'_>, args: Vec<String>, config: &[u8]) -> Server {
        Server {
            target: cx.target().clone(),
            binary: cx.binary.clone(),
            args,
            env: Vec::new(),
            workdir: None,
            run_as: None,
            resource: String::new(),
            config_sha256: sha256_hex(config),
            access_log: "n/a".into(),
            log_path: cx.dir.to_path_buf(),
            content_path: cx.dir.to_path_buf(),
            root: None,
        }
    }

    /// One readiness check, bounded by `timeout`; a failure says whether
    /// waiting could change it.
    pub(crate) fn probe(
        &self,
        endpoint: &Endpoint,
        timeout: std::time::Duration,
    ) -> Result<(), crate::health::Unready> {
        match &self.target.ready {
            Ready::Tcp => crate::health::connect(endpoint, timeout)
                .map(drop)
                .map_err(|e| e.to_string().into()),
            Ready::Http { path } => crate::health::http_get(endpoint, path, timeout),
            Ready::Protocol => self.target.protocol.probe(self, endpoint, timeout),
        }
    }

    /// What a load engine is pointed at: the served resource's URL.
    pub(crate) fn url(&self, endpoint: &Endpoint) -> String {
        self.target.protocol.url(&self.resource, endpoint)
    }
}

/// The host binary a target runs (also the one copied into tare's images).
pub(crate) fn binary(target: &Target) -> Result<PathBuf, DeployError> {
    let path = match &target.binary {
        Some(p) => p.clone(),
        None => target.kind.get().default_binary(target)?,
    };
    // An image's entrypoint is a path in the image, not the host's.
    if target.oci.is_some() {
        return Ok(path);
    }
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

/// The URL of an HTTP target's `path` at `endpoint`.
pub(crate) fn http_url(path: &str, endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Tcp(a) => format!("http://{a}{path}"),
        // tare http takes the socket with --unix; the URL still names the path.
        Endpoint::Unix(_) => format!("http://localhost{path}"),
    }
}

/// The `--listen ADDR` or `--unix PATH` arguments of tare's own servers.
pub(crate) fn tare_listen_args(listen: &Listen) -> [String; 2] {
    match listen {
        Listen::Tcp(a) => ["--listen".into(), a.to_string()],
        Listen::Unix(p) => ["--unix".into(), p.display().to_string()],
    }
}

/// The server under test and the configuration one cell gives it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetSpec {
    /// The target, with the settings it owns (port, protocol, binary...).
    pub target: Target,
    /// Its config variant (checked against the target's own list).
    #[serde(default)]
    pub variant: Variant,
    /// Overrides whatever the variant says about `access_log`, for a
    /// target it applies to ([`Target::access_log`]).
    pub access_log: Option<AccessLog>,
    /// How many CPUs the server may run on, when the deployment pins it to
    /// fewer than the machine has and the server cannot count them itself
    /// (a process or a container: nginx 1.22's `worker_processes auto`
    /// counts the machine's online CPUs, not its affinity or cpuset). Set
    /// by the deployment from `DeploySpec::server_cpus`; `None` in a guest,
    /// which counts its own vCPUs.
    #[serde(skip)]
    pub cpus: Option<usize>,
}

impl TargetSpec {
    /// `target` in its default variant.
    pub fn new(target: Target) -> Self {
        TargetSpec {
            target,
            variant: Variant::default(),
            access_log: None,
            cpus: None,
        }
    }

    /// The built-in target `kind` with nothing changed, in its default variant.
    pub fn of(kind: TargetKind) -> Self {
        TargetSpec::new(kind.target())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_named_once_and_makes_itself() {
        let names: Vec<&str> = TargetKind::all().map(TargetKind::name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for k in TargetKind::all() {
            let t = k.target();
            assert_eq!(t.kind, k);
            assert!(!t.engine().is_empty() && !k.about().is_empty(), "{k}");
            assert_eq!(t.variants.first().map(String::as_str), Some("default"));
        }
    }

    /// Regression: `config = "tuned"` for redis passed the experiment's
    /// check and failed in `prepare` reading a file named `tuned`; its
    /// documented `appendonly` was refused. Each target lists its own.
    #[test]
    fn each_target_lists_its_own_variants() {
        let redis = TargetKind::named("redis").unwrap().target();
        let e = redis
            .check_variant(&Variant::Named("tuned".into()))
            .unwrap_err();
        assert!(e.contains("default, appendonly"), "{e}");
        assert!(redis
            .check_variant(&Variant::Named("appendonly".into()))
            .is_ok());
        let serve = TargetKind::default_target().target();
        let file = Variant::File {
            name: "mine".into(),
            path: "/x".into(),
        };
        assert!(serve.check_variant(&file).is_err());
        assert!(TargetKind::named("nginx")
            .unwrap()
            .target()
            .check_variant(&file)
            .is_ok());
    }
}
