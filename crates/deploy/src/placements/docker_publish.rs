//! A Docker container's published port (`-p 127.0.0.1:PORT:PORT`), reached
//! on the host's loopback: on loopback this goes through docker-proxy (from
//! another host it would be iptables DNAT).

use super::container::{ContainerSite, Net, DOCKER};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct DockerPublish;

impl Placement for DockerPublish {
    fn name(&self) -> &'static str {
        "docker-publish"
    }

    fn about(&self) -> &'static str {
        "a Docker container's published port (-p) on 127.0.0.1: docker-proxy"
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
        ContainerSite::create(cx, Net::Publish)
    }
}
