//! The generator in a namespace of its own too, a client machine on the
//! LAN: it reaches the published port at the host's bridge address, through
//! PREROUTING DNAT and forwarding (the lab's `LabKind::Client`).

use super::{lab, SpecOption, Thin};
use crate::lab::LabKind;

pub(crate) static LAB_CLIENT: Thin = Thin {
    name: "lab-client",
    about: "load from a namespace that stands for another machine, through DNAT",
    mechanism: &lab::LAB,
    options: &[SpecOption::Netem],
    requires: None,
    refuses_storage: None,
    site: |name, cx| lab::site(name, LabKind::Client, cx),
};
