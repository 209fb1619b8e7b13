//! One server container: created with tare's labels, given its files
//! according to the storage option, started, and described by inspection.

use std::net::IpAddr;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::api::{demux_log, query_escape};
use super::{connect, LABEL, LABEL_OWNER, LABEL_RUN};
use crate::error::DeployError;
use crate::options::{ContainerOptions, Storage};
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

pub(crate) fn start(req: Request<'_>, teardown: &Teardown) -> Result<Started, DeployError> {
    let labels = json!({
        LABEL: "1",
        LABEL_RUN: req.run_id,
        LABEL_OWNER: req.owner,
    });
    let storage = if req.files {
        req.options.storage
    } else {
        // Nothing to copy: the image's own filesystem, untouched.
        Storage::Image
    };
    let binds = binds(&req, storage, &labels, teardown)?;
    let config = config(&req, storage, binds, labels);
    let d = connect()?;
    let created = d.post(
        &format!("/containers/create?name={}", query_escape(&req.name)),
        Some(&config),
    )?;
    let id = created
        .get("Id")
        .and_then(Value::as_str)
        .ok_or_else(|| DeployError::Docker(format!("container create answered {created}")))?
        .to_string();
    teardown.push(Resource::Container(id.clone()));
    if req.files && storage != Storage::HostPath {
        // Into the container's own filesystem (overlay) or onto the volume
        // mounted at the same path: the archive API writes through mounts.
        let archive = dir_tar(req.dir)
            .map_err(|e| DeployError::io("archiving the deployment directory", e))?;
        d.send_tar(
            "PUT",
            &format!("/containers/{id}/archive?path=%2F"),
            &archive,
            std::time::Duration::from_secs(600),
        )?;
    }
    d.post(&format!("/containers/{id}/start"), None)?;
    let info = d.get(&format!("/containers/{id}/json"))?;
    Ok(started(id, &info))
}

/// The host paths and volumes the container mounts; a volume is created
/// (and given to `teardown`) here.
fn binds(
    req: &Request<'_>,
    storage: Storage,
    labels: &Value,
    teardown: &Teardown,
) -> Result<Vec<String>, DeployError> {
    let dir = req.dir.display().to_string();
    let mut binds = Vec::new();
    match storage {
        Storage::HostPath => binds.push(format!("{dir}:{dir}")),
        Storage::Volume => {
            let vol = req.name.clone();
            connect()?.post(
                "/volumes/create",
                Some(&json!({ "Name": vol, "Labels": labels })),
            )?;
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

/// The network mode, port bindings and exposed ports of `network`.
fn network(req: &Request<'_>) -> (String, Option<Value>, Option<Value>) {
    match &req.network {
        Network::Host => ("host".to_string(), None, None),
        Network::Bridge => ("bridge".to_string(), None, None),
        Network::Join(id) => (format!("container:{id}"), None, None),
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
            // Loopback only by default (ARCHITECTURE.md, "Principles"): on
            // 127.0.0.1 this is docker-proxy; on an address other hosts
            // reach (`DeploySpec::reach`), iptables DNAT.
            let binding = json!([{
                "HostIp": host_ip.to_string(),
                "HostPort": host_port.to_string(),
            }]);
            let mut bindings = Map::new();
            let mut exposed = Map::new();
            for p in protocols {
                let key = format!("{container_port}/{p}");
                bindings.insert(key.clone(), binding.clone());
                exposed.insert(key, json!({}));
            }
            (
                "bridge".to_string(),
                Some(Value::Object(bindings)),
                Some(Value::Object(exposed)),
            )
        }
    }
}

/// The container's create request (the engine's `ContainerConfig` with its
/// `HostConfig`).
fn config(req: &Request<'_>, storage: Storage, binds: Vec<String>, labels: Value) -> Value {
    let (network_mode, port_bindings, exposed) = network(req);
    let mut cmd = vec![req.server.binary.display().to_string()];
    cmd.extend(req.server.args.iter().cloned());
    // A user's image runs its own entrypoint and cmd, which tare read and
    // passes whole (the engine would put the entrypoint before it again).
    let entrypoint = req.server.root.as_ref().map(|_| vec![cmd.remove(0)]);
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut host = Map::new();
    host.insert("NetworkMode".into(), json!(network_mode));
    host.insert(
        "Ulimits".into(),
        json!([{
            "Name": "nofile",
            "Soft": to_i64(req.nofile.0),
            "Hard": to_i64(req.nofile.1),
        }]),
    );
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            host.insert(key.into(), v);
        }
    };
    set("PortBindings", port_bindings);
    set("Binds", (!binds.is_empty()).then(|| json!(binds)));
    set(
        "Tmpfs",
        (storage == Storage::Tmpfs)
            .then(|| json!({ req.server.content_path.display().to_string(): "rw,exec" })),
    );
    set(
        "SecurityOpt",
        req.options
            .seccomp_unconfined
            .then(|| json!(["seccomp=unconfined"])),
    );
    set(
        "NanoCpus",
        req.options.cpus.map(|c| json!((c * 1e9) as i64)),
    );
    set("Memory", req.options.memory.map(|m| json!(to_i64(m))));
    set("CpusetCpus", req.cpuset.as_ref().map(|c| json!(c)));
    let mut config = Map::new();
    config.insert("Image".into(), json!(req.image));
    config.insert("Cmd".into(), json!(cmd));
    config.insert("Labels".into(), labels);
    config.insert("HostConfig".into(), Value::Object(host));
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            config.insert(key.into(), v);
        }
    };
    set("Entrypoint", entrypoint.map(|e| json!(e)));
    set(
        "User",
        req.server.run_as.map(|(u, g)| json!(format!("{u}:{g}"))),
    );
    set(
        "Env",
        (!req.server.env.is_empty()).then(|| {
            json!(req
                .server
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>())
        }),
    );
    set(
        "WorkingDir",
        req.server
            .workdir
            .as_ref()
            .map(|w| json!(w.display().to_string())),
    );
    set("ExposedPorts", exposed);
    Value::Object(config)
}

/// What the inspection of a started container says tare needs.
fn started(id: String, info: &Value) -> Started {
    let pid = info
        .pointer("/State/Pid")
        .and_then(Value::as_i64)
        .unwrap_or(0) as i32;
    let ns = info.get("NetworkSettings");
    let ip = ns
        .and_then(|n| n.get("Networks"))
        .and_then(Value::as_object)
        .and_then(|n| {
            n.values()
                .find_map(|e| e.get("IPAddress").and_then(Value::as_str))
                .filter(|a| !a.is_empty())
        })
        .or_else(|| {
            ns.and_then(|n| n.get("IPAddress"))
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
        })
        .and_then(|s| s.parse().ok());
    let positive = |key: &str| {
        info.pointer(&format!("/HostConfig/{key}"))
            .and_then(Value::as_i64)
            .filter(|&n| n > 0)
    };
    Started {
        id,
        pid,
        ip,
        nano_cpus: positive("NanoCpus"),
        memory: positive("Memory"),
        merged_dir: info
            .pointer("/GraphDriver/Data/MergedDir")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
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
        super::api::append_regular(b, name, path)
    } else {
        // Sockets, symlinks: nothing a server needs from the host copy.
        Ok(())
    }
}

/// True while the container runs; else its exit code and last log lines.
pub(crate) fn state(id: &str) -> Result<(), String> {
    let info = connect()
        .map_err(|e| e.to_string())?
        .get(&format!("/containers/{}/json", query_escape(id)))
        .map_err(|e| DeployError::from(e).to_string())?;
    if info.pointer("/State/Running").and_then(Value::as_bool) == Some(true) {
        return Ok(());
    }
    Err(container_exit(
        info.pointer("/State/ExitCode")
            .and_then(Value::as_i64)
            .unwrap_or(-1),
    ))
}

/// The last lines the container wrote (for error messages).
pub(crate) fn logs_tail(id: &str, lines: usize) -> String {
    let path = format!(
        "/containers/{}/logs?stdout=true&stderr=true&tail={lines}",
        query_escape(id)
    );
    connect()
        .ok()
        .and_then(|d| d.raw_get(&path).ok())
        .map(|bytes| demux_log(&bytes))
        .unwrap_or_default()
}
