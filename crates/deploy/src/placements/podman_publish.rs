//! A rootful Podman container's published port (`-p 127.0.0.1:PORT:PORT`),
//! reached on the host's loopback: netavark's (or CNI's portmap) nftables
//! or iptables DNAT, with no user-space proxy in the path (Docker's
//! docker-publish goes through docker-proxy on loopback).

use super::podman_rootful::PODMAN;
use super::podman_site::{Net, PodmanSite};
use super::{Context, Mechanism, Placement, Site, SpecOption};
use crate::error::DeployError;

pub(crate) struct PodmanPublish;

impl Placement for PodmanPublish {
    fn name(&self) -> &'static str {
        "podman-publish"
    }

    fn about(&self) -> &'static str {
        "a rootful Podman container's published port (-p) on 127.0.0.1: DNAT"
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        &PODMAN
    }

    fn accepts(&self, option: SpecOption) -> bool {
        option == SpecOption::Container
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        PodmanSite::create(cx, Net::Publish)
    }
}
