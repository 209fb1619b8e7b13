//! What to deploy: the target (server, config variant, access log) and the
//! placement (where it runs and how load reaches it). Plain data, so the
//! experiment runner can build one per cell and record it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::placements::PlacementKind;
use crate::registry::ParseNameError;
pub use crate::targets::{Target, TargetKind, Variant};

/// One deployment request: everything that decides how the server runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeploySpec {
    /// Names every resource this deployment creates (`tare-<run_id>-…`), so a
    /// killed run's leftovers can be found and parallel runs never collide.
    pub run_id: String,
    pub target: TargetSpec,
    pub placement: PlacementKind,
    pub transport: Transport,
    /// One-way delay added with netem on lab placements (a known ground truth).
    pub netem: Option<Duration>,
    /// A user-named image instead of the one `tare image build` makes from the
    /// host's binary. The fairness check then cannot vouch for the binary.
    pub image: Option<String>,
    pub container: ContainerOptions,
    /// CPUs the server may use (taskset/cpuset list, e.g. "1" or "0-1"), so
    /// the generator and the server do not fight for one core.
    pub server_cpus: Option<String>,
    /// CPUs for the processes the placement runs on the server's behalf
    /// (containerd-shim, conmon, docker-proxy, a fuse-overlayfs daemon):
    /// usually the server's own, so what the deployment costs is charged
    /// to the server's side every trial; `None` leaves them where the
    /// scheduler puts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helper_cpus: Option<String>,
    /// A guest's size (vm placements only).
    #[serde(default)]
    pub vm: VmOptions,
    /// The user rootless Podman runs as (podman-rootless-* only); `None`:
    /// tare's own `tare-rootless`, created on first use.
    #[serde(default)]
    pub rootless_user: Option<String>,
    /// The address of this host that load from other hosts reaches the
    /// server at (`[load] hosts`, `[target] host`); `None`: loopback, the
    /// default that keeps load on this machine (ARCHITECTURE.md,
    /// "Principles"). Placements that honour it accept `SpecOption::Reach`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<std::net::IpAddr>,
}

impl DeploySpec {
    /// A spec with the defaults: native placement, TCP, no limits.
    pub fn new(run_id: impl Into<String>, target: TargetSpec, placement: PlacementKind) -> Self {
        DeploySpec {
            run_id: run_id.into(),
            target,
            placement,
            transport: Transport::Tcp,
            netem: None,
            image: None,
            container: ContainerOptions::default(),
            server_cpus: None,
            helper_cpus: None,
            vm: VmOptions::default(),
            rootless_user: None,
            reach: None,
        }
    }
}

/// The server under test and the configuration one cell gives it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetSpec {
    /// The target, with the settings it owns (port, protocol, binary...).
    pub target: Target,
    /// Its config variant (checked against the target's own list).
    #[serde(default)]
    pub variant: Variant,
    /// Overrides whatever the variant says about `access_log`, for a
    /// target it applies to ([`Target::access_log`]).
    pub access_log: Option<AccessLog>,
    /// How many CPUs the server may run on, when the deployment pins it to
    /// fewer than the machine has and the server cannot count them itself
    /// (a process or a container: nginx 1.22's `worker_processes auto`
    /// counts the machine's online CPUs, not its affinity or cpuset). Set
    /// by the deployment from `DeploySpec::server_cpus`; `None` in a guest,
    /// which counts its own vCPUs.
    #[serde(skip)]
    pub cpus: Option<usize>,
}

impl TargetSpec {
    /// `target` in its default variant.
    pub fn new(target: Target) -> Self {
        TargetSpec {
            target,
            variant: Variant::default(),
            access_log: None,
            cpus: None,
        }
    }

    /// The built-in target `kind` with nothing changed, in its default variant.
    pub fn of(kind: TargetKind) -> Self {
        TargetSpec::new(kind.target())
    }

    /// A built-in variant by name (tests and the command line).
    pub fn with_variant(mut self, name: &str) -> Self {
        self.variant = Variant::Named(name.into());
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccessLog {
    On,
    Off,
    /// `buffer=32k flush=5s`, seed 000's suggested middle ground
    /// (docs/studies.md, seed 000, "The tuned configuration").
    Buffered,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    Tcp,
    Unix,
}

/// Container factors ("container factors are factors too": docs/studies.md,
/// "Why is `--network host` 17% slower than native?").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerOptions {
    /// Where the served content, config and logs live inside the container.
    pub storage: Storage,
    /// `--security-opt seccomp=unconfined`: ~2 points of the host-network gap
    /// in the same section of docs/studies.md.
    pub seccomp_unconfined: bool,
    /// CPU limit in CPUs (`--cpus`), e.g. 1.5.
    pub cpus: Option<f64>,
    /// Memory limit in bytes (`--memory`).
    pub memory: Option<u64>,
}

/// The size of a guest (`vm-*` placements): the seeds' VMs were sized by
/// hand (seed 001: `-smp 48 -m 8192`; docs/studies.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmOptions {
    /// vCPUs; `None`: as many as the server may use on the host.
    pub cpus: Option<u32>,
    /// Memory in MiB; `None`: 512.
    pub memory_mib: Option<u32>,
    /// How QEMU's threads are pinned to the server's CPUs.
    #[serde(default)]
    pub pin: VmPin,
}

/// How a guest is pinned to the CPUs the server may use (`[cpus] server`,
/// else the CPUs tare may use).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmPin {
    /// The whole QEMU process on those CPUs, as a native server is: the
    /// host's scheduler moves vCPUs between them.
    #[default]
    Process,
    /// vCPU *i* on the *i*-th of those CPUs (round robin when there are
    /// fewer), QEMU's other threads on all of them: libvirt's `<vcpupin>`.
    Vcpu,
}

impl VmPin {
    pub fn name(self) -> &'static str {
        match self {
            VmPin::Process => "process",
            VmPin::Vcpu => "vcpu",
        }
    }
}

/// Where a container's content and logs live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Storage {
    /// Copied into the container's own filesystem (overlayfs), as a stock
    /// image serves its files.
    #[default]
    Image,
    /// A Docker named volume (the daemon's host filesystem, no overlay).
    Volume,
    /// The deployment's host directory, bind-mounted (identical to native).
    HostPath,
    /// The files copied in as for `Image`, and a tmpfs (memory) mounted
    /// over the server's content directory: for a target that makes its
    /// content once running (the tool agent's test files).
    Tmpfs,
}

macro_rules! kebab_names {
    ($ty:ty, $what:literal, [$($variant:path => $name:literal),+ $(,)?]) => {
        impl $ty {
            pub fn name(self) -> &'static str {
                match self { $($variant => $name),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
        impl FromStr for $ty {
            type Err = ParseNameError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($variant),)+
                    _ => Err(ParseNameError {
                        what: $what,
                        given: s.to_string(),
                        expected: [$($name),+].join(", "),
                    }),
                }
            }
        }
    };
}

kebab_names!(AccessLog, "access_log setting", [
    AccessLog::On => "on",
    AccessLog::Off => "off",
    AccessLog::Buffered => "buffered",
]);
kebab_names!(Transport, "transport", [
    Transport::Tcp => "tcp",
    Transport::Unix => "unix",
]);
kebab_names!(Storage, "storage", [
    Storage::Image => "image",
    Storage::Volume => "volume",
    Storage::HostPath => "host-path",
    Storage::Tmpfs => "tmpfs",
]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_names_round_trip() {
        for p in PlacementKind::all() {
            assert_eq!(p.to_string().parse::<PlacementKind>().unwrap(), p);
        }
        let err = "docker".parse::<PlacementKind>().unwrap_err().to_string();
        assert!(err.contains("docker-host"), "{err}");
    }

    #[test]
    fn serde_uses_the_same_names_as_display() {
        let p: PlacementKind = "docker-publish".parse().unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "\"docker-publish\"");
        let t: TargetKind = serde_json::from_str("\"tare-serve\"").unwrap();
        assert_eq!(t.name(), "tare-serve");
        assert!(serde_json::from_str::<TargetKind>("\"apache\"").is_err());
        let t: TargetKind = "nginx-proxy".parse().unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"nginx-proxy\"");
    }

    #[test]
    fn other_names_round_trip() {
        for s in [
            Storage::Image,
            Storage::Volume,
            Storage::HostPath,
            Storage::Tmpfs,
        ] {
            assert_eq!(s.to_string().parse::<Storage>().unwrap(), s);
        }
        assert_eq!("unix".parse::<Transport>().unwrap(), Transport::Unix);
    }
}
