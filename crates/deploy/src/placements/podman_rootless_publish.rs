//! A rootless Podman container's published port on 127.0.0.1 as Podman 4
//! makes it by default: the slirp4netns network with
//! `port_handler=rootlesskit`, so each connection is accepted on the host
//! by the user's `rootlessport` process and copied into the container's
//! namespace. The port handler is named explicitly, so the path does not
//! change with a Podman whose default differs (docs/placements.md,
//! "Rootless Podman").

use super::podman_rootless::{self, PODMAN_ROOTLESS};
use super::podman_site::Forwarder;
use super::{SpecOption, Thin};

pub(crate) static PODMAN_ROOTLESS_PUBLISH: Thin = Thin {
    name: "podman-rootless-publish",
    about: "a rootless Podman container's published port on 127.0.0.1: rootlessport into slirp4netns's namespace",
    mechanism: &PODMAN_ROOTLESS,
    options: &[SpecOption::Container, SpecOption::Rootless],
    requires: Some(|| podman_rootless::requires(Forwarder::Rootlessport)),
    refuses_storage: None,
    site: |_, cx| podman_rootless::site(cx, Forwarder::Rootlessport),
};
