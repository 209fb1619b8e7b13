//! A Docker container's published port (`-p 127.0.0.1:PORT:PORT`), reached
//! on the host's loopback: on loopback this goes through docker-proxy (from
//! another host it would be iptables DNAT).

use super::container::{ContainerSite, Net, DOCKER};
use super::{SpecOption, Thin};

pub(crate) static DOCKER_PUBLISH: Thin = Thin {
    name: "docker-publish",
    about: "a Docker container's published port (-p) on 127.0.0.1: docker-proxy",
    mechanism: &DOCKER,
    // Reach: the host's network or a published port answer on the
    // host's own addresses; a bridge IP is this host's alone.
    options: &[SpecOption::Container, SpecOption::Reach],
    requires: None,
    refuses_storage: None,
    site: |_, cx| ContainerSite::create(cx, Net::Publish),
};
