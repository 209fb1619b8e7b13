//! The server in a QEMU guest whose virtio-net is a tap on a bridge of
//! tare's lab, reached at the guest's own address: libvirt's default
//! network (`placements::vm`, `lab::TapNet`).

use super::vm::{self, VmNet};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::options::Storage;

pub(crate) struct VmBridge;

impl Placement for VmBridge {
    fn name(&self) -> &'static str {
        "vm-bridge"
    }

    fn about(&self) -> &'static str {
        "a QEMU guest on a tap on a lab bridge, reached at the guest's address (libvirt's default network)"
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
        vm::site(self.name(), VmNet::Bridge, cx)
    }
}
