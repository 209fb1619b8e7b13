//! The server as a plain process on the host, loaded over loopback: the
//! reference every other placement is compared with.

use super::process::{HostSite, PROCESSES};
use super::{SpecOption, Thin};

pub(crate) static NATIVE: Thin = Thin {
    name: "native",
    about: "a plain process on the host, over loopback",
    mechanism: &PROCESSES,
    options: &[SpecOption::Reach],
    requires: None,
    refuses_storage: None,
    site: |_, cx| {
        let mut site = HostSite::host();
        // Load from other hosts: the host's own address, a free port on it.
        site.bind = cx.spec.reach;
        Ok(Box::new(site))
    },
};
