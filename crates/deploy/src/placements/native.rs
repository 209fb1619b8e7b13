//! The server as a plain process on the host, loaded over loopback: the
//! reference every other placement is compared with.

use super::process::{HostSite, PROCESSES};
use super::{Context, Mechanism, Placement, Site};
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

    fn site(&self, _cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        Ok(Box::new(HostSite::host()))
    }
}
