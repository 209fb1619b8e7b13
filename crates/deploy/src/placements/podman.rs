//! The Podman mechanism (rootful): each server a container made from the
//! image tare builds for Docker from the host's binary, imported into
//! Podman's store under the same content tag, given the deployment's files
//! as the storage option says. Podman has no daemon; tare drives the
//! `podman` command line and reads its `--format json`. The Podman
//! placements differ only in their [`Net`].

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};

use serde_json::Value;
use tare_engine::Endpoint;

use super::{Context, Described, Mechanism, Role, Running, Site};
use crate::cleanup::CleanupReport;
use crate::docker::{image, LABEL, LABEL_OWNER, LABEL_RUN};
use crate::error::DeployError;
use crate::procfs;
use crate::spec::{Storage, Transport};
use crate::targets::{self, Listen, Server};
use crate::teardown::{Resource, Undo};

pub(crate) struct Podman;

pub(crate) static PODMAN: Podman = Podman;

/// What to install when the binary is missing.
const INSTALL: &str =
    "install it (Debian: apt-get install podman netavark aardvark-dns; or scripts/setup.sh)";

impl Mechanism for Podman {
    fn name(&self) -> &'static str {
        "podman"
    }

    fn available(&self) -> Result<String, String> {
        let v = version()?;
        // SAFETY: plain syscall.
        let uid = unsafe { libc::geteuid() };
        if uid != 0 {
            return Err(format!(
                "Podman {v} is installed but the rootful Podman placements need root (tare runs as uid {uid})"
            ));
        }
        let info = info().map_err(|e| e.to_string())?;
        Ok(format!(
            "Podman {v} (rootful, network backend {})",
            network_backend(&info)
        ))
    }

    fn facts(&self) -> Vec<(String, String)> {
        let v = match version() {
            Ok(v) => v,
            Err(e) => return vec![("podman".into(), e)],
        };
        let mut facts = vec![("podman".into(), v)];
        if let Ok(info) = info() {
            facts.push(("podman network".into(), network_backend(&info)));
            facts.push(("podman storage driver".into(), storage_driver(&info)));
        }
        facts
    }

    /// As for Docker (`container::Docker::warnings`): a storage driver that
    /// is not the kernel's overlayfs puts a user-space or copying filesystem
    /// under every file a container serves from its image.
    fn warnings(&self) -> Vec<String> {
        if version().is_err() {
            return Vec::new();
        }
        let Ok(info) = info() else {
            return Vec::new();
        };
        match storage_driver(&info).as_str() {
            d @ ("fuse-overlayfs" | "vfs" | "devicemapper" | "btrfs" | "zfs") => vec![format!(
                "Podman's storage driver is {d}, not the kernel's overlay: a container serving files from its image pays for it (measured here with Docker on fuse-overlayfs: 0.32x native); vary the storage factor (storage = [\"image\", \"volume\"]) to measure it, or use volume or host-path to take it out (docs/experiments.md)"
            )],
            _ => Vec::new(),
        }
    }

    fn cleanup(&self, report: &mut CleanupReport) {
        // No Podman here: nothing of tare's can be in its store.
        if version().is_err() {
            return;
        }
        let owner_filter = format!("label={LABEL_OWNER}");
        let containers = match podman(&["ps", "-a", "--filter", &owner_filter, "--format", "json"])
        {
            Ok(out) => out,
            Err(e) => return report.notes.push(e.to_string()),
        };
        for c in labelled(&containers, "Names") {
            if c.owner.as_deref().is_some_and(procfs::owner_alive) {
                report.live.push(format!("podman container {}", c.name));
                continue;
            }
            match remove_container(&c.id) {
                Ok(()) => report.removed.push(format!("podman container {}", c.name)),
                Err(e) => report
                    .notes
                    .push(format!("podman container {}: {e}", c.name)),
            }
        }
        let volumes = match podman(&[
            "volume",
            "ls",
            "--filter",
            &owner_filter,
            "--format",
            "json",
        ]) {
            Ok(out) => out,
            Err(e) => return report.notes.push(e.to_string()),
        };
        for v in labelled(&volumes, "Name") {
            if v.owner.as_deref().is_some_and(procfs::owner_alive) {
                report.live.push(format!("podman volume {}", v.name));
                continue;
            }
            match remove_volume(&v.name) {
                Ok(()) => report.removed.push(format!("podman volume {}", v.name)),
                Err(e) => report.notes.push(format!("podman volume {}: {e}", v.name)),
            }
        }
    }
}

/// Runs `podman ARGS`; its stdout, or an error with its last stderr line.
fn podman(args: &[&str]) -> Result<String, DeployError> {
    podman_with_input(args, None)
}

fn podman_with_input(args: &[&str], input: Option<&[u8]>) -> Result<String, DeployError> {
    let what = format!("podman {}", args.first().copied().unwrap_or(""));
    let mut child = Command::new("podman")
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                DeployError::Podman(format!("the podman command is not installed: {INSTALL}"))
            }
            _ => DeployError::io(format!("running {what}"), e),
        })?;
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        // A write error shows up as podman's own failure below.
        let _ = stdin.write_all(data);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| DeployError::io(format!("running {what}"), e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.contains("level=warning"))
            .unwrap_or("")
            .trim()
            .trim_start_matches("Error: ")
            .to_string();
        return Err(DeployError::Podman(format!("{what}: {last}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Podman's version, or the one line naming what to install.
fn version() -> Result<String, String> {
    match podman(&["version", "--format", "{{.Client.Version}}"]) {
        Ok(v) => Ok(v.trim().to_string()),
        Err(e) => Err(e.to_string()),
    }
}

fn info() -> Result<Value, DeployError> {
    let out = podman(&["info", "--format", "json"])?;
    serde_json::from_str(&out)
        .map_err(|e| DeployError::Podman(format!("podman info: unreadable JSON: {e}")))
}

/// `netavark` or `cni`.
fn network_backend(info: &Value) -> String {
    info.pointer("/host/networkBackend")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string()
}

/// `overlay`, `vfs`... (with `fuse-overlayfs` when overlay runs through it).
fn storage_driver(info: &Value) -> String {
    let driver = info
        .pointer("/store/graphDriverName")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let fuse = info
        .pointer("/store/graphOptions/overlay.mount_program/Executable")
        .and_then(Value::as_str)
        .is_some_and(|p| p.contains("fuse-overlayfs"));
    if driver == "overlay" && fuse {
        "fuse-overlayfs".into()
    } else {
        driver.into()
    }
}

/// A tare container or volume in Podman's store.
struct Labelled {
    id: String,
    name: String,
    owner: Option<String>,
}

/// Entries of a `podman ps/volume ls --format json` listing; `name_key` is
/// `Names` (a list) for containers, `Name` for volumes.
fn labelled(json: &str, name_key: &str) -> Vec<Labelled> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(json) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|i| {
            let name = match &i[name_key] {
                Value::Array(n) => n.first().and_then(Value::as_str).unwrap_or(""),
                v => v.as_str().unwrap_or(""),
            }
            .to_string();
            Labelled {
                id: i["Id"].as_str().unwrap_or(&name).to_string(),
                owner: i["Labels"][LABEL_OWNER].as_str().map(str::to_string),
                name,
            }
        })
        .collect()
}

fn remove_container(id: &str) -> Result<(), DeployError> {
    podman(&["rm", "--force", "--volumes", "--ignore", "--time", "2", id]).map(drop)
}

fn remove_volume(name: &str) -> Result<(), DeployError> {
    match podman(&["volume", "rm", "--force", name]) {
        Err(DeployError::Podman(e)) if e.contains("no such volume") => Ok(()),
        r => r.map(drop),
    }
}

/// A Podman container or volume a deployment made, removed on teardown.
enum Made {
    Container(String),
    Volume(String),
}

impl Undo for Made {
    fn undo(self: Box<Self>) -> Result<(), DeployError> {
        match *self {
            Made::Container(id) => remove_container(&id),
            Made::Volume(name) => remove_volume(&name),
        }
    }
}

/// The image for `server` in Podman's store: the recipe `tare image build`
/// uses for Docker, imported under the same content tag (built once per
/// binary; the tag says which binary, so a cached tag is the same image).
fn ensure_image(
    server_kind: crate::spec::TargetKind,
    binary: &std::path::Path,
) -> Result<String, DeployError> {
    let (tag, sha) = image::tag_for(server_kind, binary)?;
    if podman(&["image", "exists", &tag]).is_ok() {
        return Ok(tag);
    }
    let failed = |reason: String| DeployError::ImageBuild {
        target: server_kind.get().image_name().into(),
        reason,
    };
    let recipe = image::recipe(server_kind, binary, &sha).map_err(failed)?;
    let mut args: Vec<String> = vec!["import".into(), "--quiet".into()];
    for c in &recipe.changes {
        args.push("--change".into());
        args.push(c.clone());
    }
    args.push("-".into());
    args.push(tag.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    podman_with_input(&args, Some(&recipe.context)).map_err(|e| failed(e.to_string()))?;
    Ok(tag)
}

/// How a Podman placement networks its server container: as Docker's.
pub(super) use super::container::Net;

/// The containers of one deployment.
pub(super) struct PodmanSite {
    net: Net,
    image: String,
    /// With `Net::Publish`: the host port.
    host_port: Option<u16>,
    /// The server's container, which a companion joins.
    server: Option<String>,
}

impl PodmanSite {
    pub(super) fn create(cx: &Context<'_>, net: Net) -> Result<Box<dyn Site>, DeployError> {
        PODMAN
            .available()
            .map_err(|reason| DeployError::PlacementUnavailable {
                placement: cx.spec.placement.name().to_string(),
                reason,
            })?;
        let spec = cx.spec;
        let image = match &spec.image {
            Some(i) => i.clone(),
            None => {
                let binary = targets::binary(&spec.target)?;
                ensure_image(spec.target.kind, &binary)?
            }
        };
        let host_port = net.host_port()?;
        Ok(Box::new(PodmanSite {
            net,
            image,
            host_port,
            server: None,
        }))
    }
}

impl Site for PodmanSite {
    fn listen(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        self.net.listen(port)
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
        // Named as its directory, as Docker's are: tare-<run>-<pid>-<n>.
        let dir_name = cx
            .dir
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("tare-unnamed");
        let dir = cx.dir.display().to_string();
        let mut args: Vec<String> = vec!["create".into()];
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        push(&["--label", &format!("{LABEL}=1")]);
        push(&["--label", &format!("{LABEL_RUN}={}", spec.run_id)]);
        push(&["--label", &format!("{LABEL_OWNER}={}", cx.owner)]);
        // Podman's default stop handling would leave conmon waiting on a
        // server that ignores SIGTERM; tare removes with a short timeout.
        push(&["--stop-timeout", "2"]);
        let (name, image, storage, files) = match role {
            Role::Server => {
                match (self.net, listen) {
                    (Net::Host, _) => push(&["--network", "host"]),
                    (Net::Bridge, _) | (Net::Publish, Listen::Unix(_)) => {
                        push(&["--network", "bridge"])
                    }
                    (Net::Publish, Listen::Tcp(a)) => {
                        push(&["--network", "bridge"]);
                        // Loopback only by default (ARCHITECTURE.md, "Principles").
                        push(&[
                            "--publish",
                            &format!(
                                "127.0.0.1:{}:{}",
                                self.host_port.unwrap_or_default(),
                                a.port()
                            ),
                        ]);
                    }
                }
                let c = &spec.container;
                if let Some(cpus) = c.cpus {
                    push(&["--cpus", &cpus.to_string()]);
                }
                if let Some(m) = c.memory {
                    push(&["--memory", &m.to_string()]);
                }
                (
                    dir_name.to_string(),
                    self.image.clone(),
                    spec.container.storage,
                    true,
                )
            }
            // Beside the server: on the host network with it, or in its
            // network namespace (a sidecar); the limits are the server's alone.
            Role::Companion => {
                match (self.net, &self.server) {
                    (Net::Host, _) => push(&["--network", "host"]),
                    (_, Some(id)) => push(&["--network", &format!("container:{id}")]),
                    (_, None) => {
                        return Err(DeployError::Invalid(
                            "a companion container starts after its server".into(),
                        ))
                    }
                }
                let image = ensure_image(server.kind, &server.binary)?;
                (
                    format!("{dir_name}-{}", role.name()),
                    image,
                    Storage::Image,
                    false,
                )
            }
        };
        if spec.container.seccomp_unconfined {
            push(&["--security-opt", "seccomp=unconfined"]);
        }
        if let Some(cpus) = &spec.server_cpus {
            push(&["--cpuset-cpus", cpus]);
        }
        let (soft, hard) = super::container::own_nofile();
        push(&["--ulimit", &format!("nofile={soft}:{hard}")]);
        // A native server inherits tare's nproc. Podman's runtime runs
        // with nproc no higher than the kernel's pid_max and, without
        // CAP_SYS_RESOURCE (inside another container), cannot raise it:
        // runc fails with "error setting rlimit type 6". Above pid_max the
        // limit cannot bind anyway, so the same effective limit is tare's
        // capped at pid_max.
        let (soft, hard) = own_nproc();
        let cap = pid_max();
        let (soft, hard) = (soft.min(cap), hard.min(cap));
        push(&["--ulimit", &format!("nproc={soft}:{hard}")]);
        if let Some((u, g)) = server.run_as {
            push(&["--user", &format!("{u}:{g}")]);
        }
        match storage {
            Storage::HostPath => push(&["--volume", &format!("{dir}:{dir}")]),
            Storage::Volume => {
                podman(&[
                    "volume",
                    "create",
                    "--label",
                    &format!("{LABEL}=1"),
                    "--label",
                    &format!("{LABEL_RUN}={}", spec.run_id),
                    "--label",
                    &format!("{LABEL_OWNER}={}", cx.owner),
                    &name,
                ])?;
                cx.teardown
                    .push(Resource::Undo(Box::new(Made::Volume(name.clone()))));
                push(&["--volume", &format!("{name}:{dir}")]);
            }
            Storage::Image => {}
            Storage::Tmpfs => {
                crate::docker::container::tmpfs_over_content(server)?;
                push(&[
                    "--tmpfs",
                    &format!("{}:rw,exec", server.content_path.display()),
                ]);
            }
        }
        if role == Role::Server && spec.transport == Transport::Unix && storage != Storage::HostPath
        {
            push(&["--volume", &format!("{dir}/sock:{dir}/sock")]);
        }
        push(&["--name", &name, &image]);
        push(&[&server.binary.display().to_string()]);
        args.extend(server.args.iter().cloned());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let id = podman(&argv)?.trim().to_string();
        cx.teardown
            .push(Resource::Undo(Box::new(Made::Container(id.clone()))));
        if files && storage != Storage::HostPath {
            // Into the container's own filesystem, or onto the volume mounted
            // at the same path: the same tar Docker's archive upload gets,
            // ownership and modes kept.
            let archive = crate::docker::container::dir_tar(cx.dir)
                .map_err(|e| DeployError::io("archiving the deployment directory", e))?;
            podman_with_input(&["cp", "-", &format!("{id}:/")], Some(&archive))?;
        }
        podman(&["start", &id])?;
        let started = inspect(&id)?;
        if role == Role::Server {
            self.server = Some(id.clone());
        }
        Ok(Box::new(PodmanRun {
            id,
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
                    DeployError::Podman("the container has no bridge IP address".into())
                })?;
                Endpoint::Tcp(SocketAddr::new(ip, a.port()))
            }
            (Listen::Tcp(_), Net::Publish) => Endpoint::Tcp(SocketAddr::new(
                Ipv4Addr::LOCALHOST.into(),
                self.host_port.unwrap_or_default(),
            )),
        })
    }
}

/// The process-count limit (soft, hard) tare runs with.
fn own_nproc() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is valid for writes.
    unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) };
    (r.rlim_cur, r.rlim_max)
}

/// The kernel's highest pid plus one (`/proc/sys/kernel/pid_max`).
fn pid_max() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

/// What inspecting a started container says.
struct Inspected {
    pid: i32,
    ip: Option<IpAddr>,
    nano_cpus: Option<i64>,
    memory: Option<i64>,
}

fn inspect_json(id: &str) -> Result<Value, DeployError> {
    let out = podman(&["container", "inspect", "--format", "json", id])?;
    match serde_json::from_str::<Value>(&out) {
        Ok(Value::Array(mut v)) if !v.is_empty() => Ok(v.swap_remove(0)),
        _ => Err(DeployError::Podman(format!(
            "podman inspect {id}: unreadable JSON"
        ))),
    }
}

fn inspect(id: &str) -> Result<Inspected, DeployError> {
    let v = inspect_json(id)?;
    let ns = &v["NetworkSettings"];
    let ip = ns["Networks"]
        .as_object()
        .and_then(|n| n.values().find_map(|e| e["IPAddress"].as_str()))
        .filter(|s| !s.is_empty())
        .or_else(|| ns["IPAddress"].as_str())
        .and_then(|s| s.parse().ok());
    let hc = &v["HostConfig"];
    Ok(Inspected {
        pid: v["State"]["Pid"].as_i64().unwrap_or(0) as i32,
        ip,
        nano_cpus: hc["NanoCpus"].as_i64().filter(|&n| n > 0),
        memory: hc["Memory"].as_i64().filter(|&n| n > 0),
    })
}

/// A started Podman container.
struct PodmanRun {
    id: String,
    started: Inspected,
    image: String,
    storage: Storage,
}

impl Running for PodmanRun {
    fn pid(&self) -> i32 {
        self.started.pid
    }

    fn address(&self) -> Option<IpAddr> {
        self.started.ip
    }

    fn alive(&self) -> Result<(), String> {
        let v = inspect_json(&self.id).map_err(|e| e.to_string())?;
        if v["State"]["Running"].as_bool() == Some(true) {
            return Ok(());
        }
        Err(format!(
            "container exited with code {}",
            v["State"]["ExitCode"].as_i64().unwrap_or(-1)
        ))
    }

    fn log_tail(&self, lines: usize) -> String {
        let out = Command::new("podman")
            .args(["logs", "--tail", &lines.to_string(), &self.id])
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) => format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(_) => String::new(),
        }
    }

    fn scope(&self) -> crate::Scope {
        crate::Scope::CgroupOf(self.started.pid as u32)
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

    /// Its conmon (`-c <container>`), Podman's shim.
    fn helpers(&self) -> Vec<crate::helpers::Helper> {
        crate::helpers::find("conmon", |a| crate::helpers::flag_is(a, "-c", &self.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_name_owner_and_id() {
        let ps = r#"[{"Id":"abc","Names":["tare-x-1-0"],"Labels":{"tare.owner":"12:34"}},
                     {"Id":"def","Names":["other"],"Labels":null}]"#;
        let l = labelled(ps, "Names");
        assert_eq!(l.len(), 2);
        assert_eq!(
            (l[0].id.as_str(), l[0].name.as_str()),
            ("abc", "tare-x-1-0")
        );
        assert_eq!(l[0].owner.as_deref(), Some("12:34"));
        assert_eq!(l[1].owner, None);
        let vols = r#"[{"Name":"tare-x-1-0","Labels":{"tare.owner":"1:2"}}]"#;
        let v = labelled(vols, "Name");
        assert_eq!(
            (v[0].id.as_str(), v[0].name.as_str()),
            ("tare-x-1-0", "tare-x-1-0")
        );
        assert!(labelled("not json", "Name").is_empty());
    }

    #[test]
    fn storage_driver_says_fuse_overlayfs() {
        let info: Value = serde_json::from_str(
            r#"{"store":{"graphDriverName":"overlay","graphOptions":{"overlay.mount_program":{"Executable":"/usr/bin/fuse-overlayfs"}}}}"#,
        )
        .unwrap();
        assert_eq!(storage_driver(&info), "fuse-overlayfs");
        let info: Value = serde_json::from_str(r#"{"store":{"graphDriverName":"vfs"}}"#).unwrap();
        assert_eq!(storage_driver(&info), "vfs");
    }
}
