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

/// A set of CPUs as `taskset` and cpusets write it (`1`, `0-1,3`): where a
/// generator's threads or a server may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// The CPUs, ascending, each once.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// The CPUs this process may run on now (its affinity mask), ascending.
    pub fn allowed() -> std::io::Result<CpuList> {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cpus = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: c < CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect();
        Ok(CpuList(cpus))
    }

    /// The kernel's set of these CPUs.
    pub fn to_cpu_set(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain data; zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &self.0 {
            // SAFETY: parsing kept every CPU below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        set
    }

    /// Moves the calling thread onto these CPUs.
    pub fn pin_current_thread(&self) -> std::io::Result<()> {
        self.pin_thread(0)
    }

    /// Moves thread `tid` (of any process; 0: the calling thread) onto
    /// these CPUs.
    pub fn pin_thread(&self, tid: i32) -> std::io::Result<()> {
        let set = self.to_cpu_set();
        // SAFETY: set is a valid cpu_set_t; the kernel checks tid.
        let rc =
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// The first `n` CPUs and the rest (`None` when either part would be empty).
    pub fn split_at(&self, n: usize) -> Option<(CpuList, CpuList)> {
        (n > 0 && n < self.0.len())
            .then(|| (CpuList(self.0[..n].to_vec()), CpuList(self.0[n..].to_vec())))
    }
}

impl std::str::FromStr for CpuList {
    type Err = String;

    fn from_str(list: &str) -> Result<CpuList, String> {
        let bad = || format!("bad CPU list {list:?}: expected e.g. \"1\" or \"0-1,3\"");
        let mut cpus = Vec::new();
        for part in list.split(',').map(str::trim) {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse::<usize>().map_err(|_| bad())?,
                    b.trim().parse::<usize>().map_err(|_| bad())?,
                ),
                None => {
                    let a = part.parse::<usize>().map_err(|_| bad())?;
                    (a, a)
                }
            };
            if b < a || b >= libc::CPU_SETSIZE as usize {
                return Err(bad());
            }
            cpus.extend(a..=b);
        }
        if cpus.is_empty() {
            return Err(bad());
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }
}

impl std::fmt::Display for CpuList {
    /// Ranges collapsed, as the kernel writes `Cpus_allowed_list` (`0-2,5`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl serde::Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_accumulates_cpu() {
        // Busy until the thread has run 20 ms (bounded by 10 s of wall
        // time): on a loaded machine 50 ms of wall time gave it 8 ms of CPU.
        let before = CpuTime::thread();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while CpuTime::thread().since(&before).total_s() < 0.02
            && t.elapsed() < Duration::from_secs(10)
        {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        let used = CpuTime::thread().since(&before);
        assert!(used.total_s() > 0.01, "{used:?}");
    }

    #[test]
    fn cpu_lists_parse_print_and_split() {
        let l: CpuList = "3, 0-1,1".parse().unwrap();
        assert_eq!(l.cpus(), &[0, 1, 3]);
        assert_eq!(l.to_string(), "0-1,3");
        let (a, b) = l.split_at(1).unwrap();
        assert_eq!((a.to_string(), b.to_string()), ("0".into(), "1,3".into()));
        assert!(l.split_at(0).is_none() && l.split_at(3).is_none());
        for bad in ["", "x", "3-1", "99999", "1,"] {
            let e = bad.parse::<CpuList>().unwrap_err();
            assert!(e.contains("bad CPU list"), "{e}");
        }
    }

    #[test]
    fn a_thread_pins_itself_to_one_allowed_cpu() {
        let allowed = CpuList::allowed().unwrap();
        let one = CpuList(vec![allowed.cpus()[0]]);
        std::thread::spawn(move || {
            one.pin_current_thread().unwrap();
            assert_eq!(CpuList::allowed().unwrap(), one);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(super::cpu_list_len("0-3,6\n"), 5);
        assert_eq!(super::cpu_list_len("0,2-5,7"), 6);
        assert_eq!(super::cpu_list_len("3"), 1);
        assert_eq!(super::cpu_list_len("5-2"), 0);
    }
}
