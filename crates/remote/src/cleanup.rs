//! Leaving nothing on a host: at the end of a run, and by `tare cleanup`
//! after a killed one. On the host, `tare agent cleanup DIR` (the run's own
//! copy of tare) ends the agents still running from that copy, runs the
//! host's `tare cleanup` over the run's deployments, and removes the run's
//! directory, binary included.

use std::path::Path;
use std::time::Duration;

use crate::host::{sh_path, Host};
use crate::RemoteError;

const CLEANUP_LIMIT: Duration = Duration::from_secs(120);

/// Cleans up `run_id`'s directory on `host`, or with `None` every run
/// directory tare left there; returns what was removed, one line each.
pub fn cleanup(host: &Host, run_id: Option<&str>) -> Result<Vec<String>, RemoteError> {
    let dirs = match run_id {
        Some(id) => sh_path(&host.run_dir(id)),
        None => format!("{}/tare-*", sh_path(&host.dir)),
    };
    let script = format!(
        "for d in {dirs}; do [ -d \"$d\" ] || continue; \
         if [ -x \"$d/tare\" ]; then TMPDIR=\"$d/tmp\" \"$d/tare\" agent cleanup \"$d\"; \
         else rm -rf \"$d\" && echo \"removed $d\"; fi; done"
    );
    let out = host.run(&script, b"", CLEANUP_LIMIT)?;
    Ok(out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{}: {l}", host.name))
        .collect())
}

/// The agent's side: ends every other process running `dir/tare`, cleans
/// up what they deployed, removes `dir`. Prints one line per thing removed.
pub fn serve_cleanup(dir: &Path) -> Result<(), String> {
    let binary = dir.join("tare");
    let me = std::process::id();
    let others = || -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| *pid as u32 != me)
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == binary)
            })
            .collect()
    };
    let running = others();
    for pid in &running {
        // SAFETY: plain kill(2) of a process running this run's binary.
        unsafe { libc::kill(*pid, libc::SIGTERM) };
        println!("stopped agent {pid}");
    }
    for _ in 0..50 {
        if others().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in others() {
        // SAFETY: as above; it ignored SIGTERM for five seconds.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let report = tare_deploy::cleanup().map_err(|e| e.to_string())?;
    for r in &report.removed {
        println!("removed {r}");
    }
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    println!("removed {}", dir.display());
    // The hosts' `dir` itself, made by the first run, once no run is in it
    // (remove_dir fails on a directory that is not empty).
    if let Some(parent) = dir.parent() {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(())
}
