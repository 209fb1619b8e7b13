//! Facts about a process read from /proc: they hold for host and container
//! processes alike (a container's server is a host pid), so native and Docker
//! placements are described by the same measurements, not by what we asked for.

use std::path::Path;

pub(crate) struct Stat {
    pub state: char,
    pub ppid: libc::pid_t,
    pub pgrp: libc::pid_t,
    /// Clock ticks since boot: with the pid, names one process across pid reuse.
    pub starttime: u64,
}

pub(crate) fn stat(pid: libc::pid_t) -> Option<Stat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after comm: state(3) ppid(4) pgrp(5) ... starttime(22); index = field - 3.
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        starttime: f.get(19)?.parse().ok()?,
    })
}

/// "PID:STARTTIME" of a process: the owner label written on everything a run creates.
pub(crate) fn identity(pid: libc::pid_t) -> Option<String> {
    stat(pid).map(|s| format!("{pid}:{}", s.starttime))
}

/// The owner label of this process.
pub(crate) fn own_identity() -> String {
    identity(std::process::id() as libc::pid_t)
        .unwrap_or_else(|| format!("{}:0", std::process::id()))
}

/// True if the process named by an owner label still runs (same pid, same start).
pub(crate) fn owner_alive(owner: &str) -> bool {
    let Some((pid, start)) = owner.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<libc::pid_t>(), start.parse::<u64>()) else {
        return false;
    };
    stat(pid).is_some_and(|s| s.starttime == start && s.state != 'Z')
}

/// All pids on the host (the host's pid namespace view).
pub(crate) fn pids() -> Vec<libc::pid_t> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// `pid` and every process below it (a scan of ppids).
pub(crate) fn tree(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let parents: Vec<(libc::pid_t, libc::pid_t)> = pids()
        .into_iter()
        .filter_map(|p| Some((p, stat(p)?.ppid)))
        .collect();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parents
                .iter()
                .filter(|&&(p, pp)| pp == parent && !out.contains(&p))
                .map(|&(p, _)| p)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    out
}

/// The lowest-numbered child of `pid`, if any (an nginx worker of its master).
pub(crate) fn first_child(pid: libc::pid_t) -> Option<libc::pid_t> {
    pids()
        .into_iter()
        .filter(|&p| stat(p).is_some_and(|s| s.ppid == pid))
        .min()
}

/// (soft, hard) open-file limit of a process; `None` means unlimited.
pub(crate) fn nofile(pid: libc::pid_t) -> Option<(Option<u64>, Option<u64>)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = s.lines().find(|l| l.starts_with("Max open files"))?;
    let f: Vec<&str> = line["Max open files".len()..].split_whitespace().collect();
    Some((f.first()?.parse().ok(), f.get(1)?.parse().ok()))
}

/// A field of /proc/PID/status, e.g. `Cpus_allowed_list` or `Seccomp`.
pub(crate) fn status_field(pid: libc::pid_t, key: &str) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| {
        l.strip_prefix(key)?
            .strip_prefix(':')
            .map(|v| v.trim().to_string())
    })
}

/// The seccomp mode from `/proc/PID/status`: `disabled`, `strict`, `filter`.
pub(crate) fn seccomp(pid: libc::pid_t) -> Option<String> {
    status_field(pid, "Seccomp").map(|v| match v.as_str() {
        "0" => "disabled".to_string(),
        "1" => "strict".to_string(),
        "2" => "filter".to_string(),
        other => other.to_string(),
    })
}

/// What bounds a process, as the kernel reports it: the facts compared
/// between placements for a server and for nginx-proxy's backend alike.
pub(crate) struct Limits {
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
    pub cpus_allowed: Option<String>,
    pub cpus_visible: Option<usize>,
    /// Its cgroup's CPU quota (cores) and memory limit.
    pub cpu_limit: Option<f64>,
    pub memory_limit: Option<u64>,
    pub seccomp: Option<String>,
}

pub(crate) fn limits(pid: libc::pid_t) -> Limits {
    let (nofile_soft, nofile_hard) = nofile(pid).unwrap_or((None, None));
    let cpus_allowed = status_field(pid, "Cpus_allowed_list");
    Limits {
        nofile_soft,
        nofile_hard,
        cpus_visible: cpus_allowed.as_deref().map(tare_engine::cpu::cpu_list_len),
        cpus_allowed,
        cpu_limit: crate::cgroup::cpu_limit(pid),
        memory_limit: crate::cgroup::memory_limit(pid),
        seccomp: seccomp(pid),
    }
}

/// The filesystem type of `path` as process `pid` sees it (its mount
/// namespace): the longest mount point of /proc/PID/mountinfo that contains it.
/// Inside a container this says `overlay` or `fuse.fuse-overlayfs`; on a bind
/// mount or a volume, the host's filesystem.
pub(crate) fn fs_type(pid: libc::pid_t, path: &Path) -> Option<String> {
    let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).ok()?;
    tare_tool::exec::fs_type_in(&info, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_described() {
        let me = own_identity();
        assert!(owner_alive(&me));
        assert!(!owner_alive("1:1"));
        assert!(!owner_alive("garbage"));
        let pid = std::process::id() as libc::pid_t;
        assert!(nofile(pid).is_some());
        assert!(status_field(pid, "Cpus_allowed_list").is_some());
        assert!(fs_type(pid, Path::new("/")).is_some());
    }

    #[test]
    fn unescapes_mountinfo() {
        let info = "40 22 0:5 / /a\\040b rw - tmpfs tmpfs rw\n";
        let fs = tare_tool::exec::fs_type_in(info, Path::new("/a b/c"));
        assert_eq!(fs.as_deref(), Some("tmpfs"));
    }
}
