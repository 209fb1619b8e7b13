//! The fairness check: every measured difference between placements that is
//! not the factor under test. Seed 000's "unfair comparison" table
//! (docs/studies.md, seed 000, "Test 1": network mode, worker_connections,
//! epoll, multi_accept, tcp_nopush, tcp_nodelay and worker_rlimit_nofile
//! differing between host and Docker) is the kind of difference this catches
//! before any load runs. Facts the table has no row for (the binary, the log
//! target, the storage) are tare's additions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tare_engine::Endpoint;

use crate::placements::Running;
use crate::procfs;
use crate::spec::DeploySpec;
use crate::targets::{self, Server};

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
    /// runs from ([`crate::tree_sha256`]), the filesystem type of its root
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
    pub helpers: Vec<crate::helpers::HelperFacts>,
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

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "unknown".into(), |v| v.to_string())
}

fn limit<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "unlimited".into(), |v| v.to_string())
}

impl ProcessFacts {
    /// Measures process `pid` running `server` (a user image's binary is
    /// not tare's to vouch for: `vouch` false leaves hash and version out).
    fn of(pid: i32, server: &Server, vouch: bool) -> ProcessFacts {
        let l = procfs::limits(pid);
        ProcessFacts {
            binary_path: server.binary.display().to_string(),
            binary_sha256: match &server.root {
                // The entrypoint's file in the exported tree.
                Some(root) => root.binary_sha256.clone(),
                None => vouch
                    .then(|| targets::file_sha256(&server.binary).ok())
                    .flatten(),
            },
            server_version: vouch
                .then(|| server.target.kind.get().version(&server.binary))
                .flatten(),
            config_sha256: server.config_sha256.clone(),
            nofile_soft: l.nofile_soft,
            nofile_hard: l.nofile_hard,
            cpus_allowed: l.cpus_allowed,
            cpus_visible: l.cpus_visible,
            cpu_limit: l.cpu_limit,
            memory_limit: l.memory_limit,
            seccomp: l.seccomp,
        }
    }

    /// A guest's server is not a host process: what it sees comes from the
    /// guest's own report (its CPUs and limits), not QEMU's /proc.
    fn as_seen_in_guest(&mut self, inside: &crate::vm::init::GuestReport) {
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
    /// The facts compared by [`fairness`], by name, as display strings; a
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

/// Facts a factor is allowed to change. A factor not listed here excuses only
/// the fact of the same name.
fn excused_by(factor: &str) -> &'static [&'static str] {
    match factor {
        // Placement changes where the server runs, not what it is: storage and
        // log filesystem are separate factors (docs/studies.md, "Why is
        // `--network host` 17% slower than native?": ~11 of the 17 points were
        // overlayfs).
        "placement" => &[],
        "variant" | "config" => &["config_sha256", "access_log"],
        "access_log" => &["config_sha256", "access_log"],
        "storage" => &["storage", "log_fs", "content_fs", "content_disk"],
        // The backend container gets the server's seccomp profile.
        "seccomp" => &["seccomp", "backend_seccomp"],
        // server_cpus pins the backend too; cgroup limits are the server's alone.
        "server_cpus" => &["cpus_visible", "cpu_limit", "backend_cpus_visible"],
        "cpus" | "cpu_limit" => &["cpus_visible", "cpu_limit"],
        "memory" | "memory_limit" => &["memory_limit"],
        "limits" => &["cpus_visible", "cpu_limit", "memory_limit", "nofile"],
        "image" | "binary" => &["binary_path", "binary_sha256", "server_version"],
        "transport" => &["transport"],
        "vm_cpus" => &["cpus_visible"],
        "vm_memory" => &["memory_limit"],
        _ => &[],
    }
}

/// Every fact that differs between cells and is not excused by a factor under test.
pub fn fairness(cells: &[(String, Facts)], factors_under_test: &[&str]) -> Vec<Finding> {
    let excused: Vec<&str> = factors_under_test
        .iter()
        .flat_map(|f| excused_by(f).iter().copied().chain(std::iter::once(*f)))
        .collect();
    let maps: Vec<(&str, BTreeMap<String, String>)> = cells
        .iter()
        .map(|(n, f)| (n.as_str(), f.compared()))
        .collect();
    let Some((_, first)) = maps.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for fact in first.keys() {
        if excused.contains(&fact.as_str()) {
            continue;
        }
        let values: Vec<(String, String)> = maps
            .iter()
            .map(|(n, m)| (n.to_string(), m.get(fact).cloned().unwrap_or_default()))
            .collect();
        if values.iter().all(|(_, v)| *v == values[0].1) {
            continue;
        }
        out.push(Finding {
            fact: fact.to_string(),
            message: format!(
                "{fact} differs between cells ({}) and is not a factor under test",
                by_value(&values)
            ),
            values,
        });
    }
    out.extend(emulated(cells));
    out
}

/// Cells whose server ran in a TCG guest: their numbers say the guest
/// works, not how fast a virtual machine is (docs/placements.md).
fn emulated(cells: &[(String, Facts)]) -> Option<Finding> {
    let tcg: Vec<&str> = cells
        .iter()
        .filter(|(_, f)| f.guest.as_ref().is_some_and(|g| g.accel == "tcg"))
        .map(|(n, _)| n.as_str())
        .collect();
    let reason = cells
        .iter()
        .find_map(|(_, f)| f.guest.as_ref().filter(|g| g.accel == "tcg"))?
        .accel_reason
        .clone();
    Some(Finding {
        fact: "guest_accel".into(),
        values: cells
            .iter()
            .map(|(n, f)| {
                let v = f.guest.as_ref().map_or("host", |g| g.accel.as_str());
                (n.clone(), v.to_string())
            })
            .collect(),
        message: format!(
            "{} ran in a TCG guest, {} (no working KVM here: {reason})",
            tcg.join("; "),
            crate::vm::TCG_LABEL
        ),
    })
}

/// `values` grouped by value, each group named by what its cells have in
/// common and no other cell has ("ext4 where placement=native (4 cells);
/// overlay where placement is docker-host or docker-publish (8 cells)"), so
/// a finding over many cells stays one readable line. Cell names are read
/// as `factor=level` lists (the runner's cell ids); a group nothing
/// describes lists its cells.
fn by_value(values: &[(String, String)]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (cell, value) in values {
        match groups.iter_mut().find(|(v, _)| v == value) {
            Some((_, cells)) => cells.push(cell),
            None => groups.push((value, vec![cell])),
        }
    }
    let levels = |cell: &str| -> Vec<(String, String)> {
        cell.split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    };
    let parts: Vec<String> = groups
        .iter()
        .map(|(value, cells)| {
            let others: Vec<&str> = values
                .iter()
                .map(|(c, _)| c.as_str())
                .filter(|c| !cells.contains(c))
                .collect();
            let count = match cells.len() {
                1 => "1 cell".to_string(),
                n => format!("{n} cells"),
            };
            match describe(cells, &others, &levels) {
                Some(d) => format!("{value} where {d} ({count})"),
                None => format!("{value} in {}", cells.join("; ")),
            }
        })
        .collect();
    parts.join("; ")
}

/// A factor whose levels in `group` never occur in `others`, said as
/// `factor=level` or `factor is a, b or c`; `None` when no factor separates
/// the group from the rest.
fn describe(
    group: &[&str],
    others: &[&str],
    levels: &dyn Fn(&str) -> Vec<(String, String)>,
) -> Option<String> {
    let first = levels(group.first()?);
    for (factor, _) in &first {
        let level_of = |cell: &str| {
            levels(cell)
                .into_iter()
                .find(|(k, _)| k == factor)
                .map(|(_, v)| v)
        };
        let mut inside: Vec<String> = Vec::new();
        for c in group {
            let l = level_of(c)?;
            if !inside.contains(&l) {
                inside.push(l);
            }
        }
        let separates = others
            .iter()
            .all(|c| level_of(c).is_some_and(|l| !inside.contains(&l)));
        if separates {
            return Some(match inside.as_slice() {
                [one] => format!("{factor}={one}"),
                [init @ .., last] => format!("{factor} is {} or {last}", init.join(", ")),
                [] => return None,
            });
        }
    }
    None
}

/// The facts of a running server, from /proc of its process where possible.
pub(crate) fn measure(
    spec: &DeploySpec,
    server: &Server,
    endpoint: &Endpoint,
    running: &dyn Running,
) -> Facts {
    let pid = running.pid();
    // nginx's master sets up; a worker serves (worker_rlimit_nofile applies
    // there), so describe a child when there is one.
    let worker = procfs::first_child(pid).unwrap_or(pid);
    let mut process = ProcessFacts::of(worker, server, spec.image.is_none());
    let described = running.described();
    // What the kernel enforces on the server (its cgroup), falling back to
    // what the placement asked for if the cgroup files are not readable.
    process.cpu_limit = process.cpu_limit.or(described.cpu_limit);
    process.memory_limit = process.memory_limit.or(described.memory_limit);
    let (mut log_fs, mut content_fs) = (
        procfs::fs_type(worker, &server.log_path),
        procfs::fs_type(worker, &server.content_path),
    );
    // A guest's server is not a host process: what it sees comes from the
    // guest's own report (its CPUs, limits and filesystem), not QEMU's /proc.
    let mut guest_root_fs = None;
    let guest = described.guest.map(|(facts, inside)| {
        process.as_seen_in_guest(&inside);
        guest_root_fs = inside.root_fs.clone();
        log_fs = inside.fs.clone();
        content_fs = inside.data_fs.or(inside.fs);
        facts
    });
    Facts {
        target: spec.target.target.name().to_string(),
        placement: spec.placement.to_string(),
        variant: spec.target.variant.to_string(),
        transport: spec.transport.to_string(),
        endpoint: endpoint.to_string(),
        image: described.image,
        process,
        access_log: server.access_log.clone(),
        storage: described.storage,
        log_fs,
        content_fs,
        server_pid: Some(pid),
        rootfs_sha256: server.root.as_ref().map(|r| r.tree_sha256.clone()),
        // As the server sees its `/`; a chroot whose root is no mount point
        // in the server's namespace (lab-*: `ip netns exec` mounts its own
        // namespace) shows none, and is then the type of the host directory
        // it is.
        // A guest's is what its init saw (QEMU's is the host's).
        root_fs: server.root.as_ref().and_then(|r| match &guest {
            Some(_) => guest_root_fs,
            // The child read as the worker may be gone already (a
            // short-lived helper of the entrypoint): then the server's own.
            None => procfs::fs_type(worker, std::path::Path::new("/"))
                .or_else(|| procfs::fs_type(pid, std::path::Path::new("/")))
                .or_else(|| procfs::fs_type(std::process::id() as libc::pid_t, &r.dir)),
        }),
        // A guest has no cgroup of its own to name (its server is in
        // the guest's kernel).
        cgroup: server
            .root
            .as_ref()
            .filter(|_| guest.is_none())
            .and_then(|_| cgroup_of(worker)),
        backend: None,
        guest,
        helpers: Vec::new(),
    }
}

/// The cgroup (v2) process `pid` is in, as the host names it.
fn cgroup_of(pid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

impl BackendFacts {
    /// What a companion is, measured from /proc of its process.
    pub(crate) fn measure(
        addr: std::net::SocketAddr,
        server: &Server,
        running: &dyn Running,
    ) -> BackendFacts {
        let pid = running.pid();
        let described = running.described();
        let mut process = ProcessFacts::of(pid, server, true);
        // In the server's guest it has no host process: the guest says
        // what it sees, as for the server.
        let in_guest = described
            .guest
            .map(|(_, inside)| process.as_seen_in_guest(&inside));
        BackendFacts {
            target: server.target.name().to_string(),
            endpoint: addr.to_string(),
            image: described.image,
            process,
            pid: in_guest.is_none().then_some(pid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(name: &str, log_fs: &str, placement: &str) -> (String, Facts) {
        (
            name.to_string(),
            Facts {
                placement: placement.into(),
                log_fs: Some(log_fs.into()),
                process: ProcessFacts {
                    config_sha256: "abc".into(),
                    ..ProcessFacts::default()
                },
                ..Facts::default()
            },
        )
    }

    /// A guest's disk is compared as one line; a cell without one says
    /// `none`, so a guest on its disk and a container on a volume differ
    /// by it, and the storage factor excuses that.
    #[test]
    fn the_content_disk_is_compared_and_storage_excuses_it() {
        let mut vm = cell("vm", "ext4", "vm-bridge");
        vm.1.guest = Some(GuestFacts {
            disk: Some(GuestDisk {
                interface: "virtio-blk".into(),
                format: "raw".into(),
                cache: "none".into(),
                aio: "native".into(),
                bytes: 4 << 30,
                fs: "ext4".into(),
                host_fs: "ext4".into(),
            }),
            ..GuestFacts::default()
        });
        let native = cell("native", "ext4", "native");
        assert_eq!(
            vm.1.compared()["content_disk"],
            "virtio-blk raw file on ext4 (cache=none, aio=native)"
        );
        assert_eq!(native.1.compared()["content_disk"], "none");
        let cells = [native, vm];
        let facts = |f: &[Finding]| f.iter().map(|f| f.fact.clone()).collect::<Vec<_>>();
        assert!(facts(&fairness(&cells, &["placement"])).contains(&"content_disk".to_string()));
        assert!(!facts(&fairness(&cells, &["placement", "storage"]))
            .contains(&"content_disk".to_string()));
    }

    #[test]
    fn a_tcg_guest_is_labelled_emulated() {
        let mut vm = cell("vm", "tmpfs", "vm-bridge");
        vm.1.guest = Some(GuestFacts {
            accel: "tcg".into(),
            accel_reason: "the KVM trial boot failed".into(),
            ..GuestFacts::default()
        });
        let cells = [cell("native", "tmpfs", "native"), vm];
        let f = fairness(&cells, &["placement"]);
        let g = f.iter().find(|f| f.fact == "guest_accel").expect("{f:?}");
        assert!(g.message.contains(crate::vm::TCG_LABEL), "{}", g.message);
        assert!(
            g.message.starts_with("vm ran in a TCG guest"),
            "{}",
            g.message
        );
        assert_eq!(g.values[0].1, "host");
        let kvm = GuestFacts {
            accel: "kvm".into(),
            ..GuestFacts::default()
        };
        let mut k = cell("vm", "tmpfs", "vm-bridge");
        k.1.guest = Some(kvm);
        assert!(fairness(&[k], &["placement"]).is_empty());
    }

    #[test]
    fn log_on_tmpfs_vs_overlay_is_reported_when_placement_is_the_factor() {
        let cells = [
            cell("native", "tmpfs", "native"),
            cell("docker-host", "overlay", "docker-host"),
        ];
        let f = fairness(&cells, &["placement"]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].fact, "log_fs");
        assert!(f[0].message.contains("tmpfs") && f[0].message.contains("overlay"));
        // ...and excused when storage is itself under test.
        assert!(fairness(&cells, &["placement", "storage"]).is_empty());
    }

    #[test]
    fn a_finding_over_many_cells_is_grouped_by_value() {
        let mut cells = Vec::new();
        for (placement, fs) in [
            ("native", "ext4"),
            ("docker-host", "overlay"),
            ("docker-publish", "overlay"),
        ] {
            for log in ["on", "off"] {
                let id = format!("placement={placement},access_log={log}");
                cells.push(cell(&id, fs, placement));
            }
        }
        let f = fairness(&cells, &["placement", "access_log"]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].message,
            "log_fs differs between cells (ext4 where placement=native (2 cells); overlay where \
             placement is docker-host or docker-publish (4 cells)) and is not a factor under test"
        );
        // Names that are not factor lists are listed.
        let f = fairness(
            &[cell("a", "ext4", "x"), cell("b", "tmpfs", "y")],
            &["placement"],
        );
        assert_eq!(
            f[0].message,
            "log_fs differs between cells (ext4 in a; tmpfs in b) and is not a factor under test"
        );
    }

    #[test]
    fn identical_cells_have_no_findings() {
        let cells = [
            cell("a", "ext4", "native"),
            cell("b", "ext4", "docker-host"),
        ];
        assert!(fairness(&cells, &["placement"]).is_empty());
        assert!(fairness(&[], &[]).is_empty());
    }

    #[test]
    fn a_backend_difference_is_a_finding_too() {
        let with = |name: &str, nofile: u64, seccomp: &str| {
            let mut c = cell(name, "ext4", name);
            c.1.backend = Some(BackendFacts {
                process: ProcessFacts {
                    nofile_soft: Some(nofile),
                    seccomp: Some(seccomp.into()),
                    ..ProcessFacts::default()
                },
                ..BackendFacts::default()
            });
            c
        };
        let cells = [
            with("native", 1024, "disabled"),
            with("docker-host", 65535, "filter"),
        ];
        let f = fairness(&cells, &["placement"]);
        let facts: Vec<&str> = f.iter().map(|f| f.fact.as_str()).collect();
        assert_eq!(facts, ["backend_nofile", "backend_seccomp"], "{f:?}");
        // The seccomp factor covers the backend's container too.
        let f = fairness(&cells, &["placement", "seccomp"]);
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn config_difference_is_excused_only_by_variant() {
        let mut b = cell("b", "ext4", "native");
        b.1.process.config_sha256 = "def".into();
        let cells = [cell("a", "ext4", "native"), b];
        assert_eq!(fairness(&cells, &["placement"])[0].fact, "config_sha256");
        assert!(fairness(&cells, &["variant"]).is_empty());
    }
}
