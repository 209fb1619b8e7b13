//! Where a group ran: the CPUs its members were seen on, weighed by the CPU
//! time they used. `/proc/<pid>/stat` gives only the CPU a task *last* ran on
//! (field 39, `processor`, proc(5)), so each sample charges the ticks a task
//! used since the previous sample to the CPU it is on now: an estimate,
//! exact for a pinned task, and for a task that moves, right in proportion
//! as the samples are many. A task that used no CPU in an interval says
//! nothing (it may have slept on a CPU it never ran on). A process's line
//! gives its main thread's CPU but all its threads' ticks, so a process of
//! several threads is read thread by thread (`/proc/<pid>/task/<tid>/stat`).

use std::collections::BTreeMap;

use super::stat::{parse_stat, TaskStat};
use crate::procfile::ProcFile;

/// CPU ticks charged to each CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpusSeen(BTreeMap<u32, u64>);

impl CpusSeen {
    /// Charges a task's ticks since `last_own` (its `utime + stime` at the
    /// previous sample, updated here) to the CPU it is on now. Only the
    /// task's own time: a tree's `cutime`/`cstime` are children reaped
    /// elsewhere, on CPUs this line does not say.
    pub fn note(&mut self, last_own: &mut u64, s: &TaskStat) {
        let own = s.utime + s.stime;
        let used = own.saturating_sub(*last_own);
        *last_own = (*last_own).max(own);
        if let (true, Some(cpu)) = (used > 0, s.processor) {
            *self.0.entry(cpu).or_default() += used;
        }
    }

    /// Adds another group's ticks (a server's processes beside its threads).
    pub fn merge(&mut self, other: &CpusSeen) {
        for (&cpu, &t) in &other.0 {
            *self.0.entry(cpu).or_default() += t;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each CPU's share of the ticks seen (summing to 1; empty when none).
    pub fn shares(&self) -> BTreeMap<u32, f64> {
        let total: u64 = self.0.values().sum();
        if total == 0 {
            return BTreeMap::new();
        }
        self.0
            .iter()
            .map(|(&cpu, &t)| (cpu, t as f64 / total as f64))
            .collect()
    }
}

/// The threads of one process, each with its stat file kept open (a
/// steady-state sample opens no file: docs/monitor.md, "What it costs")
/// and its mark for [`CpusSeen::note`].
#[derive(Default)]
pub(crate) struct Threads(Vec<(u32, ProcFile, u64)>);

impl Threads {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Follows the threads of `pid` not yet followed, from their ticks now
    /// (at a process's first reading with several threads, and at each
    /// rediscovery).
    pub(crate) fn find(&mut self, pid: u32) {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        for e in dir.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if self.0.iter().any(|(t, _, _)| *t == tid) {
                continue;
            }
            let Ok(mut f) = ProcFile::open(e.path().join("stat")) else {
                continue;
            };
            let own = f
                .read()
                .ok()
                .and_then(parse_stat)
                .map(|(_, s)| s.utime + s.stime);
            if let Some(own) = own {
                self.0.push((tid, f, own));
            }
        }
    }

    /// Charges each thread's ticks since the last call to its CPU; a thread
    /// that ended is dropped.
    pub(crate) fn note(&mut self, seen: &mut CpusSeen) {
        self.0.retain_mut(
            |(_, f, own)| match f.read().ok().and_then(parse_stat).map(|(_, s)| s) {
                Some(s) => {
                    seen.note(own, &s);
                    true
                }
                None => false,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(cpu: u32, utime: u64, stime: u64) -> TaskStat {
        TaskStat {
            utime,
            stime,
            cutime: 1000,
            processor: Some(cpu),
            ..Default::default()
        }
    }

    #[test]
    fn ticks_go_to_the_cpu_of_each_sample_and_idle_samples_say_nothing() {
        let mut seen = CpusSeen::default();
        // First seen at 10 ticks: what came before is not this monitor's.
        let mut last = 10;
        seen.note(&mut last, &on(0, 20, 4)); // 14 ticks on CPU 0
        seen.note(&mut last, &on(1, 20, 4)); // idle: CPU 1 says nothing
        seen.note(&mut last, &on(1, 24, 6)); // 6 ticks on CPU 1
        seen.note(&mut last, &on(0, 23, 6)); // a racing read that went back
        seen.note(
            &mut last,
            &TaskStat {
                utime: 40,
                stime: 6,
                processor: None,
                ..Default::default()
            },
        );
        assert_eq!(last, 46);
        let shares = seen.shares();
        assert_eq!(shares.len(), 2, "{shares:?}");
        assert!((shares[&0] - 0.7).abs() < 1e-12, "{shares:?}");
        assert!((shares[&1] - 0.3).abs() < 1e-12, "{shares:?}");
        let mut both = seen.clone();
        both.merge(&seen);
        assert_eq!(both.shares(), shares);
        assert!(CpusSeen::default().shares().is_empty());
    }
}
