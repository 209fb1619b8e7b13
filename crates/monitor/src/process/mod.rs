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
//! when a page is dirtied (Documentation/filesystems/proc.rst, "/proc/\<pid\>/io");
//! writes to tmpfs never reach storage and do not show here.
//!
//! - `stat`: parsing `/proc/<pid>/stat` and `/io`, and the boot-time clock
//!   of `starttime`.
//! - `seen`: [`CpusSeen`], the CPUs a group's members ran on.
//! - `find`: finding processes: a tree's descendants, processes by name,
//!   a process's children by name, threads by name.

use std::io;
use std::path::PathBuf;

use crate::procfile::ProcFile;

pub(crate) mod census;
mod find;
mod seen;
mod stat;

use find::children_named;
pub use find::named;
use find::threads;
pub(crate) use find::{descendants, named_all};
pub use seen::CpusSeen;
use seen::Threads;
pub use stat::TaskStat;
pub(crate) use stat::{boot_ticks_now, parse_stat, parse_write_bytes};

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
    /// The children of `parent` whose name matches `pattern` (see
    /// `find::name_matches`), and all their descendants, reaped children
    /// included: a program `parent` starts.
    Children { parent: u32, pattern: String },
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
    /// `utime + stime` at the last reading, for [`CpusSeen::note`].
    own: u64,
    /// The same per thread, for a process of several threads: its own line
    /// gives only the main thread's CPU (proc(5), `processor`).
    threads: Threads,
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
    /// Where the members ran since the monitor started.
    seen: CpusSeen,
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
            seen: CpusSeen::default(),
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

    /// Every member since the monitor started, living or exited: (pid,
    /// thread id for a member that is one thread).
    pub(crate) fn member_ids(&self) -> impl Iterator<Item = (u32, Option<u32>)> + '_ {
        self.members.iter().map(|m| (m.pid, m.tid))
    }

    fn includes_children(&self) -> bool {
        matches!(self.rule, Rule::Tree(_) | Rule::Children { .. })
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
    pub(crate) fn discover(&mut self, exclude: &[u32]) -> io::Result<()> {
        let wanted: Vec<(u32, Option<u32>)> = match &self.rule {
            Rule::Process(p) => vec![(*p, None)],
            Rule::Tree(roots) => descendants(roots).into_iter().map(|p| (p, None)).collect(),
            Rule::Children { parent, pattern } => descendants(&children_named(*parent, pattern))
                .into_iter()
                .map(|p| (p, None))
                .collect(),
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
            own: s.utime + s.stime,
            threads: Threads::default(),
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

    /// Follows the new threads of members of several threads (at
    /// rediscovery: listing them is a directory walk).
    pub(crate) fn find_threads(&mut self) {
        for m in self
            .members
            .iter_mut()
            .filter(|m| m.alive && m.tid.is_none())
        {
            if !m.threads.is_empty() {
                m.threads.find(m.pid);
            }
        }
    }

    /// The CPUs the members were seen on since the monitor started.
    pub fn cpus_seen(&self) -> &CpusSeen {
        &self.seen
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
                    if m.tid.is_none() && s.num_threads > 1 {
                        // The process's ticks are all its threads': when
                        // they did not move, no thread ran, and its threads
                        // need not be read (a sampling cost per thread).
                        let own = s.utime + s.stime;
                        if m.threads.is_empty() {
                            m.threads.find(m.pid);
                        } else if own > m.own {
                            m.threads.note(&mut self.seen);
                        }
                        m.own = m.own.max(own);
                    } else {
                        self.seen.note(&mut m.own, &s);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_is_found_and_its_cpu_counted_after_it_exits() {
        let hz = crate::proc_stat::ticks_per_second();
        let started = boot_ticks_now(hz);
        // A shell that starts a busy child: the tree's level includes the
        // child while it runs and, once reaped, through the shell's
        // cstime/cutime. The child does a fixed amount of work (~0.4 s of
        // CPU here), not a fixed wall time, so a loaded machine stretches
        // it instead of shrinking the CPU it counts (a `timeout 0.4` loop
        // got under 0.2 s of CPU at a load average of 10).
        let mut sh = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; sleep 0.3",
            ])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let mut g = Group::new(Rule::Tree(vec![sh.id()]), started, &[]).unwrap();
        let mut saw_child = false;
        let t = std::time::Instant::now();
        // Until the shell exits (bounded: 30 s).
        while sh.try_wait().unwrap().is_none() && t.elapsed() < std::time::Duration::from_secs(30) {
            g.discover(&[me]).unwrap();
            let l = g.read();
            saw_child |= l.members >= 2;
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = sh.kill();
        sh.wait().unwrap();
        let l = g.read();
        assert!(saw_child, "the busy child was never found");
        // The loop's work is ~0.4 s of CPU on this machine's cores; allow
        // for a faster one.
        let cpu_s = (l.user_ticks + l.system_ticks) as f64 / hz;
        assert!(cpu_s > 0.1, "tree CPU {cpu_s} s");
    }
}
