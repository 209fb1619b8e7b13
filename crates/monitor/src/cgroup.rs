//! A container's (or any cgroup's) CPU, memory and I/O, from its cgroup
//! files: exact, and cheaper than the Docker stats API (which reads the same
//! files and adds a JSON round trip through the daemon).
//!
//! Both layouts are handled, because Docker hosts run both:
//! - cgroup v2: `cpu.stat` (`user_usec`, `system_usec`), `memory.current`,
//!   `io.stat` (`wbytes=`), `cgroup.procs`, under the cgroup2 mount.
//! - cgroup v1: `cpuacct.stat` (`user`, `system` in USER_HZ ticks),
//!   `memory.usage_in_bytes`, `blkio.throttle.io_service_bytes` (`Write`),
//!   each under its controller's mount (found in /proc/self/mountinfo).
//!
//! Docker names a container's cgroup `docker/<id>` (cgroupfs driver) or
//! `system.slice/docker-<id>.scope` (systemd driver); both are looked for.
//! Under v1, buffered writes are charged to the root cgroup at writeback, so
//! the container's disk writes come from its processes' `/proc/<pid>/io`.

use std::io;
use std::path::{Path, PathBuf};

use crate::procfile::{read_u64, ProcFile};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layout {
    /// The cgroup's directory in the unified hierarchy.
    V2(PathBuf),
    /// The cgroup's directories under the v1 controllers.
    V1 {
        cpuacct: PathBuf,
        memory: Option<PathBuf>,
        blkio: Option<PathBuf>,
    },
}

impl Layout {
    /// The file listing the cgroup's processes.
    pub(crate) fn procs(&self) -> PathBuf {
        match self {
            Layout::V2(d) => d.join("cgroup.procs"),
            Layout::V1 { cpuacct, .. } => cpuacct.join("cgroup.procs"),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Layout::V2(d) => format!("cgroup v2 {}", d.display()),
            Layout::V1 { cpuacct, .. } => format!("cgroup v1 {}", cpuacct.display()),
        }
    }
}

struct Mount {
    root: String,
    point: PathBuf,
    fstype: String,
    options: String,
}

fn mounts() -> Vec<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let mut post = post.split(' ');
            let fstype = post.next()?.to_string();
            let _source = post.next()?;
            let options = post.next().unwrap_or("").to_string();
            Some(Mount {
                root: pre.get(3)?.to_string(),
                point: PathBuf::from(pre.get(4)?),
                fstype,
                options,
            })
        })
        .filter(|m| m.fstype == "cgroup" || m.fstype == "cgroup2")
        .collect()
}

/// The v1 mount point of a controller (`cpuacct`, `memory`, `blkio`).
fn v1_mount(ms: &[Mount], controller: &str) -> Option<PathBuf> {
    ms.iter()
        .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == controller))
        .map(|m| m.point.clone())
}

fn v2_mount(ms: &[Mount]) -> Option<PathBuf> {
    ms.iter()
        .find(|m| m.fstype == "cgroup2")
        .map(|m| m.point.clone())
}

fn join_rel(mount: &Path, root: &str, path: &str) -> PathBuf {
    // A cgroup path is relative to the hierarchy's root; the mount may show a
    // sub-tree of it (the mount's root), which is then stripped.
    let rel = path
        .strip_prefix(root)
        .filter(|_| root != "/")
        .unwrap_or(path);
    mount.join(rel.trim_start_matches('/'))
}

/// The cgroup a process lives in (a container's init pid, for example).
pub(crate) fn of_pid(pid: u32) -> io::Result<Layout> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
    let ms = mounts();
    let v1 = |controller: &str| -> Option<PathBuf> {
        let path = text.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
            ctrls.split(',').any(|c| c == controller).then_some(path)
        })?;
        let m = ms
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == controller))?;
        Some(join_rel(&m.point, &m.root, path))
    };
    if let Some(cpuacct) = v1("cpuacct").filter(|d| d.join("cpuacct.stat").exists()) {
        return Ok(Layout::V1 {
            cpuacct,
            memory: v1("memory").filter(|d| d.exists()),
            blkio: v1("blkio").filter(|d| d.exists()),
        });
    }
    let path = text.lines().find_map(|l| l.strip_prefix("0::"));
    if let (Some(path), Some(m)) = (path, ms.iter().find(|m| m.fstype == "cgroup2")) {
        let dir = join_rel(&m.point, &m.root, path);
        if dir.join("cpu.stat").exists() {
            return Ok(Layout::V2(dir));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no cgroup with CPU accounting found for pid {pid}"),
    ))
}

/// A cgroup given as a path: absolute (a directory under a cgroup mount) or
/// relative to the hierarchy roots (`docker/<id>`).
pub(crate) fn of_path(path: &Path) -> io::Result<Layout> {
    let ms = mounts();
    let rel = path.to_string_lossy().to_string();
    let mut tried = Vec::new();
    if path.is_absolute() {
        if path.join("cpu.stat").exists() && !path.join("cpuacct.stat").exists() {
            return Ok(Layout::V2(path.to_path_buf()));
        }
        // An absolute v1 directory: find the same relative path under the
        // other controllers.
        if let Some(m) = ms.iter().find(|m| {
            m.fstype == "cgroup" && path.starts_with(&m.point) && path.join("cpuacct.stat").exists()
        }) {
            let inner = path
                .strip_prefix(&m.point)
                .unwrap_or(path)
                .to_string_lossy()
                .to_string();
            return Ok(v1_layout(&ms, &inner).unwrap_or(Layout::V1 {
                cpuacct: path.to_path_buf(),
                memory: None,
                blkio: None,
            }));
        }
        tried.push(path.display().to_string());
    } else {
        if let Some(l) = v1_layout(&ms, &rel) {
            return Ok(l);
        }
        if let Some(m) = v2_mount(&ms) {
            let d = m.join(&rel);
            if d.join("cpu.stat").exists() {
                return Ok(Layout::V2(d));
            }
            tried.push(d.display().to_string());
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "cgroup {} not found (looked at {})",
            path.display(),
            tried.join(", ")
        ),
    ))
}

fn v1_layout(ms: &[Mount], rel: &str) -> Option<Layout> {
    let rel = rel.trim_start_matches('/');
    let cpuacct = v1_mount(ms, "cpuacct")?.join(rel);
    cpuacct.join("cpuacct.stat").exists().then(|| Layout::V1 {
        cpuacct,
        memory: v1_mount(ms, "memory")
            .map(|m| m.join(rel))
            .filter(|d| d.exists()),
        blkio: v1_mount(ms, "blkio")
            .map(|m| m.join(rel))
            .filter(|d| d.exists()),
    })
}

/// A Docker container's cgroup, by full id or unique prefix.
pub(crate) fn of_container(id: &str) -> io::Result<Layout> {
    if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("container id {id:?}: expected at least 4 hex digits"),
        ));
    }
    let ms = mounts();
    let roots: Vec<PathBuf> = [v1_mount(&ms, "cpuacct"), v2_mount(&ms)]
        .into_iter()
        .flatten()
        .collect();
    for root in &roots {
        for (dir, prefix, suffix) in [("docker", "", ""), ("system.slice", "docker-", ".scope")] {
            let parent = root.join(dir);
            let Ok(rd) = std::fs::read_dir(&parent) else {
                continue;
            };
            let found: Vec<String> = rd
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|n| {
                    n.strip_prefix(prefix)
                        .is_some_and(|r| r.starts_with(id) && r.ends_with(suffix))
                })
                .collect();
            if found.len() > 1 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("container id {id} is ambiguous"),
                ));
            }
            if let Some(name) = found.first() {
                return of_path(&parent.join(name));
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "no cgroup for container {id} under {}/{{docker,system.slice}}",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    ))
}

/// One reading of a cgroup, cumulative except `memory_bytes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CgroupReading {
    pub user_us: u64,
    pub system_us: u64,
    pub memory_bytes: u64,
    /// Bytes written to block devices as the cgroup's I/O controller counts
    /// them (v1: direct I/O only, see the module doc).
    pub io_write_bytes: u64,
}

pub(crate) struct CgroupFiles {
    v2: bool,
    cpu: ProcFile,
    memory: Option<ProcFile>,
    io: Option<ProcFile>,
    ticks_per_s: f64,
}

impl CgroupFiles {
    pub(crate) fn open(layout: &Layout, ticks_per_s: f64) -> io::Result<CgroupFiles> {
        Ok(match layout {
            Layout::V2(d) => CgroupFiles {
                v2: true,
                cpu: ProcFile::open(d.join("cpu.stat"))?,
                memory: ProcFile::open(d.join("memory.current")).ok(),
                io: ProcFile::open(d.join("io.stat")).ok(),
                ticks_per_s,
            },
            Layout::V1 {
                cpuacct,
                memory,
                blkio,
            } => CgroupFiles {
                v2: false,
                cpu: ProcFile::open(cpuacct.join("cpuacct.stat"))?,
                memory: memory
                    .as_ref()
                    .and_then(|d| ProcFile::open(d.join("memory.usage_in_bytes")).ok()),
                io: blkio
                    .as_ref()
                    .and_then(|d| ProcFile::open(d.join("blkio.throttle.io_service_bytes")).ok()),
                ticks_per_s,
            },
        })
    }

    pub(crate) fn read(&mut self) -> io::Result<CgroupReading> {
        let (user_us, system_us) = if self.v2 {
            parse_cpu_stat_v2(self.cpu.read()?)
        } else {
            let (u, s) = parse_cpuacct_stat(self.cpu.read()?);
            let us = |t: u64| (t as f64 * 1e6 / self.ticks_per_s) as u64;
            (us(u), us(s))
        };
        let memory_bytes = self.memory.as_mut().and_then(read_u64).unwrap_or(0);
        let v2 = self.v2;
        let io_write_bytes = self
            .io
            .as_mut()
            .and_then(|f| {
                f.read().ok().map(|t| {
                    if v2 {
                        parse_io_stat_v2(t)
                    } else {
                        parse_blkio_v1(t)
                    }
                })
            })
            .unwrap_or(0);
        Ok(CgroupReading {
            user_us,
            system_us,
            memory_bytes,
            io_write_bytes,
        })
    }
}

/// `cpu.stat` (v2): `user_usec`, `system_usec`.
pub(crate) fn parse_cpu_stat_v2(text: &str) -> (u64, u64) {
    let mut u = 0;
    let mut s = 0;
    for l in text.lines() {
        let mut it = l.split_ascii_whitespace();
        match (it.next(), it.next().and_then(|v| v.parse().ok())) {
            (Some("user_usec"), Some(v)) => u = v,
            (Some("system_usec"), Some(v)) => s = v,
            _ => {}
        }
    }
    (u, s)
}

/// `cpuacct.stat` (v1): `user`, `system` in ticks.
pub(crate) fn parse_cpuacct_stat(text: &str) -> (u64, u64) {
    let mut u = 0;
    let mut s = 0;
    for l in text.lines() {
        let mut it = l.split_ascii_whitespace();
        match (it.next(), it.next().and_then(|v| v.parse().ok())) {
            (Some("user"), Some(v)) => u = v,
            (Some("system"), Some(v)) => s = v,
            _ => {}
        }
    }
    (u, s)
}

/// `io.stat` (v2): the sum of `wbytes=` over devices.
pub(crate) fn parse_io_stat_v2(text: &str) -> u64 {
    text.split_ascii_whitespace()
        .filter_map(|f| f.strip_prefix("wbytes=")?.parse::<u64>().ok())
        .sum()
}

/// `blkio.throttle.io_service_bytes` (v1): the sum of the `Write` lines.
pub(crate) fn parse_blkio_v1(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_ascii_whitespace();
            let (_dev, op, v) = (it.next()?, it.next()?, it.next()?);
            (op == "Write").then(|| v.parse::<u64>().ok())?
        })
        .sum()
}

/// CPUs a process may use under its cgroup's CPU quota (`cpu.max` in v2,
/// `cpu.cfs_quota_us / cpu.cfs_period_us` in v1), `None` when unlimited.
pub(crate) fn quota_cores(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let ms = mounts();
    for l in text.lines() {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        if ctrls.split(',').any(|c| c == "cpu") {
            let m = ms
                .iter()
                .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "cpu"))?;
            let dir = join_rel(&m.point, &m.root, path);
            let q: i64 = std::fs::read_to_string(dir.join("cpu.cfs_quota_us"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            let p: i64 = std::fs::read_to_string(dir.join("cpu.cfs_period_us"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            return (q > 0 && p > 0).then(|| q as f64 / p as f64);
        }
        if ctrls.is_empty() && l.starts_with("0::") {
            if let Some(m) = ms.iter().find(|m| m.fstype == "cgroup2") {
                let max =
                    std::fs::read_to_string(join_rel(&m.point, &m.root, path).join("cpu.max")).ok();
                if let Some(max) = max {
                    let mut it = max.split_ascii_whitespace();
                    if let (Some(q), Some(p)) = (it.next(), it.next()) {
                        if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
                            return (p > 0.0).then(|| q / p);
                        }
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_layouts() {
        let v2 = "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\nnr_periods 0\n";
        assert_eq!(parse_cpu_stat_v2(v2), (3000, 2000));
        assert_eq!(parse_cpuacct_stat("user 42\nsystem 7\n"), (42, 7));
        assert_eq!(
            parse_io_stat_v2("8:0 rbytes=10 wbytes=4096 rios=1 wios=1\n253:0 rbytes=0 wbytes=100 rios=0 wios=1\n"),
            4196
        );
        let v1 =
            "8:0 Read 10\n8:0 Write 4096\n8:0 Sync 1\n8:0 Total 4106\n8:16 Write 4\nTotal 4110\n";
        assert_eq!(parse_blkio_v1(v1), 4100);
    }

    #[test]
    fn bad_container_ids_are_refused_with_a_reason() {
        let e = of_container("../../etc").unwrap_err().to_string();
        assert!(e.contains("hex"), "{e}");
        let e = of_container("0123456789abcdef").unwrap_err().to_string();
        assert!(e.contains("no cgroup"), "{e}");
    }

    #[test]
    fn our_own_cgroup_is_readable_when_it_has_cpu_accounting() {
        // Whatever this machine uses (v1 or v2), the layout found for our own
        // pid must read without error and count our CPU.
        if let Ok(layout) = of_pid(std::process::id()) {
            let mut f = CgroupFiles::open(&layout, crate::proc_stat::ticks_per_second()).unwrap();
            let r = f.read().unwrap();
            assert!(r.user_us + r.system_us > 0, "{layout:?} {r:?}");
        }
    }
}
