//! nginx-proxy's backend: `tare serve`, started by tare beside nginx on
//! nginx's own loopback in every placement, so the placement under test
//! changes only how load reaches nginx, never the nginx-to-backend hop:
//!
//! - native: a second process on the host, `127.0.0.1:<free port>`;
//! - lab-*: a second process in the server namespace, `127.0.0.1:8080`;
//! - docker-host: a second container, `--network host`, `127.0.0.1:<free port>`;
//! - docker-bridge, docker-publish: a second container sharing nginx's
//!   network namespace (`--network container:<nginx>`, a sidecar), `127.0.0.1:8080`.
//!
//! It runs from the same tare binary everywhere (its image is built from it
//! as any tare-serve image), answers every path with 200 and `body_size`
//! bytes of `x`, and is described by the same /proc facts as the server.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use crate::docker::{self, container::Network, container::Started};
use crate::error::DeployError;
use crate::facts::BackendFacts;
use crate::placement::process;
use crate::procfs;
use crate::spec::{ContainerOptions, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use crate::targets::{self, Listen, Server};
use crate::teardown::{Resource, Teardown};

/// A started backend.
pub(crate) struct Backend {
    /// Where nginx reaches it (in nginx's network namespace).
    pub addr: SocketAddr,
    pub server: Server,
    /// Host pid of the `tare serve` process.
    pub pid: i32,
    pub container: Option<Started>,
    /// The image it runs from (docker placements).
    pub image: Option<String>,
}

/// Where the backend will listen, known before nginx's config is written.
pub(crate) fn address(placement: PlacementKind) -> Result<SocketAddr, DeployError> {
    let port = match placement {
        // Sharing the host's loopback with everyone else: a free port.
        PlacementKind::Native | PlacementKind::DockerHost => crate::deployment::free_port()?,
        // A namespace of its own: tare serve's standard port.
        _ => targets::standard_port(TargetKind::TareServe),
    };
    Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))
}

/// `tare serve` as the backend of `spec`'s proxy, listening on `addr`.
fn prepare(spec: &DeploySpec, dir: &Path, addr: SocketAddr) -> Result<Server, DeployError> {
    let mut target = TargetSpec::new(TargetKind::TareServe);
    target.binary = spec.target.backend_binary.clone();
    target.body_size = spec.target.body_size;
    targets::prepare(&target, dir, &Listen::Tcp(addr), None)
}

/// Starts the backend as a process (native; lab: in `netns`), pinned to the
/// server's CPUs so it never competes with the generator.
pub(crate) fn start_process(
    spec: &DeploySpec,
    dir: &Path,
    addr: SocketAddr,
    netns: Option<&Path>,
    teardown: &Teardown,
) -> Result<Backend, DeployError> {
    let server = prepare(spec, dir, addr)?;
    let child = process::spawn(&server, dir, "backend", netns, spec.server_cpus.as_deref())?;
    let pid = child.id() as i32;
    teardown.push(Resource::Process(child));
    Ok(Backend {
        addr,
        server,
        pid,
        container: None,
        image: None,
    })
}

/// Starts the backend container beside nginx's (`nginx`: its id), on the host
/// network for docker-host, in nginx's network namespace otherwise. It gets
/// nginx's open-file limit, CPU set and seccomp profile; the CPU and memory
/// limits are the server's alone.
pub(crate) fn start_container(
    spec: &DeploySpec,
    dir: &Path,
    addr: SocketAddr,
    nginx: &str,
    owner: &str,
    nofile: (u64, u64),
    teardown: &Arc<Teardown>,
) -> Result<Backend, DeployError> {
    let server = prepare(spec, dir, addr)?;
    let image = docker::image::build(TargetKind::TareServe, &server.binary, false)?.tag;
    let network = match spec.placement {
        PlacementKind::DockerHost => Network::Host,
        _ => Network::Join(nginx.to_string()),
    };
    let name = format!(
        "{}-backend",
        dir.file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("tare-unnamed")
    );
    let options = ContainerOptions {
        seccomp_unconfined: spec.container.seccomp_unconfined,
        ..ContainerOptions::default()
    };
    let started = docker::container::start(
        docker::container::Request {
            name,
            image: image.clone(),
            server: &server,
            dir,
            network,
            options: &options,
            cpuset: spec.server_cpus.clone(),
            run_id: &spec.run_id,
            owner,
            nofile,
            share_socket_dir: false,
            files: false,
        },
        teardown,
    )?;
    Ok(Backend {
        addr,
        pid: started.pid,
        server,
        container: Some(started),
        image: Some(image),
    })
}

impl Backend {
    /// Ok while the backend runs.
    pub(crate) fn alive(&self) -> Result<(), String> {
        let r = match &self.container {
            Some(c) => docker::container::state(&c.id),
            None => match procfs::stat(self.pid) {
                Some(s) if s.state != 'Z' => Ok(()),
                _ => Err("exited".into()),
            },
        };
        r.map_err(|e| format!("the backend (tare serve): {e}"))
    }

    /// Its last output lines, for an error message.
    pub(crate) fn log_tail(&self, dir: &Path) -> String {
        match &self.container {
            Some(c) => docker::container::logs_tail(&c.id, 10),
            None => std::fs::read_to_string(dir.join("log/backend.out")).unwrap_or_default(),
        }
        .trim()
        .to_string()
    }

    /// What the backend is, measured from /proc of its process.
    pub(crate) fn facts(&self) -> BackendFacts {
        let pid = self.pid;
        let l = procfs::limits(pid);
        BackendFacts {
            target: TargetKind::TareServe.to_string(),
            endpoint: self.addr.to_string(),
            image: self.image.clone(),
            binary_path: self.server.binary.display().to_string(),
            binary_sha256: targets::file_sha256(&self.server.binary).ok(),
            server_version: targets::version(TargetKind::TareServe, &self.server.binary),
            config_sha256: self.server.config_sha256.clone(),
            nofile_soft: l.nofile_soft,
            nofile_hard: l.nofile_hard,
            cpus_allowed: l.cpus_allowed,
            cpus_visible: l.cpus_visible,
            cpu_limit: l.cpu_limit,
            memory_limit: l.memory_limit,
            seccomp: l.seccomp,
            pid: Some(pid),
        }
    }
}
