//! A rootful Podman container with `--network host`: the host's network
//! stack, no bridge, no NAT; what is left is the container itself
//! (namespaces, cgroups, seccomp, the image's filesystem), run by conmon
//! instead of containerd-shim.

use super::podman_rootful::PODMAN;
use super::podman_site::{Net, PodmanSite};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct PodmanHost;

impl Placement for PodmanHost {
    fn name(&self) -> &'static str {
        "podman-host"
    }

    fn about(&self) -> &'static str {
        "a rootful Podman container with --network host"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PODMAN
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Container
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        PodmanSite::create(cx, Net::Host)
    }
}
