//! The server's veth is a port of a bridge tare makes, as a container's is a
//! port of docker0; the host talks to it through the bridge (the lab's
//! `LabKind::Bridge`).

use super::{lab, Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::lab::LabKind;

pub(crate) struct LabBridge;

impl Placement for LabBridge {
    fn name(&self) -> &'static str {
        "lab-bridge"
    }

    fn about(&self) -> &'static str {
        "its own network namespace on a bridge, as a container on docker0"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &lab::LAB
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Netem
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        lab::site(self.name(), LabKind::Bridge, cx)
    }
}
