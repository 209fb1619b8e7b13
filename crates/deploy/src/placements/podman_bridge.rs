//! A rootful Podman container on Podman's default network (a netavark or
//! CNI bridge, `podman0`), reached at the container's own address: veth and
//! the bridge, no NAT.

use super::podman_rootful::PODMAN;
use super::podman_site::{Net, PodmanSite};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct PodmanBridge;

impl Placement for PodmanBridge {
    fn name(&self) -> &'static str {
        "podman-bridge"
    }

    fn about(&self) -> &'static str {
        "a rootful Podman container on its default bridge, reached at its IP"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PODMAN
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Container
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        PodmanSite::create(cx, Net::Bridge)
    }
}
