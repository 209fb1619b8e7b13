//! The server's veth is a port of a bridge tare makes, as a container's is a
//! port of docker0; the host talks to it through the bridge (the lab's
//! `LabKind::Bridge`).

use super::{lab, SpecOption, Thin};
use crate::lab::LabKind;

pub(crate) static LAB_BRIDGE: Thin = Thin {
    name: "lab-bridge",
    about: "its own network namespace on a bridge, as a container on docker0",
    mechanism: &lab::LAB,
    options: &[SpecOption::Netem],
    requires: None,
    refuses_storage: None,
    site: |name, cx| lab::site(name, LabKind::Bridge, cx),
};
