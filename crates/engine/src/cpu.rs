//! CPU time of the calling thread, from `getrusage(RUSAGE_THREAD)`.
//!
//! Measured per worker thread rather than per process so that a server running
//! in the same process (as in tests, or `tare serve` beside the generator) is
//! never billed to the generator.

use std::time::Duration;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTime {
    /// CPU time consumed by the calling thread so far.
    pub fn thread() -> CpuTime {
        Self::of(libc::RUSAGE_THREAD)
    }

    /// CPU time consumed by the whole process so far.
    pub fn process() -> CpuTime {
        Self::of(libc::RUSAGE_SELF)
    }

    fn of(who: libc::c_int) -> CpuTime {
        // SAFETY: getrusage writes into the zeroed struct we pass and nothing else.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(who, &mut ru) };
        if rc != 0 {
            return CpuTime::default();
        }
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        CpuTime {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
        }
    }

    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    pub fn add(&mut self, o: &CpuTime) {
        self.user += o.user;
        self.system += o.system;
    }

    pub fn total_s(&self) -> f64 {
        (self.user + self.system).as_secs_f64()
    }
}

/// How many CPUs a kernel CPU list names (`Cpus_allowed_list`, cpusets:
/// `0-3,6` is 5); malformed ranges count for nothing.
pub fn cpu_list_len(list: &str) -> usize {
    list.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_accumulates_cpu() {
        let before = CpuTime::thread();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let used = CpuTime::thread().since(&before);
        assert!(used.total_s() > 0.01, "{used:?}");
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(super::cpu_list_len("0-3,6\n"), 5);
        assert_eq!(super::cpu_list_len("0,2-5,7"), 6);
        assert_eq!(super::cpu_list_len("3"), 1);
        assert_eq!(super::cpu_list_len("5-2"), 0);
    }
}
