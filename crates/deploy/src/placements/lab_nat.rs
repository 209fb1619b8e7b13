//! As on the lab's bridge, reached on a loopback address through nftables
//! DNAT, exactly as Docker publishes a port with `--userland-proxy=false`
//! (the lab's `LabKind::Nat`).

use super::{lab, SpecOption, Thin};
use crate::lab::LabKind;

pub(crate) static LAB_NAT: Thin = Thin {
    name: "lab-nat",
    about: "on the lab's bridge behind nftables DNAT, a published port without docker-proxy",
    mechanism: &lab::LAB,
    options: &[SpecOption::Netem],
    requires: None,
    refuses_storage: None,
    site: |name, cx| lab::site(name, LabKind::Nat, cx),
};
