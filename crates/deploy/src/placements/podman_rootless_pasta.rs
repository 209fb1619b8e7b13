//! A rootless Podman container's port on 127.0.0.1 forwarded by pasta:
//! from the host's loopback pasta splices each connection to the
//! namespace's loopback. Podman 4.4+ starts pasta itself with
//! `--network pasta`; Debian 12's Podman 4.3 cannot, so tare attaches the
//! same pasta, with the same forwarding, to a `--network none` container.

use super::podman_rootless::{self, PODMAN_ROOTLESS};
use super::podman_site::Forwarder;
use super::{SpecOption, Thin};

pub(crate) static PODMAN_ROOTLESS_PASTA: Thin = Thin {
    name: "podman-rootless-pasta",
    about: "a rootless Podman container's port on 127.0.0.1: pasta's forwarder",
    mechanism: &PODMAN_ROOTLESS,
    options: &[SpecOption::Container, SpecOption::Rootless],
    requires: Some(|| podman_rootless::requires(Forwarder::Pasta)),
    refuses_storage: None,
    site: |_, cx| podman_rootless::site(cx, Forwarder::Pasta),
};
