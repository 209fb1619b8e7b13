//! Containers that run with no record left in Podman's store: a `conmon`
//! (and the container under it) whose container `podman ps -a` no longer
//! knows. A `tare run` killed while its `podman start` was still at work
//! leaves that `podman` orphaned; `tare cleanup`'s `podman rm` can then
//! remove the record while the orphan still starts the container, which
//! runs on unlisted, under the store's owner (root, or a rootless user),
//! until someone finds its conmon. `tare cleanup` does: a conmon is tare's
//! by its container name (`tare-<run>-<pid>-<n>`, the deployment
//! directory's name) and stopped when its store has no such container and
//! its deployment's owner is gone. scripts/leftovers.sh looks for them too.

use std::path::Path;

use super::podman::Cli;
use crate::owner::CleanupReport;
use crate::owner::{OWNER_FILE, PREFIX};
use crate::procfs;

/// A conmon of `uid`: its pid, container id and name.
#[derive(Debug, PartialEq)]
pub(crate) struct Conmon {
    pub pid: libc::pid_t,
    pub id: String,
    pub name: String,
}

/// conmon's `-c ID` and `-n NAME` (or `--cid`, `--name`), as Podman starts it.
pub(crate) fn parse(args: &[String]) -> Option<(String, String)> {
    let value = |short: &str, long: &str| {
        let i = args.iter().position(|a| a == short || a == long)?;
        args.get(i + 1).cloned()
    };
    Some((value("-c", "--cid")?, value("-n", "--name")?))
}

/// The conmons `uid` runs for containers named as tare names them.
pub(crate) fn conmons(uid: u32) -> Vec<Conmon> {
    procfs::pids()
        .into_iter()
        .filter(|&p| {
            std::fs::metadata(format!("/proc/{p}"))
                .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == uid)
        })
        .filter_map(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
            (exe.file_name()? == "conmon").then_some(())?;
            let args: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
                .ok()?
                .split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let (id, name) = parse(&args)?;
            name.starts_with(PREFIX).then_some(Conmon { pid, id, name })
        })
        .collect()
}

/// Whether the deployment that named container `name` still has a live
/// owner: its directory is `name`, or `name` less a `-<role>` suffix (a
/// companion's container).
fn owner_alive(name: &str) -> bool {
    let tmp = std::env::temp_dir();
    let dirs = [Some(name), name.rsplit_once('-').map(|(d, _)| d)];
    dirs.into_iter().flatten().any(|d| {
        std::fs::read_to_string(Path::new(&tmp).join(d).join(OWNER_FILE))
            .is_ok_and(|o| procfs::owner_alive(o.trim()))
    })
}

/// Stops every orphaned conmon of `uid` whose store (`cli`) has no record
/// of its container and whose deployment is gone, with the container's
/// processes under it.
pub(super) fn clean(cli: &Cli, uid: u32, what: &str, report: &mut CleanupReport) {
    for c in conmons(uid) {
        let known = cli
            .output(&["container", "exists", &c.id])
            .map(|o| o.status.code() != Some(1));
        // Podman failed to answer (not "no such container"): leave it.
        if known.unwrap_or(true) {
            continue;
        }
        let line = format!(
            "process {} (conmon of {what} container {}, not in the store)",
            c.pid, c.name
        );
        if owner_alive(&c.name) {
            report.live.push(line);
            continue;
        }
        // The container's processes first, then conmon; each named by
        // its identity so a reused pid is never signalled.
        let mut tree: Vec<String> = procfs::tree(c.pid)
            .into_iter()
            .filter_map(procfs::identity)
            .collect();
        tree.reverse();
        for identity in &tree {
            super::podman_pasta::stop(identity);
        }
        report.removed.push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conmon_names_its_container() {
        let args: Vec<String> = [
            "/usr/bin/conmon",
            "--api-version",
            "1",
            "-c",
            "abc123",
            "-u",
            "abc123",
            "-n",
            "tare-rout-42-0",
            "--exit-dir",
            "/run/x",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            parse(&args),
            Some(("abc123".into(), "tare-rout-42-0".into()))
        );
        assert_eq!(parse(&["conmon".to_string()]), None);
    }
}
