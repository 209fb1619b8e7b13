//! The settings a deployment varies, each a plain value with its name on
//! the command line and in experiment files: the access log, the
//! transport, a container's and a guest's options, the storage. A leaf:
//! the spec, the targets and the placements all read them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::registry::ParseNameError;

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
