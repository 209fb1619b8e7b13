//! The processes a placement runs on a server's behalf (containerd-shim,
//! conmon, docker-proxy, a fuse-overlayfs daemon serving a container's
//! files) and their CPUs. tare pins the server to its own CPUs, but these
//! processes were started by Docker or Podman and float: on this
//! project's 2-CPU machine, with the generator on CPU 0 and the server on
//! CPU 1, the fuse-overlayfs daemon of a container serving its files
//! mostly ran on CPU 0 (every FUSE request a cross-CPU wake-up, about
//! 9.5k req/s) and now and then beside nginx (16-18k): two speeds a factor
//! of two apart, from trial to trial. Pinned with the server, every trial
//! gave 21-22k (docs/studies.md, "fuse-overlayfs (2026-11-25)"). Pinned,
//! what the deployment costs is also charged to the server's side every
//! time (`[cpus] helpers`, docs/experiments.md).

use tare_engine::cpu::CpuList;

use crate::facts::HelperFacts;

/// One process serving a deployment from outside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Helper {
    /// Its process name (`comm`): how the monitor's columns name it.
    pub name: String,
    pub pid: u32,
}

/// Every process named `comm` whose arguments satisfy `matches`.
pub(crate) fn find(comm: &str, matches: impl Fn(&[String]) -> bool) -> Vec<Helper> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(name) = std::fs::read_to_string(e.path().join("comm")) else {
            continue;
        };
        if name.trim_end() != comm {
            continue;
        }
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if matches(&args(&raw)) {
            out.push(Helper {
                name: comm.to_string(),
                pid,
            });
        }
    }
    out
}

/// A NUL-separated command line as its arguments.
fn args(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Whether `args` has `flag` followed by `value` (`-id <container>`).
pub(crate) fn flag_is(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

/// The processes holding a socket that listens on TCP `port` in tare's own
/// network namespace, and every process below them: a rootless
/// container's forwarder (rootlessport and the child it dials through,
/// pasta, slirp4netns's own forwarder), whose server listens in a
/// namespace of its own.
pub(crate) fn listeners(port: u16) -> Vec<Helper> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let holds = |pid: libc::pid_t| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|l| wanted.iter().any(|w| l.as_os_str() == w.as_str()))
            })
        })
    };
    let mut pids: Vec<libc::pid_t> = Vec::new();
    for pid in crate::procfs::pids().into_iter().filter(|&p| holds(p)) {
        for p in crate::procfs::tree(pid) {
            if !pids.contains(&p) {
                pids.push(p);
            }
        }
    }
    pids.into_iter()
        .filter_map(|pid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            Some(Helper {
                name: name.trim_end().to_string(),
                pid: pid as u32,
            })
        })
        .collect()
}

/// The inodes of the sockets listening on `port` in a /proc/net/tcp or
/// tcp6 table (`sl local rem st ... uid timeout inode`; addresses and
/// ports in hex, state 0A is LISTEN).
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f.get(1)?.rsplit_once(':')?.1;
            (u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == "0A")
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .filter(|&inode| inode != 0)
        .collect()
}

/// When a server that never answered listens on TCP ports, none of them
/// `port` (the one it was told): where it does listen, as a clause for the
/// health error. Read from its own network namespace's table; `None` when
/// it listens nowhere, on `port` too, or is not the server's own process
/// (a guest's QEMU).
pub(crate) fn listening_elsewhere(
    pid: libc::pid_t,
    binary: &std::path::Path,
    port: u16,
) -> Option<String> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    if exe.file_name() != binary.file_name() && std::fs::canonicalize(binary).ok()? != exe {
        return None;
    }
    let tree = crate::procfs::tree(pid);
    let mut held = Vec::new();
    for p in &tree {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{p}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.to_string_lossy().into_owned();
            if let Some(i) = link
                .strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|i| i.parse::<u64>().ok())
            {
                held.push(i);
            }
        }
    }
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(st), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let listens = *st == "0A" && inode.parse().is_ok_and(|i: u64| held.contains(&i));
            let at = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if let (true, Some(p)) = (listens, at) {
                if !ports.contains(&p) {
                    ports.push(p);
                }
            }
        }
    }
    if ports.is_empty() || ports.contains(&port) {
        return None;
    }
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    Some(format!(
        "it listens on port {}, not on {port}, the one it was told",
        list.join(", ")
    ))
}

/// Pins every thread of each helper to `cpus` and reads back where each
/// may run. A helper that is gone by now is left out; one that cannot be
/// pinned keeps the CPUs it has, which the facts then show.
pub(crate) fn pin(helpers: &[Helper], cpus: &CpuList) -> Vec<HelperFacts> {
    let mut out = Vec::new();
    for h in helpers {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", h.pid)) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
                let _ = cpus.pin_thread(tid);
            }
        }
        out.push(HelperFacts {
            name: h.name.clone(),
            pid: h.pid,
            cpus_allowed: crate::procfs::limits(h.pid as i32).cpus_allowed,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_splits_on_nul_and_flags_pair_with_their_values() {
        let a = args(b"/usr/bin/containerd-shim-runc-v2\0-namespace\0moby\0-id\0abc\0");
        assert_eq!(a.len(), 5);
        assert!(flag_is(&a, "-id", "abc"));
        assert!(!flag_is(&a, "-id", "moby"));
        assert!(!flag_is(&a, "-namespace", "abc"));
    }

    #[test]
    fn listening_sockets_are_read_from_the_kernel_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 53211 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D1C2 01 00000000:00000000 00:00000000 00000000  1001        0 53999 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1200 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90
";
        // The established connection on the same port is not a listener.
        assert_eq!(listening_inodes(table, 8080), vec![53211]);
        assert_eq!(listening_inodes(table, 80), vec![1200]);
        assert!(listening_inodes(table, 9090).is_empty());
        assert!(listening_inodes("", 8080).is_empty());
    }

    #[test]
    fn the_process_listening_on_a_port_and_its_children_are_found() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let found = listeners(port);
        let me = std::process::id();
        assert!(found.iter().any(|h| h.pid == me), "{found:?}");
        drop(listener);
        assert!(!listeners(port).iter().any(|h| h.pid == me));
    }

    #[test]
    fn a_helper_found_by_name_and_arguments_is_pinned_and_read_back() {
        let mut child = std::process::Command::new("sleep")
            .arg("30.123456")
            .spawn()
            .unwrap();
        // Until the child has exec'd, it still carries this test's name.
        let mut found = Vec::new();
        for _ in 0..200 {
            found = find("sleep", |a| a.iter().any(|x| x == "30.123456"));
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pid, child.id());
        let cpu0: CpuList = "0".parse().unwrap();
        let facts = pin(&found, &cpu0);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].cpus_allowed.as_deref(), Some("0"));
    }
}
