//! A Docker container with `--network host`: the host's network stack, no
//! bridge, no NAT; what is left is the container itself (namespaces,
//! cgroups, seccomp, the image's filesystem).

use super::container::{ContainerSite, Net, DOCKER};
use super::{SpecOption, Thin};

pub(crate) static DOCKER_HOST: Thin = Thin {
    name: "docker-host",
    about: "a Docker container with --network host",
    mechanism: &DOCKER,
    // Reach: the host's network or a published port answer on the
    // host's own addresses; a bridge IP is this host's alone.
    options: &[SpecOption::Container, SpecOption::Reach],
    requires: None,
    refuses_storage: None,
    site: |_, cx| ContainerSite::create(cx, Net::Host),
};
