//! As `vm-bridge`, reached on a loopback address through nftables DNAT: a
//! forwarded host port, as libvirt's and most clouds' port forwards are
//! (the lab's `lab-nat` rules in front of a guest).

use super::vm::{self, VmNet};
use super::{SpecOption, Thin};

pub(crate) static VM_PUBLISH: Thin = Thin {
    name: "vm-publish",
    about: "a QEMU guest on a lab bridge behind nftables DNAT, a forwarded host port",
    mechanism: &vm::VM,
    options: &[SpecOption::Vm, SpecOption::Storage],
    requires: None,
    refuses_storage: Some(vm::refuses_storage),
    site: |name, cx| vm::site(name, VmNet::Publish, cx),
};
