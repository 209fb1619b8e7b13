//! Measuring what a running deployment is ([`Facts`]): from /proc of its
//! server process where possible, for host and container alike, and what
//! its placement adds ([`Described`]) rather than assumed.

use tare_engine::Endpoint;

use crate::facts::{BackendFacts, Described, Facts, ProcessFacts};
use crate::procfs;
use crate::spec::DeploySpec;
use crate::targets::{Listen, Server};

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
                    .then(|| crate::host::file_sha256(&server.binary).ok())
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
}

/// The facts of a running server, from /proc of its process where possible.
/// `pid` is its host pid, `described` what its placement adds.
pub(crate) fn facts(
    spec: &DeploySpec,
    server: &Server,
    endpoint: &Endpoint,
    pid: i32,
    described: Described,
) -> Facts {
    // nginx's master sets up; a worker serves (worker_rlimit_nofile applies
    // there), so describe a child when there is one.
    let worker = procfs::first_child(pid).unwrap_or(pid);
    let mut process = ProcessFacts::of(worker, server, spec.image.is_none());
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

/// What a companion is (nginx-proxy's backend), measured from /proc of its
/// process `pid` like the server, so a difference between placements is
/// found on either side: where the server reaches it (`at`), and what
/// its placement adds (`described`).
pub(crate) fn backend(
    at: &Listen,
    server: &Server,
    pid: i32,
    described: Described,
) -> BackendFacts {
    let mut process = ProcessFacts::of(pid, server, true);
    // In the server's guest it has no host process: the guest says
    // what it sees, as for the server.
    let in_guest = described
        .guest
        .map(|(_, inside)| process.as_seen_in_guest(&inside));
    BackendFacts {
        target: server.target.name().to_string(),
        endpoint: match at {
            Listen::Tcp(a) => a.to_string(),
            Listen::Unix(p) => p.display().to_string(),
        },
        image: described.image,
        process,
        pid: in_guest.is_none().then_some(pid),
    }
}
