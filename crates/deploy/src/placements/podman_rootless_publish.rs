//! A rootless Podman container's published port on 127.0.0.1 as Podman 4
//! makes it by default: the slirp4netns network with
//! `port_handler=rootlesskit`, so each connection is accepted on the host
//! by the user's `rootlessport` process and copied into the container's
//! namespace. The port handler is named explicitly, so the path does not
//! change with a Podman whose default differs (docs/placements.md,
//! "Rootless Podman").

use super::podman_rootless::{self, PODMAN_ROOTLESS};
use super::podman_site::Forwarder;
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct PodmanRootlessPublish;

impl Placement for PodmanRootlessPublish {
    fn name(&self) -> &'static str {
        "podman-rootless-publish"
    }

    fn about(&self) -> &'static str {
        "a rootless Podman container's published port on 127.0.0.1: rootlessport into slirp4netns's namespace"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PODMAN_ROOTLESS
    }

    fn requires(&self) -> Result<(), String> {
        podman_rootless::requires(Forwarder::Rootlessport)
    }

    fn accepts(&self, option: SpecOption) -> bool {
        matches!(option, SpecOption::Container | SpecOption::Rootless)
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        podman_rootless::site(cx, Forwarder::Rootlessport)
    }
}
