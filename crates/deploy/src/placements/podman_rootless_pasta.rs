//! A rootless Podman container's port on 127.0.0.1 forwarded by pasta:
//! from the host's loopback pasta splices each connection to the
//! namespace's loopback. Podman 4.4+ starts pasta itself with
//! `--network pasta`; Debian 12's Podman 4.3 cannot, so tare attaches the
//! same pasta, with the same forwarding, to a `--network none` container.

use super::podman_rootless::{self, PODMAN_ROOTLESS};
use super::podman_site::Forwarder;
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct PodmanRootlessPasta;

impl Placement for PodmanRootlessPasta {
    fn name(&self) -> &'static str {
        "podman-rootless-pasta"
    }

    fn about(&self) -> &'static str {
        "a rootless Podman container's port on 127.0.0.1: pasta's forwarder"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PODMAN_ROOTLESS
    }

    fn requires(&self) -> Result<(), String> {
        podman_rootless::requires(Forwarder::Pasta)
    }

    fn accepts(&self, option: SpecOption) -> bool {
        matches!(option, SpecOption::Container | SpecOption::Rootless)
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        podman_rootless::site(cx, Forwarder::Pasta)
    }
}
