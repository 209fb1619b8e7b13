//! A rootless Podman container's published port on 127.0.0.1 forwarded by
//! slirp4netns itself (`port_handler=slirp4netns`): each connection crosses
//! slirp4netns's user-space TCP/IP stack and its tap device, with no
//! rootlessport.

use super::podman_rootless::{self, PODMAN_ROOTLESS};
use super::podman_site::Forwarder;
use super::{SpecOption, Thin};

pub(crate) static PODMAN_ROOTLESS_SLIRP: Thin = Thin {
    name: "podman-rootless-slirp",
    about: "a rootless Podman container's published port on 127.0.0.1: slirp4netns's own forwarder",
    mechanism: &PODMAN_ROOTLESS,
    options: &[SpecOption::Container, SpecOption::Rootless],
    requires: Some(|| podman_rootless::requires(Forwarder::Slirp4netns)),
    refuses_storage: None,
    site: |_, cx| podman_rootless::site(cx, Forwarder::Slirp4netns),
};
