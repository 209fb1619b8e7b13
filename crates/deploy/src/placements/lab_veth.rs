//! The server in its own network namespace, joined to the host by one veth
//! pair; the generator connects to the server's address (the lab's
//! `LabKind::Veth`).

use super::{lab, SpecOption, Thin};
use crate::lab::LabKind;

pub(crate) static LAB_VETH: Thin = Thin {
    name: "lab-veth",
    about: "its own network namespace, one veth pair to the host",
    mechanism: &lab::LAB,
    options: &[SpecOption::Netem],
    requires: None,
    refuses_storage: None,
    site: |name, cx| lab::site(name, LabKind::Veth, cx),
};
