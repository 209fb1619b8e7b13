//! The forwarders rootless Podman leaves to tare: pasta attached to a
//! container's network namespace (`attach_pasta`), and stopping one by its
//! identity (`stop`), which its teardown and `tare cleanup` both do.

use std::time::{Duration, Instant};

use super::podman;
use super::podman_user::RootlessUser;
use super::Context;
use crate::error::DeployError;
use crate::procfs;
use crate::teardown::{Resource, Undo};

/// Attaches pasta to the network namespace of the container process `pid`,
/// forwarding 127.0.0.1:`host_port` to its `port`, as the rootless user
/// (who owns the container's user namespace). Its pid file lives in the
/// deployment directory, which is how `tare cleanup` knows it for tare's.
pub(super) fn attach_pasta(
    user: &RootlessUser,
    cx: &Context<'_>,
    pid: i32,
    host_port: u16,
    port: u16,
) -> Result<(), DeployError> {
    let dir = cx.dir.join("pasta");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::os::unix::fs::chown(&dir, Some(user.uid), Some(user.gid)))
        .map_err(|e| DeployError::io(format!("creating {}", dir.display()), e))?;
    let pid_file = dir.join("pasta.pid");
    let out = user
        .command("pasta")
        .args([
            "--config-net",
            "--quiet",
            // This port alone, on loopback alone (ARCHITECTURE.md,
            // "Principles"); nothing forwarded the other way.
            "--tcp-ports",
            &format!("127.0.0.1/{host_port}:{port}"),
            "--udp-ports",
            "none",
            "--tcp-ns",
            "none",
            "--udp-ns",
            "none",
            "--pid",
        ])
        .arg(&pid_file)
        .arg(pid.to_string())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| DeployError::io("running pasta", e))?;
    if !out.status.success() {
        let last = podman::last_error(&out.stderr, "syslog");
        return Err(DeployError::Podman(format!("pasta: {last}")));
    }
    // pasta forks into the background; its pid file names the daemon.
    let daemon = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|s| s.trim().parse::<libc::pid_t>().ok())
        .and_then(procfs::identity)
        .ok_or_else(|| DeployError::Podman("pasta started but wrote no pid file".into()))?;
    cx.teardown
        .push(Resource::Undo(Box::new(Helper { identity: daemon })));
    Ok(())
}

/// A forwarder tare started, by "pid:starttime".
struct Helper {
    identity: String,
}

impl Undo for Helper {
    fn undo(self: Box<Self>) -> Result<(), DeployError> {
        stop(&self.identity);
        Ok(())
    }
}

/// TERM, a bounded wait, KILL: a process that is not our child, named by
/// its identity so a reused pid is never signalled.
pub(super) fn stop(identity: &str) {
    let Some(pid) = identity.split_once(':').and_then(|(p, _)| p.parse().ok()) else {
        return;
    };
    for (sig, wait) in [(libc::SIGTERM, 2000), (libc::SIGKILL, 500)] {
        if !procfs::owner_alive(identity) {
            return;
        }
        // SAFETY: plain syscall on a process checked just above.
        unsafe { libc::kill(pid, sig) };
        let deadline = Instant::now() + Duration::from_millis(wait);
        while Instant::now() < deadline && procfs::owner_alive(identity) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
