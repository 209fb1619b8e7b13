//! `tare cleanup`: remove what killed runs left behind, found by tare's labels
//! and name prefixes alone, and nothing else. A resource whose owner process
//! still runs (a measuring `tare run` beside this one) is left alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::DeployError;
use crate::owner::{CleanupReport, OWNER_FILE, PREFIX};
use crate::placements::{self, process::PIDS_FILE};
use crate::procfs;
use crate::teardown::signal_group;

/// Removes every tare leftover whose owner is gone: server processes and
/// deployment directories, then what each placement mechanism made (Docker
/// containers and volumes labelled `tare`, lab namespaces, links and
/// nftables tables, images built from a user's Dockerfile). The images
/// `tare image build` makes are a cache, not leftovers: they stay (remove
/// them with `docker rmi` by the `tare` label).
pub fn cleanup() -> Result<CleanupReport, DeployError> {
    let mut report = CleanupReport::default();
    // Processes first (with their directories), so nothing still runs in a
    // namespace or holds a volume when its mechanism removes it.
    clean_dirs(&mut report);
    for m in placements::mechanisms() {
        m.cleanup(&mut report);
    }
    Ok(report)
}

/// Deployment directories (`$TMPDIR/tare-*` holding an owner file) of dead
/// owners: stop the processes they list, then remove them.
fn clean_dirs(report: &mut CleanupReport) {
    let mut bases = vec![std::env::temp_dir()];
    if !bases.contains(&PathBuf::from("/tmp")) {
        bases.push("/tmp".into());
    }
    for base in bases {
        let Ok(rd) = std::fs::read_dir(&base) else {
            continue;
        };
        for e in rd.flatten() {
            let path = e.path();
            let is_ours = e
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(PREFIX))
                && path.join(OWNER_FILE).is_file();
            if !is_ours {
                continue;
            }
            let owner = std::fs::read_to_string(path.join(OWNER_FILE)).unwrap_or_default();
            if procfs::owner_alive(owner.trim()) {
                report.live.push(format!("directory {}", path.display()));
                continue;
            }
            for pid in listed_processes(&path) {
                stop_foreign_group(pid);
                report.removed.push(format!("process {pid}"));
            }
            match std::fs::remove_dir_all(&path) {
                Ok(()) => report.removed.push(format!("directory {}", path.display())),
                Err(e) => report.notes.push(format!("{}: {e}", path.display())),
            }
        }
    }
}

/// Processes a deployment directory lists that still run (same pid, same start).
fn listed_processes(dir: &Path) -> Vec<libc::pid_t> {
    std::fs::read_to_string(dir.join(PIDS_FILE))
        .unwrap_or_default()
        .lines()
        .filter(|l| procfs::owner_alive(l.trim()))
        .filter_map(|l| l.split_once(':').and_then(|(p, _)| p.parse().ok()))
        .collect()
}

/// Stops a process group that is not our child: TERM, bounded wait, KILL.
fn stop_foreign_group(pgid: libc::pid_t) {
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && crate::teardown::group_alive(pgid) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if crate::teardown::group_alive(pgid) {
        signal_group(pgid, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(50));
    }
}
