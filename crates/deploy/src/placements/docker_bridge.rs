//! A Docker container on the default bridge, reached at the container's own
//! address: veth and the bridge, no NAT.

use super::container::{ContainerSite, Net, DOCKER};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct DockerBridge;

impl Placement for DockerBridge {
    fn name(&self) -> &'static str {
        "docker-bridge"
    }

    fn about(&self) -> &'static str {
        "a Docker container on the default bridge, reached at its IP"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &DOCKER
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Container
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        ContainerSite::create(cx, Net::Bridge)
    }
}
