//! The guest's `/init`: a busybox shell script that mounts the kernel's
//! filesystems, loads the virtio modules, sets the address the kernel
//! command line names (`tare.ip=ADDR/PREFIX tare.gw=GATEWAY`: Debian's
//! kernel has no CONFIG_IP_PNP, so `ip=` would be ignored), reports what the
//! guest is, starts the server and says so on the serial console, and when
//! the server exits says that too and ends the guest (QEMU runs with
//! `-no-reboot`, so `reboot -f` ends QEMU).
//!
//! The console lines it prints start with `tare-vm: ` and are what the host
//! reads: [`STARTED`], [`EXITED`] and the `facts` line ([`GuestReport`]).

use std::collections::BTreeMap;
use std::path::Path;

use super::initramfs::MODULE_DIR;

/// The line saying the server process runs.
pub(crate) const STARTED: &str = "tare-vm: server started";
/// The line saying it has exited (the guest shuts down after it).
pub(crate) const EXITED: &str = "tare-vm: server exited";
const FACTS: &str = "tare-vm: facts ";

/// What the init starts.
pub(crate) struct Plan<'a> {
    /// The deployment directory (the server's working directory).
    pub dir: &'a Path,
    pub binary: &'a Path,
    pub args: &'a [String],
    /// uid:gid to run as (postgres refuses root).
    pub run_as: Option<(u32, u32)>,
    /// Open-file limit (soft, hard), as a native server inherits it.
    pub nofile: (u64, u64),
}

/// The `/init` script for `plan`.
pub(crate) fn script(plan: &Plan<'_>) -> String {
    let limit = |n: u64| {
        if n == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            n.to_string()
        }
    };
    let mut command: Vec<String> = Vec::new();
    if let Some((uid, gid)) = plan.run_as {
        // busybox's setpriv cannot change ids; its start-stop-daemon
        // without -b sets them (and the user's groups) and execs.
        command.extend([
            "start-stop-daemon".into(),
            "-S".into(),
            "-c".into(),
            format!("{uid}:{gid}"),
            "-x".into(),
            plan.binary.display().to_string(),
            "--".into(),
        ]);
    } else {
        command.push(plan.binary.display().to_string());
    }
    command.extend(plan.args.iter().cloned());
    let command: Vec<String> = command.iter().map(|w| quote(w)).collect();
    format!(
        r#"#!/bin/busybox sh
# tare's guest init (crates/deploy/src/vm/init.rs)
/bin/busybox mkdir -p /tare/bin
/bin/busybox --install -s /tare/bin
export PATH=/tare/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() {{ echo "tare-vm: $*"; }}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
for m in /{MODULE_DIR}/*.ko; do insmod "$m" || say "insmod $m failed"; done
IP=; GW=
for a in $(cat /proc/cmdline); do
  case "$a" in
    tare.ip=*) IP="${{a#tare.ip=}}" ;;
    tare.gw=*) GW="${{a#tare.gw=}}" ;;
  esac
done
ip link set lo up
n=0
while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 200 ]; do usleep 10000; n=$((n+1)); done
ip link set eth0 up || say "no eth0"
[ -n "$IP" ] && ip addr add "$IP" dev eth0
[ -n "$GW" ] && ip route add default via "$GW"
hostname tare-guest
ulimit -Hn {hard}
ulimit -Sn {soft}
say "facts kernel=$(uname -r) cpus=$(nproc) mem_kb=$(awk '/^MemTotal/{{print $2}}' /proc/meminfo) nofile=$(ulimit -Sn):$(ulimit -Hn) fs=$(stat -f -c %T {dir}) addr=$IP"
cd {dir}
{command} >/tmp/tare-server.log 2>&1 &
PID=$!
say "server started (pid $PID, uptime $(cut -d' ' -f1 /proc/uptime) s)"
wait $PID
rc=$?
tail -n 20 /tmp/tare-server.log
say "server exited with status $rc"
sync
reboot -f
"#,
        hard = limit(plan.nofile.1),
        soft = limit(plan.nofile.0),
        dir = quote(&plan.dir.display().to_string()),
        command = command.join(" "),
    )
}

/// A word for sh, single-quoted.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// What the guest said about itself on its `facts` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GuestReport {
    pub kernel: Option<String>,
    pub cpus: Option<usize>,
    pub memory_kb: Option<u64>,
    pub nofile: Option<(Option<u64>, Option<u64>)>,
    /// Filesystem type of the deployment directory in the guest.
    pub fs: Option<String>,
}

/// The last `facts` line of a console log, if any. Values are single
/// words (`key=value`, space-separated); unknown keys are ignored.
pub fn guest_report(console: &str) -> Option<GuestReport> {
    let line = console
        .lines()
        .rev()
        .find_map(|l| l.find(FACTS).map(|at| &l[at + FACTS.len()..]))?;
    let kv: BTreeMap<&str, &str> = line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect();
    let nofile = kv
        .get("nofile")
        .and_then(|v| v.split_once(':'))
        .map(|(s, h)| {
            let n = |t: &str| t.parse::<u64>().ok();
            (n(s), n(h))
        });
    Some(GuestReport {
        kernel: kv.get("kernel").map(|s| s.to_string()),
        cpus: kv.get("cpus").and_then(|v| v.parse().ok()),
        memory_kb: kv.get("mem_kb").and_then(|v| v.parse().ok()),
        nofile,
        fs: kv
            .get("fs")
            .filter(|v| !v.is_empty())
            .map(|s| s.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_the_server_quoted_and_as_its_user() {
        let args = vec!["-c".to_string(), "it's".to_string()];
        let s = script(&Plan {
            dir: Path::new("/tmp/tare-x"),
            binary: Path::new("/usr/bin/postgres"),
            args: &args,
            run_as: Some((104, 111)),
            nofile: (1024, libc::RLIM_INFINITY),
        });
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains(
            "'start-stop-daemon' '-S' '-c' '104:111' '-x' '/usr/bin/postgres' '--' '-c' 'it'\\''s' >"
        ), "{s}");
        assert!(s.contains("ulimit -Hn unlimited\nulimit -Sn 1024\n"), "{s}");
        assert!(s.contains("cd '/tmp/tare-x'"), "{s}");
    }

    #[test]
    fn the_facts_line_reads_back() {
        let console = "[    1.0] x\ntare-vm: facts kernel=6.1.0-56-amd64 cpus=2 mem_kb=494000 nofile=1024:524288 fs=tmpfs addr=10.0.0.2/28\ntare-vm: server started (pid 80)\n";
        let r = guest_report(console).unwrap();
        assert_eq!(r.kernel.as_deref(), Some("6.1.0-56-amd64"));
        assert_eq!(r.cpus, Some(2));
        assert_eq!(r.memory_kb, Some(494_000));
        assert_eq!(r.nofile, Some((Some(1024), Some(524_288))));
        assert_eq!(r.fs.as_deref(), Some("tmpfs"));
        assert!(guest_report("nothing here").is_none());
        let odd = guest_report("tare-vm: facts cpus=x nofile=1 fs=").unwrap();
        assert_eq!(odd.cpus, None);
        assert_eq!(odd.nofile, None);
        assert_eq!(odd.fs, None);
    }
}
