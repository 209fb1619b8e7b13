//! A QEMU guest on QEMU's user-mode network (slirp), reached through a
//! loopback port QEMU forwards (`hostfwd`): no root, no tap, and every
//! packet copied through QEMU's own TCP/IP stack, so slow by design.

use super::vm::{self, VmNet};
use super::{SpecOption, Thin};

pub(crate) static VM_USER: Thin = Thin {
    name: "vm-user",
    about: "a QEMU guest on user-mode networking, a loopback port QEMU forwards (slow by design: slirp copies every packet)",
    mechanism: &vm::VM,
    options: &[SpecOption::Vm, SpecOption::Storage],
    requires: None,
    refuses_storage: Some(vm::refuses_storage),
    site: |name, cx| vm::site(name, VmNet::User, cx),
};
