//! The rootless Podman mechanism: containers in an unprivileged user's
//! store and user namespace (`podman_user`), reached at a port published on
//! 127.0.0.1 through a user-space forwarder ([`Forwarder`]): rootlessport,
//! slirp4netns's own, or pasta. What tare leaves with it is that user's:
//! labelled containers and volumes, the forwarders (slirp4netns,
//! rootlessport, pasta) and tare's images in the user's store, all of which
//! `tare cleanup` removes once their owner is gone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::podman::{self, clean_labelled, Cli};
use super::podman_pasta::stop;
use super::podman_site::{Forwarder, PodNet, PodmanSite};
use super::podman_user::{self, which, RootlessUser, INSTALL};
use super::{Context, Mechanism, Site};
use crate::error::DeployError;
use crate::owner::CleanupReport;
use crate::owner::{OWNER_FILE, PREFIX};
use crate::procfs;

pub(crate) struct PodmanRootless;

pub(crate) static PODMAN_ROOTLESS: PodmanRootless = PodmanRootless;

/// The programs that forward a rootless container's port, as
/// `/proc/PID/exe` names them (pasta runs as `passt.avx2` where the CPU has
/// AVX2; rootlessport's child re-executes itself and shows as `exe`).
const HELPERS: [&str; 5] = [
    "slirp4netns",
    "rootlessport",
    "pasta",
    "passt",
    "passt.avx2",
];

/// Where Debian and Fedora put Podman's rootlessport.
const ROOTLESSPORT: [&str; 2] = [
    "/usr/lib/podman/rootlessport",
    "/usr/libexec/podman/rootlessport",
];

impl Mechanism for PodmanRootless {
    fn name(&self) -> &'static str {
        "podman-rootless"
    }

    fn available(&self) -> Result<String, String> {
        let v = podman::version()?;
        let user = podman_user::availability()?;
        Ok(format!("Podman {v} rootless, {user}"))
    }

    fn facts(&self) -> Vec<(String, String)> {
        if podman::version().is_err() {
            return Vec::new();
        }
        let user = match RootlessUser::resolve(None, false) {
            Ok(u) => u,
            Err(e) => return vec![("podman rootless".into(), e)],
        };
        let mut facts = vec![("podman rootless user".into(), user.describe())];
        if let Ok(info) = podman::info(&Cli::Rootless(Arc::new(user))) {
            facts.push((
                "podman rootless storage".into(),
                podman::storage_driver(&info),
            ));
        }
        facts
    }

    /// Without a cgroup of its own, a rootless container cannot be limited
    /// and shares tare's cgroup: say what tare does instead.
    fn warnings(&self) -> Vec<String> {
        if self.available().is_err() || cgroup_v2() {
            return Vec::new();
        }
        vec!["rootless Podman on cgroup v1 cannot set cgroup limits (Podman ignores --cpus and --memory there): tare refuses cpus and memory for the podman-rootless-* placements, pins their server by CPU affinity and follows its processes rather than a cgroup".into()]
    }

    fn cleanup(&self, report: &mut CleanupReport) {
        if podman::version().is_err() {
            return;
        }
        for user in podman_user::recorded() {
            clean_user(user, report);
        }
    }
}

/// Whether the unified cgroup hierarchy is mounted.
fn cgroup_v2() -> bool {
    Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}

/// What else a forwarder needs beyond the mechanism, or why not.
pub(super) fn requires(f: Forwarder) -> Result<(), String> {
    let missing = |tool: &str, package: &str| {
        format!("{tool} is not installed (Debian: apt-get install {package}; or scripts/setup.sh)")
    };
    match f {
        Forwarder::Pasta => which("pasta")
            .map(drop)
            .ok_or_else(|| missing("pasta", "passt")),
        Forwarder::Slirp4netns => which("slirp4netns")
            .map(drop)
            .ok_or_else(|| missing("slirp4netns", "slirp4netns")),
        Forwarder::Rootlessport => {
            which("slirp4netns").ok_or_else(|| missing("slirp4netns", "slirp4netns"))?;
            match ROOTLESSPORT.iter().any(|p| Path::new(p).is_file()) {
                true => Ok(()),
                false => Err(format!(
                    "Podman's rootlessport is not installed ({INSTALL})"
                )),
            }
        }
    }
}

/// The site of a rootless placement: its user resolved (the default one
/// made on first use), its image in that user's store.
pub(super) fn site(cx: &Context<'_>, f: Forwarder) -> Result<Box<dyn Site>, DeployError> {
    let placement = cx.spec.placement.name().to_string();
    let unavailable = |reason| DeployError::PlacementUnavailable {
        placement: placement.clone(),
        reason,
    };
    podman::version().map_err(unavailable)?;
    requires(f).map_err(unavailable)?;
    let user =
        RootlessUser::resolve(cx.spec.rootless_user.as_deref(), true).map_err(unavailable)?;
    let c = &cx.spec.container;
    if (c.cpus.is_some() || c.memory.is_some()) && !cgroup_v2() {
        return Err(DeployError::Invalid(format!(
            "{placement}: rootless Podman cannot set cgroup limits on cgroup v1 (Podman ignores --cpus and --memory there); drop cpus and memory, or use podman-publish"
        )));
    }
    PodmanSite::make(cx, Cli::Rootless(Arc::new(user)), PodNet::Rootless(f))
}

/// One rootless user's leftovers: containers and volumes of dead owners,
/// pastas of gone deployments, forwarders with no container left, and
/// tare's images in the user's store.
fn clean_user(user: RootlessUser, report: &mut CleanupReport) {
    let who = format!("rootless podman ({})", user.name);
    let uid = user.uid;
    let cli = Cli::Rootless(Arc::new(user));
    // Listed before the containers: a forwarder starts after its
    // container exists, so one listed here with no container afterwards
    // serves nothing.
    let helpers = helpers_of(uid);
    clean_labelled(&cli, &who, report);
    super::podman_orphans::clean(&cli, uid, &who, report);
    for (identity, name, args) in &helpers {
        if !name.starts_with("pas") {
            continue;
        }
        match pasta_deployment(args) {
            Some(dir) if deployment_alive(&dir) => report
                .live
                .push(format!("process {identity} ({name} of {who})")),
            Some(_) => {
                stop(identity);
                report
                    .removed
                    .push(format!("process {identity} ({name} of {who})"));
            }
            None => {}
        }
    }
    let none_left = cli
        .run(&["ps", "-a", "-q"])
        .is_ok_and(|out| out.trim().is_empty());
    if none_left {
        // Pastas were judged by their pid file above (one the user started
        // by hand is not tare's to stop).
        for (identity, name, _) in helpers.iter().filter(|h| !h.1.starts_with("pas")) {
            if procfs::owner_alive(identity) {
                stop(identity);
                report
                    .removed
                    .push(format!("process {identity} ({name} of {who})"));
            }
        }
    }
    clean_images(&cli, &who, report);
}

/// The forwarders run by `uid`: (identity, program name, arguments).
fn helpers_of(uid: u32) -> Vec<(String, String, Vec<String>)> {
    procfs::pids()
        .into_iter()
        .filter(|&p| {
            std::fs::metadata(format!("/proc/{p}"))
                .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == uid)
        })
        .filter_map(|p| {
            let exe = std::fs::read_link(format!("/proc/{p}/exe")).ok()?;
            let name = exe.file_name()?.to_str()?.to_string();
            if !HELPERS.contains(&name.as_str()) {
                return None;
            }
            let args = std::fs::read(format!("/proc/{p}/cmdline"))
                .ok()?
                .split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((procfs::identity(p)?, name, args))
        })
        .collect()
}

/// The tare deployment directory a pasta's `--pid` file is in, if any.
pub(crate) fn pasta_deployment(args: &[String]) -> Option<PathBuf> {
    let file = args
        .iter()
        .position(|a| a == "--pid" || a == "-P")
        .and_then(|i| args.get(i + 1))?;
    // <tmp>/tare-<run>-<pid>-<n>/pasta/pasta.pid
    let dir = Path::new(file).parent()?.parent()?;
    dir.file_name()?
        .to_str()?
        .starts_with(PREFIX)
        .then(|| dir.to_path_buf())
}

/// Whether a deployment directory still exists with a live owner.
fn deployment_alive(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(OWNER_FILE)).is_ok_and(|o| procfs::owner_alive(o.trim()))
}

/// tare's images in the user's store (`localhost/tare/...`). One a live
/// container uses is refused by Podman and left, reported as live.
fn clean_images(cli: &Cli, who: &str, report: &mut CleanupReport) {
    let listing = match cli.run(&[
        "images",
        "--filter",
        "reference=localhost/tare/*",
        "--format",
        "json",
    ]) {
        Ok(out) => out,
        Err(e) => return report.notes.push(e.to_string()),
    };
    for (id, name) in images(&listing) {
        match cli.run(&["rmi", &id]) {
            Ok(_) => report.removed.push(format!("{who} image {name}")),
            Err(e) if e.to_string().contains("in use") => {
                report.live.push(format!("{who} image {name}"))
            }
            Err(e) => report.notes.push(format!("{who} image {name}: {e}")),
        }
    }
}

/// (id, first name) of each image in a `podman images --format json`.
pub(crate) fn images(json: &str) -> Vec<(String, String)> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(json) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| {
            let id = i["Id"].as_str()?.to_string();
            let name = i["Names"]
                .as_array()
                .and_then(|n| n.first())
                .and_then(Value::as_str)
                .unwrap_or(&id)
                .to_string();
            Some((id, name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasta_is_tares_by_its_pid_file() {
        let args: Vec<String> = [
            "pasta",
            "--config-net",
            "--pid",
            "/tmp/tare-x-1-0/pasta/pasta.pid",
            "42",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            pasta_deployment(&args),
            Some(PathBuf::from("/tmp/tare-x-1-0"))
        );
        let theirs: Vec<String> = ["pasta", "--pid", "/run/user/1000/pasta.pid"]
            .map(String::from)
            .to_vec();
        assert_eq!(pasta_deployment(&theirs), None);
        assert_eq!(pasta_deployment(&["pasta".to_string()]), None);
    }

    #[test]
    fn image_listings_give_id_and_name() {
        let json = r#"[{"Id":"abc","Names":["localhost/tare/tare-serve:1234"]},{"Id":"def"}]"#;
        assert_eq!(
            images(json),
            vec![
                ("abc".into(), "localhost/tare/tare-serve:1234".into()),
                ("def".into(), "def".into())
            ]
        );
        assert!(images("nope").is_empty());
    }
}
