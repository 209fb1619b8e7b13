//! What a running deployment is: the facts `measure` reads from /proc and
//! from the placement, and the fairness check compares between cells.
//! Plain data: this module imports nothing else of the crate, so
//! everything that makes or reads facts (the placements, a guest's init,
//! the measurement, the fairness check) names them without a circle.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a running deployment is, measured where possible (from /proc of the
/// server process, for host and container alike) rather than assumed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    pub target: String,
    pub placement: String,
    pub variant: String,
    pub transport: String,
    pub endpoint: String,
    /// The image the server ran from (container placements).
    pub image: Option<String>,
    /// The server process: binary, config, limits.
    #[serde(flatten)]
    pub process: ProcessFacts,
    pub access_log: String,
    /// `image` (overlayfs), `volume` or `host-path` (bind mount; a plain
    /// process too).
    pub storage: String,
    /// Filesystem type of the access log / served content as the server sees it.
    pub log_fs: Option<String>,
    pub content_fs: Option<String>,
    /// Host pid of the server (master) process.
    pub server_pid: Option<i32>,
    /// A user's image (`kind = "image"`): the digest of the file tree it
    /// runs from (`tree_sha256`), the filesystem type of its root
    /// as it sees it (`overlay` in a container, the host's under a
    /// chroot, the initramfs's or the disk's in a guest), and its cgroup
    /// (a container's own, or the host's; none in a guest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_fs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// A target's companion (nginx-proxy's `tare serve` backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendFacts>,
    /// The guest, for a server in a virtual machine (`vm-*` placements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<GuestFacts>,
    /// The processes the placement runs on the server's behalf, pinned to
    /// the helpers' CPUs (`[cpus] helpers`), and where each may run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub helpers: Vec<HelperFacts>,
}

/// A helper as the fairness facts record it: what its CPUs were after
/// tare pinned it (read back from /proc, not assumed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperFacts {
    pub name: String,
    pub pid: u32,
    /// `Cpus_allowed_list` of its threads (the first one's; all are set).
    pub cpus_allowed: Option<String>,
}

/// What a virtual machine is: how its CPU runs and what it was given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestFacts {
    /// `kvm` or `tcg` (QEMU's emulator).
    pub accel: String,
    /// Why: the KVM trial boot's outcome (`vm::accel`).
    pub accel_reason: String,
    /// For TCG: "emulated: functional, not a speed result".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The guest kernel's version (the host's package).
    pub kernel: String,
    /// `vmlinux` (unpacked, booted directly) or `bzImage`.
    pub kernel_boot: String,
    /// QEMU's machine type.
    pub machine: String,
    pub cpus: u32,
    pub memory_mib: u32,
    /// Whether virtio-net's data path is in the host kernel (vhost-net).
    pub vhost: bool,
    pub initramfs_bytes: u64,
    /// Seconds from QEMU's start to the server listening in the guest
    /// (its port in the guest's /proc/net/tcp; docs/placements.md, "Boot
    /// time").
    pub boot_s: f64,
    /// `process` (QEMU on the server's CPUs) or `vcpu` (each vCPU thread
    /// on one of them): the `vm_pin` factor.
    #[serde(default)]
    pub pin: String,
    /// The host CPUs each vCPU thread may run on, in vCPU order, as the
    /// kernel reports them after pinning (`Cpus_allowed_list`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vcpu_cpus: Vec<String>,
    /// A companion runs in the same guest (nginx-proxy's backend).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub companion: bool,
    /// The data disk holding the server's content (`storage = "volume"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<GuestDisk>,
}

/// A guest's data disk (`vm::disk`): what the IBM study's KVM guest had
/// (virtio-blk, `cache=none`: docs/studies.md, seed 002).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestDisk {
    /// `virtio-blk`.
    pub interface: String,
    /// `raw`: a plain file, no image format between the guest and it.
    pub format: String,
    /// QEMU's cache mode (`none`: O_DIRECT on the host file).
    pub cache: String,
    /// QEMU's I/O back end (`native`: Linux AIO).
    pub aio: String,
    pub bytes: u64,
    /// The filesystem on it, made on the host, as the guest mounts it.
    pub fs: String,
    /// The filesystem the disk file lives on, on the host.
    pub host_fs: String,
}

impl GuestDisk {
    /// One line for facts and findings: `virtio-blk raw file on ext4
    /// (cache=none, aio=native)`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} file on {} (cache={}, aio={})",
            self.interface, self.format, self.host_fs, self.cache, self.aio
        )
    }
}

/// What a target's companion is (nginx-proxy's backend), measured from /proc
/// of its process like the server, so a difference between placements is
/// found on either side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BackendFacts {
    /// Its target (`tare-serve`).
    pub target: String,
    /// Where the server reaches it, in the server's network namespace.
    pub endpoint: String,
    pub image: Option<String>,
    #[serde(flatten)]
    pub process: ProcessFacts,
    /// Host pid of its process.
    pub pid: Option<i32>,
}

/// What one server process is, whatever runs it: the same measurements for
/// a target and for its companion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessFacts {
    /// The binary's path (inside the container, for a container: the same
    /// as on the host, as tare's images keep host paths).
    pub binary_path: String,
    /// sha256 of the binary (hex); `None` for a user image tare did not build.
    pub binary_sha256: Option<String>,
    pub server_version: Option<String>,
    /// sha256 of the effective config with the listen address and the
    /// deployment's own paths blanked, so placements compare by content.
    pub config_sha256: String,
    /// Open-file limit (soft, hard); `None` is unlimited.
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
    /// `Cpus_allowed_list`.
    pub cpus_allowed: Option<String>,
    pub cpus_visible: Option<usize>,
    /// CPU quota in CPUs (cgroup limit, `--cpus`), `None` if unlimited.
    pub cpu_limit: Option<f64>,
    /// Memory limit in bytes, `None` if unlimited.
    pub memory_limit: Option<u64>,
    /// `filter` (a seccomp profile applies), `disabled`, or unknown.
    pub seccomp: Option<String>,
}

/// What the guest said about itself on its `facts` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GuestReport {
    pub kernel: Option<String>,
    pub cpus: Option<usize>,
    pub memory_kb: Option<u64>,
    pub nofile: Option<(Option<u64>, Option<u64>)>,
    /// Filesystem type of the deployment directory in the guest.
    pub fs: Option<String>,
    /// Filesystem type of the server's content (data) directory in the
    /// guest: the disk's or tmpfs's when one is mounted there.
    pub data_fs: Option<String>,
    /// Filesystem type of a user's image's root in the guest (the
    /// initramfs's, or the disk's with `storage = "volume"`).
    pub root_fs: Option<String>,
}

/// The facts a placement knows about a server beyond /proc.
#[derive(Clone, Debug, Default)]
pub(crate) struct Described {
    /// The image it runs from, if any.
    pub image: Option<String>,
    /// Where its content and logs live: `image`, `volume` or `host-path`
    /// (a plain process reads the host directory: what a container gets
    /// with a bind mount, so the two compare equal).
    pub storage: String,
    /// Limits asked for, when the kernel's cgroup files cannot be read.
    pub cpu_limit: Option<f64>,
    pub memory_limit: Option<u64>,
    /// A guest's facts, and what it said about itself from inside.
    pub guest: Option<(GuestFacts, GuestReport)>,
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "unknown".into(), |v| v.to_string())
}

fn limit<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "unlimited".into(), |v| v.to_string())
}

impl ProcessFacts {
    /// A guest's server is not a host process: what it sees comes from the
    /// guest's own report (its CPUs and limits), not QEMU's /proc.
    pub(crate) fn as_seen_in_guest(&mut self, inside: &GuestReport) {
        self.cpus_allowed = None;
        self.cpus_visible = inside.cpus;
        self.seccomp = None;
        if let Some((soft, hard)) = inside.nofile {
            self.nofile_soft = soft;
            self.nofile_hard = hard;
        }
    }

    /// Its compared facts, each name prefixed with `prefix`.
    fn compared(&self, prefix: &str, m: &mut BTreeMap<String, String>) {
        let mut put = |name: &str, value: String| {
            m.insert(format!("{prefix}{name}"), value);
        };
        put("binary_path", self.binary_path.clone());
        put("binary_sha256", opt(&self.binary_sha256));
        put("server_version", opt(&self.server_version));
        put("config_sha256", self.config_sha256.clone());
        put(
            "nofile",
            format!("{}/{}", limit(&self.nofile_soft), limit(&self.nofile_hard)),
        );
        put("cpus_visible", opt(&self.cpus_visible));
        put("cpu_limit", limit(&self.cpu_limit));
        put("memory_limit", limit(&self.memory_limit));
        put("seccomp", opt(&self.seccomp));
    }
}

impl Facts {
    /// The facts the fairness check compares, by name, as display strings; a
    /// companion's are prefixed `backend_`.
    pub fn compared(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        self.process.compared("", &mut m);
        for (name, value) in [
            ("access_log", self.access_log.clone()),
            ("storage", self.storage.clone()),
            ("log_fs", opt(&self.log_fs)),
            ("content_fs", opt(&self.content_fs)),
            // What holds the content's filesystem: a guest's virtio disk
            // and the host filesystem under its file, or nothing between.
            (
                "content_disk",
                self.guest
                    .as_ref()
                    .and_then(|g| g.disk.as_ref())
                    .map_or_else(|| "none".into(), GuestDisk::describe),
            ),
            ("transport", self.transport.clone()),
        ] {
            m.insert(name.to_string(), value);
        }
        if let Some(b) = &self.backend {
            b.process.compared("backend_", &mut m);
        }
        // A user's image: the files it runs from, and what holds them.
        if self.rootfs_sha256.is_some() {
            m.insert("rootfs_sha256".into(), opt(&self.rootfs_sha256));
            m.insert("root_fs".into(), opt(&self.root_fs));
        }
        m
    }
}

/// One difference the factors under test do not explain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub fact: String,
    /// (cell name, value) for every cell.
    pub values: Vec<(String, String)>,
    pub message: String,
}
