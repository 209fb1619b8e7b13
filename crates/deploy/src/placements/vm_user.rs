//! A QEMU guest on QEMU's user-mode network (slirp), reached through a
//! loopback port QEMU forwards (`hostfwd`): no root, no tap, and every
//! packet copied through QEMU's own TCP/IP stack, so slow by design.

use super::vm::{self, VmNet};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;
use crate::options::Storage;

pub(crate) struct VmUser;

impl Placement for VmUser {
    fn name(&self) -> &'static str {
        "vm-user"
    }

    fn about(&self) -> &'static str {
        "a QEMU guest on user-mode networking, a loopback port QEMU forwards (slow by design: slirp copies every packet)"
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
        vm::site(self.name(), VmNet::User, cx)
    }
}
