//! The generator in a namespace of its own too, a client machine on the
//! LAN: it reaches the published port at the host's bridge address, through
//! PREROUTING DNAT and forwarding (the lab's `LabKind::Client`).

use super::{lab, Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::lab::LabKind;

pub(crate) struct LabClient;

impl Placement for LabClient {
    fn name(&self) -> &'static str {
        "lab-client"
    }

    fn about(&self) -> &'static str {
        "load from a namespace that stands for another machine, through DNAT"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &lab::LAB
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Netem
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        lab::site(self.name(), LabKind::Client, cx)
    }
}
