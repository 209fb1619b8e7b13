//! As on the lab's bridge, reached on a loopback address through nftables
//! DNAT, exactly as Docker publishes a port with `--userland-proxy=false`
//! (the lab's `LabKind::Nat`).

use super::{lab, Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::lab::LabKind;

pub(crate) struct LabNat;

impl Placement for LabNat {
    fn name(&self) -> &'static str {
        "lab-nat"
    }

    fn about(&self) -> &'static str {
        "on the lab's bridge behind nftables DNAT, a published port without docker-proxy"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &lab::LAB
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Netem
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        lab::site(self.name(), LabKind::Nat, cx)
    }
}
