//! Connection tracking: entries in the table
//! (`/proc/sys/net/netfilter/nf_conntrack_count`) and packets dropped because
//! it was full or an insert raced (`/proc/net/stat/nf_conntrack`: per-CPU rows
//! of hex counters, summed). NAT (a published port reached from another host,
//! the lab's DNAT placements) needs an entry per connection, so a
//! new-connection-per-request load can fill the table and pay for it here.
//!
//! Absent when the nf_conntrack module is not loaded; the record says so.

use std::io;

use crate::procfile::{read_u64, ProcFile};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConntrackReading {
    /// Entries now (a level).
    pub entries: u64,
    /// Packets dropped: `drop` + `early_drop` (cumulative).
    pub drops: u64,
    /// Inserts that failed (cumulative).
    pub insert_failed: u64,
}

/// Sums the `drop`, `early_drop` and `insert_failed` columns over CPUs.
pub(crate) fn parse_stat(text: &str) -> (u64, u64) {
    let mut lines = text.lines();
    let Some(head) = lines.next() else {
        return (0, 0);
    };
    let idx = |name: &str| head.split_ascii_whitespace().position(|h| h == name);
    let (drop, early, failed) = (idx("drop"), idx("early_drop"), idx("insert_failed"));
    let mut drops = 0;
    let mut fails = 0;
    for l in lines {
        let vals: [u64; 24] = {
            let mut a = [0u64; 24];
            for (i, v) in l.split_ascii_whitespace().take(24).enumerate() {
                a[i] = u64::from_str_radix(v, 16).unwrap_or(0);
            }
            a
        };
        let at = |i: Option<usize>| i.and_then(|i| vals.get(i).copied()).unwrap_or(0);
        drops += at(drop) + at(early);
        fails += at(failed);
    }
    (drops, fails)
}

pub(crate) struct ConntrackFiles {
    count: ProcFile,
    stat: Option<ProcFile>,
}

impl ConntrackFiles {
    /// `None` when conntrack is not loaded in this namespace.
    pub(crate) fn open() -> Option<ConntrackFiles> {
        Some(ConntrackFiles {
            count: ProcFile::open("/proc/sys/net/netfilter/nf_conntrack_count").ok()?,
            stat: ProcFile::open("/proc/net/stat/nf_conntrack").ok(),
        })
    }

    pub(crate) fn read(&mut self) -> io::Result<ConntrackReading> {
        let entries = read_u64(&mut self.count).unwrap_or(0);
        let (drops, insert_failed) = match self.stat.as_mut() {
            Some(f) => parse_stat(f.read()?),
            None => (0, 0),
        };
        Ok(ConntrackReading {
            entries,
            drops,
            insert_failed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_hex_columns_over_cpus() {
        let t = "entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart\n\
                 00000218  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 0000000a 00000001 00000000  00000000 00000000 00000000 00000000\n\
                 00000218  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000010 00000000 00000000  00000000 00000000 00000000 00000000\n";
        assert_eq!(parse_stat(t), (0x0a + 1 + 0x10, 3));
        assert_eq!(parse_stat(""), (0, 0));
    }
}
