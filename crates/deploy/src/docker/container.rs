//! One server container: created with tare's labels, given its files
//! according to the storage option, started, and described by inspection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

use bollard::container::{
    Config, CreateContainerOptions, LogsOptions, StartContainerOptions, UploadToContainerOptions,
};
use bollard::models::{HostConfig, PortBinding, PortMap, ResourcesUlimits};
use bollard::volume::CreateVolumeOptions;
use futures_util::StreamExt;

use super::{with, LABEL, LABEL_OWNER, LABEL_RUN};
use crate::error::DeployError;
use crate::spec::{ContainerOptions, Storage};
use crate::targets::Server;
use crate::teardown::{Resource, Teardown};

/// How the container is networked.
#[derive(Clone, Debug)]
pub(crate) enum Network {
    /// `--network host`.
    Host,
    /// The default bridge, reached at the container's IP.
    Bridge,
    /// The default bridge with `-p host_ip:host_port:container_port`
    /// (127.0.0.1 unless load comes from other hosts).
    Publish {
        host_ip: IpAddr,
        host_port: u16,
        container_port: u16,
    },
    /// `--network container:ID`: another container's network namespace (a
    /// sidecar: nginx-proxy's backend on nginx's own loopback).
    Join(String),
}

pub(crate) struct Request<'a> {
    pub name: String,
    pub image: String,
    pub server: &'a Server,
    /// The deployment directory; the same path inside the container.
    pub dir: &'a Path,
    pub network: Network,
    pub options: &'a ContainerOptions,
    pub cpuset: Option<String>,
    pub run_id: &'a str,
    pub owner: &'a str,
    /// Open-file limit (soft, hard) to give the server: the same as a native
    /// server inherits from tare, so nofile is not a hidden difference (seed
    /// 000's `--ulimit nofile=65535:65535` fixes the same thing by hand:
    /// docs/studies.md, seed 000, "The tuned configuration").
    pub nofile: (u64, u64),
    /// Bind-mount `dir/sock` for Unix transport when the rest is not shared.
    pub share_socket_dir: bool,
    /// Give the container the deployment directory (per `options.storage`);
    /// false for a server that reads no files (nginx-proxy's backend).
    pub files: bool,
}

pub(crate) struct Started {
    pub id: String,
    /// Host pid of the container's first process (the server).
    pub pid: i32,
    pub ip: Option<IpAddr>,
    pub nano_cpus: Option<i64>,
    pub memory: Option<i64>,
    /// Where its root filesystem is mounted on the host (the storage
    /// driver's `MergedDir`): names the fuse-overlayfs daemon serving it.
    pub merged_dir: Option<String>,
}

/// Creates, fills and starts the container `req` asks for, each thing it
/// makes registered on `teardown`.
pub(crate) fn start(req: Request<'_>, teardown: &Teardown) -> Result<Started, DeployError> {
    let labels = HashMap::from([
        (LABEL.to_string(), "1".to_string()),
        (LABEL_RUN.to_string(), req.run_id.to_string()),
        (LABEL_OWNER.to_string(), req.owner.to_string()),
    ]);
    let storage = if req.files {
        req.options.storage
    } else {
        // Nothing to copy: the image's own filesystem, untouched.
        Storage::Image
    };
    let binds = binds(&req, storage, &labels, teardown)?;
    let config = config(&req, storage, binds, labels);
    let name = req.name.clone();
    let id = with(|d| async move {
        let r = d
            .create_container(
                Some(CreateContainerOptions {
                    name: name.as_str(),
                    platform: None,
                }),
                config,
            )
            .await?;
        Ok(r.id)
    })?;
    teardown.push(Resource::Container(id.clone()));
    if req.files && storage != Storage::HostPath {
        copy_dir(&id, req.dir)?;
    }
    run(id)
}

/// The container's mounts for `storage` (a volume made, labelled
/// `labels`, and registered on `teardown`), and the socket directory
/// shared with the host when the rest is not.
fn binds(
    req: &Request<'_>,
    storage: Storage,
    labels: &HashMap<String, String>,
    teardown: &Teardown,
) -> Result<Vec<String>, DeployError> {
    let dir = req.dir.display().to_string();
    let mut binds = Vec::new();
    match storage {
        Storage::HostPath => binds.push(format!("{dir}:{dir}")),
        Storage::Volume => {
            let vol = req.name.clone();
            let (v, l) = (vol.clone(), labels.clone());
            with(|d| async move {
                d.create_volume(CreateVolumeOptions {
                    name: v,
                    labels: l,
                    ..Default::default()
                })
                .await?;
                Ok(())
            })?;
            teardown.push(Resource::Volume(vol.clone()));
            binds.push(format!("{vol}:{dir}"));
        }
        Storage::Image => {}
        Storage::Tmpfs => tmpfs_over_content(req.server)?,
    }
    if req.share_socket_dir && storage != Storage::HostPath {
        binds.push(format!("{dir}/sock:{dir}/sock"));
    }
    Ok(binds)
}

/// Ports exposed on the container, each with its published binding.
type Ports = (PortMap, HashMap<String, HashMap<(), ()>>);

/// The network mode, and for `Publish` the ports published.
fn network(req: &Request<'_>) -> (String, Option<Ports>) {
    match &req.network {
        Network::Host => ("host".to_string(), None),
        Network::Bridge => ("bridge".to_string(), None),
        Network::Join(id) => (format!("container:{id}"), None),
        Network::Publish {
            host_ip,
            host_port,
            container_port,
        } => {
            // A target that answers UDP too (net) has its UDP port
            // published as well: the IBM study's NAT cells are empty
            // because netperf's data port was not (docs/studies.md).
            let protocols: &[&str] = if req.server.target.udp {
                &["tcp", "udp"]
            } else {
                &["tcp"]
            };
            let keys: Vec<String> = protocols
                .iter()
                .map(|p| format!("{container_port}/{p}"))
                .collect();
            let binding = PortBinding {
                // Loopback only by default (ARCHITECTURE.md, "Principles"):
                // on 127.0.0.1 this is docker-proxy; on an address other
                // hosts reach (`DeploySpec::reach`), iptables DNAT.
                host_ip: Some(host_ip.to_string()),
                host_port: Some(host_port.to_string()),
            };
            (
                "bridge".to_string(),
                Some((
                    keys.iter()
                        .map(|k| (k.clone(), Some(vec![binding.clone()])))
                        .collect(),
                    keys.into_iter().map(|k| (k, HashMap::new())).collect(),
                )),
            )
        }
    }
}

/// The container's configuration: its command, user, environment,
/// labels, network, mounts and limits.
fn config(
    req: &Request<'_>,
    storage: Storage,
    binds: Vec<String>,
    labels: HashMap<String, String>,
) -> Config<String> {
    let (network_mode, ports) = network(req);
    let (port_bindings, exposed) = match ports {
        Some((bindings, exposed)) => (Some(bindings), Some(exposed)),
        None => (None, None),
    };
    let mut cmd = vec![req.server.binary.display().to_string()];
    cmd.extend(req.server.args.iter().cloned());
    // A user's image runs its own entrypoint and cmd, which tare read and
    // passes whole (the engine would put the entrypoint before it again).
    let (entrypoint, cmd) = match req.server.root {
        Some(_) => (Some(vec![cmd.remove(0)]), cmd),
        None => (None, cmd),
    };
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let host_config = HostConfig {
        network_mode: Some(network_mode),
        port_bindings,
        binds: (!binds.is_empty()).then_some(binds),
        tmpfs: (storage == Storage::Tmpfs).then(|| {
            HashMap::from([(
                req.server.content_path.display().to_string(),
                "rw,exec".to_string(),
            )])
        }),
        security_opt: req
            .options
            .seccomp_unconfined
            .then(|| vec!["seccomp=unconfined".into()]),
        nano_cpus: req.options.cpus.map(|c| (c * 1e9) as i64),
        memory: req.options.memory.map(to_i64),
        cpuset_cpus: req.cpuset.clone(),
        ulimits: Some(vec![ResourcesUlimits {
            name: Some("nofile".into()),
            soft: Some(to_i64(req.nofile.0)),
            hard: Some(to_i64(req.nofile.1)),
        }]),
        ..Default::default()
    };
    Config {
        image: Some(req.image.clone()),
        entrypoint,
        cmd: Some(cmd),
        user: req.server.run_as.map(|(u, g)| format!("{u}:{g}")),
        env: (!req.server.env.is_empty()).then(|| {
            req.server
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect()
        }),
        working_dir: req.server.workdir.as_ref().map(|w| w.display().to_string()),
        labels: Some(labels),
        exposed_ports: exposed,
        host_config: Some(host_config),
        ..Default::default()
    }
}

/// Copies the deployment directory `dir` into container `id`: into its
/// own filesystem (overlay) or onto the volume mounted at the same path
/// (the archive API writes through mounts).
fn copy_dir(id: &str, dir: &Path) -> Result<(), DeployError> {
    let archive =
        dir_tar(dir).map_err(|e| DeployError::io("archiving the deployment directory", e))?;
    let id2 = id.to_string();
    with(|d| async move {
        d.upload_to_container(
            &id2,
            Some(UploadToContainerOptions {
                path: "/".to_string(),
                ..Default::default()
            }),
            archive.into(),
        )
        .await?;
        Ok(())
    })
}

/// Starts container `id` and reads back what it is: its pid, address,
/// limits and root filesystem.
fn run(id: String) -> Result<Started, DeployError> {
    with(|d| async move {
        d.start_container(&id, None::<StartContainerOptions<String>>)
            .await?;
        let info = d.inspect_container(&id, None).await?;
        let pid = info.state.as_ref().and_then(|s| s.pid).unwrap_or(0) as i32;
        let ns = info.network_settings.as_ref();
        let ip = ns
            .and_then(|n| n.networks.as_ref())
            .and_then(|n| n.values().find_map(|e| e.ip_address.clone()))
            .or_else(|| ns.and_then(|n| n.ip_address.clone()))
            .and_then(|s| s.parse().ok());
        let hc = info.host_config.as_ref();
        Ok(Started {
            id,
            pid,
            ip,
            nano_cpus: hc.and_then(|h| h.nano_cpus).filter(|&n| n > 0),
            memory: hc.and_then(|h| h.memory).filter(|&n| n > 0),
            merged_dir: info
                .graph_driver
                .as_ref()
                .and_then(|g| g.data.get("MergedDir").cloned()),
        })
    })
}

/// A container's exit code as its state says it: 128 + N is how a
/// runtime records its process killed by signal N (`137`: SIGKILL).
pub(crate) fn container_exit(code: i64) -> String {
    match code {
        129..=192 => format!("container exited with code {code} (signal {})", code - 128),
        _ => format!("container exited with code {code}"),
    }
}

/// `storage = tmpfs` mounts a tmpfs over the server's content directory
/// when the container starts, hiding whatever was copied there before: only
/// a target that makes its content itself (the tool agent) can have it.
pub(crate) fn tmpfs_over_content(server: &Server) -> Result<(), DeployError> {
    if server.target.fills_own_content {
        return Ok(());
    }
    Err(DeployError::Invalid(format!(
        "storage = tmpfs: {} serves files copied in before it starts, which a tmpfs mounted at start would hide; use image, volume or host-path",
        server.target.name()
    )))
}

/// The deployment directory as a tar with absolute paths (minus the leading
/// slash), ownership and modes kept (postgres needs its data dir its own).
pub(crate) fn dir_tar(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    append_tree(&mut b, dir)?;
    b.into_inner()
}

fn append_tree(b: &mut tar::Builder<Vec<u8>>, path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::symlink_metadata(path)?;
    let name = path.strip_prefix("/").unwrap_or(path);
    if md.is_dir() {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(md.mode() & 0o7777);
        h.set_uid(md.uid().into());
        h.set_gid(md.gid().into());
        h.set_mtime(md.mtime().max(0) as u64);
        h.set_size(0);
        b.append_data(&mut h, name, std::io::empty())?;
        for e in std::fs::read_dir(path)? {
            append_tree(b, &e?.path())?;
        }
        Ok(())
    } else if md.is_file() {
        super::append_regular(b, name, path)
    } else {
        // Sockets, symlinks: nothing a server needs from the host copy.
        Ok(())
    }
}

/// True while the container runs; else its exit code and last log lines.
pub(crate) fn state(id: &str) -> Result<(), String> {
    let id = id.to_string();
    let r = with(|d| async move {
        let info = d.inspect_container(&id, None).await?;
        let st = info.state.unwrap_or_default();
        if st.running == Some(true) {
            return Ok(Ok(()));
        }
        Ok(Err(container_exit(st.exit_code.unwrap_or(-1))))
    });
    match r {
        Ok(r) => r,
        Err(e) => Err(e.to_string()),
    }
}

/// The last lines the container wrote (for error messages).
pub(crate) fn logs_tail(id: &str, lines: usize) -> String {
    let id = id.to_string();
    with(|d| async move {
        let mut s = d.logs(
            &id,
            Some(LogsOptions::<String> {
                stdout: true,
                stderr: true,
                tail: lines.to_string(),
                ..Default::default()
            }),
        );
        let mut out = String::new();
        while let Some(Ok(chunk)) = s.next().await {
            out.push_str(&chunk.to_string());
        }
        Ok(out)
    })
    .unwrap_or_default()
}
