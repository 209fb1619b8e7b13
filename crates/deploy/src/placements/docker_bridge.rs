//! A Docker container on the default bridge, reached at the container's own
//! address: veth and the bridge, no NAT.

use super::container::{ContainerSite, Net, DOCKER};
use super::{SpecOption, Thin};

pub(crate) static DOCKER_BRIDGE: Thin = Thin {
    name: "docker-bridge",
    about: "a Docker container on the default bridge, reached at its IP",
    mechanism: &DOCKER,
    options: &[SpecOption::Container],
    requires: None,
    refuses_storage: None,
    site: |_, cx| ContainerSite::create(cx, Net::Bridge),
};
