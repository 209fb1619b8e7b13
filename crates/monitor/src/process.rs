//! Processes and threads: `/proc/<pid>/stat` (CPU, RSS) and `/proc/<pid>/io`
//! (bytes written to storage), for a group of processes found by a rule.
//!
//! A [`Group`] reports *levels* accumulated since the monitor started, so that
//! a process that comes or goes between two samples is neither lost nor
//! counted twice:
//! - a member born after the monitor started counts from zero (all its CPU
//!   was spent during the monitor); one that already existed counts from its
//!   value when first seen;
//! - in a process tree, `cutime`/`cstime` are included, so a child that exits
//!   moves its time into its parent's counters when reaped (proc(5)), and the
//!   level stays continuous (postgres forks one backend per connection);
//! - outside a tree, a member that exits keeps what it had used ("retired").
//!
//! `write_bytes` is what the process caused to be sent to storage, charged
//! when a page is dirtied (Documentation/filesystems/proc.rst, "/proc/<pid>/io");
//! writes to tmpfs never reach storage and do not show here.

use std::io;
use std::path::PathBuf;

use crate::procfile::ProcFile;

/// The fields of `/proc/<pid>/stat` the monitor uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskStat {
    pub ppid: u32,
    /// Ticks (USER_HZ).
    pub utime: u64,
    pub stime: u64,
    /// Ticks of reaped children (and their reaped children).
    pub cutime: u64,
    pub cstime: u64,
    pub num_threads: u64,
    /// Ticks since boot when the task started (tells a reused pid apart).
    pub starttime: u64,
    /// Resident pages.
    pub rss: u64,
}

/// Parses a `/proc/<pid>/stat` line; the command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<(&str, TaskStat)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?;
    let mut f = text.get(close + 1..)?.split_ascii_whitespace();
    // Index after ')' = proc(5) field number - 3 (state is field 3).
    let mut at = |skip: usize| -> Option<u64> { f.nth(skip)?.parse().ok() };
    let ppid = at(1)?; // field 4
    let utime = at(9)?; // field 14
    let stime = at(0)?;
    let cutime = at(0)?;
    let cstime = at(0)?;
    let num_threads = at(2)?; // field 20
    let starttime = at(1)?; // field 22
    let rss = at(1)?; // field 24
    Some((
        comm,
        TaskStat {
            ppid: ppid as u32,
            utime,
            stime,
            cutime,
            cstime,
            num_threads,
            starttime,
            rss,
        },
    ))
}

/// `write_bytes` of a `/proc/<pid>/io` text.
pub fn parse_write_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Whether a command name matches a watch pattern: exact, or a prefix when
/// the pattern ends in `*` (`containerd-shim*`, `ksoftirqd/*`). Names are
/// compared as the kernel keeps them, truncated to 15 bytes.
pub fn name_matches(pattern: &str, comm: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => comm.starts_with(prefix) || prefix.starts_with(comm) && comm.len() == 15,
        None => comm == pattern || (comm.len() == 15 && pattern.starts_with(comm)),
    }
}

/// How a group finds its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// These processes and all their descendants, reaped children included.
    Tree(Vec<u32>),
    /// One process: all its threads, living and exited; no children.
    Process(u32),
    /// Every process whose name matches the pattern.
    Named(String),
    /// The threads of one process whose names start with a prefix.
    Threads { pid: u32, prefix: String },
    /// The processes listed in a cgroup's `cgroup.procs`.
    Listed(PathBuf),
}

/// Cumulative since the monitor started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupLevel {
    pub user_ticks: u64,
    pub system_ticks: u64,
    pub write_bytes: u64,
    /// Resident pages now (a level, not cumulative).
    pub rss_pages: u64,
    pub members: u32,
}

#[derive(Clone, Copy, Default)]
struct Values {
    user: u64,
    system: u64,
    write: u64,
}

struct Member {
    pid: u32,
    ppid: u32,
    tid: Option<u32>,
    starttime: u64,
    stat: ProcFile,
    io: Option<ProcFile>,
    baseline: Values,
    last: Values,
    rss: u64,
    alive: bool,
}

pub struct Group {
    rule: Rule,
    members: Vec<Member>,
    retired: Values,
    /// Boot-relative ticks when the monitor started: members that started
    /// later count from zero.
    started_ticks: u64,
    procs: Option<ProcFile>,
}

impl Group {
    /// A group with the members found now, leaving out `exclude`.
    pub fn new(rule: Rule, started_ticks: u64, exclude: &[u32]) -> io::Result<Group> {
        let mut g = Group::empty(rule, started_ticks)?;
        g.discover(exclude)?;
        Ok(g)
    }

    /// A group with no members yet (they are [`Group::adopt`]ed).
    pub fn empty(rule: Rule, started_ticks: u64) -> io::Result<Group> {
        let procs = match &rule {
            Rule::Listed(path) => Some(ProcFile::open(path)?),
            _ => None,
        };
        Ok(Group {
            rule,
            members: Vec::new(),
            retired: Values::default(),
            started_ticks,
            procs,
        })
    }

    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// Pids currently in the group.
    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.members
            .iter()
            .filter(|m| m.alive && m.tid.is_none())
            .map(|m| m.pid)
    }

    fn includes_children(&self) -> bool {
        matches!(self.rule, Rule::Tree(_))
    }

    /// Adds processes found elsewhere (a shared walk of /proc for named
    /// groups), skipping `exclude`.
    pub fn adopt(&mut self, pids: &[u32], exclude: &[u32]) {
        for &pid in pids {
            if exclude.contains(&pid)
                || self
                    .members
                    .iter()
                    .any(|m| m.alive && m.pid == pid && m.tid.is_none())
            {
                continue;
            }
            if let Some(m) = self.open_member(pid, None) {
                self.members.push(m);
            }
        }
    }

    /// Finds members again (new children, new named processes), skipping
    /// pids in `exclude` (members of another group, never billed twice).
    pub fn discover(&mut self, exclude: &[u32]) -> io::Result<()> {
        let wanted: Vec<(u32, Option<u32>)> = match &self.rule {
            Rule::Process(p) => vec![(*p, None)],
            Rule::Tree(roots) => descendants(roots).into_iter().map(|p| (p, None)).collect(),
            Rule::Named(pattern) => named(pattern).into_iter().map(|p| (p, None)).collect(),
            Rule::Threads { pid, prefix } => threads(*pid, prefix)
                .into_iter()
                .map(|t| (*pid, Some(t)))
                .collect(),
            Rule::Listed(_) => {
                let text = self
                    .procs
                    .as_mut()
                    .map(|f| f.read().map(str::to_owned))
                    .transpose()?
                    .unwrap_or_default();
                text.split_ascii_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .map(|p| (p, None))
                    .collect()
            }
        };
        for (pid, tid) in wanted {
            if exclude.contains(&pid)
                || self
                    .members
                    .iter()
                    .any(|m| m.alive && m.pid == pid && m.tid == tid)
            {
                continue;
            }
            if let Some(m) = self.open_member(pid, tid) {
                self.members.push(m);
            }
        }
        Ok(())
    }

    fn open_member(&self, pid: u32, tid: Option<u32>) -> Option<Member> {
        let base = match tid {
            Some(t) => format!("/proc/{pid}/task/{t}"),
            None => format!("/proc/{pid}"),
        };
        let mut stat = ProcFile::open(format!("{base}/stat")).ok()?;
        let (_, s) = parse_stat(stat.read().ok()?)?;
        // Per-thread io is not what we want for a thread group; threads are
        // only used for CPU.
        let mut io = if tid.is_none() {
            ProcFile::open(format!("{base}/io")).ok()
        } else {
            None
        };
        let write = io
            .as_mut()
            .and_then(|f| parse_write_bytes(f.read().ok()?))
            .unwrap_or(0);
        let now = self.values(&s, write);
        let baseline = if s.starttime >= self.started_ticks {
            Values::default()
        } else {
            now
        };
        Some(Member {
            pid,
            ppid: s.ppid,
            tid,
            starttime: s.starttime,
            stat,
            io,
            baseline,
            last: now,
            rss: s.rss,
            alive: true,
        })
    }

    fn values(&self, s: &TaskStat, write: u64) -> Values {
        let kids = self.includes_children();
        Values {
            user: s.utime + if kids { s.cutime } else { 0 },
            system: s.stime + if kids { s.cstime } else { 0 },
            write,
        }
    }

    /// Reads every member and returns the group's level.
    pub fn read(&mut self) -> GroupLevel {
        let kids = self.includes_children();
        let mut level = GroupLevel::default();
        for i in 0..self.members.len() {
            if !self.members[i].alive {
                continue;
            }
            let reading = {
                let m = &mut self.members[i];
                let stat = m.stat.read().ok().and_then(parse_stat).map(|(_, s)| s);
                match stat {
                    Some(s) if s.starttime == m.starttime => {
                        let write =
                            m.io.as_mut()
                                .and_then(|f| parse_write_bytes(f.read().ok()?))
                                .unwrap_or(m.last.write);
                        Some((s, write))
                    }
                    _ => None,
                }
            };
            match reading {
                Some((s, write)) => {
                    self.members[i].ppid = s.ppid;
                    let v = self.values(&s, write);
                    let m = &mut self.members[i];
                    // Counters never go back; a racing read must not either.
                    m.last = Values {
                        user: v.user.max(m.last.user),
                        system: v.system.max(m.last.system),
                        write: v.write.max(m.last.write),
                    };
                    m.rss = s.rss;
                }
                None => {
                    let ppid = self.members[i].ppid;
                    let parent_tracked = self
                        .members
                        .iter()
                        .any(|p| p.alive && p.tid.is_none() && p.pid == ppid);
                    let m = &mut self.members[i];
                    m.alive = false;
                    // In a tree the parent's c-times take the exited child's
                    // time when it is reaped; elsewhere (or when the parent
                    // is not ours) keep what it used.
                    if !kids || !parent_tracked {
                        self.retired.user += m.last.user - m.baseline.user;
                        self.retired.system += m.last.system - m.baseline.system;
                        self.retired.write += m.last.write - m.baseline.write;
                    }
                }
            }
        }
        self.members.retain(|m| m.alive);
        level.user_ticks = self.retired.user;
        level.system_ticks = self.retired.system;
        level.write_bytes = self.retired.write;
        for m in &self.members {
            level.user_ticks += m.last.user.saturating_sub(m.baseline.user);
            level.system_ticks += m.last.system.saturating_sub(m.baseline.system);
            level.write_bytes += m.last.write.saturating_sub(m.baseline.write);
            level.rss_pages += m.rss;
            level.members += 1;
        }
        level
    }
}

fn numeric_entries(dir: &str) -> Vec<u32> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `roots` and every process below them, from the `children` files of each
/// thread (CONFIG_PROC_CHILDREN), falling back to a scan of ppids.
pub fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
        .collect();
    let has_children_files = std::path::Path::new("/proc/self/task")
        .join(std::process::id().to_string())
        .join("children")
        .exists();
    let mut i = 0;
    if has_children_files {
        while i < out.len() && out.len() < 100_000 {
            let pid = out[i];
            for tid in numeric_entries(&format!("/proc/{pid}/task")) {
                let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children"))
                    .unwrap_or_default();
                for c in text
                    .split_ascii_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
            i += 1;
        }
        return out;
    }
    let all: Vec<(u32, u32)> = numeric_entries("/proc")
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            Some((p, parse_stat(&text)?.1.ppid))
        })
        .collect();
    while i < out.len() {
        let parent = out[i];
        for (p, pp) in &all {
            if *pp == parent && !out.contains(p) {
                out.push(*p);
            }
        }
        i += 1;
    }
    out
}

/// Processes whose name matches `pattern` (see [`name_matches`]).
pub fn named(pattern: &str) -> Vec<u32> {
    named_all(&[pattern]).pop().unwrap_or_default()
}

/// One walk of /proc for several patterns: each process's name is read
/// once, whatever the number of patterns (the walk is the monitor's most
/// expensive step, so it is shared).
pub fn named_all<S: AsRef<str>>(patterns: &[S]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new(); patterns.len()];
    let mut buf = String::with_capacity(32);
    for p in numeric_entries("/proc") {
        buf.clear();
        let Ok(mut f) = std::fs::File::open(format!("/proc/{p}/comm")) else {
            continue;
        };
        if std::io::Read::read_to_string(&mut f, &mut buf).is_err() {
            continue;
        }
        let comm = buf.trim_end_matches('\n');
        for (i, pat) in patterns.iter().enumerate() {
            if name_matches(pat.as_ref(), comm) {
                out[i].push(p);
            }
        }
    }
    out
}

fn threads(pid: u32, prefix: &str) -> Vec<u32> {
    numeric_entries(&format!("/proc/{pid}/task"))
        .into_iter()
        .filter(|t| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{t}/comm"))
                .map(|c| c.starts_with(prefix))
                .unwrap_or(false)
        })
        .collect()
}

/// Ticks since boot now (CLOCK_BOOTTIME, the clock of `starttime`).
pub fn boot_ticks_now(ticks_per_s: f64) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ((ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9) * ticks_per_s) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_names() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 12 3 20 0 4 0 98765 1000000 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let (comm, s) = parse_stat(line).unwrap();
        assert_eq!(comm, "my (odd) name");
        assert_eq!(s.ppid, 1);
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (250, 75, 12, 3));
        assert_eq!(s.num_threads, 4);
        assert_eq!(s.starttime, 98765);
        assert_eq!(s.rss, 321);
        assert!(parse_stat("1 (x) S 1").is_none());
    }

    #[test]
    fn write_bytes_from_io() {
        let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 0\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_write_bytes(io), Some(8192));
    }

    #[test]
    fn patterns_match_truncated_kernel_names() {
        assert!(name_matches("docker-proxy", "docker-proxy"));
        assert!(!name_matches("docker-proxy", "docker"));
        assert!(name_matches("containerd-shim*", "containerd-shim"));
        assert!(name_matches("ksoftirqd/*", "ksoftirqd/1"));
        assert!(!name_matches("ksoftirqd/*", "kworker/1"));
        // comm keeps 15 bytes: "containerd-shim-runc-v2" is "containerd-shim".
        assert!(name_matches("containerd-shim-runc-v2", "containerd-shim"));
    }

    #[test]
    fn a_busy_child_is_found_and_its_cpu_counted_after_it_exits() {
        let hz = crate::proc_stat::ticks_per_second();
        let started = boot_ticks_now(hz);
        // A shell that starts a busy child: the tree's level includes the
        // child while it runs and, once reaped, through the shell's cstime/cutime.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "timeout 0.4 sh -c 'while :; do :; done'; sleep 0.3"])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let mut g = Group::new(Rule::Tree(vec![sh.id()]), started, &[]).unwrap();
        let mut saw_child = false;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(600) {
            g.discover(&[me]).unwrap();
            let l = g.read();
            saw_child |= l.members >= 2;
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        sh.wait().unwrap();
        let l = g.read();
        assert!(saw_child, "the busy child was never found");
        // ~0.4 s of busy loop = ~40 ticks at USER_HZ 100; allow scheduling slack.
        let cpu_s = (l.user_ticks + l.system_ticks) as f64 / hz;
        assert!(cpu_s > 0.2, "tree CPU {cpu_s} s");
    }
}
