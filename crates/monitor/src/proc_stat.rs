//! Machine-wide counters: `/proc/stat` (CPU time by mode, context switches)
//! and `/proc/meminfo` (page cache, dirty pages).
//!
//! Field order of the `cpu` lines is proc(5): user nice system idle iowait
//! irq softirq steal guest guest_nice, in USER_HZ ticks; guest time is
//! already inside user, so it is not added again.

use std::io;

use crate::procfile::ProcFile;

/// CPU time of the whole machine by mode, in ticks (USER_HZ).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuModes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuModes {
    pub(crate) fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Time not idle (iowait is idle time with I/O outstanding: still idle).
    pub(crate) fn busy(&self) -> u64 {
        self.total() - self.idle - self.iowait
    }

    pub(crate) fn since(&self, e: &CpuModes) -> CpuModes {
        CpuModes {
            user: self.user.saturating_sub(e.user),
            nice: self.nice.saturating_sub(e.nice),
            system: self.system.saturating_sub(e.system),
            idle: self.idle.saturating_sub(e.idle),
            iowait: self.iowait.saturating_sub(e.iowait),
            irq: self.irq.saturating_sub(e.irq),
            softirq: self.softirq.saturating_sub(e.softirq),
            steal: self.steal.saturating_sub(e.steal),
        }
    }
}

/// One reading of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MachineCpu {
    pub modes: CpuModes,
    /// Context switches since boot, all CPUs.
    pub ctxt: u64,
    /// CPUs listed (`cpuN` lines): online CPUs.
    pub cpus: u32,
}

pub(crate) fn parse_stat(text: &str) -> Option<MachineCpu> {
    let mut out = MachineCpu::default();
    let mut seen_total = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cpu") {
            if rest.starts_with(' ') {
                let mut v = rest
                    .split_ascii_whitespace()
                    .map(|x| x.parse::<u64>().unwrap_or(0));
                let mut next = || v.next().unwrap_or(0);
                out.modes = CpuModes {
                    user: next(),
                    nice: next(),
                    system: next(),
                    idle: next(),
                    iowait: next(),
                    irq: next(),
                    softirq: next(),
                    steal: next(),
                };
                seen_total = true;
            } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
                out.cpus += 1;
            }
        } else if let Some(rest) = line.strip_prefix("ctxt ") {
            out.ctxt = rest.trim().parse().unwrap_or(0);
        }
    }
    seen_total.then_some(out)
}

/// `/proc/meminfo` fields the monitor keeps, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemInfo {
    /// Page cache (`Cached:`): grows as an access log is written.
    pub cached: u64,
    /// Dirty pages not yet written back (`Dirty:`).
    pub dirty: u64,
    pub available: u64,
}

pub(crate) fn parse_meminfo(text: &str) -> MemInfo {
    let mut m = MemInfo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let slot = match k {
            "Cached" => &mut m.cached,
            "Dirty" => &mut m.dirty,
            "MemAvailable" => &mut m.available,
            _ => continue,
        };
        let kb: u64 = v
            .split_ascii_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        *slot = kb * 1024;
    }
    m
}

/// Open handles on the machine-wide files.
pub(crate) struct MachineFiles {
    stat: ProcFile,
    meminfo: ProcFile,
}

impl MachineFiles {
    pub(crate) fn open() -> io::Result<MachineFiles> {
        Ok(MachineFiles {
            stat: ProcFile::open("/proc/stat")?,
            meminfo: ProcFile::open("/proc/meminfo")?,
        })
    }

    pub(crate) fn cpu(&mut self) -> io::Result<MachineCpu> {
        parse_stat(self.stat.read()?)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "/proc/stat has no cpu line"))
    }

    pub(crate) fn memory(&mut self) -> io::Result<MemInfo> {
        Ok(parse_meminfo(self.meminfo.read()?))
    }
}

/// Ticks per second of the times in /proc (USER_HZ, 100 on every Linux
/// architecture we know of, but asked rather than assumed).
pub(crate) fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  170608 5 29323 138435 649 7 1953 764 0 0\n\
        cpu0 84474 0 13992 70873 127 0 987 382 0 0\n\
        cpu1 86134 5 15331 67562 522 7 966 382 0 0\n\
        intr 123 4 5 6\nctxt 9876543\nbtime 1700000000\nprocesses 100\n";

    #[test]
    fn parses_modes_cpus_and_context_switches() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(s.cpus, 2);
        assert_eq!(s.ctxt, 9_876_543);
        assert_eq!(s.modes.user, 170_608);
        assert_eq!(s.modes.softirq, 1953);
        assert_eq!(s.modes.steal, 764);
        assert_eq!(
            s.modes.total(),
            170608 + 5 + 29323 + 138435 + 649 + 7 + 1953 + 764
        );
        assert_eq!(s.modes.busy(), s.modes.total() - 138435 - 649);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn meminfo_in_bytes() {
        let m = parse_meminfo("MemTotal: 100 kB\nMemAvailable:  50 kB\nCached:   2048 kB\nSwapCached: 9 kB\nDirty: 4 kB\n");
        assert_eq!(m.cached, 2048 * 1024);
        assert_eq!(m.dirty, 4096);
        assert_eq!(m.available, 50 * 1024);
    }

    #[test]
    fn live_files_read() {
        let mut f = MachineFiles::open().unwrap();
        let c = f.cpu().unwrap();
        assert!(c.cpus >= 1 && c.modes.total() > 0);
        assert!(f.memory().unwrap().available > 0);
    }
}
