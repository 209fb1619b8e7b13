//! How many connections one process may hold, and what to do about it:
//! the open-files limit (`RLIMIT_NOFILE`), the local port range per
//! destination (`net.ipv4.ip_local_port_range`) and the listen backlog
//! (`net.core.somaxconn`). A request beyond them is refused before any load,
//! with the numbers and the fix (docs/http.md, "Many connections"), instead
//! of a run that ends with nothing to say.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Files a process needs besides its connections: standard streams, each
/// worker's epoll or io_uring, the listener of a server in the same
/// process, files opened while reporting.
pub(crate) const RESERVED_FILES: u64 = 64;

/// The open-files limit of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFiles {
    pub soft: u64,
    pub hard: u64,
}

fn getrlimit() -> OpenFiles {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is valid for writes.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    OpenFiles {
        soft: r.rlim_cur,
        hard: r.rlim_max,
    }
}

fn setrlimit(soft: u64, hard: u64) -> bool {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: plain syscall on a valid struct.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) == 0 }
}

/// Raises the soft open-files limit to the hard limit (any process may)
/// and returns the limits now in force. Children started afterwards (the
/// servers `tare run` starts) inherit it.
pub fn raise_open_files() -> OpenFiles {
    let now = getrlimit();
    if now.soft < now.hard {
        setrlimit(now.hard, now.hard);
    }
    getrlimit()
}

/// Makes room for `need` open files: the soft limit up to the hard limit,
/// and the hard limit itself where the process may raise it (root with
/// `CAP_SYS_RESOURCE`, up to `fs.nr_open`). Returns the limits now in force.
fn make_room(need: u64) -> OpenFiles {
    let now = raise_open_files();
    if need > now.hard {
        let nr_open = read_proc("/proc/sys/fs/nr_open")
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(now.hard);
        let want = need.min(nr_open);
        if want > now.hard && setrlimit(want, want) {
            return getrlimit();
        }
    }
    now
}

fn read_proc(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `net.ipv4.ip_local_port_range`: the ports `connect` picks from (both ends included).
pub(crate) fn local_port_range() -> Option<(u16, u16)> {
    let text = read_proc("/proc/sys/net/ipv4/ip_local_port_range")?;
    let mut it = text.split_whitespace().map(|s| s.parse::<u16>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    (lo <= hi).then_some((lo, hi))
}

/// `net.core.somaxconn`: the most any listener's backlog can hold.
pub fn somaxconn() -> Option<u64> {
    read_proc("/proc/sys/net/core/somaxconn")?
        .trim()
        .parse()
        .ok()
}

/// What this machine allows one process, as read (and raised) now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub open_files: OpenFiles,
    /// `net.ipv4.ip_local_port_range`.
    pub ports: Option<(u16, u16)>,
    pub somaxconn: Option<u64>,
}

/// How connections to one destination are spread over source addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sources {
    /// How many source addresses (1: the kernel's choice, no bind).
    pub count: u32,
    /// Connections per source address.
    pub per_source: u64,
}

impl Sources {
    pub(crate) const ONE: Sources = Sources {
        count: 1,
        per_source: u64::MAX,
    };

    /// The source address of connection `index` (of the whole run), or
    /// `None` to let the kernel choose. Loopback IPv4 only: 127.0.0.1,
    /// 127.0.0.2, ... (all of 127.0.0.0/8 is this host's).
    pub fn source_of(&self, index: u64) -> Option<IpAddr> {
        if self.count <= 1 {
            return None;
        }
        let k = (index / self.per_source).min(self.count as u64 - 1) as u32;
        Some(IpAddr::V4(Ipv4Addr::from(
            u32::from(Ipv4Addr::new(127, 0, 0, 1)) + k,
        )))
    }
}

/// A request the limits cannot hold, with the numbers and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError(pub String);

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LimitError {}

impl Limits {
    /// The limits after making room for `connections` open sockets (soft
    /// limit raised to the hard one, the hard one raised where allowed).
    pub fn for_connections(connections: u64) -> Limits {
        Limits {
            open_files: make_room(connections + RESERVED_FILES),
            ports: local_port_range(),
            somaxconn: somaxconn(),
        }
    }

    /// Checks that `connections` to `dest` (`None`: a Unix socket) fit,
    /// opened `all_at_once` or paced. Returns how to spread them over source
    /// addresses, or what stops them.
    pub fn check(
        &self,
        connections: u64,
        dest: Option<SocketAddr>,
        all_at_once: bool,
    ) -> Result<Sources, LimitError> {
        let need = connections + RESERVED_FILES;
        let of = self.open_files;
        if need > of.soft {
            let most = of.soft.saturating_sub(RESERVED_FILES);
            let hard = if of.soft >= of.hard {
                format!(
                    "the hard limit, {}, which this process cannot raise (that needs root with CAP_SYS_RESOURCE)",
                    of.hard
                )
            } else {
                format!("the hard limit is {}", of.hard)
            };
            return Err(LimitError(format!(
                "{connections} connections need {need} open files (one per connection and {RESERVED_FILES} for tare); \
                 the open-files limit is {} ({hard}): use at most {most} connections, or raise the hard limit \
                 (ulimit -Hn, systemd LimitNOFILE=, /etc/security/limits.conf)",
                of.soft
            )));
        }
        if all_at_once {
            if let Some(max) = self.somaxconn.filter(|&m| connections > m) {
                return Err(LimitError(format!(
                    "{connections} connections opened all at once exceed the listen backlog any server can have \
                     (net.core.somaxconn = {max}): the rest would be dropped and retried after 1 s, 3 s, ...; \
                     pace them (--connect-rate N/s) or raise net.core.somaxconn and the server's backlog"
                )));
            }
        }
        let (Some(dest), Some((lo, hi))) = (dest, self.ports) else {
            return Ok(Sources::ONE);
        };
        let range = (hi - lo) as u64 + 1;
        // connect() takes ports of one parity first and only searches the
        // other half, port by port, once that is used up: past half the
        // range, each connect to the same destination scans thousands of
        // ports (measured in docs/http.md, "Many connections").
        let quick = (range / 2).max(1);
        if connections <= quick {
            return Ok(Sources::ONE);
        }
        match dest.ip() {
            IpAddr::V4(ip) if ip.is_loopback() => {
                let count = connections.div_ceil(quick);
                if count > 250 {
                    return Err(LimitError(format!(
                        "{connections} connections to {dest} need {count} source addresses of 127.0.0.0/8 \
                         ({quick} each: half of net.ipv4.ip_local_port_range {lo}-{hi}); widen the port range"
                    )));
                }
                Ok(Sources {
                    count: count as u32,
                    per_source: connections.div_ceil(count),
                })
            }
            _ if connections > range => Err(LimitError(format!(
                "{connections} connections to {dest} need as many local ports; net.ipv4.ip_local_port_range \
                 ({lo}-{hi}) gives {range} per destination: use at most {range} connections, widen the range \
                 (sysctl -w net.ipv4.ip_local_port_range='1024 65535'), or load several server addresses"
            ))),
            _ => Ok(Sources::ONE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(soft: u64, hard: u64) -> Limits {
        Limits {
            open_files: OpenFiles { soft, hard },
            ports: Some((32768, 60999)),
            somaxconn: Some(4096),
        }
    }

    fn v4(s: &str) -> Option<SocketAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn more_connections_than_open_files_are_refused_with_the_numbers() {
        let l = limits(20_000, 20_000);
        let e = l.check(19_950, v4("127.0.0.1:80"), false).unwrap_err().0;
        assert!(e.contains("20014 open files"), "{e}");
        assert!(e.contains("use at most 19936 connections"), "{e}");
        assert!(e.contains("cannot raise"), "{e}");
        assert!(l.check(19_936, None, false).is_ok());
        // A soft limit below the hard one is not "cannot raise".
        let e = limits(1000, 4096).check(2000, None, false).unwrap_err().0;
        assert!(e.contains("the hard limit is 4096"), "{e}");
    }

    #[test]
    fn all_at_once_beyond_the_backlog_is_refused_paced_is_not() {
        let l = limits(100_000, 100_000);
        let e = l.check(5000, None, true).unwrap_err().0;
        assert!(e.contains("somaxconn = 4096"), "{e}");
        assert!(l.check(5000, None, false).is_ok());
        assert!(l.check(4096, None, true).is_ok());
    }

    #[test]
    fn loopback_spreads_over_source_addresses_others_are_refused() {
        let l = limits(100_000, 100_000);
        assert_eq!(l.check(14_116, v4("127.0.0.1:80"), false), Ok(Sources::ONE));
        let s = l.check(50_000, v4("127.0.0.1:80"), false).unwrap();
        assert_eq!(s.count, 4);
        assert_eq!(s.source_of(0), Some("127.0.0.1".parse().unwrap()));
        assert_eq!(s.source_of(49_999), Some("127.0.0.4".parse().unwrap()));
        assert!(s.per_source * s.count as u64 >= 50_000);
        // Not loopback: no source addresses to spread over.
        let e = l.check(50_000, v4("10.0.0.1:80"), false).unwrap_err().0;
        assert!(e.contains("28232 per destination"), "{e}");
        assert_eq!(l.check(20_000, v4("10.0.0.1:80"), false), Ok(Sources::ONE));
        assert_eq!(Sources::ONE.source_of(5), None);
    }

    #[test]
    fn raising_never_lowers_the_limits() {
        let before = getrlimit();
        let after = raise_open_files();
        assert!(after.soft >= before.soft);
        assert_eq!(after.soft, after.hard);
    }
}
