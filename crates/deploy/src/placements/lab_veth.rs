//! The server in its own network namespace, joined to the host by one veth
//! pair; the generator connects to the server's address (the lab's
//! `LabKind::Veth`).

use super::{lab, Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::lab::LabKind;

pub(crate) struct LabVeth;

impl Placement for LabVeth {
    fn name(&self) -> &'static str {
        "lab-veth"
    }

    fn about(&self) -> &'static str {
        "its own network namespace, one veth pair to the host"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &lab::LAB
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Netem
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        lab::site(self.name(), LabKind::Veth, cx)
    }
}
