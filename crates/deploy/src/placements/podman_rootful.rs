//! The Podman mechanism as root: whether this machine has it, what it
//! says of itself, what `tare cleanup` removes from its store. The
//! rootless one is `podman_rootless`'s; both drive `podman::Cli`.

use super::podman::{clean_labelled, info, network_backend, storage_driver, version, Cli};
use super::podman_orphans;
use super::Mechanism;
use crate::owner::CleanupReport;

pub(crate) struct Podman;

pub(crate) static PODMAN: Podman = Podman;

impl Mechanism for Podman {
    fn name(&self) -> &'static str {
        "podman"
    }

    fn available(&self) -> Result<String, String> {
        let v = version()?;
        // SAFETY: plain syscall.
        let uid = unsafe { libc::geteuid() };
        if uid != 0 {
            return Err(format!(
                "Podman {v} is installed but the rootful Podman placements need root (tare runs as uid {uid})"
            ));
        }
        let info = info(&Cli::Rootful).map_err(|e| e.to_string())?;
        Ok(format!(
            "Podman {v} (rootful, network backend {})",
            network_backend(&info)
        ))
    }

    fn facts(&self) -> Vec<(String, String)> {
        let v = match version() {
            Ok(v) => v,
            Err(e) => return vec![("podman".into(), e)],
        };
        let mut facts = vec![("podman".into(), v)];
        if let Ok(info) = info(&Cli::Rootful) {
            facts.push(("podman network".into(), network_backend(&info)));
            facts.push(("podman storage driver".into(), storage_driver(&info)));
        }
        facts
    }

    /// As for Docker (`container::Docker::warnings`): a storage driver that
    /// is not the kernel's overlayfs puts a user-space or copying filesystem
    /// under every file a container serves from its image.
    fn warnings(&self) -> Vec<String> {
        if version().is_err() {
            return Vec::new();
        }
        let Ok(info) = info(&Cli::Rootful) else {
            return Vec::new();
        };
        match storage_driver(&info).as_str() {
            d @ ("fuse-overlayfs" | "vfs" | "devicemapper" | "btrfs" | "zfs") => vec![format!(
                "Podman's storage driver is {d}, not the kernel's overlay: a container serving files from its image pays for it (measured here with Docker on fuse-overlayfs: 0.32x native); vary the storage factor (storage = [\"image\", \"volume\"]) to measure it, or use volume or host-path to take it out (docs/experiments.md)"
            )],
            _ => Vec::new(),
        }
    }

    fn cleanup(&self, report: &mut CleanupReport) {
        // No Podman here: nothing of tare's can be in its store.
        if version().is_err() {
            return;
        }
        clean_labelled(&Cli::Rootful, "podman", report);
        podman_orphans::clean(&Cli::Rootful, 0, "podman", report);
    }
}
