//! The Docker mechanism: each server a container made from the image
//! `tare image build` makes of the host's binary (`crate::docker`), given
//! the deployment's files as the storage option says. The Docker placements
//! differ only in their [`Net`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use tare_engine::Endpoint;

use super::process::{free_port, free_port_on};
use super::{Context, Mechanism, Role, Running, Site};
use crate::docker::container::{self, Network, Started};
use crate::docker::{self, image};
use crate::error::DeployError;
use crate::facts::Described;
use crate::helpers::{self, Helper};
use crate::options::{ContainerOptions, Storage, Transport};
use crate::owner::CleanupReport;
use crate::procfs;
use crate::targets::{self, Listen, Server};

pub(crate) struct Docker;

pub(crate) static DOCKER: Docker = Docker;

impl Mechanism for Docker {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn available(&self) -> Result<String, String> {
        docker::engine_version()
            .map(|v| format!("Docker Engine {v}"))
            .map_err(|e| e.to_string())
    }

    fn facts(&self) -> Vec<(String, String)> {
        let v = docker::engine_version().unwrap_or_else(|e| e.to_string());
        let mut facts = vec![("docker".into(), v)];
        if let Ok(driver) = docker::storage_driver() {
            facts.push(("docker storage driver".into(), driver));
        }
        facts
    }

    /// A storage driver that is not the kernel's overlayfs puts a user-space
    /// or copying filesystem under every file a container serves from its
    /// image: on this project's machine nginx in `--network host` served
    /// from the image at 0.32x native through fuse-overlayfs, and at native
    /// speed from a volume (docs/studies.md, "fuse-overlayfs (2026-11-25)").
    fn warnings(&self) -> Vec<String> {
        match docker::storage_driver().as_deref() {
            Ok(d @ ("fuse-overlayfs" | "vfs" | "devicemapper" | "btrfs" | "zfs")) => vec![format!(
                "Docker's storage driver is {d}, not the kernel's overlay2: a container serving files from its image pays for it (measured here: 0.32x native with fuse-overlayfs); vary the storage factor (storage = [\"image\", \"volume\"]) to measure it, or use volume or host-path to take it out (docs/experiments.md)"
            )],
            _ => Vec::new(),
        }
    }

    fn cleanup(&self, report: &mut CleanupReport) {
        let (containers, volumes) = match docker::list_labelled() {
            Ok(found) => found,
            Err(e) => return report.notes.push(e.to_string()),
        };
        for c in containers {
            if c.owner.as_deref().is_some_and(procfs::owner_alive) {
                report.live.push(format!("container {}", c.name));
                continue;
            }
            match docker::remove_container(&c.id) {
                Ok(()) => report.removed.push(format!("container {}", c.name)),
                Err(e) => report.notes.push(format!("container {}: {e}", c.name)),
            }
        }
        for i in docker::list_built_images().unwrap_or_default() {
            if i.owner.as_deref().is_some_and(procfs::owner_alive) {
                report.live.push(format!("image {}", i.name));
                continue;
            }
            match crate::targets::image::remove_image(&i.id) {
                Ok(()) => report.removed.push(format!("image {}", i.name)),
                Err(e) => report.notes.push(format!("image {}: {e}", i.name)),
            }
        }
        for v in volumes {
            if v.owner.as_deref().is_some_and(procfs::owner_alive) {
                report.live.push(format!("volume {}", v.name));
                continue;
            }
            match docker::remove_volume(&v.name) {
                Ok(()) => report.removed.push(format!("volume {}", v.name)),
                Err(e) => report.notes.push(format!("volume {}: {e}", v.name)),
            }
        }
    }
}

/// How a container placement (Docker's or Podman's) networks its server
/// container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Net {
    /// `--network host`: the host's loopback, a free port.
    Host,
    /// The default bridge (Docker's, or Podman's netavark/CNI network),
    /// reached at the container's IP.
    Bridge,
    /// The default bridge with the port published on 127.0.0.1
    /// (docker-proxy for Docker, netavark's DNAT for Podman).
    Publish,
}

impl Net {
    /// Where the server listens, as it sees it.
    pub(super) fn listen(self, port: u16) -> Result<SocketAddr, DeployError> {
        Ok(match self {
            Net::Host => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), free_port()?),
            Net::Bridge | Net::Publish => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
        })
    }

    /// Where a companion listens, on the server's loopback.
    pub(super) fn companion(self, port: u16) -> Result<SocketAddr, DeployError> {
        let port = match self {
            // Sharing the host's loopback with everyone else: a free port.
            Net::Host => free_port()?,
            // The server's network namespace: the conventional port.
            Net::Bridge | Net::Publish => port,
        };
        Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))
    }

    /// A free host port to publish on, for `Publish`.
    pub(super) fn host_port(self) -> Result<Option<u16>, DeployError> {
        Ok(match self {
            Net::Publish => Some(free_port()?),
            Net::Host | Net::Bridge => None,
        })
    }
}

/// The containers of one deployment.
pub(super) struct ContainerSite {
    net: Net,
    /// The image the server runs from.
    image: String,
    /// With `Net::Publish`: the host port.
    host_port: Option<u16>,
    /// The host address other hosts load it at (`DeploySpec::reach`);
    /// `None`: loopback.
    reach: Option<IpAddr>,
    /// The server's container, which a companion joins.
    server: Option<String>,
}

impl ContainerSite {
    pub(super) fn create(cx: &Context<'_>, net: Net) -> Result<Box<dyn Site>, DeployError> {
        let spec = cx.spec;
        let image = match &spec.image {
            Some(i) => i.clone(),
            // A user's image, read when it deployed.
            None if spec.target.target.oci.is_some() => spec.target.target.image.clone(),
            None => {
                let binary = targets::binary(&spec.target.target)?;
                image::build(&spec.target.target, &binary, false)?.tag
            }
        };
        let reach = spec.reach;
        let host_port = match (reach, net.host_port()?) {
            (Some(ip), Some(_)) => Some(free_port_on(ip)?),
            (_, port) => port,
        };
        Ok(Box::new(ContainerSite {
            net,
            image,
            host_port,
            reach,
            server: None,
        }))
    }
}

impl Site for ContainerSite {
    fn listen(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        match (self.net, self.reach) {
            // The host's network, at the address other hosts reach.
            (Net::Host, Some(ip)) => Ok(SocketAddr::new(ip, free_port_on(ip)?)),
            _ => self.net.listen(port),
        }
    }

    fn companion(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        self.net.companion(port)
    }

    fn start(
        &mut self,
        cx: &Context<'_>,
        server: &Server,
        listen: &Listen,
        role: Role,
    ) -> Result<Box<dyn Running>, DeployError> {
        let spec = cx.spec;
        // The container is named as its directory: tare-<run>-<pid>-<n>.
        let dir_name = cx
            .dir
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("tare-unnamed");
        let (name, image, network, options, storage) = match role {
            Role::Server => {
                let network = match (self.net, listen) {
                    (Net::Host, _) => Network::Host,
                    (Net::Bridge, _) | (Net::Publish, Listen::Unix(_)) => Network::Bridge,
                    (Net::Publish, Listen::Tcp(a)) => Network::Publish {
                        host_ip: self.reach.unwrap_or(Ipv4Addr::LOCALHOST.into()),
                        host_port: self.host_port.unwrap_or_default(),
                        container_port: a.port(),
                    },
                };
                (
                    dir_name.to_string(),
                    self.image.clone(),
                    network,
                    spec.container.clone(),
                    spec.container.storage,
                )
            }
            // Beside the server: on the host network with it, or in its
            // network namespace (a sidecar). It gets the server's seccomp
            // profile; the CPU and memory limits are the server's alone.
            Role::Companion => {
                let network = match (self.net, &self.server) {
                    (Net::Host, _) => Network::Host,
                    (_, Some(id)) => Network::Join(id.clone()),
                    (_, None) => {
                        return Err(DeployError::Invalid(
                            "a companion container starts after its server".into(),
                        ))
                    }
                };
                let options = ContainerOptions {
                    seccomp_unconfined: spec.container.seccomp_unconfined,
                    ..ContainerOptions::default()
                };
                let image = image::build(&server.target, &server.binary, false)?.tag;
                let name = format!("{dir_name}-{}", role.name());
                (name, image, network, options, Storage::Image)
            }
        };
        let started = container::start(
            container::Request {
                name,
                image: image.clone(),
                server,
                dir: cx.dir,
                network,
                options: &options,
                cpuset: spec.server_cpus.clone(),
                run_id: &spec.run_id,
                owner: cx.owner,
                nofile: own_nofile(),
                share_socket_dir: role == Role::Server && spec.transport == Transport::Unix,
                files: role == Role::Server,
            },
            cx.teardown,
        )?;
        if role == Role::Server {
            self.server = Some(started.id.clone());
        }
        Ok(Box::new(ContainerRun {
            started,
            image,
            storage,
        }))
    }

    fn endpoint(&self, listen: &Listen, server: &dyn Running) -> Result<Endpoint, DeployError> {
        Ok(match (listen, self.net) {
            (Listen::Unix(p), _) => Endpoint::Unix(p.clone()),
            (Listen::Tcp(a), Net::Host) => Endpoint::Tcp(*a),
            (Listen::Tcp(a), Net::Bridge) => {
                let ip = server.address().ok_or_else(|| {
                    DeployError::Docker("the container has no bridge IP address".into())
                })?;
                Endpoint::Tcp(SocketAddr::new(ip, a.port()))
            }
            (Listen::Tcp(_), Net::Publish) => Endpoint::Tcp(SocketAddr::new(
                self.reach.unwrap_or(Ipv4Addr::LOCALHOST.into()),
                self.host_port.unwrap_or_default(),
            )),
        })
    }
}

/// A started container.
struct ContainerRun {
    started: Started,
    image: String,
    storage: Storage,
}

impl Running for ContainerRun {
    fn pid(&self) -> i32 {
        self.started.pid
    }

    fn address(&self) -> Option<IpAddr> {
        self.started.ip
    }

    fn alive(&self) -> Result<(), String> {
        container::state(&self.started.id)
    }

    fn log_tail(&self, lines: usize) -> String {
        container::logs_tail(&self.started.id, lines)
    }

    fn scope(&self) -> super::Scope {
        super::Scope::CgroupOf(self.started.pid as u32)
    }

    fn described(&self) -> Described {
        Described {
            image: Some(self.image.clone()),
            storage: self.storage.to_string(),
            cpu_limit: self.started.nano_cpus.map(|n| n as f64 / 1e9),
            memory_limit: self.started.memory.map(|m| m as u64),
            guest: None,
        }
    }

    /// Its containerd shim (`-id <container>`), the fuse-overlayfs daemon
    /// serving its root filesystem (where Docker's storage driver is
    /// fuse-overlayfs) and the docker-proxy of a published port.
    fn helpers(&self) -> Vec<Helper> {
        let s = &self.started;
        let mut out = helpers::find("containerd-shim", |a| helpers::flag_is(a, "-id", &s.id));
        if let Some(merged) = &s.merged_dir {
            out.extend(helpers::find("fuse-overlayfs", |a| {
                a.last().is_some_and(|m| m == merged)
            }));
        }
        if let Some(ip) = s.ip {
            let ip = ip.to_string();
            out.extend(helpers::find("docker-proxy", |a| {
                helpers::flag_is(a, "-container-ip", &ip)
            }));
        }
        out
    }
}

/// The open-file limit (soft, hard) tare runs with: what a native server
/// inherits, given to containers too so nofile is not a hidden difference
/// (seed 000's `--ulimit nofile=65535:65535` fixes the same thing by hand:
/// docs/studies.md, seed 000, "The tuned configuration").
pub(super) fn own_nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is valid for writes.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    (r.rlim_cur, r.rlim_max)
}
