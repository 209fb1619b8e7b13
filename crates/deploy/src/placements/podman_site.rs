//! The containers of one Podman deployment, rootful or rootless: made from
//! the image tare builds from the host's binary (imported into the store of
//! whoever runs `podman`), or a user's image imported from its exported
//! files, given the deployment's files as the storage
//! option says, with Docker's labels, names, limits and seccomp options.
//! The Podman placements differ only in their [`PodNet`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use serde_json::Value;
use tare_engine::cpu::CpuList;
use tare_engine::Endpoint;

use super::podman::{
    ensure_image, import_rootfs, remove_container, remove_image, remove_volume, Cli,
};
use super::podman_rootful::PODMAN;
use super::podman_user::RootlessUser;
use super::{Context, Mechanism, Role, Running, Site};
use crate::docker::{LABEL, LABEL_OWNER, LABEL_RUN};
use crate::error::DeployError;
use crate::facts::Described;
use crate::options::{Storage, Transport};
use crate::spec::DeploySpec;
use crate::targets::image::RootFs;
use crate::targets::{self, Listen, Server};
use crate::teardown::{Resource, Undo};

/// How a rootful Podman placement networks its server container: as Docker's.
pub(super) use super::container::Net;

/// How a Podman placement networks its server container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PodNet {
    /// Rootful: host network, netavark's bridge, or a port it publishes by DNAT.
    Rootful(Net),
    /// Rootless: a port published on 127.0.0.1 through a user-space forwarder.
    Rootless(Forwarder),
}

/// What carries a rootless container's published port from the host's
/// loopback into the container (docs/placements.md, "Rootless Podman").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Forwarder {
    /// slirp4netns network, `port_handler=rootlesskit`: Podman 4's default,
    /// the `rootlessport` process accepts on the host and copies each
    /// connection into the namespace.
    Rootlessport,
    /// slirp4netns network, `port_handler=slirp4netns`: slirp4netns's own
    /// forwarder, through its user-space TCP/IP stack.
    Slirp4netns,
    /// pasta (passt's namespace mode) with its own port forwarding: tare
    /// attaches it to a `--network none` container as Podman 4.4+ does with
    /// `--network pasta` (Debian 12's Podman 4.3 has no pasta mode).
    Pasta,
}

impl PodNet {
    /// The shape of its addresses: a rootless server is always reached at a
    /// port published on loopback.
    fn shape(self) -> Net {
        match self {
            PodNet::Rootful(n) => n,
            PodNet::Rootless(_) => Net::Publish,
        }
    }
}

/// The containers of one deployment.
pub(super) struct PodmanSite {
    cli: Cli,
    net: PodNet,
    image: String,
    /// With a published port: the host port.
    host_port: Option<u16>,
    /// The server's container, which a companion joins.
    server: Option<String>,
}

impl PodmanSite {
    /// A rootful site (podman-host, podman-bridge, podman-publish).
    pub(super) fn create(cx: &Context<'_>, net: Net) -> Result<Box<dyn Site>, DeployError> {
        PODMAN
            .available()
            .map_err(|reason| DeployError::PlacementUnavailable {
                placement: cx.spec.placement.name().to_string(),
                reason,
            })?;
        PodmanSite::make(cx, Cli::Rootful, PodNet::Rootful(net))
    }

    /// A site whose `podman` commands `cli` runs.
    pub(super) fn make(
        cx: &Context<'_>,
        cli: Cli,
        net: PodNet,
    ) -> Result<Box<dyn Site>, DeployError> {
        let spec = cx.spec;
        let image = match &spec.image {
            Some(i) => i.clone(),
            // A user's image: imported from its exported files when its
            // server starts (`import`).
            None if spec.target.target.oci.is_some() => String::new(),
            None => {
                let binary = targets::binary(&spec.target.target)?;
                ensure_image(&cli, &spec.target.target, &binary)?
            }
        };
        let host_port = net.shape().host_port()?;
        Ok(Box::new(PodmanSite {
            cli,
            net,
            image,
            host_port,
            server: None,
        }))
    }

    /// A user's image's files (`root`) in this site's store, labelled
    /// with the deployment's owner and run, named as the deployment
    /// directory, removed with it.
    fn import(&mut self, cx: &Context<'_>, root: &RootFs, name: &str) -> Result<(), DeployError> {
        let tag = format!("localhost/tare/image:{name}");
        // Registered first: a half-imported image goes too.
        cx.teardown.push(Resource::Undo(Box::new(Made::Image(
            self.cli.clone(),
            tag.clone(),
        ))));
        let run = cx.spec.run_id.as_str();
        import_rootfs(
            &self.cli,
            &root.dir,
            &tag,
            &[(LABEL, "1"), (LABEL_RUN, run), (LABEL_OWNER, cx.owner)],
        )?;
        self.image = tag;
        Ok(())
    }

    fn rootless(&self) -> Option<&Arc<RootlessUser>> {
        match &self.cli {
            Cli::Rootless(u) => Some(u),
            Cli::Rootful => None,
        }
    }
}

/// A Podman container or volume a deployment made, removed on teardown.
enum Made {
    Container(Cli, String),
    Volume(Cli, String),
    Image(Cli, String),
}

impl Undo for Made {
    fn undo(self: Box<Self>) -> Result<(), DeployError> {
        match *self {
            Made::Container(cli, id) => remove_container(&cli, &id),
            Made::Volume(cli, name) => remove_volume(&cli, &name),
            Made::Image(cli, tag) => remove_image(&cli, &tag),
        }
    }
}

impl Site for PodmanSite {
    fn listen(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        self.net.shape().listen(port)
    }

    fn companion(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        self.net.shape().companion(port)
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
        if let (Role::Server, Some(root), true) = (role, &server.root, self.image.is_empty()) {
            self.import(cx, root, dir_name)?;
        }
        let rootless = self.rootless().cloned();
        // The server's user inside the container, and who that is on the
        // host: a rootless container's ids are the user's subordinate ones,
        // so files it must write are given to that host id.
        let host_ids = host_ids(rootless.as_ref(), server)?;
        let mut args: Vec<String> = vec!["create".into()];
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        push(&["--label", &format!("{LABEL}=1")]);
        push(&["--label", &format!("{LABEL_RUN}={}", spec.run_id)]);
        push(&["--label", &format!("{LABEL_OWNER}={}", cx.owner)]);
        // Podman's default stop handling would leave conmon waiting on a
        // server that ignores SIGTERM; tare removes with a short timeout.
        push(&["--stop-timeout", "2"]);
        let (name, image, storage, files) =
            self.role_args(&mut args, server, listen, role, spec, dir_name)?;
        let pin = limit_args(&mut args, spec, server, rootless.is_some())?;
        self.storage_args(&mut args, cx, server, role, storage, &name, host_ids)?;
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        push(&["--name", &name, &image]);
        push(&[&server.binary.display().to_string()]);
        args.extend(server.args.iter().cloned());
        let copy = files && storage != Storage::HostPath;
        let id = match self.create_container(cx, &args, copy) {
            // tare's image cache is shared by every run on the machine; a
            // `tare cleanup` beside this run may remove an image between
            // its import and this create (Podman keeps only images a
            // container uses). Imported again, once.
            Err(e)
                if e.to_string().contains("image not known") && self.is_cached(server, &image) =>
            {
                ensure_image(&self.cli, &server.target, &server.binary)?;
                self.create_container(cx, &args, copy)?
            }
            created => created?,
        };
        self.cli.run(&["start", &id])?;
        let started = inspect(&self.cli, &id)?;
        if let Some(cpus) = &pin {
            pin_tree(started.pid, cpus);
        }
        if let (Some(user), PodNet::Rootless(Forwarder::Pasta), Role::Server, Listen::Tcp(a)) =
            (&rootless, self.net, role, listen)
        {
            super::podman_pasta::attach_pasta(
                user,
                cx,
                started.pid,
                self.host_port.unwrap_or_default(),
                a.port(),
            )?;
        }
        if role == Role::Server {
            self.server = Some(id.clone());
        }
        // A rootless container on cgroup v1 (or without delegation) stays
        // in its caller's cgroup, which holds tare itself: then the
        // monitor follows its process tree instead.
        let own_cgroup = rootless.is_none() || cgroup_differs(started.pid);
        Ok(Box::new(PodmanRun {
            cli: self.cli.clone(),
            id,
            started,
            image,
            storage,
            pin,
            own_cgroup,
            forwarded: self
                .host_port
                .filter(|_| rootless.is_some() && role == Role::Server),
        }))
    }

    fn endpoint(&self, listen: &Listen, server: &dyn Running) -> Result<Endpoint, DeployError> {
        Ok(match (listen, self.net.shape()) {
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

/// Gives `path` and everything under it to `(uid, gid)`.
impl PodmanSite {
    /// The arguments that depend on which server of the deployment this
    /// is: its network (the server's by the placement, a companion beside
    /// it) and limits; its container's name, image and storage, and
    /// whether the deployment directory is copied in.
    fn role_args(
        &self,
        args: &mut Vec<String>,
        server: &Server,
        listen: &Listen,
        role: Role,
        spec: &DeploySpec,
        dir_name: &str,
    ) -> Result<(String, String, Storage, bool), DeployError> {
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        let publish = |host: Option<u16>, a: &SocketAddr| {
            // Loopback only by default (ARCHITECTURE.md, "Principles").
            format!("127.0.0.1:{}:{}", host.unwrap_or_default(), a.port())
        };
        Ok(match role {
            Role::Server => {
                match (self.net, listen) {
                    (PodNet::Rootful(Net::Host), _) => push(&["--network", "host"]),
                    (PodNet::Rootful(Net::Bridge), _)
                    | (PodNet::Rootful(Net::Publish), Listen::Unix(_)) => {
                        push(&["--network", "bridge"])
                    }
                    (PodNet::Rootful(Net::Publish), Listen::Tcp(a)) => {
                        push(&["--network", "bridge"]);
                        push(&["--publish", &publish(self.host_port, a)]);
                    }
                    // Its own empty network namespace; pasta joins it below.
                    (PodNet::Rootless(Forwarder::Pasta), _) => push(&["--network", "none"]),
                    (PodNet::Rootless(_), Listen::Unix(_)) => push(&["--network", "slirp4netns"]),
                    // The port handler named, not left to the version's default.
                    (PodNet::Rootless(f), Listen::Tcp(a)) => {
                        let handler = match f {
                            Forwarder::Slirp4netns => "slirp4netns",
                            _ => "rootlesskit",
                        };
                        push(&["--network", &format!("slirp4netns:port_handler={handler}")]);
                        push(&["--publish", &publish(self.host_port, a)]);
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
                    (PodNet::Rootful(Net::Host), _) => push(&["--network", "host"]),
                    (_, Some(id)) => push(&["--network", &format!("container:{id}")]),
                    (_, None) => {
                        return Err(DeployError::Invalid(
                            "a companion container starts after its server".into(),
                        ))
                    }
                }
                let image = ensure_image(&self.cli, &server.target, &server.binary)?;
                (
                    format!("{dir_name}-{}", role.name()),
                    image,
                    Storage::Image,
                    false,
                )
            }
        })
    }

    /// Where the server's files live (the storage factor), and the
    /// deployment's socket directory shared with the host.
    #[allow(clippy::too_many_arguments)]
    fn storage_args(
        &self,
        args: &mut Vec<String>,
        cx: &Context<'_>,
        server: &Server,
        role: Role,
        storage: Storage,
        name: &str,
        host_ids: Option<(u32, u32)>,
    ) -> Result<(), DeployError> {
        let spec = cx.spec;
        let dir = cx.dir.display().to_string();
        let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
        match storage {
            Storage::HostPath => {
                if let Some(ids) = host_ids {
                    chown_tree(cx.dir, ids)?;
                }
                push(&["--volume", &format!("{dir}:{dir}")]);
            }
            Storage::Volume => {
                self.cli.run(&[
                    "volume",
                    "create",
                    "--label",
                    &format!("{LABEL}=1"),
                    "--label",
                    &format!("{LABEL_RUN}={}", spec.run_id),
                    "--label",
                    &format!("{LABEL_OWNER}={}", cx.owner),
                    name,
                ])?;
                cx.teardown.push(Resource::Undo(Box::new(Made::Volume(
                    self.cli.clone(),
                    name.to_string(),
                ))));
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
            if let Some(ids) = host_ids {
                chown_tree(&cx.dir.join("sock"), ids)?;
            }
            push(&["--volume", &format!("{dir}/sock:{dir}/sock")]);
        }
        Ok(())
    }

    /// Creates the container from `args`, registered for removal, and
    /// copies the deployment directory into it when `files`; its id.
    /// Whether `image` is tare's cached image of `server` (`ensure_image`'s
    /// tag), not a user's imported one.
    fn is_cached(&self, server: &Server, image: &str) -> bool {
        crate::docker::image::tag_for(&server.target, &server.binary)
            .is_ok_and(|(tag, _)| image == tag || image.strip_prefix("localhost/") == Some(&tag))
    }

    fn create_container(
        &self,
        cx: &Context<'_>,
        args: &[String],
        files: bool,
    ) -> Result<String, DeployError> {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let id = self.cli.run(&argv)?.trim().to_string();
        cx.teardown.push(Resource::Undo(Box::new(Made::Container(
            self.cli.clone(),
            id.clone(),
        ))));
        if files {
            // Into the container's own filesystem, or onto the volume mounted
            // at the same path: the same tar Docker's archive upload gets,
            // ownership and modes kept.
            let archive = crate::docker::container::dir_tar(cx.dir)
                .map_err(|e| DeployError::io("archiving the deployment directory", e))?;
            self.cli
                .run_with(&["cp", "-", &format!("{id}:/")], Some(&archive))?;
        }
        Ok(id)
    }
}

/// The server's user inside the container, and who that is on the host
/// (`rootless`: the user's subordinate ids), so files it must write are
/// given to that host id.
fn host_ids(
    rootless: Option<&Arc<RootlessUser>>,
    server: &Server,
) -> Result<Option<(u32, u32)>, DeployError> {
    let inside = server.run_as.unwrap_or((0, 0));
    Ok(match rootless {
        Some(u) => Some(u.host_ids(inside).ok_or_else(|| {
            DeployError::Podman(format!(
                "the container user {}:{} is outside {}'s subordinate id ranges",
                inside.0, inside.1, u.name
            ))
        })?),
        None => None,
    })
}

/// Seccomp, the server's CPUs, open-file and process limits, its user,
/// environment and working directory. A `rootless` container is pinned
/// by affinity after it starts: the CPUs returned.
fn limit_args(
    args: &mut Vec<String>,
    spec: &DeploySpec,
    server: &Server,
    rootless: bool,
) -> Result<Option<CpuList>, DeployError> {
    let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
    if spec.container.seccomp_unconfined {
        push(&["--security-opt", "seccomp=unconfined"]);
    }
    // Rootless Podman has no cpuset without a delegated cgroup (and
    // none at all on cgroup v1): its server is pinned by affinity
    // instead, once it runs.
    let pin: Option<CpuList> = match (&spec.server_cpus, rootless) {
        (Some(cpus), false) => {
            push(&["--cpuset-cpus", cpus]);
            None
        }
        (Some(cpus), true) => Some(
            cpus.parse()
                .map_err(|e| DeployError::Invalid(format!("server CPUs {cpus}: {e}")))?,
        ),
        (None, _) => None,
    };
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
    for (k, v) in &server.env {
        push(&["--env", &format!("{k}={v}")]);
    }
    if let Some(w) = &server.workdir {
        push(&["--workdir", &w.display().to_string()]);
    }
    Ok(pin)
}

fn chown_tree(path: &std::path::Path, (uid, gid): (u32, u32)) -> Result<(), DeployError> {
    let fail = |e| DeployError::io(format!("chown {}", path.display()), e);
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).map_err(fail)?;
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).map_err(fail)? {
            chown_tree(&e.map_err(fail)?.path(), (uid, gid))?;
        }
    }
    Ok(())
}

/// Pins every thread of `pid` and of its descendants to `cpus`: what
/// `--cpuset-cpus` does for a rootful container, done from the host. Threads
/// and processes made later inherit it.
fn pin_tree(pid: i32, cpus: &CpuList) {
    let set = cpus.to_cpu_set();
    for p in crate::procfs::tree(pid) {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        for tid in tasks {
            // SAFETY: set is a valid cpu_set_t; a task that ended fails harmlessly.
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        }
    }
}

/// Whether `pid` is in another cgroup than this process.
fn cgroup_differs(pid: i32) -> bool {
    let of = |p: String| std::fs::read_to_string(format!("/proc/{p}/cgroup")).ok();
    match (of(pid.to_string()), of("self".into())) {
        (Some(a), Some(b)) => a != b,
        _ => false,
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

fn inspect_json(cli: &Cli, id: &str) -> Result<Value, DeployError> {
    let out = cli.run(&["container", "inspect", "--format", "json", id])?;
    match serde_json::from_str::<Value>(&out) {
        Ok(Value::Array(mut v)) if !v.is_empty() => Ok(v.swap_remove(0)),
        _ => Err(DeployError::Podman(format!(
            "podman inspect {id}: unreadable JSON"
        ))),
    }
}

fn inspect(cli: &Cli, id: &str) -> Result<Inspected, DeployError> {
    let v = inspect_json(cli, id)?;
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
    cli: Cli,
    id: String,
    started: Inspected,
    image: String,
    storage: Storage,
    /// Rootless: the CPUs its processes are pinned to by affinity.
    pin: Option<CpuList>,
    /// Whether it has a cgroup of its own for the monitor to follow.
    own_cgroup: bool,
    /// Rootless, the server: the host port its forwarder listens on.
    forwarded: Option<u16>,
}

impl Running for PodmanRun {
    fn pid(&self) -> i32 {
        self.started.pid
    }

    fn address(&self) -> Option<IpAddr> {
        self.started.ip
    }

    fn alive(&self) -> Result<(), String> {
        let v = inspect_json(&self.cli, &self.id).map_err(|e| e.to_string())?;
        if v["State"]["Running"].as_bool() == Some(true) {
            return Ok(());
        }
        Err(crate::docker::container::container_exit(
            v["State"]["ExitCode"].as_i64().unwrap_or(-1),
        ))
    }

    /// Processes the server forked while starting (nginx's workers) may
    /// have done so before it was pinned: pin the whole tree again.
    fn settle(&self) {
        if let Some(cpus) = &self.pin {
            pin_tree(self.started.pid, cpus);
        }
    }

    fn log_tail(&self, lines: usize) -> String {
        match self
            .cli
            .output(&["logs", "--tail", &lines.to_string(), &self.id])
        {
            Ok(o) => format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(_) => String::new(),
        }
    }

    fn scope(&self) -> super::Scope {
        if self.own_cgroup {
            super::Scope::CgroupOf(self.started.pid as u32)
        } else {
            super::Scope::Pids(vec![self.started.pid as u32])
        }
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
    /// Its conmon (`-c <container>`), Podman's shim, and rootless, the
    /// forwarder of its published port: whatever listens on the host port
    /// (rootlessport, pasta, slirp4netns), with its children
    /// (rootlessport's, which dials into the container).
    fn helpers(&self) -> Vec<crate::helpers::Helper> {
        let mut out =
            crate::helpers::find("conmon", |a| crate::helpers::flag_is(a, "-c", &self.id));
        if let Some(port) = self.forwarded {
            out.extend(crate::helpers::listeners(port));
        }
        out
    }
}
