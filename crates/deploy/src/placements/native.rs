//! The server as a plain process on the host, loaded over loopback: the
//! reference every other placement is compared with.

use super::process::{HostSite, PROCESSES};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct Native;

impl Placement for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    fn about(&self) -> &'static str {
        "a plain process on the host, over loopback"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PROCESSES
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Reach
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        let mut site = HostSite::host();
        // Load from other hosts: the host's own address, a free port on it.
        site.bind = cx.spec.reach;
        Ok(Box::new(site))
    }
}
