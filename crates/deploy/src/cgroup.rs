//! Resource limits as the kernel enforces them: read from the cgroup the
//! server process is in (v1 or v2), walking up the hierarchy, so a native
//! server inside a limited slice and a container with `--memory` are
//! described by the same measurement.

use std::path::{Path, PathBuf};

const ROOT: &str = "/sys/fs/cgroup";

/// (v1 mount directory, path) of `controller` for process `pid`; v2 when no
/// v1 hierarchy has the controller.
fn cgroup_dir(pid: i32, controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let mut v2 = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        let rel = path.trim_start_matches('/');
        if ctrls.is_empty() {
            v2 = Some(Path::new(ROOT).join(rel));
        } else if ctrls.split(',').any(|c| c == controller) {
            let mount = Path::new(ROOT).join(ctrls);
            let mount = if mount.exists() {
                mount
            } else {
                Path::new(ROOT).join(controller)
            };
            return Some(mount.join(rel));
        }
    }
    v2.filter(|p| p.exists())
}

/// The smallest value of `file` (parsed by `parse`) from `dir` up to the root.
fn min_up(dir: &Path, file: &str, parse: impl Fn(&str) -> Option<f64>) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut d = Some(dir);
    while let Some(cur) = d {
        if !cur.starts_with(ROOT) {
            break;
        }
        if let Some(v) = std::fs::read_to_string(cur.join(file))
            .ok()
            .as_deref()
            .and_then(|s| parse(s.trim()))
        {
            best = Some(best.map_or(v, |b: f64| b.min(v)));
        }
        d = cur.parent();
    }
    best
}

/// Memory limit in bytes; `None` when unlimited (or not readable).
pub(crate) fn memory_limit(pid: i32) -> Option<u64> {
    let dir = cgroup_dir(pid, "memory")?;
    // v1 reports "unlimited" as a huge page-rounded number (2^63 - 4096).
    let parse = |s: &str| s.parse::<f64>().ok().filter(|&v| v < (1u64 << 62) as f64);
    min_up(&dir, "memory.limit_in_bytes", parse)
        .or_else(|| min_up(&dir, "memory.max", parse))
        .map(|v| v as u64)
}

/// CPU quota in CPUs (`--cpus`); `None` when unlimited.
pub(crate) fn cpu_limit(pid: i32) -> Option<f64> {
    let dir = cgroup_dir(pid, "cpu")?;
    let v1 = min_up(&dir, "cpu.cfs_quota_us", |q| {
        let q: f64 = q.parse().ok()?;
        let period: f64 = std::fs::read_to_string(dir.join("cpu.cfs_period_us"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        (q > 0.0).then(|| q / period)
    });
    v1.or_else(|| {
        min_up(&dir, "cpu.max", |s| {
            let (q, p) = s.split_once(' ')?;
            Some(q.parse::<f64>().ok()? / p.parse::<f64>().ok()?)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_limits_are_readable_or_unlimited() {
        let me = std::process::id() as i32;
        // Whatever they are, they must be plausible numbers, not garbage.
        if let Some(m) = memory_limit(me) {
            assert!(m > 1 << 20, "{m}");
        }
        if let Some(c) = cpu_limit(me) {
            assert!(c > 0.0 && c < 4096.0, "{c}");
        }
    }
}
