//! A rootless Podman container's published port on 127.0.0.1 forwarded by
//! slirp4netns itself (`port_handler=slirp4netns`): each connection crosses
//! slirp4netns's user-space TCP/IP stack and its tap device, with no
//! rootlessport.

use super::podman_rootless::{self, PODMAN_ROOTLESS};
use super::podman_site::Forwarder;
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct PodmanRootlessSlirp;

impl Placement for PodmanRootlessSlirp {
    fn name(&self) -> &'static str {
        "podman-rootless-slirp"
    }

    fn about(&self) -> &'static str {
        "a rootless Podman container's published port on 127.0.0.1: slirp4netns's own forwarder"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PODMAN_ROOTLESS
    }

    fn requires(&self) -> Result<(), String> {
        podman_rootless::requires(Forwarder::Slirp4netns)
    }

    fn accepts(&self, option: SpecOption) -> bool {
        matches!(option, SpecOption::Container | SpecOption::Rootless)
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        podman_rootless::site(cx, Forwarder::Slirp4netns)
    }
}
