//! The server in a QEMU guest whose virtio-net is a tap on a bridge of
//! tare's lab, reached at the guest's own address: libvirt's default
//! network (`placements::vm`, `lab::TapNet`).

use super::vm::{self, VmNet};
use super::{SpecOption, Thin};

pub(crate) static VM_BRIDGE: Thin = Thin {
    name: "vm-bridge",
    about: "a QEMU guest on a tap on a lab bridge, reached at the guest's address (libvirt's default network)",
    mechanism: &vm::VM,
    options: &[SpecOption::Vm, SpecOption::Storage],
    requires: None,
    refuses_storage: Some(vm::refuses_storage),
    site: |name, cx| vm::site(name, VmNet::Bridge, cx),
};
