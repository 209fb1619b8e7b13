//! The lab mechanism: network namespaces, veth, a bridge and nftables NAT
//! that tare builds itself (`crate::lab`), with the server as a process in
//! the server namespace. The lab placements differ only in their `LabKind`.

use std::path::Path;

use super::process::HostSite;
use super::{Context, Mechanism, Site};
use crate::error::DeployError;
use crate::lab::{self, LabKind, LabNet};
use crate::owner::CleanupReport;
use crate::teardown::Resource;

pub(crate) struct Lab;

pub(crate) static LAB: Lab = Lab;

impl Mechanism for Lab {
    fn name(&self) -> &'static str {
        "lab"
    }

    fn available(&self) -> Result<String, String> {
        lab::available()?;
        Ok(match lab::delay_available() {
            Ok(lab::DelayMechanism::Netem) => "root, ip, nft and tc present; delay by netem".into(),
            Ok(lab::DelayMechanism::DelayLine) => {
                "root, ip, nft and tc present; delay by tare's delay line (no netem here)".into()
            }
            Err(e) => format!("root, ip, nft and tc present; no delay injection ({e})"),
        })
    }

    fn facts(&self) -> Vec<(String, String)> {
        let mut facts: Vec<(String, String)> = [("nft", "--version"), ("tc", "-V"), ("ip", "-V")]
            .into_iter()
            .map(|(tool, flag)| {
                let v = lab::command::locate(tool)
                    .and_then(|p| crate::host::version_line(&p, flag))
                    .unwrap_or_else(|| "not found".into());
                (tool.to_string(), v)
            })
            .collect();
        facts.push((
            "delay injection".into(),
            match lab::delay_available() {
                Ok(lab::DelayMechanism::Netem) => "netem".into(),
                Ok(lab::DelayMechanism::DelayLine) => "tare's delay line (no netem here)".into(),
                Err(e) => e,
            },
        ));
        facts
    }

    fn cleanup(&self, report: &mut CleanupReport) {
        match lab::cleanup_all() {
            Ok(removed) => report.removed.extend(removed),
            Err(e) => report.notes.push(format!("lab: {e}")),
        }
    }
}

/// A lab network of `kind` for this deployment, and the processes' site in it.
pub(super) fn site(
    placement: &str,
    kind: LabKind,
    cx: &Context<'_>,
) -> Result<Box<dyn Site>, DeployError> {
    let net = LabNet::create(kind, &cx.spec.run_id, cx.spec.netem).map_err(|e| {
        DeployError::PlacementUnavailable {
            placement: placement.to_string(),
            reason: e.to_string(),
        }
    })?;
    let site = HostSite {
        netns: Some(net.server_netns().to_path_buf()),
        bind: Some(net.server_addr()),
        front: Some(net.connect_addr(0).ip()),
        client_netns: net.client_netns().map(Path::to_path_buf),
    };
    cx.teardown.push(Resource::Undo(Box::new(net)));
    Ok(Box::new(site))
}

impl crate::teardown::Undo for LabNet {
    fn undo(self: Box<Self>) -> Result<(), DeployError> {
        self.teardown()
            .map_err(|e| DeployError::Invalid(format!("removing the lab network: {e}")))
    }
}
