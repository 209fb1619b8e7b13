//! A rootful Podman container's published port (`-p 127.0.0.1:PORT:PORT`),
//! reached on the host's loopback: netavark's (or CNI's portmap) nftables
//! or iptables DNAT, with no user-space proxy in the path (Docker's
//! docker-publish goes through docker-proxy on loopback).

use super::podman_rootful::PODMAN;
use super::podman_site::{Net, PodmanSite};
use super::{SpecOption, Thin};

pub(crate) static PODMAN_PUBLISH: Thin = Thin {
    name: "podman-publish",
    about: "a rootful Podman container's published port (-p) on 127.0.0.1: DNAT",
    mechanism: &PODMAN,
    options: &[SpecOption::Container],
    requires: None,
    refuses_storage: None,
    site: |_, cx| PodmanSite::create(cx, Net::Publish),
};
