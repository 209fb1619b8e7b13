//! Every process on the machine that no group of the monitor follows, by
//! name: what "the rest of the machine" was. A reading at the start and one
//! at the end of a record; the CPU each name used in between is split out
//! of "the rest" when it is a real share of a request's cost (a
//! fuse-overlayfs daemon serving a container's files took 55-80 µs of a
//! request's CPU on this project's machine: docs/studies.md,
//! "fuse-overlayfs (2026-11-25)").

use std::collections::{BTreeMap, HashMap, HashSet};

use super::stat::parse_stat;

/// CPU ticks of each process, by (pid, start time), with its name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Census {
    tasks: HashMap<(u32, u64), (String, u64)>,
}

impl Census {
    /// Every process now but those in `exclude` (the monitor's groups).
    pub(crate) fn take(exclude: &HashSet<u32>) -> Census {
        let mut tasks = HashMap::new();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return Census { tasks };
        };
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if exclude.contains(&pid) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            if let Some((comm, s)) = parse_stat(&text) {
                tasks.insert((pid, s.starttime), (family(comm), s.utime + s.stime));
            }
        }
        Census { tasks }
    }

    /// CPU seconds each name used since `earlier`: a process there and here
    /// counts its difference, one born since counts all it used (a process
    /// that ended in between is lost: its CPU stays in "the rest").
    pub(crate) fn since(&self, earlier: &Census, ticks_per_s: f64) -> BTreeMap<String, f64> {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for (key, (name, ticks)) in &self.tasks {
            let before = earlier.tasks.get(key).map_or(0, |(_, t)| *t);
            let used = ticks.saturating_sub(before);
            if used > 0 {
                *out.entry(name.clone()).or_default() += used as f64 / ticks_per_s;
            }
        }
        out
    }
}

/// A process name without the per-CPU or per-instance suffix kernel threads
/// carry (`kworker/1:2`, `ksoftirqd/0` → `kworker/*`, `ksoftirqd/*`), so one
/// kind of work is one column.
fn family(comm: &str) -> String {
    match comm.split_once('/') {
        Some((head, _)) => format!("{head}/*"),
        None => comm.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_shows_up_under_its_name() {
        let before = Census::take(&HashSet::new());
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        child.wait().unwrap();
        // The child ended: its CPU is lost, as documented. A live one counts.
        // Its own process group, killed whole: the `sleep` it starts must
        // not outlive the test. Quiet, so nothing holds the test's output.
        use std::os::unix::process::CommandExt;
        let mut live = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 30",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // Until the census sees its CPU (bounded: 20 s), not a fixed wait
        // that a loaded machine outlasts.
        let mut used = BTreeMap::new();
        for _ in 0..200 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            used = Census::take(&HashSet::new()).since(&before, 100.0);
            if used.get("sh").copied().unwrap_or(0.0) > 0.05 {
                break;
            }
        }
        // SAFETY: kill(2) of the child's own process group.
        unsafe { libc::kill(-(live.id() as i32), libc::SIGKILL) };
        let _ = live.wait();
        assert!(used.get("sh").copied().unwrap_or(0.0) > 0.05, "{used:?}");
        assert_eq!(family("kworker/1:2"), "kworker/*");
        assert_eq!(family("fuse-overlayfs"), "fuse-overlayfs");
    }
}
