//! `deploy`: make the directory, start the target in its placement, wait until
//! it answers, measure its facts. `Deployment`: what the runner holds while it
//! measures; dropping it removes everything.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::backend::{self, Backend};
use crate::docker;
use crate::error::DeployError;
use crate::facts::Facts;
use crate::health;
use crate::lab;
use crate::placement::process;
use crate::procfs;
use crate::spec::{DeploySpec, PlacementKind, TargetKind, Transport};
use crate::targets::{self, Listen, Probe, Server};
use crate::teardown::{Resource, Teardown};

/// Prefix of every deployment directory (in the system temp dir) and every
/// container and volume name.
pub(crate) const PREFIX: &str = "tare-";
/// Name of the file in a deployment directory naming its owner ("pid:starttime").
pub(crate) const OWNER_FILE: &str = ".tare-owner";

/// How long a server may take to answer its first request. Postgres after
/// initdb and a container on fuse-overlayfs take a few seconds here.
const HEALTH_LIMIT: Duration = Duration::from_secs(60);

/// A running target. Dropping it stops and removes everything it created.
pub struct Deployment {
    endpoint: Endpoint,
    url: String,
    client_netns: Option<PathBuf>,
    facts: Facts,
    dir: PathBuf,
    teardown: Arc<Teardown>,
}

impl std::fmt::Debug for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("endpoint", &self.endpoint)
            .field("dir", &self.dir)
            .finish()
    }
}

impl Deployment {
    /// Where the load generator connects.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The URL of the served resource (HTTP targets); for postgres, a
    /// `postgres://` URL naming the same endpoint.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// lab-client: the namespace generator threads must enter.
    pub fn client_netns(&self) -> Option<&Path> {
        self.client_netns.as_deref()
    }

    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The deployment's directory (config, content, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops and removes everything, reporting the first failure.
    pub fn stop(self) -> Result<(), DeployError> {
        self.teardown.run()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = self.teardown.run();
    }
}

/// Starts the target in its placement and waits until it answers a real request.
pub fn deploy(spec: &DeploySpec) -> Result<Deployment, DeployError> {
    validate(spec)?;
    let teardown = Teardown::register();
    match start(spec, &teardown) {
        Ok(parts) => Ok(Deployment {
            endpoint: parts.endpoint,
            url: parts.url,
            client_netns: parts.client_netns,
            facts: parts.facts,
            dir: parts.dir,
            teardown,
        }),
        Err(e) => {
            let _ = teardown.run();
            Err(e)
        }
    }
}

fn validate(spec: &DeploySpec) -> Result<(), DeployError> {
    let ok = !spec.run_id.is_empty()
        && spec.run_id.len() <= 32
        && spec
            .run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(DeployError::Invalid(format!(
            "run id {:?}: 1-32 characters of [A-Za-z0-9_-] (it names containers, namespaces and files)",
            spec.run_id
        )));
    }
    if spec.netem.is_some() && !spec.placement.is_lab() {
        return Err(DeployError::Invalid(format!(
            "--netem applies to lab-* placements only, not {}",
            spec.placement
        )));
    }
    if let Some(c) = spec.container.cpus {
        if !(c.is_finite() && c > 0.0) {
            return Err(DeployError::Invalid(format!(
                "container CPU limit {c}: must be > 0"
            )));
        }
    }
    let container_opts_set = spec.container != Default::default() || spec.image.is_some();
    if container_opts_set && !spec.placement.is_docker() {
        return Err(DeployError::Invalid(format!(
            "image, storage, seccomp and container limits apply to docker-* placements, not {}",
            spec.placement
        )));
    }
    Ok(())
}

struct Parts {
    endpoint: Endpoint,
    url: String,
    client_netns: Option<PathBuf>,
    facts: Facts,
    dir: PathBuf,
}

fn make_dir(run_id: &str, teardown: &Teardown) -> Result<PathBuf, DeployError> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{PREFIX}{run_id}-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir)
        .map_err(|e| DeployError::io(format!("creating {}", dir.display()), e))?;
    teardown.push(Resource::Dir(dir.clone()));
    use std::os::unix::fs::PermissionsExt;
    // Traversable by the postgres user and by container users.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| DeployError::io("chmod deployment dir", e))?;
    std::fs::write(dir.join(OWNER_FILE), procfs::own_identity())
        .map_err(|e| DeployError::io("writing the owner file", e))?;
    std::fs::create_dir_all(dir.join("sock"))
        .map_err(|e| DeployError::io("creating the socket dir", e))?;
    Ok(dir)
}

pub(crate) fn free_port() -> Result<u16, DeployError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| DeployError::io("finding a free loopback port", e))
}

fn start(spec: &DeploySpec, teardown: &Arc<Teardown>) -> Result<Parts, DeployError> {
    let kind = spec.target.kind;
    let dir = make_dir(&spec.run_id, teardown)?;
    let std_port = targets::standard_port(kind);
    let unix =
        (spec.transport == Transport::Unix).then(|| targets::unix_socket(kind, &dir, std_port));
    let owner = procfs::own_identity();

    let placement = spec.placement;
    let mut client_netns = None;
    let mut container = None;
    // nginx-proxy: where its backend listens, in nginx's network namespace.
    let backend_addr = (kind == TargetKind::NginxProxy)
        .then(|| backend::address(placement))
        .transpose()?;
    let mut backend: Option<Backend> = None;
    let cpus = spec.server_cpus.as_deref();
    let (server, endpoint, netns_for_probe, pid) = match placement {
        PlacementKind::Native => {
            let listen = match &unix {
                Some(p) => Listen::Unix(p.clone()),
                None => Listen::Tcp(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), free_port()?)),
            };
            if let Some(addr) = backend_addr {
                backend = Some(backend::start_process(spec, &dir, addr, None, teardown)?);
            }
            let server = targets::prepare(&spec.target, &dir, &listen, backend_addr)?;
            let child = process::spawn(&server, &dir, "server", None, cpus)?;
            let pid = child.id() as i32;
            teardown.push(Resource::Process(child));
            (server, endpoint_of(&listen), None, pid)
        }
        p if p.is_lab() => {
            let lab_kind = match p {
                PlacementKind::LabVeth => lab::LabKind::Veth,
                PlacementKind::LabBridge => lab::LabKind::Bridge,
                PlacementKind::LabNat => lab::LabKind::Nat,
                _ => lab::LabKind::Client,
            };
            let net = lab::LabNet::create(lab_kind, &spec.run_id, spec.netem).map_err(|e| {
                DeployError::PlacementUnavailable {
                    placement: p.to_string(),
                    reason: e.to_string(),
                }
            })?;
            let listen = match &unix {
                Some(path) => Listen::Unix(path.clone()),
                None => Listen::Tcp(SocketAddr::new(net.server_addr(), std_port)),
            };
            let endpoint = match &unix {
                Some(path) => Endpoint::Unix(path.clone()),
                None => Endpoint::Tcp(net.connect_addr(std_port)),
            };
            let server_ns = net.server_netns().to_path_buf();
            client_netns = net.client_netns().map(Path::to_path_buf);
            teardown.push(Resource::Lab(Box::new(net)));
            if let Some(addr) = backend_addr {
                let b = backend::start_process(spec, &dir, addr, Some(&server_ns), teardown)?;
                backend = Some(b);
            }
            let server = targets::prepare(&spec.target, &dir, &listen, backend_addr)?;
            let child = process::spawn(&server, &dir, "server", Some(&server_ns), cpus)?;
            let pid = child.id() as i32;
            teardown.push(Resource::Process(child));
            (server, endpoint, client_netns.clone(), pid)
        }
        _ => {
            let (server, endpoint, started) =
                start_container(spec, &dir, unix.as_deref(), backend_addr, &owner, teardown)?;
            let pid = started.pid;
            if let Some(addr) = backend_addr {
                let b = backend::start_container(
                    spec,
                    &dir,
                    addr,
                    &started.id,
                    &owner,
                    own_nofile(),
                    teardown,
                )?;
                backend = Some(b);
            }
            container = Some(started);
            (server, endpoint, None, pid)
        }
    };

    let alive = || -> Result<(), String> {
        if let Some(b) = &backend {
            b.alive()?;
        }
        match &container {
            Some(c) => docker::container::state(&c.id),
            None => match procfs::stat(pid) {
                Some(s) if s.state != 'Z' => Ok(()),
                _ => Err("the server process exited".into()),
            },
        }
    };
    if let Err((last, waited)) = health::wait_healthy(
        &endpoint,
        &server.probe,
        netns_for_probe.as_deref(),
        HEALTH_LIMIT,
        alive,
    ) {
        let mut log = match &container {
            Some(c) => docker::container::logs_tail(&c.id, 20),
            None => tail(&dir.join("log/server.out"), 20),
        }
        .trim()
        .to_string();
        if let Some(b) = &backend {
            let b = b.log_tail(&dir);
            if !b.is_empty() {
                log = format!("{log}; backend: {b}");
            }
        }
        return Err(DeployError::Unhealthy {
            target: kind.to_string(),
            endpoint: endpoint.to_string(),
            waited_s: waited,
            last_error: last,
            log: if log.is_empty() {
                String::new()
            } else {
                format!("; server log: {log}")
            },
        });
    }

    let url = url_of(&server.probe, &endpoint);
    let mut facts = crate::facts::measure(spec, &server, &endpoint, pid, container.as_ref());
    facts.backend = backend.as_ref().map(Backend::facts);
    Ok(Parts {
        endpoint,
        url,
        client_netns,
        facts,
        dir,
    })
}

/// The last `lines` lines of a file, or "".
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn endpoint_of(listen: &Listen) -> Endpoint {
    match listen {
        Listen::Tcp(a) => Endpoint::Tcp(*a),
        Listen::Unix(p) => Endpoint::Unix(p.clone()),
    }
}

fn url_of(probe: &Probe, ep: &Endpoint) -> String {
    match (probe, ep) {
        (Probe::Http { path }, Endpoint::Tcp(a)) => format!("http://{a}{path}"),
        // tare http takes the socket with --unix; the URL still names the path.
        (Probe::Http { path }, Endpoint::Unix(_)) => format!("http://localhost{path}"),
        (Probe::Postgres, Endpoint::Tcp(a)) => format!("postgres://postgres@{a}/postgres"),
        (Probe::Postgres, Endpoint::Unix(p)) => {
            let dir = p
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            let port = p
                .file_name()
                .and_then(|f| f.to_str())
                .and_then(|f| f.strip_prefix(".s.PGSQL."))
                .unwrap_or("5432");
            format!("postgres://postgres@/postgres?host={dir}&port={port}")
        }
    }
}

fn start_container(
    spec: &DeploySpec,
    dir: &Path,
    unix: Option<&Path>,
    backend: Option<SocketAddr>,
    owner: &str,
    teardown: &Arc<Teardown>,
) -> Result<(Server, Endpoint, docker::container::Started), DeployError> {
    use docker::container::Network;
    let kind = spec.target.kind;
    let std_port = targets::standard_port(kind);
    let image = match &spec.image {
        Some(i) => i.clone(),
        None => {
            let binary = targets::binary(&spec.target)?;
            docker::image::build(kind.binary_kind(), &binary, false)?.tag
        }
    };
    let (network, listen) = match (spec.placement, unix) {
        (_, Some(p)) if spec.placement == PlacementKind::DockerHost => {
            (Network::Host, Listen::Unix(p.to_path_buf()))
        }
        (PlacementKind::DockerHost, None) => (
            Network::Host,
            Listen::Tcp(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), free_port()?)),
        ),
        (PlacementKind::DockerBridge, u) => (
            Network::Bridge,
            match u {
                Some(p) => Listen::Unix(p.to_path_buf()),
                None => Listen::Tcp(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), std_port)),
            },
        ),
        (_, u) => (
            Network::Publish {
                host_port: free_port()?,
                container_port: std_port,
            },
            match u {
                Some(p) => Listen::Unix(p.to_path_buf()),
                None => Listen::Tcp(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), std_port)),
            },
        ),
    };
    let server = targets::prepare(&spec.target, dir, &listen, backend)?;
    let nofile = own_nofile();
    // The container is named as its directory: tare-<run>-<pid>-<n>.
    let name = dir
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or("tare-unnamed")
        .to_string();
    let started = docker::container::start(
        docker::container::Request {
            name,
            image,
            server: &server,
            dir,
            network: network.clone(),
            options: &spec.container,
            cpuset: spec.server_cpus.clone(),
            run_id: &spec.run_id,
            owner,
            nofile,
            share_socket_dir: unix.is_some(),
            files: true,
        },
        teardown,
    )?;
    let endpoint = match (&listen, network) {
        (Listen::Unix(p), _) => Endpoint::Unix(p.clone()),
        (Listen::Tcp(a), Network::Host) => Endpoint::Tcp(*a),
        (Listen::Tcp(a), Network::Bridge) => {
            let ip: IpAddr = started.ip.ok_or_else(|| {
                DeployError::Docker("the container has no bridge IP address".into())
            })?;
            Endpoint::Tcp(SocketAddr::new(ip, a.port()))
        }
        (Listen::Tcp(_), Network::Publish { host_port, .. }) => {
            Endpoint::Tcp(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), host_port))
        }
        (Listen::Tcp(_), Network::Join(_)) => {
            return Err(DeployError::Invalid(
                "a server never joins another container".into(),
            ))
        }
    };
    Ok((server, endpoint, started))
}

fn own_nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is valid for writes.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    (r.rlim_cur, r.rlim_max)
}
