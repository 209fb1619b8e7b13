//! As `vm-bridge`, reached on a loopback address through nftables DNAT: a
//! forwarded host port, as libvirt's and most clouds' port forwards are
//! (the lab's `lab-nat` rules in front of a guest).

use super::vm::{self, VmNet};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::options::Storage;

pub(crate) struct VmPublish;

impl Placement for VmPublish {
    fn name(&self) -> &'static str {
        "vm-publish"
    }

    fn about(&self) -> &'static str {
        "a QEMU guest on a lab bridge behind nftables DNAT, a forwarded host port"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &vm::VM
    }

    fn accepts(&self, option: SpecOption) -> bool {
        matches!(option, SpecOption::Vm | SpecOption::Storage)
    }

    fn refuses_storage(&self, storage: Storage) -> Option<&'static str> {
        vm::refuses_storage(storage)
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        vm::site(self.name(), VmNet::Publish, cx)
    }
}
