//! Parsing `/proc/<pid>/stat` (CPU ticks, RSS, start time, the CPU it last
//! ran on) and
//! `/proc/<pid>/io` (`write_bytes`), and the clock `starttime` counts in.

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
    /// The CPU the task last ran on (field 39, `processor`, proc(5));
    /// `None` when the line stops before it.
    pub processor: Option<u32>,
}

/// Parses a `/proc/<pid>/stat` line; the command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<(&str, TaskStat)> {
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
    let processor = at(14).map(|c| c as u32); // field 39
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
            processor,
        },
    ))
}

/// `write_bytes` of a `/proc/<pid>/io` text.
pub(crate) fn parse_write_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Ticks since boot now (CLOCK_BOOTTIME, the clock of `starttime`).
pub(crate) fn boot_ticks_now(ticks_per_s: f64) -> u64 {
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

    /// A line as Linux 6.x writes it for an nginx worker (52 fields), last
    /// run on CPU 3; cut before field 39 it still gives the other fields.
    #[test]
    fn parses_the_cpu_a_task_last_ran_on() {
        let line = "1234 (nginx) S 1200 1200 1200 0 -1 4194624 310 0 0 0 57 91 0 0 20 0 1 0 5120 58720256 1419 18446744073709551615 94000000000000 94000001000000 140700000000000 0 0 0 0 4096 402745863 0 0 0 17 3 0 0 0 0 0 94000002000000 94000002100000 94000003000000 140700000001000 140700000001100 140700000001100 140700000002000 0\n";
        let (comm, s) = parse_stat(line).unwrap();
        assert_eq!(comm, "nginx");
        assert_eq!((s.ppid, s.utime, s.stime), (1200, 57, 91));
        assert_eq!((s.num_threads, s.starttime, s.rss), (1, 5120, 1419));
        assert_eq!(s.processor, Some(3));
        let cut: Vec<&str> = line.split(' ').take(38).collect();
        let (_, s) = parse_stat(&cut.join(" ")).unwrap();
        assert_eq!((s.rss, s.processor), (1419, None));
        let (_, s) = parse_stat("4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 12 3 20 0 4 0 98765 1000000 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n").unwrap();
        assert_eq!(s.processor, Some(1));
    }

    #[test]
    fn write_bytes_from_io() {
        let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 0\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_write_bytes(io), Some(8192));
    }
}
