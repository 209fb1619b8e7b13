//! The vm mechanism: each deployment's server in its own QEMU guest,
//! booted from the host's kernel and an initramfs tare builds from the same
//! binary and config (`crate::vm`). The vm placements differ only in the
//! guest's network ([`VmNet`]): a tap on a lab bridge, the same behind
//! loopback DNAT, or QEMU's user-mode network.
//!
//! QEMU is the server process on the host: the monitor follows it (its vCPU
//! and I/O threads), the deployment directory lists it for `tare cleanup`,
//! and teardown stops it before the tap and bridge go.
//!
//! The storage factor in a guest (docs/tools.md, "Storage"): `image` keeps
//! the server's content in the initramfs (the guest's root, in its RAM);
//! `volume` puts it on a virtio-blk disk, a raw file in the deployment
//! directory formatted ext4 on the host, with `cache=none` as the IBM
//! study's KVM guest had (docs/studies.md, seed 002; `vm::disk`); `tmpfs`
//! mounts a tmpfs in the guest over it; `host-path` is refused
//! ([`refuses_storage`]).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tare_engine::cpu::CpuList;
use tare_engine::Endpoint;

use super::process::{free_port, spawn};
use super::{Context, Mechanism, Role, Running, Site};
use crate::error::DeployError;
use crate::facts::{Described, GuestDisk, GuestFacts, GuestReport};
use crate::lab::{TapNet, TAP_PREFIX};
use crate::options::{Storage, VmPin};
use crate::owner::CleanupReport;
use crate::procfs;
use crate::targets::{Listen, Server};
use crate::teardown::Resource;
use crate::vm::{self, disk, init, initramfs, kernel, qemu, threads, Accel, TCG_LABEL};

pub(crate) struct Vm;

pub(crate) static VM: Vm = Vm;

/// Guest memory when the experiment sets none: room for the initramfs
/// (held in RAM), the server and PostgreSQL's default shared_buffers.
const DEFAULT_MEMORY_MIB: u32 = 512;

/// How long a guest may take from QEMU's start to its server running: a
/// TCG boot took 2-4 s here; a loaded 2-core machine with two guests
/// booting at once takes longer.
fn boot_limit(accel: Accel) -> Duration {
    match accel {
        Accel::Kvm => Duration::from_secs(30),
        Accel::Tcg => Duration::from_secs(90),
    }
}

impl Mechanism for Vm {
    fn name(&self) -> &'static str {
        "vm"
    }

    fn available(&self) -> Result<String, String> {
        let h = vm::host()?;
        let mut s = format!(
            "QEMU, kernel {} ({}), acceleration {}: {}",
            h.kernel.version,
            if h.kernel.unpacked() {
                "unpacked vmlinux"
            } else {
                "bzImage"
            },
            h.accel.accel.name(),
            h.accel.reason
        );
        if h.accel.accel == Accel::Tcg {
            s.push_str(&format!(" ({TCG_LABEL})"));
        }
        Ok(s)
    }

    fn facts(&self) -> Vec<(String, String)> {
        match vm::host() {
            Ok(h) => vec![
                ("qemu".into(), h.qemu_version.clone()),
                ("vm kernel".into(), h.kernel.image.display().to_string()),
                (
                    "vm acceleration".into(),
                    format!("{} ({})", h.accel.accel.name(), h.accel.reason),
                ),
                (
                    "vhost-net".into(),
                    if h.vhost {
                        "yes"
                    } else {
                        "no (/dev/vhost-net absent)"
                    }
                    .into(),
                ),
                (
                    "vm data disk".into(),
                    match crate::host::which("mkfs.ext4") {
                        Some(mkfs) => format!(
                            "storage = \"volume\": virtio-blk, cache={}, aio={}, {} by {}",
                            disk::CACHE,
                            disk::AIO,
                            disk::GUEST_FS,
                            mkfs.display()
                        ),
                        None => "no mkfs.ext4: storage = \"volume\" fails (Debian: apt-get install e2fsprogs)".into(),
                    },
                ),
            ],
            Err(e) => vec![("vm".into(), e)],
        }
    }

    fn warnings(&self) -> Vec<String> {
        match vm::host() {
            Ok(h) if h.accel.accel == Accel::Tcg => vec![format!(
                "vm-* placements run under TCG here ({}): {TCG_LABEL}; compare them only with KVM on a machine where it works",
                h.accel.reason
            )],
            _ => Vec::new(),
        }
    }

    fn cleanup(&self, report: &mut CleanupReport) {
        // Deployment directories list their QEMU process (`cleanup` stops
        // it with the directory); this finds guests whose directory is gone.
        for pid in procfs::pids() {
            let Some(name) = guest_name(pid) else {
                continue;
            };
            if guest_owner_alive(&name) {
                report.live.push(format!("vm {name} (pid {pid})"));
                continue;
            }
            // SAFETY: plain syscall on a pid just read from /proc.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            report.removed.push(format!("vm {name} (pid {pid})"));
        }
    }
}

/// The `-name` of a QEMU process tare started (`tare-…`), if `pid` is one.
fn guest_name(pid: libc::pid_t) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let exe = String::from_utf8_lossy(args.first()?);
    if !exe.rsplit('/').next()?.starts_with("qemu-system") {
        return None;
    }
    let at = args.iter().position(|a| *a == b"-name")?;
    let name = String::from_utf8_lossy(args.get(at + 1)?).into_owned();
    name.starts_with(crate::owner::PREFIX).then_some(name)
}

/// Whether the tare process a guest belongs to still runs: the owner file
/// of its deployment directory (named as the guest), or the pid in a trial
/// guest's name.
fn guest_owner_alive(name: &str) -> bool {
    if let Some(pid) = name.strip_prefix(vm::accel::TRIAL_PREFIX) {
        return pid
            .parse::<libc::pid_t>()
            .ok()
            .and_then(procfs::stat)
            .is_some();
    }
    let mut bases = vec![std::env::temp_dir(), PathBuf::from("/tmp")];
    bases.dedup();
    bases.iter().any(|b| {
        std::fs::read_to_string(b.join(name).join(crate::owner::OWNER_FILE))
            .is_ok_and(|owner| procfs::owner_alive(owner.trim()))
    })
}

/// Why a guest cannot have its content on `storage`: a host directory
/// reaches a guest only through a shared filesystem (9p, virtio-fs), which
/// serves files 3-5x slower here (`vm::initramfs`), a filesystem result
/// rather than the placement's.
pub(super) fn refuses_storage(storage: Storage) -> Option<&'static str> {
    (storage == Storage::HostPath).then_some(
        "storage = host-path: a guest cannot see the host's directory without a shared filesystem (9p, virtio-fs), which would measure that filesystem; use volume (a virtio-blk disk whose file is in the host directory), image (the initramfs) or tmpfs",
    )
}

/// How a vm placement networks its guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VmNet {
    /// A tap on a lab bridge; load reaches the guest's own address.
    Bridge,
    /// The same, reached on a loopback front through nftables DNAT.
    Publish,
    /// QEMU's user-mode network, a host port forwarded by QEMU itself.
    User,
}

/// Where the guest sits on the network.
enum Wiring {
    Tap {
        tap: String,
        guest: Ipv4Addr,
        gateway: Ipv4Addr,
        front: Ipv4Addr,
    },
    User {
        host_port: u16,
    },
}

/// One deployment's guest.
pub(super) struct VmSite {
    placement: &'static str,
    host: &'static vm::Host,
    wiring: Wiring,
}

/// The site of a vm placement: the tap network made (and registered for
/// teardown) now, the guest booted when the server starts.
pub(super) fn site(
    placement: &'static str,
    net: VmNet,
    cx: &Context<'_>,
) -> Result<Box<dyn Site>, DeployError> {
    let unavailable = |reason: String| DeployError::PlacementUnavailable {
        placement: placement.to_string(),
        reason,
    };
    let host = vm::host().map_err(unavailable)?;
    let wiring = match net {
        VmNet::Bridge | VmNet::Publish => {
            let tap = TapNet::create(&cx.spec.run_id, net == VmNet::Publish)
                .map_err(|e| unavailable(e.to_string()))?;
            let wiring = Wiring::Tap {
                tap: tap.tap().to_string(),
                guest: tap.guest(),
                gateway: tap.gateway(),
                front: tap.front(),
            };
            cx.teardown.push(Resource::Undo(Box::new(tap)));
            wiring
        }
        VmNet::User => Wiring::User {
            host_port: free_port()?,
        },
    };
    Ok(Box::new(VmSite {
        placement,
        host,
        wiring,
    }))
}

impl crate::teardown::Undo for TapNet {
    fn undo(self: Box<Self>) -> Result<(), DeployError> {
        self.teardown()
            .map_err(|e| DeployError::Invalid(format!("removing the vm network: {e}")))
    }
}

/// QEMU's user-mode network: the guest's address and gateway (QEMU's
/// documented defaults for `-netdev user`).
const USER_GUEST: &str = "10.0.2.15/24";
const USER_GATEWAY: &str = "10.0.2.2";

impl Site for VmSite {
    fn listen(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        // The guest's own network: the conventional port on every address.
        Ok(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port))
    }

    fn companion(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        // In the same guest, on its loopback, as on a native host.
        Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))
    }

    fn start(
        &mut self,
        cx: &Context<'_>,
        server: &Server,
        listen: &Listen,
        role: Role,
    ) -> Result<Box<dyn Running>, DeployError> {
        match role {
            Role::Server => Ok(self.boot(cx, server, listen, None)?.remove(0)),
            Role::Companion => Err(DeployError::Invalid(format!(
                "{}: a companion starts with its server, in the same guest",
                self.placement
            ))),
        }
    }

    fn start_all(
        &mut self,
        cx: &Context<'_>,
        servers: &[(&Server, &Listen)],
    ) -> Result<Vec<Box<dyn Running>>, DeployError> {
        match servers {
            [(server, listen)] => self.boot(cx, server, listen, None),
            [(server, listen), companion] => self.boot(cx, server, listen, Some(*companion)),
            _ => Err(DeployError::Invalid(format!(
                "{}: a guest runs a server and at most one companion",
                self.placement
            ))),
        }
    }

    fn endpoint(&self, listen: &Listen, _server: &dyn Running) -> Result<Endpoint, DeployError> {
        let Listen::Tcp(at) = listen else {
            return Err(DeployError::Invalid(format!(
                "{}: only TCP reaches a guest",
                self.placement
            )));
        };
        Ok(Endpoint::Tcp(match &self.wiring {
            Wiring::Tap { front, .. } => SocketAddr::new(IpAddr::V4(*front), at.port()),
            Wiring::User { host_port } => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), *host_port),
        }))
    }
}

/// What the guest's init starts for `s` listening on `at`.
fn program<'a>(s: &'a Server, at: &Listen) -> init::Program<'a> {
    init::Program {
        binary: &s.binary,
        args: &s.args,
        env: &s.env,
        workdir: s.workdir.as_deref(),
        run_as: s.run_as,
        port: tcp_port(at),
        root: s.root.as_ref().map(|_| Path::new(init::IMAGE_ROOT)),
    }
}

/// The TCP port a server listens on, for the guest's init to wait for.
fn tcp_port(listen: &Listen) -> Option<u16> {
    match listen {
        Listen::Tcp(at) => Some(at.port()),
        Listen::Unix(_) => None,
    }
}

impl VmSite {
    /// `what` failed, in one line naming the placement.
    fn failed(&self, what: &str, e: String) -> DeployError {
        DeployError::Invalid(format!("{}: {what}: {e}", self.placement))
    }

    /// Builds the guest's initramfs (the server, its companion if any, the
    /// deployment directory), boots it and waits until the server listens.
    fn boot(
        &mut self,
        cx: &Context<'_>,
        server: &Server,
        listen: &Listen,
        companion: Option<(&Server, &Listen)>,
    ) -> Result<Vec<Box<dyn Running>>, DeployError> {
        if let Listen::Unix(_) = listen {
            // A Unix socket is a file in one kernel: the guest's socket
            // cannot be connected to from the host (virtio-vsock is not a
            // Unix socket either), so there is no honest unix cell here.
            return Err(DeployError::Invalid(format!(
                "{}: a Unix socket cannot cross the virtual machine's boundary (the server's socket is in the guest's kernel); use transport = tcp",
                self.placement
            )));
        }
        let host = self.host;
        // A user's image brings its own files (its exported root
        // filesystem), not the host's.
        let image = server.root.as_ref().map(|r| r.dir.as_path());
        let files = self.files(server, image, companion)?;
        let vm_dir = cx.dir.join("vm");
        for d in [&vm_dir, &cx.dir.join("log")] {
            std::fs::create_dir_all(d)
                .map_err(|e| DeployError::io("creating the vm directory", e))?;
        }
        let storage = cx.spec.container.storage;
        let (disk, data) = self.content(&vm_dir, server, image, storage)?;
        let script = init::script(&init::Plan {
            dir: cx.dir,
            server: program(server, listen),
            companion: companion.map(|(c, at)| program(c, at)),
            nofile: super::container::own_nofile(),
            data,
        });
        let initrd = vm_dir.join("initrd.cpio");
        let in_initramfs = image.filter(|_| storage == Storage::Image);
        let built = initramfs::build(
            &host.kernel,
            &files,
            cx.dir,
            in_initramfs,
            &script,
            &host.cache,
            &initrd,
        )
        .map_err(|e| self.failed("building the initramfs", e))?;

        let accel = host.accel.accel;
        let (ip, gateway, nic) = self.nic(listen);
        let machine = qemu::Machine {
            name: cx
                .dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("tare-vm")
                .to_string(),
            accel,
            cpus: cx.spec.vm.cpus.unwrap_or_else(|| default_cpus(cx)),
            memory_mib: cx.spec.vm.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB),
            kernel: &host.kernel,
            initrd: &initrd,
            append: kernel_line(host, accel, &ip, &gateway),
            nic,
            disk: disk.as_ref(),
        };
        let started = Instant::now();
        let pid = launch(cx, host, server, image, &machine)?;
        let mut run = VmRun {
            pid,
            console: cx
                .dir
                .join("log")
                .join(format!("{}.out", Role::Server.name())),
            guest: guest_facts(host, &machine, built.bytes, cx, companion.is_some()),
            storage,
            report: None,
            address: match &self.wiring {
                Wiring::Tap { guest, .. } => Some(IpAddr::V4(*guest)),
                Wiring::User { .. } => None,
            },
        };
        run.wait_started(started, boot_limit(accel))
            .map_err(|e| self.failed("the guest did not start its server", e))?;
        self.pin(cx, &mut run)?;
        let companion: Option<Box<dyn Running>> = companion.map(|_| {
            Box::new(GuestCompanion {
                pid,
                console: run.console.clone(),
                described: run.described(),
            }) as Box<dyn Running>
        });
        Ok(std::iter::once(Box::new(run) as Box<dyn Running>)
            .chain(companion)
            .collect())
    }

    /// The host files the guest's initramfs carries: the server's binary
    /// and libraries (none for a user's image, `image`: its exported tree
    /// goes in whole), and its companion's.
    fn files(
        &self,
        server: &Server,
        image: Option<&Path>,
        companion: Option<(&Server, &Listen)>,
    ) -> Result<BTreeSet<PathBuf>, DeployError> {
        let mut files = match image {
            Some(_) => Default::default(),
            None => crate::docker::image::closure(&server.target, &server.binary)
                .map_err(|e| self.failed("the server's files", e))?,
        };
        if let Some((c, _)) = companion {
            files.extend(
                crate::docker::image::closure(&c.target, &c.binary)
                    .map_err(|e| self.failed("the companion's files", e))?,
            );
        }
        Ok(files)
    }

    /// Where the server's content lives in the guest (the storage
    /// factor): the data disk made in `vm_dir` for `volume`, and what the
    /// init mounts over the content directory.
    fn content<'a>(
        &self,
        vm_dir: &Path,
        server: &'a Server,
        image: Option<&'a Path>,
        storage: Storage,
    ) -> Result<(Option<disk::Disk>, init::Data<'a>), DeployError> {
        if let Some(why) = refuses_storage(storage) {
            return Err(DeployError::Invalid(format!("{}: {why}", self.placement)));
        }
        // A user's image on `volume` is its whole root filesystem on the
        // disk; a tmpfs cannot hold it (its files are the image's).
        let guest_root = Path::new(init::IMAGE_ROOT);
        let (content, at) = match image {
            Some(root) => (root, guest_root),
            None => (server.content_path.as_path(), server.content_path.as_path()),
        };
        if image.is_some() && storage == Storage::Tmpfs {
            return Err(DeployError::Invalid(format!(
                "{}: kind = \"image\" in a guest runs from its files in the initramfs (storage = \"image\") or on its disk (\"volume\"), not a tmpfs",
                self.placement
            )));
        }
        let disk = match storage {
            Storage::Volume => {
                kernel::modules(&self.host.kernel, initramfs::DISK_MODULES)
                    .map_err(|e| self.failed("the data disk's modules", e))?;
                Some(
                    disk::make(vm_dir, content, disk::DEFAULT_BYTES)
                        .map_err(|e| self.failed("the data disk", e))?,
                )
            }
            Storage::Tmpfs => {
                crate::docker::container::tmpfs_over_content(server)?;
                None
            }
            Storage::Image | Storage::HostPath => None,
        };
        let data = match storage {
            Storage::Volume => init::Data::Disk {
                at,
                device: disk::DEVICE,
                fs: disk::GUEST_FS,
            },
            Storage::Tmpfs => init::Data::Tmpfs {
                at: &server.content_path,
            },
            Storage::Image | Storage::HostPath => init::Data::Root,
        };
        Ok((disk, data))
    }

    /// The guest's address (with its prefix), its gateway and its network
    /// card: a tap on the lab's bridge, or QEMU's user network forwarding
    /// the host port to the server's.
    fn nic(&self, listen: &Listen) -> (String, String, qemu::Nic) {
        match &self.wiring {
            Wiring::Tap {
                tap,
                guest,
                gateway,
                ..
            } => (
                format!("{guest}/{TAP_PREFIX}"),
                gateway.to_string(),
                qemu::Nic::Tap {
                    ifname: tap.clone(),
                    vhost: self.host.vhost,
                },
            ),
            Wiring::User { host_port } => {
                let Listen::Tcp(at) = listen else {
                    unreachable!("checked above")
                };
                (
                    USER_GUEST.to_string(),
                    USER_GATEWAY.to_string(),
                    qemu::Nic::User {
                        forwards: vec![(
                            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), *host_port),
                            at.port(),
                        )],
                    },
                )
            }
        }
    }

    /// With `vm_pin = "vcpu"`, each vCPU thread on one of the server's
    /// CPUs; either way, the CPUs each vCPU thread may run on, as the
    /// kernel reports them, into the guest's facts.
    fn pin(&self, cx: &Context<'_>, run: &mut VmRun) -> Result<(), DeployError> {
        let pid = run.pid;
        if cx.spec.vm.pin == VmPin::Vcpu {
            let cpus = match cx.spec.server_cpus.as_deref() {
                Some(list) => list
                    .parse::<CpuList>()
                    .map_err(|e| self.failed("server CPUs", e))?,
                None => CpuList::allowed()
                    .map_err(|e| self.failed("reading the CPUs tare may use", e.to_string()))?,
            };
            threads::pin_vcpus(pid, &cpus)
                .map_err(|e| self.failed("pinning the vCPU threads", e))?;
        }
        run.guest.vcpu_cpus = threads::vcpu_threads(pid)
            .iter()
            .map(|(_, tid)| {
                procfs::status_field(*tid, "Cpus_allowed_list").unwrap_or_else(|| "?".into())
            })
            .collect();
        Ok(())
    }
}

/// The guest kernel's command line beyond the console settings: its
/// address and gateway, and under TCG the host's TSC rate.
fn kernel_line(host: &vm::Host, accel: Accel, ip: &str, gateway: &str) -> String {
    let mut append = format!("tare.ip={ip} tare.gw={gateway}");
    if let (Accel::Tcg, Some(khz)) = (accel, host.tsc_khz) {
        append.push_str(&format!(" tsc_early_khz={khz} tsc=reliable"));
        // Loops per jiffy from the same rate: each secondary vCPU
        // otherwise calibrates its delay loop, ~0.15 s each under TCG.
        if let Some(hz) = host.kernel.hz {
            append.push_str(&format!(" lpj={}", khz * 1000 / u64::from(hz)));
        }
    }
    append
}

/// Starts QEMU for `machine` as the deployment's server process,
/// registered for teardown; its pid.
fn launch(
    cx: &Context<'_>,
    host: &vm::Host,
    server: &Server,
    image: Option<&Path>,
    machine: &qemu::Machine<'_>,
) -> Result<i32, DeployError> {
    // QEMU is a host process: a user's image's root, working
    // directory and environment are the guest's, not QEMU's.
    let (env, workdir) = match image {
        Some(_) => (Vec::new(), None),
        None => (server.env.clone(), server.workdir.clone()),
    };
    let qemu_server = Server {
        binary: host.qemu.clone(),
        args: machine.args(),
        run_as: None,
        root: None,
        env,
        workdir,
        ..server.clone()
    };
    let child = spawn(
        &qemu_server,
        cx.dir,
        Role::Server.name(),
        None,
        cx.spec.server_cpus.as_deref(),
    )?;
    let pid = child.id() as i32;
    cx.teardown.push(Resource::Process(child));
    Ok(pid)
}

/// What the guest is, as booted: its accelerator and why, its kernel,
/// machine, vCPUs and memory, network card, initramfs and data disk.
fn guest_facts(
    host: &vm::Host,
    machine: &qemu::Machine<'_>,
    initramfs_bytes: u64,
    cx: &Context<'_>,
    companion: bool,
) -> GuestFacts {
    let accel = machine.accel;
    GuestFacts {
        accel: accel.name().into(),
        accel_reason: host.accel.reason.clone(),
        note: (accel == Accel::Tcg).then(|| TCG_LABEL.to_string()),
        kernel: host.kernel.version.clone(),
        kernel_boot: if host.kernel.unpacked() {
            "vmlinux"
        } else {
            "bzImage"
        }
        .into(),
        machine: "microvm".into(),
        cpus: machine.cpus,
        memory_mib: machine.memory_mib,
        vhost: matches!(machine.nic, qemu::Nic::Tap { vhost: true, .. }),
        initramfs_bytes,
        boot_s: 0.0,
        pin: cx.spec.vm.pin.name().into(),
        vcpu_cpus: Vec::new(),
        companion,
        disk: machine.disk.map(|d| GuestDisk {
            interface: "virtio-blk".into(),
            format: "raw".into(),
            cache: disk::CACHE.into(),
            aio: disk::AIO.into(),
            bytes: d.bytes,
            fs: disk::GUEST_FS.into(),
            host_fs: d.host_fs.clone(),
        }),
    }
}

/// vCPUs when the experiment sets none: as many as the CPUs the server
/// may use on the host (`server_cpus`), else as many as the host has, so a
/// guest sees what a native server would.
fn default_cpus(cx: &Context<'_>) -> u32 {
    let pinned = cx
        .spec
        .server_cpus
        .as_deref()
        .and_then(|c| c.parse::<tare_engine::cpu::CpuList>().ok())
        .map(|l| l.to_cpu_set())
        .map(|set| {
            // SAFETY: CPU_COUNT reads the set it is given.
            unsafe { libc::CPU_COUNT(&set) as u32 }
        });
    pinned
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
}

/// A started guest.
struct VmRun {
    /// QEMU's pid on the host.
    pid: i32,
    /// QEMU's stdout and stderr: the guest's serial console.
    console: PathBuf,
    guest: GuestFacts,
    /// Where the server's content is (`image`: the initramfs).
    storage: Storage,
    /// What the guest said about itself.
    report: Option<GuestReport>,
    address: Option<IpAddr>,
}

impl VmRun {
    fn console_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.console).unwrap_or_default()).into_owned()
    }

    /// Waits for the init's "server started" line; fails with the last
    /// console lines when QEMU exits, the server exits, or `limit` passes.
    fn wait_started(&mut self, since: Instant, limit: Duration) -> Result<(), String> {
        loop {
            let text = self.console_text();
            if text.contains(init::STARTED) && !text.contains(init::EXITED) {
                self.guest.boot_s = since.elapsed().as_secs_f64();
                self.report = init::guest_report(&text);
                return Ok(());
            }
            let why = if text.contains(init::EXITED) {
                Some("its server exited".to_string())
            } else if let Err(e) = self.alive_process() {
                Some(e)
            } else if since.elapsed() > limit {
                Some(format!("no server after {} s", limit.as_secs()))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(format!(
                    "{why}; last console lines: {}",
                    init::console_tail(&text, 8).replace('\n', " | ")
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn alive_process(&self) -> Result<(), String> {
        match procfs::stat(self.pid) {
            Some(s) if s.state != 'Z' => Ok(()),
            _ => Err("QEMU exited".into()),
        }
    }
}

impl Running for VmRun {
    fn pid(&self) -> i32 {
        self.pid
    }

    fn address(&self) -> Option<IpAddr> {
        self.address
    }

    fn alive(&self) -> Result<(), String> {
        self.alive_process()?;
        if self.console_text().contains(init::EXITED) {
            return Err("the server in the guest exited".into());
        }
        Ok(())
    }

    fn log_tail(&self, lines: usize) -> String {
        init::console_tail(&self.console_text(), lines)
    }

    fn scope(&self) -> super::Scope {
        super::Scope::Pids(vec![self.pid as u32])
    }

    fn parts(&self) -> Vec<(String, Vec<u32>)> {
        if !self.guest.vhost {
            return Vec::new();
        }
        let processes = procfs::pids().into_iter().filter_map(|p| {
            let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).ok()?;
            Some((p, comm.trim().to_string()))
        });
        let workers = threads::vhost_workers(self.pid, processes);
        if workers.is_empty() {
            Vec::new()
        } else {
            vec![("vhost".to_string(), workers)]
        }
    }

    fn described(&self) -> Described {
        Described {
            image: Some(format!(
                "initramfs ({} bytes) on kernel {}",
                self.guest.initramfs_bytes, self.guest.kernel
            )),
            // `image`: the files are in the guest's own root filesystem
            // (the initramfs, in RAM), as an image's are in a container;
            // `volume`: on its virtio disk; `tmpfs`: a tmpfs in the guest.
            storage: self.storage.to_string(),
            cpu_limit: None,
            memory_limit: Some(u64::from(self.guest.memory_mib) << 20),
            guest: Some((self.guest.clone(), self.report.clone().unwrap_or_default())),
        }
    }
}

/// A companion in the server's guest: no host process of its own (its CPU
/// is QEMU's, counted as the server's), alive while the guest is.
struct GuestCompanion {
    /// QEMU's pid.
    pid: i32,
    console: PathBuf,
    described: Described,
}

impl Running for GuestCompanion {
    fn pid(&self) -> i32 {
        self.pid
    }

    fn alive(&self) -> Result<(), String> {
        match procfs::stat(self.pid) {
            Some(s) if s.state != 'Z' => Ok(()),
            _ => Err("its guest ended".into()),
        }
    }

    fn log_tail(&self, lines: usize) -> String {
        let text =
            String::from_utf8_lossy(&std::fs::read(&self.console).unwrap_or_default()).into_owned();
        init::console_tail(&text, lines)
    }

    fn scope(&self) -> super::Scope {
        super::Scope::Pids(Vec::new())
    }

    fn described(&self) -> Described {
        self.described.clone()
    }
}
