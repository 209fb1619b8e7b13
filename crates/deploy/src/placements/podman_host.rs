//! A rootful Podman container with `--network host`: the host's network
//! stack, no bridge, no NAT; what is left is the container itself
//! (namespaces, cgroups, seccomp, the image's filesystem), run by conmon
//! instead of containerd-shim.

use super::podman_rootful::PODMAN;
use super::podman_site::{Net, PodmanSite};
use super::{SpecOption, Thin};

pub(crate) static PODMAN_HOST: Thin = Thin {
    name: "podman-host",
    about: "a rootful Podman container with --network host",
    mechanism: &PODMAN,
    options: &[SpecOption::Container],
    requires: None,
    refuses_storage: None,
    site: |_, cx| PodmanSite::create(cx, Net::Host),
};
