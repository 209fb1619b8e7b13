//! A rootful Podman container on Podman's default network (a netavark or
//! CNI bridge, `podman0`), reached at the container's own address: veth and
//! the bridge, no NAT.

use super::podman_rootful::PODMAN;
use super::podman_site::{Net, PodmanSite};
use super::{SpecOption, Thin};

pub(crate) static PODMAN_BRIDGE: Thin = Thin {
    name: "podman-bridge",
    about: "a rootful Podman container on its default bridge, reached at its IP",
    mechanism: &PODMAN,
    options: &[SpecOption::Container],
    requires: None,
    refuses_storage: None,
    site: |_, cx| PodmanSite::create(cx, Net::Bridge),
};
