//! TCP counters of one network namespace: `/proc/net/snmp` (`Tcp:`
//! RetransSegs, CurrEstab), `/proc/net/netstat` (`TcpExt:` ListenOverflows,
//! ListenDrops) and `/proc/net/sockstat` (sockets by state, as `ss -s`
//! summarises them: iproute2's `ss -s` reads these same two files).
//!
//! Files under /proc/net describe the namespace of the reading process, so a
//! server in another namespace (a bridged container, a lab namespace) is read
//! through `/proc/<its pid>/net/...`: its listen-queue overflows happen there.

use std::io;
use std::path::Path;

use crate::procfile::ProcFile;

/// One reading: cumulative counters and socket-count levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NetReading {
    /// Segments retransmitted (cumulative).
    pub retrans_segs: u64,
    /// Connections accepted into a full listen queue's overflow (cumulative).
    pub listen_overflows: u64,
    /// SYNs and connections dropped at a listener, overflows included (cumulative).
    pub listen_drops: u64,
    /// Connections opened (active + passive, cumulative): with a new
    /// connection per request this is the request rate.
    pub opens: u64,
    /// TCP connections established now (`ss -s`: estab).
    pub estab: u64,
    /// TCP sockets in use, orphaned, in TIME-WAIT, allocated (`ss -s`).
    pub inuse: u64,
    pub orphan: u64,
    pub timewait: u64,
    pub alloc: u64,
}

/// Values of the named columns of a `Prefix: names...` / `Prefix: values...`
/// pair of lines (the layout of both snmp and netstat).
fn columns<const N: usize>(text: &str, prefix: &str, names: [&str; N]) -> [u64; N] {
    let mut out = [0u64; N];
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    if let (Some(head), Some(vals)) = (lines.next(), lines.next()) {
        for (k, v) in head
            .split_ascii_whitespace()
            .zip(vals.split_ascii_whitespace())
            .skip(1)
        {
            if let Some(i) = names.iter().position(|n| *n == k) {
                // CurrEstab is a gauge that snmp prints signed; never negative in practice.
                out[i] = v.parse::<i64>().map(|x| x.max(0) as u64).unwrap_or(0);
            }
        }
    }
    out
}

pub(crate) fn parse_snmp(text: &str, r: &mut NetReading) {
    let [retrans, estab, active, passive] = columns(
        text,
        "Tcp:",
        ["RetransSegs", "CurrEstab", "ActiveOpens", "PassiveOpens"],
    );
    r.retrans_segs = retrans;
    r.estab = estab;
    r.opens = active + passive;
}

pub(crate) fn parse_netstat(text: &str, r: &mut NetReading) {
    let [overflows, drops] = columns(text, "TcpExt:", ["ListenOverflows", "ListenDrops"]);
    r.listen_overflows = overflows;
    r.listen_drops = drops;
}

/// `TCP: inuse 3 orphan 0 tw 1 alloc 3 mem 13`.
pub(crate) fn parse_sockstat(text: &str, r: &mut NetReading) {
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("TCP:")) else {
        return;
    };
    let mut it = line.split_ascii_whitespace();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        let v = v.parse().unwrap_or(0);
        match k {
            "inuse" => r.inuse = v,
            "orphan" => r.orphan = v,
            "tw" => r.timewait = v,
            "alloc" => r.alloc = v,
            _ => {}
        }
    }
}

/// Open handles on one namespace's files.
pub(crate) struct NetFiles {
    snmp: ProcFile,
    netstat: Option<ProcFile>,
    sockstat: Option<ProcFile>,
}

impl NetFiles {
    /// `/proc/self/net` (our namespace) or `/proc/<pid>/net`.
    pub(crate) fn open(dir: &Path) -> io::Result<NetFiles> {
        Ok(NetFiles {
            snmp: ProcFile::open(dir.join("snmp"))?,
            netstat: ProcFile::open(dir.join("netstat")).ok(),
            sockstat: ProcFile::open(dir.join("sockstat")).ok(),
        })
    }

    pub(crate) fn read(&mut self) -> io::Result<NetReading> {
        let mut r = NetReading::default();
        parse_snmp(self.snmp.read()?, &mut r);
        if let Some(f) = self.netstat.as_mut() {
            parse_netstat(f.read()?, &mut r);
        }
        if let Some(f) = self.sockstat.as_mut() {
            parse_sockstat(f.read()?, &mut r);
        }
        Ok(r)
    }
}

/// The network namespace inode of a process (to tell whether the server
/// shares ours).
pub(crate) fn netns_of(pid: u32) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|m| m.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
        Tcp: 1 200 120000 -1 500 480 3 7 12 100000 99000 42 0 5 0\n\
        Udp: InDatagrams\nUdp: 0\n";
    const NETSTAT: &str =
        "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPTimeouts\nTcpExt: 0 17 19 3\n\
        IpExt: InNoRoutes\nIpExt: 0\n";

    #[test]
    fn reads_named_columns() {
        let mut r = NetReading::default();
        parse_snmp(SNMP, &mut r);
        parse_netstat(NETSTAT, &mut r);
        parse_sockstat(
            "sockets: used 56\nTCP: inuse 3 orphan 1 tw 9 alloc 4 mem 13\nUDP: inuse 0 mem 0\n",
            &mut r,
        );
        assert_eq!(r.retrans_segs, 42);
        assert_eq!(r.estab, 12);
        assert_eq!(r.opens, 980);
        assert_eq!((r.listen_overflows, r.listen_drops), (17, 19));
        assert_eq!((r.inuse, r.orphan, r.timewait, r.alloc), (3, 1, 9, 4));
    }

    #[test]
    fn our_namespace_reads() {
        let mut f = NetFiles::open(Path::new("/proc/self/net")).unwrap();
        f.read().unwrap();
        assert!(netns_of(std::process::id()).is_some());
    }
}
