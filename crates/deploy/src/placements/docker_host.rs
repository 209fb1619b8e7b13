//! A Docker container with `--network host`: the host's network stack, no
//! bridge, no NAT; what is left is the container itself (namespaces,
//! cgroups, seccomp, the image's filesystem).

use super::container::{ContainerSite, Net, DOCKER};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct DockerHost;

impl Placement for DockerHost {
    fn name(&self) -> &'static str {
        "docker-host"
    }

    fn about(&self) -> &'static str {
        "a Docker container with --network host"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &DOCKER
    }

    fn accepts(&self, option: SpecOption) -> bool {
        // Reach: the host's network or a published port answer on the
        // host's own addresses; a bridge IP is this host's alone.
        matches!(option, SpecOption::Container | SpecOption::Reach)
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        ContainerSite::create(cx, Net::Host)
    }
}
