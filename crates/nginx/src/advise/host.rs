//! Facts about the machine nginx runs on that the advice depends on, behind a
//! trait so tests (and `--cpus`/`--nofile`/`--somaxconn`) can fix them.

use serde::{Deserialize, Serialize};

/// What the advisor needs to know about the machine.
pub trait Host {
    /// CPUs nginx's `worker_processes auto` would count.
    fn cpus(&self) -> u64;
    /// The soft open-files limit nginx inherits (`ulimit -n`), if known.
    fn nofile(&self) -> Option<u64>;
    /// `net.core.somaxconn`: the kernel's cap on any listen backlog, if known.
    fn somaxconn(&self) -> Option<u64>;

    /// All three, as reported with the advice.
    fn facts(&self) -> HostFacts {
        HostFacts {
            cpus: self.cpus(),
            nofile: self.nofile(),
            somaxconn: self.somaxconn(),
        }
    }
}

/// Fixed facts: for tests, and for advising on a config meant for another machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    pub cpus: u64,
    pub nofile: Option<u64>,
    pub somaxconn: Option<u64>,
}

impl Host for HostFacts {
    fn cpus(&self) -> u64 {
        self.cpus
    }
    fn nofile(&self) -> Option<u64> {
        self.nofile
    }
    fn somaxconn(&self) -> Option<u64> {
        self.somaxconn
    }
}

/// This machine, read when asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalHost;

impl LocalHost {
    /// This machine's facts, with any given value put in place of the real one.
    pub fn with_overrides(
        self,
        cpus: Option<u64>,
        nofile: Option<u64>,
        somaxconn: Option<u64>,
    ) -> HostFacts {
        HostFacts {
            cpus: cpus.unwrap_or_else(|| self.cpus()),
            nofile: nofile.or_else(|| self.nofile()),
            somaxconn: somaxconn.or_else(|| self.somaxconn()),
        }
    }
}

impl Host for LocalHost {
    fn cpus(&self) -> u64 {
        // Honours the CPU affinity mask, as `nproc` does.
        std::thread::available_parallelism()
            .map(|n| n.get() as u64)
            .unwrap_or(1)
    }

    fn nofile(&self) -> Option<u64> {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct we pass.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
    }

    fn somaxconn(&self) -> Option<u64> {
        std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(cmd: &str) -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn local_host_agrees_with_the_shell() {
        let host = LocalHost;
        assert_eq!(host.cpus().to_string(), shell("nproc"));
        assert_eq!(
            host.nofile()
                .map(|n| n.to_string())
                .unwrap_or("unlimited".into()),
            shell("ulimit -n")
        );
        assert_eq!(
            host.somaxconn().map(|n| n.to_string()).unwrap_or_default(),
            shell("cat /proc/sys/net/core/somaxconn")
        );
    }

    #[test]
    fn overrides_replace_only_what_is_given() {
        let facts = LocalHost.with_overrides(Some(64), None, Some(128));
        assert_eq!((facts.cpus, facts.somaxconn), (64, Some(128)));
        assert_eq!(facts.nofile, LocalHost.nofile());
    }
}
