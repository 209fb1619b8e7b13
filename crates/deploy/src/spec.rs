//! What to deploy: the target (server, config variant, access log) and the
//! placement (where it runs and how load reaches it). Plain data, so the
//! experiment runner can build one per cell and record it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::options::{ContainerOptions, Transport, VmOptions};
use crate::targets::TargetSpec;

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

/// A handle on one entry of the placement registry (`placements::PLACEMENTS`,
/// by its place in the list): what a spec names. Its methods stand with
/// the registry (placements/mod.rs), so this file names no placement.
#[derive(Clone, Copy)]
pub struct PlacementKind(pub(crate) usize);

#[cfg(test)]
mod tests {
    use super::PlacementKind;
    use crate::options::{Storage, Transport};
    use crate::targets::TargetKind;

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
